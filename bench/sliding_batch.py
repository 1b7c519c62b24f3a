#!/usr/bin/env python3
"""Batch benchmark: windowagg KIP-450 sliding windows against Spark's own ways of doing it (OVER RANGE,
with and without the segment tree, and hopping window()), at each target number of rows per window.

Its input (bench/data.py's sliding_batch_input), cells, checks and method are its page's:
bench/sliding_batch_notes.md, rendered into docs/benchmarks.md.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import data  # noqa: E402  (the input generator)
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

DOC = report.DOCS / "benchmarks.md"
IMG = report.DOCS / "img" / "sliding_batch.png"
NOTES = BENCH_DIR / "sliding_batch_notes.md"

COMPETITORS = ["windowagg", "over_range", "over_segtree", "hopping", "sort_floor"]
LABELS = {
    "windowagg": "windowagg sliding windows (full KIP-450 set)",
    "over_range": "OVER RANGE frame, default",
    "over_segtree": "OVER RANGE frame, `segmentTree.enabled=true`",
    "hopping": "hopping `window(ts, S, '1 second')` + groupBy",
    "sort_floor": "floor: shuffle + sort by (k, ts)",
}
SHORT = {
    "windowagg": "windowagg",
    "over_range": "OVER RANGE (default)",
    "over_segtree": "OVER RANGE (segment tree)",
    "hopping": "hopping, 1 s slide",
    "sort_floor": "shuffle + sort floor",
}
STYLE = {
    "windowagg": dict(color="tab:blue", marker="o", linewidth=2.5),
    "over_range": dict(color="tab:red", marker="s"),
    "over_segtree": dict(color="tab:orange", marker="D"),
    "hopping": dict(color="tab:green", marker="^"),
    "sort_floor": dict(color="gray", marker="v", linestyle="--"),
}


# --------------------------------------------------------------------------------------- args

def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 200k rows, 50 keys (same 4000 rows per key), 2 reps, 120 s timeout, no "
                                "docs regeneration (explicit flags still win)")
    p.add_argument("--rows", type=int, help="input rows (default 4,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 50)")
    p.add_argument("--density", type=float, default=10.0,
                   help="events per second per key (default 10, so 10 rows/window is S = 1 s)")
    p.add_argument("--points", default="10,100,500,1500",
                   help="target mean rows per window, comma separated (default 10,100,500,1500)")
    p.add_argument("--competitors", default=",".join(COMPETITORS),
                   help=f"comma separated subset of {','.join(COMPETITORS)}")
    p.add_argument("--order", choices=["targets-first", "points"], default="targets-first",
                   help="targets-first (default): first the cells the issue's targets need (windowagg and the "
                        "floor at every point, OVER RANGE default near 500 rows/window), then the rest point "
                        "by point; points: point by point")
    p.add_argument("--aqe-coalesce", action="store_true",
                   help="leave AQE's shuffle-partition coalescing on (default: off, so that every competitor "
                        "runs exactly --shuffle-partitions reduce tasks)")
    p.add_argument("--check", action="store_true",
                   help="before timing, check windowagg's left windows against OVER RANGE on a few keys")
    p.add_argument("--ui", action="store_true", help="keep the Spark UI on (port 4040) to inspect plans")
    batch = harness.add_batch_args(p, DOC.name, reps=(3, 2), timeout=(300.0, 120.0))
    a = p.parse_args(argv)
    harness.defaults(a, rows=(4_000_000, 200_000), keys=(1000, 50), **batch)
    a.points = [int(x) for x in a.points.split(",") if x.strip()]
    a.competitors = harness.subset(p, a.competitors, COMPETITORS, "competitor")
    return a


# ----------------------------------------------------------------------------- untimed checks

def window_stats(df, size_s: int, wa: data.WindowAgg) -> dict:
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


def check_against_over(df, size_s: int, wa: data.WindowAgg, keys: int) -> dict:
    """windowagg's left window ending at t must equal OVER RANGE's frame at the row at t."""
    from pyspark.sql import functions as F
    sub = df.where(F.col("k") < keys)
    w = data.sliding_query("windowagg", sub, size_s, wa, 1)
    left = (w.where(F.unix_micros(F.col("window.end")) % 1000 == 0)
             .select("k", F.col("window.end").alias("ts"),
                     F.col("sum_v").alias("w_sum"), F.col("count_v").alias("w_count"), F.col("max_v").alias("w_max")))
    o = data.sliding_query("over_range", sub, size_s, wa, 1)
    j = o.join(left, ["k", "ts"], "full_outer")
    bad = j.where(F.col("w_count").isNull() | F.col("count_v").isNull()
                  | (F.col("w_count") != F.col("count_v")) | (F.col("w_max") != F.col("max_v"))
                  | (F.abs(F.col("w_sum") - F.col("sum_v")) > 1e-6 * F.greatest(F.abs(F.col("sum_v")), F.lit(1.0))))
    n_rows = o.count()
    n_bad = bad.count()
    return {"rows_checked": n_rows, "mismatches": n_bad}


# ------------------------------------------------------------------------------------ the run

def run(b: protocol.Run) -> None:
    a, res, spark = b.a, b.res, b.spark
    span = a.rows / a.keys / a.density  # seconds of events per key
    points = [(t, data.sliding_window_seconds(t, a.density, span)) for t in a.points]
    log(f"rows={a.rows:,} keys={a.keys} density={a.density}/s/key span={span:.0f}s/key "
        f"points(rows/window -> S)={points} reps={a.reps} timeout={a.timeout:.0f}s "
        f"competitors={a.competitors}")
    wa = data.WindowAgg(spark)
    if not harness.windowagg_loadable(spark):
        wa.via = "not available"
        log("windowagg classes not loadable: the windowagg competitor is skipped")
    competitors = [c for c in a.competitors if c != "windowagg" or wa.via != "not available"]
    res["config"]["windowagg_via"] = wa.via
    res["workload"] = {"rows": a.rows, "keys": a.keys, "rows_per_key": a.rows // a.keys,
                       "density_per_s_per_key": a.density, "span_s_per_key": span}

    log("building input ...")
    df = data.sliding_batch_input(spark, a.rows, a.keys, a.density, a.seed, a.shuffle_partitions).cache()
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
    b.save()

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
        b.save()

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
        where = {"competitor": comp, "target": target, "window_seconds": s}
        if comp in given_up and s >= given_up[comp][0]:
            res["cells"].append({**where, "times_s": [], "warmup_s": None, "median_s": None, "status": "skipped",
                                 "note": given_up[comp][1], "contended_runs": 0, "max_foreign_cores": None})
            log(f"{comp:12s} rows/window~{target:5d} S={s:4d}s: skipped ({given_up[comp][1]})")
            b.save()
            continue
        cell = b.cell(f"{comp} ~{target} rows/window S={s}s",
                      lambda comp=comp, s=s: data.sliding_query(comp, df, s, wa, a.shuffle_partitions), res["cells"],
                      conf={harness.SEGTREE_CONF: "true"} if comp == "over_segtree" else None, **where)
        if cell["status"] == "error":
            given_up[comp] = (s, f"failed at S = {s} s")
        elif cell["status"] == "timeout" or ": timeout" in (cell["note"] or ""):
            given_up[comp] = (s, f"timed out > {a.timeout:.0f} s at S = {s} s")


# ------------------------------------------------------------------------------------- the page

def cell(res, comp, target):
    for c in res["cells"]:
        if c["competitor"] == comp and c["target"] == target:
            return c
    return None


def fmt_time(c) -> str:
    if c is None:
        return "–"
    if c["status"] == "ok":
        n = len(c["times_s"])
        s = f"{c['median_s']:.2f}"
        if c.get("contended_runs"):
            s += " †"
        return s if n >= 3 else f"{s} (n={n})"
    if c["status"] == "timeout":
        return f"timed out > {c['note'].split('>')[1].split('s')[0].strip()} s" if c.get("note") else "timed out"
    if c["status"] == "skipped":
        return "not run (" + (c.get("note") or "") + ")"
    return "error"


def cpu_median(c):
    """Median CPU seconds of the benchmark process (driver JVM, which holds the local executors, plus
    Python) over the cell's timed runs."""
    return c.get("median_cpu_s") if c is not None and c["status"] == "ok" else None


def value(c, metric):
    if c is None:
        return None
    return c.get("median_s") if metric == "wall" else cpu_median(c)


def ratio(a, b, metric="wall"):
    return harness.ratio(value(a, metric), value(b, metric))


def lower_bound_ratio(a, b, timeout, metric="wall"):
    """a timed out: a / b is at least timeout / b (wall time only)."""
    vb = value(b, "wall")
    if metric == "wall" and a is not None and a["status"] in ("timeout", "skipped") and vb:
        return timeout / vb
    return None


def fmt_ratio(r, lb=None) -> str:
    if r is not None:
        return f"{r:.1f}×" if r >= 10 else f"{r:.2f}×"
    if lb is not None:
        return f"> {lb:.0f}×"
    return "–"


def plot(res, path: Path):
    """Median wall and CPU time against rows per window; wall points of contended cells hollow."""
    timeout = res["args"]["timeout"]
    xs = {p["target"]: (p.get("mean_rows_per_left_window") or p["target"]) for p in res["points"]}
    series = []
    for comp in COMPETITORS:
        cells = [(xs[t], cell(res, comp, t)) for t in xs]
        series.append(report.Series(SHORT[comp], STYLE[comp], [
            report.Point(x, c["median_s"], cpu_median(c), bool(c.get("contended_runs")),
                         f"{SHORT[comp]}: > {timeout:.0f} s" if c["status"] == "timeout" else None)
            for x, c in cells if c is not None and c["status"] in ("ok", "timeout")]))
    w = res["workload"]
    report.wall_cpu_panels(
        series, path, timeout=timeout, xlabel="mean rows per window (records in [t − S, t], measured)",
        cpu_ylabel="median CPU time of the benchmark process, s (log)",
        title=f"Sliding-window sum/count/max, {w['rows'] / 1e6:g}M rows, {w['keys']} keys, "
              f"{res['config']['master']}: wall time (left), CPU time (right)")


def render(res: dict, json_path: Path, doc: Path, img: Path) -> None:
    """The page: its template, bench/sliding_batch_notes.md (all of its prose), filled with the
    numbers and tables computed from `res`; and the plot."""
    plot(res, img)
    cfg, w, a = res["config"], res["workload"], res["args"]
    timeout = a["timeout"]
    targets = [p["target"] for p in res["points"]]
    pts = {p["target"]: p for p in res["points"]}
    comps = [c for c in COMPETITORS if any(x["competitor"] == c for x in res["cells"])]
    shapes = []
    for t in targets:
        p = pts[t]
        if "windows" in p:
            shapes.append([f"{t:,}", f"{p['window_seconds']} s",
                           f"{p['windows']:,} ({p['left_windows']:,} + {p['right_windows']:,})",
                           f"{p['mean_rows_per_window_all']:.1f}", f"{p['mean_rows_per_left_window']:.1f}",
                           f"{p['max_rows_per_window']:,}"])
        else:
            shapes.append([f"{t:,}", f"{p['window_seconds']} s", "–", "–", "–", "–"])
    # the notes file's optional lines and paragraphs ({{#name}} blocks) show when their value is not empty
    contended = sorted((c for c in res["cells"] if c.get("contended_runs")),
                       key=lambda c: -(c.get("max_foreign_cores") or 0))
    contended_worst = ", ".join(
        f"{SHORT[c['competitor']]} @ ~{c['target']:,}: {c['contended_runs']} of "
        f"{len(c['times_s'])} runs, up to {c['max_foreign_cores']:.2f} cores" for c in contended[:4])
    # a clause in mid-sentence: fill's blocks choose whole lines only
    contended_retries = (f"; such runs were retried up to {a['retries']} times and the least contended attempt kept"
                         if a.get("retries") else "; this run did not retry them")
    spot_check = "; ".join(f"S = {c['window_seconds']} s: {c.get('rows_checked', '?'):,} rows, "
                           f"{c.get('mismatches', c.get('error'))} mismatches" for c in res.get("checks") or [])

    def both(cx, cy):
        wt = fmt_ratio(ratio(cx, cy, "wall"), lower_bound_ratio(cx, cy, timeout, "wall"))
        c = ratio(cx, cy, "cpu")
        return wt if c is None else f"{wt} ({fmt_ratio(c)})"

    ratios = [[name, *(both(cell(res, x, t), cell(res, y, t)) for t in targets)]
              for name, x, y in [("OVER RANGE default ÷ windowagg", "over_range", "windowagg"),
                                 ("OVER RANGE segment tree ÷ windowagg", "over_segtree", "windowagg"),
                                 ("hopping ÷ windowagg", "hopping", "windowagg"),
                                 ("windowagg ÷ sort floor", "windowagg", "sort_floor")]
              if x in comps and y in comps]
    wa_lo, wa_hi = cell(res, "windowagg", targets[0]), cell(res, "windowagg", targets[-1])
    ratios.append([f"windowagg @ ~{targets[-1]:,} ÷ windowagg @ ~{targets[0]:,}", both(wa_hi, wa_lo),
                   *[""] * (len(targets) - 1)])

    # the targets (stated in the template's Targets table), judged on wall time and on CPU time
    def verdict(ok):
        return "**met**" if ok is True else ("**not met**" if ok is False else "not measured")

    near500 = min(targets, key=lambda t: abs(t - 500))
    c_over, c_wa = cell(res, "over_range", near500), cell(res, "windowagg", near500)
    judged = {}  # the table's cells: {over,flat,floor}_{wall,cpu} and each one's _verdict
    for metric in ("wall", "cpu"):
        r = ratio(c_over, c_wa, metric)
        lb = lower_bound_ratio(c_over, c_wa, timeout, metric)
        v = r if r is not None else lb
        judged[f"over_{metric}"] = f"{fmt_ratio(r, lb)} at ~{near500:,}"
        judged[f"over_{metric}_verdict"] = verdict(None if v is None else v >= 10)
        f = ratio(wa_hi, wa_lo, metric)
        judged[f"flat_{metric}"] = fmt_ratio(f)
        judged[f"flat_{metric}_verdict"] = verdict(None if f is None else f <= 1.5)
        worst, measured = None, 0
        for t in targets:
            q = ratio(cell(res, "windowagg", t), cell(res, "sort_floor", t), metric)
            if q is not None:
                measured += 1
                worst = q if worst is None else max(worst, q)
        ok = None if worst is None else worst <= 3
        if ok is True and measured < len(targets):
            ok = None  # not measured everywhere: only a failure can be stated
        judged[f"floor_{metric}"] = f"worst {fmt_ratio(worst)} ({measured} of {len(targets)} points)"
        judged[f"floor_{metric}_verdict"] = verdict(ok)

    report.render_page(doc, img, NOTES, {
        "aqe_enabled": cfg.get("spark.sql.adaptive.enabled"),
        "aqe_coalescing": cfg.get("spark.sql.adaptive.coalescePartitions.enabled", "true (default)"),
        "windowagg_via": cfg.get("windowagg_via"),
        "rows": f"{w['rows']:,}",
        "keys": f"{w['keys']:,}",
        "rows_per_key": f"{w['rows_per_key']:,}",
        "density": f"{w['density_per_s_per_key']:g}",
        "span": f"{w['span_s_per_key']:.0f}",
        "cached_partitions": w.get("cached_partitions"),
        "window_shapes_table": "\n".join(report.table(
            ["target rows/window", "S", "windowagg windows (left + right)", "mean rows per window, all windowagg windows",
             "mean rows per left window (= mean OVER frame)", "max rows in a window"], "rrrrrr", shapes)),
        "wall_table": "\n".join(report.table(
            ["competitor", *(f"~{t:,} rows/window (S = {pts[t]['window_seconds']} s)" for t in targets)],
            "l" + "r" * len(targets),
            [[LABELS[comp], *(fmt_time(cell(res, comp, t)) for t in targets)] for comp in comps])),
        "contended_worst": contended_worst,
        "contended_cores": a.get("contended", 0.2),
        "contended_retries": contended_retries,
        "cpu_table": "\n".join(report.table(
            ["competitor", *(f"~{t:,}" for t in targets)], "l" + "r" * len(targets),
            [[LABELS[comp], *(report.fmt_num(cpu_median(cell(res, comp, t)), ".2f") for t in targets)]
             for comp in comps])),
        "ratios_table": "\n".join(report.table(["ratio", *(f"~{t:,}" for t in targets)], "l" + "r" * len(targets),
                                                ratios)),
        **judged,
        "spot_check": spot_check,
    }, report.run_values("sliding_batch.py", res, [json_path], doc, img, NOTES))


BENCHMARK = protocol.Benchmark(
    "sliding_batch", "windowagg-bench-sliding-batch", parse_args, run, render, DOC, IMG,
    results={"workload": None, "points": [], "cells": [], "checks": []},
    also_write=lambda path, res: harness.write_csv(path.with_suffix(".csv"), [  # each cell, its place first
        {"competitor": c["competitor"], "target": c["target"], "window_seconds": c["window_seconds"], **c}
        for c in res["cells"]]),
    start=lambda a: {"require_windowagg": False, "aqe_coalesce": a.aqe_coalesce, "ui": a.ui,
                     "config": harness.segment_tree_config})
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
