#!/usr/bin/env python3
"""Batch benchmark: windowagg's Storm-style count windows (`count N rows tie break seq`, sliding every
row) against Spark's ROWS frame, default and segment tree, at each window length N. The issue's
target: windowagg's time at the longest N within 1.5x its time at the shortest.

Its input, cells, checks and method are its page's: bench/count_batch_notes.md, rendered into
docs/benchmarks-count.md.
"""
from __future__ import annotations

import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

DOC = report.DOCS / "benchmarks-count.md"
IMG = report.DOCS / "img" / "count_batch.png"
NOTES = BENCH_DIR / "count_batch_notes.md"

# 2023-11-14 00:00:00 UTC plus 20 min 34.567 s (as aligned_batch.py)
BASE_MS = 1_699_920_000_000 + 1_234_567
SEQ_XOR = 0x5DEECE66D  # seq = id ^ SEQ_XOR: unique (XOR is a bijection), not in id (hence time) order

OVER = ["over_rows", "over_rows_segtree"]
COMPETITORS = ["windowagg", "over_rows_segtree", "over_rows"]  # per length, in this order
ORDER = ["windowagg", "over_rows_segtree", "over_rows", "sort_floor"]  # for tables and the plot
LABELS = {
    "windowagg": "windowagg `windows(ts, 'count N rows tie break seq')`",
    "over_rows_segtree": "Spark OVER ROWS, `segmentTree.enabled=true`",
    "over_rows": "Spark OVER ROWS, default frame",
    "sort_floor": "floor: shuffle + sort by (k, ts, seq)",
}
SHORT = {
    "windowagg": "windowagg count window",
    "over_rows_segtree": "OVER ROWS (segment tree)",
    "over_rows": "OVER ROWS (default)",
    "sort_floor": "shuffle + sort floor",
}
STYLE = {
    "windowagg": dict(color="tab:blue", marker="o", linewidth=2.5),
    "over_rows_segtree": dict(color="tab:orange", marker="D"),
    "over_rows": dict(color="tab:red", marker="s"),
    "sort_floor": dict(color="gray", marker="v", linestyle="--"),
}
TARGET_FLAT = 1.5  # windowagg(longest) / windowagg(shortest) must stay within this


def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 200k rows / 50 keys (the same 4000 rows per key as the full run), 2 reps, "
                                "120 s timeout, no docs")
    p.add_argument("--rows", type=int, help="input rows (default 4,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 50)")
    p.add_argument("--lengths", default="10,1000,10000",
                   help="window lengths N in rows, comma separated (default 10,1000,10000)")
    p.add_argument("--step-ms", type=int, default=100,
                   help="mean milliseconds between a key's distinct times (default 100: 10 events/s/key)")
    p.add_argument("--dup-fraction", type=float, default=0.1,
                   help="share of rows that take the time of the row before them (default 0.1)")
    p.add_argument("--check-keys", type=int, default=20,
                   help="the correctness check runs on the keys k < N (default 20)")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the correctness check")
    p.add_argument("--no-skip-longer", dest="skip_longer", action="store_false",
                   help="run an OVER competitor at longer lengths even after it timed out at a shorter one")
    batch = harness.add_batch_args(p, DOC.name, reps=(3, 2), timeout=(600.0, 120.0))
    a = p.parse_args(argv)
    harness.defaults(a, rows=(4_000_000, 200_000), keys=(1000, 50), **batch)
    a.lengths = sorted({int(x) for x in a.lengths.split(",") if x.strip()})
    if not a.lengths or min(a.lengths) < 1:
        p.error("--lengths: positive integers")
    if not 0.0 <= a.dup_fraction < 1.0:
        p.error("--dup-fraction: in [0, 1)")
    return a


# ------------------------------------------------------------------------------ input

def make_input(spark, rows: int, keys: int, step_ms: int, dup_fraction: float, seed: int, partitions: int):
    """rows rows over `keys` keys, key k's i-th row (i = id / keys) at time slot j = i, or j = i - 1
    with probability dup_fraction (then it shares the time of slot i - 1, usually the row before);
    slot j of key k is at BASE + j * step_ms + (a hash of (k, j)) mod step_ms milliseconds, so a
    key's slots are strictly increasing. seq = id XOR a constant (unique); v a multiple of 1/1024
    in [0, 1000). Rows are shuffled randomly (no competitor gets sorted input)."""
    from pyspark.sql import functions as F
    dup = (F.rand(seed) < F.lit(dup_fraction)) & (F.col("i") > 0)
    j = F.col("i") - F.when(dup, 1).otherwise(0)
    jitter = F.pmod(F.hash(F.col("k"), F.col("j"), F.lit(seed)), F.lit(step_ms)).cast("long")
    return (spark.range(rows)
            .select((F.col("id") % keys).cast("int").alias("k"), (F.col("id") / keys).cast("long").alias("i"),
                    F.col("id"))
            .withColumn("j", j.cast("long"))
            .withColumn("ts_ms", F.lit(BASE_MS) + F.col("j") * F.lit(step_ms) + jitter)
            .select("k", F.timestamp_millis("ts_ms").alias("ts"),
                    (F.floor(F.rand(seed + 1) * 1_024_000) / 1024.0).alias("v"),
                    F.col("id").bitwiseXOR(F.lit(SEQ_XOR)).alias("seq"))
            .orderBy(F.rand(seed + 2))
            .repartition(partitions))


def cache_input(df) -> tuple[object, dict]:
    """harness.cache_input, plus what the page says of ties: distinct seq and (k, ts), rows per key."""
    from pyspark.sql import functions as F
    df, info = harness.cache_input(df, "count", distinct_seq=F.countDistinct("seq"))
    distinct_kts = df.select("k", "ts").distinct().count()
    per_key = df.groupBy("k").count().agg(F.min("count").alias("lo"), F.max("count").alias("hi")).collect()[0]
    info.update({"distinct_k_ts": distinct_kts, "rows_sharing_an_earlier_time": info["rows"] - distinct_kts,
                 "rows_per_key_min": per_key["lo"], "rows_per_key_max": per_key["hi"]})
    log(f"input: {distinct_kts:,} distinct (k, ts), {per_key['lo']:,}..{per_key['hi']:,} rows per key")
    return df, info


def mean_rows_per_window(rows_per_key: int, n: int) -> float:
    """Mean over a key's rows of min(i, N), i = 1..rows_per_key: the mean frame size (the first
    N - 1 rows of each key have partial windows)."""
    p = rows_per_key
    if p <= 0:
        return 0.0
    m = min(p, n)
    return (m * (m + 1) / 2 + (p - m) * n) / p


# ------------------------------------------------------------------------------ queries

def spec(n: int) -> str:
    return f"count {n} rows tie break seq"


def q_windowagg(df, n: int):
    from pyspark.sql import functions as F
    return df.groupBy("k", F.expr(f"windows(ts, '{spec(n)}')").alias("window")).agg(*harness.sum_count_avg())


def q_window_agg_table(spark, df, n: int, view: str):
    df.createOrReplaceTempView(view)
    return spark.sql(f"SELECT * FROM window_agg(TABLE({view}) PARTITION BY k ORDER BY (ts), '{spec(n)}', "
                     "'sum(v) AS s, count(1) AS n, avg(v) AS a')")


def frame(n: int):
    from pyspark.sql import Window
    return Window.partitionBy("k").orderBy("ts", "seq").rowsBetween(-(n - 1), Window.currentRow)


def q_over_rows(df, n: int):
    """The same windows as `count N rows tie break seq`, one output row per input row (k, ts = the
    window's end, the aggregates); the segment-tree cell is this query with the conf on."""
    from pyspark.sql import functions as F
    w = frame(n)
    return df.select("k", "ts", F.sum("v").over(w).alias("s"), F.count(F.lit(1)).over(w).alias("n"),
                     F.avg("v").over(w).alias("a"))


def q_floor(df, partitions: int):
    return df.repartition(partitions, "k").sortWithinPartitions("k", "ts", "seq")


def check(spark, df, n: int, keys: int) -> dict:
    """Untimed: windowagg's windows (windows() groupBy and window_agg table) against OVER ROWS on the
    keys k < `keys`, as multisets of (k, start, end, count, round(sum, 6)), exceptAll both ways."""
    from pyspark.sql import functions as F
    sub = df.where(F.col("k") < keys)
    w = frame(n)
    over = sub.select("k", F.min("ts").over(w).alias("start"), F.col("ts").alias("end"),
                      F.count(F.lit(1)).over(w).alias("n"), F.round(F.sum("v").over(w), 6).alias("s")).cache()
    wa = q_windowagg(sub, n).select("k", F.col("window.start").alias("start"), F.col("window.end").alias("end"),
                                    "n", F.round("s", 6).alias("s"))
    tvf = q_window_agg_table(spark, sub, n, "count_check_src").select(
        "k", F.col("window_start").alias("start"), F.col("window_end").alias("end"), "n", F.round("s", 6).alias("s"))
    out = {"length": n, "keys_below": keys}
    # how much the tie-break matters here: OVER frames that change when equal times are ordered by
    # seq descending instead (were windowagg to ignore or reverse the tie-break, these would mismatch)
    from pyspark.sql import Window
    wr = Window.partitionBy("k").orderBy(F.col("ts"), F.col("seq").desc()).rowsBetween(-(n - 1), Window.currentRow)
    rev = sub.select("k", F.min("ts").over(wr).alias("start"), F.col("ts").alias("end"),
                     F.count(F.lit(1)).over(wr).alias("n"), F.round(F.sum("v").over(wr), 6).alias("s"))
    out["frames_changed_by_reversed_tie_break"] = over.exceptAll(rev).count()
    r = over.agg(F.count("*").alias("rows"), F.avg("n").alias("mean_n"), F.max("n").alias("max_n")).collect()[0]
    out.update({"over_rows": r["rows"], "mean_rows_per_window": r["mean_n"], "max_rows_per_window": r["max_n"]})
    for name, side in (("windowagg", wa), ("window_agg_table", tvf)):
        side = side.cache()
        only_wa = side.exceptAll(over).count()
        only_over = over.exceptAll(side).count()
        out[name] = {"rows": side.count(), "only_in_windowagg": only_wa, "only_in_over": only_over,
                     "mismatches": only_wa + only_over}
        if only_wa or only_over:  # a few examples, for the report
            out[name]["examples_only_in_windowagg"] = [r.asDict() for r in
                                                       side.exceptAll(over).orderBy("k", "end", "n").limit(5).collect()]
            out[name]["examples_only_in_over"] = [r.asDict() for r in
                                                  over.exceptAll(side).orderBy("k", "end", "n").limit(5).collect()]
        side.unpersist()
    over.unpersist()
    return out


# ------------------------------------------------------------------------------ the run

def run(b: protocol.Run) -> None:
    a, res, spark = b.a, b.res, b.spark
    src, info = cache_input(make_input(spark, a.rows, a.keys, a.step_ms, a.dup_fraction, a.seed,
                                       a.shuffle_partitions))
    res["input"] = {**info, "rows_per_key": a.rows // a.keys, "step_ms": a.step_ms, "dup_fraction": a.dup_fraction,
                    "seq": f"id XOR {SEQ_XOR:#x}", "v": "floor(rand * 1024000) / 1024"}
    for n in a.lengths:
        res["lengths"][str(n)] = {"length": n, "spec": spec(n),
                                  "mean_rows_per_window": mean_rows_per_window(a.rows // a.keys, n),
                                  "cells": {}}
    n0 = a.lengths[-1]
    res["plan_windowagg"] = harness.plan_of(q_windowagg(src, n0))
    res["plan_over_rows"] = harness.plan_of(q_over_rows(src, n0))
    b.save()

    if a.check:
        for n in a.lengths:
            b.check(f"N={n} on keys k < {a.check_keys}", lambda: check(spark, src, n, a.check_keys),
                    res["lengths"][str(n)], length=n, keys_below=a.check_keys)

    b.cell("sort_floor", lambda: q_floor(src, a.shuffle_partitions), res, "floor", competitor="sort_floor", length=None)

    def cells_at(n):
        return res["lengths"][str(n)]["cells"]
    for n in a.lengths:
        b.cell(f"N={n}/windowagg", lambda n=n: q_windowagg(src, n), cells_at(n), "windowagg", competitor="windowagg",
               length=n)
    for comp in ("over_rows_segtree", "over_rows"):
        conf = {harness.SEGTREE_CONF: "true"} if comp == "over_rows_segtree" else None
        b.until_timeout(a.lengths, "N", comp, "length", cells_at, lambda n: b.cell(
            f"N={n}/{comp}", lambda: q_over_rows(src, n), cells_at(n), comp, conf=conf, competitor=comp, length=n))
    src.unpersist()


# ------------------------------------------------------------------------------ summary + report

RATIOS = [("over_rows", "windowagg"), ("over_rows_segtree", "windowagg"), ("windowagg", "sort_floor")]  # num ÷ den


def get_cell(res, comp, n):
    if comp == "sort_floor":
        return res.get("floor")
    return res["lengths"].get(str(n), {}).get("cells", {}).get(comp)


def flat_ratio(res) -> tuple[int, int, dict, dict]:
    ns = sorted(int(x) for x in res["lengths"])
    lo, hi = ns[0], ns[-1]
    cl, ch = get_cell(res, "windowagg", lo), get_cell(res, "windowagg", hi)
    return lo, hi, {k: report.bounded_ratio(ch, cl, k) for k in ("median_s", "median_cpu_s")}, {"lo": cl, "hi": ch}


def summary(res) -> None:
    ns = sorted(int(x) for x in res["lengths"])
    c = res.get("floor")
    if c:
        log(f"SUMMARY {'-':>6s} {'sort_floor':18s} wall {report.fmt_seconds(c):>22s}  CPU {report.fmt_seconds(c, 'median_cpu_s'):>8s}")
    for n in ns:
        for comp in COMPETITORS:
            c = get_cell(res, comp, n)
            if c:
                report.log_cell(f"N={n:<6d} {comp:18s}", c, 22)
        for num, den in RATIOS:
            tw, tc = report.wall_and_cpu_ratios(get_cell(res, num, n), get_cell(res, den, n))
            log(f"SUMMARY N={n:<6d} {num} ÷ {den}: wall {tw}, CPU {tc}")
        ck = res["lengths"][str(n)].get("check")
        if ck:
            log(f"SUMMARY N={n:<6d} check: " + ("error " + ck["error"] if "error" in ck else
                f"windowagg {ck['windowagg']['mismatches']} mismatches, window_agg table "
                f"{ck['window_agg_table']['mismatches']} mismatches of {ck['over_rows']:,} OVER rows"))
    lo, hi, fr, _ = flat_ratio(res)
    log(f"SUMMARY windowagg N={hi} ÷ N={lo}: wall {fr['median_s'][0]}, CPU {fr['median_cpu_s'][0]} "
        f"(target ≤ {TARGET_FLAT}×)")


def plot(res, path: Path) -> None:
    """Median wall and CPU time against the window length, the floor as a horizontal line."""
    ns = sorted(int(x) for x in res["lengths"])
    timeout = res["args"]["timeout"]
    series = []
    for comp in COMPETITORS:
        cells = [(n, get_cell(res, comp, n)) for n in ns]
        series.append(report.Series(SHORT[comp], STYLE[comp], [
            report.Point(n, c["median_s"], c.get("median_cpu_s"), bool(c.get("contended_runs")),
                         f"> {timeout:.0f} s{' (not run)' if c.get('skipped') else ''}"
                         if c["status"] == "timeout" else None)
            for n, c in cells if c is not None and c["status"] in ("ok", "timeout")]))
    fl = res.get("floor")
    hlines = [(SHORT["sort_floor"], dict(color="gray", linestyle="--", linewidth=1.2), fl["median_s"],
               fl.get("median_cpu_s"))] if fl and fl["status"] == "ok" else []
    i = res["input"]
    report.wall_cpu_panels(
        series, path, timeout=timeout, hlines=hlines, legend_loc="best",
        xlabel="window length N, rows (log): the row and the N − 1 rows before it",
        cpu_ylabel="median CPU time of the benchmark processes, s (log)",
        title=f"Count window of N rows sliding every row, sum/count/avg: {i['rows']:,} rows, {i['keys']:,} keys "
              f"({i['rows_per_key']:,} per key), {res['config']['master']}"
              f"{' (quick run)' if res['args'].get('quick') else ''}: wall (left), CPU (right)")


def render(res: dict, json_path: Path, doc: Path, img: Path) -> None:
    """The page: bench/count_batch_notes.md (all of its prose) filled with what this run measured."""
    plot(res, img)
    a, i = res["args"], res["input"]
    ns = sorted(int(x) for x in res["lengths"])
    lo, hi, _, fl = flat_ratio(res)
    # within a table cell: no block can hold it
    targets = [report.flat_target(f"windowagg time at N = {hi:,} ÷ at N = {lo:,} ≤ {TARGET_FLAT}×", fl["hi"],
                                  fl["lo"], TARGET_FLAT, " († other processes shared the cores during these runs: the "
                                  "wall times read high, the CPU ratio is the steadier figure)")]
    checks = [res["lengths"][str(n)].get("check") for n in ns]
    checks = [c for c in checks if c]
    if checks:
        errs = [c for c in checks if "error" in c]
        bad = sum(c[s]["mismatches"] for c in checks if "error" not in c for s in ("windowagg", "window_agg_table"))
        rows = sum(c["over_rows"] for c in checks if "error" not in c)
        measured = (f"{bad:,} mismatching rows over {len(checks) - len(errs)} lengths ({rows:,} OVER rows)"
                    + (f"; {len(errs)} check(s) failed to run" if errs else ""))
        targets.append(["correctness: windowagg's windows = Spark's ROWS frames (0 mismatches)", measured,
                        "**met**" if bad == 0 and not errs else "**missed**"])
    else:
        targets.append(["correctness: windowagg's windows = Spark's ROWS frames (0 mismatches)",
                        "not checked (--no-check)", "not measured"])

    pk = i["rows_per_key"]
    # lengths longer than a key's rows: their windows never fill (the notes' {{#unfilled_windows}} block)
    short = [n for n in ns if n > pk]

    def row(nlab, mean, comp, c):
        return [nlab, mean, SHORT[comp], report.fmt_seconds(c), report.fmt_seconds(c, "median_cpu_s"),
                report.cpu_per_wall(c), *report.contention(c)]
    rows = [row(f"{n:,}", f"{res['lengths'][str(n)]['mean_rows_per_window']:,.1f}", comp, c)
            for n in ns for comp in COMPETITORS if (c := res["lengths"][str(n)]["cells"].get(comp))]
    if res.get("floor"):
        rows.append(row("any", "–", "sort_floor", res["floor"]))

    checked = []
    for n in ns:
        ck = res["lengths"][str(n)].get("check")
        if not ck:
            continue
        if "error" in ck:
            checked.append([f"{n:,}", f"check failed: {ck['error'][:200]}", *[""] * 6])
            continue
        w, t = ck["windowagg"], ck["window_agg_table"]

        def mm(x):
            s = f"**{x['mismatches']:,}**"
            return s if not x["mismatches"] else f"{s} ({x['only_in_windowagg']:,} only in windowagg, " \
                                                 f"{x['only_in_over']:,} only in OVER)"
        checked.append([f"{n:,}", f"{ck['over_rows']:,}",
                        f"{ck['mean_rows_per_window']:,.1f} / {ck['max_rows_per_window']:,}", f"{w['rows']:,}", mm(w),
                        f"{t['rows']:,}", mm(t), report.fmt_num(ck.get("frames_changed_by_reversed_tie_break"), ",")])
    ex = [(n, s, res["lengths"][str(n)]["check"][s]) for n in ns for s in ("windowagg", "window_agg_table")
          if (res["lengths"][str(n)].get("check") or {}).get(s, {}).get("mismatches")]
    # one paragraph per mismatch found (a list, so here, not in the notes), each with a blank line before it
    examples = "\n".join(f"\nExamples of mismatching rows, N = {n:,}, {s}: only in windowagg "
                         f"`{x.get('examples_only_in_windowagg')}`; only in OVER `{x.get('examples_only_in_over')}`."
                         for n, s, x in ex[:2])

    report.render_page(doc, img, NOTES, {
        "lengths": ", ".join(f"{n:,}" for n in ns),
        "shortest": f"{lo:,}",
        "longest": f"{hi:,}",
        "target_flat": TARGET_FLAT,
        "targets_table": report.targets_table(targets),
        "step_ms": i["step_ms"],
        "dup_fraction": f"{i['dup_fraction']:.0%}",
        "rows_sharing_an_earlier_time": f"{i['rows_sharing_an_earlier_time']:,}",
        "rows_sharing_an_earlier_time_pct": f"{i['rows_sharing_an_earlier_time'] / i['rows']:.1%}",
        "distinct_seq": f"{i['distinct_seq']:,}",
        "seq_definition": i["seq"],
        "unfilled_windows": bool(short),
        "unfilled_lengths": ", ".join(f"{n:,}" for n in short),
        "longest_unfilled": f"{max(short):,}" if short else "",
        "results_table": "\n".join(report.table(
            ["N (rows)", "mean rows per window", "competitor", "wall (s)", "CPU (s)", "CPU ÷ wall", "others (cores)",
             "contended runs"], "rrlrrrrr", rows)),
        "ratios_table": "\n".join(report.table(
            ["N (rows)", "OVER ROWS default ÷ windowagg", "OVER ROWS segment tree ÷ windowagg",
             "windowagg ÷ shuffle+sort floor"], "rrrr",
            [[f"{n:,}", *(" / ".join(report.wall_and_cpu_ratios(get_cell(res, num, n), get_cell(res, den, n)))
                          for num, den in RATIOS)] for n in ns])),
        "flat_table": "\n".join(report.table(["ratio", "wall time", "CPU time"], "lrr", [
            [f"windowagg N = {n:,} ÷ N = {ns[0]:,}" + (f" (target ≤ {TARGET_FLAT}×)" if n == ns[-1] else ""),
             *report.wall_and_cpu_ratios(get_cell(res, "windowagg", n), get_cell(res, "windowagg", ns[0]))]
            for n in ns[1:]])),
        "check_keys": a["check_keys"],
        "correctness_table": "\n".join(report.table(
            ["N (rows)", "OVER rows", "mean / max rows per window", "windowagg `windows()` rows", "mismatches",
             "`window_agg` table rows", "mismatches", "frames changed by a reversed tie-break"], "rrrrrrrr", checked)),
        "mismatch_examples": examples,
    }, report.run_values("count_batch.py", res, [json_path], doc, img, NOTES,
                         run_line_before=f" on {i['rows']:,} rows, {i['keys']:,} keys"))


BENCHMARK = protocol.Benchmark(
    "count_batch", "windowagg-bench-count", parse_args, run, render, DOC, IMG,
    results={"input": None, "lengths": {}, "floor": None}, summary=summary,
    start=lambda a: {"config": harness.segment_tree_config})
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
