#!/usr/bin/env python3
"""The PyFlink side of python_aggregates.py's streaming cells (issue 54): the median of v per key and
tumbling window, as a pandas UDAF and as Flink's built-in PERCENTILE(v, 0.5), in Flink's streaming mode.

Run by python_aggregates.py --with-flink with .venv-flink's python (bench/nexmark/setup-flink), in
one process: one JVM (py4j's local mini-cluster), started before any timing; --help lists the flags.

Input: CSV without a header line, the rows k INT, t BIGINT (epoch seconds), v DOUBLE in the order the
Spark side's micro-batches read them (one file: a source reader reads several files in no fixed order);
event time ts = TO_TIMESTAMP_LTZ(t * 1000, 3), WATERMARK FOR ts AS ts - --watermark-s seconds, the
session time zone UTC. The bounded source ends, the watermark goes to +inf and every window fires.

Cells (the same input, the same tumbling windows [start, start + size) per key):

  flink_pandas           @udaf(result_type=DOUBLE, func_type="pandas"), float(v.median()), over
                         GROUP BY k, TUMBLE(ts, INTERVAL '10' MINUTE): Flink's group window, the one
                         form that takes a pandas UDAF in streaming (PythonGroupWindowAggregate). The
                         window table function, GROUP BY window_start, window_end over
                         TABLE(TUMBLE(...)), fails to plan with it: "Pandas UDAFs are not supported in
                         streaming mode currently" (StreamPhysicalPythonGroupAggregateRule).
  flink_builtin          PERCENTILE(v, 0.5) over TABLE(TUMBLE(...)): Flink's window aggregate (local
                         and global), as Flink's documentation writes a tumbling window now
  flink_builtin_group    PERCENTILE(v, 0.5) over the group window of flink_pandas
                         (GroupWindowAggregate): the built-in in the pandas UDAF's operator

Per cell: --warmup-runs runs over --warmup-events (the rows the Spark side warms up on), --empty-jobs
runs over an empty input (after the first, warm: the job's fixed cost, mini-cluster start, deployment,
the Python workers' start, finish), --reps timed runs over --events into the blackhole sink, then one untimed run
into CSV files, DIR/<cell>/ (k, window_start ms, window_end ms, m), which the Spark side checks.
Timed: a job's wall from submission to finished (JVM start not included); beside it the CPU of this
process and its descendants meanwhile (the JVM; not the Python workers, which their launcher leaves to
init, out of the tree) and the JVM's JIT seconds.

--timing-json: {"cells": {cell: {"status", "plan", "wall_s": [...], "cpu_s", "jit_s", the same prefixed
"warmup_" and "empty_job_", "check_rows"}}, "events", "startup_s", "flink_version", "config"}.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

T_PROCESS_START = time.time()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "nexmark"))
from flink_queries import flink_version, jit_s, millis, path_uri, tree_cpu_s  # noqa: E402

CELLS = ("flink_pandas", "flink_builtin", "flink_builtin_group")


def query_sql(cell, src, minutes):
    """The SELECT of `cell` over table `src`: (k, window_start ms, window_end ms, m)."""
    if cell == "flink_builtin":
        return f"""
SELECT k, {millis('window_start')} AS window_start, {millis('window_end')} AS window_end, PERCENTILE(v, 0.5) AS m
FROM TABLE(TUMBLE(TABLE {src}, DESCRIPTOR(ts), INTERVAL '{minutes}' MINUTE))
GROUP BY k, window_start, window_end"""
    agg = "pmedian(v)" if cell == "flink_pandas" else "PERCENTILE(v, 0.5)"
    window = f"ts, INTERVAL '{minutes}' MINUTE"
    return f"""
SELECT k, {millis(f'TUMBLE_START({window})')} AS window_start, {millis(f'TUMBLE_END({window})')} AS window_end,
       {agg} AS m
FROM {src}
GROUP BY k, TUMBLE({window})"""


def source_ddl(name, path, watermark_s):
    return f"""
CREATE TEMPORARY TABLE {name} (
  k INT, t BIGINT, v DOUBLE,
  ts AS TO_TIMESTAMP_LTZ(t * 1000, 3),
  WATERMARK FOR ts AS ts - INTERVAL '{int(watermark_s)}' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{path_uri(path)}', 'format' = 'csv')"""


SINK_COLUMNS = "k INT, window_start BIGINT, window_end BIGINT, m DOUBLE"


def make_env(a):
    from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
    from pyflink.table.udf import udaf
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    c = env.get_config()
    c.set("pipeline.name", "python-aggregates-flink")
    c.set("parallelism.default", str(a.parallelism))
    c.set("state.backend.type", a.state_backend)
    c.set("table.local-time-zone", "UTC")
    # the Python workers run this interpreter (the one with pyflink and pandas), not `python` on PATH
    c.set("python.executable", sys.executable)
    c.set("python.client.executable", sys.executable)

    def pmedian(v):
        return float(v.median())

    env.create_temporary_function("pmedian", udaf(pmedian, result_type=DataTypes.DOUBLE(), func_type="pandas"))
    return env


def config_of(env):
    """The settings the results record: ours and Flink's Python bundle defaults."""
    c = env.get_config()
    keys = ["parallelism.default", "state.backend.type", "table.local-time-zone", "python.fn-execution.bundle.size",
            "python.fn-execution.bundle.time", "python.fn-execution.arrow.batch.size", "python.execution-mode"]
    return {k: c.get(k, None) for k in keys}


def run_job(env, sql, sink):
    """INSERT INTO `sink` the rows of `sql`; returns (wall_s, cpu_s, jit_s)."""
    jit0 = jit_s()
    cpu0, t0 = tree_cpu_s(), time.perf_counter()
    env.execute_sql(f"INSERT INTO {sink} {sql}").wait()
    return time.perf_counter() - t0, tree_cpu_s() - cpu0, jit_s() - jit0


def count_lines(path):
    with open(path, "rb") as f:
        return sum(buf.count(b"\n") for buf in iter(lambda: f.read(1 << 20), b""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", required=True, help="CSV k,t,v without a header")
    ap.add_argument("--warmup-events", help="CSV like --events, read by the warm-up runs")
    ap.add_argument("--warmup-runs", type=int, default=1)
    ap.add_argument("--cells", default=",".join(CELLS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--empty-jobs", type=int, default=3, help="runs over an empty input before the timed ones (3)")
    ap.add_argument("--parallelism", type=int, default=2)
    ap.add_argument("--state-backend", default="hashmap", choices=("hashmap", "rocksdb"))
    ap.add_argument("--watermark-s", type=int, default=60)
    ap.add_argument("--window-minutes", type=int, default=10)
    ap.add_argument("--timing-json", required=True)
    ap.add_argument("--check-dir", required=True, help="DIR/<cell>/: each cell's output as CSV part files")
    a = ap.parse_args(argv)
    cells = [c.strip() for c in a.cells.split(",") if c.strip()]
    if not cells or any(c not in CELLS for c in cells):
        ap.error(f"--cells: a subset of {','.join(CELLS)}")
    if a.warmup_runs and not a.warmup_events:
        ap.error("--warmup-runs reads --warmup-events")

    work = tempfile.mkdtemp(prefix=".python-aggregates-flink-", dir=os.path.dirname(os.path.abspath(a.timing_json)))
    out = {"events": count_lines(a.events), "flink_version": flink_version(), "cells": {}}

    def save():
        tmp = a.timing_json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, a.timing_json)

    try:
        env = make_env(a)
        out["startup_s"] = round(time.time() - T_PROCESS_START, 3)
        out["config"] = config_of(env)
        empty = os.path.join(work, "empty.csv")
        open(empty, "w").close()
        for name, path in [("ev", a.events), ("ev_warm", a.warmup_events), ("ev_empty", empty)]:
            if path:
                env.execute_sql(source_ddl(name, path, a.watermark_s))
        env.execute_sql(f"CREATE TEMPORARY TABLE blackhole ({SINK_COLUMNS}) WITH ('connector' = 'blackhole')")
        save()
        for cell in cells:
            r = out["cells"][cell] = {"status": "running", "events": out["events"]}
            try:
                r["plan"] = [line for line in env.explain_sql(query_sql(cell, "ev", a.window_minutes)).splitlines()
                             if "Aggregate(" in line][:2]
                for key, src, n in [("warmup", "ev_warm", a.warmup_runs), ("empty_job", "ev_empty", a.empty_jobs),
                                    ("", "ev", a.reps)]:
                    runs = [run_job(env, query_sql(cell, src, a.window_minutes), "blackhole") for _ in range(n)]
                    prefix = f"{key}_" if key else ""
                    r[f"{prefix}wall_s"] = [round(x[0], 3) for x in runs]
                    r[f"{prefix}cpu_s"] = [round(x[1], 3) for x in runs]
                    r[f"{prefix}jit_s"] = [round(x[2], 3) for x in runs]
                    print(f"python_aggregates_flink: {cell} {key or 'timed'}: {r[f'{prefix}wall_s']} s", file=sys.stderr,
                          flush=True)
                    save()
                parts = os.path.join(a.check_dir, cell)
                shutil.rmtree(parts, ignore_errors=True)
                env.execute_sql(f"CREATE TEMPORARY TABLE sink_{cell} ({SINK_COLUMNS}) WITH "
                                f"('connector' = 'filesystem', 'path' = '{path_uri(parts)}', 'format' = 'csv')")
                env.execute_sql(f"INSERT INTO sink_{cell} {query_sql(cell, 'ev', a.window_minutes)}").wait()
                r["check_rows"] = sum(1 for _ in read_parts_lines(parts))
                r["status"] = "ok"
            except Exception as e:  # noqa: BLE001 - a cell Flink cannot run is recorded, the others still run
                msg = str(e)
                r["status"] = "error: " + next((line.strip() for line in msg.splitlines() if "Exception:" in line),
                                               msg[:300])[:500]
                print(f"python_aggregates_flink: {cell}: {r['status']}", file=sys.stderr, flush=True)
            save()
        out["total_process_s"] = round(time.time() - T_PROCESS_START, 3)
        out["total_cpu_s"] = round(tree_cpu_s(), 3)
        save()
        return 0 if all(r["status"] == "ok" for r in out["cells"].values()) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def read_parts_lines(parts):
    """The data lines of Flink's CSV part files under `parts` (in-progress and hidden files skipped)."""
    for dirpath, _, filenames in os.walk(parts):
        for fn in filenames:
            if not fn.startswith((".", "_")):
                with open(os.path.join(dirpath, fn)) as f:
                    yield from (line for line in f if line.strip())


if __name__ == "__main__":
    sys.exit(main())
