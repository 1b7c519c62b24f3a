#!/usr/bin/env python3
"""End-to-end latency: windowagg in real-time and micro-batch mode, Spark's window() and Kafka Streams, on a
real Kafka broker on loopback. The load and the measurement run in a JVM of their own (bench/kafka-streams,
LoadAndMeasure); the Spark queries run one at a time in this process's session, Kafka Streams as a child JVM.

Its systems under test, load, rates, what sustaining a rate means and the CPU it reads are its page's:
bench/latency_notes.md, rendered into docs/benchmarks-latency.md by a full run (under DIR with
--docs DIR). Re-render: --report JSON [--docs DIR].
"""
from __future__ import annotations

import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "dev"))
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

JAVA_DIR = BENCH_DIR / "kafka-streams"
DOC_NAME = "benchmarks-latency.md"
IMG_NAME = "latency.png"
NOTES = BENCH_DIR / "latency_notes.md"
RESULTS_NAME = "latency"  # bench/results/latency-<tag>.json; the results' "benchmark" field names this script
MAIN = "windowagg.bench.latency."

VARIANTS = {
    "wa-rt": {"engine": "windowagg", "trigger": "realtime", "label": "windowagg real-time"},
    "wa-mb": {"engine": "windowagg", "trigger": "default", "label": "windowagg micro-batch"},
    "wa-mb100": {"engine": "windowagg", "trigger": "100ms", "label": "windowagg micro-batch 100 ms"},
    "spark-rt": {"engine": "spark", "trigger": "realtime", "label": "Spark window() real-time"},
    "spark-mb": {"engine": "spark", "trigger": "default", "label": "Spark window() micro-batch"},
    "kstreams": {"engine": "kstreams", "trigger": None, "label": "Kafka Streams"},
}
KINDS = ["sliding", "tumbling"]
TARGET_P99_MS = 100  # windowagg real-time p99 at 10k events/s
TARGET_RATE = 10_000
TARGET_VS_KS = 2.0  # ... and within 2x Kafka Streams' p99 at the same rate
T0 = time.perf_counter()  # the run's start: --max-minutes counts from here


def runs_kind(variant: str, kind: str) -> bool:
    """Spark's window() has no sliding windows of KIP-450's kind (one per record)."""
    return not (VARIANTS[variant]["engine"] == "spark" and kind == "sliding")


def rate_label(r: int) -> str:
    return f"{r // 1000}k" if r >= 1000 and r % 1000 == 0 else f"{r:,}"


# --------------------------------------------------------------------------------------- args

def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: sliding windows only, 1k and 10k events/s, 20 s each (after 10 s of "
                                "warm-up), no search, no docs")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"subset of {','.join(VARIANTS)}")
    p.add_argument("--kinds", help="subset of sliding,tumbling (default both; quick: sliding)")
    p.add_argument("--rates", default="1000,10000", help="events per second, each run for every variant (1000,10000)")
    p.add_argument("--search", dest="search", action="store_true", default=None,
                   help="search the highest sustained rate per variant (default: on unless --quick)")
    p.add_argument("--no-search", dest="search", action="store_false")
    p.add_argument("--search-max", type=int, default=160_000, help="the search's highest rate (160,000)")
    p.add_argument("--search-min", type=int, default=2_500, help="the search's lowest rate (2,500)")
    p.add_argument("--duration", type=float, help="measured seconds per run at --rates (default 30; quick 20)")
    p.add_argument("--search-duration", type=float, default=15.0, help="measured seconds per search run (15)")
    p.add_argument("--max-minutes", type=float, default=30.0,
                   help="no search run starts that would end after this many minutes since the start (30); the "
                        "fixed rates always run")
    p.add_argument("--warmup", type=float,
                   help="seconds of load before the measured period, its rate rising linearly from 0 (default 15; "
                        "quick 10)")
    p.add_argument("--jvm-warmup", type=float, default=15.0,
                   help="seconds of an unrecorded run at the lowest rate before the session's first Spark run, "
                        "which compiles the code (15; 0: none)")
    p.add_argument("--keys", type=int, default=100_000,
                   help="distinct keys, round robin (100,000: 0.1 events per key per second at 10k/s)")
    p.add_argument("--size", type=int, default=10, help="window size, s (10)")
    p.add_argument("--grace", type=int, default=1, help="grace (and Spark's watermark delay), s (1)")
    p.add_argument("--rt-batch", default="5 minutes",
                   help="real-time mode's batch (checkpoint) interval, trigger(realTime=...) (5 minutes: longer "
                        "than a run, so no batch boundary, which stalls the output about a second, falls in one)")
    p.add_argument("--linger-ms", type=int, default=0,
                   help="linger.ms of every producer: the load's, Spark's Kafka sink's, Kafka Streams' (0)")
    p.add_argument("--ks-store", default="rocksdb", choices=["rocksdb", "memory"], help="Kafka Streams' store (rocksdb)")
    p.add_argument("--ks-commit-ms", type=int, default=100, help="Kafka Streams' commit.interval.ms (100)")
    p.add_argument("--max-p99-ms", type=float, default=1000.0, help="a sustained run's largest p99 (1000 ms)")
    p.add_argument("--max-drain-ms", type=float, default=2000.0,
                   help="a sustained run's output reflects the last record within max(this, 2 x p99) ms (2000)")
    p.add_argument("--drain-timeout", type=float, default=60.0, help="seconds to wait for the last output (60)")
    p.add_argument("--ready-timeout", type=float, default=180.0,
                   help="seconds to wait for the first output of a run (180)")
    p.add_argument("--java-heap", default="2g", help="heap of the load JVM and the Kafka Streams JVM (2g)")
    p.add_argument("--broker-heap", default="1g", help="the broker's heap (1g)")
    p.add_argument("--no-build", action="store_true", help="do not run mvn (bench/kafka-streams must be built)")
    p.add_argument("--work-dir", help="broker data, checkpoints, state (default: a fresh folder under /tmp)")
    p.add_argument("--tag", help="results file name suffix (default quick or full)")
    p.add_argument("--docs", metavar="DIR", nargs="?", const=str(report.DOCS), default=None,
                   help="render DIR/benchmarks-latency.md and DIR/img/latency.png (DIR default: the repository's "
                        "docs/; default: on unless --quick)")
    p.add_argument("--no-docs", dest="docs", action="store_const", const="")
    p.add_argument("--report", metavar="JSON", help="only re-render from this results file (with --docs DIR)")
    harness.add_session_args(p, master="local[3]", shuffle_partitions=2, driver_memory="4g")
    p.add_argument("--contended", type=float, default=0.3,
                   help="a run during which other processes used more than this many cores is marked (0.3)")
    a = p.parse_args(argv)
    a.tag = a.tag or ("quick" if a.quick else "full")
    if a.duration is None:
        a.duration = 20.0 if a.quick else 30.0
    if a.warmup is None:
        a.warmup = 10.0 if a.quick else 15.0
    if a.search is None:
        a.search = not a.quick
    if a.kinds is None:
        a.kinds = "sliding" if a.quick else ",".join(KINDS)
    if a.docs is None:
        a.docs = "" if a.quick or a.report else str(report.DOCS)
    if a.report and not a.docs:
        a.docs = str(report.DOCS)
    a.variants = harness.subset(p, a.variants, list(VARIANTS), "variant")
    a.kinds = harness.subset(p, a.kinds, KINDS, "kind")
    a.rates = sorted(set(harness.csv_ints(p, a.rates, "--rates")))
    return a


# --------------------------------------------------------------------------------------- Java side

# the quick compiler alone and the serial collector for the JVMs that are not under test (the load, the topic
# admin): at 10k events/s the load JVM takes about 0.3 cores so, against about 0.45 with the defaults
LEAN_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


def java_cmd(cp: str, main: str, heap: str | None = None, lean: bool = True) -> list[str]:
    import kafka_broker
    return [kafka_broker.java(), *(LEAN_JVM if lean else []), *([f"-Xmx{heap}"] if heap else []), "-cp", cp,
            MAIN + main]


def topics(cp: str, bootstrap: str, *args: str) -> dict:
    r = subprocess.run(java_cmd(cp, "Topics") + ["--bootstrap", bootstrap, *args], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"Topics {' '.join(args)} failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


class Cpu:
    """CPU clock ticks of the whole machine and of the processes each role runs in (with their finished
    children), sampled when the load JVM starts and ends its measured period."""

    def __init__(self, roles: dict[str, list[int]]):
        self.roles = roles

    def sample(self) -> dict:
        out = {"_busy": harness.busy_jiffies(), "_t": time.perf_counter()}
        for role, pids in self.roles.items():
            ticks = [harness.proc_jiffies(pid, children=True) for pid in pids]
            out[role] = None if None in ticks else sum(ticks)
        return out

    @staticmethod
    def cores(s0: dict | None, s1: dict | None) -> dict:
        """Cores used by each role and by all other processes between two samples."""
        if not s0 or not s1:
            return {}
        clk = os.sysconf("SC_CLK_TCK")
        wall = s1["_t"] - s0["_t"]
        if wall <= 0 or s0["_busy"] is None or s1["_busy"] is None:
            return {}
        out, mine = {}, 0.0
        for role in s0:
            if role.startswith("_"):
                continue
            if s0[role] is None or s1.get(role) is None:
                out[role] = None
                continue
            out[role] = (s1[role] - s0[role]) / clk / wall
            mine += out[role]
        out["machine"] = (s1["_busy"] - s0["_busy"]) / clk / wall
        out["others"] = max(0.0, out["machine"] - mine)
        return {k: (None if v is None else round(v, 3)) for k, v in out.items()}


def load_and_measure(cp: str, a, bootstrap: str, tin: str, tout: str, rate: int, duration: float,
                     cpu_roles: dict[str, list[int]], failed: threading.Event | None = None,
                     warmup: float | None = None) -> dict:
    """Runs LoadAndMeasure to the end; its JSON line plus the cores each role used in the measured period.
    `failed` set meanwhile (the system under test died) ends it early."""
    cmd = java_cmd(cp, "LoadAndMeasure", a.java_heap) + [
        "--bootstrap", bootstrap, "--input", tin, "--output", tout, "--rate", str(rate),
        "--duration-s", str(duration), "--warmup-s", str(a.warmup if warmup is None else warmup), "--keys", str(a.keys),
        "--ready-timeout-s", str(a.ready_timeout), "--drain-timeout-s", str(a.drain_timeout),
        "--linger-ms", str(a.linger_ms)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cpu = Cpu({**cpu_roles, "load": [proc.pid]})
    samples: dict = {}
    err_lines: list[str] = []

    def read_stderr():
        for line in proc.stderr:
            if line.startswith("MEASURE_START"):
                samples["start"] = cpu.sample()
            elif line.startswith("MEASURE_END"):
                samples["end"] = cpu.sample()
            else:
                err_lines.append(line.rstrip())

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    timeout = a.ready_timeout + (a.warmup if warmup is None else warmup) + duration + a.drain_timeout + 90
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        if time.monotonic() > deadline or (failed is not None and failed.is_set()):
            proc.kill()
            break
        time.sleep(0.2)
    out = proc.stdout.read()
    proc.wait()
    reader.join(5)
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if lines:
        r = json.loads(lines[-1])
    elif failed is not None and failed.is_set():
        r = {"status": "error: the system under test failed during the run"}
    elif time.monotonic() > deadline:
        r = {"status": f"error: LoadAndMeasure did not end within {timeout:.0f} s"}
    else:
        r = {"status": f"error: LoadAndMeasure exit {proc.returncode}: {' | '.join(err_lines[-5:])[-800:]}"}
    r["cores"] = Cpu.cores(samples.get("start"), samples.get("end"))
    return r


# --------------------------------------------------------------------------------------- systems under test

def spark_query(spark, a, variant: str, kind: str, bootstrap: str, tin: str, tout: str, checkpoint: Path):
    """Starts the variant's Structured Streaming query from `tin` to `tout`."""
    from pyspark.sql import functions as F

    import windowagg
    from windowagg import SlidingWindows, TimeWindows

    v = VARIANTS[variant]
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", tin).option("startingOffsets", "earliest").load())
    events = (raw.select(F.from_json(F.col("value").cast("string"), "k STRING, ts LONG, sent LONG").alias("e"))
              .select("e.k", F.timestamp_millis("e.ts").alias("ts"), "e.sent"))
    aggs = [F.count(F.lit(1)).alias("n"), F.max("sent").alias("sent")]
    size, grace = f"{a.size} seconds", f"{a.grace} seconds"
    if v["engine"] == "windowagg":
        definition = (SlidingWindows.of(size) if kind == "sliding" else TimeWindows.of(size)).grace(grace)
        windows = events.groupBy("k", windowagg.window("ts", definition, emit="updates")).agg(*aggs)
    else:
        windows = events.withWatermark("ts", grace).groupBy("k", F.window("ts", size)).agg(*aggs)
    out = windows.select(F.col("k").alias("key"), F.to_json(F.struct("k", "window", "n", "sent")).alias("value"))
    writer = (out.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", tout)
              .option("kafka.linger.ms", str(a.linger_ms)).option("kafka.acks", "1")
              .option("checkpointLocation", str(checkpoint)).outputMode("update")
              .queryName(f"lat_{variant.replace('-', '_')}_{kind}_{tin.replace('-', '_')}"))
    if v["trigger"] == "realtime":
        writer = writer.trigger(realTime=a.rt_batch)
    elif v["trigger"] == "100ms":
        writer = writer.trigger(processingTime="100 milliseconds")
    return writer.start()


def progress_summary(q) -> dict:
    """The query's batches: how many, and the median and largest triggerExecution."""
    try:
        prog = q.recentProgress
    except Exception:  # noqa: BLE001
        return {}
    durs = [p.get("durationMs", {}).get("triggerExecution") for p in prog]
    durs = [d for d in durs if d is not None]
    rows = [p.get("numInputRows") or 0 for p in prog]
    return {"batches": len(prog), "batch_ms_median": statistics.median(durs) if durs else None,
            "batch_ms_max": max(durs) if durs else None, "rows_per_batch_median": statistics.median(rows) if rows else None}


def exception_text(q) -> str | None:
    try:
        e = q.exception()
    except Exception as x:  # noqa: BLE001
        return str(x).splitlines()[0][:500]
    if e is None:
        return None
    return (getattr(e, "desc", None) or str(e)).splitlines()[0][:500]


def run_spark(spark, a, cp, bootstrap, variant, kind, tin, tout, work: Path, rate, duration, cpu_roles,
              warmup=None) -> dict:
    checkpoint = work / f"ckpt-{tin}"
    t0 = time.perf_counter()
    try:
        q = spark_query(spark, a, variant, kind, bootstrap, tin, tout, checkpoint)
    except Exception as e:  # noqa: BLE001  (e.g. a mode this query does not run in)
        return {"status": f"error: the query did not start: {str(e).splitlines()[0][:600]}"}
    failed = threading.Event()
    stop_watch = threading.Event()

    def watch():  # a query that dies during the run ends the run early
        while not stop_watch.wait(0.5):
            if not q.isActive:
                failed.set()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.perf_counter() - t0
    try:
        r = load_and_measure(cp, a, bootstrap, tin, tout, rate, duration, cpu_roles, failed, warmup)
    finally:
        stop_watch.set()
        watcher.join(2)
        err = exception_text(q)
        t1 = time.perf_counter()
        try:
            q.stop()
        except Exception as e:  # noqa: BLE001
            err = err or f"stop: {str(e).splitlines()[0][:300]}"
        stop_s = time.perf_counter() - t1
    if err:
        r["query_error"] = err
        if r.get("status") == "ok":
            r["status"] = f"error: query failed: {err}"
        elif not str(r.get("status", "")).startswith("error: query failed"):
            r["status"] = f"error: query failed: {err} ({r.get('status')})"
    r["spark"] = {**progress_summary(q), "start_s": round(started, 2), "stop_s": round(stop_s, 2)}
    shutil.rmtree(checkpoint, ignore_errors=True)
    return r


def run_kstreams(a, cp, bootstrap, kind, tin, tout, work: Path, rate, duration, cpu_roles, warmup=None) -> dict:
    state = work / f"ks-{tin}"
    cmd = java_cmd(cp, "StreamsWindows", a.java_heap, lean=False) + [
        "--bootstrap", bootstrap, "--input", tin, "--output", tout, "--app-id", tin.rsplit("-", 1)[0],
        "--state-dir", str(state), "--kind", kind, "--size-ms", str(a.size * 1000), "--grace-ms", str(a.grace * 1000),
        "--store", a.ks_store, "--commit-ms", str(a.ks_commit_ms), "--linger-ms", str(a.linger_ms)]
    err_path = work / f"ks-{tin}.log"
    with open(err_path, "w") as err:
        ks = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    failed = threading.Event()
    running = threading.Event()

    def watch():
        for line in ks.stdout:
            if line.strip() == "RUNNING":
                running.set()
        failed.set()  # its standard output ended: the JVM is gone

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    t0 = time.perf_counter()
    try:
        running.wait(a.ready_timeout)
        started = time.perf_counter() - t0
        if not running.is_set():
            return {"status": f"error: Kafka Streams did not reach RUNNING: {err_path.read_text()[-800:]}"}
        r = load_and_measure(cp, a, bootstrap, tin, tout, rate, duration, {**cpu_roles, "sut": [ks.pid]}, failed,
                             warmup)
        if failed.is_set() and r.get("status") == "ok":
            r["status"] = "error: Kafka Streams ended during the run"
        r["kstreams"] = {"start_s": round(started, 2)}
        return r
    finally:
        if ks.poll() is None:
            try:
                os.killpg(ks.pid, signal.SIGTERM)
                ks.wait(40)
            except subprocess.TimeoutExpired:
                os.killpg(ks.pid, signal.SIGKILL)
                ks.wait(10)
            except ProcessLookupError:
                pass
        shutil.rmtree(state, ignore_errors=True)


def sustained(r: dict, a) -> tuple[bool, str]:
    """Whether a run sustained its rate, and why not."""
    if r.get("status") != "ok":
        return False, "failed"
    if r["rate_achieved"] < 0.95 * r["rate_target"]:
        return False, f"producer reached {r['rate_achieved']:,.0f}/s"
    if r["drain_ms"] is None:
        return False, f"last record not reflected within {a.drain_timeout:.0f} s"
    p99 = r["p99_ms"]
    if p99 is None:
        return False, "no output"
    if p99 > a.max_p99_ms:
        return False, f"p99 {p99} ms > {a.max_p99_ms:.0f}"
    if r["drain_ms"] > max(a.max_drain_ms, 2 * p99):
        return False, f"drain {r['drain_ms']} ms"
    first, last = r.get("p50_first_fifth_ms"), r.get("p50_last_fifth_ms")
    if first is not None and last is not None and last > max(2 * first, first + 500):
        return False, f"latency grew (p50 {first} -> {last} ms)"
    return True, ""


# --------------------------------------------------------------------------------------- results

def cell_key(variant: str, kind: str, rate: int) -> str:
    return f"{variant}/{kind}/{rate}"


def summarize(res: dict) -> None:
    """Per variant and kind: each rate's run (the last one at that rate), the highest sustained rate, and the
    targets."""
    args = res["args"]
    cells: dict = {}
    for r in res["runs"]:
        cells[cell_key(r["variant"], r["kind"], r["rate"])] = r
    best: dict = {}
    for r in res["runs"]:
        key = f"{r['variant']}/{r['kind']}"
        b = best.setdefault(key, {"variant": r["variant"], "kind": r["kind"], "highest": None, "tested": [],
                                  "first_failure_above": None, "capped": False})
        b["tested"].append(r["rate"])
        if r.get("sustained"):
            b["highest"] = max(b["highest"] or 0, r["rate"])
    for key, b in best.items():
        b["tested"] = sorted(set(b["tested"]))
        fails = [rate for rate in b["tested"] if not cells[f"{key}/{rate}"].get("sustained")
                 and rate > (b["highest"] or 0)]
        b["first_failure_above"] = min(fails) if fails else None
        b["capped"] = b["highest"] is not None and b["highest"] >= args.get("search_max", 0) and not fails
    targets = []
    for kind in args["kinds"]:
        wa = cells.get(cell_key("wa-rt", kind, TARGET_RATE))
        ks = cells.get(cell_key("kstreams", kind, TARGET_RATE))
        t = {"kind": kind, "wa_p99": None, "ks_p99": None, "p99_met": None, "vs_ks": None, "vs_ks_met": None}
        if wa and wa.get("status") == "ok":
            t["wa_p99"] = wa["p99_ms"]
            t["p99_met"] = wa["p99_ms"] is not None and wa["p99_ms"] <= TARGET_P99_MS and bool(wa.get("sustained"))
        if ks and ks.get("status") == "ok":
            t["ks_p99"] = ks["p99_ms"]
        if t["wa_p99"] is not None and t["ks_p99"]:
            t["vs_ks"] = t["wa_p99"] / t["ks_p99"]
            t["vs_ks_met"] = t["vs_ks"] <= TARGET_VS_KS and bool(wa.get("sustained"))
        targets.append(t)
    res["summary"] = {"cells": sorted(cells), "highest": best, "targets": targets}


# --------------------------------------------------------------------------------------- report

STYLE = {"wa-rt": dict(color="tab:blue", linewidth=2.4), "wa-mb": dict(color="tab:cyan", linestyle="--"),
         "wa-mb100": dict(color="tab:purple", linestyle="-."), "spark-rt": dict(color="tab:orange", linewidth=1.8),
         "spark-mb": dict(color="tab:red", linestyle="--"), "kstreams": dict(color="tab:green", linewidth=2.0)}


def render_plot(res: dict, img: Path, rate: int) -> None:
    """Latency by percentile (HdrHistogram style: the x axis stretches the tail) at `rate`, a panel per kind."""
    plt = report.pyplot()
    from matplotlib.ticker import FuncFormatter

    kinds = res["args"]["kinds"]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.4 * len(kinds), 4.8), dpi=110, squeeze=False)
    cells = {cell_key(r["variant"], r["kind"], r["rate"]): r for r in res["runs"]}
    for ax, kind in zip(axes[0], kinds):
        for variant in res["args"]["variants"]:
            r = cells.get(cell_key(variant, kind, rate))
            if not r or r.get("status") != "ok" or not r.get("quantiles"):
                continue
            pts = [(q, v) for q, v in r["quantiles"] if v is not None and q < 1.0]
            xs = [-math.log10(1 - q) for q, _ in pts]
            ys = [max(v, 0.5) for _, v in pts]
            label = f"{VARIANTS[variant]['label']} (max {r['max_ms']:,} ms)" + ("" if r.get("sustained") else ", not sustained")
            ax.plot(xs, ys, label=label, **STYLE.get(variant, {}))
        ax.axhline(TARGET_P99_MS, color="gray", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ticks = [0, 1, 2, 3, 4]
        ax.set_xticks(ticks)
        ax.set_xticklabels(["0%", "90%", "99%", "99.9%", "99.99%"])
        ax.set_xlim(0, 4.2)
        ax.set_xlabel("percentile")
        ax.set_ylabel("latency, ms (log): output arrival − producer send")
        ax.set_title(f"{kind} windows, {rate_label(rate)} events/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7.5, loc="lower right", framealpha=0.85)
    fig.suptitle(f"End-to-end latency by percentile at {rate:,} events/s (dotted: {TARGET_P99_MS} ms)", fontsize=10)
    fig.tight_layout()
    report.save(fig, img, dpi=None)


def cpu_us(r: dict) -> float | None:
    """The system under test's CPU per event sent in the measured period, µs."""
    cores, rate = (r.get("cores") or {}).get("sut"), r.get("rate_achieved")
    return None if cores is None or not rate else cores * 1e6 / rate


def _ms(x) -> str:
    return "–" if x is None else f"{x:,}"


def render(res: dict, json_path: Path, doc: Path, img: Path) -> None:
    args, S = res["args"], res["summary"]
    cells = {cell_key(r["variant"], r["kind"], r["rate"]): r for r in res["runs"]}
    plot_rate = TARGET_RATE if TARGET_RATE in args["rates"] else max(args["rates"])
    render_plot(res, img, plot_rate)

    target_lines = []
    for t in S["targets"]:
        target_lines.append(
            f"- **{t['kind']}**: windowagg real-time p99 at {TARGET_RATE:,} events/s: {_ms(t['wa_p99'])} ms "
            f"(target ≤ {TARGET_P99_MS} ms, sustained): {report.verdict(t['p99_met'])}; Kafka Streams' p99 "
            f"{_ms(t['ks_p99'])} ms, windowagg ÷ Kafka Streams "
            f"{'–' if t['vs_ks'] is None else format(t['vs_ks'], '.2f') + '×'} "
            f"(target ≤ {TARGET_VS_KS:g}×): {report.verdict(t['vs_ks_met'])}")

    tables = []
    for kind in args["kinds"]:
        rows = []
        for variant in args["variants"]:
            if not runs_kind(variant, kind):
                continue
            rates = sorted({r["rate"] for r in res["runs"] if r["variant"] == variant and r["kind"] == kind})
            for rate in rates:
                r = cells[cell_key(variant, kind, rate)]
                c = r.get("cores") or {}
                if r.get("status") != "ok":
                    rows.append([VARIANTS[variant]["label"], f"{rate:,}", "–", "–", "–", "–", "–", "–", "–", "–",
                                 r.get("status", "?")[:160].replace("|", "/")])
                    continue
                note = "" if r.get("sustained") else f"not sustained: {r.get('why_not')}"
                if c.get("others") is not None and c["others"] > args["contended"]:
                    note = (note + "; " if note else "") + f"† others {c['others']:.2f} cores"
                rows.append([VARIANTS[variant]["label"], f"{rate:,}" + (" (search)" if r.get("phase") == "search" else ""),
                             f"{r['rate_achieved']:,.0f}", _ms(r["p50_ms"]), _ms(r["p99_ms"]), _ms(r["p999_ms"]),
                             _ms(r["max_ms"]), f"{r['outputs_per_input']:.2f}" if r.get("outputs_per_input") is not None else "–",
                             _ms(r["drain_ms"]),
                             "–" if c.get("sut") is None else f"{c['sut']:.2f}",
                             "–" if cpu_us(r) is None else f"{cpu_us(r):,.0f}", note])
        tables.append(f"### {kind.capitalize()} windows\n\n" + "\n".join(report.table(
            ["variant", "rate, events/s", "achieved", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "outputs per input",
             "drain ms", "cores (system under test)", "CPU µs per event", "note"], "lrrrrrrrrrrl", rows)))

    # windowagg against Spark's own query on the same work (tumbling windows), in each mode
    cpu_lines = []
    for mode, (ours, theirs) in (("real-time", ("wa-rt", "spark-rt")), ("micro-batch", ("wa-mb", "spark-mb"))):
        for rate in args["rates"]:
            a_, b_ = cells.get(cell_key(ours, "tumbling", rate)), cells.get(cell_key(theirs, "tumbling", rate))
            if a_ and b_ and cpu_us(a_) and cpu_us(b_):
                cpu_lines.append(f"- {mode}, {rate:,} events/s: windowagg {cpu_us(a_):,.0f} µs of CPU per event, Spark's "
                                 f"`window()` {cpu_us(b_):,.0f} µs ({cpu_us(a_) / cpu_us(b_):.2f}×); p99 "
                                 f"{_ms(a_['p99_ms'])} against {_ms(b_['p99_ms'])} ms")

    hrows = []
    for kind in args["kinds"]:
        for variant in args["variants"]:
            b = S["highest"].get(f"{variant}/{kind}")
            if not b:
                continue
            hi = b["highest"]
            text = "none of the rates run" if hi is None else f"{hi:,}" + (" (the search's cap)" if b["capped"] else "")
            if any(x["variant"] == variant and x["kind"] == kind for x in res.get("search_stopped") or []):
                text += " (search stopped: time budget)"
            above = b["first_failure_above"]
            why = "" if above is None else cells[cell_key(variant, kind, above)].get("why_not") or ""
            hrows.append([kind, VARIANTS[variant]["label"], text,
                          "–" if above is None else f"{above:,}: {why}", ", ".join(rate_label(x) for x in b["tested"])])
    highest_table = "\n".join(report.table(["kind", "variant", "highest sustained, events/s",
                                            "next rate tried: why not", "rates run"], "llrll", hrows))

    others = [r["cores"]["others"] for r in res["runs"] if (r.get("cores") or {}).get("others") is not None]
    others_line = ("" if not others else
                   f"Other processes on the machine used a median of {statistics.median(others):.2f} cores (at most "
                   f"{max(others):.2f}) during the measured periods; {sum(x > args['contended'] for x in others)} of "
                   f"{len(others)} runs are marked †.")
    cfg = res["config"]
    values = {
        "target_lines": "\n".join(target_lines) or "- the targets' cells were not run",
        "cpu_lines": "\n".join(cpu_lines) or "- the tumbling cells of both were not run",
        "plot_rate": f"{plot_rate:,}",
        "tables": "\n\n".join(tables),
        "highest_table": highest_table,
        "search": bool(args["search"]),
        "search_max": f"{args['search_max']:,}", "search_min": f"{args['search_min']:,}",
        "search_duration": f"{args['search_duration']:g}", "max_minutes": f"{args.get('max_minutes', 0):g}",
        "rates": ", ".join(f"{r:,}" for r in args["rates"]),
        "duration": f"{args['duration']:g}", "warmup": f"{args['warmup']:g}",
        "keys": f"{args['keys']:,}", "size": args["size"], "grace": args["grace"],
        "rt_batch": args["rt_batch"], "linger_ms": args["linger_ms"],
        "ks_store": args["ks_store"], "ks_commit_ms": args["ks_commit_ms"],
        "max_p99_ms": f"{args['max_p99_ms']:,.0f}", "max_drain_ms": f"{args['max_drain_ms']:,.0f}",
        "others_line": others_line, "jvm_warmup": f"{args.get('jvm_warmup', 0):g}",
        "state_store": cfg.get("state_store") or "?",
        "target_p99": TARGET_P99_MS, "target_rate": f"{TARGET_RATE:,}", "target_vs_ks": f"{TARGET_VS_KS:g}",
    }
    report.render_page(doc, img, NOTES, values, report.run_values("latency.py", res, [json_path], doc, img, NOTES))


# --------------------------------------------------------------------------------------- run

class Bench:
    def __init__(self, b: protocol.Run, broker, work: Path):
        self.a, self.spark, self.res, self.save = b.a, b.spark, b.res, b.save
        self.cp, self.broker, self.work = b.prepared["classpath"], broker, work
        self.n = 0
        self.spark_warm = False
        self.spark_pids = [os.getpid()]
        try:
            self.spark_pids.append(int(self.spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()))
        except Exception:  # noqa: BLE001
            pass
        bp = getattr(broker, "_process", None)
        self.broker_pids = [bp.pid] if bp is not None else []

    def run(self, variant: str, kind: str, rate: int, duration: float, phase: str) -> dict:
        a = self.a
        if VARIANTS[variant]["engine"] != "kstreams" and not self.spark_warm and a.jvm_warmup > 0:
            # the session's JVM compiles the query's code during its first run: an unrecorded one first
            self.spark_warm = True
            self.run(variant, kind, min(a.rates), a.jvm_warmup, "jvm-warmup")
        self.n += 1
        prefix = f"lat-{self.n:03d}"
        tin, tout = f"{prefix}-in", f"{prefix}-out"
        topics(self.cp, self.broker.bootstrap, "--create", f"{tin},{tout}")
        t0 = time.perf_counter()
        warmup = 0.0 if phase == "jvm-warmup" else a.warmup
        log(f"{variant:9s} {kind:8s} {rate:>7,}/s ({phase}, {warmup:g} s warm-up + {duration:g} s) ...")
        roles = {"broker": self.broker_pids}
        if VARIANTS[variant]["engine"] == "kstreams":
            r = run_kstreams(a, self.cp, self.broker.bootstrap, kind, tin, tout, self.work, rate, duration, roles,
                             warmup)
        else:
            r = run_spark(self.spark, a, self.cp, self.broker.bootstrap, variant, kind, tin, tout, self.work, rate,
                          duration, {**roles, "sut": self.spark_pids}, warmup)
        try:
            topics(self.cp, self.broker.bootstrap, "--delete-prefix", prefix)
        except Exception as e:  # noqa: BLE001  (disk space only)
            log(f"  deleting {prefix}'s topics failed: {e}")
        ok, why = sustained(r, a)
        r.update({"variant": variant, "kind": kind, "rate": rate, "phase": phase, "duration": duration,
                  "sustained": ok, "why_not": why, "wall_s": round(time.perf_counter() - t0, 1)})
        self.res["warmup_runs" if phase == "jvm-warmup" else "runs"].append(r)
        self.save()
        c = r.get("cores") or {}
        if r.get("status") == "ok":
            log(f"  p50 {r['p50_ms']} p99 {r['p99_ms']} p99.9 {r['p999_ms']} max {r['max_ms']} ms; achieved "
                f"{r['rate_achieved']:,.0f}/s; {r['outputs_per_input']} outputs/input; drain {r['drain_ms']} ms; "
                f"p50 first/last fifth {r['p50_first_fifth_ms']}/{r['p50_last_fifth_ms']} ms; cores sut "
                f"{c.get('sut')} load {c.get('load')} broker {c.get('broker')} others {c.get('others')}; "
                f"{'sustained' if ok else 'NOT sustained: ' + why} ({r['wall_s']} s)")
        else:
            log(f"  {r.get('status')}")
        return r

    def search_step(self, variant: str, kind: str, done: list[dict]) -> int | None:
        """The next rate of the search for the highest sustained rate, from the runs so far (`done`: the fixed
        rates' runs, then the search's): doubling from the largest fixed rate while the runs sustain it, halving
        below it while they do not; None when the search is over."""
        a = self.a
        fixed = {r["rate"]: r for r in done if r["phase"] == "fixed"}
        steps = [r for r in done if r["phase"] == "search"]
        top = max(fixed)
        if fixed[top].get("sustained"):
            if steps and not steps[-1].get("sustained"):
                return None
            rate = (steps[-1]["rate"] if steps else top) * 2
            return rate if rate <= a.search_max else None
        if steps and steps[-1].get("sustained"):
            return None
        floor = max([r for r, x in fixed.items() if x.get("sustained")], default=0)
        rate = (steps[-1]["rate"] if steps else top) // 2
        return rate if rate >= a.search_min and rate > floor else None


def prepare(a) -> dict:
    """Before the session: bench/kafka-streams built (unless --no-build), the broker's and Spark's Kafka jars."""
    import kafka_broker
    cp = harness.maven_classpath(JAVA_DIR, build=not a.no_build)
    kafka_broker.ensure_jars()
    # everything on loopback: the driver's and the local executors' endpoints too, not the host's address
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return {"classpath": cp}


def start(a) -> dict:
    """The session: Spark's Kafka connector, on loopback; the connector's jars recorded with the config."""
    import kafka_broker
    jars = kafka_broker.connector_jars()
    return {"streaming": True, "require_windowagg": False,
            "conf": {"spark.jars": ",".join(jars), "spark.driver.host": "127.0.0.1",
                     "spark.driver.bindAddress": "127.0.0.1"},
            "config": lambda a, spark: {**harness.stream_config(a, spark),
                                        "kafka_connector_jars": [Path(j).name for j in jars]}}


def run(b: protocol.Run) -> None:
    import kafka_broker
    a, res = b.a, b.res
    work = Path(a.work_dir) if a.work_dir else Path(tempfile.mkdtemp(prefix="windowagg-bench-latency-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"variants={a.variants} kinds={a.kinds} rates={a.rates} search={a.search} duration={a.duration} "
        f"warmup={a.warmup} keys={a.keys} work={work}")
    shutil.rmtree(work / "broker", ignore_errors=True)  # a broker formats a fresh folder
    broker = kafka_broker.KafkaBroker(str(work / "broker"), heap=a.broker_heap)
    try:
        broker.start()
        log(f"broker at {broker.bootstrap}")
        bench = Bench(b, broker, work)
        cells = [(kind, variant) for kind in a.kinds for variant in a.variants if runs_kind(variant, kind)]
        done = {cell: [bench.run(cell[1], cell[0], rate, a.duration, "fixed") for rate in a.rates] for cell in cells}
        # the searches after every fixed rate, one step of each in turn while the time budget lasts
        budget = T0 + a.max_minutes * 60
        step_s = a.warmup + a.search_duration + 15  # a search run's typical wall time
        searching = list(cells) if a.search else []
        while searching:
            for cell in list(searching):
                rate = bench.search_step(cell[1], cell[0], done[cell])
                if rate is None:
                    searching.remove(cell)
                    continue
                if time.perf_counter() + step_s > budget:
                    log(f"the time budget (--max-minutes {a.max_minutes:g}) is spent: search of {cell[1]} {cell[0]} "
                        f"stopped before {rate:,}/s")
                    res.setdefault("search_stopped", []).append({"variant": cell[1], "kind": cell[0], "next_rate": rate})
                    searching.remove(cell)
                    continue
                done[cell].append(bench.run(cell[1], cell[0], rate, a.search_duration, "search"))
    finally:
        broker.stop()
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)


def summary(res: dict) -> None:
    for t in res["summary"]["targets"]:
        log(f"target {t['kind']}: windowagg real-time p99 {t['wa_p99']} ms at {TARGET_RATE:,}/s "
            f"(<= {TARGET_P99_MS}: {t['p99_met']}); Kafka Streams p99 {t['ks_p99']} ms; ratio "
            f"{'-' if t['vs_ks'] is None else round(t['vs_ks'], 2)} (<= {TARGET_VS_KS}: {t['vs_ks_met']})")
    for key, b in res["summary"]["highest"].items():
        log(f"highest sustained {key}: {b['highest']} (tested {b['tested']})")


BENCHMARK = protocol.Benchmark(
    RESULTS_NAME, "windowagg-bench-latency", parse_args, run, render, report.DOCS / DOC_NAME,
    report.DOCS / "img" / IMG_NAME, results={"finished": None, "runs": [], "warmup_runs": []}, summary=summary,
    summarize=summarize, indent=1, prepare=prepare, start=start)
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
