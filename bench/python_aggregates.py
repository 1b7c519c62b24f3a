#!/usr/bin/env python3
"""A Python user's own aggregate over windows, in batch (issue 54): a grouped-aggregate pandas UDF
(a weighted median, Series -> scalar) over windowagg windows against the same UDF over what Spark
offers for the same windows.

One process, one SparkSession (local[2], 4 shuffle partitions), one cached input per size: --keys
keys, a row of each key every 30 s (so a 10-minute window holds 20 rows), v and w pseudo-random (hashes
of the row's number). Cells, each
computing the weighted median of v by w per window (the UDF alone: Spark refuses a pandas UDF beside
a built-in aggregate), into the noop sink:

  tumbling_windowagg  groupBy("k", windowagg.window("ts", TimeWindows.of("10 minutes"))).agg(wmedian(v, w))
  tumbling_spark      groupBy("k", F.window("ts", "10 minutes")).agg(wmedian(v, w)): Spark's window()
  sliding_windowagg   the same over SlidingWindows.of("10 minutes") (KIP-450: a window per distinct
                      time ending there, and one starting just after it when it holds rows)
  sliding_spark_over  wmedian(v, w) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL 10
                      MINUTES PRECEDING AND CURRENT ROW): Spark's bounded frame with the pandas UDF,
                      one value per row (its window ending at that row)

The sliding cells run on --sliding-rows rows (Spark's bounded frame calls the UDF once per row).
Per cell: one warm-up, --reps timed runs, median wall (harness.measure); per sliding cell also its
windows (rows out) and the time per window. Untimed check: tumbling_windowagg and tumbling_spark
give the same (k, start, end, median) rows (mismatches must be 0).

Results: bench/results/python_aggregates-<tag>.json; --report draws docs/img/python_aggregates_<tag>.png
and prints the table of docs/benchmarks-python-aggregates.md, which is written by hand around it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import harness  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

CELLS = {
    "tumbling_windowagg": "windowagg TimeWindows.of(10 minutes)",
    "tumbling_spark": "Spark window(ts, 10 minutes)",
    "sliding_windowagg": "windowagg SlidingWindows.of(10 minutes)",
    "sliding_spark_over": "Spark OVER (RANGE 10 minutes PRECEDING)",
}
STEP_S = 30  # each key's rows 30 s apart
START_S = 1_699_920_000  # a day's start (UTC)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: 100k rows (sliding 20k), 1 rep")
    p.add_argument("--rows", type=int, help="rows of the tumbling cells (default 2,000,000)")
    p.add_argument("--sliding-rows", type=int, help="rows of the sliding cells (default 200,000)")
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--reps", type=int)
    p.add_argument("--timeout", type=float, default=1800.0)
    harness.add_session_args(p, driver_memory="8g")
    harness.add_output_args(p, None)
    a = p.parse_args(argv)
    harness.defaults(a, rows=(2_000_000, 100_000), sliding_rows=(200_000, 20_000), reps=(3, 1))
    return a


def wmedian_udf():
    import numpy as np
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    def wmedian(v, w):
        order = np.lexsort((w.to_numpy(), v.to_numpy()))
        values, weights = v.to_numpy()[order], w.to_numpy()[order]
        return float(values[np.searchsorted(np.cumsum(weights), weights.sum() / 2)])

    # the hints pandas_udf reads (this module's are strings: `from __future__ import annotations`)
    wmedian.__annotations__ = {"v": pd.Series, "w": pd.Series, "return": float}
    return pandas_udf(wmedian, "double")


def events(spark, rows: int, keys: int):
    """`rows` rows of `keys` keys, a key's rows STEP_S apart (keys a second apart), v and w pseudo-random."""
    from pyspark.sql import functions as F
    return spark.range(rows).select(
        (F.col("id") % keys).cast("int").alias("k"),
        F.timestamp_seconds(F.lit(START_S) + F.floor(F.col("id") / keys) * STEP_S + F.col("id") % keys % STEP_S)
        .alias("ts"),
        # pseudo-random but deterministic: a nondeterministic input would make windowagg collect each window's rows
        (F.abs(F.xxhash64("id", F.lit(1))) % 1_000_000 / 1_000_000).alias("v"),
        (F.abs(F.xxhash64("id", F.lit(2))) % 10 + 1).cast("double").alias("w"))


def cell_query(name: str, df, wmedian):
    from pyspark.sql import Window, functions as F
    import windowagg
    from windowagg import SlidingWindows, TimeWindows
    aggs = [wmedian("v", "w").alias("m")]
    if name == "tumbling_windowagg":
        return df.groupBy("k", windowagg.window("ts", TimeWindows.of("10 minutes"))).agg(*aggs)
    if name == "tumbling_spark":
        return df.groupBy("k", F.window("ts", "10 minutes")).agg(*aggs)
    if name == "sliding_windowagg":
        return df.groupBy("k", windowagg.window("ts", SlidingWindows.of("10 minutes"))).agg(*aggs)
    frame = Window.partitionBy("k").orderBy(F.col("ts").cast("long")).rangeBetween(-600, 0)
    return df.select("k", "ts", wmedian("v", "w").over(frame).alias("m"))


def run(spark, a, res, save) -> None:
    wmedian = wmedian_udf()
    runner = harness.Runner(spark, a.timeout)
    inputs = {}
    for rows in sorted({a.rows, a.sliding_rows}):
        inputs[rows], res["inputs"][str(rows)] = harness.cache_input(events(spark, rows, a.keys), f"{rows:,} rows")
    for name in CELLS:
        rows = a.sliding_rows if name.startswith("sliding") else a.rows
        df = inputs[rows]
        cell = harness.measure(runner, name, lambda: cell_query(name, df, wmedian), reps=a.reps, timeout=a.timeout,
                               long_run=120.0)
        cell["rows"] = rows
        if cell["status"] == "ok":
            cell["windows"] = cell_query(name, df, wmedian).count()
            cell["us_per_window"] = cell["median_s"] * 1e6 / cell["windows"]
        res["cells"][name] = cell
        log(f"{name}: {cell.get('median_s')} s over {rows:,} rows, {cell.get('windows')} windows")
        save()
    res["check"] = check(inputs[a.rows], wmedian)
    log(f"check: {res['check']}")
    save()


def check(df, wmedian) -> dict:
    """tumbling_windowagg against tumbling_spark, row by row."""
    from pyspark.sql import functions as F
    columns = ["k", F.col("window.start").alias("start"), F.col("window.end").alias("end"), "m"]
    ours = cell_query("tumbling_windowagg", df, wmedian).select(*columns)
    theirs = cell_query("tumbling_spark", df, wmedian).select(*columns)
    return {"windows": ours.count(), "spark_windows": theirs.count(),
            "mismatches": ours.exceptAll(theirs).count() + theirs.exceptAll(ours).count()}


def main(argv=None):
    a = parse_args(argv)
    if a.report:
        report.rerender_one([Path(a.report)], render, None, None)
        return 0
    spark, res = harness.start(a, "windowagg-bench-python-aggregates", "python_aggregates")
    if res is None:
        return 1
    res.update({"tag": a.tag, "inputs": {}, "cells": {}})

    def save():
        return harness.write_json(res, harness.results_path("python_aggregates", a.tag))

    save()
    run(spark, a, res, save)
    harness.finish(spark, res, save)
    return 0


def ratios(res: dict) -> dict:
    """windowagg's time over Spark's: tumbling as a whole, sliding per window."""
    c = res["cells"]
    out = {}
    if c.get("tumbling_windowagg", {}).get("median_s") and c.get("tumbling_spark", {}).get("median_s"):
        out["tumbling"] = c["tumbling_windowagg"]["median_s"] / c["tumbling_spark"]["median_s"]
    if c.get("sliding_windowagg", {}).get("us_per_window") and c.get("sliding_spark_over", {}).get("us_per_window"):
        out["sliding_per_window"] = c["sliding_windowagg"]["us_per_window"] / c["sliding_spark_over"]["us_per_window"]
    return out


def render(res: dict, json_path: Path, doc: Path | None, img: Path | None) -> None:
    plt = report.pyplot()
    cells = [(name, res["cells"][name]) for name in CELLS if res["cells"].get(name, {}).get("median_s")]
    fig, axes = plt.subplots(2, 1, figsize=(8, 5))
    for ax, kind in zip(axes, ["tumbling", "sliding"]):
        shown = [(name, cell) for name, cell in cells if name.startswith(kind)]
        values = [cell["median_s"] if kind == "tumbling" else cell["us_per_window"] for _, cell in shown]
        ax.barh([CELLS[name] for name, _ in shown], values,
                color=["tab:blue" if "windowagg" in name else "tab:orange" for name, _ in shown])
        ax.set_xlabel("seconds, median" if kind == "tumbling" else "µs per window, median (OVER: per row's frame)")
        rows = shown[0][1]["rows"] if shown else 0
        ax.set_title(f"{kind}: {rows:,} rows, a weighted-median pandas UDF", fontsize=10)
        ax.invert_yaxis()
    fig.tight_layout()
    report.save(fig, img or report.DOCS / "img" / f"python_aggregates_{res['tag']}.png")
    rows = [[CELLS[name], f"{cell['rows']:,}", f"{cell['median_s']:.2f}", f"{cell['windows']:,}",
             f"{cell['us_per_window']:.1f}"] for name, cell in cells]
    print("\n".join(report.table(["query", "rows", "median s", "windows", "µs per window"], "lrrrr", rows)))
    print(ratios(res), res.get("check"))


if __name__ == "__main__":
    sys.exit(main())
