#!/usr/bin/env python3
"""Session-window benchmark: windowagg KIP-94 session windows against Spark's `session_window`, in batch
and in streaming, on data.py's session_events (bursts per key; gap 30 s). Both merge events at most
the gap apart, so both get the same gap and find the same sessions.

Its input, batch and streaming runs are described in bench/README.md ('sessions.py'). Results:
bench/results/sessions-<tag>.json, sessions-<tag>.csv, sessions-<tag>-batches.csv.
docs/benchmarks-sessions.md is written by hand from them; --report draws its plot
(docs/img/sessions_<tag>.png: batch times per run and median, streaming state rows per micro-batch)
and prints its tables.
"""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import data  # noqa: E402  (the input generator)
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log, loadavg  # noqa: E402

GAP_S = data.SESSION_GAP_S
COMPETITORS = ["windowagg", "spark"]
COLORS = {"windowagg": "tab:blue", "spark": "tab:orange"}
LABELS = {"windowagg": "windowagg SessionWindows", "spark": "Spark session_window"}


def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 200k rows, 100 keys, 100k streamed, 2 reps")
    p.add_argument("--rows", type=int)
    p.add_argument("--keys", type=int)
    p.add_argument("--mean-session", type=float, default=50.0)
    p.add_argument("--reps", type=int)
    p.add_argument("--stream-rows", type=int)
    p.add_argument("--files", type=int, default=20)
    p.add_argument("--warmup-files", type=int, default=3)
    p.add_argument("--warmup-runs", type=int,
                   help="untimed runs of each competitor over all files after the short warm-up (default 2; quick 0): "
                        "the JVM's JIT compiles for seconds per run until about the third")
    p.add_argument("--stream-reps", type=int, default=1)
    p.add_argument("--watermark", default="10 seconds")
    p.add_argument("--stream-timeout", type=float, default=420.0)
    p.add_argument("--skip-streaming", action="store_true")
    p.add_argument("--skip-batch", action="store_true")
    harness.add_session_args(p, driver_memory="6g", seed=7)
    harness.add_contention_args(p, contended=0.3, quiet_wait=120.0, retries=False)
    harness.add_output_args(p, None)
    a = p.parse_args(argv)
    harness.defaults(a, rows=(4_000_000, 200_000), keys=(1000, 100), reps=(3, 2), stream_rows=(1_000_000, 100_000),
                     warmup_runs=(2, 0))
    if a.quick:
        a.files = min(a.files, 10)
    return a


# ---------------------------------------------------------------------------------- batch

def run_batch(b: protocol.Run):
    from pyspark.sql import functions as F
    spark, a, res, save = b.spark, b.a, b.res, b.save
    log(f"batch: building input {a.rows:,} rows, {a.keys} keys ...")
    t0 = time.perf_counter()
    df = (data.session_events(spark, a.rows, a.keys, a.mean_session, a.seed).drop("i")
          .orderBy(F.rand(a.seed + 9)).repartition(a.shuffle_partitions).cache())
    n = df.count()
    log(f"batch: input cached, {n:,} rows ({time.perf_counter() - t0:.1f}s)")
    bt = res["batch"] = {"rows": n, "keys": a.keys, "cells": {}, "runs": []}

    # once, untimed: both session counts (and rows per session)
    t0 = time.perf_counter()
    counts = {}
    for c in COMPETITORS:
        r = data.session_query(c, df).agg(F.count("*").alias("sessions"), F.sum("count_v").alias("rows"),
                             F.avg("count_v").alias("mean"), F.min("count_v").alias("min"),
                             F.max("count_v").alias("max"),
                             F.expr("percentile_approx(count_v, array(0.1, 0.5, 0.9, 0.99))").alias("pct"),
                             F.sum("sum_v").alias("sum_all")).collect()[0]
        counts[c] = {"sessions": r["sessions"], "rows": r["rows"], "mean_rows": r["mean"],
                     "min_rows": r["min"], "max_rows": r["max"], "p10_50_90_99": list(r["pct"]),
                     "sum_of_sum_v": r["sum_all"]}
        log(f"batch check {c}: {counts[c]}")
    bt["check"] = counts
    bt["check"]["same_session_count"] = counts["windowagg"]["sessions"] == counts["spark"]["sessions"]
    log(f"batch check: same number of sessions: {bt['check']['same_session_count']} "
        f"({time.perf_counter() - t0:.1f}s)")
    save()

    runner = harness.Runner(spark, timeout=600.0)

    def one(c, kind):
        def run_once():
            la0 = loadavg()
            r = runner.run(c, data.session_query(c, df))
            return {**r, "loadavg_before": la0, "loadavg_after": loadavg(),
                    "foreign_cores": (r["foreign_cpu"] / r["seconds"]) if r["foreign_cpu"] is not None else None}
        r = b.timed_run(runner.cpu, run_once, bt["runs"], quiet=kind != "warm-up", competitor=c, kind=kind)
        log(f"batch {c:9s} {kind}: {r['status']} {r['seconds']:.2f}s  loadavg {r['loadavg_before']} -> "
            f"{r['loadavg_after']}, other processes {r['foreign_cores'] or 0:.2f} cores{' CONTENDED' * r['contended']}")

    for c in COMPETITORS:
        one(c, "warm-up")
    for i in range(a.reps):
        for c in COMPETITORS:
            one(c, f"rep {i + 1}")
    for c in COMPETITORS:
        timed = [r for r in bt["runs"] if r["competitor"] == c and r["kind"] != "warm-up"]
        ts = [r["seconds"] for r in timed if r["status"] == "ok"]
        bt["cells"][c] = {"times_s": ts, "median_s": statistics.median(ts) if ts else None,
                          "median_foreign_cores": harness.median([r["foreign_cores"] for r in timed]),
                          "contended_runs": sum(r["contended"] for r in timed)}
        log(f"batch {c}: median {bt['cells'][c]['median_s']} of {[round(x, 2) for x in ts]}")
    w, s = bt["cells"]["windowagg"]["median_s"], bt["cells"]["spark"]["median_s"]
    bt["ratio_windowagg_over_spark"] = (w / s) if w and s else None
    save()
    df.unpersist()


# ------------------------------------------------------------------------------ streaming

def run_stream(name, spark, a, source: Path, checkpoint: Path, expected: int, meter: harness.CpuMeter) -> dict:
    """harness.run_stream of competitor `name` over the files in `source`, with the load average around it."""
    la0 = loadavg()
    r = harness.run_stream(spark, data.session_query(name, harness.file_stream(spark, source, a.watermark)), name, checkpoint,
                           expected, a.stream_timeout, meter)
    r.update({"loadavg_before": la0, "loadavg_after": loadavg()})
    return r


def run_streaming(b: protocol.Run):
    spark, a, res, save = b.spark, b.a, b.res, b.save
    work = Path(f"/tmp/windowagg-bench-sessions-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log(f"streaming: writing {a.stream_rows:,} events as {a.files} files ...")
    t0 = time.perf_counter()
    files = data.session_files(spark, work / "all", a.stream_rows, a.files, a.keys, a.mean_session, a.seed)
    warm = work / "warm"
    harness.link_subset(files, warm, a.warmup_files)
    log(f"streaming: files written ({time.perf_counter() - t0:.1f}s)")
    s = res["streaming"] = {"events": a.stream_rows, "files": a.files, "watermark": a.watermark, "runs": []}
    meter = harness.CpuMeter(spark)
    for c in COMPETITORS:
        r = run_stream(c, spark, a, warm, work / f"ck-warm-{c}", a.warmup_files, meter)
        log(f"streaming {c:9s} warm-up: {r['status']} {r['wall_s']:.1f}s")
    for i in range(a.warmup_runs):
        for c in COMPETITORS:
            r = run_stream(c, spark, a, work / "all", work / f"ck-warm-{c}-{i}", a.files, meter)
            log(f"streaming {c:9s} warm-up run {i + 1}: {r['status']} {r['events_per_s'] or 0:,.0f} ev/s (untimed)")
    for i in range(a.stream_reps):
        for c in COMPETITORS:
            r = b.timed_run(meter, lambda: run_stream(c, spark, a, work / "all", work / f"ck-{c}-{i}", a.files,
                                                      meter), s["runs"], kind=f"rep {i + 1}")
            st = [x["state_rows"] for x in r["batches"] if x["input_rows"] > 0]
            log(f"streaming {c:9s} rep {i + 1}: {r['status']} {r['events']:,} events, {r['micro_batches']} batches, "
                f"{r['processing_s']:.1f}s processing -> {r['events_per_s'] or 0:,.0f} ev/s; output {r['output_rows']:,}; "
                f"state rows per data batch {st}; loadavg {r['loadavg_before']} -> {r['loadavg_after']}, "
                f"other processes {r['foreign_cores'] or 0:.2f} cores{' CONTENDED' * r['contended']}")
    s["cells"] = {}
    for c in COMPETITORS:
        rs = [r for r in s["runs"] if r["competitor"] == c and r["status"] == "ok"]
        eps = [r["events_per_s"] for r in rs if r["events_per_s"]]
        st = harness.state_quarters(rs[-1]["batches"] if rs else [])
        sst = harness.state_quarters(rs[-1]["batches"] if rs else [], "state_sst_bytes")
        flushed = [x.get("state_flushed_bytes") or 0 for r in rs for x in r["batches"] if x["input_rows"] > 0]
        s["cells"][c] = {"events_per_s": eps, "median_events_per_s": harness.median(eps),
                         "state_rows_max": st["max"], "state_rows_q2_mean": st["q2_mean"],
                         "state_rows_q4_mean": st["q4_mean"], "state_sst_bytes_q4_mean": sst["q4_mean"],
                         "state_flushed_bytes_per_batch": statistics.mean(flushed) if flushed else None,
                         "own_cpu_s": harness.median([r["own_cpu_s"] for r in rs if r.get("own_cpu_s")]),
                         "contended_runs": sum(r["contended"] for r in rs),
                         "output_rows": rs[-1]["output_rows"] if rs else None}
    w, sp = s["cells"]["windowagg"]["median_events_per_s"], s["cells"]["spark"]["median_events_per_s"]
    s["ratio_windowagg_over_spark_events_per_s"] = (w / sp) if w and sp else None
    save()
    shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------------------------------ output

def write_csvs(path: Path, res: dict) -> None:
    harness.write_run_csvs(path, [{"part": part, **r} for part in ("batch", "streaming")
                                  for r in (res.get(part) or {}).get("runs", [])], ("part", "competitor", "kind"))


def sessions_config(a, spark) -> dict:
    return {k: spark.conf.get(k) for k in ["spark.sql.shuffle.partitions",
                                           "spark.sql.streaming.stateStore.providerClass",
                                           "spark.sql.adaptive.enabled"]}


def run(b: protocol.Run) -> None:
    spark, a, res, save = b.spark, b.a, b.res, b.save
    res["git"] = res.pop("git_rev")  # this benchmark's results have always named it so
    res.update({"tag": a.tag,
                "generator": {"gap_s": GAP_S, "spark_gap": f"{GAP_S} seconds",
                              "mean_rows_per_session": a.mean_session, "small_distance_ms": [1, 4999],
                              "break_distance_ms": [(GAP_S + 1) * 1000, 10 * GAP_S * 1000]},
                "loadavg_start": loadavg()})
    log(f"loadavg {res['loadavg_start']}")
    save()
    if not a.skip_batch:
        run_batch(b)
    if not a.skip_streaming:
        run_streaming(b)
    res["loadavg_end"] = loadavg()


# ------------------------------------------------------------------------------- plot and tables

def plot(res, img: Path) -> None:
    """Left: batch times per run and their median; right: streaming state rows per micro-batch."""
    plt = report.pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    b = res.get("batch") or {}
    for i, c in enumerate(COMPETITORS):
        cell = (b.get("cells") or {}).get(c)
        if not cell:
            continue
        ax1.bar(i, cell["median_s"], color=COLORS[c], alpha=0.8, label=f"{LABELS[c]} (median)")
        ax1.scatter([i] * len(cell["times_s"]), cell["times_s"], color="k", s=12, zorder=3)
    ax1.set_xticks([0, 1], ["windowagg", "Spark"])
    ax1.set_ylabel("seconds (noop sink)")
    ax1.set_title(f"Batch: {b.get('rows', 0):,} rows, {b.get('keys')} keys, gap {GAP_S} s")
    ax1.legend(fontsize=8)
    s = res.get("streaming") or {}
    for c in COMPETITORS:
        runs = [r for r in s.get("runs", []) if r["competitor"] == c and r["status"] == "ok"]
        if not runs:
            continue
        bs = [x for x in runs[-1]["batches"] if x["input_rows"] > 0]
        ax2.plot(range(1, len(bs) + 1), [x["state_rows"] for x in bs], marker="o", color=COLORS[c], label=LABELS[c])
    ax2.set_xlabel("micro-batch (one file each)")
    ax2.set_ylabel("state rows (numRowsTotal)")
    ax2.set_ylim(bottom=0)
    ax2.set_title(f"Streaming: {s.get('events', 0):,} events, {s.get('files')} files")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    report.save(fig, img)
    print(f"wrote {img}")


def tables(res) -> list[str]:
    """The Markdown tables of docs/benchmarks-sessions.md (written by hand around them)."""
    head, align = ["", "windowagg", "Spark session_window", "windowagg ÷ Spark"], "lrrr"
    def mark(cell):  # a cell with a contended run
        return " †" if cell.get("contended_runs") else ""
    L = []
    b, s = res.get("batch") or {}, res.get("streaming") or {}
    if b.get("cells"):
        w, sp = b["cells"]["windowagg"], b["cells"]["spark"]
        L += ["", *report.table(head, align, [
            ["batch median (s)", f"{w['median_s']:.2f}{mark(w)}", f"{sp['median_s']:.2f}{mark(sp)}",
             f"{w['median_s'] / sp['median_s']:.2f}"],
            ["batch runs (s)", ", ".join(f"{x:.2f}" for x in w["times_s"]), ", ".join(f"{x:.2f}" for x in sp["times_s"]), ""],
            ["other processes' CPU during runs (median, cores of 2)", f"{w['median_foreign_cores']:.2f}",
             f"{sp['median_foreign_cores']:.2f}", ""]])]
    if s.get("cells"):
        w, sp = s["cells"]["windowagg"], s["cells"]["spark"]
        rows = []
        if w["median_events_per_s"] and sp["median_events_per_s"]:
            rows.append(["streaming events/s (median)", f"{w['median_events_per_s']:,.0f}{mark(w)}",
                         f"{sp['median_events_per_s']:,.0f}{mark(sp)}",
                         f"{w['median_events_per_s'] / sp['median_events_per_s']:.2f}"])
        rows += [[k, f"{w[k]:,.0f}", f"{sp[k]:,.0f}", f"{w[k] / sp[k]:.2f}"]
                 for k in ["state_rows_q2_mean", "state_rows_q4_mean", "state_rows_max", "output_rows"]
                 if w[k] is not None and sp[k] is not None]
        L += ["", *report.table(head, align, rows)]
        for r in s["runs"]:
            L.append(f"- {r['competitor']} {r['kind']}: {r['status']}, {r['events']:,} events, {r['micro_batches']} "
                     f"batches, processing {r['processing_s']:.1f} s, wall {r['wall_s']:.1f} s, other processes "
                     f"{r['foreign_cores'] or 0:.2f} cores{' (contended)' * r.get('contended', False)}, "
                     f"loadavg {r['loadavg_before']} -> {r['loadavg_after']}; "
                     f"state rows {[x['state_rows'] for x in r['batches'] if x['input_rows'] > 0]}; trigger ms "
                     f"{[x['trigger_ms'] for x in r['batches']]}")
    return L


def render(res: dict, json_path: Path, doc: Path | None, img: Path | None) -> None:
    """The plot (docs/img/sessions_<tag>.png unless `img`) and the tables on stdout: the page is written
    by hand around them, so `doc` is not used."""
    plot(res, img or report.DOCS / "img" / f"sessions_{res['tag']}.png")
    print("\n".join(tables(res)))


BENCHMARK = protocol.Benchmark(
    "sessions", "windowagg-bench-sessions", parse_args, run, render, None, None, results={}, also_write=write_csvs,
    start=lambda a: {"config": sessions_config, "streaming": True})
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
