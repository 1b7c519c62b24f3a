#!/usr/bin/env python3
"""Session-window benchmark: windowagg KIP-94 session windows against Spark's `session_window`.

One process, one SparkSession (windowagg.session: extension + RocksDB state store), local[2].

Input generator (same for batch and streaming): key k's events form bursts. Each event's distance
to the previous event of its key is, with probability 1/--mean-session (default 1/50), a "break"
uniform in [gap + 1 s, 10 * gap] (gap = 30 s), else uniform in [1 ms, 5 s], in whole
milliseconds; timestamps are the running sum per key. So sessions have a geometric number of
rows, mean 50 (from 1 to a few hundred), and no two consecutive events of a key are exactly the
gap apart, so windowagg (merges distances <= gap) and Spark (merges distances < gap) find the same
sessions; Spark is nevertheless given gap + 1 microsecond, the exact mapping.

Batch: the input (--rows, default 4M, --keys 1000) is cached and shuffled; both competitors compute
sum, count, max of v per (k, session) and write to the `noop` sink. One untimed warm-up each, then
--reps timed runs (interleaved), medians. Once, untimed: both session counts.

Streaming: the first --stream-rows events (default 1M; --keys keys) in event-time order, written as
--files Parquet files; each competitor reads them with maxFilesPerTrigger=1, withWatermark(ts,
--watermark), append mode, noop sink. Events/s = events / sum(triggerExecution); state rows per
micro-batch = sum of stateOperators[].numRowsTotal. One warm-up on the first few files, then
--stream-reps timed runs each.

/proc/loadavg and the CPU other processes used (from /proc/stat) are recorded around every run.
Results: bench/results/sessions-<tag>.json, sessions-<tag>.csv, sessions-<tag>-batches.csv.
Run:  .venv/bin/python bench/sessions.py [--quick]
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
# helpers from the sliding benchmarks (both import without side effects)
from sliding_batch import Runner, machine_info, git_rev  # noqa: E402
from sliding_streaming import Cpu, ROCKSDB  # noqa: E402

REPO = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
GAP_S = 30
COMPETITORS = ["windowagg", "spark"]

_T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - _T0:8.1f}s] {msg}", flush=True)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: 200k rows, 100 keys, 100k streamed, 2 reps")
    p.add_argument("--rows", type=int)
    p.add_argument("--keys", type=int)
    p.add_argument("--mean-session", type=float, default=50.0)
    p.add_argument("--reps", type=int)
    p.add_argument("--stream-rows", type=int)
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--warmup-files", type=int, default=3)
    p.add_argument("--stream-reps", type=int, default=1)
    p.add_argument("--watermark", default="10 seconds")
    p.add_argument("--stream-timeout", type=float, default=420.0)
    p.add_argument("--skip-streaming", action="store_true")
    p.add_argument("--skip-batch", action="store_true")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--tag")
    a = p.parse_args(argv)
    q = a.quick
    a.rows = a.rows or (200_000 if q else 4_000_000)
    a.keys = a.keys or (100 if q else 1000)
    a.reps = a.reps or (2 if q else 3)
    a.stream_rows = a.stream_rows or (100_000 if q else 1_000_000)
    if q:
        a.files = min(a.files, 10)
    a.tag = a.tag or ("quick" if q else "full")
    return a


def build_session(a):
    import windowagg
    conf = {
        "spark.driver.memory": a.driver_memory,
        "spark.sql.shuffle.partitions": str(a.shuffle_partitions),
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.numRecentProgressUpdates": "100000",
    }
    jar = os.environ.get("WINDOWAGG_JAR") or "/tmp/windowagg-latest.jar"
    if Path(jar).exists():
        # private copy: /tmp/windowagg-latest.jar may be replaced by a build while we run
        copy = Path(f"/tmp/windowagg-bench-sessions-{os.getpid()}.jar")
        shutil.copyfile(jar, copy)
        os.environ["WINDOWAGG_JAR"] = str(copy)
        a.jar_source = {"path": jar, "bytes": Path(jar).stat().st_size,
                        "mtime": dt.datetime.fromtimestamp(Path(jar).stat().st_mtime, dt.timezone.utc)
                        .isoformat(timespec="seconds")}
    log(f"windowagg.session, jar {windowagg.jar_path()}")
    return windowagg.session(app_name="windowagg-bench-sessions", master=a.master, config=conf)


# ------------------------------------------------------------------------------ the workload

def events(spark, rows: int, keys: int, mean_session: float, seed: int):
    """k, i (index within key), ts, v -- see the module docstring."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    base_ms = 1_700_000_000_000
    p_break = 1.0 / mean_session
    small = F.lit(1) + F.floor(F.rand(seed + 1) * 4999)                       # 1 ms .. 5 s
    big = F.lit((GAP_S + 1) * 1000) + F.floor(F.rand(seed + 2) * (9 * GAP_S - 1) * 1000)  # gap+1 s .. 10 gap
    d = (spark.range(rows, numPartitions=8)
         .select((F.col("id") % keys).cast("int").alias("k"), (F.col("id") / keys).cast("long").alias("i"))
         .withColumn("delta", F.when(F.col("i") == 0, F.lit(0))
                     .when(F.rand(seed) < p_break, big).otherwise(small).cast("long"))
         .withColumn("ts_ms", F.lit(base_ms) + F.sum("delta").over(
             Window.partitionBy("k").orderBy("i").rowsBetween(Window.unboundedPreceding, 0)))
         .select("k", "i", F.timestamp_millis("ts_ms").alias("ts"),
                 F.round(F.rand(seed + 3) * 1000.0, 3).alias("v")))
    return d


AGG_NAMES = ["sum_v", "count_v", "max_v"]


def query(name: str, df):
    from pyspark.sql import functions as F
    import windowagg
    from windowagg import SessionWindows
    aggs = [F.sum("v").alias("sum_v"), F.count("v").alias("count_v"), F.max("v").alias("max_v")]
    if name == "windowagg":
        return df.groupBy("k", windowagg.window("ts", SessionWindows.withInactivityGap(f"{GAP_S} seconds"))).agg(*aggs)
    if name == "spark":
        return df.groupBy("k", F.session_window("ts", f"{GAP_S} seconds 1 microsecond")).agg(*aggs)
    raise ValueError(name)


# ---------------------------------------------------------------------------------- batch

def run_batch(spark, a, res, save):
    from pyspark.sql import functions as F
    log(f"batch: building input {a.rows:,} rows, {a.keys} keys ...")
    t0 = time.perf_counter()
    df = (events(spark, a.rows, a.keys, a.mean_session, a.seed).drop("i")
          .orderBy(F.rand(a.seed + 9)).repartition(a.shuffle_partitions).cache())
    n = df.count()
    log(f"batch: input cached, {n:,} rows ({time.perf_counter() - t0:.1f}s)")
    b = res["batch"] = {"rows": n, "keys": a.keys, "cells": {}, "runs": []}

    # once, untimed: both session counts (and rows per session)
    t0 = time.perf_counter()
    counts = {}
    for c in COMPETITORS:
        r = query(c, df).agg(F.count("*").alias("sessions"), F.sum("count_v").alias("rows"),
                             F.avg("count_v").alias("mean"), F.min("count_v").alias("min"),
                             F.max("count_v").alias("max"),
                             F.expr("percentile_approx(count_v, array(0.1, 0.5, 0.9, 0.99))").alias("pct"),
                             F.sum("sum_v").alias("sum_all")).collect()[0]
        counts[c] = {"sessions": r["sessions"], "rows": r["rows"], "mean_rows": r["mean"],
                     "min_rows": r["min"], "max_rows": r["max"], "p10_50_90_99": list(r["pct"]),
                     "sum_of_sum_v": r["sum_all"]}
        log(f"batch check {c}: {counts[c]}")
    b["check"] = counts
    b["check"]["same_session_count"] = counts["windowagg"]["sessions"] == counts["spark"]["sessions"]
    log(f"batch check: same number of sessions: {b['check']['same_session_count']} "
        f"({time.perf_counter() - t0:.1f}s)")
    save()

    runner = Runner(spark, timeout=600.0)

    def one(c, kind):
        la0 = loadavg()
        r = runner.run(c, query(c, df))
        r.update({"competitor": c, "kind": kind, "loadavg_before": la0, "loadavg_after": loadavg(),
                  "foreign_cores": (r["foreign_cpu"] / r["seconds"]) if r["foreign_cpu"] is not None else None})
        b["runs"].append(r)
        log(f"batch {c:9s} {kind}: {r['status']} {r['seconds']:.2f}s  loadavg {la0} -> {r['loadavg_after']}, "
            f"other processes {r['foreign_cores'] or 0:.2f} cores")
        save()
        return r

    for c in COMPETITORS:
        one(c, "warm-up")
    for i in range(a.reps):
        for c in COMPETITORS:
            one(c, f"rep {i + 1}")
    for c in COMPETITORS:
        ts = [r["seconds"] for r in b["runs"] if r["competitor"] == c and r["kind"] != "warm-up" and r["status"] == "ok"]
        fc = [r["foreign_cores"] for r in b["runs"] if r["competitor"] == c and r["kind"] != "warm-up"]
        b["cells"][c] = {"times_s": ts, "median_s": statistics.median(ts) if ts else None,
                         "median_foreign_cores": statistics.median([x for x in fc if x is not None]) if fc else None}
        log(f"batch {c}: median {b['cells'][c]['median_s']} of {[round(x, 2) for x in ts]}")
    w, s = b["cells"]["windowagg"]["median_s"], b["cells"]["spark"]["median_s"]
    b["ratio_windowagg_over_spark"] = (w / s) if w and s else None
    save()
    df.unpersist()


# ------------------------------------------------------------------------------ streaming

def make_files(spark, a, folder: Path) -> list[Path]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    staging = folder.with_name(folder.name + "-staging")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    per_file = -(-a.stream_rows // a.files)
    d = events(spark, a.stream_rows, a.keys, a.mean_session, a.seed)
    (d.withColumn("n", F.row_number().over(Window.orderBy("ts", "k")) - 1)
     .withColumn("batch", (F.col("n") / per_file).cast("int"))
     .repartition(4, "batch").sortWithinPartitions("batch", "n")
     .select("batch", "k", "ts", "v")
     .write.partitionBy("batch").parquet(str(staging)))
    folder.mkdir(parents=True)
    files = []
    first = time.time() - a.files - 10
    for bi in range(a.files):
        parts = sorted(glob.glob(str(staging / f"batch={bi}" / "*.parquet")))
        if len(parts) != 1:
            raise RuntimeError(f"expected one file for batch {bi}, found {len(parts)}")
        t = folder / f"events-{bi:05d}.parquet"
        os.replace(parts[0], t)
        os.utime(t, (first + bi, first + bi))
        files.append(t)
    shutil.rmtree(staging, ignore_errors=True)
    return files


def stream_query(name, spark, a, source: Path):
    ev = (spark.readStream.schema("k INT, ts TIMESTAMP, v DOUBLE").option("maxFilesPerTrigger", 1)
          .parquet(str(source)).withWatermark("ts", a.watermark))
    return query(name, ev)


def run_stream(name, spark, a, source: Path, checkpoint: Path, expected: int, cpu: Cpu) -> dict:
    shutil.rmtree(checkpoint, ignore_errors=True)
    df = stream_query(name, spark, a, source)
    spark.sparkContext._jvm.System.gc()
    la0 = loadavg()
    s0 = cpu.sample()
    t0 = time.perf_counter()
    q = (df.writeStream.queryName(f"sess_{name}_{int(time.time() * 1000)}").format("noop")
         .outputMode("append").option("checkpointLocation", str(checkpoint)).start())
    status = "ok"
    seen = t0
    try:
        while True:
            if q.exception() is not None:
                status = f"error: {str(q.exception()).splitlines()[0][:300]}"
                break
            pr = q.recentProgress
            data = [p for p in pr if p["numInputRows"] > 0]
            done = len(data) >= expected
            if done and pr and pr[-1]["numInputRows"] == 0 and len(pr) > len(data):
                break
            if done and time.perf_counter() > seen + 20:
                break
            if not done:
                seen = time.perf_counter()
            if time.perf_counter() > t0 + a.stream_timeout:
                status = "timeout"
                break
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        pr = q.recentProgress
    finally:
        q.stop()
    c = Cpu.between(s0, cpu.sample(), wall)
    batches = []
    for p in pr:
        ops = p.get("stateOperators") or []
        batches.append({
            "batch": p["batchId"], "input_rows": p["numInputRows"],
            "trigger_ms": p["durationMs"].get("triggerExecution", 0),
            "state_rows": sum(op.get("numRowsTotal", 0) for op in ops),
            "state_memory_bytes": sum(op.get("memoryUsedBytes", 0) for op in ops),
            "output_rows": (p.get("sink") or {}).get("numOutputRows", -1),
            "operator": ",".join(str(op.get("operatorName")) for op in ops),
        })
    ev = sum(x["input_rows"] for x in batches)
    ms = sum(x["trigger_ms"] for x in batches)
    return {"competitor": name, "status": status, "wall_s": wall, "events": ev, "micro_batches": len(batches),
            "processing_s": ms / 1000.0, "events_per_s": ev / (ms / 1000.0) if ms else None,
            "output_rows": sum(max(x["output_rows"], 0) for x in batches),
            "loadavg_before": la0, "loadavg_after": loadavg(), "batches": batches, **c}


def run_streaming(spark, a, res, save):
    work = Path(f"/tmp/windowagg-bench-sessions-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log(f"streaming: writing {a.stream_rows:,} events as {a.files} files ...")
    t0 = time.perf_counter()
    files = make_files(spark, a, work / "all")
    warm = work / "warm"
    warm.mkdir()
    for f in files[:a.warmup_files]:
        os.link(f, warm / f.name)
        st = f.stat()
        os.utime(warm / f.name, (st.st_mtime, st.st_mtime))
    log(f"streaming: files written ({time.perf_counter() - t0:.1f}s)")
    s = res["streaming"] = {"events": a.stream_rows, "files": a.files, "watermark": a.watermark, "runs": []}
    cpu = Cpu(spark)
    for c in COMPETITORS:
        r = run_stream(c, spark, a, warm, work / f"ck-warm-{c}", a.warmup_files, cpu)
        log(f"streaming {c:9s} warm-up: {r['status']} {r['wall_s']:.1f}s")
    for i in range(a.stream_reps):
        for c in COMPETITORS:
            r = run_stream(c, spark, a, work / "all", work / f"ck-{c}-{i}", a.files, cpu)
            r["kind"] = f"rep {i + 1}"
            s["runs"].append(r)
            st = [x["state_rows"] for x in r["batches"] if x["input_rows"] > 0]
            log(f"streaming {c:9s} rep {i + 1}: {r['status']} {r['events']:,} events, {r['micro_batches']} batches, "
                f"{r['processing_s']:.1f}s processing -> {r['events_per_s'] or 0:,.0f} ev/s; output {r['output_rows']:,}; "
                f"state rows per data batch {st}; loadavg {r['loadavg_before']} -> {r['loadavg_after']}, "
                f"other processes {r['foreign_cores'] or 0:.2f} cores")
            save()
    s["cells"] = {}
    for c in COMPETITORS:
        rs = [r for r in s["runs"] if r["competitor"] == c and r["status"] == "ok"]
        eps = [r["events_per_s"] for r in rs if r["events_per_s"]]
        st = [x["state_rows"] for r in rs[-1:] for x in r["batches"] if x["input_rows"] > 0]
        n = len(st)
        s["cells"][c] = {"events_per_s": eps, "median_events_per_s": statistics.median(eps) if eps else None,
                         "state_rows_max": max(st) if st else None,
                         "state_rows_q2_mean": statistics.mean(st[n // 4:n // 2]) if n >= 4 else None,
                         "state_rows_q4_mean": statistics.mean(st[3 * n // 4:]) if n >= 4 else None,
                         "output_rows": rs[-1]["output_rows"] if rs else None}
    w, sp = s["cells"]["windowagg"]["median_events_per_s"], s["cells"]["spark"]["median_events_per_s"]
    s["ratio_windowagg_over_spark_events_per_s"] = (w / sp) if w and sp else None
    save()
    shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------------------------ output

def write(res, tag):
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    j = RESULTS_DIR / f"sessions-{tag}.json"
    tmp = j.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=2, default=str) + "\n")
    tmp.replace(j)
    lines = ["part,competitor,kind,status,seconds_or_processing_s,events_per_s,foreign_cores,loadavg_before,loadavg_after"]
    for r in (res.get("batch") or {}).get("runs", []):
        lines.append(f"batch,{r['competitor']},{r['kind']},{r['status'][:40]},{r['seconds']:.3f},,"
                     f"{r['foreign_cores'] or 0:.2f},{r['loadavg_before']},{r['loadavg_after']}")
    for r in (res.get("streaming") or {}).get("runs", []):
        lines.append(f"streaming,{r['competitor']},{r['kind']},{r['status'][:40]},{r['processing_s']:.3f},"
                     f"{r['events_per_s'] or 0:.0f},{r['foreign_cores'] or 0:.2f},{r['loadavg_before']},{r['loadavg_after']}")
    (RESULTS_DIR / f"sessions-{tag}.csv").write_text("\n".join(lines) + "\n")
    bl = ["competitor,kind,batch,input_rows,trigger_ms,state_rows,state_memory_bytes,output_rows"]
    for r in (res.get("streaming") or {}).get("runs", []):
        for x in r["batches"]:
            bl.append(f"{r['competitor']},{r['kind']},{x['batch']},{x['input_rows']},{x['trigger_ms']},"
                      f"{x['state_rows']},{x['state_memory_bytes']},{x['output_rows']}")
    (RESULTS_DIR / f"sessions-{tag}-batches.csv").write_text("\n".join(bl) + "\n")
    return j


def main(argv=None):
    a = parse_args(argv)
    a.jar_source = None
    spark = build_session(a)
    spark.sparkContext.setLogLevel("FATAL")
    res = {"benchmark": "sessions", "tag": a.tag,
           "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
           "git": git_rev(), "args": {k: v for k, v in vars(a).items()},
           "generator": {"gap_s": GAP_S, "spark_gap": f"{GAP_S} seconds 1 microsecond",
                         "mean_rows_per_session": a.mean_session,
                         "small_distance_ms": [1, 4999], "break_distance_ms": [(GAP_S + 1) * 1000, 10 * GAP_S * 1000]},
           "machine": machine_info(spark), "loadavg_start": loadavg()}
    res["config"] = {k: spark.conf.get(k) for k in ["spark.sql.shuffle.partitions",
                                                     "spark.sql.streaming.stateStore.providerClass",
                                                     "spark.sql.adaptive.enabled"]}
    log(f"machine {res['machine']}; loadavg {res['loadavg_start']}")

    def save():
        write(res, a.tag)

    save()
    if not a.skip_batch:
        run_batch(spark, a, res, save)
    if not a.skip_streaming:
        run_streaming(spark, a, res, save)
    res["loadavg_end"] = loadavg()
    res["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    p = write(res, a.tag)
    log(f"results: {p}")
    spark.stop()
    j = os.environ.get("WINDOWAGG_JAR", "")
    if j.startswith("/tmp/windowagg-bench-sessions-"):
        Path(j).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
