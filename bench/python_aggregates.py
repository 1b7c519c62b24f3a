#!/usr/bin/env python3
"""A Python user's own aggregate over windows (issue 54): a grouped-aggregate pandas UDF (a weighted
median, Series -> scalar) over windowagg windows against the same UDF over what Spark offers for the
same windows (tumbling: window(); sliding: a bounded OVER RANGE frame), and in streaming a pandas UDF
median against Spark's median(v), both over windowagg; with --with-flink, PyFlink's pandas UDAF and
PERCENTILE (python_aggregates_flink.py, run by .venv-flink's python).

Its inputs, cells, checks and method are bench/README.md's section and the page's,
docs/benchmarks-python-aggregates.md, written by hand around the table --report prints (and the plot
it draws, docs/img/python_aggregates_<tag>.png). Results: bench/results/python_aggregates-<tag>.json.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import harness  # noqa: E402
import protocol  # noqa: E402
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
FLINK_CELLS = {
    "flink_pandas": "PyFlink GROUP BY TUMBLE 10 minutes, pandas UDAF median",
    "flink_builtin": "Flink TUMBLE 10 minutes (window TVF), PERCENTILE(v, 0.5)",
    "flink_builtin_group": "Flink GROUP BY TUMBLE 10 minutes, PERCENTILE(v, 0.5)",
}
FLINK_BACKENDS = ["hashmap", "rocksdb"]
STEP_S = 30  # each key's rows 30 s apart
START_S = 1_699_920_000  # a day's start (UTC)


def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 100k rows (sliding 20k), 1 rep")
    p.add_argument("--rows", type=int, help="rows of the tumbling cells (default 2,000,000)")
    p.add_argument("--sliding-rows", type=int, help="rows of the sliding cells (default 200,000)")
    p.add_argument("--stream-rows", type=int, help="rows of the streaming cells (default 1,000,000)")
    p.add_argument("--stream-files", type=int, default=10, help="files of the streaming input, one per micro-batch")
    p.add_argument("--streaming-only", action="store_true", help="the streaming cells alone")
    p.add_argument("--with-flink", action="store_true",
                   help="the streaming cells on PyFlink too: its pandas UDAF and built-in PERCENTILE over the same rows")
    p.add_argument("--flink-python", default=str(harness.FLINK_PYTHON),
                   help="the Python of PyFlink's virtualenv (bench/nexmark/setup-flink makes it)")
    p.add_argument("--flink-cells", default=",".join(FLINK_CELLS), help=f"subset of {','.join(FLINK_CELLS)}")
    p.add_argument("--flink-backends", default=",".join(FLINK_BACKENDS),
                   help="Flink state backends, one Flink process each (hashmap,rocksdb)")
    p.add_argument("--flink-parallelism", type=int, default=2)
    p.add_argument("--flink-timeout", type=float, default=3600.0, help="seconds per Flink process (3600)")
    p.add_argument("--keys", type=int, default=1000)
    p.add_argument("--reps", type=int)
    p.add_argument("--timeout", type=float, default=1800.0)
    harness.add_session_args(p, driver_memory="8g")
    harness.add_output_args(p, None)
    a = p.parse_args(argv)
    harness.defaults(a, rows=(2_000_000, 100_000), sliding_rows=(200_000, 20_000), stream_rows=(1_000_000, 50_000),
                     reps=(3, 1))
    a.flink_cells = harness.subset(p, a.flink_cells, list(FLINK_CELLS), "Flink cell")
    a.flink_backends = harness.subset(p, a.flink_backends, FLINK_BACKENDS, "Flink state backend")
    if a.with_flink and not a.report and not Path(a.flink_python).exists():
        p.error(f"--flink-python {a.flink_python} does not exist (run bench/nexmark/setup-flink)")
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
    if a.with_flink:
        run_flink(spark, a, files, work, pandas_median, s, save)
    shutil.rmtree(work, ignore_errors=True)


def write_flink_csv(files: list[Path], path: Path) -> int:
    """The (k, ts, v) rows of the Parquet `files`, in order, as one CSV file without a header: k, the time
    in epoch seconds, v (Arrow writes a double's shortest exact form). Returns the rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq
    schema = pa.schema([("k", pa.int32()), ("t", pa.int64()), ("v", pa.float64())])
    rows = 0
    with pcsv.CSVWriter(str(path), schema, write_options=pcsv.WriteOptions(include_header=False)) as w:
        for f in files:
            t = pq.read_table(f, columns=["k", "ts", "v"])
            seconds = pc.cast(pc.cast(t["ts"], pa.timestamp("s")), pa.int64())  # safe cast: whole seconds
            w.write_table(pa.table([t["k"].cast(pa.int32()), seconds, t["v"]], schema=schema))
            rows += t.num_rows
    return rows


def run_flink(spark, a, files: list[Path], work: Path, pandas_median, s: dict, save) -> None:
    """The PyFlink cells: per state backend one python_aggregates_flink.py process over the rows of `files`
    (warm-up: the first 2, as windowagg's); each cell's events/s, and its output checked against windowagg's
    pandas UDF in batch (`pandas_median`: k, window, p)."""
    from pyspark.sql import functions as F
    csv, warm = work / "flink-events.csv", work / "flink-warmup.csv"
    rows = write_flink_csv(files, csv)
    write_flink_csv(files[:2], warm)
    log(f"flink input: {rows:,} rows in {csv.name} ({csv.stat().st_size / 2**20:.1f} MiB)")
    flink = s["flink"] = {"parallelism": a.flink_parallelism, "backends": a.flink_backends, "watermark_s": 60,
                          "processes": {}, "check": {}}
    # the same windows as windowagg's, in epoch milliseconds as Flink writes them
    ours = pandas_median.select("k", F.unix_millis("window.start").alias("start"),
                                F.unix_millis("window.end").alias("end"), "p")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    for backend in a.flink_backends:
        tj, check_dir, lg = work / f"flink-{backend}.json", work / f"flink-check-{backend}", work / f"flink-{backend}.log"
        script = BENCH_DIR / "python_aggregates_flink.py"
        args = ["--events", str(csv), "--warmup-events", str(warm), "--warmup-runs", "1",
                "--cells", ",".join(a.flink_cells), "--reps", str(a.reps), "--empty-jobs", "3",
                "--parallelism", str(a.flink_parallelism), "--state-backend", backend, "--watermark-s", "60",
                "--window-minutes", "10", "--timing-json", str(tj), "--check-dir", str(check_dir)]
        log(f"flink ({backend}): {script} ... (log {lg})")
        proc = {"backend": backend, "status": harness.flink_process(a.flink_python, script, args, lg, a.flink_timeout,
                                                                    env)}
        timing = json.loads(tj.read_text()) if tj.exists() else {"cells": {}}
        proc.update({k: v for k, v in timing.items() if k != "cells"})
        if proc["status"] != "ok":
            proc["log_tail"] = lg.read_text(errors="replace").splitlines()[-30:]
            log(f"flink ({backend}) {proc['status']}:\n  " + "\n  ".join(proc["log_tail"]))
        flink["processes"][backend] = proc
        for name in a.flink_cells:
            t = timing["cells"].get(name)
            if t is None:
                continue
            key = f"{name}/{backend}"
            s["cells"][key] = cell = flink_cell(t, name, backend)
            log(f"{key}: {t['status']}, jobs {t.get('wall_s')} s, empty jobs {t.get('empty_job_wall_s')} s: "
                f"{[x and round(x) for x in cell['events_per_s']]} events/s beyond the fixed cost, "
                f"{[round(x) for x in cell['events_per_s_job']]} over the whole job")
            if t["status"] == "ok":
                theirs = spark.read.schema("k INT, start LONG, end LONG, m DOUBLE").csv(str(check_dir / name))
                flink["check"][key] = compare_medians(ours, theirs)
                log(f"{key} check: {flink['check'][key]}")
        save()


def flink_cell(t: dict, name: str, backend: str) -> dict:
    """A Flink cell of the results from python_aggregates_flink.py's timing: events/s beyond the job's fixed
    cost (the median of the empty jobs after the first) and over the whole job."""
    events, walls = t.get("events"), t.get("wall_s") or []
    fixed = harness.median((t.get("empty_job_wall_s") or [])[1:])
    beyond = [events / (w - fixed) if fixed is not None and w > fixed else None for w in walls]
    job = [events / w for w in walls if w]
    return {"engine": "flink", "cell": name, "backend": backend, "status": t["status"], "events": events,
            "events_per_s": beyond, "median_events_per_s": harness.median(beyond),
            "events_per_s_job": job, "median_events_per_s_job": harness.median(job), "fixed_s": fixed,
            "output_rows": t.get("check_rows"),
            **{k: t.get(k) for k in ("wall_s", "cpu_s", "jit_s", "empty_job_wall_s", "empty_job_cpu_s", "warmup_wall_s",
                                     "plan")}}


def compare_medians(ours, theirs) -> dict:
    """windowagg's (k, start, end, p) against Flink's (k, start, end, m), a full outer join: windows on one
    side only, and medians more than 1e-12 apart, are mismatches."""
    from pyspark.sql import functions as F
    j = ours.join(theirs, ["k", "start", "end"], "full_outer")
    r = j.agg(F.count("p").alias("ours"), F.count("m").alias("theirs"),
              F.sum(F.when(F.col("p").isNull() | F.col("m").isNull() | ~(F.abs(F.col("p") - F.col("m")) <= 1e-12), 1)
                    .otherwise(0)).alias("bad"),
              F.max(F.abs(F.col("p") - F.col("m"))).alias("max_diff")).collect()[0]
    return {"windows": r["ours"], "flink_windows": r["theirs"], "mismatches": r["bad"] or 0, "max_abs_diff": r["max_diff"]}


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


def run(b: protocol.Run) -> None:
    spark, a, res, save = b.spark, b.a, b.res, b.save
    res["tag"] = a.tag
    save()
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
    ours = sc.get("streaming_pandas", {}).get("median_events_per_s")
    for key, cell in sc.items():  # each Flink cell's events/s over windowagg's pandas UDF's (absent: not run)
        if cell.get("engine") == "flink" and ours:
            out[f"{key}_over_pandas"] = harness.ratio(cell.get("median_events_per_s"), ours)
            out[f"{key}_job_over_pandas"] = harness.ratio(cell.get("median_events_per_s_job"), ours)
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
        print("\n".join(streaming_table(streamed)))
    print(ratios(res), res.get("check"), streamed.get("check"), streamed.get("flink", {}).get("check"))


def streaming_table(streamed: dict) -> list[str]:
    """The streaming cells' table; with Flink cells (--with-flink), a row per cell and state backend, its events/s
    over the whole job beside, and each cell's events/s against windowagg's pandas UDF's."""
    cells = streamed["cells"]
    flink = {key: cell for key, cell in cells.items() if cell.get("engine") == "flink"}
    ours = [(name, cell) for name, cell in cells.items() if name in STREAM_CELLS and cell.get("median_events_per_s")]
    if not flink:
        rows = [[STREAM_CELLS[name], f"{streamed['rows']:,}", f"{cell['median_events_per_s']:,.0f}", f"{cell['output_rows']:,}"]
                for name, cell in ours]
        return report.table(["streaming query", "rows", "events/s, median", "windows"], "lrrr", rows)
    base = cells.get("streaming_pandas", {}).get("median_events_per_s")

    def times(x):
        return f"{x / base:.2f}×" if x and base else "–"

    rows = [[STREAM_CELLS[name], f"{streamed['rows']:,}", f"{cell['median_events_per_s']:,.0f}", "–",
             f"{cell['output_rows']:,}", times(cell["median_events_per_s"])] for name, cell in ours]
    for key, cell in flink.items():
        label = f"{FLINK_CELLS[cell['cell']]}, {cell['backend']}"
        if cell["status"] != "ok":
            rows.append([label, f"{streamed['rows']:,}", cell["status"][:80], "–", "–", "–"])
            continue
        eps, job = cell.get("median_events_per_s"), cell.get("median_events_per_s_job")
        rows.append([label, f"{cell['events']:,}", f"{eps:,.0f}" if eps else "–", f"{job:,.0f}" if job else "–",
                     f"{cell['output_rows']:,}", f"{times(eps)} / {times(job)}"])
    return report.table(["streaming query", "rows", "events/s, median", "events/s over the whole Flink job", "windows",
                         "× windowagg pandas UDF's events/s"], "lrrrrr", rows)


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


BENCHMARK = protocol.Benchmark(
    "python_aggregates", "windowagg-bench-python-aggregates", parse_args, run, render, None, None,
    results={"inputs": {}, "cells": {}})
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
