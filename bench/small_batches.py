#!/usr/bin/env python3
"""Small micro-batches over many open keys: what a micro-batch costs as the state grows (issue 57).
For each number of open keys, a first file opens them all, then small files of new keys move the
watermark; sessions against Spark's session_window, tumbling windows against window(). Spark's
operators find what to close by reading their whole state; windowagg by its keys' timers.

Its input, kinds and runs are described in bench/README.md ('small_batches.py'). Results:
bench/results/small_batches-<tag>.json; --report draws docs/img/small_batches_<tag>.png and prints
the tables of docs/benchmarks-small-batches.md, which is written by hand around them.
"""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log, loadavg  # noqa: E402

COMPETITORS = ["windowagg", "spark"]
KINDS = {"sessions": ("windowagg SessionWindows, gap 10 hours", "Spark session_window"),
         "tumbling": ("windowagg TimeWindows, 1 day", "Spark window(), 1 day")}
SPAN_S = 36_000  # the first file's rows spread over 10 hours
START_S = 1_699_920_000  # a day's start (UTC)
STEP_S = 10  # each small file 10 s after the one before


def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 2k and 20k open keys, 4 small batches, 1 round")
    p.add_argument("--open-keys", type=lambda s: [int(x) for x in s.split(",")], help="comma-separated")
    p.add_argument("--kinds", type=lambda s: s.split(","), default=list(KINDS))
    p.add_argument("--small-batches", type=int)
    p.add_argument("--batch-rows", type=int, default=500)
    p.add_argument("--rounds", type=int)
    p.add_argument("--warmups", type=int, default=1,
                   help="unrecorded runs of each competitor and kind before the first recorded one (the JVM's code "
                        "warms up: a cold JIT penalizes whichever query runs more of its own code); 0 for none")
    p.add_argument("--timeout", type=float, default=900.0)
    harness.add_session_args(p, driver_memory="8g")
    harness.add_contention_args(p, contended=0.3, quiet_wait=120.0, retries=False)
    harness.add_output_args(p, None)
    a = p.parse_args(argv)
    harness.defaults(a, open_keys=([20_000, 200_000, 1_000_000], [2_000, 20_000]), small_batches=(8, 4), rounds=(3, 1))
    unknown = set(a.kinds) - set(KINDS)
    if unknown:
        p.error(f"unknown kinds {sorted(unknown)}: the kinds are {', '.join(KINDS)}")
    return a


def write_files(spark, folder: Path, keys: int, small: int, rows: int) -> None:
    """The first file opens `keys` keys; each small file holds `rows` rows of new keys, STEP_S later."""
    from pyspark.sql import functions as F
    opening = spark.range(keys).select(
        F.lit(0).alias("batch"), F.col("id").cast("int").alias("k"),
        F.timestamp_seconds(F.lit(START_S) + (F.col("id") * SPAN_S / keys).cast("long")).alias("ts"),
        F.col("id").cast("double").alias("v"))
    batch = (F.floor(F.col("id") / rows) + 1).cast("int")
    later = spark.range(small * rows).select(
        batch.alias("batch"), (F.col("id") + keys + rows).cast("int").alias("k"),
        F.timestamp_seconds(F.lit(START_S + SPAN_S) + batch * STEP_S).alias("ts"),
        (F.col("id") % rows).cast("double").alias("v"))
    harness.write_batches(opening.unionByName(later).repartition(small + 1, "batch"), folder, small + 1)


def query(competitor: str, kind: str, df):
    from pyspark.sql import functions as F
    import windowagg
    from windowagg import SessionWindows, TimeWindows
    aggs = [F.count("*").alias("n"), F.sum("v").alias("s")]
    if competitor == "windowagg":
        definition = SessionWindows.withInactivityGap("10 hours") if kind == "sessions" else TimeWindows.of("1 day")
        return df.groupBy("k", windowagg.window("ts", definition)).agg(*aggs)
    spark_window = F.session_window("ts", "10 hours") if kind == "sessions" else F.window("ts", "1 day")
    return df.groupBy("k", spark_window).agg(*aggs)


def small_batch_figures(progress: list, rows: int) -> dict:
    """Per small micro-batch (those of `rows` rows): its time, query planning, timers and the state
    store's commits (summed over the state partitions' tasks) in ms, of the commits, the time spent
    copying RocksDB's new files into the checkpoint and the bytes copied, the state's rows, and the
    bytes of its RocksDB files (their sum over the partitions)."""
    small = [p for p in progress if p["numInputRows"] == rows]

    def of_operators(p, field, custom=False):
        return sum(((op.get("customMetrics") or {}) if custom else op).get(field, 0) for op in p.get("stateOperators") or [])
    return {"trigger_ms": [p["durationMs"].get("triggerExecution", 0) for p in small],
            "planning_ms": [p["durationMs"].get("queryPlanning", 0) for p in small],
            "timers_ms": [of_operators(p, "timerProcessingTimeMs", custom=True) for p in small],
            "state_rows": [of_operators(p, "numRowsTotal") for p in small],
            "commit_ms": [of_operators(p, "commitTimeMs") for p in small],
            "commit_sync_ms": [of_operators(p, "rocksdbCommitFileSyncLatencyMs", custom=True) for p in small],
            "copied_bytes": [of_operators(p, "rocksdbBytesCopied", custom=True) for p in small],
            "state_file_bytes": [of_operators(p, "rocksdbSstFileSize", custom=True) for p in small]}


def run(b: protocol.Run) -> None:
    spark, a, res, save = b.spark, b.a, b.res, b.save
    res["tag"] = a.tag
    save()
    work = Path(f"/tmp/windowagg-bench-small-batches-{os.getpid()}")
    meter = harness.CpuMeter(spark)
    for keys in a.open_keys:
        source = work / f"in-{keys}"
        t0 = time.perf_counter()
        write_files(spark, source, keys, a.small_batches, a.batch_rows)
        log(f"{keys:,} open keys: files written ({time.perf_counter() - t0:.1f}s)")
        for kind in a.kinds:
            if keys == a.open_keys[0]:
                for warmup in range(a.warmups):
                    for c in COMPETITORS:
                        df = query(c, kind, harness.file_stream(spark, source, "0 seconds"))
                        r, _ = harness.run_stream_with_progress(spark, df, f"warmup_{c}_{kind}",
                                                                work / f"checkpoint-warmup-{c}-{kind}-{warmup + 1}",
                                                                a.small_batches + 1, a.timeout, meter)
                        log(f"{keys:>9,} {kind:8s} {c:9s} warm-up: {r['status']}")
            for rnd in range(a.rounds):
                order = COMPETITORS if rnd % 2 == 0 else COMPETITORS[::-1]
                for c in order:
                    def run_once():
                        la0 = loadavg()
                        df = query(c, kind, harness.file_stream(spark, source, "0 seconds"))
                        # each run a checkpoint of its own: with changelog checkpointing, Spark's maintenance may
                        # still upload a stopped query's snapshot into its checkpoint
                        r, progress = harness.run_stream_with_progress(
                            spark, df, f"{c}_{kind}_{keys}", work / f"checkpoint-{c}-{kind}-{keys}-{rnd + 1}",
                            a.small_batches + 1, a.timeout, meter)
                        figures = small_batch_figures(progress, a.batch_rows)
                        return {"open_keys": keys, "kind": kind, "competitor": c, "round": rnd + 1, "status": r["status"],
                                "first_batch_ms": r["batches"][0]["trigger_ms"] if r["batches"] else None,
                                "median_ms": harness.median(figures["trigger_ms"]),
                                "median_planning_ms": harness.median(figures["planning_ms"]),
                                "median_timers_ms": harness.median(figures["timers_ms"]),
                                "median_commit_ms": harness.median(figures["commit_ms"]),
                                **figures, "foreign_cores": r["foreign_cores"], "loadavg_before": la0,
                                "loadavg_after": loadavg()}
                    r = b.timed_run(meter, run_once)
                    log(f"{keys:>9,} {kind:8s} {c:9s} round {rnd + 1}: {r['status']}, small micro-batches "
                        f"{r['trigger_ms']} ms (median {r['median_ms']}), planning median {r['median_planning_ms']} "
                        f"ms, timers median {r['median_timers_ms']} ms, other processes {r['foreign_cores'] or 0:.2f} "
                        f"cores{' CONTENDED' * r['contended']}")
        shutil.rmtree(source, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    summarize(res)
    save()


def summarize(res: dict) -> None:
    """Per kind, open keys and competitor: the median of the runs' medians, its contended runs; and the ratios."""
    cells = {}
    for r in res["runs"]:
        if r["status"] == "ok":
            cells.setdefault(f"{r['kind']} {r['open_keys']}", {}).setdefault(r["competitor"], []).append(r)
    res["cells"] = {}
    for key, by in cells.items():
        cell = {c: {"median_ms": harness.median([r["median_ms"] for r in rs]), "runs_ms": [r["median_ms"] for r in rs],
                    "contended_runs": sum(r["contended"] for r in rs)} for c, rs in by.items()}
        if "windowagg" in cell and "spark" in cell:
            cell["ratio_windowagg_over_spark"] = cell["windowagg"]["median_ms"] / cell["spark"]["median_ms"]
        res["cells"][key] = cell


def plot(res: dict, img: Path) -> None:
    """A small micro-batch's median time against the open keys, per kind and competitor."""
    plt = report.pyplot()
    kinds = [k for k in KINDS if any(r["kind"] == k for r in res["runs"])]
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 4.2), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        for c, color, label in zip(COMPETITORS, ["tab:blue", "tab:orange"], KINDS[kind]):
            points = sorted((int(key.split()[1]), cell[c]["median_ms"]) for key, cell in res["cells"].items()
                            if key.split()[0] == kind and c in cell)
            runs = [(r["open_keys"], r["median_ms"]) for r in res["runs"] if r["kind"] == kind and r["competitor"] == c]
            ax.plot([x for x, _ in points], [y for _, y in points], marker="o", color=color, label=label)
            ax.scatter([x for x, _ in runs], [y for _, y in runs], color=color, s=10, alpha=0.5)
        ax.set_xscale("log")
        ax.set_xlabel("open keys in state")
        ax.set_ylabel(f"small micro-batch, median ms ({res['args']['batch_rows']} rows)")
        ax.set_ylim(bottom=0)
        ax.set_title(kind)
        ax.legend(fontsize=8)
    fig.tight_layout()
    report.save(fig, img)
    print(f"wrote {img}")


def tables(res: dict) -> list[str]:
    """The Markdown table of docs/benchmarks-small-batches.md, one row per kind and number of open keys."""
    rows = []
    for kind in KINDS:
        for key, cell in sorted(((k, v) for k, v in res["cells"].items() if k.split()[0] == kind),
                                key=lambda kv: int(kv[0].split()[1])):
            w, s = cell.get("windowagg"), cell.get("spark")
            timers = [r["median_timers_ms"] for r in res["runs"] if f"{r['kind']} {r['open_keys']}" == key
                      and r["competitor"] == "windowagg"]
            ms = [f"{x['median_ms']:.0f}{' †' if x.get('contended_runs') else ''}" if x else "" for x in (w, s)]
            rows.append([kind, f"{int(key.split()[1]):,}", *ms,
                         f"{cell['ratio_windowagg_over_spark']:.2f}" if "ratio_windowagg_over_spark" in cell else "",
                         f"{harness.median(timers):.0f}" if timers else ""])
    return report.table(["kind", "open keys", "windowagg (ms)", "Spark (ms)", "windowagg ÷ Spark",
                         "windowagg timers (ms)"], "lrrrrr", rows)


def commit_table(res: dict) -> list[str]:
    """Where the runs recorded them: per kind, open keys and competitor, the medians over the runs of a small
    micro-batch's state store commits (summed over the state partitions' tasks), of them the copying of new
    files into the checkpoint and the bytes copied (where recorded), its state's files and rows."""
    recorded = [r for r in res["runs"] if r["status"] == "ok" and "commit_ms" in r]
    copies = bool(recorded) and all("commit_sync_ms" in r for r in recorded)

    def median_of(runs, field, scale=1.0, form=".0f"):
        return f"{harness.median([harness.median(r[field]) for r in runs]) / scale:{form}}"
    rows = []
    for kind in KINDS:
        for keys in sorted({r["open_keys"] for r in recorded if r["kind"] == kind}):
            for c in COMPETITORS:
                runs = [r for r in recorded if (r["kind"], r["open_keys"], r["competitor"]) == (kind, keys, c)]
                if runs:
                    rows.append([kind, f"{keys:,}", c, median_of(runs, "trigger_ms"), median_of(runs, "commit_ms")]
                                + ([median_of(runs, "commit_sync_ms"), median_of(runs, "copied_bytes", 1e6, ".2f")]
                                   if copies else [])
                                + [median_of(runs, "state_file_bytes", 1e6, ".2f"),
                                   median_of(runs, "state_rows", form=",.0f")])
    heads = (["kind", "open keys", "competitor", "small micro-batch (ms)", "commits (ms, summed)"]
             + (["copying files (ms)", "copied (MB)"] if copies else []) + ["state files (MB)", "state rows"])
    return report.table(heads, "lll" + "r" * (len(heads) - 3), rows) if rows else []


def render(res: dict, json_path: Path, doc: Path | None, img: Path | None) -> None:
    plot(res, img or report.DOCS / "img" / f"small_batches_{res['tag']}.png")
    print("\n".join(tables(res)))
    commits = commit_table(res)
    if commits:
        print("\n" + "\n".join(commits))


BENCHMARK = protocol.Benchmark(
    "small_batches", "windowagg-bench-small-batches", parse_args, run, render, None, None, results={"runs": []},
    start=lambda a: {"config": harness.stream_config, "streaming": True})
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
