#!/usr/bin/env python3
"""Batch benchmark: windowagg's TableWindows (windows given as data, one [start, end) per row of a
table) against what a Spark user writes today, the range join followed by a GROUP BY.

The windows are global (every key has the same windows): W periods with random starts over one year
and random lengths from 1 hour to 30 days (log-uniform), overlapping, nesting, with times in none of
them. The issue's target: TableWindows at least 10x faster than the range join at 4M events and
10,000 windows, and flat in the number of windows.

One process, one SparkSession (local[2], 4 shuffle partitions, AQE coalescing off), one cached
events input and one cached periods table per W, every result consumed with .write.format("noop").
Cells, for each number of windows W (default 100, 1000, 10000), aggregates sum(v), count(1), avg(v):

  windowagg      SELECT k, window.start, window.end, sum(v), count(1), avg(v)
                 FROM events GROUP BY k, windows(ts, 'table periods_W')
  range_join     SELECT e.k, p.start, p.end, sum(e.v), count(1), avg(e.v)
                 FROM events e JOIN periods_W p ON e.ts >= p.start AND e.ts < p.end
                 GROUP BY e.k, p.start, p.end
                 (Spark's default plan: a BroadcastNestedLoopJoin, the periods broadcast, every
                 (event, period) pair tested)
and at the largest W only:
  windowagg_df   events.groupBy("k", windowagg.window("ts", TableWindows.of(periods_df))).agg(...)
                 (the Python API: the DataFrame becomes a temporary view the definition names)

Input: --rows events over --keys keys (k int, rows per key equal), ts TIMESTAMP uniform over --days
days at millisecond resolution, v double, a multiple of 1/1024 in [0, 1000) (every sum here is exact
in double whatever the summation order, so sums must match exactly). Periods: spark.range(W) in one
partition, start uniform over the same days, length exp(uniform(ln 1 h, ln 30 d)) ms, duplicates
dropped; generated with one seed, so the first 100 periods of W = 1,000 are those of W = 100.
Events are shuffled, cached and counted before any timing.

Untimed, once per W ("describe"): the windows' lengths, the share of the year they cover, the events
in no window (an anti join against the merged union of the periods) and, from windowagg's result on
all keys, the result rows and the (event, window) pairs (sum of the counts): the rows the range join
builds before it aggregates.

Correctness, untimed, once per W, after the timed cells: windowagg's result full-outer-joined with
the range join's on (k, start, end); a row mismatches when one side lacks it, the counts or the sums
differ (exactly), or the averages differ by more than 1e-12 relative. On all keys when the range
join's timed cell finished, else on the keys k < --check-keys (the join's side is what is slow). At
the largest W the DataFrame-API result is checked the same way.

Order: windowagg at every W (smallest first), windowagg_df at the largest W, then the range join at
every W. Per cell: one untimed warm-up run, then --reps timed runs, median (the warm-up is the one
timed run when it took over --long-run s); a run over --timeout s (900) is cancelled and reported as
"> timeout", and the range join is then not run at larger W (reported "> timeout (not run)": its
cost only grows with W) unless --no-skip-longer. Each run records wall time, own CPU (Python +
driver JVM), the CPU other processes took (/proc), the bytes its stages wrote to the shuffle, and
the time spent building the query (analysis: for windowagg, reading the windows table), which
happens before the timer starts; runs where others took more than --contended cores are marked.

The page, docs/benchmarks-table-windows.md: all of its prose is bench/table_windows_notes.md, a
template with {{placeholders}}; render() fills them with the numbers and tables of a results file
(report.render_page) and draws the plot (docs/img/table_windows.png).

Run from the repository root:   bench/run table-windows --quick   (200k events, 100 keys, a few minutes)
                                bench/run table-windows           (full: 4M events, 1000 keys; renders the docs)
Re-render the report:           .venv/bin/python bench/table_windows.py --report bench/results/table_windows-full.json
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import data  # noqa: E402
import harness  # noqa: E402
import report  # noqa: E402
from harness import log, ratio  # noqa: E402

DOC = report.DOCS / "benchmarks-table-windows.md"
IMG = report.DOCS / "img" / "table_windows.png"
NOTES = BENCH_DIR / "table_windows_notes.md"  # the page's prose, a template render() fills

# 2023-11-14 00:00:00 UTC plus 20 min 34.567 s (as aligned_batch.py)
BASE_MS = data.TABLE_BASE_MS  # the events' first instant (data.table_events)
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MIN_LEN_MS = HOUR_MS
MAX_LEN_MS = 30 * DAY_MS

COMPETITORS = ["windowagg", "windowagg_df", "range_join"]
SHORT = {
    "windowagg": "windowagg `windows(ts, 'table periods')` (SQL)",
    "windowagg_df": "windowagg `TableWindows.of(df)` (Python API)",
    "range_join": "Spark range join + `GROUP BY`",
}
PLOT_LABEL = {
    "windowagg": "windowagg windows(ts, 'table …'), SQL",
    "windowagg_df": "windowagg TableWindows.of(df), Python API",
    "range_join": "Spark range join + GROUP BY (broadcast nested loop)",
}
STYLE = {
    "windowagg": dict(color="tab:blue", marker="o", linewidth=2.5),
    "windowagg_df": dict(color="tab:cyan", marker="D", linestyle=":"),  # one point: the line shows in the legend only
    "range_join": dict(color="tab:red", marker="s"),
}
TARGET_FASTER = 10.0  # range join ÷ windowagg at the largest W must be at least this
TARGET_FLAT = 1.5  # windowagg(largest W) ÷ windowagg(smallest W): "flat" (count_batch.py's bound)
AGGS_SQL = "sum(v) AS s, count(1) AS n, avg(v) AS a"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 200k events / 100 keys, 2 reps, 120 s timeout, no docs")
    p.add_argument("--rows", type=int, help="events (default 4,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 100)")
    p.add_argument("--days", type=float, default=365.0,
                   help="the events' and the window starts' time span, days (default 365)")
    p.add_argument("--windows", default="100,1000,10000",
                   help="numbers of windows W, comma separated (default 100,1000,10000)")
    p.add_argument("--check-keys", type=int, default=100,
                   help="where the range join timed out, the correctness check runs on the keys k < N (default 100)")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the correctness check")
    p.add_argument("--no-df", dest="df_api", action="store_false",
                   help="skip the Python-API cell (windowagg.TableWindows.of(df)) at the largest W")
    p.add_argument("--reps", type=int, help="timed runs per cell after one warm-up (default 3; quick 2)")
    p.add_argument("--timeout", type=float, help="seconds per run before it is cancelled (default 900; quick 120)")
    p.add_argument("--long-run", type=float, default=60.0,
                   help="a cell whose warm-up took longer than this gets no more runs: the warm-up is its one "
                        "timed run (60)")
    p.add_argument("--no-skip-longer", dest="skip_longer", action="store_false",
                   help="run the range join at larger W even after it timed out at a smaller one")
    harness.add_contention_args(p)
    harness.add_session_args(p)
    harness.add_output_args(p, DOC.name)
    a = p.parse_args(argv)
    harness.defaults(a, rows=(4_000_000, 200_000), keys=(1000, 100), reps=(3, 2), timeout=(900.0, 120.0))
    a.windows = sorted({int(x) for x in a.windows.split(",") if x.strip()})
    if not a.windows or min(a.windows) < 1:
        p.error("--windows: positive integers")
    if a.days <= 0:
        p.error("--days: positive")
    return a


# ------------------------------------------------------------------------------ inputs


def make_periods(spark, w: int, days: float, seed: int):
    """W periods (start, end): start uniform over `days` days from BASE_MS, length log-uniform in
    [1 hour, 30 days], whole milliseconds; one partition, so one seed gives nested sets (the first
    100 periods of 1,000 are the 100). Identical periods are dropped (windowagg counts them once)."""
    from pyspark.sql import functions as F
    lo, hi = math.log(MIN_LEN_MS), math.log(MAX_LEN_MS)
    start_ms = (F.lit(BASE_MS) + F.floor(F.rand(seed + 100) * (days * DAY_MS))).cast("long")
    len_ms = F.floor(F.exp(F.lit(lo) + F.rand(seed + 101) * (hi - lo))).cast("long")
    return (spark.range(0, w, 1, 1)
            .select(start_ms.alias("start_ms"), len_ms.alias("len_ms"))
            .select(F.timestamp_millis("start_ms").alias("start"),
                    F.timestamp_millis(F.col("start_ms") + F.col("len_ms")).alias("end"))
            .dropDuplicates(["start", "end"])
            .coalesce(1))


def view(w: int) -> str:
    return f"periods_{w}"


# ------------------------------------------------------------------------------ queries

def q_windowagg(spark, w: int):
    """windowagg through SQL: GROUP BY k, windows(ts, 'table periods_W') over the view `events`."""
    return spark.sql(f"SELECT k, window.start AS start, window.`end` AS `end`, {AGGS_SQL} "
                     f"FROM events GROUP BY k, windows(ts, 'table {view(w)}')")


def q_windowagg_df(events, definition):
    """windowagg through its Python API: groupBy(k, windowagg.window(ts, TableWindows.of(df)))."""
    import windowagg
    from pyspark.sql import functions as F
    return (events.groupBy("k", windowagg.window("ts", definition).alias("window")).agg(*harness.sum_count_avg())
            .select("k", F.col("window.start").alias("start"), F.col("window.end").alias("end"), "s", "n", "a"))


def q_range_join(spark, w: int, source: str = "events"):
    """What a Spark user writes: the range join, then a GROUP BY per key and period."""
    return spark.sql(f"SELECT e.k, p.start, p.`end`, sum(e.v) AS s, count(1) AS n, avg(e.v) AS a "
                     f"FROM {source} e JOIN {view(w)} p ON e.ts >= p.start AND e.ts < p.`end` "
                     f"GROUP BY e.k, p.start, p.`end`")


def merged_union(periods) -> list[tuple[int, int]]:
    """The union of the periods as disjoint [start, end) intervals, in microseconds."""
    from pyspark.sql import functions as F
    rows = sorted((r[0], r[1]) for r in periods.select(F.unix_micros("start"), F.unix_micros("end")).collect())
    out: list[list[int]] = []
    for s, e in rows:
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def describe(spark, events, periods, w: int, span_ms: float) -> dict:
    """Untimed: what the W windows are (lengths, coverage), the events in none of them (an anti join
    against the merged union), and windowagg's result size and (event, window) pairs on all keys."""
    from pyspark.sql import functions as F
    t0 = time.perf_counter()
    r = periods.agg(F.count("*").alias("n"),
                    F.expr("avg(unix_millis(`end`) - unix_millis(start)) / 3600000").alias("mean_h"),
                    F.expr("percentile_approx(unix_millis(`end`) - unix_millis(start), 0.5) / 3600000").alias("median_h"),
                    F.expr("min(unix_millis(`end`) - unix_millis(start)) / 3600000").alias("min_h"),
                    F.expr("max(unix_millis(`end`) - unix_millis(start)) / 3600000").alias("max_h"),
                    F.min("start").alias("first_start"), F.max("end").alias("last_end")).collect()[0]
    union = merged_union(periods)
    u = spark.createDataFrame([(s, e) for s, e in union], "s LONG, e LONG").select(
        F.timestamp_micros("s").alias("us"), F.timestamp_micros("e").alias("ue"))
    covered_ms = sum(e - s for s, e in union) / 1000.0
    lo, hi = BASE_MS * 1000, int((BASE_MS + span_ms) * 1000)  # the events' span, µs
    covered_in_span_ms = sum(max(0, min(e, hi) - max(s, lo)) for s, e in union) / 1000.0
    no_window = events.join(F.broadcast(u), (events.ts >= u.us) & (events.ts < u.ue), "left_anti").count()
    res = q_windowagg(spark, w).agg(F.count("*").alias("rows"), F.sum("n").alias("pairs"),
                                    F.countDistinct("start", "end").alias("windows_with_events")).collect()[0]
    out = {"windows": r["n"], "mean_length_h": r["mean_h"], "median_length_h": r["median_h"],
           "min_length_h": r["min_h"], "max_length_h": r["max_h"], "first_start": str(r["first_start"]),
           "last_end": str(r["last_end"]), "union_intervals": len(union), "union_days": covered_ms / DAY_MS,
           "share_of_span_covered": covered_in_span_ms / span_ms, "events_in_no_window": no_window,
           "result_rows": res["rows"], "pairs": res["pairs"], "windows_with_events": res["windows_with_events"],
           "describe_s": round(time.perf_counter() - t0, 1)}
    log(f"W={w}: {out}")
    return out


# ------------------------------------------------------------------------------ main

def main(argv=None) -> int:
    a = parse_args(argv)
    if a.report:
        rerender([Path(a.report)])
        return 0
    log(f"args: {vars(a)}")
    spark, res = harness.start(a, "windowagg-bench-table-windows", "table_windows")
    if res is None:
        return 1
    out = harness.results_path("table_windows", a.tag)
    res.update({
        "input": None,
        "windows": {},
        "runs": [],
        "finished": None,
    })

    def save():
        return harness.write_json(res, out)

    span_ms = a.days * DAY_MS
    events, info = harness.cache_input(data.table_events(spark, a.rows, a.keys, a.days, a.seed, a.shuffle_partitions),
                                       "events")
    events.createOrReplaceTempView("events")
    res["input"] = {**info, "rows_per_key": a.rows // a.keys, "days": a.days,
                    "ts": f"uniform over {a.days:g} days, whole milliseconds",
                    "v": "floor(rand * 1024000) / 1024",
                    "periods": "start uniform over the same days, length exp(uniform(ln 1 h, ln 30 d)), whole "
                               "milliseconds; spark.range(W) in one partition, duplicates dropped",
                    "min_length_h": MIN_LEN_MS / HOUR_MS, "max_length_h": MAX_LEN_MS / HOUR_MS}
    periods = {}
    for w in a.windows:
        p = make_periods(spark, w, a.days, a.seed).cache()
        p.count()
        p.createOrReplaceTempView(view(w))
        periods[w] = p
        sec = {"windows_requested": w, "view": view(w), "spec": f"table {view(w)}", "cells": {}}
        res["windows"][str(w)] = sec
        sec["plan_windowagg"] = harness.plan_of(q_windowagg(spark, w))
        sec["plan_range_join"] = harness.plan_of(q_range_join(spark, w))
        sec["join_strategy"] = next((s for s in ("BroadcastNestedLoopJoin", "CartesianProduct", "SortMergeJoin",
                                                 "BroadcastHashJoin", "ShuffledHashJoin")
                                     if s in sec["plan_range_join"]), "unknown")
        sec["stats"] = describe(spark, events, p, w, span_ms)
        save()

    runner = harness.Runner(spark, a.timeout)

    def cell(comp: str, w: int, make_df) -> dict:
        build_s = []

        def on_run(r):
            r["competitor"] = comp
            r["windows"] = w
            r["analysis_s"] = build_s[-1] if build_s else None
            res["runs"].append(r)
            save()

        def make():
            t0 = time.perf_counter()
            df = make_df()
            build_s.append(time.perf_counter() - t0)
            return df
        c = harness.measure(runner, f"W={w}/{comp}", make, reps=a.reps, long_run=a.long_run, contended=a.contended,
                            retries=a.retries, quiet_wait=a.quiet_wait, on_run=on_run, long_warmup_is_timed=True)
        c["competitor"] = comp
        c["windows"] = w
        c["median_analysis_s"] = harness.median(build_s)
        res["windows"][str(w)]["cells"][comp] = c
        save()
        return c

    for w in a.windows:
        cell("windowagg", w, lambda w=w: q_windowagg(spark, w))
    wmax = a.windows[-1]
    definition = None
    if a.df_api:
        import windowagg
        definition = windowagg.TableWindows.of(periods[wmax], start="start", end="end")
        res["windows"][str(wmax)]["df_definition"] = repr(definition)
        cell("windowagg_df", wmax, lambda: q_windowagg_df(events, definition))
    timed_out_at = None
    for w in a.windows:
        if timed_out_at is not None and a.skip_longer:
            c = {"label": f"W={w}/range_join", "competitor": "range_join", "windows": w, "status": "timeout",
                 "skipped": True, "timeout_s": a.timeout, "times_s": [], "cpu_s": [], "median_s": None,
                 "median_cpu_s": None, "contended_runs": 0, "shuffle_bytes": None,
                 "note": f"not run: timed out at W = {timed_out_at:,} (its cost only grows with W)"}
            log(f"W={w}/range_join: {c['note']}")
            res["windows"][str(w)]["cells"]["range_join"] = c
            save()
            continue
        c = cell("range_join", w, lambda w=w: q_range_join(spark, w))
        if c["status"] == "timeout":
            timed_out_at = w

    if a.check:
        from pyspark.sql import functions as F
        for w in a.windows:
            sec = res["windows"][str(w)]
            whole = (sec["cells"].get("range_join") or {}).get("status") == "ok"
            t0 = time.perf_counter()
            try:
                if whole:
                    src, wa_src, keys_below = "events", events, None
                else:
                    sub = events.where(F.col("k") < a.check_keys)
                    sub.createOrReplaceTempView("events_check")
                    src, wa_src, keys_below = "events_check", sub, a.check_keys
                join = q_range_join(spark, w, src).cache()
                if whole:
                    wa = q_windowagg(spark, w)
                else:
                    wa = spark.sql(f"SELECT k, window.start AS start, window.`end` AS `end`, {AGGS_SQL} "
                                   f"FROM events_check GROUP BY k, windows(ts, 'table {view(w)}')")
                ck = {"keys_below": keys_below, "windowagg": harness.compare_windows(wa, join)}
                if w == wmax and definition is not None:
                    ck["windowagg_df"] = harness.compare_windows(q_windowagg_df(wa_src, definition), join)
                join.unpersist()
            except Exception as e:  # noqa: BLE001
                ck = {"keys_below": None if whole else a.check_keys, "error": str(e).splitlines()[0][:500]}
            ck["check_s"] = round(time.perf_counter() - t0, 1)
            sec["check"] = ck
            log(f"check W={w} ({'all keys' if whole else f'keys k < {a.check_keys}'}): {ck}")
            save()

    for p in periods.values():
        p.unpersist()
    events.unpersist()
    harness.finish(spark, res, save)
    summary(res)
    if a.docs:
        rerender([out])
    return 0


# ------------------------------------------------------------------------------ summary + report

def ws(res) -> list[int]:
    return sorted(int(x) for x in res["windows"])


def get_cell(res, comp, w):
    return res["windows"].get(str(w), {}).get("cells", {}).get(comp)


def summary(res) -> None:
    for w in ws(res):
        for comp in COMPETITORS:
            c = get_cell(res, comp, w)
            if c:
                log(f"SUMMARY W={w:<6d} {comp:13s} wall {report.fmt_seconds(c):>24s}  "
                    f"CPU {report.fmt_seconds(c, 'median_cpu_s'):>8s}  "
                    f"others {c.get('median_foreign_cores') or 0:.2f} cores, {c.get('contended_runs', 0)} contended")
        cw, cj = get_cell(res, "windowagg", w), get_cell(res, "range_join", w)
        tw, tc = report.wall_and_cpu_ratios(cw, cj)
        log(f"SUMMARY W={w:<6d} windowagg ÷ range join: wall {tw}, CPU {tc}; {report.faster_by(cj, cw)[0]}")
        ck = res["windows"][str(w)].get("check")
        if ck:
            log(f"SUMMARY W={w:<6d} check: " + ("error " + ck["error"] if "error" in ck else
                f"{ck['windowagg']['mismatches']} mismatches of {ck['windowagg']['range_join_rows']:,} join rows"
                + (f" (keys k < {ck['keys_below']})" if ck.get("keys_below") is not None else " (all keys)")))
    lo, hi = ws(res)[0], ws(res)[-1]
    tw, tc = report.wall_and_cpu_ratios(get_cell(res, "windowagg", hi), get_cell(res, "windowagg", lo))
    log(f"SUMMARY windowagg W={hi} ÷ W={lo}: wall {tw}, CPU {tc} (flat: ≤ {TARGET_FLAT}×)")


def plot(res, path: Path) -> None:
    """Median wall and CPU time against the number of windows (log-log)."""
    timeout = res["args"]["timeout"]
    series = []
    for comp in COMPETITORS:
        pts = []
        for w in ws(res):
            c = get_cell(res, comp, w)
            if c is None or c["status"] not in ("ok", "timeout"):
                continue
            pts.append(report.Point(w, c["median_s"], c.get("median_cpu_s"), bool(c.get("contended_runs")),
                                    f"> {timeout:.0f} s{' (not run)' if c.get('skipped') else ''}"
                                    if c["status"] == "timeout" else None))
        if pts:
            series.append(report.Series(PLOT_LABEL[comp], STYLE[comp], pts))
    i = res["input"]
    report.wall_cpu_panels(
        series, path, timeout=timeout, legend_loc="upper left",
        xlabel="number of windows W (log): rows of the periods table, the same windows for every key",
        cpu_ylabel="median CPU time of the benchmark processes, s (log)",
        title=f"Windows given as a table, sum/count/avg per key and window: {i['rows']:,} events, {i['keys']:,} keys "
              f"over {i['days']:g} days, {res['config']['master']}"
              f"{' (quick run)' if res['args'].get('quick') else ''}: wall (left), CPU (right)")


def rerender(json_paths: list[Path], doc: Path = DOC, img: Path = IMG) -> None:
    """--report: the page (and plot) from a results file."""
    report.rerender_one(json_paths, render, doc, img)


def render(res: dict, json_path: Path, doc: Path, img: Path) -> None:
    """The page: bench/table_windows_notes.md (all of its prose) filled with what this run measured."""
    plot(res, img)
    m, cfg, a, i = res["machine"], res["config"], res["args"], res["input"]
    wl = ws(res)
    lo, hi = wl[0], wl[-1]
    cw_hi, cj_hi = get_cell(res, "windowagg", hi), get_cell(res, "range_join", hi)
    fast = report.faster_by(cj_hi, cw_hi)
    flat_w = report.bounded_ratio(cw_hi, get_cell(res, "windowagg", lo), "median_s")
    flat_c = report.bounded_ratio(cw_hi, get_cell(res, "windowagg", lo), "median_cpu_s")
    contended_hi = any(c and c.get("contended_runs") for c in (cw_hi, cj_hi))
    vf = report.verdict_at_least(fast, TARGET_FASTER)
    if contended_hi:
        vf += " († other processes shared the cores during these runs)"
    vw, vc = report.verdict_at_most(flat_w, TARGET_FLAT), report.verdict_at_most(flat_c, TARGET_FLAT)
    targets = [
        [f"range join ÷ windowagg at {i['rows']:,} events and W = {hi:,} ≥ {TARGET_FASTER:g}×",
         f"{fast[0]} (windowagg {report.median_seconds(cw_hi)}, range join {report.median_seconds(cj_hi)})", vf],
        [f"flat in W: windowagg at W = {hi:,} ÷ at W = {lo:,} ≤ {TARGET_FLAT}×",
         f"{flat_w[0]} wall, {flat_c[0]} CPU", vw if vw == vc else f"{vw} on wall time, {vc} on CPU time"],
    ]
    checks = [(w, res["windows"][str(w)].get("check")) for w in wl]
    checks = [(w, c) for w, c in checks if c]
    if checks:
        errs = [c for _, c in checks if "error" in c]
        sides = [c[s] for _, c in checks if "error" not in c for s in ("windowagg", "windowagg_df") if s in c]
        bad = sum(x["mismatches"] for x in sides)
        rows = sum(x["range_join_rows"] for x in sides)
        measured = (f"{bad:,} mismatching rows in {len(sides)} comparisons over {len(checks) - len(errs)} values of W "
                    f"({rows:,} range-join rows compared)" + (f"; {len(errs)} check(s) failed to run" if errs else ""))
        targets.append(["correctness: windowagg = the range join + `GROUP BY` (0 mismatches)", measured,
                        "**met**" if bad == 0 and not errs else "**missed**"])
    else:
        targets.append(["correctness: windowagg = the range join + `GROUP BY` (0 mismatches)",
                        "not checked (--no-check)", "not measured"])

    def row(w, comp, c):
        par = ratio(c.get("median_cpu_s"), c.get("median_s")) if c["status"] == "ok" else None
        sb = c.get("shuffle_bytes")
        return [f"{w:,}", SHORT[comp], report.fmt_seconds(c), report.fmt_seconds(c, "median_cpu_s"),
                report.fmt_num(par, ".2f"), report.fmt_num(sb / 1e6 if sb is not None else None, ".1f"),
                report.fmt_num(c.get("median_analysis_s"), ".2f"),
                report.fmt_num(c.get("median_foreign_cores"), ".2f"),
                f"{c.get('contended_runs', 0)} of {len(c.get('times_s') or [])}"]
    rows = [row(w, comp, c) for w in wl for comp in COMPETITORS if (c := get_cell(res, comp, w))]

    ratio_rows = []
    for w in wl:
        cw, cj = get_cell(res, "windowagg", w), get_cell(res, "range_join", w)
        tw, tc = report.wall_and_cpu_ratios(cw, cj)
        jw, jc = report.wall_and_cpu_ratios(cj, cw)
        ratio_rows.append([f"{w:,}", tw, tc, jw, jc, report.faster_by(cj, cw)[0]])
    cdf = get_cell(res, "windowagg_df", hi)
    df_line = ""
    if cdf:
        dw, dc = report.wall_and_cpu_ratios(cdf, cw_hi)
        df_line = (f"The Python API (`windowagg.TableWindows.of(df)`, W = {hi:,}) against the SQL call on the same "
                   f"windows: {dw} wall, {dc} CPU.")
    flat_rows = [[f"windowagg W = {w:,} ÷ W = {lo:,}" + (f" (flat: ≤ {TARGET_FLAT}×)" if w == hi else ""),
                  *report.wall_and_cpu_ratios(get_cell(res, "windowagg", w), get_cell(res, "windowagg", lo))] for w in wl[1:]]
    jl = [(w, get_cell(res, "range_join", w)) for w in wl]
    join_growth = [[f"range join W = {w:,} ÷ W = {lo:,}",
                    *report.wall_and_cpu_ratios(c, get_cell(res, "range_join", lo))] for w, c in jl[1:] if c]

    shape_rows = []
    for w in wl:
        st = res["windows"][str(w)]["stats"]
        shape_rows.append([f"{w:,}", f"{st['windows']:,}", f"{st['min_length_h']:.1f} / {st['median_length_h']:.1f} / "
                           f"{st['mean_length_h']:.1f} / {st['max_length_h']:.1f}",
                           f"{st['share_of_span_covered']:.1%}", f"{st['events_in_no_window']:,} "
                           f"({st['events_in_no_window'] / i['rows']:.1%})",
                           f"{st['pairs'] / i['rows']:,.1f}", f"{st['pairs']:,}", f"{st['result_rows']:,}",
                           f"{res['windows'][str(w)].get('join_strategy', '?')}"])

    # what each competitor's time follows: windowagg's result rows, the join's (event, period) pairs tested
    cost_rows = []
    for w in wl:
        st = res["windows"][str(w)]["stats"]
        cw, cj = get_cell(res, "windowagg", w), get_cell(res, "range_join", w)
        wa_ok = cw is not None and cw["status"] == "ok"
        j_ok = cj is not None and cj["status"] == "ok"
        tested = i["rows"] * st["windows"]
        cost_rows.append([
            f"{w:,}", f"{st['result_rows']:,}", f"{st['pairs']:,}", f"{tested:,}",
            report.fmt_num(cw["median_cpu_s"] * 1e6 / st["result_rows"] if wa_ok and cw.get("median_cpu_s")
                           and st["result_rows"] else None, ",.1f"),
            report.fmt_num(cw["median_cpu_s"] * 1e9 / i["rows"] if wa_ok and cw.get("median_cpu_s") else None, ",.0f"),
            report.fmt_num(cj["median_cpu_s"] * 1e9 / tested if j_ok and cj.get("median_cpu_s") else None, ".1f")])

    st_lo, st_hi = res["windows"][str(lo)]["stats"], res["windows"][str(hi)]["stats"]

    def growth_text(c_hi, c_lo) -> str:
        t, tc = report.wall_and_cpu_ratios(c_hi, c_lo)
        return f"{t} (wall), {tc} (CPU)" if tc not in ("–", "– (timeout)") else t

    def per_row(c, st) -> str:
        ok = c is not None and c["status"] == "ok" and c.get("median_cpu_s") and st["result_rows"]
        return f"{c['median_cpu_s'] * 1e6 / st['result_rows']:,.1f}" if ok else "–"
    slower = [w for w in wl if (r := report.bounded_ratio(get_cell(res, "windowagg", w), get_cell(res, "range_join", w),
                                                           "median_s"))[1] is not None and r[2] == "=" and r[1] > 1]

    checked = []
    for w, ck in checks:
        where = "all keys" if ck.get("keys_below") is None else f"keys k < {ck['keys_below']} (the join timed out)"
        if "error" in ck:
            checked.append([f"{w:,}", where, f"check failed: {ck['error'][:200]}", "", "", "", "", ""])
            continue
        for side in ("windowagg", "windowagg_df"):
            if side not in ck:
                continue
            x = ck[side]
            checked.append([f"{w:,}", where, SHORT[side], f"{x['windowagg_rows']:,}", f"{x['range_join_rows']:,}",
                            f"{x['pairs']:,}", f"**{x['mismatches']:,}**",
                            f"{x['only_in_windowagg']:,} / {x['only_in_range_join']:,} / {x['count_mismatches']:,} / "
                            f"{x['sum_mismatches']:,} / {x['avg_mismatches']:,}"])
    subset_check = any(ck.get("keys_below") is not None for _, ck in checks)
    timeouts = [w for w, c in jl if c and c["status"] == "timeout"]

    report.render_page(doc, img, NOTES, {
        "provenance": report.provenance("table_windows.py", [json_path], NOTES),
        "banners": "\n".join(report.banners(res)),
        "run_line": report.run_line(res, json_path, doc, before=f" on {i['rows']:,} events, {i['keys']:,} keys"),
        "windows_list": ", ".join(f"{w:,}" for w in wl),
        "rows": f"{i['rows']:,}",
        "keys": f"{i['keys']:,}",
        "rows_per_key": f"{i['rows_per_key']:,}",
        "days": f"{i['days']:g}",
        "largest": f"{hi:,}",
        "smallest": f"{lo:,}",
        "target_faster": f"{TARGET_FASTER:g}",
        "target_flat": TARGET_FLAT,
        "targets_table": "\n".join(report.table(["target", "measured", "verdict"], "lll", targets)),
        "machine": report.machine_line(m),
        "master": cfg["master"],
        "driver_memory": cfg["spark.driver.memory"],
        "driver_max_heap_gib": m.get("driver_max_heap_gib"),
        "shuffle_partitions": cfg["spark.sql.shuffle.partitions"],
        "jar": report.jar_line(cfg.get("windowagg_jar")),
        "ts_min": i["ts_min"],
        "ts_max": i["ts_max"],
        "partitions": i["partitions"],
        "v_definition": i["v"],
        "timed_runs": f"{a['reps']} timed run{'s' if a['reps'] != 1 else ''}",
        "long_run": f"{a['long_run']:.0f}",
        "timeout": f"{a['timeout']:.0f}",
        "cpu_method": report.cpu_method(a["contended"]),
        "shapes_table": "\n".join(report.table(
            ["W", "windows", "length min / median / mean / max (h)", "share of the span covered", "events in no window",
             "windows per event (mean)", "(event, window) pairs", "result rows", "Spark's join"],
            "rrrrrrrrl", shape_rows)),
        "results_table": "\n".join(report.table(
            ["W", "competitor", "wall (s)", "CPU (s)", "CPU ÷ wall", "shuffled (MB)", "analysis (s)", "others (cores)",
             "contended runs"], "rlrrrrrrr", rows)),
        "ratios_table": "\n".join(report.table(
            ["W", "windowagg ÷ range join (wall)", "windowagg ÷ range join (CPU)", "range join ÷ windowagg (wall)",
             "range join ÷ windowagg (CPU)", "windowagg is"], "rrrrrr", ratio_rows)),
        "df_line": df_line,
        "join_all_finished": bool(jl) and all(c and c["status"] == "ok" for _, c in jl),
        "w_growth": f"{hi / lo:,.0f}",
        "join_growth": growth_text(get_cell(res, "range_join", hi), get_cell(res, "range_join", lo)),
        "wa_growth": growth_text(cw_hi, get_cell(res, "windowagg", lo)),
        "rows_lo": f"{st_lo['result_rows']:,}",
        "rows_hi": f"{st_hi['result_rows']:,}",
        "rows_growth": f"{st_hi['result_rows'] / st_lo['result_rows']:,.0f}" if st_lo["result_rows"] else "–",
        "rows_share_hi": f"{st_hi['result_rows'] / (i['keys'] * st_hi['windows']):.0%}",
        "per_row_lo": per_row(get_cell(res, "windowagg", lo), st_lo),
        "per_row_hi": per_row(cw_hi, st_hi),
        "slices_hi": f"{2 * st_hi['windows'] + 1:,}",
        "wa_slower": bool(slower),
        "slower_at": " and ".join(f"{w:,}" for w in slower),
        "slower_pairs": " and ".join(f"{res['windows'][str(w)]['stats']['pairs'] / i['rows']:.1f}" for w in slower),
        "cost_table": "\n".join(report.table(
            ["W", "result rows", "(event, window) pairs", "(event, period) pairs tested by the join",
             "windowagg CPU per result row (µs)", "windowagg CPU per event (ns)", "range join CPU per pair tested (ns)"],
            "rrrrrrr", cost_rows)),
        "flat_table": "\n".join(report.table(["ratio", "wall time", "CPU time"], "lrr", flat_rows + join_growth)),
        "join_timed_out": bool(timeouts),
        "timed_out_windows": ", ".join(f"{w:,}" for w in timeouts),
        "plot": report.link(img, doc),
        "correctness_table": "\n".join(report.table(
            ["W", "keys", "compared", "windowagg rows", "range-join rows", "(event, window) pairs", "mismatches",
             "only windowagg / only join / count / sum / avg"], "rllrrrrr", checked)),
        "subset_check": subset_check,
        "check_keys": a["check_keys"],
        "results_file": report.repo_rel(json_path),
    })


if __name__ == "__main__":
    sys.exit(main())
