#!/usr/bin/env python3
"""Streaming state benchmark (issue 52): read_state against Spark's state reader, and the upgrade's cost.
One streaming query's checkpoint is written twice by child processes (this script with
--write-checkpoint) over the same files: by windowagg 0.3.0 (built from its commit in a git worktree,
as dev/make-state-fixtures builds it) and by this checkout's jar. Part 1 reads this checkout's
checkpoint both ways; part 2 restarts both on this checkout's jar, upgraded against native.

Its query, input, parts, checks and method are its page's: bench/state_upgrade_notes.md, rendered
into docs/benchmarks-state.md.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

DOC = report.DOCS / "benchmarks-state.md"
IMG = report.DOCS / "img" / "state_upgrade.png"
NOTES = BENCH_DIR / "state_upgrade_notes.md"  # the page: its prose, {{placeholders}} for the results

OLD_RELEASE = "0.3.0"
OLD_COMMIT = "496818919a38657cc24ec59db83ea12b75753cc2"
VARIANTS = ["upgraded", "native"]  # 0.3.0's checkpoint restarted on this checkout; this checkout's own
READ_TARGET = 2.0  # read_state's time under this many times the state reader's alone (issue 52)
# read_state; the state reader alone, one variable at a time (summed: the target's measure); the same reads in one job
READ_MEASURES = ["read_state", "state_reader", "state_reader_one_job"]


# --------------------------------------------------------------------------------------- args

def parse_args(argv=None) -> argparse.Namespace:
    p = harness.parser(__doc__, "smoke run: 2,000 keys, 2 + 3 micro-batches, 1 rep, no docs (explicit flags win)")
    p.add_argument("--keys", type=int, help="keys, each one row per micro-batch (default 100,000; quick 2,000)")
    p.add_argument("--fill-batches", type=int,
                   help="micro-batches the writers run before the restart (default 3; quick 2)")
    p.add_argument("--restart-batches", type=int,
                   help="micro-batches after the restart, each touching every key (default 4; quick 3)")
    p.add_argument("--size-minutes", type=int, default=10, help="sliding window size S in minutes (default 10)")
    p.add_argument("--delay-seconds", type=int, default=60,
                   help="watermark delay in seconds (default 60: one micro-batch of event time)")
    p.add_argument("--batch-seconds", type=int, default=60,
                   help="event time each micro-batch's rows cover (default 60)")
    p.add_argument("--reps", type=int, help="timed runs of each measure (default 3; quick 1)")
    p.add_argument("--warmup-runs", type=int,
                   help="untimed restart sequences of each checkpoint before the timed ones (default 1; quick 1)")
    p.add_argument("--timeout", type=float, help="seconds before a run is stopped (default 1800; quick 300)")
    p.add_argument("--parts", default="read,upgrade", help="subset of read,upgrade (default both)")
    p.add_argument("--old-dir", help="a folder holding windowagg-0.3.0.jar and python/ of the 0.3.0 release "
                                     "(default: target/bench-state/windowagg-<commit>, built there on first use)")
    p.add_argument("--work-dir", help="input files and checkpoints (default: a fresh folder under /tmp)")
    p.add_argument("--reuse-checkpoints", action="store_true",
                   help="with --work-dir: reuse the input and the checkpoints an earlier run with the same sizes left "
                        "there, instead of writing them again (for developing the measures)")
    harness.add_session_args(p, driver_memory="4g")
    harness.add_contention_args(p, contended=0.3, quiet_wait=120.0, retries=False)
    harness.add_output_args(p, DOC.name)
    # the child mode: write one checkpoint with whichever windowagg is importable (run by the parent)
    p.add_argument("--write-checkpoint", help=argparse.SUPPRESS)
    p.add_argument("--input", help=argparse.SUPPRESS)
    p.add_argument("--emitted", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    harness.defaults(a, keys=(100_000, 2_000), fill_batches=(3, 2), restart_batches=(4, 3), reps=(3, 1),
                     warmup_runs=(1, 1), timeout=(1800.0, 300.0))
    a.parts = harness.subset(p, a.parts, ["read", "upgrade"], "part")
    if len(a.parts) < 2:
        a.docs = False  # the page needs both parts
    if a.restart_batches < 2:
        p.error("--restart-batches: at least 2 (a first micro-batch and a later one)")
    return a


# ------------------------------------------------------------------------------------- input

def write_files(folder: Path, keys: int, first: int, count: int, a, seed: int, mtime0: float) -> list[Path]:
    """Micro-batch files first .. first+count-1: in each, every key once, at a time uniform over that
    micro-batch's `batch_seconds` of event time (whole milliseconds), rows in random order; `v` a multiple
    of 1/1024 below 1,000 (exact sums in any order). Modification times one second apart from `mtime0`,
    the order in which the file source reads them."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for b in range(first, first + count):
        rnd = np.random.default_rng(seed * 1000 + b)
        order = rnd.permutation(keys).astype("int32")
        ms = harness_base_ms() + b * a.batch_seconds * 1000 + rnd.integers(0, a.batch_seconds * 1000, keys)
        v = rnd.integers(0, 1024 * 1000, keys) / 1024.0
        table = pa.table({"k": pa.array(order, pa.int32()),
                          "ts": pa.array(ms * 1000, pa.timestamp("us", tz="UTC")),
                          "v": pa.array(v, pa.float64())})
        path = folder / f"events-{b:05d}.parquet"
        tmp = folder / f".events-{b:05d}.parquet.tmp"
        pq.write_table(table, tmp)
        os.utime(tmp, (mtime0 + b, mtime0 + b))
        os.replace(tmp, path)
        out.append(path)
    return out


def harness_base_ms() -> int:
    """The first micro-batch's start: 2023-11-14T22:13:20 UTC (data.BASE_MS), on a whole minute."""
    return 1_700_000_000_000 - 1_700_000_000_000 % 60_000


# ------------------------------------------------------------------------------------ query

def aggregation(windowagg, df, a, streaming: bool):
    """The benchmark's query: per key, KIP-450 sliding windows of S, sum and count of v. Uses only what
    both releases' Python packages have (window, SlidingWindows.of)."""
    from pyspark.sql import functions as F

    definition = windowagg.SlidingWindows.of(f"{a.size_minutes} minutes")
    if streaming:
        df = df.withWatermark("ts", f"{a.delay_seconds} seconds")
        grouping = windowagg.window("ts", definition, emit="final")
    else:
        grouping = windowagg.window("ts", definition)
    return df.groupBy("k", grouping).agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"))


def progress_rows(p: dict) -> dict:
    """What a micro-batch's progress (as a dict) tells this benchmark: harness.batch_of, each step's
    duration, and the timers windowagg's operator registered, deleted and saw expire."""
    custom = [op.get("customMetrics") or {} for op in p.get("stateOperators") or []]
    return {**harness.batch_of(p), "duration_ms": dict(p["durationMs"]),
            "timers_registered": sum(c.get("numRegisteredTimers", 0) for c in custom),
            "timers_deleted": sum(c.get("numDeletedTimers", 0) for c in custom),
            "timers_expired": sum(c.get("numExpiredTimers", 0) for c in custom)}


# -------------------------------------------------------------------------------- the writers

def write_checkpoint(a) -> int:
    """The child: runs the query over the files in --input (one per micro-batch) from the fresh
    checkpoint --write-checkpoint, emitted windows to Parquet in --emitted, until every file is read and
    the trailing micro-batch without data is done; prints its progress as one JSON line."""
    from pyspark.sql import SparkSession

    import windowagg

    builder = (SparkSession.builder.master(a.master).appName("windowagg-bench-state-writer")
               .config("spark.sql.shuffle.partitions", str(a.shuffle_partitions))
               .config("spark.driver.memory", a.driver_memory)
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.streaming.stateStore.providerClass", harness.ROCKSDB)
               .config("spark.sql.streaming.numRecentProgressUpdates", "100000"))
    for k, v in harness.extra_conf(a).items():
        builder = builder.config(k, v)
    spark = windowagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    files = sorted(Path(a.input).glob("*.parquet"))
    q = (aggregation(windowagg, harness.file_stream(spark, Path(a.input)), a, True)
         .select("k", "window.start", "window.end", "total", "n")
         .writeStream.format("parquet").option("path", a.emitted).option("checkpointLocation", a.write_checkpoint)
         .outputMode("append").start())
    t0 = time.perf_counter()
    try:
        status = harness.wait_for_batches(q, len(files), a.timeout, trailing_wait=30.0)
    finally:
        q.stop()
    wall = time.perf_counter() - t0
    batches = [progress_rows(json.loads(p.json)) for p in q.recentProgress]
    print("RESULT " + json.dumps({"windowagg": windowagg.__version__, "status": status, "wall_s": wall,
                                  "batches": batches}), flush=True)
    spark.stop()
    return 0 if status.startswith("ok") else 1


def old_release(a) -> dict:
    """0.3.0's jar and Python package: --old-dir, or built once from its commit into
    target/bench-state/windowagg-<commit> (a git worktree, `build/sbt spark/package` with this checkout's
    .venv, as dev/make-state-fixtures does)."""
    home = Path(a.old_dir) if a.old_dir else harness.REPO / "target" / "bench-state" / f"windowagg-{OLD_COMMIT[:12]}"
    jar = home / f"windowagg-{OLD_RELEASE}.jar"
    if not jar.exists() or not (home / "python" / "windowagg").is_dir():
        if a.old_dir:
            raise SystemExit(f"--old-dir {home}: no windowagg-{OLD_RELEASE}.jar or python/windowagg there")
        tree = Path(tempfile.mkdtemp(prefix="windowagg-bench-state-old-")) / f"windowagg-{OLD_RELEASE}"
        log(f"building windowagg {OLD_RELEASE} from {OLD_COMMIT[:12]} in {tree} (once; cached in {home}) ...")
        t0 = time.perf_counter()
        subprocess.run(["git", "-C", str(harness.REPO), "worktree", "add", "--detach", str(tree), OLD_COMMIT],
                       check=True, capture_output=True)
        # the same pinned PySpark; that release's dev/python-env (which its build/sbt runs) writes its own
        # record of the pins installed, in another format: this checkout's is put back after the build
        stamp = harness.REPO / ".venv" / ".windowagg-pins"
        pins = stamp.read_text() if stamp.exists() else None
        try:
            (tree / ".venv").symlink_to(harness.REPO / ".venv")
            r = subprocess.run([str(tree / "build" / "sbt"), "spark/package"], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, cwd=tree)
            built = tree / "jvm" / "spark" / "target" / f"windowagg-{OLD_RELEASE}.jar"
            if r.returncode != 0 or not built.exists():
                raise RuntimeError(f"building {OLD_RELEASE} failed ({r.returncode}):\n{r.stdout[-3000:]}\n"
                                   f"{r.stderr[-3000:]}")
            home.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(home / "python", ignore_errors=True)
            shutil.copytree(tree / "python", home / "python", ignore=shutil.ignore_patterns("__pycache__", "jars"))
            shutil.copyfile(built, jar)
        finally:
            if pins is not None:
                stamp.write_text(pins)
            subprocess.run(["git", "-C", str(harness.REPO), "worktree", "remove", "--force", str(tree)],
                           capture_output=True)
            shutil.rmtree(tree.parent, ignore_errors=True)
        log(f"built ({time.perf_counter() - t0:.0f}s)")
    return {"release": OLD_RELEASE, "commit": OLD_COMMIT, "path": str(jar), "python": str(home / "python"),
            "bytes": jar.stat().st_size, "sha256": hashlib.sha256(jar.read_bytes()).hexdigest()}


def run_writer(a, jar: str, python: str, checkpoint: Path, emitted: Path, source: Path, log_path: Path) -> dict:
    """This script's --write-checkpoint in a child process, with `python` first on PYTHONPATH and `jar`
    as WINDOWAGG_JAR (the same interpreter: the same PySpark)."""
    shutil.rmtree(checkpoint, ignore_errors=True)
    shutil.rmtree(emitted, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=python, WINDOWAGG_JAR=jar)
    args = [sys.executable, "-u", str(Path(__file__).resolve()), "--write-checkpoint", str(checkpoint),
            "--input", str(source), "--emitted", str(emitted), "--master", a.master,
            "--shuffle-partitions", str(a.shuffle_partitions), "--driver-memory", a.driver_memory,
            "--size-minutes", str(a.size_minutes), "--delay-seconds", str(a.delay_seconds),
            "--batch-seconds", str(a.batch_seconds), "--timeout", str(a.timeout),
            *[x for c in a.conf for x in ("--conf", c)]]
    t0 = time.perf_counter()
    with open(log_path, "w") as out:
        r = subprocess.run(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(harness.REPO))
    text = log_path.read_text()
    result = next((json.loads(line[7:]) for line in text.splitlines() if line.startswith("RESULT ")), None)
    if r.returncode != 0 or result is None:
        raise RuntimeError(f"the checkpoint writer failed ({r.returncode}); its log {log_path}:\n{text[-4000:]}")
    result["process_s"] = time.perf_counter() - t0
    return result


# ------------------------------------------------------------------------------- part 1: read

def state_variables(spark, checkpoint: Path) -> list[dict]:
    """The state variables of the checkpoint's transformWithState operator, from Spark's `state-metadata`
    source (its operator properties), as {name, type, read}: `read` when read_state reads it (as
    StateReader does: not the sizes of the filing's spans, which hold nothing of a key, nor Spark's own
    timers, `$`...)."""
    rows = spark.read.format("state-metadata").load(str(checkpoint)).collect()
    out = []
    for r in rows:
        props = json.loads(r["operatorProperties"] or "{}")
        for v in props.get("stateVariables", []):
            name = v["stateName"]
            out.append({"operator": r["operatorId"], "operator_name": r["operatorName"], "name": name,
                        "type": v.get("stateVariableType"), "partitions": r["numPartitions"],
                        "read": not name.startswith("$") and name != DUE_KEY_BUCKETS})
    return out


DUE_KEY_BUCKETS = "dueKeyBuckets"  # windowagg's variable of the filing's span sizes (Timers.DueBuckets)


def statestore_df(spark, checkpoint: Path, variable: dict):
    """One state variable read by Spark's state data source; Spark's timers (a `TimerState`, which the
    source reads with readRegisteredTimers, not by name)."""
    reader = (spark.read.format("statestore").option("path", str(checkpoint))
              .option("operatorId", variable["operator"]))
    if variable["type"] == "TimerState":
        return reader.option("readRegisteredTimers", "true").load()
    return reader.option("stateVarName", variable["name"]).load()


def timed(spark, meter: harness.CpuMeter, label: str, make, a) -> dict:
    """Builds the DataFrame `make()` and writes it to the noop sink, timed together (reading the
    checkpoint's metadata when a state DataFrame is analyzed is part of reading it)."""
    spark.sparkContext._jvm.System.gc()
    s0 = meter.sample()
    t0 = time.perf_counter()
    status = "ok"
    try:
        make().write.format("noop").mode("overwrite").save()
    except Exception as e:  # noqa: BLE001
        status = f"error: {str(e).splitlines()[0][:500]}"
    seconds = time.perf_counter() - t0
    c = harness.CpuMeter.between(s0, meter.sample(), seconds)
    return {"label": label, "status": status, "seconds": seconds, "own_cpu_s": c["own_cpu_s"],
            "foreign_cores": c["foreign_cores"],
            "contended": c["foreign_cores"] is not None and c["foreign_cores"] > a.contended}


def read_check(spark, windowagg, a, checkpoint: Path, source: Path, emitted: Path) -> dict:
    """read_state's rows against the open windows computed independently: a batch aggregation over the
    rows fed so far, minus the windows the query emitted; full outer join on (k, start, end)."""
    from pyspark.sql import functions as F

    fed = spark.read.schema(harness.STREAM_SCHEMA).parquet(str(source))
    batch = aggregation(windowagg, fed, a, False).select("k", "window.start", "window.end", "total", "n")
    out = spark.read.parquet(str(emitted)).select("k", "start", "end")
    expected = batch.join(out, ["k", "start", "end"], "left_anti")
    state = windowagg.read_state(spark, str(checkpoint))
    got = state.where(F.col("window").isNotNull()).select("k", "window.start", "window.end", "total", "n")
    le = expected.select("k", "start", "end", F.col("total").alias("et"), F.col("n").alias("en"), F.lit(1).alias("ex"))
    lg = got.select("k", "start", "end", F.col("total").alias("gt"), F.col("n").alias("gn"), F.lit(1).alias("gx"))
    j = le.join(lg, ["k", "start", "end"], "full_outer")

    def count_if(c):
        return F.sum(F.when(c, 1).otherwise(0))
    one_side = F.col("ex").isNull() | F.col("gx").isNull()
    r = j.agg(F.count("ex").alias("expected"), F.count("gx").alias("read"),
              count_if(F.col("gx").isNull()).alias("only_expected"), count_if(F.col("ex").isNull()).alias("only_read"),
              count_if(~one_side & ((F.col("et") != F.col("gt")) | (F.col("en") != F.col("gn")))).alias("values_off"),
              ).collect()[0]
    s = state.agg(F.count(F.lit(1)).alias("rows"), F.countDistinct("k").alias("keys"),
                  count_if(F.col("window").isNull()).alias("no_window"), F.sum("held_rows").alias("held"),
                  F.min("state.keying").alias("keying"), F.min("state.layout").alias("layout"),
                  F.min("state.version").alias("version"), F.max("state.batch_id").alias("batch_id")).collect()[0]
    return {"batch_windows": batch.count(), "emitted_windows": out.count(), "expected_open_windows": r["expected"],
            "read_state_windows": r["read"], "only_expected": r["only_expected"] or 0, "only_read": r["only_read"] or 0,
            "values_off": r["values_off"] or 0,
            "mismatches": (r["only_expected"] or 0) + (r["only_read"] or 0) + (r["values_off"] or 0),
            "read_state_rows": s["rows"], "read_state_keys": s["keys"], "rows_without_window": s["no_window"],
            "held_rows": s["held"], "keying": s["keying"], "layout": s["layout"], "version": s["version"],
            "batch_id": s["batch_id"], "rows_fed": fed.count()}


def part_read(b: protocol.Run, windowagg, meter, checkpoint: Path, source: Path, emitted: Path) -> None:
    spark, a, res, save = b.spark, b.a, b.res, b.save
    variables = state_variables(spark, checkpoint)
    for v in variables:
        v["rows"] = statestore_df(spark, checkpoint, v).count()
    log("state variables: " + ", ".join(f"{v['name']} ({v['type']}, {v['rows']:,} rows)" for v in variables))
    check = read_check(spark, windowagg, a, checkpoint, source, emitted)
    log(f"check: {check}")
    part = res["read"] = {"variables": variables, "check": check, "runs": []}
    save()

    def read_state():
        return timed(spark, meter, "read_state", lambda: windowagg.read_state(spark, str(checkpoint)), a)

    def state_reader():
        """Every variable of the operator, one after the other; the sums are over those read_state reads
        (the same state), the others' times kept beside them."""
        runs = [dict(timed(spark, meter, f"statestore {v['name']}", lambda v=v: statestore_df(spark, checkpoint, v), a),
                     variable=v["name"], read_by_read_state=v["read"]) for v in variables]
        same = [r for r in runs if r["read_by_read_state"]]
        own = [r["own_cpu_s"] for r in same]
        seconds = sum(r["seconds"] for r in same)
        weighted = [(r["foreign_cores"], r["seconds"]) for r in same if r["foreign_cores"] is not None]
        return {"label": "state reader", "status": next((r["status"] for r in runs if r["status"] != "ok"), "ok"),
                "seconds": seconds, "own_cpu_s": None if None in own else sum(own),
                "foreign_cores": sum(f * t for f, t in weighted) / seconds if weighted and seconds else None,
                "all_variables_s": sum(r["seconds"] for r in runs), "variables": runs}

    def one_job():
        """The same variables in one Spark job, as read_state reads them: each variable's columns renamed
        apart, the DataFrames unioned (rows padded with nulls)."""
        from functools import reduce

        from pyspark.sql import functions as F

        def make():
            dfs = []
            for v in variables:
                if v["read"]:
                    df = statestore_df(spark, checkpoint, v)
                    dfs.append(df.select([F.col(c).alias(f"{v['name']}_{c}") for c in df.columns]))
            return reduce(lambda x, y: x.unionByName(y, allowMissingColumns=True), dfs)
        return timed(spark, meter, "state reader, one job", make, a)

    measures = {"read_state": read_state, "state_reader": state_reader, "state_reader_one_job": one_job}
    names = list(measures)
    for rep in range(a.reps + 1):
        kind = "warm-up" if rep == 0 else "timed"
        for name in names[rep % len(names):] + names[:rep % len(names)]:  # each goes first in turn
            r = b.timed_run(meter, lambda: {**measures[name](), "loadavg_after": harness.loadavg()}, part["runs"],
                            quiet=kind == "timed", measure=name, kind=kind, rep=rep)
            fc = "?" if r["foreign_cores"] is None else f"{r['foreign_cores']:.2f}"
            log(f"{name:12s} {kind} {rep}: {r['status'][:200]} {r['seconds']:.2f}s wall, "
                f"{r['own_cpu_s'] or float('nan'):.2f}s CPU, others {fc} cores{' CONTENDED' if r['contended'] else ''}")
    assert check["mismatches"] == 0, \
        f"read_state's windows differ from the open windows computed independently: {check}"


# ---------------------------------------------------------------------------- part 2: upgrade

def restore(pristine: Path, checkpoint: Path) -> None:
    """The checkpoint as its writer left it, at the path it was written at (Spark's operator metadata
    names its schema files by absolute path)."""
    shutil.rmtree(checkpoint, ignore_errors=True)
    shutil.copytree(pristine, checkpoint, symlinks=True)


def restart(spark, windowagg, a, meter, variant: str, checkpoint: Path, source: Path, batches: int) -> dict:
    """Restarts the query from `checkpoint` over `source`, into the noop sink, until its `batches` new
    files are read and the trailing micro-batch without data is done. The CPU of this benchmark's
    processes is sampled whenever a new progress report is seen (0.1 s polling): a micro-batch's CPU
    is the CPU between the report before it (the query's start, for the first) and its own."""
    spark.sparkContext._jvm.System.gc()
    samples = []
    s0 = meter.sample()
    t0 = time.perf_counter()
    q = (aggregation(windowagg, harness.file_stream(spark, source), a, True)
         .writeStream.queryName(f"bench_state_{variant}_{int(time.time() * 1000)}").format("noop")
         .outputMode("append").option("checkpointLocation", str(checkpoint)).start())
    try:
        status = harness.wait_for_batches(q, batches, a.timeout, poll=0.1, trailing_wait=30.0,
                                          on_progress=lambda n: samples.append((n, meter.sample(), time.perf_counter())))
    finally:
        q.stop()
    wall = time.perf_counter() - t0
    total = harness.CpuMeter.between(s0, meter.sample(), wall)
    progress = [progress_rows(json.loads(p.json)) for p in q.recentProgress]
    prev, prev_t, seen = s0, t0, 0
    for n, s, t in samples:  # reports seen together share the CPU since the last look, on the last of them
        for i in range(seen, n):
            if i < n - 1:
                progress[i]["cpu_s"] = None
            else:
                c = harness.CpuMeter.between(prev, s, t - prev_t)
                progress[i]["cpu_s"] = c["own_cpu_s"]
                progress[i]["cpu_foreign_cores"] = c["foreign_cores"]
                progress[i]["cpu_reports"] = n - seen
        prev, prev_t, seen = s, t, n
    first_seen = samples[0][2] - t0 if samples else None
    return {"variant": variant, "status": status, "wall_s": wall, "start_to_first_report_s": first_seen, **total,
            "batches": progress}


def part_upgrade(b: protocol.Run, windowagg, meter, checkpoints: dict, pristine: dict, source: Path) -> None:
    spark, a = b.spark, b.a
    part = b.res["upgrade"] = {"runs": []}
    for rep in range(a.warmup_runs + a.reps):
        kind = "warm-up" if rep < a.warmup_runs else "timed"
        for variant in (VARIANTS if rep % 2 == 0 else list(reversed(VARIANTS))):
            restore(pristine[variant], checkpoints[variant])
            r = b.timed_run(meter, lambda: {**restart(spark, windowagg, a, meter, variant, checkpoints[variant], source,
                                                      a.restart_batches), "loadavg_after": harness.loadavg()},
                            part["runs"], quiet=kind == "timed", kind=kind,
                            rep=rep - a.warmup_runs + 1 if kind == "timed" else rep + 1)
            data = [batch for batch in r["batches"] if batch["input_rows"] > 0]
            fc = "?" if r["foreign_cores"] is None else f"{r['foreign_cores']:.2f}"
            log(f"{variant:8s} {kind} {r['rep']}: {r['status']} {len(r['batches'])} micro-batches, trigger ms "
                f"{[batch['trigger_ms'] for batch in r['batches']]}, rows {[batch['input_rows'] for batch in data]}, "
                f"CPU {[None if batch.get('cpu_s') is None else round(batch['cpu_s'], 1) for batch in r['batches']]}; "
                f"others {fc} cores{' CONTENDED' if r['contended'] else ''}")


# ---------------------------------------------------------------------------------- results

def summarize(res: dict) -> None:
    s = {}
    rd = res.get("read")
    if rd:
        timed_runs = [r for r in rd["runs"] if r["kind"] == "timed" and r["status"] == "ok"]
        by = {m: [r for r in timed_runs if r["measure"] == m] for m in READ_MEASURES}
        read = {}
        for m, runs in by.items():
            read[m] = {"median_s": harness.median([r["seconds"] for r in runs]),
                       "median_cpu_s": harness.median([r["own_cpu_s"] for r in runs]),
                       "times_s": [r["seconds"] for r in runs], "cpu_s": [r["own_cpu_s"] for r in runs],
                       "contended_runs": sum(1 for r in runs if r["contended"]), "runs": len(runs),
                       "max_foreign_cores": max((r["foreign_cores"] or 0.0 for r in runs), default=None)}
        per_var = {}
        for r in by["state_reader"]:
            for v in r["variables"]:
                per_var.setdefault(v["variable"], []).append(v["seconds"])
        read["state_reader"]["per_variable_median_s"] = {k: statistics.median(v) for k, v in per_var.items()}
        read["state_reader"]["all_variables_median_s"] = harness.median(
            [r["all_variables_s"] for r in by["state_reader"]])
        read["ratio"] = harness.ratio(read["read_state"]["median_s"], read["state_reader"]["median_s"])
        read["ratio_cpu"] = harness.ratio(read["read_state"]["median_cpu_s"], read["state_reader"]["median_cpu_s"])
        one = read.get("state_reader_one_job") or {}
        read["ratio_one_job"] = harness.ratio(read["read_state"]["median_s"], one.get("median_s"))
        read["ratio_one_job_cpu"] = harness.ratio(read["read_state"]["median_cpu_s"], one.get("median_cpu_s"))
        read["target"] = READ_TARGET
        read["met"] = None if read["ratio"] is None else read["ratio"] < READ_TARGET
        s["read"] = read
    up = res.get("upgrade")
    if up:
        out = {}
        timed_runs = [r for r in up["runs"] if r["kind"] == "timed" and r["status"].startswith("ok")]
        for variant in VARIANTS:
            runs = [r for r in timed_runs if r["variant"] == variant]
            firsts, laters, first_cpu, later_cpu, trailing, restarts = [], [], [], [], [], []
            for r in runs:
                data = [b for b in r["batches"] if b["input_rows"] > 0]
                if not data:
                    continue
                firsts.append(data[0]["trigger_ms"])
                laters.append(statistics.mean(b["trigger_ms"] for b in data[1:]) if len(data) > 1 else None)
                first_cpu.append(data[0].get("cpu_s"))
                lc = [b.get("cpu_s") for b in data[1:]]
                later_cpu.append(statistics.mean(lc) if lc and None not in lc else None)
                tail = [b for b in r["batches"] if b["input_rows"] == 0]
                trailing.append(tail[-1]["trigger_ms"] if tail else None)
                restarts.append(r["wall_s"])
            out[variant] = {
                "runs": len(runs), "first_ms": harness.median(firsts), "later_ms": harness.median(laters),
                "first_cpu_s": harness.median(first_cpu), "later_cpu_s": harness.median(later_cpu),
                "trailing_ms": harness.median(trailing), "wall_s": harness.median(restarts),
                "first_ms_runs": firsts, "later_ms_runs": laters,
                "first_cpu_runs": first_cpu, "later_cpu_runs": later_cpu,
                "contended_runs": sum(1 for r in runs if r["contended"]),
                "max_foreign_cores": max((r["foreign_cores"] or 0.0 for r in runs), default=None),
            }
        u, n = out.get("upgraded"), out.get("native")
        if u and n:
            out["ratio_first"] = harness.ratio(u["first_ms"], n["first_ms"])
            out["ratio_later"] = harness.ratio(u["later_ms"], n["later_ms"])
            out["ratio_first_cpu"] = harness.ratio(u["first_cpu_s"], n["first_cpu_s"])
            out["ratio_later_cpu"] = harness.ratio(u["later_cpu_s"], n["later_cpu_s"])
        # the same micro-batches in both: rows and watermarks, run by run
        shapes = {}
        for r in up["runs"]:
            shapes.setdefault(r["variant"], set()).add(tuple((b["input_rows"], b["watermark"]) for b in r["batches"]))
        out["identical_batches"] = len({x for v in shapes.values() for x in v}) == 1
        out["batch_shapes"] = {k: [list(x) for x in sorted(v)] for k, v in shapes.items()}
        s["upgrade"] = out
    res["summary"] = s


# ------------------------------------------------------------------------------------- report

def render_plot(res: dict, img: Path) -> None:
    """Left: read_state's median wall time against the state reader's, variable by variable; right: the
    first and the later micro-batches after the restart, upgraded against native."""
    plt = report.pyplot()
    s = res["summary"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    rd = s.get("read")
    if rd:
        per_var = rd["state_reader"].get("per_variable_median_s") or {}
        bottom = 0.0
        colors = ["tab:orange", "tab:olive", "tab:purple", "tab:brown", "tab:pink"]
        for i, v in enumerate(x for x in res["read"]["variables"] if x["read"]):
            sec = per_var.get(v["name"]) or 0.0
            ax1.bar(1, sec, bottom=bottom, width=0.6, color=colors[i % len(colors)], alpha=0.85,
                    label=f"statestore {v['name']}")
            bottom += sec
        total = rd["state_reader"]["median_s"]
        bars = ax1.bar(0, rd["read_state"]["median_s"], width=0.6, color="tab:blue", label="read_state")
        ax1.bar_label(bars, fmt="%.2f s", fontsize=8)
        ax1.annotate(f"{total:.2f} s", (1, bottom), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8)
        target = total * READ_TARGET
        ax1.axhline(target, color="gray", linestyle="--", label=f"target: under {READ_TARGET:g}× the state reader")
        ax1.set_ylim(0, max(target, rd["read_state"]["median_s"]) * 1.35)
        ax1.set_xticks([0, 1], ["read_state", "state reader alone\n(the same variables, summed)"])
        ax1.set_ylabel("median wall time, s (noop sink)")
        ax1.set_title(f"Reading the state of {res['workload']['keys']:,} keys: read_state {rd['ratio']:.2f}× "
                      "the state reader", fontsize=9)
        ax1.legend(fontsize=7, loc="upper left", ncol=2)
        ax1.grid(True, axis="y", alpha=0.3)
    up = s.get("upgrade")
    if up and "ratio_first" in up:
        xs = [0, 1]
        w = 0.38
        top = 0.0
        for off, variant, color in ((-w / 2, "upgraded", "tab:red"), (w / 2, "native", "tab:green")):
            v = up[variant]
            ys = [v["first_ms"] / 1000, v["later_ms"] / 1000]
            top = max(top, *ys)
            bars = ax2.bar([x + off for x in xs], ys, width=w, color=color,
                           label={"upgraded": f"upgraded: {OLD_RELEASE}'s checkpoint (grouped by key)",
                                  "native": "native: this release's checkpoint (grouped by state partition)"}[variant])
            ax2.bar_label(bars, fmt="%.1f s", fontsize=8)
        ax2.set_ylim(0, top * 1.3)
        ax2.set_xticks(xs, [f"first micro-batch after the restart\n(upgraded ÷ native {up['ratio_first']:.2f}×)",
                            f"later micro-batches, mean\n(upgraded ÷ native {up['ratio_later']:.2f}×)"])
        ax2.set_ylabel("median seconds (triggerExecution)")
        ax2.set_title(f"Restarting on this release: {res['workload']['keys']:,} rows per micro-batch, "
                      "every key touched", fontsize=9)
        ax2.legend(fontsize=7, loc="upper right")
        ax2.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    report.save(fig, img)


def fmt_s(x, spec=".2f") -> str:
    return "–" if x is None else format(x, spec)


def render_doc(res: dict, json_path: Path, doc: Path = DOC, img: Path = IMG) -> None:
    render_plot(res, img)
    s, w, cfg = res["summary"], res["workload"], res["config"]
    rd, up = s["read"], s["upgrade"]
    check = res["read"]["check"]
    old = cfg["old_release"]

    def mark(x):
        return " †" if x.get("contended_runs") else ""

    labels = {"read_state": "`read_state(spark, checkpoint)` → noop",
              "state_reader": "state reader alone: each variable read_state reads, `format(\"statestore\")` → noop, "
                              "one after the other, summed",
              "state_reader_one_job": "state reader alone, the same variables in one job (their DataFrames "
                                      "unioned) → noop"}
    read_rows = [[labels[m], f"{fmt_s(rd[m]['median_s'])}{mark(rd[m])}", fmt_s(rd[m]["median_cpu_s"]),
                  ", ".join(f"{x:.2f}" for x in rd[m]["times_s"])] for m in READ_MEASURES if rd.get(m)]
    var_rows = [[f"`{v['name']}`", v["type"], "yes" if v["read"] else "no", f"{v['rows']:,}",
                 fmt_s(rd["state_reader"]["per_variable_median_s"].get(v["name"]))] for v in res["read"]["variables"]]
    upgrade_rows = []
    for variant, label in (("upgraded", f"upgraded: {OLD_RELEASE}'s checkpoint, kept grouped by key"),
                           ("native", "native: this release's checkpoint, grouped by state partition")):
        v = up[variant]
        upgrade_rows.append([label, f"{v['first_ms']:,.0f}{mark(v)}", fmt_s(v["first_cpu_s"], ".1f"),
                             f"{v['later_ms']:,.0f}{mark(v)}", fmt_s(v["later_cpu_s"], ".1f"),
                             "–" if v["trailing_ms"] is None else f"{v['trailing_ms']:,.0f}"])
    upgrade_rows.append(["**upgraded ÷ native**", f"**{up['ratio_first']:.2f}×**",
                         fmt_s(up["ratio_first_cpu"]) + "×", f"**{up['ratio_later']:.2f}×**",
                         fmt_s(up["ratio_later_cpu"]) + "×", ""])
    ratio_rows = [
        ["read_state ÷ state reader alone (wall)", f"**{rd['ratio']:.2f}×**", f"< {READ_TARGET:g}×",
         "**met**" if rd["met"] else "**missed**"],
        ["read_state ÷ state reader alone (CPU)", f"{rd['ratio_cpu']:.2f}×", "", ""],
        ["read_state ÷ state reader, the same variables in one job (wall)", f"{fmt_s(rd.get('ratio_one_job'))}×",
         "", ""],
        ["upgraded first ÷ native first micro-batch (wall)", f"**{up['ratio_first']:.2f}×**", "none set", ""],
        ["upgraded later ÷ native later micro-batches (wall)", f"**{up['ratio_later']:.2f}×**", "none set", ""],
    ]
    # the micro-batches of one timed run of each, for the table of every micro-batch
    per_batch = []
    for r in res["upgrade"]["runs"]:
        if r["kind"] != "timed":
            continue
        for i, b in enumerate(r["batches"]):
            per_batch.append([r["variant"], r["rep"], b["batch"], f"{b['input_rows']:,}", f"{b['trigger_ms']:,}",
                              f"{b['duration_ms'].get('addBatch', 0):,}", fmt_s(b.get("cpu_s"), ".1f"),
                              f"{b['state_rows']:,}", f"{b['timers_registered']:,} / {b['timers_deleted']:,}",
                              f"{b['output_rows']:,}", b["watermark"]])
    foreign = [r["foreign_cores"] for part in ("read", "upgrade") for r in res[part]["runs"]
               if r["kind"] == "timed" and r.get("foreign_cores") is not None]
    writers = res["writers"]
    report.render_page(doc, img, NOTES, {
        "loadavg_start": res["loadavg_start"], "loadavg_end": res.get("loadavg_end") or "?",
        "foreign_median": fmt_s(harness.median(foreign)), "foreign_max": fmt_s(max(foreign) if foreign else None),
        "quiet_wait": f"{res['args']['quiet_wait']:g}",
        "old_jar": (f"windowagg {old['release']} jar (the upgraded checkpoint's writer): built from commit "
                    f"`{old['commit'][:12]}` ({old['bytes']:,} bytes, sha256 `{old['sha256'][:12]}…`)"),
        "keys": f"{w['keys']:,}", "fill_batches": w["fill_batches"], "restart_batches": w["restart_batches"],
        "later_batches": w["restart_batches"] - 1,
        "size_minutes": w["size_minutes"], "delay_seconds": w["delay_seconds"], "batch_seconds": w["batch_seconds"],
        "warmup_runs": res["args"]["warmup_runs"],
        "old_release": OLD_RELEASE, "old_commit": old["commit"][:12],
        "writer_old_s": f"{writers['upgraded']['process_s']:.0f}",
        "writer_new_s": f"{writers['native']['process_s']:.0f}",
        "ratios_table": "\n".join(report.table(["measure", "ratio", "target", "verdict"], "lrrl", ratio_rows)),
        "read_table": "\n".join(report.table(["measure", "median wall s", "median CPU s", "timed runs, s"], "lrrr",
                                             read_rows)),
        "variables_table": "\n".join(report.table(["state variable", "type", "read by read_state", "rows",
                                                   "median s, read alone"], "lllrr", var_rows)),
        "read_ratio_one_job": fmt_s(rd.get("ratio_one_job")),
        "read_ratio_one_job_cpu": fmt_s(rd.get("ratio_one_job_cpu")),
        "read_ratio": f"{rd['ratio']:.2f}", "read_ratio_cpu": f"{rd['ratio_cpu']:.2f}",
        "read_target": f"{READ_TARGET:g}",
        "read_verdict": "met" if rd["met"] else "missed",
        "check_batch": f"{check['batch_windows']:,}", "check_emitted": f"{check['emitted_windows']:,}",
        "check_expected": f"{check['expected_open_windows']:,}", "check_read": f"{check['read_state_windows']:,}",
        "check_mismatches": f"{check['mismatches']:,}", "check_rows": f"{check['read_state_rows']:,}",
        "check_keys": f"{check['read_state_keys']:,}", "check_no_window": f"{check['rows_without_window']:,}",
        "check_fed": f"{check['rows_fed']:,}", "check_keying": check["keying"], "check_layout": check["layout"],
        "check_version": check["version"],
        "upgrade_table": "\n".join(report.table(
            ["checkpoint restarted", "first micro-batch, ms", "its CPU s",
             f"later micro-batches (mean of {w['restart_batches'] - 1}), ms",
             "their CPU s (mean)", "trailing micro-batch without data, ms"], "lrrrrr", upgrade_rows)),
        "ratio_first": f"{up['ratio_first']:.2f}", "ratio_later": f"{up['ratio_later']:.2f}",
        "ratio_first_cpu": fmt_s(up["ratio_first_cpu"]), "ratio_later_cpu": fmt_s(up["ratio_later_cpu"]),
        "identical": "identical" if up["identical_batches"] else "**not identical**",
        "batches_table": "\n".join(report.table(
            ["checkpoint", "rep", "micro-batch", "input rows", "triggerExecution ms", "addBatch ms", "CPU s",
             "state rows", "timers registered / deleted", "output rows", "watermark"], "lrrrrrrrrrl", per_batch)),
        "observations": "\n".join(f"- {line}" for line in observations(res)),
    }, report.run_values("state_upgrade.py", res, [json_path], doc, img, NOTES))


def observations(res: dict) -> list[str]:
    """What the results say beyond the tables, computed from them."""
    s, w = res["summary"], res["workload"]
    up, rd = s["upgrade"], s["read"]
    u, n = up["upgraded"], up["native"]
    keys = w["keys"]
    out = []
    # the conversion alone: the upgraded query's first micro-batch converts every key, its later ones none,
    # and all of them run grouped by key; the difference with the native query is that grouping
    conversion_ms = u["first_ms"] - u["later_ms"]
    conversion_cpu = None if None in (u["first_cpu_s"], u["later_cpu_s"]) else u["first_cpu_s"] - u["later_cpu_s"]
    share = conversion_ms / u["later_ms"]
    cost = ("within a micro-batch's noise" if abs(share) < 0.1 else
            f"{conversion_ms:,.0f} ms, {conversion_ms * 1000 / keys:,.1f} µs per key"
            + ("" if conversion_cpu is None else f" ({conversion_cpu:,.1f} s of CPU)"))
    out.append(f"**The conversion** costs {cost}: the upgraded query's first micro-batch, which converts every key, "
               f"took {u['first_ms']:,.0f} ms, {share:+.0%} against its later ones ({u['later_ms']:,.0f} ms), which "
               "convert none. It is paid once: each key is converted the first time a micro-batch reads it. What "
               f"makes the upgraded query's first micro-batch {up['ratio_first']:.2f}× the native one's is its "
               "grouping by key, below.")

    def timers(variant):
        regs, dels = [], []
        for r in res["upgrade"]["runs"]:
            if r["kind"] == "timed" and r["variant"] == variant:
                later = [b for b in r["batches"] if b["input_rows"] > 0][1:]
                regs += [b["timers_registered"] for b in later]
                dels += [b["timers_deleted"] for b in later]
        return harness.median(regs), harness.median(dels)
    (ur, ud), (nr, nd) = timers("upgraded"), timers("native")
    if None not in (ur, ud, nr, nd):
        out.append(f"**After the conversion**, the upgraded query stays grouped by key, as Spark's timers require: "
                   f"in a later micro-batch it registers {ur:,.0f} and deletes {ud:,.0f} of Spark's timers (median), "
                   f"one per key, where the native query, grouped by state partition, registers {nr:,.0f} and deletes "
                   f"{nd:,.0f}. "
                   f"Its later micro-batches take {up['ratio_later']:.2f}× the native ones' time "
                   f"({u['later_ms']:,.0f} against {n['later_ms']:,.0f} ms); moving such a query onto the grouping by "
                   "state partition takes a new checkpoint location.")
    read_vars = sum(1 for v in res["read"]["variables"] if v["read"])
    out.append(f"**Reading**: read_state gathers each key's entries across the {read_vars} "
               f"variables it reads and decodes them with the kind's own codecs, then evaluates every open window's "
               f"aggregates; it took {rd['read_state']['median_s']:.2f} s against "
               f"{rd['state_reader']['median_s']:.2f} s for "
               f"Spark's reader alone on the same variables ({rd['ratio']:.2f}×).")
    return out


# --------------------------------------------------------------------------------------- run

def prepare(a) -> dict:
    """Before the session: the 0.3.0 release (built on first use) and the load average."""
    return {"old_release": old_release(a), "loadavg_start": harness.loadavg()}


def run(b: protocol.Run) -> None:
    a, spark, res, save = b.a, b.spark, b.res, b.save
    old = b.prepared["old_release"]
    work = Path(a.work_dir) if a.work_dir else Path(tempfile.mkdtemp(prefix="windowagg-bench-state-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"keys={a.keys:,} fill={a.fill_batches} restart={a.restart_batches} S={a.size_minutes} min "
        f"delay={a.delay_seconds}s reps={a.reps} work={work}")
    import windowagg

    meter = harness.CpuMeter(spark)
    res["config"]["old_release"] = old
    res.update({"loadavg_start": b.prepared["loadavg_start"],
                "workload": {"keys": a.keys, "fill_batches": a.fill_batches, "restart_batches": a.restart_batches,
                             "size_minutes": a.size_minutes, "delay_seconds": a.delay_seconds,
                             "batch_seconds": a.batch_seconds, "rows_per_batch": a.keys}})
    try:
        source = work / "input"
        checkpoints = {v: work / f"ck-{v}" for v in VARIANTS}
        emitted = {v: work / f"emitted-{v}" for v in VARIANTS}
        pristine = {v: work / f"pristine-{v}" for v in VARIANTS}
        written = work / "writers.json"
        sizes = {k: res["workload"][k] for k in ("keys", "fill_batches", "restart_batches", "size_minutes",
                                                 "delay_seconds", "batch_seconds")}
        earlier = json.loads(written.read_text()) if a.reuse_checkpoints and written.exists() else None
        if earlier and earlier["sizes"] == sizes and earlier["seed"] == a.seed:
            log(f"reusing the input and checkpoints in {work}")
            res["writers"] = earlier["writers"]
            res["reused_checkpoints"] = True
        else:
            shutil.rmtree(source, ignore_errors=True)
            written.unlink(missing_ok=True)
            mtime0 = time.time() - 1000
            t0 = time.perf_counter()
            write_files(source, a.keys, 0, a.fill_batches, a, a.seed, mtime0)
            log(f"input: {a.fill_batches} files of {a.keys:,} rows ({time.perf_counter() - t0:.1f}s)")
            new_jar = os.environ["WINDOWAGG_JAR"]  # the session's private copy of this checkout's jar
            new_python = str(Path(windowagg.__file__).resolve().parent.parent)
            res["writers"] = {}
            writers = (("upgraded", old["path"], old["python"]), ("native", new_jar, new_python))
            for variant, jar, python in writers:
                log(f"writing the {variant} checkpoint with {jar} ...")
                r = run_writer(a, jar, python, checkpoints[variant], emitted[variant], source,
                               work / f"writer-{variant}.log")
                res["writers"][variant] = r
                log(f"  windowagg {r['windowagg']}: {r['status']}, {len(r['batches'])} micro-batches, trigger ms "
                    f"{[b['trigger_ms'] for b in r['batches']]} ({r['process_s']:.0f}s)")
                restore(checkpoints[variant], pristine[variant])
                save()
            write_files(source, a.keys, a.fill_batches, a.restart_batches, a, a.seed, mtime0)
            written.write_text(json.dumps({"sizes": sizes, "seed": a.seed, "writers": res["writers"]}))
        for variant in VARIANTS:
            restore(pristine[variant], checkpoints[variant])
        if "read" in a.parts:
            part_read(b, windowagg, meter, checkpoints["native"], source_subset(source, work / "fed", a.fill_batches),
                      emitted["native"])
        if "upgrade" in a.parts:
            part_upgrade(b, windowagg, meter, checkpoints, pristine, source)
    finally:
        res["loadavg_end"] = harness.loadavg()
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)


def summary(res: dict) -> None:
    s = res["summary"]
    if "read" in s:
        rd = s["read"]
        log(f"read_state {rd['read_state']['median_s']:.2f}s vs state reader {rd['state_reader']['median_s']:.2f}s: "
            f"{rd['ratio']:.2f}× (target < {READ_TARGET:g}×)")
    if "upgrade" in s and "ratio_first" in s["upgrade"]:
        u, up_, nat = s["upgrade"], s["upgrade"]["upgraded"], s["upgrade"]["native"]
        log(f"first micro-batch: upgraded {up_['first_ms']:.0f} ms vs native {nat['first_ms']:.0f} ms "
            f"({u['ratio_first']:.2f}×); later: {up_['later_ms']:.0f} vs {nat['later_ms']:.0f} ms "
            f"({u['ratio_later']:.2f}×); identical micro-batches: {u['identical_batches']}")


def source_subset(source: Path, folder: Path, n: int) -> Path:
    """The first n files of `source` (the rows fed before the restart), hard-linked into `folder`."""
    harness.link_subset(sorted(source.glob("*.parquet")), folder, n)
    return folder


BENCHMARK = protocol.Benchmark(
    "state_upgrade", "windowagg-bench-state-upgrade", parse_args, run, render_doc, DOC, IMG, results={"finished": None},
    summary=summary, summarize=summarize, indent=1, prepare=prepare,
    start=lambda a: {"config": harness.stream_config, "streaming": True, "log_level": "ERROR"})
rerender = BENCHMARK.rerender


def main(argv=None) -> int:
    a = parse_args(argv)
    return write_checkpoint(a) if a.write_checkpoint else BENCHMARK.main_parsed(a)


if __name__ == "__main__":
    sys.exit(main())
