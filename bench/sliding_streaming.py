#!/usr/bin/env python3
"""Streaming benchmark: windowagg sliding windows against Spark's own windowed streaming aggregations
(tumbling and hopping window(); Storm's count windows with --competitors count,...), every competitor
reading the same files (bench/data.py's sliding_stream_files) as the same micro-batches. With
--profile, one more windowagg run is recorded with Java Flight Recorder.

Its input, competitors, runs and method are its page's: bench/sliding_streaming_notes.md, rendered
into docs/benchmarks-streaming.md.
"""
from __future__ import annotations

import collections
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import data  # noqa: E402  (the input generator)
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

DOC = report.DOCS / "benchmarks-streaming.md"
IMG = report.DOCS / "img" / "sliding_streaming.png"
NOTES = BENCH_DIR / "sliding_streaming_notes.md"  # the page: its prose, {{placeholders}} for the results

COMPETITORS = ["windowagg", "tumbling", "hopping"]
# windowagg's other kinds, each against its nearest Spark built-in (the same windows, or as many per event)
NEAREST_BUILT_IN = {"wa-tumbling": "tumbling", "wa-hopping": "hopping", "wa-cumulative": "hopping"}
OPT_IN = ["count", *NEAREST_BUILT_IN]
LABELS = {
    "windowagg": "windowagg sliding windows (KIP-450, final emission)",
    "tumbling": "Spark tumbling `window(ts, S)`",
    "hopping": "Spark hopping `window(ts, S, S/10)`",
    "count": "windowagg count windows (Storm's `Count(N), Count(M)`)",
    "wa-tumbling": "windowagg tumbling `TimeWindows.of(S)`",
    "wa-hopping": "windowagg hopping `TimeWindows.of(S).advanceBy(S/10)`",
    "wa-cumulative": "windowagg cumulative `CumulativeWindows.of(S/10, S)`",
}
STYLE = {
    "windowagg": dict(color="tab:blue", linewidth=2.2),
    "tumbling": dict(color="tab:orange"),
    "hopping": dict(color="tab:green"),
    "count": dict(color="tab:purple"),
    "wa-tumbling": dict(color="tab:orange", linestyle="--"),
    "wa-hopping": dict(color="tab:green", linestyle="--"),
    "wa-cumulative": dict(color="tab:brown", linestyle="--"),
}

# --------------------------------------------------------------------------------------- args

def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 200k rows, 100 keys, 10 micro-batches, 1 rep, no docs (explicit flags win)")
    p.add_argument("--rows", type=int, help="events (default 2,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 100)")
    p.add_argument("--batches", type=int, help="input files = micro-batches (default 40; quick 10)")
    p.add_argument("--density", type=float, default=10.0, help="events per second per key (default 10)")
    p.add_argument("--size", type=int, default=10, help="window size S in seconds (default 10: ~100 events per window)")
    p.add_argument("--hop-divisor", type=int, default=10, help="hopping slide = S / this (default 10)")
    p.add_argument("--grace", type=float, default=2.0, help="watermark delay in seconds (default 2)")
    p.add_argument("--start", help="the first event's time, ISO-8601 in UTC (default 2023-11-14T22:13:20: any fixed "
                                   "instant; a midnight gives cumulative windows of a day a whole day of windows per time)")
    p.add_argument("--jitter-ms", type=int, default=500,
                   help="events are out of order by up to this many ms (default 500; below the grace, so none is late)")
    p.add_argument("--reps", type=int, help="timed runs per competitor (default 2; quick 1)")
    p.add_argument("--warmup-batches", type=int, default=3, help="files of the untimed warm-up run (default 3)")
    p.add_argument("--warmup-runs", type=int,
                   help="untimed runs of each competitor over all files after that (default 2; quick 0): the JVM's JIT "
                        "compiles for seconds per run until about the third")
    p.add_argument("--timeout", type=float, help="seconds before a run is stopped (default 1800; quick 300); "
                                                 "a stopped run still reports the micro-batches it finished")
    p.add_argument("--competitors", default=",".join(COMPETITORS),
                   help=f"subset of {','.join(COMPETITORS + OPT_IN)}")
    p.add_argument("--count-length", type=int, default=100, help="rows of a count window (count competitor; 100)")
    p.add_argument("--count-slide", type=int, default=10, help="rows between count windows (count competitor; 10)")
    harness.add_session_args(p, driver_memory="4g")
    harness.add_contention_args(p, contended=0.3, quiet_wait=120.0, retries=False)
    p.add_argument("--profile", dest="profile", action="store_true", default=None,
                   help="one more windowagg run under Java Flight Recorder (default: on unless --quick)")
    p.add_argument("--no-profile", dest="profile", action="store_false")
    p.add_argument("--profile-batches", type=int, default=15, help="files read by the profiled run (default 15)")
    p.add_argument("--work-dir", help="input files and checkpoints (default: a fresh folder under /tmp)")
    harness.add_output_args(p, DOC.name)
    a = p.parse_args(argv)
    harness.defaults(a, rows=(2_000_000, 200_000), keys=(1000, 100), batches=(40, 10), reps=(2, 1),
                     timeout=(1800.0, 300.0), profile=(True, False), warmup_runs=(2, 0))
    a.competitors = harness.subset(p, a.competitors, COMPETITORS + OPT_IN, "competitor")
    if a.size % a.hop_divisor and (a.size * 1000) % a.hop_divisor:
        p.error("--size must be divisible by --hop-divisor (in milliseconds)")
    return a


# ------------------------------------------------------------------------------ the queries

def start_ms(iso: str) -> int:
    """An ISO-8601 instant (UTC unless it says otherwise) in epoch milliseconds."""
    t = dt.datetime.fromisoformat(iso)
    return int((t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)).timestamp() * 1000)


def query(name: str, spark, a, source: Path):
    from pyspark.sql import functions as F

    events = harness.file_stream(spark, source, f"{int(a.grace * 1000)} milliseconds")
    aggs = harness.sum_count_max()
    size = f"{a.size} seconds"
    slide = f"{a.size * 1000 // a.hop_divisor} milliseconds"
    if name == "tumbling":
        return events.groupBy("k", F.window("ts", size)).agg(*aggs)
    if name == "hopping":
        return events.groupBy("k", F.window("ts", size, slide)).agg(*aggs)
    from pyspark.sql.classic.column import Column, _to_java_column
    kinds = spark.sparkContext._jvm.windowagg
    definitions = {
        "windowagg": lambda: kinds.SlidingWindows.of(size),
        "count": lambda: kinds.CountWindows.of(a.count_length).slide(a.count_slide),
        "wa-tumbling": lambda: kinds.TimeWindows.of(size),
        "wa-hopping": lambda: kinds.TimeWindows.of(size).advanceBy(slide),
        "wa-cumulative": lambda: kinds.CumulativeWindows.of(slide, size),
    }
    window = kinds.functions.window(_to_java_column(F.col("ts")), definitions[name](), {"emit": "final"})
    return events.groupBy("k", Column(window)).agg(*aggs)


def run_query(name: str, spark, a, source: Path, checkpoint: Path, batches: int, meter: harness.CpuMeter) -> dict:
    """One run of competitor `name` over the files in `source` (harness.run_stream)."""
    return harness.run_stream(spark, query(name, spark, a, source), name, checkpoint, batches, a.timeout, meter)


# ------------------------------------------------------------------------------------ profile

CATEGORIES = [  # (label, substrings of a frame "class.method"), first match from the top of the stack wins
    ("windowagg: window sweep / finality (core)", ["windowagg.core."]),
    ("windowagg: Spark aggregate buffers (SparkAggregates)", ["SparkAggregates."]),
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


def profile_run(name: str, spark, a, source: Path, checkpoint: Path, work: Path, meter: harness.CpuMeter,
                batches: int) -> dict:
    """One run of `name` under Java Flight Recorder; returns where the executor threads' samples fall."""
    if meter.jvm_pid is None:
        return {"error": "driver JVM pid unknown"}
    try:
        recording = harness.FlightRecording(spark, meter.jvm_pid, work / f"{name}.jfr")
    except FileNotFoundError as missing:
        return {"error": str(missing)}
    with recording:
        r = run_query(name, spark, a, source, checkpoint, batches, meter)
    total = all_samples = 0
    cats, top, incl = collections.Counter(), collections.Counter(), collections.Counter()
    for thread, frames in harness.execution_samples(recording):
        all_samples += 1
        if "Executor task" not in thread or not frames:  # JFR keeps a thread's first name: launch or idle worker
            continue
        total += 1
        top[frames[0]] += 1
        for f in set(frames):
            if f.startswith("windowagg.") or "encoders.ExpressionEncoder" in f or f.startswith("org.rocksdb."):
                incl[f] += 1
        cats[harness.category(frames, CATEGORIES)] += 1
    if total:
        recording.path.unlink(missing_ok=True)
    share = (lambda c: round(c / total, 4)) if total else (lambda c: None)
    return {
        "competitor": name, "run": {k: v for k, v in r.items() if k != "batches"},
        "executor_samples": total, "all_samples": all_samples, "recording": None if total else str(recording.path),
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
            "state": harness.state_quarters(rep["batches"]),
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
    for kind, built_in in NEAREST_BUILT_IN.items():
        if kind in summary and built_in in summary:
            ratios[f"{kind}_vs_{built_in}"] = (summary[built_in]["events_per_s_median"]
                                               / summary[kind]["events_per_s_median"])
    res["summary"] = summary
    res["ratios"] = ratios
    res["verdict"] = verdict(res)


# ------------------------------------------------------------------------------------- report

def render_plot(res: dict, img: Path) -> None:
    plt = report.pyplot()

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
    for comp in COMPETITORS + OPT_IN:
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
    report.save(fig, img)


def render_doc(res: dict, json_path: Path, doc: Path = DOC, img: Path = IMG) -> None:
    render_plot(res, img)
    s, ratios, w, cfg = res["summary"], res["ratios"], res["workload"], res["config"]
    changelog = cfg.get("rocksdb_changelog")
    if changelog in (None, "<unknown>"):
        changelog = "not set (Spark's default)"
    rows = []
    for comp in COMPETITORS + OPT_IN:
        x = s.get(comp)
        if x is None:
            continue
        st = x["state"]
        growth = "" if st["growth"] is None else f" ({st['growth']:+.1%})"
        rows.append([f"`{comp}`", f"{report.fmt_num(x['events_per_s_median'])}{' (timed out)' if x['timed_out'] else ''}",
                     f"{x['processing_s_median']:.1f}",
                     "–" if x.get("own_cpu_s_median") is None else format(x["own_cpu_s_median"], ".1f"),
                     f"{x['ms_per_batch_median']:.0f}", report.fmt_num(x["output_rows"]),
                     f"{report.fmt_num(st['q2_mean'])} → {report.fmt_num(st['q4_mean'])}{growth}",
                     report.fmt_num(st["max"]), f"{x['state_memory_bytes_max'] / 2**20:.1f} MiB",
                     f"{x['contended_runs']}/{x['runs']}"])
    # a value "" alone on its template line drops the line (the banners); a false one drops its {{#block}}
    report.render_page(doc, img, NOTES, {
        "rocksdb_changelog": changelog,
        "rows": f"{w['rows']:,}", "keys": f"{w['keys']:,}", "density": f"{w['density']:g}",
        "jitter_ms": w["jitter_ms"], "batches": w["batches"], "rows_per_batch": f"{w['rows_per_batch']:,}",
        "event_seconds_per_batch": f"{w['event_seconds_per_batch']:g}", "grace_s": f"{w['grace_s']:g}",
        "size_s": w["size_s"], "hop_ms": w["hop_ms"],
        "opt_in_queries": "\n".join(f"  | `{comp}` | {LABELS[comp]} (transformWithState) |"
                                    for comp in OPT_IN if comp in s),
        "warmup_batches": w["warmup_batches"],
        "warmup_runs": f", then {w['warmup_runs']} time(s) over all files" if w.get("warmup_runs") else "",
        "results_table": "\n".join(report.table(
            ["competitor", "events/s (median)", "processing s", "CPU s", "ms per micro-batch (median)", "output rows",
             "state rows, 2nd quarter → last quarter (mean)", "state rows max", "state memory max", "contended runs"],
            "lrrrrrrrrr", rows)),
        "ratios": "\n".join(ratio_lines(ratios)),
        "verdict": "\n".join(f"- {line}" for line in res.get("verdict", [])),
        **profile_values(res.get("profile")),
    }, report.run_values("sliding_streaming.py", res, [json_path], doc, img, NOTES))


def ratio_lines(ratios: dict) -> list[str]:
    """windowagg's cost relative to Spark's built-ins, per event, one line per pair the run compared; none
    (and so no ratios block on the page) when it had no pair."""
    L = []
    for other in ("tumbling", "hopping"):
        if f"windowagg_vs_{other}" in ratios:
            cpu = ratios.get(f"windowagg_vs_{other}_cpu")
            L.append(f"- vs `{other}`: **{ratios[f'windowagg_vs_{other}']:.2f}×** processing time"
                     + ("" if cpu is None else f", {cpu:.2f}× CPU time"))
    for kind, built_in in NEAREST_BUILT_IN.items():
        if f"{kind}_vs_{built_in}" in ratios:
            L.append(f"- {LABELS[kind]} vs `{built_in}`: **{ratios[f'{kind}_vs_{built_in}']:.2f}×** processing time")
    return L


PROFILE_VALUES = ["profile_batches", "profile_events", "profile_samples", "profile_categories",
                  "profile_top_self", "profile_top_inclusive"]


def profile_values(prof: dict | None) -> dict:
    """The profile block's values: `profile` chooses the block (only a run with --profile took one, and it
    may have failed); without it its placeholders are "", since fill wants every one given."""
    if not prof or prof.get("error"):
        return {"profile": False, **dict.fromkeys(PROFILE_VALUES, "")}

    def frames(key: str, n: int) -> str:
        return "\n".join(report.table(["frame", "share"], "lr",
                                      [[f"`{c['frame']}`", f"{c['share']:.1%}"] for c in prof[key][:n]]))
    return {
        "profile": True,
        "profile_batches": prof["run"]["data_batches"], "profile_events": f"{prof['run']['events']:,}",
        "profile_samples": f"{prof['executor_samples']:,}",
        "profile_categories": "\n".join(report.table(["category", "share of samples"], "lr",
                                                     [[c["category"], f"{c['share']:.1%}"] for c in prof["categories"]])),
        "profile_top_self": frames("top_self", 12), "profile_top_inclusive": frames("top_inclusive", 15),
    }


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
    if "windowagg" in s and "hopping" in s:
        r = s["windowagg"]["events_per_s_median"] / s["hopping"]["events_per_s_median"]
        out.append(f"Throughput: **{'met' if r >= 1.0 else 'missed'}**: windowagg's sliding windows reach {r:.2f}× "
                   "the events/s of Spark's hopping `window()` (target ≥ 1×).")
    for kind, built_in in NEAREST_BUILT_IN.items():
        if f"{kind}_vs_{built_in}" in ratios:
            r = ratios[f"{kind}_vs_{built_in}"]
            out.append(f"Other kinds: **{'met' if r <= 1.5 else 'missed'}**: {LABELS[kind]} takes {r:.2f}× the time "
                       f"of Spark's `{built_in}` per event (target ≤ 1.5×).")
    if "windowagg" in s:
        g = s["windowagg"]["state"]["growth"]
        if g is not None:
            flat = abs(g) <= 0.10
            out.append(f"State: **{'met' if flat else 'missed'}**: windowagg's state rows changed by {g:+.1%} "
                       "between the second and the last quarter of the run "
                       f"({'flat within ±10%' if flat else 'more than ±10%'}).")
    return out


# --------------------------------------------------------------------------------------- main
def run(b: protocol.Run) -> None:
    a, res, spark, save = b.a, b.res, b.spark, b.save
    work = Path(a.work_dir) if a.work_dir else Path(tempfile.mkdtemp(prefix="windowagg-bench-streaming-"))
    work.mkdir(parents=True, exist_ok=True)
    per_batch = -(-a.rows // a.batches)
    log(f"rows={a.rows:,} keys={a.keys} batches={a.batches} ({per_batch:,} events each) density={a.density}/s/key "
        f"S={a.size}s hop={a.size * 1000 // a.hop_divisor}ms grace={a.grace}s reps={a.reps} work={work}")
    meter = harness.CpuMeter(spark)
    res["workload"] = {"rows": a.rows, "keys": a.keys, "batches": a.batches, "rows_per_batch": per_batch,
                       "density": a.density, "size_s": a.size, "hop_ms": a.size * 1000 // a.hop_divisor,
                       "grace_s": a.grace, "jitter_ms": a.jitter_ms, "start": a.start, "warmup_batches": a.warmup_batches,
                       "warmup_runs": a.warmup_runs,
                       "event_seconds_per_batch": round(per_batch / (a.keys * a.density), 3)}
    try:
        t0 = time.perf_counter()
        files = data.sliding_stream_files(spark, work / "input", a.rows, a.batches, a.keys, a.density, a.seed, a.jitter_ms,
                                          data.BASE_MS if a.start is None else start_ms(a.start))
        log(f"input: {len(files)} files, {sum(f.stat().st_size for f in files) / 2**20:.1f} MiB "
            f"({time.perf_counter() - t0:.1f}s)")
        warm_n = min(a.warmup_batches, len(files))
        harness.link_subset(files, work / "warmup", warm_n)

        for comp in a.competitors:
            r = run_query(comp, spark, a, work / "warmup", work / "ck-warmup", warm_n, meter)
            r.update({"kind": "warm-up", "rep": 0})
            res["runs"].append(r)
            log(f"{comp:10s} warm-up: {r['status']} {r['events']:,} events in {r['processing_s']:.1f}s processing "
                f"({r['wall_s']:.1f}s wall)")
            save()
        for i in range(a.warmup_runs):
            for comp in a.competitors:
                r = run_query(comp, spark, a, work / "input", work / f"ck-warmup-{comp}-{i}", len(files), meter)
                r.update({"kind": "warm-up", "rep": 0})
                res["runs"].append(r)
                log(f"{comp:10s} warm-up run {i + 1}: {r['status']} {r['events_per_s'] or 0:,.0f} events/s (untimed)")
                save()

        for rep in range(1, a.reps + 1):
            order = a.competitors if rep % 2 else list(reversed(a.competitors))
            for comp in order:
                r = b.timed_run(meter, lambda: run_query(comp, spark, a, work / "input", work / f"ck-{comp}",
                                                         len(files), meter), kind="timed", rep=rep)
                st = [batch["state_rows"] for batch in r["batches"]] or [0]
                eps = f"{r['events_per_s']:,.0f}" if r["events_per_s"] else "-"
                fc = "?" if r["foreign_cores"] is None else f"{r['foreign_cores']:.2f}"
                log(f"{comp:10s} rep {rep}: {r['status']} {r['events']:,} events, {r['micro_batches']} micro-batches, "
                    f"{r['processing_s']:.1f}s processing ({r['wall_s']:.1f}s wall) -> {eps} events/s; "
                    f"state rows max {max(st):,} last {st[-1]:,}; output {r['output_rows']:,} rows; "
                    f"other processes {fc} cores{' CONTENDED' if r['contended'] else ''}")

        if a.profile and "windowagg" in a.competitors:
            log("profiling one more windowagg run with Java Flight Recorder ...")
            try:
                n = min(a.profile_batches, len(files))
                harness.link_subset(files, work / "profile", n)
                res["profile"] = profile_run("windowagg", spark, a, work / "profile", work / "ck-profile", work,
                                             meter, n)
                for c in res["profile"].get("categories", [])[:8]:
                    log(f"  {c['share']:6.1%}  {c['category']}")
            except Exception as e:  # the profile is a bonus; the measurements stand without it
                res["profile"] = {"error": str(e).splitlines()[0][:300]}
                log(f"profile failed: {res['profile']['error']}")
    finally:
        if not a.work_dir:
            shutil.rmtree(work, ignore_errors=True)


def summary(res: dict) -> None:
    for comp, x in res["summary"].items():
        log(f"{comp:10s} {x['events_per_s_median']:,.0f} events/s; state rows 2nd quarter {x['state']['q2_mean']} "
            f"-> last quarter {x['state']['q4_mean']}")
    for line in res["verdict"]:
        log(line)


BENCHMARK = protocol.Benchmark(
    "sliding_streaming", "windowagg-bench-sliding-streaming", parse_args, run, render_doc, DOC, IMG, results={"runs": []},
    summary=summary, summarize=summarize, indent=1,
    also_write=lambda path, res: harness.write_run_csvs(path, res["runs"], ("competitor", "kind", "rep")),
    start=lambda a: {"config": harness.stream_config, "streaming": True, "log_level": "ERROR"})
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
