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

Streaming (Spark's own streaming aggregation refuses a pandas UDF, so the comparison is within
windowagg): --stream-rows rows of the same shape as --stream-files Parquet files read one per
micro-batch (watermark 1 minute), tumbling 10 minutes into the noop sink, the median of v per window:

  streaming_pandas    the median as a pandas UDF (Series -> scalar): each window's rows kept in the
                      state and handed to Python when the window is final
  streaming_builtin   Spark's median(v), merged from partials in the state

Per streaming cell: one warm-up run, --reps runs; events/s = events / the micro-batches' processing
time (harness.run_stream). Untimed check: both medians equal per window in batch over the same rows.

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
STREAM_CELLS = {
    "streaming_pandas": "windowagg tumbling 10 minutes, pandas UDF median",
    "streaming_builtin": "windowagg tumbling 10 minutes, Spark's median",
}
STEP_S = 30  # each key's rows 30 s apart
START_S = 1_699_920_000  # a day's start (UTC)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: 100k rows (sliding 20k), 1 rep")
    p.add_argument("--rows", type=int, help="rows of the tumbling cells (default 2,000,000)")
    p.add_argument("--sliding-rows", type=int, help="rows of the sliding cells (default 200,000)")
    p.add_argument("--stream-rows", type=int, help="rows of the streaming cells (default 1,000,000)")
    p.add_argument("--stream-files", type=int, default=10, help="files of the streaming input, one per micro-batch")
    p.add_argument("--streaming-only", action="store_true", help="the streaming cells alone")
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--reps", type=int)
    p.add_argument("--timeout", type=float, default=1800.0)
    harness.add_session_args(p, driver_memory="8g")
    harness.add_output_args(p, None)
    a = p.parse_args(argv)
    harness.defaults(a, rows=(2_000_000, 100_000), sliding_rows=(200_000, 20_000), stream_rows=(1_000_000, 50_000),
                     reps=(3, 1))
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


def median_udf():
    import pandas as pd
    from pyspark.sql.functions import pandas_udf

    def median(v):
        return float(v.median())

    median.__annotations__ = {"v": pd.Series, "return": float}
    return pandas_udf(median, "double")


def stream_query(name: str, df):
    """A streaming cell's query over (k, ts, v): the median of v per key and 10 minutes."""
    from pyspark.sql import functions as F
    import windowagg
    from windowagg import TimeWindows
    median = median_udf()("v") if name == "streaming_pandas" else F.median("v")
    return df.groupBy("k", windowagg.window("ts", TimeWindows.of("10 minutes"))).agg(median.alias("m"))


def run_streaming(spark, a, res, save) -> None:
    """The streaming cells over --stream-files files of --stream-rows rows, and the check of their medians."""
    import shutil
    import tempfile
    from pyspark.sql import functions as F
    work = Path(tempfile.mkdtemp(prefix="windowagg-bench-python-aggregates-"))
    rows = events(spark, a.stream_rows, a.keys, batch_rows=-(-a.stream_rows // a.stream_files)).select("k", "ts", "v", "batch")
    files = harness.write_batches(rows.coalesce(1), work / "all", a.stream_files)
    harness.link_subset(files, work / "warm", 2)
    meter = harness.CpuMeter(spark)
    s = res["streaming"] = {"rows": a.stream_rows, "files": a.stream_files, "cells": {}}
    for name in STREAM_CELLS:
        def once(source: Path, count: int, run: str) -> dict:
            df = harness.file_stream(spark, source, "1 minute")
            return harness.run_stream(spark, stream_query(name, df), name, work / f"ck-{name}-{run}", count, a.timeout,
                                      meter)
        once(work / "warm", 2, "warm")
        runs = [once(work / "all", a.stream_files, str(i)) for i in range(a.reps)]
        eps = [r["events_per_s"] for r in runs if r["status"] == "ok" and r["events_per_s"]]
        s["cells"][name] = {"events_per_s": eps, "median_events_per_s": harness.median(eps),
                            "output_rows": runs[-1]["output_rows"], "status": [r["status"] for r in runs]}
        log(f"{name}: {[round(x) for x in eps]} events/s, {runs[-1]['output_rows']:,} windows")
        save()
    batch = spark.read.parquet(str(work / "all"))
    pandas_median = stream_query("streaming_pandas", batch).select("k", "window", F.col("m").alias("p"))
    builtin = stream_query("streaming_builtin", batch)
    joined = pandas_median.join(builtin, ["k", "window"], "full_outer")
    s["check"] = {"windows": joined.count(),
                  "mismatches": joined.where(~(F.abs(F.col("p") - F.col("m")) <= 1e-12)
                                             | F.col("p").isNull() | F.col("m").isNull()).count()}
    log(f"streaming check: {s['check']}")
    save()
    shutil.rmtree(work, ignore_errors=True)


def events(spark, rows: int, keys: int, batch_rows: int | None = None):
    """`rows` rows of `keys` keys, a key's rows STEP_S apart (keys a second apart), v and w pseudo-random;
    with `batch_rows`, a column `batch` numbering each run of that many rows in time order."""
    from pyspark.sql import functions as F
    batch = [F.floor(F.col("id") / batch_rows).cast("int").alias("batch")] if batch_rows else []
    return spark.range(rows).select(*batch,
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
    if not a.streaming_only:
        run_batch(spark, a, res, save)
    run_streaming(spark, a, res, save)


def run_batch(spark, a, res, save) -> None:
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
    for df in inputs.values():
        df.unpersist()


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
    sc = res.get("streaming", {}).get("cells", {})
    if sc.get("streaming_pandas", {}).get("median_events_per_s") and sc.get("streaming_builtin", {}).get("median_events_per_s"):
        out["streaming_builtin_over_pandas"] = (sc["streaming_builtin"]["median_events_per_s"]
                                                / sc["streaming_pandas"]["median_events_per_s"])
    return out


def render(res: dict, json_path: Path, doc: Path | None, img: Path | None) -> None:
    cells = [(name, res["cells"][name]) for name in CELLS if res["cells"].get(name, {}).get("median_s")]
    if cells:  # a run of the streaming cells alone has none
        plot_batch(cells, res, img)
        rows = [[CELLS[name], f"{cell['rows']:,}", f"{cell['median_s']:.2f}", f"{cell['windows']:,}",
                 f"{cell['us_per_window']:.1f}"] for name, cell in cells]
        print("\n".join(report.table(["query", "rows", "median s", "windows", "µs per window"], "lrrrr", rows)))
    streamed = res.get("streaming", {})
    if streamed.get("cells"):
        rows = [[STREAM_CELLS[name], f"{streamed['rows']:,}", f"{cell['median_events_per_s']:,.0f}", f"{cell['output_rows']:,}"]
                for name, cell in streamed["cells"].items() if cell.get("median_events_per_s")]
        print("\n".join(report.table(["streaming query", "rows", "events/s, median", "windows"], "lrrr", rows)))
    print(ratios(res), res.get("check"), streamed.get("check"))


def plot_batch(cells: list, res: dict, img: Path | None) -> None:
    plt = report.pyplot()
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


if __name__ == "__main__":
    sys.exit(main())
