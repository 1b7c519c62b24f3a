#!/usr/bin/env python3
"""Nexmark q5, q7, q11 and cumulative: windowagg and Spark's built-ins in Structured Streaming against Apache Flink 2.3.

Events/s, CPU seconds per event and the micro-batch duration per query and engine, at parallelism 1
and 2, plus the state size, by micro-batch size for windowagg and Spark; the targets: windowagg's CPU
per event, beyond Spark's fixed cost per micro-batch, at most 0.5x Flink's on q5, q7 and q11 at every
micro-batch size, and events/s at least Flink's from the smallest size where that holds. Input:
bench/nexmark/generator.py's bids; queries: bench/nexmark/queries.py (Spark) and flink_queries.py.

Its inputs, cells (Flink's, Spark's, warm-ups, fixed costs), the CPU beyond the fixed cost and the
check of every cell's output against Flink's are its page's: bench/nexmark_bench_notes.md, rendered
into docs/benchmarks-nexmark.md. A cell whose output differs from Flink's is marked FAILED and the run
exits 1.
"""
from __future__ import annotations

import collections
import datetime as dt
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
NEXMARK_DIR = BENCH_DIR / "nexmark"
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(NEXMARK_DIR))
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402
import generator  # noqa: E402  (bench/nexmark: the seeded Nexmark generator)
import queries as Q  # noqa: E402  (bench/nexmark: the queries in windowagg and Spark, the flush bid, Flink's output)

DOC = report.DOCS / "benchmarks-nexmark.md"
IMG = report.DOCS / "img" / "nexmark.png"
NOTES = BENCH_DIR / "nexmark_bench_notes.md"
RESULTS_NAME = "nexmark"  # bench/results/nexmark-<tag>.json and the results' "benchmark" field (earlier runs: nexmark_bench)

QUERY_NAMES = ["q5", "q7", "q11", "cumulative"]
TARGET_QUERIES = ["q5", "q7", "q11"]  # the issue's targets; cumulative is compared with Flink the same way
QUERY = {"q5": "q5_counts", "q7": "q7", "q11": "q11", "cumulative": "cumulative"}  # queries.py's / flink_queries.py's
VALUE = {"q5": "num", "q7": "max_price", "q11": "num", "cumulative": "num"}  # the column the checksum sums
KEY = {"q5": "auction", "q7": None, "q11": "bidder", "cumulative": "auction"}
ENGINES = ["windowagg", "spark"]
BACKENDS = ["hashmap", "rocksdb"]
SPARK_QUERY = {"q5": "`window(ts, '10 seconds', '2 seconds')`", "q7": "`window(ts, '10 seconds')`",
               "q11": "`session_window(ts, '10 seconds')`", "cumulative": None}  # Spark has no cumulative windows
WA_QUERY = {"q5": "`TimeWindows.of('10 seconds').advanceBy('2 seconds')`", "q7": "`TimeWindows.of('10 seconds')`",
            "q11": "`SessionWindows.withInactivityGap('10 seconds')`",
            "cumulative": "`CumulativeWindows.of('10 seconds', '1 day')`"}
CPU_TARGET = 0.5  # windowagg's CPU per event beyond the fixed cost <= 0.5x Flink's
FIXED_DOMINATES = 0.9  # a cell whose fixed cost is >= 90% of its CPU gets no CPU verdict (the rest is noise)
DEFECT_MARGIN = 1.10  # a windowagg fixed cost per micro-batch over 1.1x Spark's window() query's is flagged


def query_engines(q: str, engines: list[str]) -> list[str]:
    """The Spark-side engines that have query q: Spark's built-ins have no cumulative windows."""
    return [e for e in engines if e == "windowagg" or SPARK_QUERY[q] is not None]


def size_label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else (
        f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else f"{n:,}")


# --------------------------------------------------------------------------------------- args

def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 100k events, sizes 10k and 100k, no docs (explicit flags win)")
    p.add_argument("--events", type=int, help="Nexmark events, ~92%% of them bids (default 1,000,000; quick 100,000)")
    p.add_argument("--rate", type=int, default=10_000, help="events per second of event time (10,000)")
    p.add_argument("--sizes", help="micro-batch sizes in bids (default 10000,100000,1000000; quick 10000,100000)")
    p.add_argument("--queries", default=",".join(QUERY_NAMES), help="subset of q5,q7,q11,cumulative")
    p.add_argument("--engines", default=",".join(ENGINES), help="Spark-side engines: subset of windowagg,spark")
    p.add_argument("--watermark", default="0 seconds", help="withWatermark delay of the stream (0 seconds)")
    p.add_argument("--row-group", type=int, default=50_000,
                   help="Parquet row group size (50,000: a large file is split into one scan task per core)")
    p.add_argument("--p1", dest="p1", action="store_true", default=None,
                   help="also a local[1] session (1 shuffle partition) for the parallelism-1 cells (default on)")
    p.add_argument("--no-p1", dest="p1", action="store_false")
    p.add_argument("--p1-sizes", help="the sizes the local[1] session runs (default: the largest of --sizes)")
    p.add_argument("--p1-engines", default="windowagg",
                   help="the engines the local[1] session runs (default windowagg: the targets compare windowagg "
                        "with Flink; add spark for Spark's built-ins at parallelism 1, about 2 minutes more)")
    p.add_argument("--reps", type=int, help="timed runs per Spark-side cell, the engines' order alternating "
                                            "(default 2: the median; quick 1)")
    p.add_argument("--warmup-bids", type=int,
                   help="the untimed warm-up runs of each query and engine (local[2] only: the local[1] session "
                        "runs in the same, warm JVM; and in each Flink cell's JVM) read the first N bids, in files "
                        "of N/4 bids for Spark, one CSV for Flink (default 200,000; quick 20,000)")
    p.add_argument("--warmup-runs", type=int,
                   help="warm-up runs of each query and engine, and of each Flink cell (default 3; quick 1)")
    p.add_argument("--fixed-bids", type=int, default=10, help="bids per file of the fixed-cost runs (10)")
    p.add_argument("--fixed-files", type=int, default=12, help="files of the fixed-cost run (12)")
    p.add_argument("--fixed-rounds", type=int,
                   help="fixed-cost runs per query and engine, the engines' order alternating; each measure is the "
                        "median over them (default 3: one run each moves by 20%% or more; quick 1)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before a Spark-side run is stopped (900)")
    p.add_argument("--flink", dest="flink", action="store_true", default=True, help="run the Flink cells (default)")
    p.add_argument("--no-flink", dest="flink", action="store_false")
    p.add_argument("--flink-parallelism", default="1,2", help="Flink parallelism values (1,2)")
    p.add_argument("--flink-backends", default=",".join(BACKENDS), help="subset of hashmap,rocksdb")
    p.add_argument("--flink-python", default=str(harness.FLINK_PYTHON))
    p.add_argument("--flink-timeout", type=float, default=600.0, help="seconds per Flink process (600)")
    p.add_argument("--flink-watermark-delay-ms", type=int, default=1,
                   help="Flink's watermark delay (1 ms: at 0, Flink can close a window between two bids of its last "
                        "millisecond and drop the second as late)")
    p.add_argument("--profile", dest="profile", action="store_true", default=None,
                   help="profile (async-profiler, else Java Flight Recorder) one more local[2] windowagg run of the "
                        "queries that miss a target by the most, at --profile-size (default: on unless --quick)")
    p.add_argument("--no-profile", dest="profile", action="store_false")
    p.add_argument("--profile-size", type=int, default=100_000, help="micro-batch size of the profiled runs")
    p.add_argument("--profile-queries", type=int, default=2,
                   help="profile at most this many queries, those whose windowagg CPU per event at --profile-size "
                        "is the largest multiple of Flink's first (2)")
    p.add_argument("--work-dir", help="inputs, outputs and checkpoints (default: a fresh folder under /tmp)")
    harness.add_session_args(p, master="local[2]", shuffle_partitions=2, driver_memory="4g", seed=1)
    harness.add_contention_args(p, contended=0.3, quiet_wait=0.0, retries=False)
    harness.add_output_args(p, DOC.name)
    a = p.parse_args(argv)
    harness.defaults(a, events=(1_000_000, 100_000), sizes=("10000,100000,1000000", "10000,100000"),
                     warmup_bids=(200_000, 20_000), warmup_runs=(3, 1), profile=(True, False), p1=(True, True),
                     reps=(2, 1), fixed_rounds=(3, 1))
    a.sizes = sorted(set(harness.csv_ints(p, a.sizes, "--sizes")))
    a.p1_sizes = (sorted(set(harness.csv_ints(p, a.p1_sizes, "--p1-sizes"))) if a.p1_sizes
                  else a.sizes[-1:])
    if not set(a.p1_sizes) <= set(a.sizes):
        p.error("--p1-sizes must be among --sizes")
    a.queries = harness.subset(p, a.queries, QUERY_NAMES, "query")
    a.engines = harness.subset(p, a.engines, ENGINES, "engine")
    a.p1_engines = [e for e in harness.subset(p, a.p1_engines, ENGINES, "engine") if e in a.engines]
    a.flink_parallelism = harness.csv_ints(p, a.flink_parallelism, "--flink-parallelism")
    a.flink_backends = harness.subset(p, a.flink_backends, BACKENDS, "state backend")
    if a.fixed_rounds < 1:
        p.error("--fixed-rounds must be at least 1")
    if a.warmup_runs < 0:
        p.error("--warmup-runs must be 0 or more")
    if a.fixed_files < FIXED_SKIP + 3:
        p.error(f"--fixed-files must be at least {FIXED_SKIP + 3}")
    if not a.report and a.flink and not Path(a.flink_python).exists():
        p.error(f"--flink-python {a.flink_python} does not exist (run bench/nexmark/setup-flink, or --no-flink)")
    return a


# ------------------------------------------------------------------------------------ the input

def write_parquet(table, folder: Path, per_file: int, flush, row_group: int) -> list[Path]:
    """`table` (pyarrow, in time order) as ceil(rows / per_file) Parquet files of equal slices (at most
    per_file rows each), then `flush` (a one-row table) as the last file; modification times one second
    apart in that order (the file source reads them so, one per micro-batch). Returns the paths."""
    import pyarrow.parquet as pq
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rows = table.num_rows
    n = max(1, math.ceil(rows / per_file))
    first = int(time.time()) - n - 20
    paths = []
    for i, part in enumerate([table.slice((i * rows) // n, ((i + 1) * rows) // n - (i * rows) // n) for i in range(n)]
                             + [flush]):
        path = folder / f"part-{i:05d}.parquet"
        tmp = folder / f".part-{i:05d}.parquet.tmp"
        pq.write_table(part, tmp, row_group_size=row_group)
        os.replace(tmp, path)
        os.utime(path, (first + i, first + i))
        paths.append(path)
    return paths


def make_input(a, work: Path) -> dict:
    """The bids: one CSV for Flink; per size a folder of Parquet files (+ flush); the warm-up and
    fixed-cost folders. Returns what the run needs to know about them."""
    import pyarrow as pa
    t0 = time.perf_counter()
    # the last bid 1 ms before a UTC midnight: a cumulative window lasts until its day's end, so an auction's
    # windows are then the steps from its first bid to that midnight (Flink's CUMULATE emits the same)
    base = Q.base_time_ms(a.events, a.rate, -1)
    bids = generator.generate(generator.Config(events=a.events, seed=a.seed, rate=a.rate, base_time_ms=base))["bid"]
    if not bids["date_time"].is_monotonic_increasing:
        raise RuntimeError("the bids are not in time order")
    last = int(bids["date_time"].max())
    info = {"events": a.events, "bids": len(bids), "rate": a.rate, "seed": a.seed,
            "first_ms": int(bids["date_time"].min()), "last_ms": last,
            "event_time_span_s": (last - int(bids["date_time"].min())) / 1000.0,
            "auctions": int(bids["auction"].nunique()), "bidders": int(bids["bidder"].nunique()),
            "flush_ms": last + Q.FLUSH_AFTER_MS, "folders": {}}
    info["flink_csv"] = generator.write_bids(bids, str(work / "flink"), 1)[0]
    info["csv_mib"] = round(os.path.getsize(info["flink_csv"]) / 2**20, 1)
    table = pa.Table.from_pandas(bids, preserve_index=False)
    flush = pa.Table.from_pandas(Q.flush_bid(bids, info["flush_ms"]), preserve_index=False)
    for size in a.sizes:
        files = write_parquet(table, work / f"stream-{size}", size, flush, a.row_group)
        info["folders"][str(size)] = {"path": str(files[0].parent), "files": len(files) - 1,
                                      "bids_per_file": math.ceil(len(bids) / (len(files) - 1)),
                                      "parquet_mib": round(sum(f.stat().st_size for f in files) / 2**20, 1)}
    wb = min(a.warmup_bids, len(bids))
    files = write_parquet(table.slice(0, wb), work / "warmup", max(1, wb // 4), flush, a.row_group)
    info["folders"]["warmup"] = {"path": str(files[0].parent), "files": len(files) - 1, "bids": wb}
    info["flink_warmup_csv"] = generator.write_bids(bids.iloc[:wb], str(work / "flink-warmup"), 1)[0]
    n = a.fixed_files
    files = write_parquet(table.slice(0, n * a.fixed_bids), work / "fixed", a.fixed_bids, flush, a.row_group)
    info["folders"]["fixed"] = {"path": str(files[0].parent), "files": len(files) - 1, "bids": n * a.fixed_bids}
    info["write_s"] = round(time.perf_counter() - t0, 1)
    return info


# ------------------------------------------------------------------------------ Spark-side runs

def observed(progress) -> tuple[dict, dict, list]:
    """From a query's progress: the output check ("nexmark_check", summed over its micro-batches),
    windowagg's own metrics ("windowagg": rows routed aside, summed), and each micro-batch's start (epoch
    s, the JVM's clock: time.time()'s), duration and input rows."""
    check = {"rows": 0, "value_sum": 0, "start_s_sum": 0}
    wa, timing = collections.Counter(), []
    for p in progress:
        om = p.get("observedMetrics") or {}
        c = om.get("nexmark_check")
        c = c.asDict() if hasattr(c, "asDict") else dict(c or {})
        for k in check:
            check[k] += int(c.get(k) or 0)
        w = om.get("windowagg")
        for k, v in (w.asDict() if hasattr(w, "asDict") else dict(w or {})).items():
            if isinstance(v, (int, float)):
                wa[k] += v
        timing.append({"batch": p["batchId"], "rows": p["numInputRows"],
                       "start": dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp(),
                       "ms": (p["durationMs"] or {}).get("triggerExecution", 0)})
    return check, dict(wa), timing


def bid_stream(spark, folder: Path, watermark: str):
    """The Parquet bids in `folder` as a stream, one file per micro-batch, with ts and the watermark."""
    df = spark.readStream.schema(Q.BID_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(folder))
    return Q.with_ts(df).withWatermark("ts", watermark)


def query_df(spark, a, engine: str, q: str, folder: Path, last_real_ms: int):
    """The engine's query over the stream, with the output check as observed metrics (the flush bid's
    rows left out: its key, or for q7 the windows after the last real bid)."""
    from pyspark.sql import functions as F
    wa, sp, _, _ = Q.QUERIES[QUERY[q]]
    out = (wa if engine == "windowagg" else sp)(bid_stream(spark, folder, a.watermark))
    real = F.col(KEY[q]) != F.lit(Q.FLUSH_ID) if KEY[q] else F.col("window_start") <= F.lit(last_real_ms)
    return out.observe("nexmark_check",
                       F.sum(F.when(real, F.lit(1)).otherwise(F.lit(0))).cast("long").alias("rows"),
                       F.sum(F.when(real, F.col(VALUE[q]))).cast("long").alias("value_sum"),
                       F.sum(F.when(real, F.expr("window_start div 1000"))).cast("long").alias("start_s_sum"))


class CpuSampler:
    """Samples the CPU of this benchmark's processes (Python, the driver JVM and the commands it ran:
    harness.CpuMeter) every `interval` s in a thread, so that the CPU of a stretch of time, e.g. one
    micro-batch from its start to its end, can be read off afterwards (linear between samples)."""

    def __init__(self, meter: harness.CpuMeter, interval: float = 0.05):
        self.meter, self.interval = meter, interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while True:
            own = self.meter.sample()[1]
            if own is not None:
                self.samples.append((time.time(), own / harness._CLK))
            if self._stop.wait(self.interval):
                break

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        own = self.meter.sample()[1]
        if own is not None:
            self.samples.append((time.time(), own / harness._CLK))

    def at(self, t: float) -> float | None:
        """The CPU seconds used up to time t (interpolated between the samples around it)."""
        xs = self.samples
        if not xs or t < xs[0][0] or t > xs[-1][0]:
            return None
        lo, hi = 0, len(xs) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if xs[mid][0] <= t:
                lo = mid
            else:
                hi = mid
        (t0, c0), (t1, c1) = xs[lo], xs[hi]
        return c0 if t1 <= t0 else c0 + (c1 - c0) * (t - t0) / (t1 - t0)

    def between(self, t0: float, t1: float) -> float | None:
        a, b = self.at(t0), self.at(t1)
        return None if a is None or b is None else b - a


class SparkSide:
    """One Spark session's runs: its parallelism, the CPU meters, the work folder."""

    def __init__(self, spark, a, info: dict, work: Path, parallelism: int):
        self.spark, self.a, self.info, self.work, self.p = spark, a, info, work, parallelism
        self.meter = harness.ProcessTreeCpuMeter(spark)
        self.sampler_meter = harness.CpuMeter(spark)  # cheaper to sample (no /proc scan); no Python workers here
        self.n = 0

    def run(self, engine: str, q: str, folder_key: str, kind: str, on_start=None) -> dict:
        """One run of the engine's query over the files of `folder_key` (harness.run_stream_with_progress;
        `on_start` just before the query starts)."""
        self.n += 1
        f = self.info["folders"][folder_key]
        folder = Path(f["path"])
        label = f"{engine}-{q}-{folder_key}-p{self.p}-{self.n}"
        ck = self.work / "checkpoints" / label
        df = query_df(self.spark, self.a, engine, q, folder, self.info["last_ms"])
        with CpuSampler(self.sampler_meter) as sampler:
            r, progress = harness.run_stream_with_progress(self.spark, df, label, ck, f["files"] + 1, self.a.timeout,
                                                           self.meter, on_start)
        shutil.rmtree(ck, ignore_errors=True)
        check, wa_metrics, tm = observed(progress)
        # the CPU of each micro-batch (from its start to its end), and of the whole stretch from the first
        # micro-batch's start to the last one's end; the rest of the run's CPU is the query's start and stop
        base = sampler.samples[0][1] if sampler.samples else 0.0
        for b in tm:
            # this run's CPU up to the micro-batch's start and end (None outside the samples)
            c0, c1 = sampler.at(b["start"]), sampler.at(b["start"] + b["ms"] / 1000)
            b["cpu_at_start"] = None if c0 is None else c0 - base
            b["cpu_at_end"] = None if c1 is None else c1 - base
            b["cpu_s"] = None if c0 is None or c1 is None else c1 - c0
        r["batch_timing"] = tm
        r["cpu_in_batches_s"] = (sampler.between(tm[0]["start"], tm[-1]["start"] + tm[-1]["ms"] / 1000)
                                 if tm else None)
        r["cpu_start_stop_s"] = (r["own_cpu_s"] - r["cpu_in_batches_s"]
                                 if r["cpu_in_batches_s"] is not None and r["own_cpu_s"] is not None else None)
        flush_read = r["data_batches"] >= f["files"] + 1
        r.update({"engine": engine, "query": q, "p": self.p, "input": folder_key, "kind": kind,
                  "events_read": r["events"], "events": r["events"] - (1 if flush_read else 0),
                  "files": f["files"], "check": check, "windowagg_metrics": wa_metrics})
        r["events_per_s"] = r["events"] / r["processing_s"] if r["processing_s"] else None
        real = [b for b in r["batches"] if b["input_rows"] > 1]  # the input files' micro-batches, not the flush's
        ms = sorted(b["trigger_ms"] for b in real)
        r["batch_ms_median"] = statistics.median(ms) if ms else None
        r["batch_ms_p95"] = ms[min(len(ms) - 1, math.ceil(0.95 * len(ms)) - 1)] if ms else None
        r["state_rows_peak"] = max((b["state_rows"] for b in r["batches"]), default=None)
        r["state_rows_last_real"] = real[-1]["state_rows"] if real else None
        r["state_memory_peak"] = max((b["state_memory_bytes"] for b in r["batches"]), default=None)
        r["state_sst_peak"] = max((b["state_sst_bytes"] for b in r["batches"]), default=None)
        r["plan_operators"] = sorted({b["operator"] for b in r["batches"] if b["operator"]})
        return r


FIXED_SKIP = 2  # the fixed-cost run's first micro-batches, left out of its steady state


def fixed_cost(r: dict) -> dict:
    """The fixed cost per micro-batch of one query and engine, from its run over files of a few bids: the
    CPU from the start of its third such micro-batch to the end of its last, divided by their number (the
    first two open the state stores and build the plan); how much more the first micro-batch took; the
    query's start and stop (the run's CPU outside its micro-batches); the micro-batches' median and p95
    duration."""
    out = {k: r.get(k) for k in ("micro_batches", "own_cpu_s", "wall_s", "processing_s", "status",
                                 "cpu_start_stop_s", "batch_ms_median", "batch_ms_p95")}
    out["contended"] = bool(r.get("contended"))
    tm = [b for b in r.get("batch_timing") or [] if b["rows"] > 1]  # the few-bid files, not the flush
    steady = tm[FIXED_SKIP:]
    out["cpu_s_per_batch"] = out["first_batch_extra_cpu_s"] = out["steady_batches"] = None
    if r["status"] == "ok" and len(steady) >= 3:
        c0, c1 = steady[0].get("cpu_at_start"), steady[-1].get("cpu_at_end")
        cpu = None if c0 is None or c1 is None else c1 - c0
        out["steady_batches"] = len(steady)
        out["cpu_s_per_batch"] = cpu / len(steady) if cpu is not None else None
        out["cpu_s_per_batch_median"] = harness.median([b.get("cpu_s") for b in steady])
        first = r["batch_timing"][0].get("cpu_s") if r.get("batch_timing") else None
        if first is not None and out["cpu_s_per_batch"] is not None:
            out["first_batch_extra_cpu_s"] = max(0.0, first - out["cpu_s_per_batch"])
    return out


def fixed_of_rounds(rounds: list[dict]) -> dict:
    """The fixed cost of one query and engine over its rounds (fixed_cost of each run): each measure the
    median of the rounds that have it, and the rounds' own CPU per micro-batch, to show their spread."""
    out = {"rounds": len(rounds), "contended": any(f["contended"] for f in rounds),
           "status": "ok" if any(f["status"] == "ok" for f in rounds) else rounds[0]["status"],
           "cpu_s_per_batch_rounds": [f["cpu_s_per_batch"] for f in rounds]}
    for k in ("micro_batches", "own_cpu_s", "wall_s", "processing_s", "cpu_start_stop_s", "batch_ms_median",
              "batch_ms_p95", "cpu_s_per_batch", "cpu_s_per_batch_median", "first_batch_extra_cpu_s", "steady_batches"):
        out[k] = harness.median([f.get(k) for f in rounds])
    return out


# ----------------------------------------------------------------------------------------- Flink

def flink_check(path: Path, q: str) -> dict:
    df = Q.read_flink(str(path), QUERY[q])
    return {"rows": int(len(df)), "value_sum": int(df[VALUE[q]].sum()),
            "start_s_sum": int((df["window_start"] // 1000).sum())}


def run_flink(a, q: str, p: int, backend: str, csv: str, warmup_csv: str, work: Path,
              meter: harness.CpuMeter) -> dict:
    """One flink_queries.py process: JVM start, the warm-up runs, two empty jobs, the job over the bids.
    Returns its timing JSON plus the process's wall, the check of its output, and the CPU other
    processes used meanwhile."""
    out, tj, lg = work / f"flink-{q}-p{p}-{backend}.csv", work / f"flink-{q}-p{p}-{backend}.json", \
        work / f"flink-{q}-p{p}-{backend}.log"
    args = ["--bids", csv, "--query", QUERY[q], "--out", str(out), "--parallelism", str(p), "--state-backend", backend,
            "--watermark-delay-ms", str(a.flink_watermark_delay_ms), "--empty-jobs", "2", "--timing-json", str(tj)]
    if a.warmup_runs:
        args += ["--warmup-bids", warmup_csv, "--warmup-runs", str(a.warmup_runs)]
    s0 = meter.sample()
    t0 = time.perf_counter()
    r = {"engine": "flink", "query": q, "p": p, "backend": backend}
    r["status"] = harness.flink_process(a.flink_python, NEXMARK_DIR / "flink_queries.py", args, lg, a.flink_timeout)
    if r["status"] == "ok" and not (out.exists() and tj.exists()):
        r["status"] = "error: no output"
    if r["status"].startswith("error"):
        r["status"] += f": {harness.tail(lg, 8)[-600:]}"
    wall = time.perf_counter() - t0
    c = harness.CpuMeter.between(s0, meter.sample(), wall)
    r["process_wall_s"] = wall
    if tj.exists():  # flink_queries.py's timing, under its own names ("query" is its name of the query: kept apart)
        timing = json.loads(tj.read_text())
        r["flink_query"] = timing.pop("query", None)
        r.update({k: v for k, v in timing.items() if k not in r})
    if r["status"] == "ok":
        r["check"] = flink_check(out, q)
        ev = r["events"]
        r["events_per_s"] = ev / r["wall_s"] if r.get("wall_s") else None
        r["cpu_us_per_event"] = r["cpu_s"] / ev * 1e6 if ev else None
        r["cpu_us_per_event_beyond_empty"] = (r["cpu_s"] - r["empty_job_warm_cpu_s"]) / ev * 1e6 if ev else None
    # Flink's processes are children of this one, not part of the meter's own CPU: take them out of others'
    tree = r.get("total_cpu_s") or 0.0
    r["foreign_cores"] = (None if c["foreign_cpu_s"] is None
                          else max(0.0, c["foreign_cpu_s"] - tree) / wall)
    for path in (out, tj):
        path.unlink(missing_ok=True)
    if r["status"] == "ok":
        lg.unlink(missing_ok=True)
    return r


# ---------------------------------------------------------------------------------------- profile

# parts of transformWithState's work, by a frame anywhere in the stack (a sample can be in several)
WITHIN = [("Spark's timers (TimerStateImpl: register, delete, the scan for expired ones)", "transformwithstate.timers."),
          ("the expired timers' calls (handleExpiredTimer, all of it)", "TransformWithStateExec.handleTimerRows"),
          ("the input rows' calls (handleInputRows, all of it)", "TransformWithStateExec.handleInputRows"),
          ("the processor's set-up per task (state variables, their encoders)", "KeyedWindowProcessor.init")]


def thread_group(thread: str) -> str:
    """Which part of the driver JVM a thread is: the executor tasks, the driver's stream execution
    thread (it plans, commits and logs each micro-batch: the fixed cost's main part), the JIT
    compilers, the garbage collector, or another."""
    if "Executor task" in thread:
        return "executor tasks"
    if "stream execution" in thread:
        return "stream execution (driver: planning, offsets, commit)"
    if "CompilerThre" in thread:  # async-profiler keeps 15 characters of a native thread's name
        return "JIT compilers"
    if thread.startswith(("GC Thread", "G1 ")):
        return "garbage collector"
    return "other threads"


def profile_run(side: SparkSide, q: str, folder_key: str, work: Path) -> dict:
    """One windowagg run of q under a CPU profiler: async-profiler (every thread's CPU, native frames
    included) where it can be had, else Java Flight Recorder (Java frames only); where the samples
    fall by thread, and the executor threads' by category (sliding_streaming.py's categories)."""
    from sliding_streaming import CATEGORIES  # the frame categories of the streaming page's profile
    meter, spark = side.meter, side.spark
    if meter.jvm_pid is None:
        return {"error": "driver JVM pid unknown"}
    try:
        rec, profiler = harness.CpuProfile(spark, meter.jvm_pid, work / f"profile-{q}.collapsed"), "async-profiler"
        samples = lambda: harness.profile_samples(rec)  # noqa: E731
    except FileNotFoundError:
        try:
            rec, profiler = harness.FlightRecording(spark, meter.jvm_pid, work / f"profile-{q}.jfr"), "jfr"
            samples = lambda: ((thread, frames, 1) for thread, frames in harness.execution_samples(rec))  # noqa: E731
        except FileNotFoundError as missing:
            return {"error": str(missing)}
    harness.wait_quiet(side.meter, side.a.quiet_wait, side.a.contended)
    # started after the garbage collection that precedes each run, which is no part of the query's work
    try:
        try:
            r = side.run("windowagg", q, folder_key, "profile", on_start=rec.start)
        finally:
            rec.stop()
    except RuntimeError as failed:
        return {"error": str(failed)}
    total, cats, top, threads = 0, collections.Counter(), collections.Counter(), collections.Counter()
    within = collections.Counter()
    others = collections.Counter()  # the other threads by name, digits left out
    for thread, frames, n in samples():
        if not frames:
            continue
        group = thread_group(thread)
        threads[group] += n
        if group == "other threads":
            others["".join("#" if ch.isdigit() else ch for ch in thread)[:60]] += n
        if group == "executor tasks":
            total += n
            top[frames[0]] += n
            cats[harness.category(frames, CATEGORIES)] += n
            for label, part in WITHIN:
                if any(part in f for f in frames):
                    within[label] += n
    rec.path.unlink(missing_ok=True)
    share = (lambda c: round(c / total, 4)) if total else (lambda c: None)
    return {"query": q, "input": folder_key, "profiler": profiler, "executor_samples": total,
            "run": {k: r[k] for k in ("events", "micro_batches", "processing_s", "own_cpu_s", "status")},
            "categories": [{"category": k, "share": share(c)} for k, c in cats.most_common()],
            "within": [{"part": label, "share": share(within[label])} for label, _ in WITHIN],
            "threads": [{"threads": k, "share": round(c / sum(threads.values()), 4)} for k, c in threads.most_common()],
            "other_threads": [{"thread": k, "share": round(c / sum(threads.values()), 4)}
                              for k, c in others.most_common(5)],
            "top_self": [{"frame": k, "share": share(c)} for k, c in top.most_common(10)]}


# ---------------------------------------------------------------------------------------- summary

def fit_per_batch(cells: list[dict]) -> dict | None:
    """The CPU in a query's micro-batches as its micro-batches x a cost per micro-batch + the CPU of its
    events, fitted by least squares over the cells of one query, engine and session: the same events in
    more or fewer micro-batches, so the slope is the cost of one more micro-batch on this workload (its
    state included), and what is left the events' own. None with fewer than two micro-batch counts."""
    pts = [(c["micro_batches"], c["cpu_in_batches_s"]) for c in cells
           if c["status"] == "ok" and c["cpu_in_batches_s"] is not None]
    if len({b for b, _ in pts}) < 2 or len({c["events"] for c in cells}) != 1:
        return None
    mb = sum(b for b, _ in pts) / len(pts)
    mc = sum(c for _, c in pts) / len(pts)
    slope = sum((b - mb) * (c - mc) for b, c in pts) / sum((b - mb) ** 2 for b, _ in pts)
    return {"cpu_s_per_batch": slope, "cpu_s_of_events": mc - slope * mb, "cells": len(pts),
            "residual_s": max(abs(c - (mc + slope * (b - mb))) for b, c in pts)}


def _med(rs: list[dict], key: str):
    return harness.median([r.get(key) for r in rs])


def summarize(res: dict) -> None:
    """The cells (medians over reps), the fixed costs, the checks against Flink, and the targets."""
    flink = {}
    for r in res["runs"]:
        if r["engine"] == "flink":
            flink[f"{r['query']}/p{r['p']}/{r['backend']}"] = r
    refs = {}  # query -> Flink's check (the first successful cell), and whether all Flink cells agree
    for q in res["args"]["queries"]:
        # the reference: the output most of Flink's cells of the query agree on (ties: the one of the
        # smallest parallelism), since a Flink cell can lose late rows
        cells_q = sorted((r for r in flink.values() if r["query"] == q and r.get("check")), key=lambda r: r["p"])
        if cells_q:
            votes = collections.Counter(json.dumps(r["check"], sort_keys=True) for r in cells_q)
            top = max(votes.values())
            ref = next(r for r in cells_q if votes[json.dumps(r["check"], sort_keys=True)] == top)
            refs[q] = {"check": ref["check"], "cell": f"p{ref['p']} {ref['backend']}",
                       "flink_cells_agree": all(r["check"] == ref["check"] for r in cells_q)}
    rounds = collections.defaultdict(list)
    for r in res["runs"]:
        if r["engine"] != "flink" and r["kind"] == "fixed":
            rounds[f"{r['engine']}/{r['query']}/p{r['p']}"].append(fixed_cost(r))
    fixed = {k: fixed_of_rounds(fs) for k, fs in rounds.items()}
    cells = {}
    by = collections.defaultdict(list)
    for r in res["runs"]:
        if r["engine"] != "flink" and r["kind"] == "timed":
            by[f"{r['engine']}/{r['query']}/p{r['p']}/{r['input']}"].append(r)
    for key, rs in by.items():
        ok = [r for r in rs if r["status"] == "ok"]
        r0 = ok[0] if ok else rs[0]
        c = {"engine": r0["engine"], "query": r0["query"], "p": r0["p"], "size": int(r0["input"]),
             "runs": len(ok), "status": "ok" if ok else rs[0]["status"], "events": r0["events"],
             "files": r0["files"], "micro_batches": r0["micro_batches"],
             "events_per_s": _med(ok, "events_per_s"), "processing_s": _med(ok, "processing_s"),
             "wall_s": _med(ok, "wall_s"), "own_cpu_s": _med(ok, "own_cpu_s"), "jit_s": _med(ok, "jit_s"),
             "batch_ms_median": _med(ok, "batch_ms_median"), "batch_ms_p95": _med(ok, "batch_ms_p95"),
             "state_rows_peak": r0.get("state_rows_peak"), "state_rows_last_real": r0.get("state_rows_last_real"),
             "state_memory_peak": r0.get("state_memory_peak"), "state_sst_peak": r0.get("state_sst_peak"),
             "contended_runs": sum(1 for r in ok if r.get("contended")),
             "checks": [r["check"] for r in rs], "windowagg_metrics": r0.get("windowagg_metrics")}
        c["cpu_us_per_event"] = c["own_cpu_s"] / c["events"] * 1e6 if c["own_cpu_s"] and c["events"] else None
        c["cpu_in_batches_s"] = _med(ok, "cpu_in_batches_s")
        c["cpu_start_stop_s"] = _med(ok, "cpu_start_stop_s")
        ref = refs.get(c["query"])
        if c["status"] != "ok":
            c["check"] = "not run"
        elif ref is None:
            c["check"] = "no Flink reference"
        elif all(ch == ref["check"] for ch in c["checks"]):
            c["check"] = "ok"
        else:
            c["check"] = "FAILED"
        late = {k: v for k, v in (c["windowagg_metrics"] or {}).items() if v}
        if late and c["check"] == "ok":
            c["check"] = f"FAILED (rows routed aside: {late})"
        cells[key] = c
    # the fixed cost per micro-batch: fitted from the cells where a session ran several sizes, else the
    # few-bid files' measure (with the first micro-batch's extra)
    fits = {}
    for c in cells.values():
        fits.setdefault(f"{c['engine']}/{c['query']}/p{c['p']}", []).append(c)
    fits = {k: fit_per_batch(cs) for k, cs in fits.items()}
    for c in cells.values():
        k = f"{c['engine']}/{c['query']}/p{c['p']}"
        fit, fx = fits.get(k), fixed.get(k)
        c["fixed_cpu_s"] = c["fixed_share"] = c["cpu_us_per_event_beyond_fixed"] = c["fixed_from"] = None
        if fit:
            c["fixed_cpu_s"], c["fixed_from"] = c["micro_batches"] * fit["cpu_s_per_batch"], "fitted"
        elif fx and fx.get("cpu_s_per_batch") is not None:
            c["fixed_cpu_s"] = (fx["first_batch_extra_cpu_s"] or 0.0) + c["micro_batches"] * fx["cpu_s_per_batch"]
            c["fixed_from"] = "few-bid files"
        if c["fixed_cpu_s"] is not None and c["cpu_in_batches_s"] is not None and c["events"] and c["own_cpu_s"]:
            c["fixed_share"] = (c["fixed_cpu_s"] + (c["cpu_start_stop_s"] or 0.0)) / c["own_cpu_s"]
            c["cpu_us_per_event_beyond_fixed"] = (c["cpu_in_batches_s"] - c["fixed_cpu_s"]) / c["events"] * 1e6
    for key, r in flink.items():
        ref = refs.get(r["query"])
        if not r.get("check") or not ref:
            r["check_status"] = "not run"
        elif r["check"] == ref["check"]:
            r["check_status"] = "ok"
        else:
            r["check_status"] = ("**differs** from the others: " + ", ".join(
                f"{k} {r['check'][k]:,} vs {ref['check'][k]:,}" for k in r["check"] if r["check"][k] != ref["check"][k]))
    # the targets, per query, Spark parallelism and size: windowagg against each Flink state backend at the
    # same parallelism
    targets = []
    sizes = res["args"]["sizes"]
    for q in res["args"]["queries"]:
        for p in sorted({c["p"] for c in cells.values()}, reverse=True):
            rows = []
            for size in sizes:
                w = cells.get(f"windowagg/{q}/p{p}/{size}")
                if w is None:
                    continue
                t = {"query": q, "p": p, "size": size, "windowagg_ok": w["status"] == "ok" and w["check"] == "ok",
                     "wa_cpu_beyond": w["cpu_us_per_event_beyond_fixed"], "wa_cpu": w["cpu_us_per_event"],
                     "wa_events_per_s": w["events_per_s"], "fixed_share": w["fixed_share"], "flink": {}}
                for b in res["args"]["flink_backends"]:
                    f = flink.get(f"{q}/p{p}/{b}")
                    if f and f["status"] == "ok":
                        positive = (w["cpu_us_per_event_beyond_fixed"] or 0) > 0 and (
                            f["cpu_us_per_event_beyond_empty"] or 0) > 0  # else a ratio means nothing
                        t["flink"][b] = {
                            "cpu_beyond": f["cpu_us_per_event_beyond_empty"], "events_per_s": f["events_per_s"],
                            "cpu_ratio": harness.ratio(w["cpu_us_per_event_beyond_fixed"], f["cpu_us_per_event_beyond_empty"])
                            if t["windowagg_ok"] and positive else None,
                            "eps_ratio": harness.ratio(w["events_per_s"], f["events_per_s"]) if t["windowagg_ok"] else None}
                cr = [x["cpu_ratio"] for x in t["flink"].values()]
                er = [x["eps_ratio"] for x in t["flink"].values()]
                t["cpu_met"] = None if not cr or None in cr else max(cr) <= CPU_TARGET
                # CPU beyond the fixed cost is a difference of two measurements: where the fixed cost is
                # nearly all of the cell's CPU, what is left is within the fixed cost's noise
                t["fixed_dominates"] = w["fixed_share"] is not None and w["fixed_share"] >= FIXED_DOMINATES
                if t["windowagg_ok"] and t["flink"] and (t["fixed_dominates"] or None in cr):
                    t["cpu_met"] = "undecided"
                t["eps_met"] = None if not er or None in er else min(er) >= 1.0
                rows.append(t)
            if not rows:
                continue
            # the smallest size from which windowagg's events/s is at least Flink's at every larger size
            from_size = None
            for t in reversed(rows):
                if t["eps_met"]:
                    from_size = t["size"]
                else:
                    break
            v = [t["cpu_met"] for t in rows]
            cpu_all = (False if False in v else None if None in v else "undecided" if "undecided" in v else True)
            targets.append({"query": q, "p": p, "target": q in TARGET_QUERIES, "sizes": rows, "cpu_met_all": cpu_all,
                "eps_from_size": from_size, "eps_measured": all(t["eps_met"] is not None for t in rows),
                "fixed_from": next((w["fixed_from"] for w in (cells.get(f"windowagg/{q}/p{p}/{t['size']}") for t in rows)
                                    if w and w["fixed_from"]), None)})
    defects = []
    for q in res["args"]["queries"]:
        for p in sorted({int(k.split("/")[2][1:]) for k in fixed}, reverse=True):
            w, s = fixed.get(f"windowagg/{q}/p{p}"), fixed.get(f"spark/{q}/p{p}")
            if not w or not s:
                continue
            fw, fs = fits.get(f"windowagg/{q}/p{p}"), fits.get(f"spark/{q}/p{p}")
            d = {"query": q, "p": p,
                 "cpu_ratio": harness.ratio(w.get("cpu_s_per_batch"), s.get("cpu_s_per_batch")),
                 "ms_ratio": harness.ratio(w.get("batch_ms_median"), s.get("batch_ms_median")),
                 "fit_cpu_ratio": harness.ratio(fw["cpu_s_per_batch"], fs["cpu_s_per_batch"]) if fw and fs else None}
            rs = [x for x in (d["cpu_ratio"], d["ms_ratio"], d["fit_cpu_ratio"]) if x is not None]
            d["defect"] = bool(rs) and max(rs) > DEFECT_MARGIN
            defects.append(d)
    res["summary"] = {"flink": flink, "flink_reference": refs, "fixed": fixed, "fitted": fits, "cells": cells,
                      "targets": targets, "fixed_cost_comparison": defects,
                      "failed_checks": sorted(k for k, c in cells.items()
                                              if c["status"] == "ok" and c["check"] not in ("ok", "no Flink reference"))}


# ----------------------------------------------------------------------------------------- report

ENGINE_LABEL = {"windowagg": "windowagg", "spark": "Spark built-in"}
STYLE = {("windowagg", 2): dict(color="tab:blue", marker="o", linewidth=2.2),
         ("spark", 2): dict(color="tab:orange", marker="s"),
         ("windowagg", 1): dict(color="tab:blue", marker="o", linestyle="--", alpha=0.7),
         ("spark", 1): dict(color="tab:orange", marker="s", linestyle="--", alpha=0.7)}
FLINK_STYLE = {(2, "hashmap"): dict(color="tab:green", linestyle="-"),
               (2, "rocksdb"): dict(color="tab:green", linestyle=":"),
               (1, "hashmap"): dict(color="tab:gray", linestyle="-"),
               (1, "rocksdb"): dict(color="tab:gray", linestyle=":")}


def render_plot(res: dict, img: Path) -> None:
    plt = report.pyplot()
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter
    S = res["summary"]
    qs = res["args"]["queries"]
    fig, axes = plt.subplots(2, len(qs), figsize=(5.2 * len(qs), 9.4), squeeze=False)
    sizes = res["args"]["sizes"]
    for j, q in enumerate(qs):
        for i, (key, flink_key, ylabel) in enumerate((
                ("events_per_s", "events_per_s", "events/s (log)"),
                ("cpu_us_per_event_beyond_fixed", "cpu_us_per_event_beyond_empty",
                 "CPU µs per event beyond the fixed cost (log)"))):
            ax = axes[i][j]
            for (eng, p), style in STYLE.items():
                pts = sorted((c["size"], c[key]) for c in S["cells"].values()
                             if c["engine"] == eng and c["p"] == p and c["query"] == q and c[key] is not None
                             and c[key] > 0 and c["status"] == "ok")
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], label=f"{ENGINE_LABEL[eng]}, local[{p}]", **style)
                if i == 1 and p == 2:  # all of the CPU, the fixed cost included: where the difference comes from
                    pts = sorted((c["size"], c["cpu_us_per_event"]) for c in S["cells"].values()
                                 if c["engine"] == eng and c["p"] == p and c["query"] == q and c["status"] == "ok"
                                 and c["cpu_us_per_event"])
                    if pts:
                        ax.plot([x for x, _ in pts], [y for _, y in pts], color=style["color"], linestyle=":",
                                marker=style["marker"], markerfacecolor="white", linewidth=1,
                                label=f"{ENGINE_LABEL[eng]}, local[{p}], all CPU (fixed cost included)")
            for (p, b), style in FLINK_STYLE.items():
                f = S["flink"].get(f"{q}/p{p}/{b}")
                if f and f.get(flink_key):
                    ax.axhline(f[flink_key], label=f"Flink p{p} {b}", **style)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(FixedLocator(sizes))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: size_label(int(round(v)))))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 100 else f"{v:g}"))
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_xlim(min(sizes) / 2, max(sizes) * 2)
            ax.set_xlabel("bids per micro-batch")
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
            ax.set_title(q)
    handles = {}
    for ax in axes.flat:  # one legend for all panels, below them
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=4, fontsize=8, framealpha=0.9)
    w = res["workload"]
    fig.suptitle(f"Nexmark {', '.join(qs)}: {w['bids']:,} bids ({w['events']:,} events at {w['rate']:,}/s); "
                 "Flink's lines: job only (events/s) and beyond a warm empty job (CPU)", fontsize=10)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    report.save(fig, img)


_f = report.fmt_num  # short: the tables call it in almost every cell


def _mib(x):
    return "–" if x is None else f"{x / 2**20:,.1f}"


def _verdict(v) -> str:
    if v == "undecided":
        return "undecided (fixed cost ≥ 90% of the CPU, or a difference ≤ 0)"
    return report.verdict(v)


def warmup_lines(res: dict) -> list[str]:
    """Per query, what the JIT compilers took of each engine's first and last warm-up run: the JIT
    seconds of the CPU seconds (Flink: the range over its cells)."""
    def pair(jit, cpu):
        return f"{jit:.1f} of {cpu:.1f}"

    def span(xs):
        return f"{min(xs):.1f}" if min(xs) == max(xs) else f"{min(xs):.1f}–{max(xs):.1f}"

    lines = []
    for q in res["args"]["queries"]:
        parts = []
        for eng in res["args"]["engines"]:
            rs = [r for r in res["runs"] if r["engine"] == eng and r["query"] == q and r.get("kind") == "warm-up"
                  and r.get("jit_s") is not None and r.get("own_cpu_s")]
            if rs:
                parts.append(f"{ENGINE_LABEL[eng]} {pair(rs[0]['jit_s'], rs[0]['own_cpu_s'])} CPU s in its first run, "
                             f"{pair(rs[-1]['jit_s'], rs[-1]['own_cpu_s'])} in its run {len(rs)}")
        fl = [r for r in res["runs"] if r["engine"] == "flink" and r["query"] == q and r.get("warmup_jit_s")]
        if fl:
            n = len(fl[0]["warmup_jit_s"])
            parts.append(f"Flink ({len(fl)} cell{'s' if len(fl) != 1 else ''}) {span([r['warmup_jit_s'][0] for r in fl])} of "
                         f"{span([r['warmup_cpu_s'][0] for r in fl])} in the first, "
                         f"{span([r['warmup_jit_s'][-1] for r in fl])} of {span([r['warmup_cpu_s'][-1] for r in fl])} "
                         f"in run {n}")
        if parts:
            lines.append(f"  - {q}: " + "; ".join(parts))
    return lines


def render(res: dict, json_path: Path, doc: Path = DOC, img: Path = IMG) -> None:
    render_plot(res, img)
    S, args, w = res["summary"], res["args"], res["workload"]
    qs = args["queries"]

    # Flink's cells
    frows = []
    for q in qs:
        for p in args["flink_parallelism"]:
            for b in args["flink_backends"]:
                f = S["flink"].get(f"{q}/p{p}/{b}")
                if f is None:
                    continue
                if f["status"] != "ok":
                    frows.append([q, p, b, f"error: {f['status'][:80]}"] + ["–"] * 11)
                    continue
                frows.append([q, p, b, _f(f["events_per_s"]), f"{f['wall_s']:.2f}", f"{f['cpu_s']:.2f}",
                              f"{f['empty_job_warm_s']:.2f} / {f['empty_job_warm_cpu_s']:.2f}",
                              _f(f["cpu_us_per_event"], ".2f"), f"**{_f(f['cpu_us_per_event_beyond_empty'], '.2f')}**",
                              _f(f.get("jit_s"), ".2f"), f"{f['startup_s']:.1f}", f"{f['empty_job_cold_s']:.1f}",
                              f"{f['process_wall_s']:.1f}",
                              _f(f["rows"]), f["check_status"] + (" †" if f.get("contended") else "")])
    flink_table = report.table(
        ["query", "parallelism", "state backend", "events/s (job)", "job wall s", "job CPU s",
         "warm empty job: wall / CPU s", "CPU µs/event", "CPU µs/event beyond the warm empty job",
         "JIT s (job)", "JVM start s", "first empty job s", "process wall s", "output rows", "check"],
        "lrlrrrrrrrrrrrl", frows)

    # windowagg's and Spark's cells, one table per query
    spark_tables = []
    for q in qs:
        rows = []
        for p in sorted({c["p"] for c in S["cells"].values()}, reverse=True):
            for size in args["sizes"]:
                for eng in args["engines"]:
                    c = S["cells"].get(f"{eng}/{q}/p{p}/{size}")
                    if c is None:
                        continue
                    if c["status"] != "ok":
                        rows.append([ENGINE_LABEL[eng], f"local[{p}]", size_label(size), c["status"][:60]]
                                    + ["–"] * 11)
                        continue
                    rows.append([ENGINE_LABEL[eng], f"local[{p}]", f"{size_label(size)} ({c['micro_batches']})",
                                 _f(c["events_per_s"]), f"{c['own_cpu_s']:.1f}", _f(c.get("jit_s"), ".1f"),
                                 _f(c["cpu_us_per_event"], ".2f"),
                                 f"{c['fixed_cpu_s']:.1f} ({c['fixed_share']:.0%})" if c["fixed_cpu_s"] is not None else "–",
                                 f"**{_f(c['cpu_us_per_event_beyond_fixed'], '.2f')}**",
                                 f"{_f(c['batch_ms_median'])} / {_f(c['batch_ms_p95'])}",
                                 _f(c["state_rows_peak"]), _f(c["state_rows_last_real"]), _mib(c["state_memory_peak"]),
                                 _mib(c["state_sst_peak"]),
                                 ("ok" if c["check"] == "ok" else f"**{c['check']}**")
                                 + (" †" if c["contended_runs"] else "")])
        spark = f"Spark {SPARK_QUERY[q]}" if SPARK_QUERY[q] else "no Spark built-in"
        spark_tables.append(f"**{q}** (windowagg {WA_QUERY[q]}, {spark}):\n\n" + "\n".join(report.table(
            ["engine", "session", "bids per micro-batch (micro-batches)", "events/s", "CPU s", "of which JIT s",
             "CPU µs/event",
             "fixed cost CPU s (share)", "CPU µs/event beyond the fixed cost", "micro-batch ms: median / p95",
             "state rows: peak", "state rows after the last file", "state memory MiB (peak)", "RocksDB SST MiB (peak)",
             "check"], "lllrrrrrrrrrrrl", rows)))

    # the targets
    def per_backend(fl, key, spec, unit=""):  # the value of each Flink state backend's cell
        return " / ".join("–" if fl[b][key] is None else format(fl[b][key], spec) + unit for b in fl) or "–"

    trows, summary_lines = [], []
    for t in S["targets"]:
        for x in t["sizes"]:
            fl = x["flink"]
            trows.append([t["query"], f"local[{t['p']}] vs Flink p{t['p']}", size_label(x["size"]),
                          _f(x["wa_cpu_beyond"], ".2f"), per_backend(fl, "cpu_beyond", ".2f"),
                          per_backend(fl, "cpu_ratio", ".2f", "×"), _verdict(x["cpu_met"]),
                          _f(x["wa_events_per_s"]), per_backend(fl, "events_per_s", ",.0f"),
                          per_backend(fl, "eps_ratio", ".2f", "×"), _verdict(x["eps_met"]),
                          "–" if x["fixed_share"] is None else f"{x['fixed_share']:.0%}"])
        eps = (f"from **{size_label(t['eps_from_size'])}** bids per micro-batch on" if t["eps_from_size"]
               else "at **no** micro-batch size measured" if t["eps_measured"] else "not measured")
        no_target = "" if t.get("target", True) else " (no target in the issue: compared the same way)"
        summary_lines.append(f"- **{t['query']}**{no_target}, local[{t['p']}] against Flink at parallelism {t['p']}: CPU per "
                             f"event ≤ {CPU_TARGET}× Flink's at every size: {_verdict(t['cpu_met_all'])} (fixed cost "
                             f"per micro-batch {t.get('fixed_from') or 'not measured'}); events/s ≥ "
                             f"Flink's (both state backends): {eps}.")
    backends = " / ".join(args["flink_backends"])
    targets_table = report.table(
        ["query", "cells", "bids per micro-batch", "windowagg CPU µs/event beyond fixed cost",
         f"Flink CPU µs/event beyond empty job ({backends})", f"ratio ({backends})", f"CPU ≤ {CPU_TARGET}×",
         "windowagg events/s", f"Flink events/s ({backends})", f"ratio ({backends})", "events/s ≥ Flink",
         "fixed cost's share of windowagg's CPU"], "lllrrrlrrrlr", trows)

    # fixed cost per micro-batch
    xrows = []
    for q in qs:
        for p in sorted({int(k.split("/")[2][1:]) for k in S["fixed"]}, reverse=True):
            d = next((d for d in S["fixed_cost_comparison"] if d["query"] == q and d["p"] == p), None)
            for eng in args["engines"]:
                x = S["fixed"].get(f"{eng}/{q}/p{p}")
                if x is None:
                    continue
                ratio = ""
                if eng == "windowagg" and d:
                    ratio = (f"{_f(d['cpu_ratio'], '.2f')}× CPU, {_f(d['ms_ratio'], '.2f')}× duration, "
                             f"{_f(d.get('fit_cpu_ratio'), '.2f')}× fitted CPU: "
                             + ("**larger: a defect to fix**" if d["defect"] else "not larger (within 10%)"))
                fit = (S.get("fitted") or {}).get(f"{eng}/{q}/p{p}")
                xrows.append([q, f"local[{p}]", ENGINE_LABEL[eng] if eng == "windowagg" else f"Spark {SPARK_QUERY[q]}",
                              f"{_f(x['batch_ms_median'])} / {_f(x['batch_ms_p95'])}",
                              _f(None if x["cpu_s_per_batch"] is None else x["cpu_s_per_batch"] * 1000)
                              + ("" if len(x.get("cpu_s_per_batch_rounds") or []) < 2 else " (" + ", ".join(
                                  _f(None if c is None else c * 1000) for c in x["cpu_s_per_batch_rounds"]) + ")"),
                              _f(None if x["first_batch_extra_cpu_s"] is None else x["first_batch_extra_cpu_s"] * 1000),
                              _f(x["cpu_start_stop_s"], ".2f"),
                              "–" if not fit else f"{fit['cpu_s_per_batch'] * 1000:,.0f} (± {fit['residual_s']:.1f} s)",
                              ratio + (" †" if x["contended"] else "")])
    fixed_table = report.table(
        ["query", "session", "engine", "micro-batch ms: median / p95", "CPU ms per micro-batch (each round's)",
         "the first micro-batch's extra CPU ms", "query start + stop CPU s",
         "CPU ms per micro-batch fitted from the cells (largest residual)", "windowagg ÷ Spark"], "lllrrrrrl", xrows)
    defects = [d for d in S["fixed_cost_comparison"] if d["defect"]]

    prof = res.get("profiles") or {}
    prof_lines = []
    for q, x in prof.items():
        if x.get("error"):
            prof_lines.append(f"- {q}: profile failed: {x['error']}")
            continue
        cats = ", ".join(f"{c['category']} {c['share']:.0%}" for c in x["categories"][:6] if c["share"])
        of_which = ("" if not x.get("other_threads") else
                    " (of which " + ", ".join(f"`{c['thread']}` {c['share']:.0%}" for c in x["other_threads"][:3]) + ")")
        threads = ", ".join(f"{c['threads']} {c['share']:.0%}" + (of_which if c["threads"] == "other threads" else "")
                            for c in x.get("threads", []))
        by = {"async-profiler": "async-profiler", "jfr": "Java Flight Recorder: Java frames only"}[x.get("profiler", "jfr")]
        prof_lines.append(f"- **{q}** (windowagg, local[{x.get('p', 2)}], {size_label(int(x['input']))} bids per "
                          f"micro-batch; {by}): all threads' samples: {threads}; the executor threads' "
                          f"{x['executor_samples']:,} samples: {cats}"
                          + ("" if not x.get("within") else "; stacks within " + ", ".join(
                              f"{c['part']} {c['share']:.0%}" for c in x["within"] if c["share"] is not None)))

    fp = args["flink_parallelism"]
    values = {
        "summary_lines": "\n".join(summary_lines) or "- no target could be evaluated in this run",
        "failed_checks": ", ".join(S["failed_checks"]),
        "defects": bool(defects),
        "defect_list": ", ".join(f"{d['query']} at local[{d['p']}] ({_f(d['cpu_ratio'], '.2f')}× CPU, "
                                 f"{_f(d['ms_ratio'], '.2f')}× duration, {_f(d.get('fit_cpu_ratio'), '.2f')}× "
                                 "fitted CPU)" for d in defects),
        "targets_table": "\n".join(targets_table),
        "fixed_table": "\n".join(fixed_table),
        "flink_table": "\n".join(flink_table),
        "spark_tables": "\n\n".join(spark_tables),
        "profiles": bool(prof_lines),
        "profile_lines": "\n".join(prof_lines),
        "events": f"{w['events']:,}", "bids": f"{w['bids']:,}", "rate": f"{w['rate']:,}",
        "span_s": f"{w['event_time_span_s']:,.0f}", "auctions": f"{w['auctions']:,}", "bidders": f"{w['bidders']:,}",
        "seed": w["seed"], "csv_mib": f"{w['csv_mib']:,.0f}",
        "sizes": ", ".join(f"{size_label(s)} ({w['folders'][str(s)]['files']} "
                           f"file{'s' if w['folders'][str(s)]['files'] != 1 else ''} of "
                           f"{w['folders'][str(s)]['bids_per_file']:,} bids or fewer)" for s in args["sizes"]),
        "p1_sizes": ", ".join(size_label(s) for s in args["p1_sizes"]) if args["p1"] else "",
        "p1": bool(args["p1"]),
        "p1_engines": " and ".join(ENGINE_LABEL[e] for e in args.get("p1_engines") or []) or "none",
        "row_group": f"{args['row_group']:,}",
        "watermark": args["watermark"],
        "flink_watermark_ms": args.get("flink_watermark_delay_ms", 0),
        "warmup_bids": f"{w['folders']['warmup']['bids']:,}", "warmup_files": w["folders"]["warmup"]["files"],
        "warmup_runs": args.get("warmup_runs", 1),
        "warmup_lines": "\n".join(warmup_lines(res)),
        "fixed_bids": args["fixed_bids"], "fixed_files": args["fixed_files"], "fixed_skip": FIXED_SKIP,
        "fixed_rounds": args.get("fixed_rounds") or 1,
        "run_minutes": (f"{(dt.datetime.fromisoformat(res['finished']) - dt.datetime.fromisoformat(res['started'])).total_seconds() / 60:.0f}"
                        if res.get("finished") and res.get("started") else "?"),
        "flink_parallelism": " and ".join(str(p) for p in fp),
        "flink_backends": " and ".join(f"`{b}`" for b in args["flink_backends"]),
        "flink_version": next((f.get("flink_version") for f in S["flink"].values() if f.get("flink_version")), "?"),
        "cpu_target": CPU_TARGET,
    }
    report.render_page(doc, img, NOTES, values, report.run_values("nexmark_bench.py", res, [json_path], doc, img, NOTES))


# ------------------------------------------------------------------------------------------- main

def spark_phase(b: protocol.Run, side: SparkSide, sizes: list[int], engines: list[str]) -> None:
    """One session's runs (each b.timed_run): warm-up, the cells by size (engines alternating), then the fixed costs."""
    a, res, p = b.a, b.res, side.p
    for q in (a.queries if p == 2 else []):  # the local[1] session runs in the same JVM, already warm
        for eng in query_engines(q, engines):
            for i in range(1, a.warmup_runs + 1):
                r = b.timed_run(side.meter, lambda: side.run(eng, q, "warmup", "warm-up"))
                log(f"p{p} {eng:9s} {q:3s} warm-up {i}: {r['status']} {r['events']:,} events in {r['processing_s']:.1f}s "
                    f"({r['micro_batches']} micro-batches), CPU {r['own_cpu_s'] or 0:.1f}s, JIT {r['jit_s']:.1f}s")
    for size in sizes:
        for rep in range(1, a.reps + 1):
            for q in a.queries:
                qe = query_engines(q, engines)
                for eng in (qe if rep % 2 else list(reversed(qe))):
                    r = b.timed_run(side.meter, lambda: side.run(eng, q, str(size), "timed"), rep=rep)
                    c = res["summary"]["cells"][f"{eng}/{q}/p{p}/{size}"]
                    log(f"p{p} {eng:9s} {q:3s} {size_label(size):>4s} rep {rep}: {r['status']} {r['events']:,} events, "
                        f"{r['micro_batches']} micro-batches, {r['processing_s']:.1f}s -> {r['events_per_s'] or 0:,.0f} "
                        f"events/s; CPU {r['own_cpu_s'] or 0:.1f}s = {c['cpu_us_per_event'] or 0:.2f} µs/event "
                        f"({r['cpu_in_batches_s'] or 0:.1f}s in its micro-batches, {r['cpu_start_stop_s'] or 0:.1f}s start "
                        f"and stop); batch median {r['batch_ms_median'] or 0:.0f} ms; state rows peak "
                        f"{r['state_rows_peak']}; output {r['check']}; check {c['check']}"
                        + (" CONTENDED" if r["contended"] else ""))
                    if c["check"].startswith("FAILED"):
                        log(f"CHECK FAILED: {eng} {q} local[{p}] size {size}: {r['check']} != Flink's "
                            f"{res['summary']['flink_reference'].get(q)} (results {b.path})")
    # the fixed cost per micro-batch last, in a JVM the cells have warmed up (its JIT compiler idle), in
    # rounds with the engines' order alternating: one run moves by 20% or more, and a run after another
    # engine's can find the machine busier
    for rnd in range(1, a.fixed_rounds + 1):
        for q in a.queries:
            qe = query_engines(q, engines)
            for eng in (qe if rnd % 2 else list(reversed(qe))):
                r = b.timed_run(side.meter, lambda: side.run(eng, q, "fixed", "fixed"), rep=rnd)
                fc = fixed_cost(r)
                log(f"p{p} {eng:9s} {q:3s} fixed cost, round {rnd}: {(fc['cpu_s_per_batch'] or 0) * 1000:.0f} ms CPU per "
                    f"micro-batch (median {(fc.get('cpu_s_per_batch_median') or 0) * 1000:.0f}), first one "
                    f"{(fc['first_batch_extra_cpu_s'] or 0) * 1000:.0f} ms more; median {fc['batch_ms_median'] or 0:.0f} ms; "
                    f"query start + stop {fc['cpu_start_stop_s'] or 0:.2f} CPU s")


def prepare(a) -> dict:
    """Before the session: the work folder and the bids, for Spark and for Flink."""
    work = Path(a.work_dir) if a.work_dir else Path(tempfile.mkdtemp(prefix="windowagg-bench-nexmark-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"events={a.events:,} rate={a.rate:,}/s sizes={a.sizes} queries={a.queries} engines={a.engines} "
        f"flink p={a.flink_parallelism} backends={a.flink_backends} p1={a.p1} (sizes {a.p1_sizes}) reps={a.reps} "
        f"work={work}")
    info = make_input(a, work)
    log(f"input: {info['bids']:,} bids over {info['event_time_span_s']:.0f} s of event time, "
        f"{info['auctions']:,} auctions, {info['bidders']:,} bidders; CSV {info['csv_mib']} MiB; "
        + "; ".join(f"{k}: {v['files']} files" for k, v in info["folders"].items()) + f" ({info['write_s']}s)")
    return {"work": work, "input": info}


def run(b: protocol.Run) -> None:
    a, spark, res, save = b.a, b.spark, b.res, b.save
    work, info = b.prepared["work"], b.prepared["input"]
    res["workload"] = info
    first_copy = None
    try:
        if a.flink:
            meter = harness.CpuMeter(spark)
            for q in a.queries:
                for p in a.flink_parallelism:
                    for backend in a.flink_backends:
                        r = b.timed_run(meter, lambda: run_flink(a, q, p, backend, info["flink_csv"],
                                                                 info["flink_warmup_csv"], work, meter))
                        if r["status"] == "ok":
                            log(f"flink p{p} {backend:7s} {q:3s}: {r['events']:,} events, job {r['wall_s']:.2f}s -> "
                                f"{r['events_per_s']:,.0f} events/s; job CPU {r['cpu_s']:.2f}s, warm empty job "
                                f"{r['empty_job_warm_s']:.2f}s / {r['empty_job_warm_cpu_s']:.2f} CPU s -> "
                                f"{r['cpu_us_per_event_beyond_empty']:.2f} µs/event beyond it; JIT {r['jit_s']:.2f}s; JVM start "
                                f"{r['startup_s']:.1f}s; process {r['process_wall_s']:.1f}s; output {r['check']}")
                        else:
                            log(f"flink p{p} {backend:7s} {q:3s}: {r['status'][:500]}")
        sessions = [(2, spark, a.sizes, a.engines)]
        for i, (p, sp, sizes, engines) in enumerate(sessions):
            side = SparkSide(sp, a, info, work, p)
            res["sessions"].append({"p": p, "master": sp.sparkContext.master,
                                    "shuffle_partitions": sp.conf.get("spark.sql.shuffle.partitions"),
                                    "sizes": sizes, "engines": engines})
            spark_phase(b, side, sizes, engines)
            if a.profile and p == 2 and "windowagg" in a.engines and a.profile_size in a.sizes:
                def worst(t):  # windowagg's CPU per event at the profile size as a multiple of Flink's
                    x = next((x for x in t["sizes"] if x["size"] == a.profile_size), None)
                    rs = [f["cpu_ratio"] for f in (x or {}).get("flink", {}).values() if f.get("cpu_ratio")]
                    return max(rs) if rs else 0.0
                missed = [t for t in res["summary"]["targets"] if t["p"] == p and t["target"] and (
                    t["cpu_met_all"] is not True or t["eps_from_size"] != min(a.sizes))]
                missed = [t["query"] for t in sorted(missed, key=worst, reverse=True)][:a.profile_queries]
                for q in missed:
                    log(f"profiling windowagg {q} at {size_label(a.profile_size)} ...")
                    try:
                        res["profiles"][q] = {**profile_run(side, q, str(a.profile_size), work), "p": p}
                    except Exception as e:  # noqa: BLE001  (the profile is a bonus)
                        res["profiles"][q] = {"error": str(e).splitlines()[0][:300]}
                    save()
            if i == 0 and a.p1 and a.p1_engines:
                log("local[1] session for the parallelism-1 cells")
                # not harness.stop: it removes the private copy of the jar, which the next session copies again
                first_copy = harness.JAR_SOURCE.get("copy")
                sp.stop()
                sp1 = harness.build_session("windowagg-bench-nexmark-p1", master="local[1]", shuffle_partitions=1,
                                            driver_memory=a.driver_memory, streaming=True, extra=harness.extra_conf(a))
                sp1.sparkContext.setLogLevel("ERROR")
                if harness.JAR_SOURCE.get("sha256") != (res["config"].get("windowagg_jar") or {}).get("sha256"):
                    raise RuntimeError("the local[1] session's jar differs from the local[2] session's")
                b.spark = sp1  # the one harness.finish stops
                sessions.append((1, sp1, a.p1_sizes, a.p1_engines))
    finally:
        if first_copy and first_copy.startswith("/tmp/windowagg-bench-"):
            Path(first_copy).unlink(missing_ok=True)
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)


def summary(res: dict) -> int:
    """The targets and the fixed costs logged; 1 when a cell's output differs from Flink's."""
    S = res["summary"]
    for t in S["targets"]:
        log(f"{t['query']} local[{t['p']}]: CPU target {t['cpu_met_all']}; events/s >= Flink from size "
            f"{t['eps_from_size']}")
    for d in S["fixed_cost_comparison"]:
        log(f"fixed cost {d['query']} local[{d['p']}]: windowagg / Spark = {_f(d['cpu_ratio'], '.2f')}x CPU, "
            f"{_f(d['ms_ratio'], '.2f')}x duration, {_f(d['fit_cpu_ratio'], '.2f')}x fitted CPU"
            f"{' DEFECT' if d['defect'] else ''}")
    if S["failed_checks"]:
        log(f"CHECKS FAILED: {S['failed_checks']}")
        return 1
    return 0


BENCHMARK = protocol.Benchmark(
    RESULTS_NAME, "windowagg-bench-nexmark", parse_args, run, render, DOC, IMG,
    results={"finished": None, "workload": None, "runs": [], "sessions": [], "profiles": {}}, summary=summary,
    summarize=summarize, indent=1, prepare=prepare,
    start=lambda a: {"config": harness.stream_config, "streaming": True, "log_level": "ERROR"})
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
