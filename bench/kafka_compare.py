#!/usr/bin/env python3
"""windowagg against Kafka Streams: the same sliding and session windows on the same events, per core.
The events come from the other streaming benchmarks' generators (bench/data.py); windowagg runs in
Structured Streaming on one task thread, Kafka Streams in a TopologyTestDriver (bench/kafka-streams).

Its inputs, the two systems' queries, how events/s are counted and the final windows' check are its
page's: bench/kafka_compare_notes.md, rendered into docs/benchmarks-kafka.md.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "dev"))
import data  # noqa: E402  (the input generators)
import harness  # noqa: E402  (session, metadata, /proc CPU, the streaming run, result files)
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

KAFKA_DIR = BENCH_DIR / "kafka-streams"
KAFKA_MAIN = "windowagg.bench.KafkaWindowBench"
DOC = report.DOCS / "benchmarks-kafka.md"
IMG = report.DOCS / "img" / "kafka_compare.png"
NOTES = BENCH_DIR / "kafka_compare_notes.md"

KINDS = ["sliding", "session"]
STORES = ["memory", "rocksdb"]
GAP_S = data.SESSION_GAP_S
FLUSH_KEY = -1
FLUSH_AFTER_MS = 86_400_000  # the far-future event: one day after the last event (as in KafkaWindowBench)
STORE_LABEL = {"memory": "in-memory store", "rocksdb": "RocksDB store"}
KIND_LABEL = {"sliding": "sliding windows", "session": "session windows"}


# --------------------------------------------------------------------------------------- args

def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 50k events, 10 keys, Kafka runs capped at 120 s, "
                                "no docs (explicit flags win)")
    p.add_argument("--events", type=int, help="events per kind (default 300,000; quick 50,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 10)")
    p.add_argument("--files", type=int, default=10, help="Parquet files = windowagg's data micro-batches (10)")
    p.add_argument("--kinds", default=",".join(KINDS), help="subset of sliding,session")
    p.add_argument("--stores", default=",".join(STORES), help="Kafka stores: subset of memory,rocksdb")
    p.add_argument("--density", type=float, default=10.0, help="sliding: events per second per key (10)")
    p.add_argument("--size", type=int, default=10, help="sliding window size in seconds (10)")
    p.add_argument("--grace", type=float, default=2.0, help="grace in seconds, both kinds (2)")
    p.add_argument("--jitter-ms", type=int, default=500, help="sliding: disorder in ms, below the grace (500)")
    p.add_argument("--mean-session", type=float, default=50.0, help="session: mean events per session (50)")
    p.add_argument("--reps", type=int, default=1, help="timed runs per system and cell (1)")
    p.add_argument("--warmup-files", type=int, default=3,
                   help="windowagg's untimed warm-up reads the first N files; Kafka's warms up on their events (3)")
    p.add_argument("--kafka-warmup-seconds", type=float, default=20.0,
                   help="cap on a Kafka warm-up's piping time (20)")
    p.add_argument("--kafka-max-seconds", type=float,
                   help="cap on a timed Kafka run's piping time: a run over it stops early, reported as "
                        "incomplete (default 240; quick 120)")
    p.add_argument("--kafka-heap", default="4g", help="-Xmx of the Kafka JVM (4g)")
    p.add_argument("--changelog", action="store_true",
                   help="Kafka stores with changelog topics (the driver keeps their records in memory)")
    p.add_argument("--caching", action="store_true", help="Kafka stores with the record cache")
    p.add_argument("--no-build", action="store_true", help="do not run mvn (bench/kafka-streams must be built)")
    harness.add_session_args(p, master="local[1]", shuffle_partitions=1, driver_memory="4g")
    p.add_argument("--timeout", type=float, help="seconds before a windowagg run is stopped (default 1800; quick 300)")
    harness.add_contention_args(p, contended=0.3, quiet_wait=30.0, retries=False)
    p.add_argument("--work-dir", help="input files, CSV and checkpoints (default: a fresh folder under /tmp)")
    harness.add_output_args(p, DOC.name)
    a = p.parse_args(argv)
    harness.defaults(a, events=(300_000, 50_000), keys=(1000, 10), kafka_max_seconds=(240.0, 120.0),
                     timeout=(1800.0, 300.0))
    a.kinds = harness.subset(p, a.kinds, KINDS, "kind")
    a.stores = harness.subset(p, a.stores, STORES, "store")
    if a.jitter_ms >= a.grace * 1000:
        p.error("--jitter-ms must stay below the grace (no late events)")
    return a


# ------------------------------------------------------------------------------------ the input

def flush_ms(max_ms: int) -> int:
    return max_ms + FLUSH_AFTER_MS


def generate(spark, a, kind: str, work: Path) -> list[Path]:
    """The kind's events as a.files Parquet files, in arrival order (bench/data.py's generators)."""
    folder = work / f"{kind}-input"
    if kind == "sliding":
        return data.sliding_stream_files(spark, folder, a.events, a.files, a.keys, a.density, a.seed, a.jitter_ms)
    return data.session_files(spark, folder, a.events, a.files, a.keys, a.mean_session, a.seed)


def read_events(files: list[Path]):
    """(k, ts in epoch ms, v) of the files, in order, as numpy arrays, and the events per file."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    ks, ts, vs = [], [], []
    for f in files:
        t = pq.read_table(f, columns=["k", "ts", "v"])
        col = t.column("ts").combine_chunks()
        per_ms = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}[col.type.unit]
        raw = col.cast(pa.int64()).to_numpy()
        ks.append(t.column("k").to_numpy())
        ts.append(raw // per_ms if per_ms else raw * 1000)
        vs.append(t.column("v").to_numpy())
    return np.concatenate(ks), np.concatenate(ts), np.concatenate(vs), [len(x) for x in ks]


def write_csv(k, t, v, path: Path) -> None:
    with open(path, "w") as f:
        f.write("key,ts_ms,value\n")
        f.writelines(f"{kk},{tt},{vv!r}\n" for kk, tt, vv in zip(k.tolist(), t.tolist(), v.tolist()))


def add_flush_file(spark, files: list[Path], at_ms: int) -> Path:
    """One more Parquet file (read last: its modification time is after the others') with the far-future
    event (k = -1, ts = at_ms, v = 0), the same one the Kafka driver pipes after the CSV."""
    from pyspark.sql import functions as F
    folder = files[-1].parent
    staging = folder.with_name(folder.name + "-flush")
    shutil.rmtree(staging, ignore_errors=True)
    (spark.range(1, numPartitions=1)
     .select(F.lit(FLUSH_KEY).cast("int").alias("k"), F.timestamp_millis(F.lit(at_ms)).alias("ts"),
             F.lit(0.0).alias("v"))
     .write.parquet(str(staging)))
    part = next(staging.glob("*.parquet"))
    target = folder / f"events-{len(files):05d}.parquet"
    os.replace(part, target)
    shutil.rmtree(staging, ignore_errors=True)
    last = files[-1].stat().st_mtime
    os.utime(target, (last + 1, last + 1))
    return target


def expected_windows(kind: str, k, t, size_ms: int, gap_ms: int) -> dict:
    """The final windows each system should emit, counted from the events (all on time).

    Sliding (KIP-450): per key and distinct time t, a left window [t - S, t], and a right window starting
    one tick after p when the next distinct time after p is at most S later. Kafka's tick is 1 ms, so
    p's right window [p + 1, p + 1 + S] is the left window of p + 1 + S when an event is there: one window.
    windowagg's tick on a TIMESTAMP is 1 µs, so its right window [p + 1 µs, p + 1 µs + S] never coincides
    with a left window (the events are whole milliseconds): two windows. So windowagg has one window more
    per (key, p) with an event exactly S + 1 ms after p and another one in (p, p + S].
    Session (KIP-94): per key, one session plus one per distance between consecutive distinct times
    over the gap (both systems merge distances up to the gap inclusive).
    """
    import pandas as pd
    u = pd.DataFrame({"k": k, "t": t}).drop_duplicates().sort_values(["k", "t"], kind="stable")
    nxt = u.groupby("k", sort=False)["t"].shift(-1)
    if kind == "session":
        n = int(u["k"].nunique() + (nxt - u["t"] > gap_ms).sum())
        return {"windowagg": n, "kafka": n, "distinct_key_times": len(u)}
    right = (nxt - u["t"]) <= size_ms  # NaN (a key's last time) compares False
    at = pd.MultiIndex.from_arrays([u["k"].to_numpy(), u["t"].to_numpy()])
    plus = pd.MultiIndex.from_arrays([u["k"].to_numpy(), (u["t"] + size_ms + 1).to_numpy()]).isin(at)
    left = len(u)
    both = int((right & plus).sum())
    return {"windowagg": int(left + right.sum()), "kafka": int(left + right.sum() - both),
            "distinct_key_times": left, "right_windows_windowagg": int(right.sum()),
            "event_exactly_size_plus_1ms_after": int(plus.sum()), "differ_by": both}


# ------------------------------------------------------------------------------------ windowagg

def ms_tick_check(spark, k, t, v, size_ms: int) -> dict:
    """Untimed: windowagg's batch sliding windows over the same events with the time as an integral
    epoch-millisecond column (a 1 ms tick, as Kafka's): the number of windows and the sum of their
    counts, to set next to Kafka's."""
    import pandas as pd
    import windowagg
    from pyspark.sql import functions as F
    from windowagg import SlidingWindows

    pdf = pd.DataFrame({"k": k.astype("int32"), "ms": t.astype("int64"), "v": v})
    df = spark.createDataFrame(pdf).repartition(1)
    out = (df.groupBy("k", windowagg.window("ms", SlidingWindows.of(size_ms), time_unit="milliseconds"))
           .agg(F.count("v").alias("n"))
           .agg(F.count("*").alias("windows"), F.sum("n").alias("sum_of_counts")).collect()[0])
    return {"windows": int(out["windows"]), "sum_of_counts": int(out["sum_of_counts"])}


def windowagg_query(kind: str, spark, a, source: Path):
    """The windowagg streaming query of `kind` over the files in `source` (grace on the definition)."""
    import windowagg
    from windowagg import SessionWindows, SlidingWindows

    grace = f"{int(round(a.grace * 1000))} milliseconds"
    events = harness.file_stream(spark, source)
    if kind == "sliding":
        definition = SlidingWindows.of(f"{a.size} seconds").grace(grace)
    else:
        definition = SessionWindows.withInactivityGap(f"{GAP_S} seconds").grace(grace)
    return events.groupBy("k", windowagg.window("ts", definition, emit="final")).agg(*harness.sum_count_max())


def run_windowagg(kind: str, spark, a, source: Path, checkpoint: Path, batches: int, meter: harness.CpuMeter,
                  with_flush: bool) -> dict:
    """One run of the windowagg query over `source` (harness.run_stream: progress, CPU, the trailing
    no-data micro-batch)."""
    r = harness.run_stream(spark, windowagg_query(kind, spark, a, source), kind, checkpoint, batches, a.timeout, meter)
    shutil.rmtree(checkpoint, ignore_errors=True)
    # the far-future event is input, not one of the events
    r["events_read"] = r["events"]
    r["events"] = r["events"] - (1 if with_flush and r["data_batches"] >= batches else 0)
    r["events_per_s"] = r["events"] / r["processing_s"] if r["processing_s"] else None
    r["system"] = "windowagg"
    r["kind"] = kind
    return r


# ---------------------------------------------------------------------------------------- Kafka

def run_kafka(kind: str, store: str, a, cp: str, csv: Path, warmup_events: int, state_dir: Path,
              meter: harness.CpuMeter, timeout: float) -> dict:
    """One JVM: warm-up on the first warmup_events events, then the timed run; its JSON line, plus the
    JVM's wall and CPU time and the CPU other processes used meanwhile."""
    import kafka_broker  # dev/'s: the java the Kafka JVMs run on
    cmd = [kafka_broker.java(), f"-Xmx{a.kafka_heap}", "-cp", cp, KAFKA_MAIN, "--input", str(csv), "--kind", kind,
           "--store", store, "--size-ms", str(a.size * 1000), "--gap-ms", str(GAP_S * 1000),
           "--grace-ms", str(int(round(a.grace * 1000))), "--warmup-events", str(warmup_events),
           "--warmup-max-seconds", str(a.kafka_warmup_seconds), "--max-seconds", str(a.kafka_max_seconds),
           "--state-dir", str(state_dir), "--progress"]
    if a.changelog:
        cmd.append("--changelog")
    if a.caching:
        cmd.append("--caching")
    s0 = meter.sample()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        status = "ok" if p.returncode == 0 else f"error: exit {p.returncode}: {p.stderr.strip()[-600:]}"
        out, err = p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        status, out, err = "timeout", "", e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c = harness.CpuMeter.between(s0, meter.sample(), wall)
    shutil.rmtree(state_dir, ignore_errors=True)
    jvm_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    r = {"system": "kafka", "kind": kind, "store": store, "status": status, "jvm_wall_s": wall, "jvm_cpu_s": jvm_cpu,
         # the Kafka JVM is a child process, not one of ours: what it used is not others' CPU
         "foreign_cores": None if c["foreign_cpu_s"] is None else max(0.0, c["foreign_cpu_s"] - jvm_cpu) / wall}
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if lines:
        r.update(json.loads(lines[-1]))
    elif status == "ok":
        r["status"] = "error: no JSON line"
    r["progress_tail"] = err.strip().splitlines()[-3:] if err else []
    return r


# ------------------------------------------------------------------------------------- results

def summarize(res: dict) -> None:
    """Per kind: windowagg's and each Kafka store's medians, the ratios, and the window-count check."""
    out = {}
    for kind in res["args"]["kinds"]:
        s = {"windowagg": None, "kafka": {}}
        wr = [r for r in res["runs"] if r["system"] == "windowagg" and r["kind"] == kind
              and r.get("timed") and r["status"] == "ok" and r.get("events_per_s")]
        if wr:
            eps = harness.median([r["events_per_s"] for r in wr])
            s["windowagg"] = {
                "events_per_s": eps, "runs": len(wr), "events": wr[0]["events"],
                "processing_s": harness.median([r["processing_s"] for r in wr]),
                "wall_s": harness.median([r["wall_s"] for r in wr]),
                "own_cpu_s": harness.median([r.get("own_cpu_s") for r in wr]),
                "micro_batches": wr[0]["micro_batches"],
                "output_rows": wr[0]["output_rows"], "output_rows_all": sorted({r["output_rows"] for r in wr}),
                "state_rows_max": max((b["state_rows"] for b in wr[0]["batches"]), default=None),
                "contended_runs": sum(1 for r in wr if r.get("contended")),
            }
            w = s["windowagg"]
            w["cpu_s_per_million"] = (w["own_cpu_s"] / w["events"] * 1e6) if w["own_cpu_s"] and w["events"] else None
        for store in res["args"]["stores"]:
            kr = [r for r in res["runs"] if r["system"] == "kafka" and r["kind"] == kind and r["store"] == store
                  and r.get("timed") and r["status"] == "ok" and r.get("events_per_s")]
            if not kr:
                continue
            complete = all(r.get("complete") for r in kr)
            x = {
                "events_per_s": harness.median([r["events_per_s"] for r in kr]), "runs": len(kr),
                "complete": complete, "events": min(r["events"] for r in kr), "events_total": kr[0]["events_total"],
                "event_time_span_s": min(r["event_time_span_s"] for r in kr),
                "seconds": harness.median([r["seconds"] for r in kr]),
                "cpu_seconds": harness.median([r["cpu_seconds"] for r in kr]),
                "process_cpu_seconds": harness.median([r["process_cpu_seconds"] for r in kr]),
                "last_chunk_events_per_s": harness.median([r.get("last_chunk_events_per_s") for r in kr]),
                "output_records": kr[0]["output_records"],
                "output_records_all": sorted({r["output_records"] for r in kr}),
                "contended_runs": sum(1 for r in kr if r.get("contended")),
                "jvm_wall_s": harness.median([r["jvm_wall_s"] for r in kr]),
            }
            x["cpu_s_per_million"] = x["process_cpu_seconds"] / x["events"] * 1e6 if x["events"] else None
            w = s["windowagg"]
            if w:
                # > 1: windowagg handles more events per second on its one core than Kafka on its one thread
                x["ratio_windowagg_over_kafka"] = harness.ratio(w["events_per_s"], x["events_per_s"])
                x["ratio_cpu"] = harness.ratio(x["cpu_s_per_million"], w["cpu_s_per_million"])
                # an incomplete Kafka run's rate covers the first events only, while its state was still
                # filling up and its rate falling: over all events the ratio would be higher
                x["ratio_is_lower_bound"] = not complete
            s["kafka"][store] = x
        exp = res.get("expected", {}).get(kind)
        check = {"expected": exp}
        if s["windowagg"]:
            check["windowagg"] = s["windowagg"]["output_rows"]
            check["windowagg_as_expected"] = bool(exp) and check["windowagg"] == exp["windowagg"]
        for store, x in s["kafka"].items():
            if x["complete"]:
                check[f"kafka_{store}"] = x["output_records"]
                check[f"kafka_{store}_as_expected"] = bool(exp) and x["output_records"] == exp["kafka"]
            else:
                check[f"kafka_{store}"] = None
                check[f"kafka_{store}_note"] = (f"incomplete run ({x['events']:,} of {x['events_total']:,} events): "
                                                "not all windows closed")
        ms = (exp or {}).get("windowagg_batch_ms_tick")
        if ms:
            # windowagg (batch) with Kafka's 1 ms tick against Kafka: windows and the sum of their counts
            kafka_ms = {st: {"windows": x["output_records"],
                             "sum_of_counts": next((r.get("sum_of_counts") for r in res["runs"]
                                                    if r["system"] == "kafka" and r["kind"] == kind
                                                    and r.get("store") == st and r.get("timed")
                                                    and r["status"] == "ok"), None)}
                        for st, x in s["kafka"].items() if x["complete"]}
            check["ms_tick"] = {"windowagg_batch": ms, **{f"kafka_{st}": v for st, v in kafka_ms.items()},
                                "equal": bool(kafka_ms) and all(v == ms for v in kafka_ms.values())}
        s["check"] = check
        out[kind] = s
    res["summary"] = out


# -------------------------------------------------------------------------------------- report

def render_plot(res: dict, img: Path) -> None:
    plt = report.pyplot()
    import matplotlib.ticker

    kinds = [k for k in res["args"]["kinds"] if k in res["summary"]]
    stores = res["args"]["stores"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.5, 5.6), gridspec_kw={"width_ratios": [1, 1.15]})
    bars = [("windowagg", "windowagg (local[1])", "tab:blue")] + [
        (s, f"Kafka Streams, {STORE_LABEL[s]}", c) for s, c in zip(stores, ["tab:orange", "tab:green"])]
    width = 0.8 / len(bars)
    for i, kind in enumerate(kinds):
        s = res["summary"][kind]
        for j, (name, label, color) in enumerate(bars):
            x = s["windowagg"] if name == "windowagg" else s["kafka"].get(name)
            if not x:
                continue
            pos = i + (j - (len(bars) - 1) / 2) * width
            incomplete = name != "windowagg" and not x["complete"]
            ax1.bar(pos, x["events_per_s"], width, color=color, label=label if i == 0 else None,
                    hatch="//" if incomplete else None, edgecolor="white" if incomplete else None)
            ax1.annotate(f"{x['events_per_s']:,.0f}" + ("*" if incomplete else ""), (pos, x["events_per_s"]),
                         ha="center", va="bottom", fontsize=8, xytext=(0, 2), textcoords="offset points")
    ax1.set_yscale("log")
    ax1.set_ylim(bottom=50)
    ax1.set_xticks(range(len(kinds)), [KIND_LABEL[k] for k in kinds])
    ax1.set_ylabel("events per second, one core / one thread (log)")
    ax1.set_title("Throughput")
    ax1.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2)
    ax1.grid(True, axis="y", which="both", alpha=0.3)
    if any(not x["complete"] for s in res["summary"].values() for x in s["kafka"].values()):
        ax1.set_title("Throughput (* stopped at the time cap: rate over the first events only)", fontsize=9)

    styles = {("sliding", "memory"): ("tab:orange", "-"), ("sliding", "rocksdb"): ("tab:green", "-"),
              ("session", "memory"): ("tab:orange", "--"), ("session", "rocksdb"): ("tab:green", "--")}
    for r in res["runs"]:
        if r["system"] != "kafka" or not r.get("timed") or not r.get("chunks"):
            continue
        color, ls = styles[(r["kind"], r["store"])]
        xs = [c[0] for c in r["chunks"]]
        ax2.plot(xs, [c[1] for c in r["chunks"]], color=color, linestyle=ls, marker=".", markersize=3,
                 label=f"Kafka {KIND_LABEL[r['kind']]}, {STORE_LABEL[r['store']]}" if r.get("rep") == 1 else None)
    for kind in kinds:
        w = res["summary"][kind]["windowagg"]
        if w:
            ax2.axhline(w["events_per_s"], color="tab:blue", linestyle="-" if kind == "sliding" else "--",
                        linewidth=1.2, label=f"windowagg {KIND_LABEL[kind]} (whole run)")
    ax2.set_yscale("log")
    ax2.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ax2.set_xlabel("events piped so far")
    ax2.set_ylabel("events per second of each 10,000-event chunk (log)")
    ax2.set_title("Kafka Streams' rate along the run")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    wl = res["workload"]
    fig.suptitle(f"{wl['events']:,} events per kind, {wl['keys']:,} keys; sliding S = {wl['size_s']} s, "
                 f"session gap {wl['gap_s']} s, grace {wl['grace_s']:g} s", fontsize=10)
    fig.tight_layout()
    report.save(fig, img)


def render_doc(res: dict, json_path: Path, doc: Path = DOC, img: Path = IMG) -> None:
    """The page: bench/kafka_compare_notes.md (all of its prose) filled with the numbers and tables
    computed here, and the flags that keep or drop its optional paragraphs."""
    render_plot(res, img)
    S, wl, cfg, args = res["summary"], res["workload"], res["config"], res["args"]

    head = []
    for kind, sm in S.items():
        w = sm["windowagg"]
        parts = [f"{'≥ ' if x.get('ratio_is_lower_bound') else ''}{x['ratio_windowagg_over_kafka']:.2f}× Kafka "
                 f"Streams' with its {STORE_LABEL[st]} ({x['events_per_s']:,.0f}"
                 + ("" if x["complete"] else ", a run that did not finish") + ")"
                 for st, x in sm["kafka"].items() if x.get("ratio_windowagg_over_kafka")]
        if w and parts:
            head.append(f"on {KIND_LABEL[kind]}, windowagg's {w['events_per_s']:,.0f} events/s are "
                        + " and ".join(parts))

    results_rows = []
    for kind, s in S.items():
        w = s["windowagg"]
        if w:
            results_rows.append([KIND_LABEL[kind], f"**windowagg** (`{cfg['master']}`)",
                                 f"**{report.fmt_num(w['events_per_s'])}**", f"{w['processing_s']:.1f}",
                                 report.fmt_num(w["own_cpu_s"], ".1f"), report.fmt_num(w["cpu_s_per_million"], ".1f"),
                                 f"{w['output_rows']:,}", "", ""])
        for store, x in s["kafka"].items():
            lb = "≥ " if x.get("ratio_is_lower_bound") else ""
            ev = "" if x["complete"] else f" (first {x['events']:,} events, then stopped)"
            results_rows.append([KIND_LABEL[kind], f"Kafka Streams, {STORE_LABEL[store]}",
                                 f"{report.fmt_num(x['events_per_s'])}{ev}", f"{x['seconds']:.1f}",
                                 f"{x['process_cpu_seconds']:.1f}", report.fmt_num(x["cpu_s_per_million"], ".1f"),
                                 "–" if not x["complete"] else format(x["output_records"], ","),
                                 f"**{lb}{report.fmt_num(x.get('ratio_windowagg_over_kafka'), '.2f')}×**",
                                 f"{lb}{report.fmt_num(x.get('ratio_cpu'), '.2f')}×"])
    results_table = report.table(
        ["windows", "system", "events/s (one core / thread)", "timed s", "CPU s (process)", "CPU s per 1M events",
         "final windows", "windowagg ÷ Kafka (events/s)", "Kafka ÷ windowagg (CPU per event)"],
        "llrrrrrrr", results_rows)

    # the sliding kind's two paragraphs under the window counts (dropped when it did not run or has no
    # expected counts); their numbers default to "" so that the template has all of its values
    count_rows, ms_tick, tick = [], {}, {}
    for kind, s in S.items():
        c = s["check"]
        e = c.get("expected") or {}
        ok = [c.get("windowagg_as_expected")] + [c.get(f"kafka_{st}_as_expected") for st in s["kafka"]
                                                 if c.get(f"kafka_{st}") is not None]
        verdict = "yes, each as expected" if ok and all(ok) else "**no**"
        if kind == "session" and all(ok) and c.get("windowagg") is not None and all(
                c.get(f"kafka_{st}") == c["windowagg"] for st in s["kafka"] if c.get(f"kafka_{st}") is not None):
            verdict = "yes: the same sessions count"
        count_rows.append([
            KIND_LABEL[kind], report.fmt_num(c.get("windowagg"), ","), report.fmt_num(e.get("windowagg"), ","),
            report.fmt_num(c.get("kafka_memory"), ",", "not all closed" if "memory" in s["kafka"] else "–"),
            report.fmt_num(c.get("kafka_rocksdb"), ",", "not all closed" if "rocksdb" in s["kafka"] else "–"),
            report.fmt_num(e.get("kafka"), ","), verdict])
        if kind == "sliding" and c.get("ms_tick"):
            mt = c["ms_tick"]
            wb = mt["windowagg_batch"]
            ks = [(st, mt[f"kafka_{st}"]) for st in s["kafka"] if f"kafka_{st}" in mt]
            ms_tick = {"windows": f"{wb['windows']:,}", "sum": f"{wb['sum_of_counts']:,}",
                       "kafka": "; ".join(f"Kafka Streams with its {STORE_LABEL[st]}: {x['windows']:,} windows "
                                          f"summing to {report.fmt_num(x['sum_of_counts'], ',')}" for st, x in ks),
                       "verdict": "identical" if mt.get("equal") else "not identical"}
        if kind == "sliding" and e:
            kafka_seen = [c.get(f"kafka_{st}") for st in s["kafka"] if c.get(f"kafka_{st}") is not None]
            tick = {"observed": (f"{c['windowagg'] - kafka_seen[0]:,}"
                                 if kafka_seen and c.get("windowagg") is not None else "–"),
                    "expected": f"{e['windowagg'] - e['kafka']:,}", "key_times": f"{e['distinct_key_times']:,}",
                    "size_plus_1ms": f"{e['event_exactly_size_plus_1ms_after']:,}", "differ_by": f"{e['differ_by']:,}"}
    window_counts_table = report.table(
        ["windows", "windowagg", "expected (windowagg)", "Kafka, in-memory", "Kafka, RocksDB", "expected (Kafka)",
         "equal?"], "lrrrrrl", count_rows)

    per_event = [r["sum_of_counts"] / r["events"] for r in res["runs"] if r["system"] == "kafka"
                 and r["kind"] == "sliding" and r.get("timed") and r.get("complete") and r.get("events")]
    rate = wl["keys"] * wl["density"]
    sliding_sum = next((r.get("sum_of_counts") for r in res["runs"] if r["system"] == "kafka"
                        and r["kind"] == "sliding" and r.get("timed") and r.get("complete")), None)
    values = {
        # the per-core block: only when some cell has both systems' numbers
        "per_core": "; ".join(head),
        "results_table": "\n".join(results_table),
        "kafka_thread_cpu": ", ".join(f"{x['cpu_seconds']:.1f} s ({KIND_LABEL[k]}, {STORE_LABEL[st]})"
                                      for k, s in S.items() for st, x in s["kafka"].items()),
        # the time-cap bullet: only when a Kafka run stopped at its cap
        "time_cap": any(not x["complete"] for s in S.values() for x in s["kafka"].values()),
        "kafka_max_seconds": f"{args['kafka_max_seconds']:.0f}",
        "window_counts_table": "\n".join(window_counts_table),
        "ms_tick": bool(ms_tick),
        **{f"ms_tick_{k}": ms_tick.get(k, "") for k in ("windows", "sum", "kafka", "verdict")},
        "tick_difference": bool(tick),
        **{f"tick_{k}": tick.get(k, "") for k in ("observed", "expected", "key_times", "size_plus_1ms", "differ_by")},
        "windows_per_event": (f"{per_event[0]:.0f}" if per_event
                              else f"about {wl['density'] * wl['size_s'] * 2:.0f}"),
        "events_per_event_second": f"{rate:,.0f}",
        "window_starts": f"{int(min(2 * wl['size_s'] * 1000, 2 * rate * 2 * wl['size_s'])):,}",
        "kafka_version": next((r.get("kafka_streams") for r in res["runs"] if r.get("kafka_streams")), "?"),
        "kafka_java": next((r.get("java") for r in res["runs"] if r.get("java")), "?"),
        "kafka_heap": args["kafka_heap"],
        "events": f"{wl['events']:,}",
        "keys": f"{wl['keys']:,}",
        "density": f"{wl['density']:g}",
        "jitter_ms": wl["jitter_ms"],
        "size_s": wl["size_s"],
        "gap_s": wl["gap_s"],
        "grace_s": f"{wl['grace_s']:g}",
        "grace_ms": int(wl["grace_s"] * 1000),
        "mean_session": f"{wl['mean_session']:g}",
        "files": wl["files"],
        "warmup_files": args["warmup_files"],
        "with_changelog": "with" if args.get("changelog") else "without",
        "with_caching": "with" if args.get("caching") else "without",
        "changelog_records": (f"{sliding_sum:,} for the sliding windows here" if sliding_sum
                              else "tens of millions for sliding windows"),
        "kafka_warmup_seconds": f"{args['kafka_warmup_seconds']:.0f}",
        "contended_runs": ", ".join(
            f"{KIND_LABEL[k]} windowagg {s['windowagg']['contended_runs'] if s['windowagg'] else 0}"
            + "".join(f", Kafka {st} {x['contended_runs']}" for st, x in s["kafka"].items())
            for k, s in S.items()),
    }
    report.render_page(doc, img, NOTES, values, report.run_values("kafka_compare.py", res, [json_path], doc, img, NOTES))


# ---------------------------------------------------------------------------------------- run

def prepare(a) -> dict:
    """bench/kafka-streams built (unless --no-build), before the session."""
    return {"classpath": harness.maven_classpath(KAFKA_DIR, build=not a.no_build)}


def run(b: protocol.Run) -> None:
    a, spark, res, save = b.a, b.spark, b.res, b.save
    cp = b.prepared["classpath"]
    work = Path(a.work_dir) if a.work_dir else Path(tempfile.mkdtemp(prefix="windowagg-bench-kafka-"))
    work.mkdir(parents=True, exist_ok=True)
    log(f"events={a.events:,} keys={a.keys} files={a.files} kinds={a.kinds} stores={a.stores} S={a.size}s "
        f"gap={GAP_S}s grace={a.grace}s reps={a.reps} master={a.master} work={work}")
    meter = harness.CpuMeter(spark)
    res["workload"] = {"events": a.events, "keys": a.keys, "files": a.files, "density": a.density, "size_s": a.size,
                       "gap_s": GAP_S, "grace_s": a.grace, "jitter_ms": a.jitter_ms, "mean_session": a.mean_session,
                       "flush_key": FLUSH_KEY, "flush_after_ms": FLUSH_AFTER_MS}
    import numpy as np
    try:
        for kind in a.kinds:
            # ---- the input, once
            t0 = time.perf_counter()
            files = generate(spark, a, kind, work)
            k, t, v, per_file = read_events(files)
            csv = work / f"{kind}.csv"
            write_csv(k, t, v, csv)
            flush_at = flush_ms(int(t.max()))
            flush_file = add_flush_file(spark, files, flush_at)
            all_files = files + [flush_file]
            warm_n = min(a.warmup_files, len(files))
            warm_events = int(sum(per_file[:warm_n]))
            harness.link_subset(files, work / f"{kind}-warmup", warm_n)
            exp = expected_windows(kind, k, t, a.size * 1000, GAP_S * 1000)
            if kind == "sliding":
                t1 = time.perf_counter()
                exp["windowagg_batch_ms_tick"] = ms_tick_check(spark, k, t, v, a.size * 1000)
                log(f"{kind}: windowagg batch with a 1 ms tick (BIGINT epoch-ms column): "
                    f"{exp['windowagg_batch_ms_tick']} ({time.perf_counter() - t1:.1f}s)")
            res["expected"][kind] = exp
            res["inputs"][kind] = {"events": int(len(k)), "files": len(files), "keys_present": int(len(set(k.tolist()))),
                                   "event_time_span_s": (int(t.max()) - int(t.min())) / 1000.0,
                                   "out_of_order_events": int((t[1:] < np.maximum.accumulate(t)[:-1]).sum()),
                                   "csv_mib": round(csv.stat().st_size / 2**20, 1),
                                   "parquet_mib": round(sum(f.stat().st_size for f in all_files) / 2**20, 1),
                                   "flush_ms": flush_at, "warmup_events": warm_events}
            log(f"{kind}: input {res['inputs'][kind]} ({time.perf_counter() - t0:.1f}s); expected final windows {exp}")
            save()

            # ---- windowagg: warm-up, then the timed runs, interleaved with Kafka's
            r = run_windowagg(kind, spark, a, work / f"{kind}-warmup", work / f"ck-{kind}-warmup", warm_n, meter,
                              with_flush=False)
            r.update({"timed": False, "rep": 0})
            res["runs"].append(r)
            log(f"windowagg {kind} warm-up: {r['status']} {r['events']:,} events in {r['processing_s']:.1f}s processing")
            for rep in range(1, a.reps + 1):
                r = b.timed_run(meter, lambda: run_windowagg(
                    kind, spark, a, work / f"{kind}-input", work / f"ck-{kind}-{rep}", len(all_files), meter,
                    with_flush=True), timed=True, rep=rep)
                log(f"windowagg {kind} rep {rep}: {r['status']} {r['events']:,} events, {r['micro_batches']} micro-batches, "
                    f"{r['processing_s']:.1f}s processing ({r['wall_s']:.1f}s wall) -> {r['events_per_s'] or 0:,.0f} events/s; "
                    f"own CPU {r['own_cpu_s'] or 0:.1f}s; final windows {r['output_rows']:,} (expected {exp['windowagg']:,}); "
                    f"other processes {r['foreign_cores'] or 0:.2f} cores")
                for store in a.stores:
                    kr = b.timed_run(meter, lambda: run_kafka(
                        kind, store, a, cp, csv, warm_events, work / f"kafka-state-{kind}-{store}", meter,
                        timeout=a.kafka_max_seconds * 2 + a.kafka_warmup_seconds * 2 + 300), timed=True, rep=rep)
                    if kr["status"] == "ok":
                        log(f"kafka {kind} {store} rep {rep}: {'complete' if kr['complete'] else 'STOPPED at the cap'} "
                            f"{kr['events']:,} events in {kr['seconds']:.1f}s -> {kr['events_per_s']:,.0f} events/s "
                            f"(last chunk {kr['last_chunk_events_per_s']:,.0f}/s); thread CPU {kr['cpu_seconds']:.1f}s, "
                            f"process CPU {kr['process_cpu_seconds']:.1f}s; final windows {kr['output_records']:,} "
                            f"(expected {exp['kafka']:,}); warm-up {kr['warmup_events']:,} events in "
                            f"{kr['warmup_seconds']:.1f}s; JVM {kr['jvm_wall_s']:.1f}s wall; other processes "
                            f"{kr['foreign_cores'] or 0:.2f} cores")
                    else:
                        log(f"kafka {kind} {store} rep {rep}: {kr['status'][:400]}")
            shutil.rmtree(work / f"{kind}-input", ignore_errors=True)
            shutil.rmtree(work / f"{kind}-warmup", ignore_errors=True)
    finally:
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)


def summary(res: dict) -> None:
    for kind, s in res["summary"].items():
        w = s["windowagg"]
        if w:
            log(f"{kind:8s} windowagg: {w['events_per_s']:,.0f} events/s, {w['output_rows']:,} final windows")
        for store, x in s["kafka"].items():
            lb = ">= " if x.get("ratio_is_lower_bound") else ""
            log(f"{kind:8s} kafka {store:8s}: {x['events_per_s']:,.0f} events/s"
                f"{'' if x['complete'] else ' (incomplete)'}, {x['output_records']:,} final windows; "
                f"windowagg / kafka = {lb}{report.fmt_num(x.get('ratio_windowagg_over_kafka'), '.2f')}x "
                f"(CPU per event: {lb}{report.fmt_num(x.get('ratio_cpu'), '.2f')}x)")
        log(f"{kind:8s} check: {s['check']}")


BENCHMARK = protocol.Benchmark(
    "kafka_compare", "windowagg-bench-kafka-compare", parse_args, run, render_doc, DOC, IMG,
    results={"finished": None, "workload": None, "inputs": {}, "expected": {}, "runs": []}, summary=summary,
    summarize=summarize, prepare=prepare,
    start=lambda a: {"config": harness.stream_config, "streaming": True, "log_level": "ERROR"})
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
