#!/usr/bin/env python3
"""Turns a sliding_batch results JSON into docs/benchmarks.md and docs/img/sliding_batch.png.

    .venv/bin/python bench/report.py bench/results/sliding_batch-full.json

Everything in the page comes from the JSON (a run's measurements and the machine it ran on),
except the hand-written observations, taken from bench/sliding_batch_notes.md when it exists.
matplotlib is installed into the running interpreter on first use if it is missing.
"""
from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
DOC = REPO / "docs" / "benchmarks.md"
IMG = REPO / "docs" / "img" / "sliding_batch.png"
NOTES = BENCH_DIR / "sliding_batch_notes.md"

ORDER = ["windowagg", "over_range", "over_segtree", "hopping", "sort_floor"]
LABELS = {
    "windowagg": "windowagg sliding windows (full KIP-450 set)",
    "over_range": "OVER RANGE frame, default",
    "over_segtree": "OVER RANGE frame, `segmentTree.enabled=true`",
    "hopping": "hopping `window(ts, S, '1 second')` + groupBy",
    "sort_floor": "floor: shuffle + sort by (k, ts)",
}
SHORT = {
    "windowagg": "windowagg",
    "over_range": "OVER RANGE (default)",
    "over_segtree": "OVER RANGE (segment tree)",
    "hopping": "hopping, 1 s slide",
    "sort_floor": "shuffle + sort floor",
}
STYLE = {
    "windowagg": dict(color="tab:blue", marker="o", linewidth=2.5),
    "over_range": dict(color="tab:red", marker="s"),
    "over_segtree": dict(color="tab:orange", marker="D"),
    "hopping": dict(color="tab:green", marker="^"),
    "sort_floor": dict(color="gray", marker="v", linestyle="--"),
}


def ensure_matplotlib():
    try:
        return importlib.import_module("matplotlib")
    except ImportError:
        print("matplotlib missing: installing it with pip ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"], check=True)
        importlib.invalidate_caches()
        return importlib.import_module("matplotlib")


def cell(res, comp, target):
    for c in res["cells"]:
        if c["competitor"] == comp and c["target"] == target:
            return c
    return None


def fmt_time(c) -> str:
    if c is None:
        return "–"
    if c["status"] == "ok":
        n = len(c["times_s"])
        s = f"{c['median_s']:.2f}"
        if c.get("contended_runs"):
            s += " †"
        return s if n >= 3 else f"{s} (n={n})"
    if c["status"] == "timeout":
        return f"timed out > {c['note'].split('>')[1].split('s')[0].strip()} s" if c.get("note") else "timed out"
    if c["status"] == "skipped":
        return "not run (" + (c.get("note") or "") + ")"
    return "error"


def cpu_median(res, c):
    """Median CPU seconds of the benchmark process (driver JVM, which holds the local executors,
    plus Python) over the cell's timed runs: from the cell, or matched from the runs list."""
    if c is None or c.get("status") != "ok":
        return None
    if c.get("median_cpu_s") is not None:
        return c["median_cpu_s"]
    cpu = []
    for t in c["times_s"]:
        for r in res.get("runs", []):
            if (r["competitor"] == c["competitor"] and r["target"] == c["target"]
                    and r["kind"] != "warm-up" and r["seconds"] == t and r.get("own_cpu") is not None):
                cpu.append(r["own_cpu"])
                break
    if len(cpu) != len(c["times_s"]) or not cpu:
        return None
    cpu.sort()
    n = len(cpu)
    return cpu[n // 2] if n % 2 else (cpu[n // 2 - 1] + cpu[n // 2]) / 2


def value(res, c, metric):
    if c is None:
        return None
    return c.get("median_s") if metric == "wall" else cpu_median(res, c)


def ratio(a, b, res=None, metric="wall"):
    va, vb = value(res, a, metric), value(res, b, metric)
    if va is None or vb is None:
        return None
    return va / vb


def lower_bound_ratio(a, b, timeout, res=None, metric="wall"):
    """a timed out: a / b is at least timeout / b (wall time only)."""
    vb = value(res, b, "wall")
    if metric == "wall" and a is not None and a["status"] in ("timeout", "skipped") and vb:
        return timeout / vb
    return None


def fmt_ratio(r, lb=None) -> str:
    if r is not None:
        return f"{r:.1f}×" if r >= 10 else f"{r:.2f}×"
    if lb is not None:
        return f"> {lb:.0f}×"
    return "–"


def plot(res, path: Path):
    """Two panels, median wall time and median CPU time against rows per window (log-log);
    wall-time points of contended cells (†) are drawn hollow."""
    ensure_matplotlib()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    timeout = res["args"]["timeout"]
    targets = [p["target"] for p in res["points"]]
    xs = {p["target"]: (p.get("mean_rows_per_left_window") or p["target"]) for p in res["points"]}
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.2), dpi=110)
    for ax, metric in zip(axes, ("wall", "cpu")):
        for comp in ORDER:
            pts = [(xs[t], cell(res, comp, t)) for t in targets]
            pts = [(x, c) for x, c in pts if c is not None]
            if not pts:
                continue
            ok = [(x, value(res, c, metric), c) for x, c in pts if c["status"] == "ok"]
            ok = [(x, y, c) for x, y, c in ok if y is not None]
            st = STYLE[comp]
            if ok:
                ax.plot([x for x, _, _ in ok], [y for _, y, _ in ok], label=SHORT[comp],
                        **{k: v for k, v in st.items() if k != "marker"})
                for x, y, c in ok:
                    hollow = metric == "wall" and c.get("contended_runs")
                    ax.scatter([x], [y], marker=st["marker"], s=45, zorder=4,
                               facecolors="white" if hollow else st["color"], edgecolors=st["color"])
            to = [x for x, c in pts if c["status"] == "timeout"]
            if to and metric == "wall":
                ax.scatter(to, [timeout] * len(to), marker="x", s=80, color=st["color"], zorder=5)
                for x in to:
                    ax.annotate(f"{SHORT[comp]}: > {timeout:.0f} s", (x, timeout), textcoords="offset points",
                                xytext=(-10, 8), ha="right", fontsize=8, color=st["color"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.xaxis.set_major_locator(FixedLocator(sorted(xs.values())))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("mean rows per window (records in [t − S, t], measured)")
        ax.set_ylabel("median wall time, s (log); hollow: shared the cores (†)" if metric == "wall"
                      else "median CPU time of the benchmark process, s (log)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    w = res["workload"]
    fig.suptitle(f"Sliding-window sum/count/max, {w['rows'] / 1e6:g}M rows, {w['keys']} keys, "
                 f"{res['config']['master']}: wall time (left), CPU time (right)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def render(res, img_rel: str, json_rel: str) -> str:
    m, cfg, w, a = res["machine"], res["config"], res["workload"], res["args"]
    timeout = a["timeout"]
    targets = [p["target"] for p in res["points"]]
    pts = {p["target"]: p for p in res["points"]}
    comps = [c for c in ORDER if any(x["competitor"] == c for x in res["cells"])]
    quick = a.get("quick")
    L = []
    L.append("# Benchmarks")
    L.append("")
    L.append("<!-- Generated by bench/report.py from " + json_rel + "; edit bench/report.py or "
             "bench/sliding_batch_notes.md, not this file. -->")
    L.append("")
    L.append("## Batch sliding windows: windowagg vs. Spark's built-in options")
    L.append("")
    if quick:
        L.append("> **This page shows a `--quick` smoke run** (small input); its numbers are not the "
                 "full benchmark.")
        L.append("")
    if not res.get("finished"):
        L.append("> **This run did not finish**; only the cells measured before it stopped are shown.")
        L.append("")
    L.append(f"Run {res['started']} (git `{res.get('git_rev') or '?'}`), results in "
             f"[`{json_rel}`](../{json_rel}) and the `.csv` beside it.")
    L.append("")
    L.append("### Machine")
    L.append("")
    L.append(f"- CPU: {m.get('cpu_model')}, {m.get('cpus_visible')} cores visible; memory {m.get('memory_gib')} GiB")
    L.append(f"- {m.get('os')}; {m.get('java')}; Spark {m.get('spark')} (PySpark {m.get('pyspark')}), "
             f"Python {m.get('python')}")
    L.append(f"- Spark: `master={cfg['master']}`, `spark.driver.memory={cfg['spark.driver.memory']}` "
             f"(max heap {m.get('driver_max_heap_gib')} GiB), "
             f"`spark.sql.shuffle.partitions={cfg['spark.sql.shuffle.partitions']}`, "
             f"AQE enabled = {cfg.get('spark.sql.adaptive.enabled')}, AQE partition coalescing = "
             f"{cfg.get('spark.sql.adaptive.coalescePartitions.enabled', 'true (default)')} (off: every "
             f"shuffle, the floor's included, has exactly {cfg['spark.sql.shuffle.partitions']} reduce tasks), "
             f"everything else default")
    st = cfg.get("segment_tree_conf") or {}
    if st:
        L.append("- Segment-tree window frame settings in this Spark (defaults): " +
                 ", ".join(f"`{k.replace('spark.sql.window.segmentTree.', '')}={v}`" for k, v in st.items()))
    jar = cfg.get("windowagg_jar")
    if jar:
        sha = f", sha256 `{jar['sha256'][:12]}…`" if jar.get("sha256") else ""
        L.append(f"- windowagg jar: `{jar['path']}` as of the run's start ({jar['bytes']:,} bytes, "
                 f"modified {jar['mtime']}{sha}; the run used a private copy), "
                 f"called through the {cfg.get('windowagg_via')}")
    L.append("")
    L.append("### Method")
    L.append("")
    L.append(f"- Input: {w['rows']:,} rows, {w['keys']:,} keys (`k` int), {w['rows_per_key']:,} rows per key; "
             f"`ts` TIMESTAMP with {w['density_per_s_per_key']:g} events per second per key "
             f"(key k's i-th event at (i + u) / {w['density_per_s_per_key']:g} s, u uniform, millisecond "
             f"precision, so each key spans {w['span_s_per_key']:.0f} s and its times are distinct); `v` double. "
             f"Rows are shuffled, cached in {w.get('cached_partitions')} partitions and materialized "
             f"before any timing; every competitor reads the same cached DataFrame in the same process.")
    L.append("- The rows per window are varied through the window size S alone (event density fixed). "
             "S is chosen so that the *mean* window (the records in [t − S, t]) holds about the target "
             "number of rows, correcting for the first S seconds of each key where windows are partial; "
             "the measured means are in the table below.")
    L.append("- All competitors compute `sum(v)`, `count(v)`, `max(v)`:")
    L.append("  1. **windowagg**: `df.groupBy(\"k\", windowagg.window(\"ts\", SlidingWindows.of(S))).agg(...)`, "
             "the full KIP-450 window set: per distinct time t a left window [t − S, t] and, when not empty, "
             "a right window [t + 1 µs, t + 1 µs + S].")
    L.append("  2. **OVER RANGE (default)**: `... OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN "
             "INTERVAL S PRECEDING AND CURRENT ROW)`, default configuration.")
    L.append("  3. **OVER RANGE (segment tree)**: the same query with "
             "`spark.sql.window.segmentTree.enabled=true` (this config exists in Spark 4.3; "
             "default `false`).")
    L.append("  4. **hopping**: Spark's `window(ts, S, '1 second')` + `groupBy(k, window)`, which copies "
             "each row into S / 1 s windows (not the same window set: one window per second of slide).")
    L.append("  5. **floor**: `df.repartition(4, \"k\").sortWithinPartitions(\"k\", \"ts\")`, i.e. the "
             "shuffle and sort any sort-based sliding-window operator needs, with nothing computed.")
    L.append(f"- Every result is consumed in full on the executors with `.write.format(\"noop\")`. Per cell: "
             f"one untimed warm-up run, then {a['reps']} timed runs; the **median** is reported (cells with "
             f"fewer runs say n=…: after a warm-up longer than {a['long_run']:.0f} s only one timed run "
             f"was taken). A run longer than {timeout:.0f} s is cancelled and reported as timed out; that "
             f"competitor is then not run at larger S.")
    L.append("- Output sizes differ and are not normalised: OVER returns one row per input row "
             f"({w['rows']:,}); windowagg returns one row per window, about two per distinct time "
             "(left + right windows, see below); the hopping query returns one row per (key, 1-second "
             "slide) window; the floor writes the input rows.")
    L.append("")
    L.append("### Window shapes per point")
    L.append("")
    L.append("| target rows/window | S | windowagg windows (left + right) | mean rows per window, all windowagg windows | mean rows per left window (= mean OVER frame) | max rows in a window |")
    L.append("|---:|---:|---:|---:|---:|---:|")
    for t in targets:
        p = pts[t]
        if "windows" in p:
            L.append(f"| {t:,} | {p['window_seconds']} s | {p['windows']:,} ({p['left_windows']:,} + "
                     f"{p['right_windows']:,}) | {p['mean_rows_per_window_all']:.1f} | "
                     f"{p['mean_rows_per_left_window']:.1f} | {p['max_rows_per_window']:,} |")
        else:
            L.append(f"| {t:,} | {p['window_seconds']} s | – | – | – | – |")
    L.append("")
    L.append("### Results: median wall time, seconds")
    L.append("")
    L.append("| competitor | " + " | ".join(f"~{t:,} rows/window (S = {pts[t]['window_seconds']} s)" for t in targets) + " |")
    L.append("|---|" + "---:|" * len(targets))
    for comp in comps:
        L.append(f"| {LABELS[comp]} | " + " | ".join(fmt_time(cell(res, comp, t)) for t in targets) + " |")
    contended = [c for c in res["cells"] if c.get("contended_runs")]
    if contended:
        L.append("")
        L.append(f"† At least one timed run of this cell shared the 2 cores with other processes on the "
                 f"machine (more than {a.get('contended', 0.2)} cores on average, measured from /proc"
                 + (f"; such runs were retried up to {a['retries']} times and the least contended attempt kept"
                    if a.get("retries") else "; this run did not retry them") + "). "
                 "Those cells read high. Worst: " + ", ".join(
                     f"{SHORT[c['competitor']]} @ ~{c['target']:,}: {c['contended_runs']} of "
                     f"{len(c['times_s'])} runs, up to {c['max_foreign_cores']:.2f} cores"
                     for c in sorted(contended, key=lambda c: -(c.get('max_foreign_cores') or 0))[:4]) + ".")
    L.append("")
    L.append("### Results: median CPU time, seconds")
    L.append("")
    L.append("CPU seconds used by the benchmark's own processes during each timed run (driver JVM, which "
             "runs the `local[2]` executors, plus Python; from /proc, so it includes JIT and GC threads). "
             "Unlike wall time it hardly moves when other processes share the machine, so it is the fairer "
             "basis for the ratios of any contended cell (†). It is not a substitute for wall time: an "
             "operator that leaves a core idle shows it only in wall time.")
    L.append("")
    L.append("| competitor | " + " | ".join(f"~{t:,}" for t in targets) + " |")
    L.append("|---|" + "---:|" * len(targets))
    for comp in comps:
        vals = []
        for t in targets:
            v = cpu_median(res, cell(res, comp, t))
            vals.append("–" if v is None else f"{v:.2f}")
        L.append(f"| {LABELS[comp]} | " + " | ".join(vals) + " |")
    L.append("")
    L.append("### Ratios")
    L.append("")
    L.append("Each cell: ratio of median wall times, then (in parentheses) the ratio of median CPU times.")
    L.append("")
    L.append("| ratio | " + " | ".join(f"~{t:,}" for t in targets) + " |")
    L.append("|---|" + "---:|" * len(targets))
    rows = [("OVER RANGE default ÷ windowagg", "over_range", "windowagg"),
            ("OVER RANGE segment tree ÷ windowagg", "over_segtree", "windowagg"),
            ("hopping ÷ windowagg", "hopping", "windowagg"),
            ("windowagg ÷ sort floor", "windowagg", "sort_floor")]

    def both(cx, cy):
        w = fmt_ratio(ratio(cx, cy, res, "wall"), lower_bound_ratio(cx, cy, timeout, res, "wall"))
        c = ratio(cx, cy, res, "cpu")
        return w if c is None else f"{w} ({fmt_ratio(c)})"

    for name, x, y in rows:
        if x not in comps or y not in comps:
            continue
        L.append(f"| {name} | " + " | ".join(both(cell(res, x, t), cell(res, y, t)) for t in targets) + " |")
    wa_lo, wa_hi = cell(res, "windowagg", targets[0]), cell(res, "windowagg", targets[-1])
    L.append(f"| windowagg @ ~{targets[-1]:,} ÷ windowagg @ ~{targets[0]:,} | {both(wa_hi, wa_lo)} |"
             + " |" * (len(targets) - 1))
    L.append("")
    L.append(f"![time vs rows per window]({img_rel})")
    L.append("")

    # targets of the issue, judged on wall time and on CPU time
    L.append("### Targets")
    L.append("")
    L.append("| target | wall time | verdict (wall) | CPU time | verdict (CPU) |")
    L.append("|---|---|---|---|---|")

    def verdict(ok):
        return "**met**" if ok is True else ("**not met**" if ok is False else "not measured")

    near500 = min(targets, key=lambda t: abs(t - 500))
    c_over, c_wa = cell(res, "over_range", near500), cell(res, "windowagg", near500)
    cols = []
    for metric in ("wall", "cpu"):
        r = ratio(c_over, c_wa, res, metric)
        lb = lower_bound_ratio(c_over, c_wa, timeout, res, metric)
        v = r if r is not None else lb
        cols += [f"{fmt_ratio(r, lb)} at ~{near500:,}", verdict(None if v is None else v >= 10)]
    L.append("| full KIP-450 window set ≥ 10× faster than the default OVER RANGE frame at ~500 rows/window | "
             + " | ".join(cols) + " |")
    cols = []
    for metric in ("wall", "cpu"):
        f = ratio(wa_hi, wa_lo, res, metric)
        cols += [f"{fmt_ratio(f)}", verdict(None if f is None else f <= 1.5)]
    L.append(f"| windowagg at ~1500 rows/window ≤ 1.5× windowagg at ~10 | " + " | ".join(cols) + " |")
    cols = []
    for metric in ("wall", "cpu"):
        worst, measured = None, 0
        for t in targets:
            q = ratio(cell(res, "windowagg", t), cell(res, "sort_floor", t), res, metric)
            if q is not None:
                measured += 1
                worst = q if worst is None else max(worst, q)
        ok = None if worst is None else worst <= 3
        if ok is True and measured < len(targets):
            ok = None  # not measured everywhere: only a failure can be stated
        cols += [f"worst {fmt_ratio(worst)} ({measured} of {len(targets)} points)", verdict(ok)]
    L.append("| windowagg ≤ 3× the shuffle + sort floor (at every point) | " + " | ".join(cols) + " |")
    L.append("")
    if res.get("checks"):
        L.append("Correctness spot check (`--check`, untimed): windowagg's left windows compared with OVER "
                 "RANGE's frames on 20 keys: " + "; ".join(
                     f"S = {c['window_seconds']} s: {c.get('rows_checked', '?'):,} rows, "
                     f"{c.get('mismatches', c.get('error'))} mismatches" for c in res["checks"]) + ".")
        L.append("")
    if NOTES.exists():
        L.append(NOTES.read_text().rstrip())
        L.append("")
    L.append("### Reproduce")
    L.append("")
    L.append("```")
    L.append("WINDOWAGG_JAR=/path/to/windowagg.jar bench/run          # full run (this page); bench/run --quick for a smoke run")
    L.append("bench/run --help                                         # rows, keys, points, reps, timeout, competitors")
    L.append(f".venv/bin/python bench/report.py {json_rel}   # regenerate this page")
    L.append("```")
    L.append("")
    return "\n".join(L)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Render docs/benchmarks.md from a sliding_batch results JSON.")
    p.add_argument("results", help="bench/results/sliding_batch-<tag>.json")
    p.add_argument("--doc", default=str(DOC))
    p.add_argument("--img", default=str(IMG))
    a = p.parse_args(argv)
    res = json.loads(Path(a.results).read_text())
    doc, img = Path(a.doc), Path(a.img)
    plot(res, img)
    try:
        json_rel = str(Path(a.results).resolve().relative_to(REPO))
    except ValueError:
        json_rel = a.results
    img_rel = str(Path("img") / img.name) if img.parent == doc.parent / "img" else str(img)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(render(res, img_rel, json_rel))
    print(f"wrote {doc} and {img}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
