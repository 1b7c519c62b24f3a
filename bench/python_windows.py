#!/usr/bin/env python3
"""Batch benchmark: windows a Python function assigns (PythonWindows) against the same windows in a
JVM class (CustomWindows), for fiscal quarters. The issue's targets: PythonWindows fiscal quarters
at most 2x the time of the JVM FiscalQuarters kind on 4M rows, and the assignment step alone at
least 5M rows/s per core.

Its input, cells, checks and method are its page's: bench/python_windows_notes.md, rendered into
docs/benchmarks-python-windows.md.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import data  # noqa: E402
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log, ratio  # noqa: E402

DOC = report.DOCS / "benchmarks-python-windows.md"
IMG = report.DOCS / "img" / "python_windows.png"
NOTES = BENCH_DIR / "python_windows_notes.md"
EXAMPLES_JAR = harness.REPO / "jvm" / "examples" / "target" / "windowagg-examples-0.4.0.jar"
FISCAL_QUARTERS_CLASS = "windowagg.examples.FiscalQuarters"
MAX_SIZE = "92 days 1 hour"  # FiscalQuarters.maxSize: 92 days, plus an hour for a daylight-saving change

CELLS = ["python_windows", "jvm_custom", "assign_only", "arrow_floor", "spark_builtin", "scan_floor"]
SHORT = {
    "python_windows": "windowagg `PythonWindows.of(fiscal_quarters, …, overlapping=False)`",
    "jvm_custom": "windowagg `CustomWindows.of(\"windowagg.examples.FiscalQuarters\", firstMonth=\"2\")`",
    "assign_only": "the assignment alone: `select(<PythonWindows' listing column>)`",
    "arrow_floor": "floor: `select(<an Arrow UDF returning [ts, ts]>)` (Spark's Arrow round trip)",
    "spark_builtin": "Spark `groupBy(k, quarter start, quarter end)` with date arithmetic",
    "scan_floor": "floor: `select(\"ts\")` (reads the cached time column)",
}
PLOT_LABEL = {
    "python_windows": "windowagg PythonWindows\n(fiscal_quarters in Python)",
    "jvm_custom": "windowagg CustomWindows\n(FiscalQuarters in Java)",
    "assign_only": "assignment alone\n(the Arrow UDF, no aggregation)",
    "arrow_floor": "floor: an Arrow UDF\nreturning [ts, ts]",
    "spark_builtin": "Spark groupBy(k, quarter)\n(date arithmetic)",
    "scan_floor": "floor: select(ts)",
}
COLOR = {"python_windows": "tab:blue", "jvm_custom": "tab:cyan", "assign_only": "tab:purple",
         "arrow_floor": "#bbbbbb", "spark_builtin": "tab:orange", "scan_floor": "#999999"}
TARGET_RATIO = 2.0  # python_windows ÷ jvm_custom, wall, at most
TARGET_ROWS_PER_CORE = 5e6  # assignment rows/s per core, at least


def fiscal_quarters(times: pd.Series) -> pd.DataFrame:
    """Each time's fiscal quarter, [start, end), of years starting in February: whole months since
    1970-01 (month 1 is February), floored to the quarter's first month."""
    months = times.to_numpy().astype("datetime64[M]").astype(np.int64)
    first = months - (months - 1) % 3  # numpy's % is never negative: times before 1970 work too
    return pd.DataFrame({"start": first.astype("datetime64[M]").astype("datetime64[ns]"),
                         "end": (first + 3).astype("datetime64[M]").astype("datetime64[ns]")})


def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 200k rows / 100 keys, 2 reps, 120 s timeout, no docs")
    p.add_argument("--rows", type=int, help="events (default 4,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="distinct keys (default 1000; quick 100)")
    p.add_argument("--days", type=float, default=1095.0, help="the events' time span, days (1095: about 13 fiscal quarters)")
    p.add_argument("--examples-jar", default=os.environ.get("WINDOWAGG_EXAMPLES_JAR") or str(EXAMPLES_JAR),
                   help="the jar of windowagg.examples.FiscalQuarters, added to spark.jars as a private copy "
                        "(default $WINDOWAGG_EXAMPLES_JAR, else jvm/examples/target/windowagg-examples-0.4.0.jar)")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the correctness check")
    batch = harness.add_batch_args(p, DOC.name, reps=(5, 2), timeout=(600.0, 120.0))
    a = p.parse_args(argv)
    harness.defaults(a, rows=(4_000_000, 200_000), keys=(1000, 100), **batch)
    return a


# ------------------------------------------------------------------------------ queries

def aggregated(grouped, window_col: str = "window"):
    from pyspark.sql import functions as F
    return (grouped.agg(*harness.sum_count_avg())
            .select("k", F.col(f"{window_col}.start").alias("start"), F.col(f"{window_col}.end").alias("end"),
                    "s", "n", "a"))


def q_windowagg(events, definition):
    import windowagg
    return aggregated(events.groupBy("k", windowagg.window("ts", definition).alias("window")))


def q_assign_only(events, definition):
    """The listing column windowagg.window builds for PythonWindows (the Arrow UDF running the
    definition's function), over every row."""
    from pyspark.sql import functions as F
    return events.select(definition._listing(F.col("ts")).alias("windows"))


def q_arrow_floor(events):
    """An Arrow UDF from the times to the listing's type, array<struct<start, end>>, that does next to
    no work (each time's one window [ts, ts]): what Spark's Arrow round trip costs by itself. (pyarrow
    is imported at the top: arrow_udf reads the function's type hints from the module's names.)"""
    from pyspark.sql import functions as F

    def same_time_windows(times: pa.Array) -> pa.Array:
        bounds = pa.StructArray.from_arrays([times, times], names=["start", "end"])
        return pa.ListArray.from_arrays(pa.array(np.arange(len(times) + 1, dtype=np.int32)), bounds)
    listing = F.arrow_udf(same_time_windows, "array<struct<start: timestamp, end: timestamp>>")
    return events.select(listing(F.col("ts")).alias("windows"))


def q_spark_builtin(events):
    from pyspark.sql import functions as F
    first_day = "add_months(trunc(add_months(to_date(ts), -1), 'QUARTER'), 1)"  # Feb, May, Aug or Nov 1st
    return (events.groupBy("k", F.expr(f"CAST({first_day} AS TIMESTAMP)").alias("start"),
                           F.expr(f"CAST(add_months({first_day}, 3) AS TIMESTAMP)").alias("end"))
            .agg(*harness.sum_count_avg()))


def in_process(events, spark, assign) -> dict:
    """Untimed by Spark: the assignment in this Python process (one core) over the cached times, in
    the Arrow UDF's batches: `assign` alone on pandas Series, and the whole function the Arrow UDF
    runs (windowagg._executor.listed_windows: Arrow times in, assign, Arrow list of windows out). Median
    CPU time of three passes."""
    from windowagg._executor import listed_windows
    batch_rows = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch"))
    zone = spark.conf.get("spark.sql.session.timeZone")
    times = events.select("ts").toArrow().column("ts").combine_chunks().cast(pa.timestamp("us", tz=zone))
    batches = [times.slice(i, batch_rows) for i in range(0, len(times), batch_rows)]
    series = [b.to_pandas(coerce_temporal_nanoseconds=True).dt.tz_localize(None) for b in batches]

    def cpu_s(step) -> float:
        passes = []
        for _ in range(3):
            t0 = time.process_time()
            step()
            passes.append(time.process_time() - t0)
        return statistics.median(passes)
    assign_s = cpu_s(lambda: [assign(s) for s in series])
    listing_s = cpu_s(lambda: [listed_windows(b, assign, "timestamp") for b in batches])
    out = {"rows": len(times), "batch_rows": batch_rows, "batches": len(batches),
           "assign_cpu_s": assign_s, "listing_cpu_s": listing_s,
           "assign_rows_per_cpu_s": len(times) / assign_s, "listing_rows_per_cpu_s": len(times) / listing_s}
    log(f"in process: {out}")
    return out


def examples_copy() -> Path:
    """The private copy of the examples jar that the session loads: a rebuild must not replace it under the
    running JVM."""
    return Path(f"/tmp/windowagg-bench-python-windows-examples-{os.getpid()}.jar")


def examples_jar_info(src: Path) -> dict:
    st = src.stat()
    mtime = dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc).isoformat(timespec="seconds")
    return {"path": str(src), "bytes": st.st_size, "mtime": mtime,
            "sha256": hashlib.sha256(examples_copy().read_bytes()).hexdigest(), "copy": str(examples_copy())}


def examples_jar_line(jar: dict) -> str:
    return (f"examples jar (`FiscalQuarters`): `{jar['path']}` ({jar['bytes']:,} bytes, modified {jar['mtime']}, "
            f"sha256 `{jar['sha256'][:12]}…`; the run used a private copy), added to `spark.jars`")


# ------------------------------------------------------------------------------ main

def prepare(a) -> str | None:
    """Why the run cannot start, or None, the examples jar's private copy then in spark.jars."""
    import windowagg
    if not hasattr(windowagg, "PythonWindows"):
        return (f"the windowagg package at {Path(windowagg.__file__).parent} has no PythonWindows: run with "
                f"PYTHONPATH={harness.REPO / 'python'} (bench/run python-windows does) or reinstall it")
    if not Path(a.examples_jar).exists():
        return f"no examples jar at {a.examples_jar}: build it (mvn -pl jvm/examples package) or pass --examples-jar"
    shutil.copyfile(a.examples_jar, examples_copy())
    a.conf = [*a.conf, f"spark.jars={examples_copy()}"]
    return None


def run(b: protocol.Run) -> None:
    a, res, spark = b.a, b.res, b.spark
    import windowagg
    res["config"].update({"windowagg_python": report.repo_rel(Path(windowagg.__file__).parent),
                          "examples_jar": examples_jar_info(Path(a.examples_jar)),
                          "cores": spark.sparkContext.defaultParallelism,
                          "arrow_max_records_per_batch": spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")})
    events, info = harness.cache_input(data.table_events(spark, a.rows, a.keys, a.days, a.seed, a.shuffle_partitions),
                                       "events")
    res["input"] = {**info, "days": a.days, "v": "floor(rand * 1024000) / 1024"}
    python_quarters = windowagg.PythonWindows.of(fiscal_quarters, MAX_SIZE, overlapping=False)
    jvm_quarters = windowagg.CustomWindows.of(FISCAL_QUARTERS_CLASS, firstMonth="2")
    res["definitions"] = {"python_windows": repr(python_quarters), "jvm_custom": repr(jvm_quarters)}
    queries = {
        "python_windows": lambda: q_windowagg(events, python_quarters),
        "jvm_custom": lambda: q_windowagg(events, jvm_quarters),
        "assign_only": lambda: q_assign_only(events, python_quarters),
        "arrow_floor": lambda: q_arrow_floor(events),
        "spark_builtin": lambda: q_spark_builtin(events),
        "scan_floor": lambda: events.select("ts"),
    }
    for name, make in queries.items():
        res["plans"][name] = harness.plan_of(make())
    b.save()

    b.runner.cpu = harness.ProcessTreeCpuMeter(spark)
    for name, make in queries.items():
        b.cell(name, make, res["cells"], name, cell=name)

    res["in_process"] = in_process(events, spark, fiscal_quarters)
    b.save()
    if a.check:
        t0 = time.perf_counter()
        jvm = queries["jvm_custom"]().cache()
        res["check"] = {"python_windows": harness.compare_windows(queries["python_windows"](), jvm),
                        "spark_builtin": harness.compare_windows(queries["spark_builtin"](), jvm),
                        "rows_in_a_quarter": jvm.agg({"n": "sum"}).collect()[0][0],
                        "check_s": round(time.perf_counter() - t0, 1)}
        jvm.unpersist()
        log(f"check: {res['check']}")
        b.save()
    events.unpersist()
    examples_copy().unlink(missing_ok=True)  # the session has loaded it


# ------------------------------------------------------------------------------ summary + report

def assignment_rates(res) -> dict:
    """The assignment step's rows/s: assign_only's rows ÷ median wall (total and per core), and
    rows ÷ median own CPU."""
    c, rows, cores = res["cells"].get("assign_only"), res["input"]["rows"], res["config"]["cores"]
    if not c or c["status"] != "ok":
        return {"total": None, "per_core": None, "per_cpu_s": None}
    total = rows / c["median_s"]
    return {"total": total, "per_core": total / cores,
            "per_cpu_s": rows / c["median_cpu_s"] if c.get("median_cpu_s") else None}


def summary(res) -> None:
    for name in CELLS:
        if c := res["cells"].get(name):
            report.log_cell(f"{name:15s}", c, 10)
    wall, cpu = report.wall_and_cpu_ratios(res["cells"].get("python_windows"), res["cells"].get("jvm_custom"))
    r = assignment_rates(res)
    log(f"SUMMARY python_windows ÷ jvm_custom: wall {wall}, CPU {cpu}; assignment "
        f"{report.fmt_num(r['total'], ',.0f')} rows/s, {report.fmt_num(r['per_core'], ',.0f')} rows/s per core")
    if ck := res.get("check"):
        log(f"SUMMARY check: python_windows {ck['python_windows']['mismatches']} mismatches, spark_builtin "
            f"{ck['spark_builtin']['mismatches']} mismatches, rows in a quarter {ck['rows_in_a_quarter']:,}")


def plot(res, path: Path) -> None:
    """One bar per cell: median wall time, its median CPU time as a dotted outline."""
    plt = report.pyplot()
    names = [n for n in CELLS if (c := res["cells"].get(n)) and c["status"] == "ok"]
    walls = [res["cells"][n]["median_s"] for n in names]
    cpus = [res["cells"][n].get("median_cpu_s") or 0 for n in names]
    y = list(range(len(names)))[::-1]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.75 * len(names)))
    ax.barh(y, walls, color=[COLOR[n] for n in names], height=0.6)
    ax.barh(y, cpus, color="none", edgecolor="black", linestyle=":", height=0.6)
    for yi, n, w, cpu in zip(y, names, walls, cpus):
        mark = " †" if res["cells"][n].get("contended_runs") else ""
        ax.text(max(w, cpu) + 0.01 * max(walls + cpus), yi, f"{w:.2f} s wall{mark}, {cpu:.1f} s CPU", va="center", fontsize=8.5)
    ax.set_yticks(y)
    ax.set_yticklabels([PLOT_LABEL[n] for n in names], fontsize=8.5)
    ax.set_xlim(0, max(walls + cpus) * 1.45)
    ax.set_xlabel("median wall time, s (bars); median CPU time of the benchmark's processes, s (dotted outline)")
    i = res["input"]
    ax.set_title(f"Fiscal quarters, sum/count/avg per key and quarter: {i['rows']:,} rows, {i['keys']:,} keys over "
                 f"{i['days']:g} days, {res['config']['master']}{' (quick run)' if res['args'].get('quick') else ''}",
                 fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    report.save(fig, path)


def windowagg_input(plan: str) -> str:
    """What windowagg's operator says it reads (its EXPLAIN line's input=...): rows, or partials
    aggregated before the shuffle, and why."""
    line = next((x for x in plan.splitlines() if "WindowAggregate" in x and " input=" in x), "")
    return line.split(" input=", 1)[1].strip() if line else "?"


def render(res: dict, json_path: Path, doc: Path, img: Path) -> None:
    """The page: bench/python_windows_notes.md filled with what this run measured."""
    plot(res, img)
    cfg, i = res["config"], res["input"]
    cells = res["cells"]
    pw, jc, ao, af, fl = (cells.get(n) for n in ("python_windows", "jvm_custom", "assign_only", "arrow_floor",
                                                 "scan_floor"))
    rows, cores = i["rows"], cfg["cores"]
    vs_jvm = report.bounded_ratio(pw, jc, "median_s")
    vs_jvm_cpu = report.bounded_ratio(pw, jc, "median_cpu_s")
    rate = assignment_rates(res)
    ip = res.get("in_process") or {}
    rate_met = rate["per_core"] is not None and rate["per_core"] >= TARGET_ROWS_PER_CORE
    ratio_verdict = report.verdict_at_most(vs_jvm, TARGET_RATIO)
    if pw and jc and (pw.get("contended_runs") or jc.get("contended_runs")):
        ratio_verdict += report.CONTENDED
    targets = [
        [f"PythonWindows ÷ JVM `FiscalQuarters` at {rows:,} rows ≤ {TARGET_RATIO:g}× (wall)",
         f"{vs_jvm[0]} wall, {vs_jvm_cpu[0]} CPU (PythonWindows {report.median_seconds(pw)}, JVM "
         f"{report.median_seconds(jc)})", ratio_verdict],
        [f"the assignment step alone ≥ {TARGET_ROWS_PER_CORE / 1e6:g}M rows/s per core",
         f"{report.fmt_num(rate['per_core'], ',.0f')} rows/s per core ({report.fmt_num(rate['total'], ',.0f')} "
         f"rows/s on {cores} cores, `assign_only` {report.median_seconds(ao)})",
         report.verdict(None if rate["per_core"] is None else rate_met)],
    ]

    def rows_per_s(c, per: str = "median_s"):
        return rows / c[per] if c and c["status"] == "ok" and c.get(per) else None

    def row(name):
        c = cells[name]
        return [f"`{name}`", SHORT[name], report.fmt_seconds(c), report.run_spread(c),
                report.fmt_seconds(c, "median_cpu_s"), report.cpu_per_wall(c), report.fmt_num(rows_per_s(c), ",.0f"),
                report.fmt_num(rows_per_s(c, "median_cpu_s"), ",.0f"), report.shuffled_mb(c), *report.contention(c)]
    ratio_rows = [[f"`{n}` ÷ `{d}`", *report.wall_and_cpu_ratios(cells.get(n), cells.get(d))]
                  for n, d in (("python_windows", "jvm_custom"), ("python_windows", "spark_builtin"),
                               ("jvm_custom", "spark_builtin"), ("assign_only", "scan_floor"))]

    def diff(c1, c2, key="median_s"):
        ok = c1 and c2 and c1["status"] == "ok" and c2["status"] == "ok" and c1.get(key) and c2.get(key)
        return c1[key] - c2[key] if ok else None
    spark_rate = rate["per_cpu_s"]
    ip_assign, ip_listing = ip.get("assign_rows_per_cpu_s"), ip.get("listing_rows_per_cpu_s")
    steps = [
        ["`fiscal_quarters` alone (numpy on pandas Series), in this process",
         report.fmt_num(ip.get("assign_cpu_s"), ".2f"), report.fmt_num(ip_assign, ",.0f")],
        ["the function the Arrow UDF runs per batch (Arrow times → pandas, `fiscal_quarters`, checks, Arrow list "
         "of windows), in this process", report.fmt_num(ip.get("listing_cpu_s"), ".2f"), report.fmt_num(ip_listing, ",.0f")],
        ["`assign_only` in Spark (the same, plus Spark's Arrow transfer to and from the Python workers, the scan "
         "and the noop sink), CPU of all the benchmark's processes", report.fmt_seconds(ao, "median_cpu_s"),
         report.fmt_num(spark_rate, ",.0f")],
        ["`arrow_floor` in Spark (an Arrow UDF from the times to the same type doing next to no work: "
         "Spark's Arrow transfer, the scan and the sink)", report.fmt_seconds(af, "median_cpu_s"),
         report.fmt_num(rows_per_s(af, "median_cpu_s"), ",.0f")],
        ["`scan_floor` in Spark", report.fmt_seconds(fl, "median_cpu_s"),
         report.fmt_num(rows_per_s(fl, "median_cpu_s"), ",.0f")],
    ]
    ck = res.get("check")
    check_rows = []
    if ck:
        for side in ("python_windows", "spark_builtin"):
            check_rows.append([f"`{side}` against `jvm_custom`", *report.mismatch_cells(ck[side])])
    bad = sum(ck[s]["mismatches"] for s in ("python_windows", "spark_builtin")) if ck else None
    targets.append(["correctness: PythonWindows = JVM `FiscalQuarters` = Spark's date arithmetic (0 mismatches), "
                    "every row in one quarter",
                    "not checked (--no-check)" if ck is None else
                    f"{bad:,} mismatching rows; {ck['rows_in_a_quarter']:,} of {rows:,} rows in a quarter",
                    report.verdict(None if ck is None else bad == 0 and ck["rows_in_a_quarter"] == rows)])

    report.render_page(doc, img, NOTES, {
        "days": f"{i['days']:g}",
        "cores": cores,
        "target_ratio": f"{TARGET_RATIO:g}",
        "target_rate": f"{TARGET_ROWS_PER_CORE / 1e6:g}M",
        "targets_table": report.targets_table(targets),
        "ratio_missed": vs_jvm[1] is not None and vs_jvm[1] > TARGET_RATIO,
        "rate_missed": rate["per_core"] is not None and not rate_met,
        "ratio_text": vs_jvm[0],
        "ratio_cpu_text": vs_jvm_cpu[0],
        "pw_s": report.median_seconds(pw),
        "jvm_s": report.median_seconds(jc),
        "extra_s": report.fmt_num(diff(pw, jc), ".2f"),
        "extra_cpu_s": report.fmt_num(diff(pw, jc, "median_cpu_s"), ".2f"),
        "assign_s": report.median_seconds(ao),
        "assign_cpu_s": report.fmt_seconds(ao, "median_cpu_s"),
        "assign_over_arrow_s": report.fmt_num(diff(ao, af), ".2f"),
        "assign_over_arrow_cpu_s": report.fmt_num(diff(ao, af, "median_cpu_s"), ".2f"),
        "arrow_s": report.median_seconds(af),
        "scan_cpu_s": report.fmt_seconds(fl, "median_cpu_s"),
        "builtin_s": report.median_seconds(cells.get("spark_builtin")),
        "arrow_rate_per_core": report.fmt_num(rows_per_s(af) / cores if rows_per_s(af) else None, ",.0f"),
        "arrow_cpu_s": report.fmt_seconds(af, "median_cpu_s"),
        "arrow_over_scan_cpu_s": report.fmt_num(diff(af, fl, "median_cpu_s"), ".2f"),
        "arrow_share": report.fmt_num(ratio(diff(af, fl, "median_cpu_s"), ao.get("median_cpu_s") if ao else None),
                                      ".0%"),
        "listing_cpu_s": report.fmt_num(ip.get("listing_cpu_s"), ".2f"),
        "python_faster": vs_jvm[1] is not None and vs_jvm[1] < 1,
        "pw_input": windowagg_input(res["plans"].get("python_windows", "")),
        "jvm_input": windowagg_input(res["plans"].get("jvm_custom", "")),
        "pw_mb": report.shuffled_mb(pw),
        "jvm_mb": report.shuffled_mb(jc),
        "rate_total": report.fmt_num(rate["total"], ",.0f"),
        "rate_per_core": report.fmt_num(rate["per_core"], ",.0f"),
        "rate_per_cpu_s": report.fmt_num(spark_rate, ",.0f"),
        "ip_assign_rate": report.fmt_num(ip_assign, ",.0f"),
        "ip_listing_rate": report.fmt_num(ip_listing, ",.0f"),
        "ip_assign_share": report.fmt_num(ratio(ip.get("assign_cpu_s"), ip.get("listing_cpu_s")), ".0%"),
        "batch_rows": f"{ip['batch_rows']:,}" if ip else "–",
        "steps_table": "\n".join(report.table(["step", "CPU (s)", "rows per CPU second"], "lrr", steps)),
        "arrow_batch": cfg["arrow_max_records_per_batch"],
        "jar": report.jar_line(cfg.get("windowagg_jar"), f"; Python package from `{cfg.get('windowagg_python', '?')}`"),
        "examples_jar": examples_jar_line(cfg["examples_jar"]),
        "results_table": "\n".join(report.table(
            ["cell", "query", "wall (s)", "wall, fastest – slowest run (s)", "CPU (s)", "CPU ÷ wall", "rows/s (wall)",
             "rows per CPU second", "shuffled (MB)", "others (cores)", "contended runs"], "llrrrrrrrrr",
            [row(n) for n in CELLS if n in cells])),
        "ratios_table": "\n".join(report.table(["ratio", "wall time", "CPU time"], "lrr", ratio_rows)),
        "correctness_table": "\n".join(report.table(
            ["compared", "rows (left)", "rows (JVM)", "(row, quarter) pairs", "mismatches",
             "only left / only JVM / count / sum / avg"], "lrrrrr", check_rows)) if ck else "Not checked (`--no-check`).",
    }, report.run_values("python_windows.py", res, [json_path], doc, img, NOTES,
                         run_line_before=f" on {rows:,} rows, {i['keys']:,} keys"))


BENCHMARK = protocol.Benchmark(
    "python_windows", "windowagg-bench-python-windows", parse_args, run, render, DOC, IMG,
    results={"input": None, "cells": {}, "in_process": None, "check": None, "plans": {}}, summary=summary,
    prepare=prepare)
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
