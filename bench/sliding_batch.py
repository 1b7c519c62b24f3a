#!/usr/bin/env python3
"""Batch benchmark: windowagg KIP-450 sliding windows against Spark's own ways of doing it.

One process, one SparkSession, one cached input. For each point (a target number of rows per
window) the window size S is chosen, and every competitor computes sum, count and max of `v`
per key `k` over windows of size S on `ts`:

  windowagg    groupBy(k, windowagg.window(ts, SlidingWindows.of(S)))  -- full KIP-450 window set
  over_range   sum/count/max(v) OVER (PARTITION BY k ORDER BY ts
                                      RANGE BETWEEN INTERVAL S PRECEDING AND CURRENT ROW)
  over_segtree the same with spark.sql.window.segmentTree.enabled=true
  hopping      groupBy(k, window(ts, S, '1 second'))                   -- Spark's hopping windows
  sort_floor   repartition(4, k).sortWithinPartitions(k, ts)           -- shuffle + sort only

Every result is consumed in full on the executors with the `noop` sink; nothing big comes back to
the driver. Per (point, competitor): one untimed warm-up run, then --reps timed runs, median
reported (one timed run when the warm-up took over --long-run s). A run that exceeds --timeout
seconds is cancelled and reported as "timed out > N s"; that competitor is then not tried at
larger S (its cost only grows with S). Each run also records the CPU seconds of this benchmark's
processes and of all other processes on the machine (from /proc), so that runs which shared the
2 cores with someone else's work are visible. Cells run targets-first (see --order).

Results go to bench/results/<tag>.json and .csv after every measurement (a partial run keeps what
it measured); a full run then regenerates docs/benchmarks.md and its plot via bench/report.py.

Run from the repository root:  bench/run --quick     (smoke run, ~200k rows)
                               bench/run             (full run: 4M rows, 1000 keys)
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import harness  # noqa: E402  (session, /proc CPU accounting, run timer, metadata)

REPO = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

COMPETITORS = ["windowagg", "over_range", "over_segtree", "hopping", "sort_floor"]
LABELS = {
    "windowagg": "windowagg sliding (KIP-450 set)",
    "over_range": "OVER RANGE (default)",
    "over_segtree": "OVER RANGE (segmentTree)",
    "hopping": "hopping window(ts, S, 1 s)",
    "sort_floor": "shuffle + sort floor",
}

_T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - _T0:8.1f}s] {msg}", flush=True)


# --------------------------------------------------------------------------------------- args

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 200k rows, 50 keys (same 4000 rows per key), 2 reps, 120 s timeout, "
                        "no docs regeneration (explicit flags still win)")
    p.add_argument("--rows", type=int, help="input rows (default 4,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 50)")
    p.add_argument("--density", type=float, default=10.0,
                   help="events per second per key (default 10, so 10 rows/window is S = 1 s)")
    p.add_argument("--points", default="10,100,500,1500",
                   help="target mean rows per window, comma separated (default 10,100,500,1500)")
    p.add_argument("--reps", type=int, help="timed repetitions per cell after one warm-up (default 3; quick 2)")
    p.add_argument("--timeout", type=float,
                   help="seconds allowed for one run before it is cancelled (default 300; quick 120)")
    p.add_argument("--long-run", type=float, default=60.0,
                   help="if the warm-up of a cell took longer than this many seconds, take only one timed "
                        "repetition (run-to-run noise is then negligible; reported as n=1)")
    p.add_argument("--contended", type=float, default=0.2,
                   help="a run during which other processes on the machine used more than this many cores "
                        "on average is flagged as contended (default 0.2)")
    p.add_argument("--retries", type=int, default=0,
                   help="times a contended timed run (shorter than --long-run) is repeated; of the attempts, the one "
                        "during which other processes took the least CPU is kept (default 0)")
    p.add_argument("--quiet-wait", type=float, default=0.0,
                   help="before each run, wait up to this many seconds for other processes to calm down "
                        "below --contended cores (default 0: do not wait)")
    p.add_argument("--competitors", default=",".join(COMPETITORS),
                   help=f"comma separated subset of {','.join(COMPETITORS)}")
    p.add_argument("--order", choices=["targets-first", "points"], default="targets-first",
                   help="targets-first (default): first the cells the issue's targets need (windowagg and the "
                        "floor at every point, OVER RANGE default near 500 rows/window), then the rest point "
                        "by point; points: point by point")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument("--driver-memory", default="8g")
    p.add_argument("--aqe-coalesce", action="store_true",
                   help="leave AQE's shuffle-partition coalescing on (default: off, so that every competitor "
                        "runs exactly --shuffle-partitions reduce tasks)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--check", action="store_true",
                   help="before timing, check windowagg's left windows against OVER RANGE on a few keys")
    p.add_argument("--tag", help="results file name stem (default: quick or full)")
    p.add_argument("--docs", dest="docs", action="store_true", default=None,
                   help="regenerate docs/benchmarks.md and the plot at the end (default: on unless --quick)")
    p.add_argument("--no-docs", dest="docs", action="store_false")
    p.add_argument("--ui", action="store_true", help="keep the Spark UI on (port 4040) to inspect plans")
    a = p.parse_args(argv)
    q = a.quick
    a.rows = a.rows or (200_000 if q else 4_000_000)
    a.keys = a.keys or (50 if q else 1000)
    a.reps = a.reps or (2 if q else 3)
    a.timeout = a.timeout or (120.0 if q else 300.0)
    a.tag = a.tag or ("quick" if q else "full")
    if a.docs is None:
        a.docs = not q
    a.points = [int(x) for x in a.points.split(",") if x.strip()]
    a.competitors = [c.strip() for c in a.competitors.split(",") if c.strip()]
    for c in a.competitors:
        if c not in COMPETITORS:
            p.error(f"unknown competitor {c!r}")
    return a


# ------------------------------------------------------------------------------- the workload

def window_size_seconds(target: float, density: float, span: float) -> int:
    """Whole seconds S such that the mean left-window ("current row and S before") count is
    about `target` for events of `density` per second over a key's time span `span` seconds.

    A row at offset x into the span sees min(x, S) * density earlier rows, so the mean frame is
    density * (S - S^2 / (2 * span)) (+1 for the row itself); solving for S corrects the start
    edge, which otherwise makes large S fall well short of the target."""
    want = max(target - 1.0, 0.0) / density
    disc = span * span - 2.0 * span * want
    s = span - math.sqrt(disc) if disc > 0 else span
    return max(1, round(s))


def make_input(spark, rows: int, keys: int, density: float, seed: int, partitions: int):
    """rows rows over `keys` keys; key k's i-th event is at (i + u) / density seconds, u uniform in
    [0, 1) and truncated to the millisecond, so times are distinct per key and whole milliseconds
    (this lets the harness tell windowagg's left windows, ending on a record's time, from its right
    windows, ending at t + 1 µs + S). Rows are shuffled randomly so no competitor gets sorted input."""
    from pyspark.sql import functions as F

    step_ms = 1000.0 / density
    base_ms = 1_700_000_000_000  # 2023-11-14, any fixed instant will do
    df = (spark.range(rows)
          .select((F.col("id") % keys).cast("int").alias("k"),
                  (F.col("id") / keys).cast("long").alias("i"))
          .withColumn("u", F.rand(seed))
          .withColumn("ts_ms", F.lit(base_ms) + F.floor((F.col("i") + F.col("u")) * step_ms).cast("long"))
          .select("k",
                  F.timestamp_millis("ts_ms").alias("ts"),
                  F.round(F.rand(seed + 1) * 1000.0, 3).alias("v"))
          .orderBy(F.rand(seed + 2))
          .repartition(partitions))
    return df


# ------------------------------------------------------------------------------ windowagg API

class WindowAgg:
    """windowagg's groupBy column, through the Python package when it is installed, else through
    py4j straight to the jar's Scala API (both give the same Catalyst plan)."""

    def __init__(self, spark):
        self.spark = spark
        self.via = None
        try:
            import windowagg  # noqa: F401
            self.mod = windowagg
            self.via = "python package windowagg"
        except ImportError:
            self.mod = None
            self.via = "py4j to windowagg.functions.window"

    def column(self, ts: str, size: str):
        from pyspark.sql import functions as F
        if self.mod is not None:
            return self.mod.window(ts, self.mod.SlidingWindows.of(size))
        from pyspark.sql.classic.column import Column, _to_java_column
        jvm = self.spark.sparkContext._jvm
        jc = jvm.windowagg.functions.window(_to_java_column(F.col(ts)), jvm.windowagg.SlidingWindows.of(size))
        return Column(jc).alias("window")


JAR_SOURCE = harness.JAR_SOURCE
jar_path = harness.jar_path


def build_session(a: argparse.Namespace):
    return harness.build_session("windowagg-bench-sliding-batch", master=a.master,
                                 shuffle_partitions=a.shuffle_partitions, driver_memory=a.driver_memory,
                                 aqe_coalesce=a.aqe_coalesce, ui=a.ui)


# ---------------------------------------------------------------------------- the competitors

AGGS_SQL = "sum(v) OVER w AS sum_v, count(v) OVER w AS count_v, max(v) OVER w AS max_v"


def query(name: str, df, size_s: int, wa: WindowAgg, partitions: int):
    from pyspark.sql import functions as F
    size = f"{size_s} seconds"
    aggs = [F.sum("v").alias("sum_v"), F.count("v").alias("count_v"), F.max("v").alias("max_v")]
    if name == "windowagg":
        return df.groupBy("k", wa.column("ts", size)).agg(*aggs)
    if name in ("over_range", "over_segtree"):
        w = (f"(PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL {size_s} SECONDS PRECEDING "
             f"AND CURRENT ROW)")
        return df.selectExpr("k", "ts", "v", *[e.replace("OVER w", "OVER " + w) for e in AGGS_SQL.split(", ")])
    if name == "hopping":
        return df.groupBy("k", F.window("ts", size, "1 second")).agg(*aggs)
    if name == "sort_floor":
        return df.repartition(partitions, "k").sortWithinPartitions("k", "ts")
    raise ValueError(name)


SEGTREE_CONF = harness.SEGTREE_CONF
segment_tree_conf = harness.segment_tree_conf


# /proc CPU accounting and the run timer live in harness.py; these names stay importable from here
# (sliding_streaming.py and sessions.py use them)
_CLK = harness._CLK
_busy_jiffies = harness.busy_jiffies
_proc_jiffies = harness.proc_jiffies


class Runner(harness.Runner):
    """harness.Runner, with the segment-tree frame switched on for the over_segtree competitor."""

    def run(self, name: str, df_out, conf: dict | None = None, timeout: float | None = None) -> dict:
        if name == "over_segtree":
            conf = {**(conf or {}), SEGTREE_CONF: "true"}
        return super().run(name, df_out, conf=conf, timeout=timeout)


# ------------------------------------------------------------------------------ measurements

def window_stats(df, size_s: int, wa: WindowAgg) -> dict:
    """Untimed: windowagg's window count and mean rows per window (all windows, and left windows
    only: those ending on a record's time, i.e. on a whole millisecond here, whose mean equals the
    mean OVER RANGE frame since times are distinct per key)."""
    from pyspark.sql import functions as F
    res = df.groupBy("k", wa.column("ts", f"{size_s} seconds")).agg(F.count("v").alias("c"))
    end_us = F.unix_micros(F.col("window.end"))
    left = (end_us % 1000) == 0
    r = res.agg(F.count("*").alias("windows"),
                F.avg("c").alias("mean_all"),
                F.sum(F.when(left, 1).otherwise(0)).alias("left_windows"),
                F.avg(F.when(left, F.col("c"))).alias("mean_left"),
                F.max("c").alias("max_count")).collect()[0]
    return {"windows": r["windows"], "left_windows": r["left_windows"],
            "right_windows": r["windows"] - r["left_windows"],
            "mean_rows_per_window_all": r["mean_all"], "mean_rows_per_left_window": r["mean_left"],
            "max_rows_per_window": r["max_count"]}


def check_against_over(df, size_s: int, wa: WindowAgg, keys: int) -> dict:
    """windowagg's left window ending at t must equal OVER RANGE's frame at the row at t."""
    from pyspark.sql import functions as F
    sub = df.where(F.col("k") < keys)
    w = query("windowagg", sub, size_s, wa, 1)
    left = (w.where(F.unix_micros(F.col("window.end")) % 1000 == 0)
             .select("k", F.col("window.end").alias("ts"),
                     F.col("sum_v").alias("w_sum"), F.col("count_v").alias("w_count"), F.col("max_v").alias("w_max")))
    o = query("over_range", sub, size_s, wa, 1)
    j = o.join(left, ["k", "ts"], "full_outer")
    bad = j.where(F.col("w_count").isNull() | F.col("count_v").isNull()
                  | (F.col("w_count") != F.col("count_v")) | (F.col("w_max") != F.col("max_v"))
                  | (F.abs(F.col("w_sum") - F.col("sum_v")) > 1e-6 * F.greatest(F.abs(F.col("sum_v")), F.lit(1.0))))
    n_rows = o.count()
    n_bad = bad.count()
    return {"rows_checked": n_rows, "mismatches": n_bad}


# ---------------------------------------------------------------------------------- metadata

machine_info = harness.machine_info
git_rev = harness.git_rev
jar_info = harness.jar_info


# ---------------------------------------------------------------------------------- results

def write_results(res: dict, tag: str) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    jpath = RESULTS_DIR / f"sliding_batch-{tag}.json"
    tmp = jpath.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=2) + "\n")
    tmp.replace(jpath)
    cpath = RESULTS_DIR / f"sliding_batch-{tag}.csv"
    lines = ["competitor,target_rows_per_window,window_seconds,status,median_s,n,times_s,warmup_s,note"]
    for c in res["cells"]:
        times = " ".join(f"{t:.3f}" for t in c["times_s"])
        med = "" if c["median_s"] is None else f"{c['median_s']:.3f}"
        warm = "" if c.get("warmup_s") is None else f"{c['warmup_s']:.3f}"
        note = (c.get("note") or "").replace(",", ";").replace("\n", " ")
        lines.append(f"{c['competitor']},{c['target']},{c['window_seconds']},{c['status']},{med},"
                     f"{len(c['times_s'])},{times},{warm},{note}")
    cpath.write_text("\n".join(lines) + "\n")
    return jpath


def main(argv=None) -> int:
    a = parse_args(argv)
    span = a.rows / a.keys / a.density  # seconds of events per key
    points = [(t, window_size_seconds(t, a.density, span)) for t in a.points]
    log(f"rows={a.rows:,} keys={a.keys} density={a.density}/s/key span={span:.0f}s/key "
        f"points(rows/window -> S)={points} reps={a.reps} timeout={a.timeout:.0f}s "
        f"competitors={a.competitors}")

    spark = build_session(a)
    spark.sparkContext.setLogLevel("FATAL")  # cancelled runs log stack traces at ERROR
    wa = WindowAgg(spark)
    jvm = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName("windowagg.spark.WindowAggExtensions", False,
                                    jvm.Thread.currentThread().getContextClassLoader())
        have_windowagg = True
    except Exception:
        have_windowagg = False
        wa.via = "not available"
        log("windowagg classes not loadable: the windowagg competitor is skipped")
    competitors = [c for c in a.competitors if c != "windowagg" or have_windowagg]

    res = {
        "benchmark": "sliding_batch",
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_rev": git_rev(),
        "args": {k: v for k, v in vars(a).items()},
        "config": {
            "master": a.master,
            "spark.sql.shuffle.partitions": a.shuffle_partitions,
            "spark.driver.memory": a.driver_memory,
            "spark.sql.adaptive.enabled": spark.conf.get("spark.sql.adaptive.enabled"),
            "spark.sql.adaptive.coalescePartitions.enabled":
                spark.conf.get("spark.sql.adaptive.coalescePartitions.enabled"),
            "segment_tree_conf": segment_tree_conf(spark),
            "windowagg_via": wa.via,
            "windowagg_jar": jar_info(),
        },
        "machine": machine_info(spark),
        "workload": {"rows": a.rows, "keys": a.keys, "rows_per_key": a.rows // a.keys,
                     "density_per_s_per_key": a.density, "span_s_per_key": span},
        "points": [],
        "cells": [],
        "checks": [],
        "finished": None,
    }
    log(f"machine: {res['machine']}")
    log(f"config: {res['config']}")

    log("building input ...")
    df = make_input(spark, a.rows, a.keys, a.density, a.seed, a.shuffle_partitions).cache()
    t0 = time.perf_counter()
    n = df.count()
    from pyspark.sql import functions as F
    distinct = df.select("k", "ts").distinct().count()
    rng = df.agg(F.min("ts"), F.max("ts")).collect()[0]
    log(f"input cached: {n:,} rows, {distinct:,} distinct (k, ts), ts {rng[0]} .. {rng[1]}, "
        f"{df.rdd.getNumPartitions()} partitions ({time.perf_counter() - t0:.1f}s)")
    res["workload"].update({"rows_cached": n, "distinct_k_ts": distinct,
                            "ts_min": str(rng[0]), "ts_max": str(rng[1]),
                            "cached_partitions": df.rdd.getNumPartitions()})
    write_results(res, a.tag)

    for target, s in points:
        pt = {"target": target, "window_seconds": s, "nominal_rows_per_window": a.density * s}
        if "windowagg" in competitors:
            try:
                t0 = time.perf_counter()
                pt.update(window_stats(df, s, wa))
                log(f"S={s}s: windowagg makes {pt['windows']:,} windows ({pt['left_windows']:,} left, "
                    f"{pt['right_windows']:,} right) for {n:,} rows; mean rows/window {pt['mean_rows_per_window_all']:.1f} "
                    f"(left windows = OVER frames: {pt['mean_rows_per_left_window']:.1f}), max {pt['max_rows_per_window']} "
                    f"({time.perf_counter() - t0:.1f}s, untimed)")
            except Exception as e:
                pt["stats_error"] = str(e).splitlines()[0][:300]
                log(f"S={s}s: window stats failed: {pt['stats_error']}")
            if a.check:
                try:
                    chk = {"target": target, "window_seconds": s, **check_against_over(df, s, wa, 20)}
                except Exception as e:
                    chk = {"target": target, "window_seconds": s, "error": str(e).splitlines()[0][:300]}
                res["checks"].append(chk)
                log(f"S={s}s: check windowagg left windows vs OVER RANGE on 20 keys: {chk}")
        res["points"].append(pt)
        write_results(res, a.tag)

    runner = Runner(spark, a.timeout)
    res["runs"] = []  # every run, timed or not, with the CPU other processes took meanwhile

    def one_run(comp, target, s, kind):
        """One run, after waiting (up to --quiet-wait s) for the machine to be quiet; a timed run
        during which other processes took more than --contended cores is retried (up to --retries
        times, if it was shorter than --long-run s), and all attempts are recorded."""
        attempt = 0
        attempts = []
        while True:
            waited, share = runner.wait_quiet(a.quiet_wait, a.contended)
            if waited >= 1:
                log(f"  waited {waited:.0f}s for a quiet machine (other processes at {share:.2f} cores)")
            r = runner.run(comp, query(comp, df, s, wa, a.shuffle_partitions))
            fshare = (r["foreign_cpu"] / r["seconds"]) if r["foreign_cpu"] is not None and r["seconds"] > 0 else None
            r.update({"competitor": comp, "target": target, "window_seconds": s, "kind": kind,
                      "attempt": attempt, "foreign_cores": fshare,
                      "contended": fshare is not None and fshare > a.contended})
            res["runs"].append(r)
            busy = "" if fshare is None else f" (other processes: {fshare:.2f} cores{', CONTENDED' if r['contended'] else ''})"
            log(f"{comp:12s} rows/window~{target:5d} S={s:4d}s: {kind} {r['status']} {r['seconds']:.2f}s{busy}")
            attempts.append(r)
            if (kind != "warm-up" and r["status"] == "ok" and r["contended"] and attempt < a.retries
                    and r["seconds"] < a.long_run):
                attempt += 1
                continue
            ok = [x for x in attempts if x["status"] == "ok"]
            if len(ok) > 1:  # keep the attempt that shared the machine least
                best = min(ok, key=lambda x: x["foreign_cores"] if x["foreign_cores"] is not None else 0.0)
                if best is not r:
                    log(f"  keeping attempt {best['attempt']} ({best['seconds']:.2f}s, other processes "
                        f"{best['foreign_cores']:.2f} cores)")
                return best
            return r

    # The order of the cells: with --order targets-first (the default), first the cells the targets
    # need (windowagg and the floor at every point, OVER RANGE default at the point nearest 500
    # rows/window), then all others point by point; with --order points, point by point.
    plan = [(t, s, c) for t, s in points for c in competitors]
    if a.order == "targets-first":
        near500 = min(points, key=lambda p: abs(p[0] - 500))[0]
        first = [x for x in plan if x[2] in ("windowagg", "sort_floor") or (x[2] == "over_range" and x[0] == near500)]
        plan = first + [x for x in plan if x not in first]
    log("cell order: " + ", ".join(f"{c}@{t}" for t, _, c in plan))
    given_up: dict[str, tuple[int, str]] = {}  # competitor -> (smallest S that failed, why)
    for target, s, comp in plan:
        cell = {"competitor": comp, "target": target, "window_seconds": s, "times_s": [],
                "warmup_s": None, "median_s": None, "status": None, "note": None,
                "contended_runs": 0, "max_foreign_cores": None}
        res["cells"].append(cell)
        if comp in given_up and s >= given_up[comp][0]:
            cell["status"] = "skipped"
            cell["note"] = given_up[comp][1]
            log(f"{comp:12s} rows/window~{target:5d} S={s:4d}s: skipped ({given_up[comp][1]})")
            write_results(res, a.tag)
            continue
        w = one_run(comp, target, s, "warm-up")
        cell["warmup_s"] = w["seconds"]
        if w["status"] != "ok":
            if w["status"] == "timeout":
                cell["status"] = "timeout"
                cell["note"] = f"timed out > {a.timeout:.0f} s (warm-up run cancelled)"
                given_up[comp] = (s, f"timed out > {a.timeout:.0f} s at S = {s} s")
            else:
                cell["status"] = "error"
                cell["note"] = w["status"]
                given_up[comp] = (s, f"failed at S = {s} s")
            write_results(res, a.tag)
            continue
        reps = 1 if w["seconds"] > a.long_run else a.reps
        if reps < a.reps:
            cell["note"] = f"1 timed run: warm-up took {w['seconds']:.0f} s > {a.long_run:.0f} s"
        for i in range(reps):
            r = one_run(comp, target, s, f"rep {i + 1}/{reps}")
            if r["status"] != "ok":
                cell["note"] = (cell["note"] + "; " if cell["note"] else "") + f"rep {i + 1}: {r['status']}"
                if r["status"] == "timeout":
                    given_up[comp] = (s, f"timed out > {a.timeout:.0f} s at S = {s} s")
                break
            cell["times_s"].append(r["seconds"])
            cell.setdefault("cpu_s", []).append(r["own_cpu"])
            if r["foreign_cores"] is not None:
                cell["max_foreign_cores"] = max(cell["max_foreign_cores"] or 0.0, r["foreign_cores"])
            cell["contended_runs"] += int(r["contended"])
        if cell["times_s"]:
            cell["median_s"] = statistics.median(cell["times_s"])
            if None not in cell.get("cpu_s", [None]):
                cell["median_cpu_s"] = statistics.median(cell["cpu_s"])
            cell["status"] = "ok"
            log(f"{comp:12s} rows/window~{target:5d} S={s:4d}s: median {cell['median_s']:.2f}s "
                f"of {[round(x, 2) for x in cell['times_s']]}")
        else:
            cell["status"] = "timeout" if "timeout" in (cell["note"] or "") else "error"
        write_results(res, a.tag)

    res["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    path = write_results(res, a.tag)
    log(f"results: {path} and {path.with_suffix('.csv')}")
    spark.stop()
    harness.cleanup_jar_copy()

    if a.docs:
        sys.path.insert(0, str(BENCH_DIR))
        import report
        report.main([str(path)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
