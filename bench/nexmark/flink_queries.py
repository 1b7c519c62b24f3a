#!/usr/bin/env python3
"""Nexmark-style windowed aggregations on Apache Flink (PyFlink Table API / SQL).

Run with the Flink venv's python (see ./setup-flink); --help lists the flags. --query runs one query
(the benchmark); --queries runs several as ONE job (a statement set: one mini-cluster, started once)
and writes --out-dir/flink-<query>.csv for each: what differential.py uses, where the outputs matter
and the timings do not (its --timing-json has startup_s, the one job's wall_s and cpu_s, rows per
query and total_process_s).

Input: CSV file(s) with one header line and the columns
    auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
    date_time BIGINT (epoch milliseconds), extra STRING
A directory is read whole (Flink's filesystem source skips files whose name starts
with '.' or '_').  Flink 2.3's CSV format has no skip-header option: the source uses
'csv.ignore-parse-errors', which turns the header line into a row of NULLs, and a view
drops rows whose BIGINT columns are NULL.  Caveat: a malformed data row is dropped
silently too.

Execution: STREAMING mode, local mini-cluster, event time ts = TO_TIMESTAMP_LTZ(date_time, 3),
WATERMARK FOR ts AS ts - <d ms>, written INTERVAL '0 00:00:00.ddd' DAY TO SECOND(3) because
Flink SQL has no MILLISECOND interval unit.  The bounded filesystem source ends, the
watermark then goes to +inf and every window fires.  Events that arrive after the
watermark passed their window are dropped by Flink (late data): inputs should be sorted
by date_time within each file, or --watermark-delay-ms must cover the disorder.  With
several files, one source reader reads its files in no fixed order under one watermark,
so the rows of a file read after a file with later times are dropped (seen: half of a
2-file input lost) unless --watermark-delay-ms covers the whole time span; a warning is
printed for multi-file inputs.

The session time zone is set to UTC: with a TIMESTAMP_LTZ time attribute Flink aligns
windows (and reports window_start/window_end as TIMESTAMP(3)) in the session time zone,
which matters for the 1-day CUMULATE window.  window_start/window_end are written as
epoch milliseconds (BIGINT).

Window semantics (Flink window TVFs; checked against hand-worked rows by differential.py's edge bids):
  * TUMBLE/HOP/CUMULATE windows are [window_start, window_end): an event at exactly
    window_end belongs to the next window.  HOP windows are aligned to multiples of the
    slide from epoch 0; CUMULATE windows start at multiples of the max size (1 day, UTC)
    and end at start + k*step.
  * SESSION: window_start = first event time, window_end = LAST EVENT TIME + GAP (not the
    last event time).  Two consecutive events of a key are in the same session when
    t_next - t_prev <= gap (an exact 10 s gap does NOT split the session: Flink merges
    the per-event windows [t, t+gap) when they touch, TimeWindow.intersects is inclusive);
    a new session starts when t_next - t_prev > gap.

Output: --out CSV with a header line, rows sorted numerically (all columns are BIGINT).
--sink fs (default) lets Flink write CSV part files with the filesystem connector into a
temporary directory .nexmark-flink-*/ beside OUT (removed afterwards) and the python side merges and sorts them; --sink
collect pulls rows through TableResult.collect() (py4j, row by row; slower for big results).

Timing (--timing-json), all in seconds:
  startup_s      process start -> TableEnvironment ready (python imports + JVM launch via py4j).
  warmup_s       list: with --warmup-runs N, the same query over --warmup-bids (a CSV like
                 --bids), run N times first in the same JVM, so that the real run finds its
                 code compiled (warmup_cpu_s and warmup_jit_s likewise).
  empty_job_s    list: the same query over an empty (header-only) input, run --empty-jobs
                 times (default 2) in the same JVM before the real run (after the warm-up
                 runs, if any).  empty_job_cold_s (the first) pays class loading/JIT of planner
                 and runtime unless warm-up runs came first; empty_job_warm_s
                 (the last) is the per-job overhead left once warm: planning + code
                 generation + local mini-cluster start + deploy + finish + teardown (each
                 job gets its own mini-cluster).
  wall_s         real query: job submission -> job finished with all results written (fs)
                 or collected (collect); excludes python-side merge/sort/write of OUT.csv
                 (write_out_s).  Runs warm when empty jobs ran before it, cold with
                 --no-empty-job.
  cpu_s          CPU (user+sys) of this python process and all its descendants (the JVM
                 that py4j launched) over the wall_s span, read from /proc/<pid>/stat.
                 RUSAGE_CHILDREN would miss the JVM: it only counts reaped children.
  jit_s          the JVM's just-in-time compilers' time during the real run (their threads
                 run beside the job's and count in cpu_s); empty_job_warm_jit_s likewise.
  processing_s_est = wall_s - empty_job_warm_s (processing_cpu_s_est likewise).
  total_process_s / total_cpu_s: whole process up to writing the JSON.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

T_PROCESS_START = time.time()

QUERIES = ("q5", "q5_counts", "q5_sliding_not_supported", "q7", "q7_bids", "q11", "cumulative")

# Output columns per query (all BIGINT).
COLUMNS = {
    "q5": ["auction", "num", "window_start", "window_end"],
    "q5_counts": ["auction", "window_start", "window_end", "num"],
    "q5_sliding_not_supported": ["auction", "window_start", "window_end", "num"],
    "q7": ["window_start", "window_end", "max_price"],
    "q7_bids": ["auction", "bidder", "price", "date_time", "window_end"],
    "q11": ["bidder", "num", "window_start", "window_end"],
    "cumulative": ["auction", "window_start", "window_end", "num"],
}

EXIT_UNSUPPORTED = 3


def millis(col):
    """TIMESTAMP(3) (UTC session time zone) -> epoch milliseconds BIGINT.

    CAST(TIMESTAMP AS BIGINT) is rejected by Flink 2.x and TIMESTAMPDIFF(MILLISECOND, ...)
    truncates to whole seconds, so: epoch seconds * 1000 + millisecond-of-second."""
    return f"(EXTRACT(EPOCH FROM {col}) * 1000 + EXTRACT(MILLISECOND FROM {col}))"


def hop(src, slide_s=2, size_s=10):
    return (f"TABLE(HOP(TABLE {src}, DESCRIPTOR(ts), "
            f"INTERVAL '{slide_s}' SECOND, INTERVAL '{size_s}' SECOND))")


def tumble(src):
    return f"TABLE(TUMBLE(TABLE {src}, DESCRIPTOR(ts), INTERVAL '10' SECOND))"


def query_sql(query, src):
    """SELECT statement producing COLUMNS[query], reading table/view `src`."""
    if query in ("q5_counts", "q5_sliding_not_supported"):
        # q5_sliding_not_supported: a HOP whose size (10 s) is not a multiple of the slide
        # (3 s).  Flink's window TVFs reject that (Spark's window() accepts it).
        w = hop(src) if query == "q5_counts" else hop(src, slide_s=3)
        return f"""
SELECT auction, {millis('window_start')} AS window_start, {millis('window_end')} AS window_end,
       COUNT(*) AS num
FROM {w}
GROUP BY auction, window_start, window_end"""
    if query == "q5":
        # Nexmark q5 "hot items" (the Nexmark Flink SQL with window TVFs): per HOP window
        # (10 s every 2 s) the auction(s) with the most bids (ties all kept).  The planner
        # turns MaxBids into a window aggregate over the windowed counts and the join into
        # a window join, so the result is insert-only.
        return f"""
SELECT AuctionBids.auction, AuctionBids.num,
       {millis('AuctionBids.starttime')} AS window_start, {millis('AuctionBids.endtime')} AS window_end
FROM (
  SELECT auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
  FROM {hop(src)}
  GROUP BY auction, window_start, window_end
) AS AuctionBids
JOIN (
  SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
  FROM (
    SELECT COUNT(*) AS num, window_start AS starttime, window_end AS endtime
    FROM {hop(src)}
    GROUP BY auction, window_start, window_end
  ) AS CountBids
  GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn"""
    if query == "q7":
        return f"""
SELECT {millis('window_start')} AS window_start, {millis('window_end')} AS window_end,
       MAX(price) AS max_price
FROM {tumble(src)}
GROUP BY window_start, window_end"""
    if query == "q7_bids":
        # Bids whose price equals the max of their TUMBLE 10 s window (window join of the
        # windowed bids with the windowed max; exact [start, end) membership, unlike the
        # original Nexmark q7's BETWEEN interval join that also matches a bid at window_end).
        return f"""
SELECT B.auction, B.bidder, B.price, B.date_time, {millis('B.window_end')} AS window_end
FROM (SELECT auction, bidder, price, date_time, window_start, window_end FROM {tumble(src)}) B
JOIN (SELECT window_start, window_end, MAX(price) AS maxprice FROM {tumble(src)}
      GROUP BY window_start, window_end) M
ON B.window_start = M.window_start AND B.window_end = M.window_end AND B.price = M.maxprice"""
    if query == "q11":
        # Nexmark q11 user sessions with the Flink 2.x SESSION TVF (PARTITION BY bidder).
        # NB Flink's session window_end = last event time + gap (10 s), window_start = first
        # event time; events <= 10 s apart (gap exactly 10 s included) share a session.
        return f"""
SELECT bidder, COUNT(*) AS num, {millis('window_start')} AS window_start,
       {millis('window_end')} AS window_end
FROM TABLE(SESSION(TABLE {src} PARTITION BY bidder, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end"""
    if query == "cumulative":
        # CUMULATE: windows [day_start, day_start + k*10 s) for k = 1..8640, day_start aligned
        # to UTC midnight.  A key's windows are emitted for every step up to the day's end
        # once it has data (after its last bid the count just repeats).
        return f"""
SELECT auction, {millis('window_start')} AS window_start, {millis('window_end')} AS window_end,
       COUNT(*) AS num
FROM TABLE(CUMULATE(TABLE {src}, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '1' DAY))
GROUP BY auction, window_start, window_end"""
    raise ValueError(query)


def source_ddl(name, path, wm_delay_ms):
    """Source table `name`_raw over the CSV file(s) and view `name` without header rows.

    Flink 2.3's CSV format has no skip-header option; with 'csv.ignore-parse-errors' the
    header line becomes a row of NULLs (fields that fail to parse are set to NULL).  The
    rowtime must not be NULL at the watermark assigner, hence the COALESCE (the header
    row gets ts = epoch 0, which never advances the watermark), and the view filters the
    header rows out before any window sees them."""
    return [f"""
CREATE TEMPORARY TABLE {name}_raw (
  auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING,
  date_time BIGINT, extra STRING,
  ts AS COALESCE(TO_TIMESTAMP_LTZ(date_time, 3), TO_TIMESTAMP_LTZ(0, 3)),
  WATERMARK FOR ts AS ts - {ms_interval(wm_delay_ms)}
) WITH (
  'connector' = 'filesystem',
  'path' = '{path_uri(path)}',
  'format' = 'csv',
  'csv.ignore-parse-errors' = 'true'
)""", f"""
CREATE TEMPORARY VIEW {name} AS
SELECT * FROM {name}_raw
WHERE date_time IS NOT NULL AND auction IS NOT NULL AND bidder IS NOT NULL AND price IS NOT NULL"""]


def ms_interval(ms):
    """INTERVAL literal of `ms` milliseconds.  Flink SQL has no MILLISECOND interval unit
    (and plain SECOND allows only 2 leading digits), so use DAY TO SECOND(3)."""
    ms = int(ms)
    if ms < 0:
        raise ValueError("watermark delay must be >= 0")
    d, r = divmod(ms, 86_400_000)
    h, r = divmod(r, 3_600_000)
    m, r = divmod(r, 60_000)
    sec, r = divmod(r, 1000)
    return f"INTERVAL '{d} {h:02d}:{m:02d}:{sec:02d}.{r:03d}' DAY TO SECOND(3)"


def sink_ddl(name, query, path):
    cols = ", ".join(f"{c} BIGINT" for c in COLUMNS[query])
    return f"""
CREATE TEMPORARY TABLE {name} ({cols}) WITH (
  'connector' = 'filesystem',
  'path' = '{path_uri(path)}',
  'format' = 'csv'
)"""


def path_uri(p):
    return "file://" + os.path.abspath(p)


# ---------------------------------------------------------------- CPU accounting

_CLK = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    rest = s[s.rindex(")") + 2:].split()
    # fields after "(comm) ": state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    return int(rest[1]), int(rest[11]) + int(rest[12])


def tree_cpu_s(root=None):
    """utime+stime (s) of `root` and all its live descendants (the JVM started via py4j),
    plus CPU of reaped children (RUSAGE_CHILDREN via the root's own cutime/cstime is not
    needed here: the JVM is alive until the end)."""
    root = root or os.getpid()
    stats = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stats[int(d)] = _proc_stat(int(d))
            except (OSError, ValueError, IndexError):
                pass
    children = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, stack = 0, [root]
    while stack:
        p = stack.pop()
        if p in stats:
            total += stats[p][1]
        stack.extend(children.get(p, []))
    return total / _CLK


def jvm_pids(root=None):
    root = root or os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid, _ = _proc_stat(int(d))
                with open(f"/proc/{d}/comm") as f:
                    comm = f.read().strip()
            except (OSError, ValueError, IndexError):
                continue
            if ppid == root:
                out.append((int(d), comm))
    return out


# ---------------------------------------------------------------- helpers

def input_files(path):
    files = []
    if os.path.isdir(path):
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
            files += [os.path.join(dirpath, f) for f in filenames if not f.startswith((".", "_"))]
    else:
        files = [path]
    return files


def count_events(files):
    n = 0
    for fn in files:
        lines, last = 0, b"\n"
        with open(fn, "rb") as f:
            for buf in iter(lambda: f.read(1 << 20), b""):
                lines += buf.count(b"\n")
                last = buf[-1:]
        if last != b"\n":
            lines += 1  # last line without a newline
        n += max(lines - 1, 0)  # minus the header line
    return n


def read_parts(parts_dir):
    rows = []
    for dirpath, _, filenames in os.walk(parts_dir):
        for fn in filenames:
            if fn.startswith((".", "_")):
                continue  # in-progress / hidden files
            with open(os.path.join(dirpath, fn)) as f:
                for line in f:
                    line = line.strip()
                    if line:
                        rows.append(tuple(int(x) for x in line.split(",")))
    return rows


def write_csv(path, cols, rows):
    rows = sorted(rows)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")
    os.replace(tmp, path)
    return len(rows)


def make_env(args):
    from pyflink.table import EnvironmentSettings, TableEnvironment
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    c = env.get_config()
    c.set("pipeline.name", f"nexmark-flink-{args.query or '-'.join(args.queries)}")
    c.set("parallelism.default", str(args.parallelism))
    c.set("state.backend.type", args.state_backend)
    c.set("table.local-time-zone", "UTC")
    return env


def jit_s():
    """Seconds the JVM's just-in-time compilers have spent since it started (the local mini-cluster runs
    in the JVM py4j launched)."""
    from pyflink.java_gateway import get_gateway
    return get_gateway().jvm.java.lang.management.ManagementFactory.getCompilationMXBean().getTotalCompilationTime() / 1000.0


def run_job(env, args, src_table, out_parts, sink_name=None):
    """Run the query over `src_table`; returns (rows, wall_s, cpu_s, jit_s)."""
    sql = query_sql(args.query, src_table)
    jit0 = jit_s()
    cpu0, t0 = tree_cpu_s(), time.time()
    if args.sink == "collect":
        res = env.execute_sql(sql)
        with res.collect() as it:
            rows = [tuple(int(x) for x in r) for r in it]
    else:
        sink = sink_name or "sink_" + src_table
        env.execute_sql(sink_ddl(sink, args.query, out_parts))
        env.execute_sql(f"INSERT INTO {sink} {sql}").wait()
        rows = None
    wall, cpu, jit = time.time() - t0, tree_cpu_s() - cpu0, jit_s() - jit0
    if rows is None:
        rows = read_parts(out_parts)
    return rows, wall, cpu, jit


def run_statement_set(env, args, src_table, work):
    """Every query of `args.queries` over `src_table` as one job; returns ({query: rows}, wall_s, cpu_s)."""
    statements = env.create_statement_set()
    parts = {}
    for q in args.queries:
        parts[q] = os.path.join(work, f"out-{q}")
        env.execute_sql(sink_ddl(f"sink_{q}", q, parts[q]))
        statements.add_insert_sql(f"INSERT INTO sink_{q} {query_sql(q, src_table)}")
    cpu0, t0 = tree_cpu_s(), time.time()
    statements.execute().wait()
    wall, cpu = time.time() - t0, tree_cpu_s() - cpu0
    return {q: read_parts(p) for q, p in parts.items()}, wall, cpu


def report_timing(args, timing):
    """The timings to --timing-json if given, and as a line of JSON on stderr."""
    if args.timing_json:
        with open(args.timing_json, "w") as f:
            json.dump(timing, f, indent=1)
    print(json.dumps(timing), file=sys.stderr)


def run_several(args, timing):
    """The --queries form: one job, DIR/flink-<query>.csv per query."""
    os.makedirs(args.out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".nexmark-flink-", dir=args.out_dir)
    try:
        env = make_env(args)
        timing["startup_s"] = round(time.time() - T_PROCESS_START, 3)
        for ddl in source_ddl("bid", args.bids, args.watermark_delay_ms):
            env.execute_sql(ddl)
        results, wall, cpu = run_statement_set(env, args, "bid", work)
        timing.update(wall_s=round(wall, 3), cpu_s=round(cpu, 3),
                      rows={q: write_csv(os.path.join(args.out_dir, f"flink-{q}.csv"), COLUMNS[q], rows)
                            for q, rows in results.items()},
                      total_process_s=round(time.time() - T_PROCESS_START, 3))
        report_timing(args, timing)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def flink_version():
    try:
        import importlib.metadata as md
        return md.version("apache-flink")
    except Exception:
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bids", required=True, help="CSV file or directory of CSV files")
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--query", choices=QUERIES)
    which.add_argument("--queries", help="comma-separated queries, run as one job (with --out-dir)")
    ap.add_argument("--out", help="output CSV (header + sorted rows), with --query")
    ap.add_argument("--out-dir", help="with --queries: where flink-<query>.csv go")
    ap.add_argument("--parallelism", type=int, default=1)
    ap.add_argument("--state-backend", default="hashmap", choices=("hashmap", "rocksdb"))
    # 1 ms, not 0: a watermark of ts - 0 can pass a window's last millisecond between two bids of that
    # millisecond (ten share one at 10,000 events/s) and drop the second as late; 1 ms keeps every bid of
    # a time-ordered input
    ap.add_argument("--watermark-delay-ms", type=int, default=1)
    ap.add_argument("--timing-json")
    ap.add_argument("--sink", default="fs", choices=("fs", "collect"),
                    help="fs: Flink filesystem CSV sink (default); collect: TableResult.collect()")
    ap.add_argument("--empty-jobs", type=int, default=2,
                    help="run the query over an empty input this many times before the real "
                         "run (default 2: the first cold, the last warm; 0 = none)")
    ap.add_argument("--no-empty-job", action="store_true", help="same as --empty-jobs 0")
    ap.add_argument("--warmup-bids", help="a CSV like --bids that --warmup-runs read before the empty jobs")
    ap.add_argument("--warmup-runs", type=int, default=0,
                    help="run the query over --warmup-bids this many times first, untimed (default 0)")
    ap.add_argument("--explain", action="store_true", help="print the plan (changelog modes) to stderr")
    args = ap.parse_args(argv)

    if not os.path.exists(args.bids):
        ap.error(f"--bids {args.bids} does not exist")
    if args.warmup_runs and not (args.warmup_bids and os.path.exists(args.warmup_bids)):
        ap.error("--warmup-runs reads --warmup-bids, an existing CSV file or directory")
    if args.warmup_runs and args.queries is not None:
        ap.error("--warmup-runs is for the --query form")
    if args.queries is not None:
        args.queries = [q.strip() for q in args.queries.split(",") if q.strip()]
        unknown = [q for q in args.queries if q not in QUERIES]
        if unknown or not args.queries:
            ap.error(f"--queries: unknown {unknown}; choose from {', '.join(QUERIES)}")
        if not args.out_dir or args.out:
            ap.error("--queries writes into --out-dir (not --out)")
    elif not args.out or args.out_dir:
        ap.error("--query writes to --out (not --out-dir)")
    files = input_files(args.bids)
    events = count_events(files)
    if len(files) > 1:
        print(f"nexmark_flink: warning: {len(files)} input files.  A source reader reads its files "
              "in no fixed order with one watermark, so rows of a file read after a file with "
              "later times are dropped as late unless --watermark-delay-ms covers the time span "
              f"(now {args.watermark_delay_ms} ms).", file=sys.stderr)

    if args.queries is not None:
        return run_several(args, {"queries": args.queries, "events": events, "parallelism": args.parallelism,
                                  "state_backend": args.state_backend, "flink_version": flink_version()})
    timing = {"query": args.query, "events": events, "parallelism": args.parallelism,
              "state_backend": args.state_backend, "watermark_delay_ms": args.watermark_delay_ms,
              "sink": args.sink, "flink_version": flink_version()}

    work = tempfile.mkdtemp(prefix=".nexmark-flink-", dir=os.path.dirname(os.path.abspath(args.out)))
    try:
        env = make_env(args)
        timing["startup_s"] = round(time.time() - T_PROCESS_START, 3)
        timing["startup_cpu_s"] = round(tree_cpu_s(), 3)
        for ddl in source_ddl("bid", args.bids, args.watermark_delay_ms):
            env.execute_sql(ddl)
        if args.explain:
            print(env.explain_sql(query_sql(args.query, "bid"),
                                  *_explain_details()), file=sys.stderr)
        try:
            if args.warmup_runs > 0:
                for ddl in source_ddl("bid_warmup", args.warmup_bids, args.watermark_delay_ms):
                    env.execute_sql(ddl)
                warm = [run_job(env, args, "bid_warmup", os.path.join(work, f"warmup_out{i}"), sink_name=f"sink_warmup{i}")
                        for i in range(args.warmup_runs)]
                timing.update(warmup_s=[round(w[1], 3) for w in warm], warmup_cpu_s=[round(w[2], 3) for w in warm],
                              warmup_jit_s=[round(w[3], 3) for w in warm])
            n_empty = 0 if args.no_empty_job else max(args.empty_jobs, 0)
            if n_empty:
                empty = os.path.join(work, "empty_input")
                os.makedirs(empty)
                with open(os.path.join(empty, "bids.csv"), "w") as f:
                    f.write("auction,bidder,price,channel,url,date_time,extra\n")
                for ddl in source_ddl("bid_empty", empty, args.watermark_delay_ms):
                    env.execute_sql(ddl)
                walls, cpus = [], []
                for i in range(n_empty):
                    _, ew, ec, ej = run_job(env, args, "bid_empty", os.path.join(work, f"empty_out{i}"),
                                            sink_name=f"sink_empty{i}")
                    walls.append(round(ew, 3))
                    cpus.append(round(ec, 3))
                timing.update(empty_job_s=walls, empty_job_cpu_s=cpus,
                              empty_job_cold_s=walls[0], empty_job_warm_s=walls[-1],
                              empty_job_warm_cpu_s=cpus[-1], empty_job_warm_jit_s=round(ej, 3))
            rows, wall, cpu, jit = run_job(env, args, "bid", os.path.join(work, "out"))
        except Exception as e:  # noqa: BLE001
            msg = str(e)
            if args.query == "q5_sliding_not_supported":
                first = next((l for l in msg.splitlines() if "Exception" in l and ":" in l), msg[:300])
                print(f"nexmark_flink: {args.query}: not supported by Flink: {first.strip()}",
                      file=sys.stderr)
                timing.update(supported=False, error=first.strip()[:500])
                report_timing(args, timing)
                return EXIT_UNSUPPORTED
            raise
        t_w = time.time()
        n = write_csv(args.out, COLUMNS[args.query], rows)
        if "empty_job_warm_s" in timing:
            timing["processing_s_est"] = round(wall - timing["empty_job_warm_s"], 3)
            timing["processing_cpu_s_est"] = round(cpu - timing["empty_job_warm_cpu_s"], 3)
        timing.update(wall_s=round(wall, 3), cpu_s=round(cpu, 3), jit_s=round(jit, 3), rows=n,
                      write_out_s=round(time.time() - t_w, 3),
                      total_process_s=round(time.time() - T_PROCESS_START, 3),
                      total_cpu_s=round(tree_cpu_s(), 3),
                      jvm=[c for _, c in jvm_pids()])
        if args.query == "q5_sliding_not_supported":
            timing["supported"] = True
        report_timing(args, timing)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _explain_details():
    from pyflink.table.explain_detail import ExplainDetail
    return (ExplainDetail.CHANGELOG_MODE,)


if __name__ == "__main__":
    sys.exit(main())
