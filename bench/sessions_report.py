#!/usr/bin/env python3
"""Plot for the session-window benchmark: docs/img/sessions_<tag>.png from bench/results/sessions-<tag>.json
(left: batch times per run and median; right: streaming state rows per micro-batch).
Prints the Markdown tables for docs/benchmarks-sessions.md.
Usage: .venv/bin/python bench/sessions_report.py bench/results/sessions-full.json"""
import json
import sys
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COLORS = {"windowagg": "tab:blue", "spark": "tab:orange"}
LABEL = {"windowagg": "windowagg SessionWindows", "spark": "Spark session_window"}


def main(path):
    res = json.loads(Path(path).read_text())
    tag = res["tag"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    b = res.get("batch") or {}
    for i, c in enumerate(["windowagg", "spark"]):
        cell = (b.get("cells") or {}).get(c)
        if not cell:
            continue
        ax1.bar(i, cell["median_s"], color=COLORS[c], alpha=0.8, label=f"{LABEL[c]} (median)")
        ax1.scatter([i] * len(cell["times_s"]), cell["times_s"], color="k", s=12, zorder=3)
    ax1.set_xticks([0, 1], ["windowagg", "Spark"])
    ax1.set_ylabel("seconds (noop sink)")
    ax1.set_title(f"Batch: {b.get('rows', 0):,} rows, {b.get('keys')} keys, gap 30 s")
    ax1.legend(fontsize=8)
    s = res.get("streaming") or {}
    for c in ["windowagg", "spark"]:
        runs = [r for r in s.get("runs", []) if r["competitor"] == c and r["status"] == "ok"]
        if not runs:
            continue
        bs = [x for x in runs[-1]["batches"] if x["input_rows"] > 0]
        ax2.plot(range(1, len(bs) + 1), [x["state_rows"] for x in bs], marker="o", color=COLORS[c], label=LABEL[c])
    ax2.set_xlabel("micro-batch (one file each)")
    ax2.set_ylabel("state rows (numRowsTotal)")
    ax2.set_ylim(bottom=0)
    ax2.set_title(f"Streaming: {s.get('events', 0):,} events, {s.get('files')} files")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    img = REPO / "docs" / "img" / f"sessions_{tag}.png"
    img.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(img, dpi=110)
    print(f"wrote {img}")

    # tables
    if b.get("cells"):
        print("\n| | windowagg | Spark session_window | windowagg ÷ Spark |\n|---|---:|---:|---:|")
        w, sp = b["cells"]["windowagg"], b["cells"]["spark"]
        print(f"| batch median (s) | {w['median_s']:.2f} | {sp['median_s']:.2f} | {w['median_s'] / sp['median_s']:.2f} |")
        print(f"| batch runs (s) | {', '.join(f'{x:.2f}' for x in w['times_s'])} | "
              f"{', '.join(f'{x:.2f}' for x in sp['times_s'])} | |")
        print(f"| other processes' CPU during runs (median, cores of 2) | {w['median_foreign_cores']:.2f} | "
              f"{sp['median_foreign_cores']:.2f} | |")
    if s.get("cells"):
        w, sp = s["cells"]["windowagg"], s["cells"]["spark"]
        print("\n| | windowagg | Spark session_window | windowagg ÷ Spark |\n|---|---:|---:|---:|")
        if w["median_events_per_s"] and sp["median_events_per_s"]:
            print(f"| streaming events/s (median) | {w['median_events_per_s']:,.0f} | {sp['median_events_per_s']:,.0f} | "
                  f"{w['median_events_per_s'] / sp['median_events_per_s']:.2f} |")
        for k in ["state_rows_q2_mean", "state_rows_q4_mean", "state_rows_max", "output_rows"]:
            if w[k] is not None and sp[k] is not None:
                print(f"| {k} | {w[k]:,.0f} | {sp[k]:,.0f} | {w[k] / sp[k]:.2f} |")
        for r in s["runs"]:
            print(f"- {r['competitor']} {r['kind']}: {r['status']}, {r['events']:,} events, {r['micro_batches']} batches, "
                  f"processing {r['processing_s']:.1f} s, wall {r['wall_s']:.1f} s, other processes "
                  f"{r['foreign_cores'] or 0:.2f} cores, loadavg {r['loadavg_before']} -> {r['loadavg_after']}; state rows "
                  f"{[x['state_rows'] for x in r['batches'] if x['input_rows'] > 0]}; trigger ms "
                  f"{[x['trigger_ms'] for x in r['batches']]}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(REPO / "bench/results/sessions-full.json"))
