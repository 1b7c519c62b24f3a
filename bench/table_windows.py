#!/usr/bin/env python3
"""Batch benchmark: windowagg's TableWindows (windows given as data, one [start, end) per row of a
table) against what a Spark user writes today, the range join followed by a GROUP BY; with
--per-key, each row is a window of the key it names only, and the range join is on the key too.
The issue's targets: at least 10x faster than the range join at the headline size, and flat in the
number of windows.

Its inputs, cells, checks and method are its pages': bench/table_windows_notes.md and
bench/table_windows_per_key_notes.md, rendered into docs/benchmarks-table-windows.md and
docs/benchmarks-table-windows-per-key.md (render_global and render_per_key); --report renders the
page of the results file's own variant (its "benchmark" field), with or without --per-key.
"""
from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import data  # noqa: E402
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

BASE_MS = data.TABLE_BASE_MS  # the events' first instant (data.table_events)
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MIN_LEN_MS = HOUR_MS
MAX_LEN_MS = 30 * DAY_MS
HEADLINE_P = 20  # the per-key case: 1,000 keys x 20 periods

COMPETITORS = ["windowagg", "windowagg_df", "range_join"]
STYLE = {
    "windowagg": dict(color="tab:blue", marker="o", linewidth=2.5),
    "windowagg_df": dict(color="tab:cyan", marker="D", linestyle=":"),  # one point: the line shows in the legend only
    "range_join": dict(color="tab:red", marker="s"),
}
TARGET_FASTER = 10.0  # range join ÷ windowagg at the headline size must be at least this
TARGET_FLAT = 1.5  # windowagg(largest size) ÷ windowagg(smallest size): "flat" (count_batch.py's bound)
AGGS_SQL = "sum(v) AS s, count(1) AS n, avg(v) AS a"


@dataclass(frozen=True)
class Variant:
    """What differs between global windows (W of them, the same for every key) and per-key windows (P
    periods per key); the results of each keep the layout and names they had as two scripts."""
    name: str  # the results' name and "benchmark" field, the notes file's and the plot's
    page: str  # under docs/
    letter: str  # the size's letter: W (windows) or P (periods per key)
    sizes_key: str  # the results' section of each size: res[sizes_key][str(size)]
    size_field: str  # a cell's and a run's size
    view_prefix: str  # the periods' view of a size: <view_prefix>_<size>
    keys: list[str]  # the periods' key columns: TableWindows' keys
    short: dict  # each competitor on the page's tables
    plot_label: dict
    plot_title: str
    plot_xlabel: str  # may name {keys}
    periods_description: str
    make_periods: Callable  # (spark, size, keys, days, seed) -> the periods table
    describe: Callable  # (spark, events, periods, size, days) -> its stats
    headline: Callable[[list[int]], int]  # the sizes -> the one the page leads with
    render: Callable  # (res, json_path, doc, img)

    @property
    def doc(self) -> Path:
        return report.DOCS / self.page

    @property
    def img(self) -> Path:
        return report.DOCS / "img" / f"{self.name}.png"

    @property
    def notes(self) -> Path:  # the page's prose, a template render fills
        return BENCH_DIR / f"{self.name}_notes.md"

    def view(self, size: int) -> str:
        return f"{self.view_prefix}_{size}"

    def spec(self, size: int) -> str:
        """The windows(ts, '...') definition of the periods of `size`."""
        return f"table {self.view(size)}" + "".join(f" keys {k}" for k in self.keys)


def sizes_arg(p: argparse.ArgumentParser, flag: str, text: str) -> list[int]:
    sizes = sorted({int(x) for x in text.split(",") if x.strip()})
    if not sizes or min(sizes) < 1:
        p.error(f"{flag}: positive integers")
    return sizes


def parse_args(argv=None) -> argparse.Namespace:
    p = harness.parser(__doc__, "smoke run: 200k events / 100 keys, 2 reps, 120 s timeout, no docs")
    p.add_argument("--per-key", action="store_true",
                   help="per-key windows (P periods per key) instead of W windows for every key")
    p.add_argument("--rows", type=int, help="events (default 4,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 100)")
    p.add_argument("--days", type=float, default=365.0,
                   help="the events' and the window starts' time span, days (default 365)")
    p.add_argument("--windows", default="100,1000,10000",
                   help="numbers of windows W, comma separated (default 100,1000,10000)")
    p.add_argument("--periods", default="5,20,80",
                   help="with --per-key: periods per key P, comma separated (default 5,20,80)")
    p.add_argument("--check-keys", type=int, default=100,
                   help="where the range join timed out, the correctness check runs on the keys k < N (default 100)")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the correctness check")
    p.add_argument("--no-df", dest="df_api", action="store_false",
                   help="skip the Python-API cell (windowagg.TableWindows.of(df)) at the headline size")
    p.add_argument("--no-skip-longer", dest="skip_longer", action="store_false",
                   help="run the range join at larger sizes even after it timed out at a smaller one")
    batch = harness.add_batch_args(p, "benchmarks-table-windows[-per-key].md", reps=(3, 2), timeout=(900.0, 120.0))
    a = p.parse_args(argv)
    harness.defaults(a, rows=(4_000_000, 200_000), keys=(1000, 100), **batch)
    a.sizes = sizes_arg(p, "--periods", a.periods) if a.per_key else sizes_arg(p, "--windows", a.windows)
    if a.days <= 0:
        p.error("--days: positive")
    return a


# ------------------------------------------------------------------------------ inputs

def log_uniform_length_ms(uniform):
    """A period's length, exp(uniform(ln 1 h, ln 30 d)) in whole milliseconds, from a uniform [0, 1) column."""
    from pyspark.sql import functions as F
    lo, hi = math.log(MIN_LEN_MS), math.log(MAX_LEN_MS)
    return F.floor(F.exp(F.lit(lo) + uniform * (hi - lo))).cast("long")


def as_period(start_ms, len_ms, *keys: str):
    """The columns of a period, `keys` then start and end TIMESTAMP, from its start and length in ms."""
    from pyspark.sql import functions as F
    return [*keys, F.timestamp_millis(start_ms).alias("start"), F.timestamp_millis(start_ms + len_ms).alias("end")]


def make_periods(spark, w: int, keys: int, days: float, seed: int):
    """W periods (start, end) for every key: start uniform over `days` days from BASE_MS, length
    log-uniform in [1 hour, 30 days], whole milliseconds; one partition, so one seed gives nested sets
    (the first 100 periods of 1,000 are the 100). Identical periods are dropped (windowagg counts them once)."""
    from pyspark.sql import functions as F
    start_ms = (F.lit(BASE_MS) + F.floor(F.rand(seed + 100) * (days * DAY_MS))).cast("long")
    return (spark.range(0, w, 1, 1)
            .select(start_ms.alias("start_ms"), log_uniform_length_ms(F.rand(seed + 101)).alias("len_ms"))
            .select(*as_period(F.col("start_ms"), F.col("len_ms")))
            .dropDuplicates(["start", "end"])
            .coalesce(1))


def make_key_periods(spark, p: int, keys: int, days: float, seed: int):
    """P periods per key (k INT, start, end), drawn as make_periods' but period j of key k from a hash
    of (seed, k, j): the periods of a smaller P are among those of a larger one."""
    from pyspark.sql import functions as F

    def uniform(salt: int):  # in [0, 1), from (seed, k, j, salt)
        h = F.xxhash64(F.lit(seed), F.col("k"), F.col("j"), F.lit(salt))
        return F.pmod(h, F.lit(1 << 53)) / float(1 << 53)
    start_ms = (F.lit(BASE_MS) + F.floor(uniform(1) * (days * DAY_MS))).cast("long")
    ks = spark.range(0, keys, 1, 1).select(F.col("id").cast("int").alias("k"))
    js = spark.range(0, p, 1, 1).select(F.col("id").cast("int").alias("j"))
    return (ks.crossJoin(js).select("k", start_ms.alias("start_ms"), log_uniform_length_ms(uniform(2)).alias("len_ms"))
            .select(*as_period(F.col("start_ms"), F.col("len_ms"), "k"))
            .dropDuplicates(["k", "start", "end"])
            .coalesce(1))


# ------------------------------------------------------------------------------ queries

def q_windowagg(spark, v: Variant, size: int, source: str = "events"):
    """windowagg through SQL: GROUP BY k, windows(ts, 'table <periods>[ keys k]') over the view `source`."""
    return spark.sql(f"SELECT k, window.start AS start, window.`end` AS `end`, {AGGS_SQL} "
                     f"FROM {source} GROUP BY k, windows(ts, '{v.spec(size)}')")


def q_windowagg_df(events, definition):
    """windowagg through its Python API: groupBy(k, windowagg.window(ts, TableWindows.of(df[, keys]))."""
    import windowagg
    from pyspark.sql import functions as F
    return (events.groupBy("k", windowagg.window("ts", definition).alias("window")).agg(*harness.sum_count_avg())
            .select("k", F.col("window.start").alias("start"), F.col("window.end").alias("end"), "s", "n", "a"))


def q_range_join(spark, v: Variant, size: int, source: str = "events"):
    """What a Spark user writes: the range join (on the key too, per key), then a GROUP BY per key and period."""
    on_keys = "".join(f"e.{k} = p.{k} AND " for k in v.keys)
    return spark.sql(f"SELECT e.k, p.start, p.`end`, sum(e.v) AS s, count(1) AS n, avg(e.v) AS a "
                     f"FROM {source} e JOIN {v.view(size)} p ON {on_keys}e.ts >= p.start AND e.ts < p.`end` "
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


LENGTH_H = "(unix_millis(`end`) - unix_millis(start)) / 3600000"


def length_stats():
    """The aggregates of the periods' lengths in hours: min, median, mean, max."""
    from pyspark.sql import functions as F
    return [F.expr(f"min({LENGTH_H})").alias("min_h"), F.expr(f"percentile_approx({LENGTH_H}, 0.5)").alias("median_h"),
            F.expr(f"avg({LENGTH_H})").alias("mean_h"), F.expr(f"max({LENGTH_H})").alias("max_h")]


def describe_global(spark, events, periods, w: int, days: float) -> dict:
    """Untimed: what the W windows are (lengths, coverage), the events in none of them (an anti join
    against the merged union), and windowagg's result size and (event, window) pairs on all keys."""
    from pyspark.sql import functions as F
    t0 = time.perf_counter()
    r = periods.agg(F.count("*").alias("n"), *length_stats(),
                    F.min("start").alias("first_start"), F.max("end").alias("last_end")).collect()[0]
    union = merged_union(periods)
    u = spark.createDataFrame([(s, e) for s, e in union], "s LONG, e LONG").select(
        F.timestamp_micros("s").alias("us"), F.timestamp_micros("e").alias("ue"))
    covered_ms = sum(e - s for s, e in union) / 1000.0
    span_ms = days * DAY_MS
    lo, hi = BASE_MS * 1000, int((BASE_MS + span_ms) * 1000)  # the events' span, µs
    covered_in_span_ms = sum(max(0, min(e, hi) - max(s, lo)) for s, e in union) / 1000.0
    no_window = events.join(F.broadcast(u), (events.ts >= u.us) & (events.ts < u.ue), "left_anti").count()
    res = q_windowagg(spark, GLOBAL, w).agg(F.count("*").alias("rows"), F.sum("n").alias("pairs"),
                                            F.countDistinct("start", "end").alias("windows_with_events")).collect()[0]
    out = {"windows": r["n"], "mean_length_h": r["mean_h"], "median_length_h": r["median_h"],
           "min_length_h": r["min_h"], "max_length_h": r["max_h"], "first_start": str(r["first_start"]),
           "last_end": str(r["last_end"]), "union_intervals": len(union), "union_days": covered_ms / DAY_MS,
           "share_of_span_covered": covered_in_span_ms / span_ms, "events_in_no_window": no_window,
           "result_rows": res["rows"], "pairs": res["pairs"], "windows_with_events": res["windows_with_events"],
           "describe_s": round(time.perf_counter() - t0, 1)}
    log(f"W={w}: {out}")
    return out


def describe_per_key(spark, events, periods, p: int, days: float) -> dict:
    """Untimed: the windows and their lengths, the events in no window of their key, the (event,
    period) pairs the join tests, and windowagg's result rows and (event, window) pairs."""
    from pyspark.sql import functions as F
    t0 = time.perf_counter()
    r = periods.agg(F.count("*").alias("n"), F.countDistinct("k").alias("keys"), *length_stats()).collect()[0]
    e, q = events.alias("e"), F.broadcast(periods.alias("q"))
    no_window = e.join(q, (F.col("e.k") == F.col("q.k")) & (F.col("e.ts") >= F.col("q.start"))
                       & (F.col("e.ts") < F.col("q.end")), "left_anti").count()
    tested = (events.groupBy("k").count().withColumnRenamed("count", "ne")
              .join(periods.groupBy("k").count().withColumnRenamed("count", "np"), "k")
              .agg(F.sum(F.col("ne") * F.col("np"))).collect()[0][0]) or 0
    res = q_windowagg(spark, PER_KEY, p).agg(F.count("*").alias("rows"), F.sum("n").alias("pairs")).collect()[0]
    out = {"windows": r["n"], "keys_with_windows": r["keys"], "min_length_h": r["min_h"],
           "median_length_h": r["median_h"], "mean_length_h": r["mean_h"], "max_length_h": r["max_h"],
           "events_in_no_window": no_window, "pairs_tested_by_join": tested, "result_rows": res["rows"],
           "pairs": res["pairs"] or 0, "describe_s": round(time.perf_counter() - t0, 1)}
    log(f"P={p}: {out}")
    return out


def per_key_headline(periods: list[int]) -> int:
    return HEADLINE_P if HEADLINE_P in periods else periods[len(periods) // 2]


# ------------------------------------------------------------------------------ main

def run(b: protocol.Run, v: Variant) -> None:
    a, res, spark = b.a, b.res, b.spark
    import windowagg
    res["config"]["windowagg_python"] = report.repo_rel(Path(windowagg.__file__).parent)
    sections = res[v.sizes_key]
    events, info = harness.cache_input(data.table_events(spark, a.rows, a.keys, a.days, a.seed, a.shuffle_partitions),
                                       "events")
    events.createOrReplaceTempView("events")
    res["input"] = {**info, "rows_per_key": a.rows // a.keys, "days": a.days,
                    "ts": f"uniform over {a.days:g} days, whole milliseconds",
                    "v": "floor(rand * 1024000) / 1024", "periods": v.periods_description,
                    "min_length_h": MIN_LEN_MS / HOUR_MS, "max_length_h": MAX_LEN_MS / HOUR_MS}
    periods = {}
    for size in a.sizes:
        t = v.make_periods(spark, size, a.keys, a.days, a.seed).cache()
        t.count()
        t.createOrReplaceTempView(v.view(size))
        periods[size] = t
        sec = sections[str(size)] = {v.size_field: size, "view": v.view(size), "spec": v.spec(size), "cells": {}}
        sec["plan_windowagg"] = harness.plan_of(q_windowagg(spark, v, size))
        sec["plan_range_join"] = harness.plan_of(q_range_join(spark, v, size))
        sec["join_strategy"] = next((s for s in ("BroadcastNestedLoopJoin", "CartesianProduct", "SortMergeJoin",
                                                 "BroadcastHashJoin", "ShuffledHashJoin")
                                     if s in sec["plan_range_join"]), "unknown")
        sec["stats"] = v.describe(spark, events, t, size, a.days)
        b.save()

    def cells_at(size):
        return sections[str(size)]["cells"]

    def cell(comp: str, size: int, make_df) -> dict:
        return b.cell(f"{v.letter}={size}/{comp}", make_df, cells_at(size), comp, time_analysis=True,
                      competitor=comp, **{v.size_field: size})

    for size in a.sizes:
        cell("windowagg", size, lambda size=size: q_windowagg(spark, v, size))
    hd = v.headline(a.sizes)
    definition = None
    if a.df_api:
        definition = windowagg.TableWindows.of(periods[hd], keys=v.keys or None)
        sections[str(hd)]["df_definition"] = repr(definition)
        cell("windowagg_df", hd, lambda: q_windowagg_df(events, definition))
    b.until_timeout(a.sizes, v.letter, "range_join", v.size_field, cells_at,
                    lambda size: cell("range_join", size, lambda: q_range_join(spark, v, size)))

    def check(size: int, whole: bool) -> dict:  # on all keys when the join's cell finished: it is the slow side
        from pyspark.sql import functions as F
        if whole:
            src, wa_src = "events", events
        else:
            wa_src = events.where(F.col("k") < a.check_keys)
            wa_src.createOrReplaceTempView("events_check")
            src = "events_check"
        join = q_range_join(spark, v, size, src).cache()
        ck = {"keys_below": None if whole else a.check_keys,
              "windowagg": harness.compare_windows(q_windowagg(spark, v, size, src), join)}
        if size == hd and definition is not None:
            ck["windowagg_df"] = harness.compare_windows(q_windowagg_df(wa_src, definition), join)
        join.unpersist()
        return ck

    if a.check:
        for size in a.sizes:
            sec = sections[str(size)]
            whole = (sec["cells"].get("range_join") or {}).get("status") == "ok"
            b.check(f"{v.letter}={size} ({'all keys' if whole else f'keys k < {a.check_keys}'})",
                    lambda: check(size, whole), sec, keys_below=None if whole else a.check_keys)

    for t in periods.values():
        t.unpersist()
    events.unpersist()


def without_per_key_windows(v: Variant) -> str | None:
    """Why the per-key variant cannot run on the windowagg package found, if it cannot."""
    import windowagg
    if v.keys and "keys" not in inspect.signature(windowagg.TableWindows.of).parameters:
        return (f"the windowagg package at {Path(windowagg.__file__).parent} has no per-key TableWindows: run with "
                f"PYTHONPATH={harness.REPO / 'python'} (bench/run table-windows-per-key does) or reinstall it")
    return None


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.report:  # the results file's own variant
        rerender([Path(a.report)])
        return 0
    v = PER_KEY if a.per_key else GLOBAL
    return protocol.Benchmark(
        v.name, f"windowagg-bench-{v.name.replace('_', '-')}", parse_args, lambda b: run(b, v), v.render, v.doc,
        v.img, results={"input": None, v.sizes_key: {}}, summary=lambda res: summary(res, v),
        prepare=lambda a: without_per_key_windows(v)).main_parsed(a)


# ------------------------------------------------------------------------------ summary + report

def sizes(res, v: Variant) -> list[int]:
    return sorted(int(x) for x in res[v.sizes_key])


def get_cell(res, v: Variant, comp, size):
    return res[v.sizes_key].get(str(size), {}).get("cells", {}).get(comp)


def summary(res, v: Variant) -> None:
    for size in sizes(res, v):
        at = f"{v.letter}={size:<6d}"
        for comp in COMPETITORS:
            if c := get_cell(res, v, comp, size):
                report.log_cell(f"{at} {comp:13s}", c, 24)
        cw, cj = get_cell(res, v, "windowagg", size), get_cell(res, v, "range_join", size)
        tw, tc = report.wall_and_cpu_ratios(cw, cj)
        log(f"SUMMARY {at} windowagg ÷ range join: wall {tw}, CPU {tc}; {report.faster_by(cj, cw)[0]}")
        if ck := res[v.sizes_key][str(size)].get("check"):
            log(f"SUMMARY {at} check: " + (f"error {ck['error']}" if "error" in ck else ", ".join(
                f"{side} {ck[side]['mismatches']} mismatches of {ck[side]['range_join_rows']:,} join rows"
                for side in ("windowagg", "windowagg_df") if side in ck)
                + (f" (keys k < {ck['keys_below']})" if ck.get("keys_below") is not None else " (all keys)")))
    lo, hi = sizes(res, v)[0], sizes(res, v)[-1]
    tw, tc = report.wall_and_cpu_ratios(get_cell(res, v, "windowagg", hi), get_cell(res, v, "windowagg", lo))
    log(f"SUMMARY windowagg {v.letter}={hi} ÷ {v.letter}={lo}: wall {tw}, CPU {tc} (flat: ≤ {TARGET_FLAT}×)")


def plot(res, v: Variant, path: Path) -> None:
    """Median wall and CPU time against the size, W or P (log-log)."""
    timeout = res["args"]["timeout"]
    series = []
    for comp in COMPETITORS:
        pts = [report.Point(size, c["median_s"], c.get("median_cpu_s"), bool(c.get("contended_runs")),
                            f"> {timeout:.0f} s{' (not run)' if c.get('skipped') else ''}"
                            if c["status"] == "timeout" else None)
               for size in sizes(res, v) if (c := get_cell(res, v, comp, size)) and c["status"] in ("ok", "timeout")]
        if pts:
            series.append(report.Series(v.plot_label[comp], STYLE[comp], pts))
    i = res["input"]
    report.wall_cpu_panels(
        series, path, timeout=timeout, legend_loc="upper left", xlabel=v.plot_xlabel.format(keys=i["keys"]),
        cpu_ylabel="median CPU time of the benchmark processes, s (log)",
        title=f"{v.plot_title}, sum/count/avg per key and window: {i['rows']:,} events, {i['keys']:,} keys "
              f"over {i['days']:g} days, {res['config']['master']}"
              f"{' (quick run)' if res['args'].get('quick') else ''}: wall (left), CPU (right)")


def rerender(json_paths: list[Path], doc: Path | None = None, img: Path | None = None) -> None:
    """--report: the page (and plot) of the results file's variant, from the file."""
    v = VARIANTS[report.load(json_paths[0])["benchmark"]]
    report.rerender_one(json_paths, v.render, doc or v.doc, img or v.img)


def faster_target(where: str, cw: dict | None, cj: dict | None) -> list[str]:
    """The targets table's row of "the range join ÷ windowagg ≥ TARGET_FASTER" at the headline size."""
    fast = report.faster_by(cj, cw)
    judged = report.verdict_at_least(fast, TARGET_FASTER)
    if any(c and c.get("contended_runs") for c in (cw, cj)):
        judged += report.CONTENDED
    return [f"range join ÷ windowagg at {where} ≥ {TARGET_FASTER:g}×",
            f"{fast[0]} (windowagg {report.median_seconds(cw)}, range join {report.median_seconds(cj)})", judged]


def correctness_target(checks: list[tuple[int, dict]], letter: str) -> list[str]:
    """The targets table's row of the correctness check."""
    target = "correctness: windowagg = the range join + `GROUP BY` (0 mismatches)"
    if not checks:
        return [target, "not checked (--no-check)", "not measured"]
    sides = [ck[s] for _, ck in checks if "error" not in ck for s in ("windowagg", "windowagg_df") if s in ck]
    errs = [ck for _, ck in checks if "error" in ck]
    bad = sum(x["mismatches"] for x in sides)
    measured = (f"{bad:,} mismatching rows in {len(sides)} comparisons over {len(checks) - len(errs)} values of "
                f"{letter} ({sum(x['range_join_rows'] for x in sides):,} range-join rows compared)"
                + (f"; {len(errs)} check(s) failed to run" if errs else ""))
    return [target, measured, "**met**" if bad == 0 and not errs else "**missed**"]


def correctness_rows(checks: list[tuple[int, dict]], short: dict, where: Callable[[dict], str] | None = None
                     ) -> list[list[str]]:
    """The correctness table's rows: the size, `where` (the keys a check covered) when given, what was
    compared, windowagg's and the join's rows, the pairs, the mismatches and their kinds."""
    rows = []
    for size, ck in checks:
        head = [f"{size:,}", *([where(ck)] if where else [])]
        if "error" in ck:
            rows.append([*head, f"check failed: {ck['error'][:200]}", "", "", "", "", ""])
            continue
        for side in ("windowagg", "windowagg_df"):
            if side in ck:
                rows.append([*head, short[side], *report.mismatch_cells(ck[side])])
    return rows


def result_row(size, comp, c, short: dict, spread: bool = False) -> list[str]:
    """The results table's row of a cell; with `spread`, its fastest and slowest timed runs too."""
    return [f"{size:,}", short[comp], report.fmt_seconds(c), *([report.run_spread(c)] if spread else []),
            report.fmt_seconds(c, "median_cpu_s"), report.cpu_per_wall(c), report.shuffled_mb(c),
            report.fmt_num(c.get("median_analysis_s"), ".2f"), *report.contention(c)]


def ratio_row(size, cw, cj) -> list[str]:
    """The ratios table's row: windowagg ÷ range join and its inverse, wall and CPU, and the verdict."""
    return [f"{size:,}", *report.wall_and_cpu_ratios(cw, cj), *report.wall_and_cpu_ratios(cj, cw),
            report.faster_by(cj, cw)[0]]


def windowagg_slower_at(res, v: Variant) -> list[int]:
    """The sizes where windowagg's median wall time is measured above the range join's."""
    return [size for size in sizes(res, v)
            if (r := report.bounded_ratio(get_cell(res, v, "windowagg", size), get_cell(res, v, "range_join", size),
                                          "median_s"))[1] is not None and r[2] == "=" and r[1] > 1]


def shared_values(res: dict, json_path: Path, doc: Path, img: Path, v: Variant) -> dict:
    """The values both pages fill in: the run's (report.run_values), the days and the targets."""
    i = res["input"]
    return {**report.run_values("table_windows.py", res, [json_path], doc, img, v.notes,
                                run_line_before=f" on {i['rows']:,} events, {i['keys']:,} keys"),
            "days": f"{i['days']:g}", "target_faster": f"{TARGET_FASTER:g}", "target_flat": TARGET_FLAT}


def render_global(res: dict, json_path: Path, doc: Path, img: Path) -> None:
    """The page of global windows: bench/table_windows_notes.md (all of its prose) filled with what this run
    measured."""
    v = GLOBAL
    plot(res, v, img)
    a, i = res["args"], res["input"]
    wl = sizes(res, v)
    lo, hi = wl[0], wl[-1]
    cw_hi, cj_hi = get_cell(res, v, "windowagg", hi), get_cell(res, v, "range_join", hi)
    checks = [(w, ck) for w in wl if (ck := res["windows"][str(w)].get("check"))]
    targets = [faster_target(f"{i['rows']:,} events and W = {hi:,}", cw_hi, cj_hi),
               report.flat_target(f"flat in W: windowagg at W = {hi:,} ÷ at W = {lo:,} ≤ {TARGET_FLAT}×", cw_hi,
                                  get_cell(res, v, "windowagg", lo), TARGET_FLAT),
               correctness_target(checks, "W")]
    rows = [result_row(w, comp, c, v.short) for w in wl for comp in COMPETITORS if (c := get_cell(res, v, comp, w))]
    ratio_rows = [ratio_row(w, get_cell(res, v, "windowagg", w), get_cell(res, v, "range_join", w)) for w in wl]
    cdf = get_cell(res, v, "windowagg_df", hi)
    df_line = ""
    if cdf:
        dw, dc = report.wall_and_cpu_ratios(cdf, cw_hi)
        df_line = (f"The Python API (`windowagg.TableWindows.of(df)`, W = {hi:,}) against the SQL call on the same "
                   f"windows: {dw} wall, {dc} CPU.")
    flat_rows = [[f"windowagg W = {w:,} ÷ W = {lo:,}" + (f" (flat: ≤ {TARGET_FLAT}×)" if w == hi else ""),
                  *report.wall_and_cpu_ratios(get_cell(res, v, "windowagg", w), get_cell(res, v, "windowagg", lo))] for w in wl[1:]]
    jl = [(w, get_cell(res, v, "range_join", w)) for w in wl]
    join_growth = [[f"range join W = {w:,} ÷ W = {lo:,}",
                    *report.wall_and_cpu_ratios(c, get_cell(res, v, "range_join", lo))] for w, c in jl[1:] if c]

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
        cw, cj = get_cell(res, v, "windowagg", w), get_cell(res, v, "range_join", w)
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
    slower = windowagg_slower_at(res, v)
    checked = correctness_rows(checks, v.short, where=lambda ck: "all keys" if ck.get("keys_below") is None
                               else f"keys k < {ck['keys_below']} (the join timed out)")
    subset_check = any(ck.get("keys_below") is not None for _, ck in checks)
    timeouts = [w for w, c in jl if c and c["status"] == "timeout"]

    report.render_page(doc, img, v.notes, {
        "windows_list": ", ".join(f"{w:,}" for w in wl),
        "largest": f"{hi:,}",
        "smallest": f"{lo:,}",
        "targets_table": report.targets_table(targets),
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
        "join_growth": growth_text(get_cell(res, v, "range_join", hi), get_cell(res, v, "range_join", lo)),
        "wa_growth": growth_text(cw_hi, get_cell(res, v, "windowagg", lo)),
        "rows_lo": f"{st_lo['result_rows']:,}",
        "rows_hi": f"{st_hi['result_rows']:,}",
        "rows_growth": f"{st_hi['result_rows'] / st_lo['result_rows']:,.0f}" if st_lo["result_rows"] else "–",
        "rows_share_hi": f"{st_hi['result_rows'] / (i['keys'] * st_hi['windows']):.0%}",
        "per_row_lo": per_row(get_cell(res, v, "windowagg", lo), st_lo),
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
        "correctness_table": "\n".join(report.table(
            ["W", "keys", "compared", "windowagg rows", "range-join rows", "(event, window) pairs", "mismatches",
             "only windowagg / only join / count / sum / avg"], "rllrrrrr", checked)),
        "subset_check": subset_check,
        "check_keys": a["check_keys"],
    }, shared_values(res, json_path, doc, img, v))


def render_per_key(res: dict, json_path: Path, doc: Path, img: Path) -> None:
    """The page of per-key windows: bench/table_windows_per_key_notes.md filled with what this run measured."""
    v = PER_KEY
    plot(res, v, img)
    cfg, a, i = res["config"], res["args"], res["input"]
    pl = sizes(res, v)
    lo, hi, hp = pl[0], pl[-1], v.headline(pl)
    stats = {p: res["periods"][str(p)]["stats"] for p in pl}
    wa = {p: get_cell(res, v, "windowagg", p) for p in pl}
    rj = {p: get_cell(res, v, "range_join", p) for p in pl}
    fast = report.faster_by(rj[hp], wa[hp])
    checks = [(p, ck) for p in pl if (ck := res["periods"][str(p)].get("check"))]
    targets = [faster_target(f"{i['rows']:,} events, {i['keys']:,} keys × {hp} periods", wa[hp], rj[hp]),
               report.flat_target(f"flat in the number of windows: windowagg at P = {hi} ÷ at P = {lo} ≤ {TARGET_FLAT}×",
                                  wa[hi], wa[lo], TARGET_FLAT),
               correctness_target(checks, "P")]
    rows = [result_row(p, comp, c, v.short, spread=True) for p in pl for comp in COMPETITORS
            if (c := get_cell(res, v, comp, p))]
    ratio_rows = [ratio_row(p, wa[p], rj[p]) for p in pl]
    cdf = get_cell(res, v, "windowagg_df", hp)
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
    checked = correctness_rows(checks, v.short)
    slower = windowagg_slower_at(res, v)
    strategies = sorted({res["periods"][str(p)].get("join_strategy", "?") for p in pl})

    report.render_page(doc, img, v.notes, {
        "periods_list": ", ".join(f"{p}" for p in pl),
        "windows_list": ", ".join(f"{stats[p]['windows']:,}" for p in pl),
        "headline": hp,
        "lo": lo,
        "hi": hi,
        "targets_table": report.targets_table(targets),
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
        "wa_mb_lo": report.shuffled_mb(wa[lo]),
        "join_mb_lo": report.shuffled_mb(rj[lo]),
        "p_growth": f"{hi / lo:g}",
        "windows_growth": (f"{stats[lo]['windows']:,} to {stats[hi]['windows']:,} windows"),
        "join_growth": growth(rj),
        "wa_growth": growth(wa),
        "jar": report.jar_line(cfg.get("windowagg_jar"), f"; Python package from `{cfg.get('windowagg_python', '?')}`"),
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
        "correctness_table": "\n".join(report.table(
            ["P", "compared", "windowagg rows", "range-join rows", "(event, window) pairs", "mismatches",
             "only windowagg / only join / count / sum / avg"], "rlrrrrr", checked)),
        "subset_check": any(ck.get("keys_below") is not None for _, ck in checks),
        "check_keys": a.get("check_keys"),
    }, shared_values(res, json_path, doc, img, v))


GLOBAL = Variant(
    name="table_windows", page="benchmarks-table-windows.md", letter="W", sizes_key="windows", size_field="windows",
    view_prefix="periods", keys=[],
    short={"windowagg": "windowagg `windows(ts, 'table periods')` (SQL)",
           "windowagg_df": "windowagg `TableWindows.of(df)` (Python API)",
           "range_join": "Spark range join + `GROUP BY`"},
    plot_label={"windowagg": "windowagg windows(ts, 'table …'), SQL",
                "windowagg_df": "windowagg TableWindows.of(df), Python API",
                "range_join": "Spark range join + GROUP BY (broadcast nested loop)"},
    plot_title="Windows given as a table",
    plot_xlabel="number of windows W (log): rows of the periods table, the same windows for every key",
    periods_description="start uniform over the same days, length exp(uniform(ln 1 h, ln 30 d)), whole "
                        "milliseconds; spark.range(W) in one partition, duplicates dropped",
    make_periods=make_periods, describe=describe_global, headline=max, render=render_global)
PER_KEY = Variant(
    name="table_windows_per_key", page="benchmarks-table-windows-per-key.md", letter="P", sizes_key="periods",
    size_field="periods_per_key", view_prefix="key_periods", keys=["k"],
    short={"windowagg": "windowagg `windows(ts, 'table key_periods keys k')` (SQL)",
           "windowagg_df": "windowagg `TableWindows.of(df, keys=[\"k\"])` (Python API)",
           "range_join": "Spark range join on `k` + `GROUP BY`"},
    plot_label={"windowagg": "windowagg windows(ts, 'table … keys k'), SQL",
                "windowagg_df": "windowagg TableWindows.of(df, keys=[\"k\"]), Python API",
                "range_join": "Spark range join on k + GROUP BY (broadcast hash join)"},
    plot_title="Per-key windows given as a table",
    plot_xlabel="periods per key P (log): {keys:,} keys × P windows, each of its own key",
    periods_description="per key: start uniform over the same days, length exp(uniform(ln 1 h, ln 30 d)), whole "
                        "milliseconds, from xxhash64(seed, k, j); duplicates dropped",
    make_periods=make_key_periods, describe=describe_per_key, headline=per_key_headline, render=render_per_key)
VARIANTS = {v.name: v for v in (GLOBAL, PER_KEY)}  # by the results' "benchmark" field


if __name__ == "__main__":
    sys.exit(main())
