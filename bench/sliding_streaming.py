#!/usr/bin/env python3
"""Streaming benchmark: windowagg sliding windows against Spark's own windowed streaming aggregations.

One process, one SparkSession (RocksDB state store for every query). The input is generated once:
`--rows` events over `--keys` keys, in event-time order with up to `--jitter-ms` of disorder,
written as `--batches` Parquet files of equal size (arrival order). Each competitor reads the same
files as a stream with maxFilesPerTrigger=1 (one file per micro-batch, default trigger, so the same
micro-batches for all), with `withWatermark("ts", grace)`, and computes sum, count and max of `v`
per key `k` over windows of size S, in append mode, into the `noop` sink:

  windowagg  groupBy(k, windowagg.window(ts, SlidingWindows.of(S), emit=final))  -- KIP-450 windows
  tumbling   groupBy(k, window(ts, S))                                             -- Spark, tumbling
  hopping    groupBy(k, window(ts, S, S/10))                                       -- Spark, hopping
  count      groupBy(k, windowagg.window(ts, CountWindows.of(N).slide(M)))  -- Storm's count windows
             (opt-in: --competitors count,...; N = --count-length, M = --count-slide)

Per run: events per second = events / the sum of the micro-batches' `triggerExecution` durations
(query progress; no-data batches included), and per micro-batch the state rows
(`stateOperators[].numRowsTotal`), state memory, output rows and duration. Every competitor first
runs untimed on the first `--warmup-batches` files (JIT warm-up); then `--reps` timed runs each,
interleaved, the median reported. Before each timed run the harness waits for the machine to be
quiet and records the CPU other processes took during the run (from /proc); runs above
`--contended` cores are marked.

With `--profile`, one more windowagg run is recorded with Java Flight Recorder (jcmd on the driver
JVM; local mode runs the tasks there) and the hottest frames of the executor threads are summed up.

Results: bench/results/sliding_streaming-<tag>.json, .csv (one row per run) and -batches.csv (one
row per micro-batch); a full run (or --docs) renders docs/benchmarks-streaming.md and
docs/img/sliding_streaming.png. Re-render from a results file: --report bench/results/....json

Run from the repository root:  bench/run-streaming --quick    (smoke run, 200k rows, a few minutes)
                               bench/run-streaming            (full run: 2M rows, 1000 keys)
"""
from __future__ import annotations

import argparse
import collections
import datetime as dt
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
DOC = REPO / "docs" / "benchmarks-streaming.md"
IMG = REPO / "docs" / "img" / "sliding_streaming.png"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

COMPETITORS = ["windowagg", "tumbling", "hopping"]
OPT_IN = ["count"]
LABELS = {
    "windowagg": "windowagg sliding windows (KIP-450, final emission)",
    "tumbling": "Spark tumbling `window(ts, S)`",
    "hopping": "Spark hopping `window(ts, S, S/10)`",
    "count": "windowagg count windows (Storm's `Count(N), Count(M)`)",
}
STYLE = {
    "windowagg": dict(color="tab:blue", linewidth=2.2),
    "tumbling": dict(color="tab:orange"),
    "hopping": dict(color="tab:green"),
    "count": dict(color="tab:purple"),
}

_T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - _T0:8.1f}s] {msg}", flush=True)


# --------------------------------------------------------------------------------------- args

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 200k rows, 100 keys, 10 micro-batches, 1 rep, no docs (explicit flags win)")
    p.add_argument("--rows", type=int, help="events (default 2,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 100)")
    p.add_argument("--batches", type=int, help="input files = micro-batches (default 40; quick 10)")
    p.add_argument("--density", type=float, default=10.0, help="events per second per key (default 10)")
    p.add_argument("--size", type=int, default=10, help="window size S in seconds (default 10: ~100 events per window)")
    p.add_argument("--hop-divisor", type=int, default=10, help="hopping slide = S / this (default 10)")
    p.add_argument("--grace", type=float, default=2.0, help="watermark delay in seconds (default 2)")
    p.add_argument("--jitter-ms", type=int, default=500,
                   help="events are out of order by up to this many ms (default 500; below the grace, so none is late)")
    p.add_argument("--reps", type=int, help="timed runs per competitor (default 2; quick 1)")
    p.add_argument("--warmup-batches", type=int, default=3, help="files of the untimed warm-up run (default 3)")
    p.add_argument("--timeout", type=float, help="seconds before a run is stopped (default 1800; quick 300); "
                                                 "a stopped run still reports the micro-batches it finished")
    p.add_argument("--competitors", default=",".join(COMPETITORS),
                   help=f"subset of {','.join(COMPETITORS + OPT_IN)}")
    p.add_argument("--count-length", type=int, default=100, help="rows of a count window (count competitor; 100)")
    p.add_argument("--count-slide", type=int, default=10, help="rows between count windows (count competitor; 10)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--contended", type=float, default=0.3,
                   help="a run during which other processes used more than this many cores on average is "
                        "marked contended (default 0.3)")
    p.add_argument("--quiet-wait", type=float, default=120.0,
                   help="before each timed run, wait up to this many seconds for other processes to use less "
                        "than --contended cores (default 120; 0: do not wait)")
    p.add_argument("--profile", dest="profile", action="store_true", default=None,
                   help="one more windowagg run under Java Flight Recorder (default: on unless --quick)")
    p.add_argument("--no-profile", dest="profile", action="store_false")
    p.add_argument("--profile-batches", type=int, default=15, help="files read by the profiled run (default 15)")
    p.add_argument("--work-dir", help="input files and checkpoints (default: a fresh folder under /tmp)")
    p.add_argument("--tag", help="results file name stem (default: quick or full)")
    p.add_argument("--docs", dest="docs", action="store_true", default=None,
                   help="render docs/benchmarks-streaming.md and its plot (default: on unless --quick)")
    p.add_argument("--no-docs", dest="docs", action="store_false")
    p.add_argument("--report", metavar="JSON", help="only render the docs from this results file")
    a = p.parse_args(argv)
    q = a.quick
    a.rows = a.rows or (200_000 if q else 2_000_000)
    a.keys = a.keys or (100 if q else 1000)
    a.batches = a.batches or (10 if q else 40)
    a.reps = a.reps or (1 if q else 2)
    a.timeout = a.timeout or (300.0 if q else 1800.0)
    a.tag = a.tag or ("quick" if q else "full")
    if a.docs is None:
        a.docs = not q
    if a.profile is None:
        a.profile = not q
    a.competitors = [c.strip() for c in a.competitors.split(",") if c.strip()]
    for c in a.competitors:
        if c not in COMPETITORS + OPT_IN:
            p.error(f"unknown competitor {c!r}")
    if a.size % a.hop_divisor and (a.size * 1000) % a.hop_divisor:
        p.error("--size must be divisible by --hop-divisor (in milliseconds)")
    return a


# ------------------------------------------------------------------------------------ session

def jar_path() -> str | None:
    p = os.environ.get("WINDOWAGG_JAR")
    if p:
        return p
    default = Path("/tmp/windowagg-latest.jar")
    return str(default) if default.exists() else None


def build_session(a):
    conf = {
        "spark.driver.memory": a.driver_memory,
        "spark.sql.shuffle.partitions": str(a.shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.numRecentProgressUpdates": "100000",
    }
    jar = jar_path()
    if jar:
        os.environ["WINDOWAGG_JAR"] = jar
    import windowagg
    log(f"session through windowagg.session (package at {Path(windowagg.__file__).parent}, jar {windowagg.jar_path()})")
    return windowagg.session(app_name="windowagg-bench-sliding-streaming", master=a.master, config=conf)


# ------------------------------------------------------------------------------ the workload

def make_input(spark, a, folder: Path, rows: int) -> list[Path]:
    """`rows` events, the i-th at base + i / (keys * density) s plus up to jitter-ms, key uniform at
    random, written as `batches` files of consecutive events; modification times increase file by
    file, the order in which the file source reads them. Returns the files in order."""
    from pyspark.sql import functions as F

    staging = folder.with_name(folder.name + "-staging")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    per_batch = -(-rows // a.batches)
    step_ms = 1000.0 / (a.keys * a.density)
    base_ms = 1_700_000_000_000
    (spark.range(rows, numPartitions=4)
     .select(F.col("id"),
             (F.col("id") / per_batch).cast("int").alias("batch"),
             F.floor(F.rand(a.seed) * a.keys).cast("int").alias("k"),
             (F.lit(base_ms) + F.floor(F.col("id") * step_ms + F.rand(a.seed + 1) * a.jitter_ms)).alias("ts_ms"),
             F.round(F.rand(a.seed + 2) * 1000.0, 3).alias("v"))
     .repartition(4, "batch")
     .sortWithinPartitions("batch", "id")
     .select("batch", "k", F.timestamp_millis("ts_ms").alias("ts"), "v")
     .write.partitionBy("batch").parquet(str(staging)))
    folder.mkdir(parents=True)
    files = []
    first = time.time() - a.batches - 10
    for b in range(a.batches):
        parts = sorted(glob.glob(str(staging / f"batch={b}" / "*.parquet")))
        if len(parts) != 1:
            raise RuntimeError(f"expected one file for micro-batch {b}, found {len(parts)}")
        target = folder / f"events-{b:05d}.parquet"
        os.replace(parts[0], target)
        os.utime(target, (first + b, first + b))
        files.append(target)
    shutil.rmtree(staging, ignore_errors=True)
    return files


def link_subset(files: list[Path], folder: Path, n: int) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in files[:n]:
        os.link(f, folder / f.name)
        st = f.stat()
        os.utime(folder / f.name, (st.st_mtime, st.st_mtime))


def query(name: str, spark, a, source: Path):
    from pyspark.sql import functions as F

    events = (spark.readStream.schema("k INT, ts TIMESTAMP, v DOUBLE")
              .option("maxFilesPerTrigger", 1)
              .parquet(str(source))
              .withWatermark("ts", f"{int(a.grace * 1000)} milliseconds"))
    aggs = [F.sum("v").alias("sum_v"), F.count("v").alias("count_v"), F.max("v").alias("max_v")]
    size = f"{a.size} seconds"
    if name == "windowagg":
        from pyspark.sql.classic.column import Column, _to_java_column
        jvm = spark.sparkContext._jvm
        jdef = jvm.windowagg.SlidingWindows.of(size)
        wcol = Column(jvm.windowagg.functions.window(_to_java_column(F.col("ts")), jdef, {"emit": "final"}))
        return events.groupBy("k", wcol).agg(*aggs)
    if name == "count":
        from pyspark.sql.classic.column import Column, _to_java_column
        jvm = spark.sparkContext._jvm
        jdef = jvm.windowagg.CountWindows.of(a.count_length).slide(a.count_slide)
        wcol = Column(jvm.windowagg.functions.window(_to_java_column(F.col("ts")), jdef, {"emit": "final"}))
        return events.groupBy("k", wcol).agg(*aggs)
    if name == "tumbling":
        return events.groupBy("k", F.window("ts", size)).agg(*aggs)
    if name == "hopping":
        slide = f"{a.size * 1000 // a.hop_divisor} milliseconds"
        return events.groupBy("k", F.window("ts", size, slide)).agg(*aggs)
    raise ValueError(name)


# ------------------------------------------------------------------------- machine and CPU use

# CPU accounting from /proc, shared with the batch benchmark
from sliding_batch import _CLK, _busy_jiffies, _proc_jiffies  # noqa: E402


class Cpu:
    """CPU used by this benchmark (driver JVM + Python) and by everything else, over an interval."""

    def __init__(self, spark):
        self.pids = [os.getpid()]
        try:
            self.jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
            self.pids.append(self.jvm_pid)
        except Exception:
            self.jvm_pid = None

    def sample(self):
        own = [_proc_jiffies(p) for p in self.pids]
        return _busy_jiffies(), None if None in own else sum(own)

    @staticmethod
    def between(s0, s1, seconds: float) -> dict:
        (b0, o0), (b1, o1) = s0, s1
        if None in (b0, b1, o0, o1) or seconds <= 0:
            return {"own_cpu_s": None, "foreign_cpu_s": None, "foreign_cores": None}
        own = (o1 - o0) / _CLK
        foreign = max(0.0, (b1 - b0 - (o1 - o0)) / _CLK)
        return {"own_cpu_s": own, "foreign_cpu_s": foreign, "foreign_cores": foreign / seconds}

    def wait_quiet(self, max_wait: float, threshold: float) -> tuple[float, float]:
        t0 = time.perf_counter()
        while True:
            s0 = self.sample()
            time.sleep(2.0)
            c = self.between(s0, self.sample(), 2.0)
            share = c["foreign_cores"] or 0.0
            waited = time.perf_counter() - t0 - 2.0
            if share <= threshold or waited >= max_wait:
                return max(0.0, waited), share
            time.sleep(3.0)


def machine_info(spark) -> dict:
    jvm = spark.sparkContext._jvm
    sysprop = jvm.System.getProperty
    mem_kb = cpu = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu_model": cpu,
        "cpus_visible": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1) if mem_kb else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "spark": spark.version,
        "java": f"{sysprop('java.vm.name')} {sysprop('java.version')} ({sysprop('java.vendor')})",
    }


def conf_value(spark, key: str) -> str:
    """A conf's value as set in the session, or "not set (Spark's default)"."""
    value = spark.conf.get(key, None)
    return "not set (Spark's default)" if value is None else str(value)


def git_rev() -> str | None:
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "jvm"],
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (+ uncommitted changes under jvm/)" if dirty else "")
    except Exception:
        return None


def jar_info() -> dict | None:
    jar = os.environ.get("WINDOWAGG_JAR")
    if not jar or not Path(jar).exists():
        return None
    st = Path(jar).stat()
    return {"path": jar, "bytes": st.st_size,
            "mtime": dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc).isoformat(timespec="seconds")}


# ------------------------------------------------------------------------------------- a run

def run_query(name: str, spark, a, source: Path, checkpoint: Path, expected_batches: int, timeout: float,
              cpu: Cpu) -> dict:
    """Runs one competitor over the files in `source` until all are read and the trailing
    no-data micro-batch (the last watermark move) is done, or `timeout` seconds pass."""
    shutil.rmtree(checkpoint, ignore_errors=True)
    df = query(name, spark, a, source)
    spark.sparkContext._jvm.System.gc()
    s0 = cpu.sample()
    t0 = time.perf_counter()
    q = (df.writeStream.queryName(f"bench_{name}_{int(time.time() * 1000)}")
         .format("noop").outputMode("append")
         .option("checkpointLocation", str(checkpoint))
         .start())
    status = "ok"
    last_data_seen = t0
    try:
        deadline = t0 + timeout
        while True:
            if q.exception() is not None:
                status = f"error: {str(q.exception()).splitlines()[0][:300]}"
                break
            progress = q.recentProgress
            data = [p for p in progress if p["numInputRows"] > 0]
            read_all = len(data) >= expected_batches
            if read_all and progress and progress[-1]["numInputRows"] == 0 and len(progress) > len(data):
                break
            if read_all and time.perf_counter() > last_data_seen + 20:  # no trailing batch came
                break
            if not read_all:
                last_data_seen = time.perf_counter()
            if time.perf_counter() > deadline:
                status = "timeout"
                break
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        progress = q.recentProgress
    finally:
        q.stop()
    c = Cpu.between(s0, cpu.sample(), wall)
    batches = []
    for p in progress:
        ops = p.get("stateOperators") or []
        batches.append({
            "batch": p["batchId"],
            "input_rows": p["numInputRows"],
            "trigger_ms": p["durationMs"].get("triggerExecution", 0),
            "add_batch_ms": p["durationMs"].get("addBatch", 0),
            "state_rows": sum(op.get("numRowsTotal", 0) for op in ops),
            "state_rows_updated": sum(op.get("numRowsUpdated", 0) for op in ops),
            "state_rows_removed": sum(op.get("numRowsRemoved", 0) for op in ops),
            "state_memory_bytes": sum(op.get("memoryUsedBytes", 0) for op in ops),
            "output_rows": (p.get("sink") or {}).get("numOutputRows", -1),
            "watermark": (p.get("eventTime") or {}).get("watermark"),
            "operator": ",".join(str(op.get("operatorName")) for op in ops),
        })
    events = sum(b["input_rows"] for b in batches)
    proc_ms = sum(b["trigger_ms"] for b in batches)
    return {
        "competitor": name, "status": status, "wall_s": wall, "events": events,
        "micro_batches": len(batches), "data_batches": sum(1 for b in batches if b["input_rows"] > 0),
        "processing_s": proc_ms / 1000.0,
        "events_per_s": events / (proc_ms / 1000.0) if proc_ms else None,
        "output_rows": sum(max(b["output_rows"], 0) for b in batches),
        "batches": batches, **c,
    }


def flatness(batches: list[dict]) -> dict:
    """State rows over the data micro-batches: the mean of the second quarter against the mean of
    the last quarter (after the state filled up), and the largest value."""
    rows = [b["state_rows"] for b in batches if b["input_rows"] > 0]
    n = len(rows)
    if n < 4:
        return {"q2_mean": None, "q4_mean": None, "growth": None, "max": max(rows) if rows else None}
    q2 = rows[n // 4: n // 2]
    q4 = rows[3 * n // 4:]
    m2, m4 = statistics.mean(q2), statistics.mean(q4)
    return {"q2_mean": m2, "q4_mean": m4, "growth": (m4 - m2) / m2 if m2 else None, "max": max(rows)}


# ------------------------------------------------------------------------------------ profile

CATEGORIES = [  # (label, substrings of a frame "class.method"), first match from the top of the stack wins
    ("windowagg: window sweep / finality (core)", ["windowagg.core."]),
    ("windowagg: Spark aggregate buffers (SparkAggregates)", ["windowagg.spark.SparkAggregates"]),
    ("Row <-> InternalRow conversion (encoders)", ["catalyst.encoders.ExpressionEncoder$Serializer",
                                                   "catalyst.encoders.ExpressionEncoder$Deserializer",
                                                   "CatalystTypeConverters"]),
    ("state store: RocksDB (JNI)", ["org.rocksdb."]),
    ("state store: Spark's state layer (encoding, TWS state variables)", ["execution.streaming.state.",
                                                                          "execution.streaming.operators.stateful",
                                                                          "TransformWithState", "StateEncoder"]),
    ("windowagg: processor (rest)", ["windowagg.spark.SlidingWindowProcessor"]),
    ("Spark aggregation (HashAggregate / state save)", ["execution.aggregate."]),
    ("shuffle and sort", ["org.apache.spark.shuffle.", "UnsafeExternalSorter", "UnsafeShuffleWriter",
                          "ExternalSorter", "execution.UnsafeExternalRowSorter"]),
    ("Parquet scan", ["org.apache.parquet.", "datasources.parquet."]),
    ("expression compilation and analysis inside tasks (janino, analyzer)", ["org.codehaus.janino.",
                                                                            "catalyst.analysis.",
                                                                            "catalyst.plans.logical.",
                                                                            "expressions.codegen.CodeGenerator"]),
    ("generated code (scan, filter, project, observe, aggregation)", ["GeneratedClass$GeneratedIterator"]),
    ("compression / serialization", ["io.airlift", "net.jpountz", "com.github.luben", "org.xerial.snappy",
                                     "com.esotericsoftware.kryo", "java.io.ObjectOutputStream"]),
]


def profile_run(name: str, spark, a, source: Path, checkpoint: Path, work: Path, cpu: Cpu, batches: int) -> dict:
    """One run of `name` under Java Flight Recorder; returns where the executor threads' samples fall."""
    if cpu.jvm_pid is None:
        return {"error": "driver JVM pid unknown"}
    jdk_bin = Path(spark.sparkContext._jvm.System.getProperty("java.home")) / "bin"
    jcmd, jfr = jdk_bin / "jcmd", jdk_bin / "jfr"
    if not jcmd.exists() or not jfr.exists():
        return {"error": f"no jcmd/jfr in {jdk_bin}"}
    rec = work / f"{name}.jfr"
    rec.unlink(missing_ok=True)
    subprocess.run([str(jcmd), str(cpu.jvm_pid), "JFR.start", "name=bench", "settings=profile",
                    f"filename={rec}"], check=True, capture_output=True)
    try:
        r = run_query(name, spark, a, source, checkpoint, batches, a.timeout, cpu)
    finally:
        subprocess.run([str(jcmd), str(cpu.jvm_pid), "JFR.stop", "name=bench"], capture_output=True)
    total = 0
    all_samples = 0
    cats = collections.Counter()
    top = collections.Counter()
    incl = collections.Counter()

    def account(thread: str, frames: list[str]) -> None:
        nonlocal total
        if "Executor task" not in thread or not frames:  # JFR keeps a thread's first name: launch or idle worker
            return
        total += 1
        top[frames[0]] += 1
        for f in set(frames):
            if f.startswith("windowagg.") or "encoders.ExpressionEncoder" in f or f.startswith("org.rocksdb."):
                incl[f] += 1
        for f in frames:  # the nearest frame, from the top, that falls in a category
            hit = next((label for label, needles in CATEGORIES if any(n in f for n in needles)), None)
            if hit:
                cats[hit] += 1
                break
        else:
            cats["other"] += 1

    # the text form, read as it is printed (the JSON form of a long recording is too large to load)
    proc = subprocess.Popen([str(jfr), "print", "--stack-depth", "64", "--events", "jdk.ExecutionSample", str(rec)],
                            stdout=subprocess.PIPE, text=True)
    thread, frames, in_stack = "", [], False
    for line in proc.stdout:
        line = line.strip()
        if line.startswith("jdk.ExecutionSample"):
            thread, frames, in_stack = "", [], False
            all_samples += 1
        elif line.startswith("sampledThread = "):
            thread = line.split('"')[1] if '"' in line else line
        elif line.startswith("stackTrace = ["):
            in_stack = True
        elif in_stack and line == "]":
            in_stack = False
            account(thread, frames)
        elif in_stack and line != "...":
            frames.append(line.split("(", 1)[0])
    if proc.wait() != 0:
        raise RuntimeError(f"jfr print failed ({proc.returncode})")
    if total:
        rec.unlink(missing_ok=True)
    share = (lambda c: round(c / total, 4)) if total else (lambda c: None)
    return {
        "competitor": name, "run": {k: v for k, v in r.items() if k != "batches"},
        "executor_samples": total, "all_samples": all_samples, "recording": None if total else str(rec),
        "categories": [{"category": k, "share": share(c)} for k, c in cats.most_common()],
        "top_self": [{"frame": k, "share": share(c)} for k, c in top.most_common(20)],
        "top_inclusive": [{"frame": k, "share": share(c)} for k, c in incl.most_common(25)],
    }


# ---------------------------------------------------------------------------------- results

def summarize(res: dict) -> None:
    by = collections.defaultdict(list)
    for r in res["runs"]:
        if r["kind"] == "timed" and r["status"] in ("ok", "timeout") and r["events_per_s"]:
            by[r["competitor"]].append(r)
    summary = {}
    for comp, runs in by.items():
        eps = [r["events_per_s"] for r in runs]
        med = statistics.median(eps)
        rep = min(runs, key=lambda r: abs(r["events_per_s"] - med))
        summary[comp] = {
            "events_per_s_median": med, "events_per_s": eps, "runs": len(runs),
            "processing_s_median": statistics.median(r["processing_s"] for r in runs),
            "wall_s_median": statistics.median(r["wall_s"] for r in runs),
            "events": rep["events"], "output_rows": rep["output_rows"],
            "ms_per_batch_median": statistics.median(b["trigger_ms"] for b in rep["batches"] if b["input_rows"] > 0),
            "state": flatness(rep["batches"]),
            "state_memory_bytes_max": max(b["state_memory_bytes"] for b in rep["batches"]),
            "own_cpu_s_median": (statistics.median(r["own_cpu_s"] for r in runs)
                                 if all(r.get("own_cpu_s") is not None for r in runs) else None),
            "contended_runs": sum(1 for r in runs if r.get("contended")),
            "max_foreign_cores": max((r.get("foreign_cores") or 0.0) for r in runs),
            "timed_out": any(r["status"] == "timeout" for r in runs),
        }
    ratios = {}
    if "windowagg" in summary:
        w = summary["windowagg"]["events_per_s_median"]
        for other in ("tumbling", "hopping"):
            if other in summary:
                # cost ratio: time per event of windowagg / time per event of the other
                ratios[f"windowagg_vs_{other}"] = summary[other]["events_per_s_median"] / w
                wc, oc = summary["windowagg"]["own_cpu_s_median"], summary[other]["own_cpu_s_median"]
                if wc and oc:
                    # the same in CPU time of this benchmark's processes: less sensitive to other load
                    ratios[f"windowagg_vs_{other}_cpu"] = wc / oc
    res["summary"] = summary
    res["ratios"] = ratios


def write_results(res: dict, tag: str) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    jpath = RESULTS_DIR / f"sliding_streaming-{tag}.json"
    jpath.write_text(json.dumps(res, indent=1, default=str) + "\n")
    lines = ["competitor,kind,rep,status,events,micro_batches,processing_s,wall_s,events_per_s,output_rows,"
             "state_rows_max,state_rows_last,foreign_cores,contended"]
    blines = ["competitor,kind,rep,batch,input_rows,trigger_ms,add_batch_ms,state_rows,state_rows_updated,"
              "state_rows_removed,state_memory_bytes,output_rows,watermark"]
    for r in res["runs"]:
        sr = [b["state_rows"] for b in r["batches"]] or [0]
        eps = "" if r["events_per_s"] is None else f"{r['events_per_s']:.0f}"
        fc = "" if r.get("foreign_cores") is None else f"{r['foreign_cores']:.2f}"
        lines.append(f"{r['competitor']},{r['kind']},{r.get('rep', '')},{r['status'].replace(',', ';')},{r['events']},"
                     f"{r['micro_batches']},{r['processing_s']:.3f},{r['wall_s']:.3f},{eps},{r['output_rows']},"
                     f"{max(sr)},{sr[-1]},{fc},{r.get('contended', '')}")
        for b in r["batches"]:
            blines.append(f"{r['competitor']},{r['kind']},{r.get('rep', '')},{b['batch']},{b['input_rows']},"
                          f"{b['trigger_ms']},{b['add_batch_ms']},{b['state_rows']},{b['state_rows_updated']},"
                          f"{b['state_rows_removed']},{b['state_memory_bytes']},{b['output_rows']},{b['watermark']}")
    jpath.with_suffix(".csv").write_text("\n".join(lines) + "\n")
    (RESULTS_DIR / f"sliding_streaming-{tag}-batches.csv").write_text("\n".join(blines) + "\n")
    return jpath


# ------------------------------------------------------------------------------------- report

def _fmt_int(x) -> str:
    return "–" if x is None else f"{x:,.0f}"


def render_plot(res: dict, img: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {}
    for r in res["runs"]:  # the timed run closest to the median, per competitor
        s = res["summary"].get(r["competitor"])
        if r["kind"] != "timed" or s is None or not r["events_per_s"]:
            continue
        best = runs.get(r["competitor"])
        med = s["events_per_s_median"]
        if best is None or abs(r["events_per_s"] - med) < abs(best["events_per_s"] - med):
            runs[r["competitor"]] = r
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.4))
    for comp in COMPETITORS:
        r = runs.get(comp)
        if r is None:
            continue
        bs = r["batches"]
        xs = [b["batch"] for b in bs]
        ax1.plot(xs, [b["state_rows"] for b in bs], label=comp, marker=".", **STYLE[comp])
        ax2.plot(xs, [b["trigger_ms"] / 1000 for b in bs], label=comp, marker=".", **STYLE[comp])
    w = res["workload"]
    ax1.set_yscale("log")
    ax1.set_xlabel("micro-batch")
    ax1.set_ylabel("state rows (numRowsTotal, all state operators)")
    ax1.set_title("State rows after each micro-batch")
    ax2.set_xlabel("micro-batch")
    ax2.set_ylabel("seconds (triggerExecution)")
    ax2.set_title("Micro-batch processing time")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
    ax1.legend(loc="center right", bbox_to_anchor=(1.0, 0.74))  # between windowagg's and hopping's lines
    ax2.legend(loc="upper right")
    fig.suptitle(f"{w['rows']:,} events, {w['keys']:,} keys, {w['batches']} micro-batches, "
                 f"S = {w['size_s']} s, watermark delay {w['grace_s']:g} s ({res['config']['master']})", fontsize=10)
    fig.tight_layout()
    img.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(img, dpi=110)
    plt.close(fig)


def render_doc(res: dict, json_path: Path, doc: Path = DOC, img: Path = IMG) -> None:
    render_plot(res, img)
    s, ratios, w, m, cfg = res["summary"], res["ratios"], res["workload"], res["machine"], res["config"]
    rel = lambda p: os.path.relpath(p, doc.parent)  # noqa: E731
    L = []
    L.append("# Streaming benchmark: sliding windows against Spark's tumbling and hopping windows\n")
    L.append(f"Generated by `bench/sliding_streaming.py` from `{os.path.relpath(json_path, REPO)}` "
             f"(run started {res['started']}, finished {res['finished']}, git {res['git_rev']}). "
             "Every number below comes from that run.\n")
    L.append("## Targets\n")
    L.append("- **Cost**: windowagg's sliding windows cost at most **1.5×** Spark's tumbling-window aggregation "
             "(same events, same aggregates, same micro-batches).")
    L.append("- **State**: the state rows stay flat over a long run (they follow the window size and the "
             "watermark delay, not the number of events seen).\n")
    L.append("## Machine\n")
    L.append(f"- CPU: {m.get('cpu_model')}, {m.get('cpus_visible')} visible cores, {m.get('memory_gib')} GiB")
    L.append(f"- {m.get('os')}; {m.get('java')}; Spark {m.get('spark')}; Python {m.get('python')}")
    changelog = cfg.get("rocksdb_changelog")
    if changelog in (None, "<unknown>"):
        changelog = "not set (Spark's default)"
    L.append(f"- Spark: `{cfg['master']}`, `spark.sql.shuffle.partitions={cfg['shuffle_partitions']}`, "
             f"driver memory {cfg['driver_memory']}, state store `RocksDBStateStoreProvider` for every query "
             f"(`rocksdb.changelogCheckpointing.enabled`: {changelog}), other RocksDB settings at their defaults")
    if cfg.get("windowagg_jar"):
        L.append(f"- windowagg jar: {cfg['windowagg_jar']['bytes']:,} bytes, built {cfg['windowagg_jar']['mtime']}")
    L.append("")
    L.append("## Method\n")
    L.append(f"- Input: {w['rows']:,} events `(k INT, ts TIMESTAMP, v DOUBLE)` over {w['keys']:,} keys (uniform at "
             f"random), {w['density']:g} events per second per key, in event-time order up to {w['jitter_ms']} ms "
             f"of disorder; written once as {w['batches']} Parquet files of {w['rows_per_batch']:,} events "
             f"({w['event_seconds_per_batch']:g} s of event time each).")
    L.append("- Each query reads the files as a stream with `maxFilesPerTrigger=1` (one file per micro-batch, "
             f"default trigger), `withWatermark(\"ts\", \"{w['grace_s']:g} seconds\")` (the disorder is below the "
             "watermark delay, so no event is late), aggregates `sum(v)`, `count(v)`, `max(v)` per `k` and window, "
             "and writes in append mode to the `noop` sink:")
    L.append("")
    L.append("  | competitor | query |")
    L.append("  |---|---|")
    L.append(f"  | `windowagg` | `groupBy(\"k\", windowagg.window(\"ts\", SlidingWindows.of(\"{w['size_s']} seconds\"), "
             "emit=final))` (transformWithState) |")
    L.append(f"  | `tumbling` | `groupBy(\"k\", window(\"ts\", \"{w['size_s']} seconds\"))` |")
    L.append(f"  | `hopping` | `groupBy(\"k\", window(\"ts\", \"{w['size_s']} seconds\", \"{w['hop_ms']} milliseconds\"))` |")
    L.append("")
    L.append(f"- Each competitor first runs untimed on the first {w['warmup_batches']} files (JIT warm-up); then "
             f"{res['args']['reps']} timed run(s) each, interleaved, each from a fresh checkpoint; the median is "
             "reported. A run ends when every file is read and the trailing no-data micro-batch (the last "
             "watermark move) is done.")
    L.append("- **Events per second** = events / sum of the micro-batches' `durationMs.triggerExecution` "
             "(query progress, no-data batches included). **State rows** = `stateOperators[].numRowsTotal` after "
             "each micro-batch, summed over the query's state operators. For windowagg (0.3.0 on) it counts every "
             "row of its state variables: per key one block of up to 64 partial aggregates per state row (one "
             "partial per distinct time still needed), one progress row (the `finalBefore` point, the timer, the "
             "blocks' keys), and Spark's rows for the pending timer (and the timer index). For Spark's "
             "aggregations it is one row per (key, open window).")
    L.append("- Before each timed run the harness waits for the machine to be quiet and records the CPU other "
             "processes took during the run (`/proc`); runs where that exceeded "
             f"{res['args']['contended']} cores are marked *contended*.\n")
    L.append("## Results\n")
    L.append("| competitor | events/s (median) | processing s | CPU s | ms per micro-batch (median) | output rows | "
             "state rows, 2nd quarter → last quarter (mean) | state rows max | state memory max | contended runs |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for comp in COMPETITORS:
        x = s.get(comp)
        if x is None:
            continue
        st = x["state"]
        growth = "" if st["growth"] is None else f" ({st['growth']:+.1%})"
        L.append(f"| `{comp}` | {_fmt_int(x['events_per_s_median'])}"
                 f"{' (timed out)' if x['timed_out'] else ''} | {x['processing_s_median']:.1f} | "
                 f"{'–' if x.get('own_cpu_s_median') is None else format(x['own_cpu_s_median'], '.1f')} | "
                 f"{x['ms_per_batch_median']:.0f} | {_fmt_int(x['output_rows'])} | "
                 f"{_fmt_int(st['q2_mean'])} → {_fmt_int(st['q4_mean'])}{growth} | {_fmt_int(st['max'])} | "
                 f"{x['state_memory_bytes_max'] / 2**20:.1f} MiB | {x['contended_runs']}/{x['runs']} |")
    L.append("")
    if ratios:
        L.append("Cost of windowagg relative to Spark, per event: processing time (their events/s ÷ windowagg's "
                 "events/s), and CPU time of the benchmark's processes (driver JVM, where local mode runs the "
                 "tasks, and Python), which other load on the machine disturbs less:\n")
        for other in ("tumbling", "hopping"):
            if f"windowagg_vs_{other}" in ratios:
                cpu = ratios.get(f"windowagg_vs_{other}_cpu")
                L.append(f"- vs `{other}`: **{ratios[f'windowagg_vs_{other}']:.2f}×** processing time"
                         + ("" if cpu is None else f", {cpu:.2f}× CPU time"))
        L.append("")
    L.append(f"![State rows and processing time per micro-batch]({rel(img)})\n")
    L.append("## Against the targets\n")
    for line in res.get("verdict", []):
        L.append(f"- {line}")
    L.append("")
    prof = res.get("profile")
    if prof and not prof.get("error"):
        L.append("## Where windowagg's time goes (profile)\n")
        L.append(f"One extra windowagg run (not timed above) over the first {prof['run']['data_batches']} files "
                 f"({prof['run']['events']:,} events) under Java Flight Recorder (`settings=profile`, sampled "
                 f"through `jcmd` on the driver JVM, where local mode runs the tasks): "
                 f"{prof['executor_samples']:,} samples of the executor task threads. Each sample counts for the "
                 "category of the nearest frame, from the top of its stack, that falls in one:\n")
        L.append("| category | share of samples |")
        L.append("|---|---:|")
        for c in prof["categories"]:
            L.append(f"| {c['category']} | {c['share']:.1%} |")
        L.append("")
        L.append("Hottest frames (self time):\n")
        L.append("| frame | share |")
        L.append("|---|---:|")
        for c in prof["top_self"][:12]:
            L.append(f"| `{c['frame']}` | {c['share']:.1%} |")
        L.append("")
        L.append("windowagg, encoder and RocksDB frames by inclusive time (on the stack):\n")
        L.append("| frame | share |")
        L.append("|---|---:|")
        for c in prof["top_inclusive"][:15]:
            L.append(f"| `{c['frame']}` | {c['share']:.1%} |")
        L.append("")
    notes = BENCH_DIR / "sliding_streaming_notes.md"
    if notes.exists():
        L.append(notes.read_text().strip() + "\n")
    L.append("## Reproduce\n")
    L.append("```")
    L.append("bench/run-streaming --quick          # smoke run: 200k events, 100 keys, 10 micro-batches")
    L.append("nohup bench/run-streaming > /dev/null 2>&1 &   # full run; log: bench/results/sliding_streaming-full.log")
    L.append(f".venv/bin/python bench/sliding_streaming.py --report {os.path.relpath(json_path, REPO)}   # re-render this page")
    L.append("```")
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("\n".join(L) + "\n")


def verdict(res: dict) -> list[str]:
    s, ratios = res["summary"], res["ratios"]
    out = []
    if "windowagg_vs_tumbling" in ratios:
        r = ratios["windowagg_vs_tumbling"]
        cpu = ratios.get("windowagg_vs_tumbling_cpu")
        also = "" if cpu is None else f" ({cpu:.2f}× in CPU time)"
        if r <= 1.5:
            out.append(f"Cost: **met**: windowagg takes {r:.2f}× the time of Spark's tumbling aggregation per event"
                       f"{also} (target ≤ 1.5×).")
        else:
            out.append(f"Cost: **missed**: windowagg takes {r:.2f}× the time of Spark's tumbling aggregation per "
                       f"event{also}, {r / 1.5:.1f}× over the 1.5× target.")
    if "windowagg" in s:
        g = s["windowagg"]["state"]["growth"]
        if g is not None:
            flat = abs(g) <= 0.10
            out.append(f"State: **{'met' if flat else 'missed'}**: windowagg's state rows changed by {g:+.1%} "
                       "between the second and the last quarter of the run "
                       f"({'flat within ±10%' if flat else 'more than ±10%'}).")
    return out


# --------------------------------------------------------------------------------------- main

def main(argv=None) -> int:
    a = parse_args(argv)
    if a.report:
        path = Path(a.report)
        res = json.loads(path.read_text())
        summarize(res)
        res["verdict"] = verdict(res)
        path.write_text(json.dumps(res, indent=1, default=str) + "\n")
        render_doc(res, path.resolve())
        log(f"wrote {DOC} and {IMG}")
        return 0

    work = Path(a.work_dir) if a.work_dir else Path(tempfile.mkdtemp(prefix="windowagg-bench-streaming-"))
    work.mkdir(parents=True, exist_ok=True)
    per_batch = -(-a.rows // a.batches)
    log(f"rows={a.rows:,} keys={a.keys} batches={a.batches} ({per_batch:,} events each) density={a.density}/s/key "
        f"S={a.size}s hop={a.size * 1000 // a.hop_divisor}ms grace={a.grace}s reps={a.reps} work={work}")
    spark = build_session(a)
    spark.sparkContext.setLogLevel("ERROR")
    cpu = Cpu(spark)
    res = {
        "benchmark": "sliding_streaming",
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "finished": None,
        "git_rev": git_rev(),
        "args": {k: v for k, v in vars(a).items()},
        "config": {
            "master": a.master, "shuffle_partitions": a.shuffle_partitions, "driver_memory": a.driver_memory,
            "state_store": spark.conf.get("spark.sql.streaming.stateStore.providerClass"),
            "rocksdb_changelog": conf_value(spark, "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"),
            "windowagg_jar": jar_info(),
        },
        "machine": machine_info(spark),
        "workload": {"rows": a.rows, "keys": a.keys, "batches": a.batches, "rows_per_batch": per_batch,
                     "density": a.density, "size_s": a.size, "hop_ms": a.size * 1000 // a.hop_divisor,
                     "grace_s": a.grace, "jitter_ms": a.jitter_ms, "warmup_batches": a.warmup_batches,
                     "event_seconds_per_batch": round(per_batch / (a.keys * a.density), 3)},
        "runs": [],
    }
    log(f"machine: {res['machine']}")
    try:
        t0 = time.perf_counter()
        files = make_input(spark, a, work / "input", a.rows)
        log(f"input: {len(files)} files, {sum(f.stat().st_size for f in files) / 2**20:.1f} MiB "
            f"({time.perf_counter() - t0:.1f}s)")
        link_subset(files, work / "warmup", min(a.warmup_batches, len(files)))

        for comp in a.competitors:
            r = run_query(comp, spark, a, work / "warmup", work / "ck-warmup", min(a.warmup_batches, len(files)),
                          a.timeout, cpu)
            r.update({"kind": "warm-up", "rep": 0})
            res["runs"].append(r)
            log(f"{comp:10s} warm-up: {r['status']} {r['events']:,} events in {r['processing_s']:.1f}s processing "
                f"({r['wall_s']:.1f}s wall)")
            write_results(res, a.tag)

        for rep in range(1, a.reps + 1):
            order = a.competitors if rep % 2 else list(reversed(a.competitors))
            for comp in order:
                if a.quiet_wait > 0:
                    waited, share = cpu.wait_quiet(a.quiet_wait, a.contended)
                    if waited >= 1:
                        log(f"  waited {waited:.0f}s for a quiet machine (other processes at {share:.2f} cores)")
                r = run_query(comp, spark, a, work / "input", work / f"ck-{comp}", len(files), a.timeout, cpu)
                r.update({"kind": "timed", "rep": rep,
                          "contended": r["foreign_cores"] is not None and r["foreign_cores"] > a.contended})
                res["runs"].append(r)
                st = [b["state_rows"] for b in r["batches"]] or [0]
                eps = f"{r['events_per_s']:,.0f}" if r["events_per_s"] else "-"
                fc = "?" if r["foreign_cores"] is None else f"{r['foreign_cores']:.2f}"
                log(f"{comp:10s} rep {rep}: {r['status']} {r['events']:,} events, {r['micro_batches']} micro-batches, "
                    f"{r['processing_s']:.1f}s processing ({r['wall_s']:.1f}s wall) -> {eps} events/s; "
                    f"state rows max {max(st):,} last {st[-1]:,}; output {r['output_rows']:,} rows; "
                    f"other processes {fc} cores{' CONTENDED' if r['contended'] else ''}")
                summarize(res)
                write_results(res, a.tag)

        if a.profile and "windowagg" in a.competitors:
            log("profiling one more windowagg run with Java Flight Recorder ...")
            try:
                n = min(a.profile_batches, len(files))
                link_subset(files, work / "profile", n)
                res["profile"] = profile_run("windowagg", spark, a, work / "profile", work / "ck-profile", work, cpu, n)
                for c in res["profile"].get("categories", [])[:8]:
                    log(f"  {c['share']:6.1%}  {c['category']}")
            except Exception as e:  # the profile is a bonus; the measurements stand without it
                res["profile"] = {"error": str(e).splitlines()[0][:300]}
                log(f"profile failed: {res['profile']['error']}")
    finally:
        res["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        summarize(res)
        res["verdict"] = verdict(res)
        path = write_results(res, a.tag)
        spark.stop()
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    for comp, x in res["summary"].items():
        log(f"{comp:10s} {x['events_per_s_median']:,.0f} events/s; state rows 2nd quarter {x['state']['q2_mean']} "
            f"-> last quarter {x['state']['q4_mean']}")
    for line in res["verdict"]:
        log(line)
    log(f"results: {path}, {path.with_suffix('.csv')}, {RESULTS_DIR / f'sliding_streaming-{a.tag}-batches.csv'}")
    if a.docs:
        render_doc(res, path)
        log(f"wrote {DOC} and {IMG}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
