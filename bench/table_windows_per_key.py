#!/usr/bin/env python3
"""Batch benchmark: windowagg's per-key TableWindows (each row of a table is a window [start, end) of
the key it names only) against what a Spark user writes today, the range join on the key followed by
a GROUP BY. The issue's target: TableWindows per key at least 10x faster than the range join at 4M
events, 1,000 keys x 20 periods, and flat in the number of windows.

Same session, inputs and method as bench/table_windows.py: local[2],
4 shuffle partitions, AQE coalescing off, one cached events input (data.table_events), one
cached periods table per P, every result consumed with .write.format("noop"). For each number of
periods per key P (--periods, default 5, 20, 80), aggregates sum(v), count(1), avg(v):

  windowagg      SELECT k, window.start, window.end, sum(v), count(1), avg(v)
                 FROM events GROUP BY k, windows(ts, 'table key_periods_P keys k')
  range_join     SELECT e.k, p.start, p.end, sum(e.v), count(1), avg(e.v)
                 FROM events e JOIN key_periods_P p ON e.k = p.k AND e.ts >= p.start AND e.ts < p.end
                 GROUP BY e.k, p.start, p.end
                 (Spark's default plan: a BroadcastHashJoin on k with the range condition, each event
                 tested against its key's P periods)
and at P = 20 only (the headline; the middle P when 20 is not among --periods):
  windowagg_df   events.groupBy("k", windowagg.window("ts", TableWindows.of(periods_df, keys=["k"]))).agg(...)

Periods: for each key, P periods; start uniform over the events' --days days, length log-uniform
from 1 hour to 30 days, whole milliseconds, duplicates dropped; view key_periods_P (k INT, start,
end TIMESTAMP), cached. Period j of key k comes from a hash of (seed, k, j), so the periods of a
smaller P are among those of a larger one.

Untimed, once per P: the windows (rows of the table), their lengths, the events in no window of
their key (a left anti join), the (event, period) pairs the join tests, and from windowagg's result
the (event, window) pairs (sum of the counts) and the result rows. Correctness, untimed, after the
timed cells: harness.compare_windows(windowagg, range join) on all keys, and the Python-API result at
the headline P; mismatches must be 0. Per cell: one warm-up, --reps timed runs, median (harness.measure).

The page, docs/benchmarks-table-windows-per-key.md: all of its prose is
bench/table_windows_per_key_notes.md, filled by render() (report.render_page); the plot is
docs/img/table_windows_per_key.png.

Run from the repository root:   bench/run table-windows-per-key --quick   (200k events, 100 keys; no docs)
                                bench/run table-windows-per-key           (full: 4M events, 1000 keys; renders the docs)
Re-render the report:           .venv/bin/python bench/table_windows_per_key.py --report bench/results/table_windows_per_key-full.json
"""
from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import harness  # noqa: E402
import report  # noqa: E402
import data  # noqa: E402
from harness import log, ratio  # noqa: E402

DOC = report.DOCS / "benchmarks-table-windows-per-key.md"
IMG = report.DOCS / "img" / "table_windows_per_key.png"
NOTES = BENCH_DIR / "table_windows_per_key_notes.md"
HEADLINE_P = 20  # the case: 1,000 keys x 20 periods

COMPETITORS = ["windowagg", "windowagg_df", "range_join"]
SHORT = {
    "windowagg": "windowagg `windows(ts, 'table key_periods keys k')` (SQL)",
    "windowagg_df": "windowagg `TableWindows.of(df, keys=[\"k\"])` (Python API)",
    "range_join": "Spark range join on `k` + `GROUP BY`",
}
PLOT_LABEL = {
    "windowagg": "windowagg windows(ts, 'table … keys k'), SQL",
    "windowagg_df": "windowagg TableWindows.of(df, keys=[\"k\"]), Python API",
    "range_join": "Spark range join on k + GROUP BY (broadcast hash join)",
}
STYLE = {  # as on the page of global table windows
    "windowagg": dict(color="tab:blue", marker="o", linewidth=2.5),
    "windowagg_df": dict(color="tab:cyan", marker="D", linestyle=":"),  # one point: the line shows in the legend only
    "range_join": dict(color="tab:red", marker="s"),
}
TARGET_FASTER = 10.0  # range join ÷ windowagg at the headline P must be at least this
TARGET_FLAT = 1.5  # windowagg(largest P) ÷ windowagg(smallest P): "flat", as for global table windows
AGGS_SQL = "sum(v) AS s, count(1) AS n, avg(v) AS a"
BASE_MS = data.TABLE_BASE_MS  # the events' first instant (data.table_events)
DAY_MS = 86_400_000
MIN_LEN_MS, MAX_LEN_MS = 3_600_000, 30 * DAY_MS  # period lengths, log-uniform between


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 200k events / 100 keys, 2 reps, 120 s timeout, no docs")
    p.add_argument("--rows", type=int, help="events (default 4,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 100)")
    p.add_argument("--days", type=float, default=365.0, help="the events' and the periods' time span, days (365)")
    p.add_argument("--periods", default="5,20,80", help="periods per key P, comma separated (default 5,20,80)")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the correctness check")
    p.add_argument("--reps", type=int, help="timed runs per cell after one warm-up (default 3; quick 2)")
    p.add_argument("--timeout", type=float, help="seconds per run before it is cancelled (default 900; quick 120)")
    p.add_argument("--long-run", type=float, default=60.0,
                   help="a cell whose warm-up took longer than this gets no more runs: the warm-up is its one "
                        "timed run (60)")
    harness.add_contention_args(p)
    harness.add_session_args(p)
    harness.add_output_args(p, DOC.name)
    a = p.parse_args(argv)
    harness.defaults(a, rows=(4_000_000, 200_000), keys=(1000, 100), reps=(3, 2), timeout=(900.0, 120.0))
    a.periods = sorted({int(x) for x in a.periods.split(",") if x.strip()})
    if not a.periods or min(a.periods) < 1:
        p.error("--periods: positive integers")
    return a


def headline(periods: list[int]) -> int:
    return HEADLINE_P if HEADLINE_P in periods else periods[len(periods) // 2]


# ------------------------------------------------------------------------------ inputs and queries

def make_key_periods(spark, keys: int, p: int, days: float, seed: int):
    """P periods per key (k INT, start, end): start uniform over `days` days from BASE_MS, length
    log-uniform in [1 hour, 30 days], whole milliseconds, identical rows dropped. Period j of key k is
    drawn from a hash of (seed, k, j): the periods of a smaller P are among those of a larger one."""
    from pyspark.sql import functions as F
    lo, hi = math.log(MIN_LEN_MS), math.log(MAX_LEN_MS)

    def uniform(salt: int):  # in [0, 1), from (seed, k, j, salt)
        h = F.xxhash64(F.lit(seed), F.col("k"), F.col("j"), F.lit(salt))
        return F.pmod(h, F.lit(1 << 53)) / float(1 << 53)
    start_ms = (F.lit(BASE_MS) + F.floor(uniform(1) * (days * DAY_MS))).cast("long")
    len_ms = F.floor(F.exp(F.lit(lo) + uniform(2) * (hi - lo))).cast("long")
    ks = spark.range(0, keys, 1, 1).select(F.col("id").cast("int").alias("k"))
    js = spark.range(0, p, 1, 1).select(F.col("id").cast("int").alias("j"))
    return (ks.crossJoin(js).select("k", start_ms.alias("start_ms"), len_ms.alias("len_ms"))
            .select("k", F.timestamp_millis("start_ms").alias("start"),
                    F.timestamp_millis(F.col("start_ms") + F.col("len_ms")).alias("end"))
            .dropDuplicates(["k", "start", "end"])
            .coalesce(1))


def view(p: int) -> str:
    return f"key_periods_{p}"


def q_windowagg(spark, p: int):
    return spark.sql(f"SELECT k, window.start AS start, window.`end` AS `end`, {AGGS_SQL} "
                     f"FROM events GROUP BY k, windows(ts, 'table {view(p)} keys k')")


def q_windowagg_df(events, definition):
    """windowagg through its Python API: groupBy(k, windowagg.window(ts, TableWindows.of(df, keys=["k"])))."""
    import windowagg
    from pyspark.sql import functions as F
    return (events.groupBy("k", windowagg.window("ts", definition).alias("window")).agg(*harness.sum_count_avg())
            .select("k", F.col("window.start").alias("start"), F.col("window.end").alias("end"), "s", "n", "a"))


def q_range_join(spark, p: int):
    return spark.sql(f"SELECT e.k, p.start, p.`end`, sum(e.v) AS s, count(1) AS n, avg(e.v) AS a "
                     f"FROM events e JOIN {view(p)} p ON e.k = p.k AND e.ts >= p.start AND e.ts < p.`end` "
                     f"GROUP BY e.k, p.start, p.`end`")


def describe(spark, events, periods, p: int) -> dict:
    """Untimed: the windows and their lengths, the events in no window of their key, the (event,
    period) pairs the join tests, and windowagg's result rows and (event, window) pairs."""
    from pyspark.sql import functions as F
    t0 = time.perf_counter()
    length_h = "(unix_millis(`end`) - unix_millis(start)) / 3600000"
    r = periods.agg(F.count("*").alias("n"), F.countDistinct("k").alias("keys"),
                    F.expr(f"min({length_h})").alias("min_h"),
                    F.expr(f"percentile_approx({length_h}, 0.5)").alias("median_h"),
                    F.expr(f"avg({length_h})").alias("mean_h"), F.expr(f"max({length_h})").alias("max_h")).collect()[0]
    e, q = events.alias("e"), F.broadcast(periods.alias("q"))
    no_window = e.join(q, (F.col("e.k") == F.col("q.k")) & (F.col("e.ts") >= F.col("q.start"))
                       & (F.col("e.ts") < F.col("q.end")), "left_anti").count()
    tested = (events.groupBy("k").count().withColumnRenamed("count", "ne")
              .join(periods.groupBy("k").count().withColumnRenamed("count", "np"), "k")
              .agg(F.sum(F.col("ne") * F.col("np"))).collect()[0][0]) or 0
    res = q_windowagg(spark, p).agg(F.count("*").alias("rows"), F.sum("n").alias("pairs")).collect()[0]
    out = {"windows": r["n"], "keys_with_windows": r["keys"], "min_length_h": r["min_h"],
           "median_length_h": r["median_h"], "mean_length_h": r["mean_h"], "max_length_h": r["max_h"],
           "events_in_no_window": no_window, "pairs_tested_by_join": tested, "result_rows": res["rows"],
           "pairs": res["pairs"] or 0, "describe_s": round(time.perf_counter() - t0, 1)}
    log(f"P={p}: {out}")
    return out


# ------------------------------------------------------------------------------ main

def main(argv=None) -> int:
    a = parse_args(argv)
    if a.report:
        rerender([Path(a.report)])
        return 0
    import windowagg
    if "keys" not in inspect.signature(windowagg.TableWindows.of).parameters:
        log(f"the windowagg package at {Path(windowagg.__file__).parent} has no per-key TableWindows: run with "
            f"PYTHONPATH={harness.REPO / 'python'} (bench/run table-windows-per-key does) or reinstall it")
        return 1
    log(f"args: {vars(a)}")
    spark, res = harness.start(a, "windowagg-bench-table-windows-per-key", "table_windows_per_key")
    if res is None:
        return 1
    res["config"]["windowagg_python"] = report.repo_rel(Path(windowagg.__file__).parent)
    out = harness.results_path("table_windows_per_key", a.tag)
    hp = headline(a.periods)
    res.update({"input": None, "headline_periods": hp, "periods": {}, "runs": [], "finished": None})

    def save():
        return harness.write_json(res, out)

    events, info = harness.cache_input(data.table_events(spark, a.rows, a.keys, a.days, a.seed, a.shuffle_partitions),
                                       "events")
    events.createOrReplaceTempView("events")
    res["input"] = {**info, "rows_per_key": a.rows // a.keys, "days": a.days,
                    "v": "floor(rand * 1024000) / 1024",
                    "periods": "per key: start uniform over the same days, length exp(uniform(ln 1 h, ln 30 d)), "
                               "whole milliseconds, from xxhash64(seed, k, j); duplicates dropped"}
    periods = {}
    for p in a.periods:
        t = make_key_periods(spark, a.keys, p, a.days, a.seed).cache()
        t.count()
        t.createOrReplaceTempView(view(p))
        periods[p] = t
        sec = {"periods_per_key": p, "view": view(p), "spec": f"table {view(p)} keys k", "cells": {}}
        res["periods"][str(p)] = sec
        sec["plan_windowagg"] = harness.plan_of(q_windowagg(spark, p))
        sec["plan_range_join"] = harness.plan_of(q_range_join(spark, p))
        sec["join_strategy"] = next((s for s in ("BroadcastHashJoin", "ShuffledHashJoin", "SortMergeJoin",
                                                 "BroadcastNestedLoopJoin", "CartesianProduct")
                                     if s in sec["plan_range_join"]), "unknown")
        sec["stats"] = describe(spark, events, t, p)
        save()

    runner = harness.Runner(spark, a.timeout)

    def cell(comp: str, p: int, make_df) -> dict:
        build_s = []

        def on_run(r):
            r.update({"competitor": comp, "periods_per_key": p, "analysis_s": build_s[-1] if build_s else None})
            res["runs"].append(r)
            save()

        def make():
            t0 = time.perf_counter()
            df = make_df()
            build_s.append(time.perf_counter() - t0)
            return df
        c = harness.measure(runner, f"P={p}/{comp}", make, reps=a.reps, long_run=a.long_run, contended=a.contended,
                            retries=a.retries, quiet_wait=a.quiet_wait, on_run=on_run, long_warmup_is_timed=True)
        c.update({"competitor": comp, "periods_per_key": p, "median_analysis_s": harness.median(build_s)})
        res["periods"][str(p)]["cells"][comp] = c
        save()
        return c

    for p in a.periods:
        cell("windowagg", p, lambda p=p: q_windowagg(spark, p))
    definition = windowagg.TableWindows.of(periods[hp], keys=["k"])
    res["periods"][str(hp)]["df_definition"] = repr(definition)
    cell("windowagg_df", hp, lambda: q_windowagg_df(events, definition))
    for p in a.periods:
        cell("range_join", p, lambda p=p: q_range_join(spark, p))

    if a.check:
        for p in a.periods:
            t0 = time.perf_counter()
            try:
                join = q_range_join(spark, p).cache()
                ck = {"windowagg": harness.compare_windows(q_windowagg(spark, p), join)}
                if p == hp:
                    ck["windowagg_df"] = harness.compare_windows(q_windowagg_df(events, definition), join)
                join.unpersist()
            except Exception as e:  # noqa: BLE001
                ck = {"error": str(e).splitlines()[0][:500]}
            ck["check_s"] = round(time.perf_counter() - t0, 1)
            res["periods"][str(p)]["check"] = ck
            log(f"check P={p} (all keys): {ck}")
            save()

    for t in periods.values():
        t.unpersist()
    events.unpersist()
    harness.finish(spark, res, save)
    summary(res)
    if a.docs:
        rerender([out])
    return 0


# ------------------------------------------------------------------------------ summary + report

def ps(res) -> list[int]:
    return sorted(int(x) for x in res["periods"])


def get_cell(res, comp, p):
    return res["periods"].get(str(p), {}).get("cells", {}).get(comp)


def summary(res) -> None:
    for p in ps(res):
        for comp in COMPETITORS:
            if c := get_cell(res, comp, p):
                log(f"SUMMARY P={p:<3d} {comp:13s} wall {report.fmt_seconds(c):>16s}  "
                    f"CPU {report.fmt_seconds(c, 'median_cpu_s'):>8s}  "
                    f"others {c.get('median_foreign_cores') or 0:.2f} cores, {c.get('contended_runs', 0)} contended")
        tw_, tc = report.wall_and_cpu_ratios(get_cell(res, "windowagg", p), get_cell(res, "range_join", p))
        log(f"SUMMARY P={p:<3d} windowagg ÷ range join: wall {tw_}, CPU {tc}; "
            f"{report.faster_by(get_cell(res, 'range_join', p), get_cell(res, 'windowagg', p))[0]}")
        if ck := res["periods"][str(p)].get("check"):
            log(f"SUMMARY P={p:<3d} check: " + (f"error {ck['error']}" if "error" in ck else ", ".join(
                f"{side} {ck[side]['mismatches']} mismatches of {ck[side]['range_join_rows']:,} join rows"
                for side in ("windowagg", "windowagg_df") if side in ck)))


def plot(res, path: Path) -> None:
    """Median wall and CPU time against the periods per key (log-log)."""
    timeout = res["args"]["timeout"]
    series = []
    for comp in COMPETITORS:
        pts = [report.Point(p, c["median_s"], c.get("median_cpu_s"), bool(c.get("contended_runs")),
                            f"> {timeout:.0f} s" if c["status"] == "timeout" else None)
               for p in ps(res) if (c := get_cell(res, comp, p)) and c["status"] in ("ok", "timeout")]
        if pts:
            series.append(report.Series(PLOT_LABEL[comp], STYLE[comp], pts))
    i = res["input"]
    report.wall_cpu_panels(
        series, path, timeout=timeout, legend_loc="upper left",
        xlabel=f"periods per key P (log): {i['keys']:,} keys × P windows, each of its own key",
        cpu_ylabel="median CPU time of the benchmark processes, s (log)",
        title=f"Per-key windows given as a table, sum/count/avg per key and window: {i['rows']:,} events, "
              f"{i['keys']:,} keys over {i['days']:g} days, {res['config']['master']}"
              f"{' (quick run)' if res['args'].get('quick') else ''}: wall (left), CPU (right)")


def rerender(json_paths: list[Path], doc: Path = DOC, img: Path = IMG) -> None:
    """--report: the page (and plot) from a results file."""
    report.rerender_one(json_paths, render, doc, img)


def render(res: dict, json_path: Path, doc: Path, img: Path) -> None:
    """The page: bench/table_windows_per_key_notes.md filled with what this run measured."""
    plot(res, img)
    m, cfg, a, i = res["machine"], res["config"], res["args"], res["input"]
    pl = ps(res)
    lo, hi, hp = pl[0], pl[-1], res["headline_periods"]
    stats = {p: res["periods"][str(p)]["stats"] for p in pl}
    wa = {p: get_cell(res, "windowagg", p) for p in pl}
    rj = {p: get_cell(res, "range_join", p) for p in pl}
    fast = report.faster_by(rj[hp], wa[hp])
    flat_w = report.bounded_ratio(wa[hi], wa[lo], "median_s")
    flat_c = report.bounded_ratio(wa[hi], wa[lo], "median_cpu_s")
    vf = report.verdict_at_least(fast, TARGET_FASTER)
    if any(c and c.get("contended_runs") for c in (wa[hp], rj[hp])):
        vf += " († other processes shared the cores during these runs)"
    vw, vc = report.verdict_at_most(flat_w, TARGET_FLAT), report.verdict_at_most(flat_c, TARGET_FLAT)
    targets = [
        [f"range join ÷ windowagg at {i['rows']:,} events, {i['keys']:,} keys × {hp} periods ≥ {TARGET_FASTER:g}×",
         f"{fast[0]} (windowagg {report.median_seconds(wa[hp])}, range join {report.median_seconds(rj[hp])})", vf],
        [f"flat in the number of windows: windowagg at P = {hi} ÷ at P = {lo} ≤ {TARGET_FLAT}×",
         f"{flat_w[0]} wall, {flat_c[0]} CPU", vw if vw == vc else f"{vw} on wall time, {vc} on CPU time"],
    ]
    checks = [(p, ck) for p in pl if (ck := res["periods"][str(p)].get("check"))]
    sides = [ck[s] for _, ck in checks if "error" not in ck for s in ("windowagg", "windowagg_df") if s in ck]
    errs = [ck for _, ck in checks if "error" in ck]
    bad = sum(x["mismatches"] for x in sides)
    measured = (f"{bad:,} mismatching rows in {len(sides)} comparisons over {len(checks) - len(errs)} values of P "
                f"({sum(x['range_join_rows'] for x in sides):,} range-join rows compared)"
                + (f"; {len(errs)} check(s) failed to run" if errs else ""))
    targets.append(["correctness: windowagg = the range join + `GROUP BY` (0 mismatches)",
                    measured if checks else "not checked (--no-check)",
                    ("**met**" if bad == 0 and not errs else "**missed**") if checks else "not measured"])

    def row(p, comp, c):
        par = ratio(c.get("median_cpu_s"), c.get("median_s")) if c["status"] == "ok" else None
        sb = c.get("shuffle_bytes")
        ts = c.get("times_s") or []
        spread = f"{min(ts):.2f} – {max(ts):.2f}" if len(ts) > 1 else "–"
        return [f"{p}", SHORT[comp], report.fmt_seconds(c), spread, report.fmt_seconds(c, "median_cpu_s"),
                report.fmt_num(par, ".2f"), report.fmt_num(sb / 1e6 if sb is not None else None, ".1f"),
                report.fmt_num(c.get("median_analysis_s"), ".2f"), report.fmt_num(c.get("median_foreign_cores"), ".2f"),
                f"{c.get('contended_runs', 0)} of {len(c.get('times_s') or [])}"]
    rows = [row(p, comp, c) for p in pl for comp in COMPETITORS if (c := get_cell(res, comp, p))]
    ratio_rows = [[f"{p}", *report.wall_and_cpu_ratios(wa[p], rj[p]), *report.wall_and_cpu_ratios(rj[p], wa[p]), report.faster_by(rj[p], wa[p])[0]] for p in pl]
    cdf = get_cell(res, "windowagg_df", hp)
    df_line = ""
    if cdf:
        dw, dc = report.wall_and_cpu_ratios(cdf, wa[hp])
        df_line = (f"The Python API (`TableWindows.of(df, keys=[\"k\"])`, P = {hp}) against the SQL call on the same "
                   f"windows: {dw} wall, {dc} CPU. The two differ only in how the definition is given; the Python-API "
                   f"cell ran after every SQL cell, and this run does not explain the difference.")
    growth_rows = [[f"{name} P = {p} ÷ P = {lo}", *report.wall_and_cpu_ratios(cells[p], cells[lo])]
                   for name, cells in (("windowagg", wa), ("range join", rj)) for p in pl[1:]]

    def per_event(c, scale=1e9):
        ok = c is not None and c["status"] == "ok" and c.get("median_cpu_s")
        return c["median_cpu_s"] * scale / i["rows"] if ok else None
    shape_rows, cost_rows = [], []
    for p in pl:
        st = stats[p]
        shape_rows.append([f"{p}", f"{st['windows']:,}", f"{st['keys_with_windows']:,}",
                           f"{st['min_length_h']:.1f} / {st['median_length_h']:.1f} / {st['mean_length_h']:.1f} / "
                           f"{st['max_length_h']:.1f}",
                           f"{st['events_in_no_window']:,} ({st['events_in_no_window'] / i['rows']:.1%})",
                           f"{st['pairs'] / i['rows']:.2f}", f"{st['pairs']:,}", f"{st['result_rows']:,}",
                           res["periods"][str(p)].get("join_strategy", "?")])
        cost_rows.append([f"{p}", f"{st['pairs_tested_by_join']:,}", f"{st['pairs_tested_by_join'] / i['rows']:.1f}",
                          f"{st['pairs'] / i['rows']:.2f}", f"{st['events_in_no_window'] / i['rows']:.1%}",
                          report.fmt_num(per_event(wa[p]), ",.0f"), report.fmt_num(per_event(rj[p]), ",.0f"),
                          report.wall_and_cpu_ratios(wa[p], rj[p])[1]])
    # the join's CPU per additional tested pair, from P = lo to P = hi
    slope = None
    if per_event(rj[hi]) is not None and per_event(rj[lo]) is not None:
        d_tested = stats[hi]["pairs_tested_by_join"] - stats[lo]["pairs_tested_by_join"]
        slope = (rj[hi]["median_cpu_s"] - rj[lo]["median_cpu_s"]) * 1e9 / d_tested if d_tested else None

    def growth(cells) -> str:
        t, tc = report.wall_and_cpu_ratios(cells[hi], cells[lo])
        return f"{t} (wall), {tc} (CPU)"
    checked = []
    for p, ck in checks:
        if "error" in ck:
            checked.append([f"{p}", f"check failed: {ck['error'][:200]}", "", "", "", "", ""])
            continue
        for side in ("windowagg", "windowagg_df"):
            if side in ck:
                x = ck[side]
                checked.append([f"{p}", SHORT[side], f"{x['windowagg_rows']:,}", f"{x['range_join_rows']:,}",
                                f"{x['pairs']:,}", f"**{x['mismatches']:,}**",
                                f"{x['only_in_windowagg']:,} / {x['only_in_range_join']:,} / {x['count_mismatches']:,}"
                                f" / {x['sum_mismatches']:,} / {x['avg_mismatches']:,}"])
    slower = [p for p in pl if (r := report.bounded_ratio(wa[p], rj[p], "median_s"))[1] is not None
              and r[2] == "=" and r[1] > 1]

    def mb(c) -> str:
        return report.fmt_num(c["shuffle_bytes"] / 1e6 if c and c.get("shuffle_bytes") is not None else None, ".1f")
    strategies = sorted({res["periods"][str(p)].get("join_strategy", "?") for p in pl})

    report.render_page(doc, img, NOTES, {
        "provenance": report.provenance("table_windows_per_key.py", [json_path], NOTES),
        "banners": "\n".join(report.banners(res)),
        "run_line": report.run_line(res, json_path, doc, before=f" on {i['rows']:,} events, {i['keys']:,} keys"),
        "periods_list": ", ".join(f"{p}" for p in pl),
        "windows_list": ", ".join(f"{stats[p]['windows']:,}" for p in pl),
        "rows": f"{i['rows']:,}",
        "keys": f"{i['keys']:,}",
        "rows_per_key": f"{i['rows_per_key']:,}",
        "days": f"{i['days']:g}",
        "headline": hp,
        "lo": lo,
        "hi": hi,
        "target_faster": f"{TARGET_FASTER:g}",
        "target_flat": TARGET_FLAT,
        "targets_table": "\n".join(report.table(["target", "measured", "verdict"], "lll", targets)),
        "faster_missed": fast[1] is not None and fast[2] == "=" and fast[1] < TARGET_FASTER,
        "join_strategy": " / ".join(f"`{s}`" for s in strategies),
        "windows_hd": f"{stats[hp]['windows']:,}",
        "tested_per_event_hd": f"{stats[hp]['pairs_tested_by_join'] / i['rows']:.1f}",
        "wa_hd": report.median_seconds(wa[hp]),
        "join_hd": report.median_seconds(rj[hp]),
        "wa_cpu_hd": report.fmt_seconds(wa[hp], "median_cpu_s"),
        "join_cpu_hd": report.fmt_seconds(rj[hp], "median_cpu_s"),
        "wa_ns_lo": report.fmt_num(per_event(wa[lo]), ",.0f"),
        "join_ns_lo": report.fmt_num(per_event(rj[lo]), ",.0f"),
        "wa_ns_hi": report.fmt_num(per_event(wa[hi]), ",.0f"),
        "join_ns_hi": report.fmt_num(per_event(rj[hi]), ",.0f"),
        "join_slope": report.fmt_num(slope, ".1f"),
        "fast_text": fast[0],
        "hi_text": report.faster_by(rj[hi], wa[hi])[0],
        "wa_slower": bool(slower),
        "slower_at": ", ".join(f"{p}" for p in slower[:-1]) + (" and " if len(slower) > 1 else "") + (
            f"{slower[-1]}" if slower else ""),
        "fixed_ratio": report.wall_and_cpu_ratios(wa[lo], rj[lo])[1],
        "no_window_lo": f"{stats[lo]['events_in_no_window'] / i['rows']:.0%}",
        "no_window_hi": f"{stats[hi]['events_in_no_window'] / i['rows']:.0%}",
        "kept_lo": f"{stats[lo]['pairs'] / i['rows']:.2f}",
        "kept_hi": f"{stats[hi]['pairs'] / i['rows']:.2f}",
        "wa_mb_lo": mb(wa[lo]),
        "join_mb_lo": mb(rj[lo]),
        "p_growth": f"{hi / lo:g}",
        "windows_growth": (f"{stats[lo]['windows']:,} to {stats[hi]['windows']:,} windows"),
        "join_growth": growth(rj),
        "wa_growth": growth(wa),
        "machine": report.machine_line(m),
        "master": cfg["master"],
        "driver_memory": cfg["spark.driver.memory"],
        "driver_max_heap_gib": m.get("driver_max_heap_gib"),
        "shuffle_partitions": cfg["spark.sql.shuffle.partitions"],
        "jar": report.jar_line(cfg.get("windowagg_jar"), f"; Python package from `{cfg.get('windowagg_python', '?')}`"),
        "ts_min": i["ts_min"],
        "ts_max": i["ts_max"],
        "partitions": i["partitions"],
        "v_definition": i["v"],
        "timed_runs": f"{a['reps']} timed run{'s' if a['reps'] != 1 else ''}",
        "long_run": f"{a['long_run']:.0f}",
        "timeout": f"{a['timeout']:.0f}",
        "cpu_method": report.cpu_method(a["contended"]),
        "shapes_table": "\n".join(report.table(
            ["P", "windows", "keys with windows", "length min / median / mean / max (h)",
             "events in no window of their key", "windows per event (mean)", "(event, window) pairs", "result rows",
             "Spark's join"], "rrrrrrrrl", shape_rows)),
        "results_table": "\n".join(report.table(
            ["P", "competitor", "wall (s)", "wall, fastest – slowest run (s)", "CPU (s)", "CPU ÷ wall", "shuffled (MB)",
             "analysis (s)", "others (cores)", "contended runs"], "rlrrrrrrrr", rows)),
        "ratios_table": "\n".join(report.table(
            ["P", "windowagg ÷ range join (wall)", "windowagg ÷ range join (CPU)", "range join ÷ windowagg (wall)",
             "range join ÷ windowagg (CPU)", "windowagg is"], "rrrrrr", ratio_rows)),
        "df_line": df_line,
        "growth_table": "\n".join(report.table(["ratio", "wall time", "CPU time"], "lrr", growth_rows)),
        "cost_table": "\n".join(report.table(
            ["P", "(event, period) pairs the join tests", "per event", "pairs it keeps, per event",
             "events in no window of their key", "windowagg CPU per event (ns)", "range join CPU per event (ns)",
             "windowagg ÷ range join (CPU)"], "rrrrrrrr", cost_rows)),
        "plot": report.link(img, doc),
        "correctness_table": "\n".join(report.table(
            ["P", "compared", "windowagg rows", "range-join rows", "(event, window) pairs", "mismatches",
             "only windowagg / only join / count / sum / avg"], "rlrrrrr", checked)),
        "results_file": report.repo_rel(json_path),
    })


if __name__ == "__main__":
    sys.exit(main())
