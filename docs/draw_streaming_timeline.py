#!/usr/bin/env python3
"""Draws docs/img/streaming_timeline.png, the timeline picture of docs/streaming.md.

    .venv/bin/python docs/draw_streaming_timeline.py            # draw (needs matplotlib)
    .venv/bin/python docs/draw_streaming_timeline.py --verify   # also run the scenario through
                                                                # windowagg in Spark and compare

One key, sliding windows of S = 10 s with a grace of 5 s (the watermark is the largest event time
seen minus 5 s), records arriving in four micro-batches. The windows and the micro-batch in which
each becomes final are computed here from the contract (docs/semantics.md); --verify checks them
against the real thing (needs the windowagg jar: WINDOWAGG_JAR or the installed package).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
IMG = HERE / "img" / "streaming_timeline.png"

SIZE = 10.0
GRACE = 5.0
EPS = 1e-6  # a timestamp's resolution (1 µs), in seconds
# event times (seconds) of the records, per micro-batch, in arrival order
BATCHES = [[10, 14, 15], [22, 28], [12, 26, 35], [50]]


def windows_of(times: list[float]) -> dict[float, tuple[float, list[float]]]:
    """KIP-450 windows {start: (end, records)} of the given record times."""
    ts = sorted(set(times))
    out = {}
    for t in ts:
        out.setdefault(t - SIZE, None)
        inside = [u for u in times if t + EPS <= u <= t + EPS + SIZE]
        if inside:
            out.setdefault(t + EPS, None)
    return {s: (s + SIZE, sorted(u for u in times if s <= u <= s + SIZE)) for s in sorted(out)}


def simulate():
    """Per micro-batch: the watermark it runs with, its late records, and the windows it emits
    (final emission: the windows ending in [previous watermark, this watermark), from the records
    kept so far). A trailing micro-batch without data applies the last watermark."""
    kept: list[float] = []
    max_seen = None
    watermark = float("-inf")
    emitted_upto = float("-inf")
    steps = []
    for n, batch in enumerate(BATCHES + [[]]):
        emit = [(s, e, rs) for s, (e, rs) in windows_of(kept).items() if emitted_upto <= e < watermark]
        emitted_upto = max(emitted_upto, watermark)
        late = [t for t in batch if t + SIZE < watermark]
        kept += [t for t in batch if t + SIZE >= watermark]
        steps.append({"batch": n, "watermark": watermark, "records": batch, "late": late, "emitted": emit})
        if batch:
            max_seen = max([max_seen] + batch) if max_seen is not None else max(batch)
            watermark = max(watermark, max_seen - GRACE)
    open_windows = [(s, e, rs) for s, (e, rs) in windows_of(kept).items() if e >= emitted_upto]
    return steps, open_windows


def draw(steps, open_windows, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    colors = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10.5, 8.2), sharex=True,
                                      gridspec_kw={"height_ratios": [1.05, 1.5]})
    xmin, xmax = -2, 62

    # top: records by micro-batch, and the watermark each micro-batch runs with
    for st in steps:
        y = st["batch"]
        top.axhspan(y - 0.42, y + 0.42, color=colors[y], alpha=0.07, lw=0)
        for t in st["records"]:
            if t in st["late"]:
                top.plot(t, y, marker="X", ms=13, color="red", zorder=5)
            else:
                top.plot(t, y, marker="o", ms=9, color=colors[y], zorder=4)
                top.annotate(f"{t:g}", (t, y), textcoords="offset points", xytext=(0, 9), ha="center", fontsize=8)
        if st["watermark"] != float("-inf"):
            top.plot([st["watermark"]] * 2, [y - 0.42, y + 0.42], color="black", lw=2.2, zorder=3)
            top.annotate(f"watermark {st['watermark']:g}", (st["watermark"], y - 0.42), textcoords="offset points",
                         xytext=(4, 2), fontsize=8, va="bottom")
        label = f"micro-batch {y}" + ("" if st["records"] else " (no data)")
        top.annotate(label, (xmax, y), textcoords="offset points", xytext=(-4, 0), ha="right", va="center",
                     fontsize=9, color=colors[y])
    wm = [(st["watermark"], st["batch"]) for st in steps if st["watermark"] != float("-inf")]
    top.plot([w for w, _ in wm], [b for _, b in wm], color="black", lw=1, ls="--", alpha=0.6)
    for st in steps:
        for t in st["late"]:
            top.annotate(f"record {t:g} is late: {t:g} + {SIZE:g} < watermark {st['watermark']:g}\n"
                         "every window that could hold it is final\n"
                         "→ side output: late_reason = 'late', late_row = its columns",
                         xy=(t, st["batch"]), xytext=(t - 13, st["batch"] + 0.95), fontsize=8.5, color="red",
                         arrowprops=dict(arrowstyle="->", color="red"))
    top.set_ylim(len(steps) - 0.4, -0.6)
    top.set_yticks([])
    top.set_title(f"Records in arrival order (size S = {SIZE:g} s, grace {GRACE:g} s: "
                  "watermark = largest event time seen − 5 s)", fontsize=10)
    top.legend(handles=[Line2D([], [], marker="o", ls="", color="gray", label="record (at its event time)"),
                        Line2D([], [], marker="X", ls="", color="red", ms=10, label="late record"),
                        Line2D([], [], color="black", lw=2.2, label="watermark the micro-batch runs with")],
               loc="lower left", fontsize=8, framealpha=0.9)

    # bottom: every window, coloured by the micro-batch that emits it (final), hatched if still open
    rows = [(s, e, rs, st["batch"]) for st in steps for s, e, rs in st["emitted"]]
    rows += [(s, e, rs, None) for s, e, rs in open_windows]
    rows.sort(key=lambda r: r[0])
    for i, (s, e, rs, b) in enumerate(rows):
        if b is None:
            bottom.barh(i, e - s, left=s, height=0.6, color="white", edgecolor="gray", hatch="//")
        else:
            bottom.barh(i, e - s, left=s, height=0.6, color=colors[b], alpha=0.8)
        start = f"{s:g}" if abs(s - round(s)) < 1e-9 else f"{round(s):g}+ε"
        end = f"{e:g}" if abs(e - round(e)) < 1e-9 else f"{round(e):g}+ε"
        bottom.annotate(f"[{start}, {end}]  {{{', '.join(f'{r:g}' for r in rs)}}}", (e, i),
                        textcoords="offset points", xytext=(5, 0), va="center", fontsize=8)
        for r in rs:
            bottom.plot(r, i, marker="|", ms=9, color="black")
    for st in steps:
        if st["watermark"] != float("-inf") and st["emitted"]:
            bottom.axvline(st["watermark"], color=colors[st["batch"]], ls=":", lw=1.2)
    bottom.set_ylim(len(rows) - 0.4, -0.6)
    bottom.set_yticks([])
    bottom.set_xlim(xmin, xmax)
    bottom.set_xlabel("event time (s)")
    bottom.set_title("Windows, coloured by the micro-batch that emits them: a window is final (and written "
                     "once) when its end < watermark", fontsize=10)
    handles = [Patch(color=colors[st["batch"]], alpha=0.8, label=f"final in micro-batch {st['batch']}")
               for st in steps if st["emitted"]]
    handles.append(Patch(facecolor="white", edgecolor="gray", hatch="//", label="still open at the end"))
    bottom.legend(handles=handles, loc="upper right", fontsize=8, framealpha=0.9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def verify(steps) -> None:
    """Runs the scenario through windowagg's streaming windows (one file per micro-batch) and
    compares the windows each micro-batch emits, and the late rows, with the simulation."""
    import shutil
    import tempfile

    import windowagg
    from pyspark.sql import functions as F
    from pyspark.sql.classic.column import Column, _to_java_column

    spark = windowagg.session(master="local[1]", config={
        "spark.sql.shuffle.partitions": "1", "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.providerClass":
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"})
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="windowagg-timeline-"))
    try:
        landing = work / "in"
        landing.mkdir()
        for n, batch in enumerate(BATCHES):
            df = spark.createDataFrame([("a", float(t)) for t in batch], "k STRING, s DOUBLE")
            df.select("k", F.timestamp_seconds("s").alias("ts")).coalesce(1).write.parquet(str(work / f"b{n}"))
            (part,) = (work / f"b{n}").glob("*.parquet")
            os.utime(part, (1_000_000 + n, 1_000_000 + n))
            os.replace(part, landing / f"b{n}.parquet")
        stream = spark.readStream.schema("k STRING, ts TIMESTAMP").option("maxFilesPerTrigger", 1).parquet(str(landing))
        jvm = spark.sparkContext._jvm
        jdef = jvm.windowagg.SlidingWindows.of(f"{SIZE:g} seconds").grace(f"{GRACE:g} seconds")
        wcol = Column(jvm.windowagg.functions.window(_to_java_column(F.col("ts")), jdef,
                                                     {"emit": "final", "lateRows": "emit"}))
        out = stream.groupBy("k", wcol).agg(F.sort_array(F.collect_list(F.unix_micros("ts"))).alias("rs"))
        got = {}

        def collect(df, batch_id):
            got[batch_id] = [(r["rs"], r["late_reason"], r["late_row"])  # late rows: null window, null rs
                             for r in df.select("rs", "late_reason", "late_row").collect()]

        q = out.writeStream.foreachBatch(collect).option("checkpointLocation", str(work / "ck")).start()
        q.processAllAvailable()
        q.stop()
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    # batch ids: 0..3 with data; the trailing no-data batch may or may not run before the stop
    problems = []
    for st in steps:
        rows = got.get(st["batch"], [])
        windows = sorted([r[0] for r in rows if r[1] is None])
        late = sorted([r[2]["ts"] for r in rows if r[1] == "late"])
        want = sorted([[round(t * 1e6) for t in rs] for _, _, rs in st["emitted"]])
        if st["records"] or st["batch"] in got:
            if [list(map(int, w)) for w in windows] != want:
                problems.append(f"micro-batch {st['batch']}: windows {windows} != expected {want}")
            if len(late) != len(st["late"]):
                problems.append(f"micro-batch {st['batch']}: {len(late)} late rows, expected {len(st['late'])}")
    if problems:
        raise SystemExit("the picture does not match windowagg:\n" + "\n".join(problems))
    print(f"verified against windowagg: micro-batches {sorted(got)} emit the windows and late rows drawn")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--verify", action="store_true", help="also run the scenario through windowagg in Spark")
    p.add_argument("--out", default=str(IMG), help=f"image path (default {os.path.relpath(IMG, Path.cwd())})")
    a = p.parse_args(argv)
    steps, open_windows = simulate()
    for st in steps:
        print(f"micro-batch {st['batch']}: watermark {st['watermark']}, records {st['records']}, late {st['late']}, "
              f"final windows {[(round(s, 6), round(e, 6), rs) for s, e, rs in st['emitted']]}")
    print(f"open at the end: {[(round(s, 6), round(e, 6), rs) for s, e, rs in open_windows]}")
    if a.verify:
        verify(steps)
    draw(steps, open_windows, Path(a.out))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
