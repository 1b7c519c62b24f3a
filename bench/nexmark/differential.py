#!/usr/bin/env python3
"""Nexmark differential: windowagg (batch and streaming) and Spark's built-ins against Apache Flink.

bench/run nexmark-differential runs it after bench/nexmark/setup-flink and logs the output.

1. Input.  generator.py's bids (``--events`` Nexmark events, ``--seed``, ``--rate`` events per second
   of event time, no disorder: date_time never decreases, so no row is late for any engine and batch,
   streaming and Flink see the same rows), plus a few crafted "edge" bids on keys the generator never
   uses (ids from 9,000,000,001; see ``edge_bids``), in the two minutes before the midnight below:
   bids exactly one session gap apart and one gap + 1 ms apart, bids at T - 1 ms, T, T + 9,999 ms
   and T + 10 s of a window boundary T, and bids 1 ms before and exactly at the UTC midnight.  The
   events are placed so that they end ``--after-midnight-ms`` (500) after a UTC midnight: the
   cumulative query then crosses a day boundary, while its output stays small (a key has a window
   per 10 s step from its first step to the end of its day: 8,640 windows for a key with a bid
   after midnight; with --rate 10000 the 500 ms after midnight hold 10% of the bids, and the
   cumulative output grows to millions of rows).  Written as ONE CSV file
   in time order for Flink (flink_queries.py: several files are read in no fixed order) and as
   ``--files`` CSV files for windowagg's stream, plus a last file holding one flush bid (auction and
   bidder -1, price 0, 3 days after the last bid) whose watermark makes every real window final.
2. Engines, per query:
     flink      flink_queries.py with the Flink virtualenv's python, every query in one job (--queries),
                parallelism 1, hashmap state, its watermark delay (1 ms); the Flink process runs in a
                background thread while Spark works (--flink-first: before)
     wa_batch   queries.py's windowagg query on the one CSV file (batch)
     wa_stream  the same query on the stream of files (maxFilesPerTrigger=1, withWatermark("ts", 0 s),
                append mode, emit final, trigger availableNow, Parquet file sink read back in batch);
                the flush key's output is removed (q7 has no key: the windows after the last real bid)
     spark      queries.py's Spark built-in query, batch (q5_counts, q5, q7, q11; none for cumulative)
   q5 (hot items) is batch only in Spark: its streaming result is q5_top (queries.py) applied
   afterwards, in batch, to the streamed q5_counts output.
3. Comparison: every engine's rows in Flink's columns (flink_queries.COLUMNS; for q11 the session end
   in Flink's convention, last bid + gap: queries.py's ``flink_end``) as a multiset, against Flink's,
   and windowagg's streaming rows against its batch rows; a mismatch is a row in one multiset and not
   the other (counted with multiplicity).  The edge keys' rows are also checked against the rows
   worked out by hand from Flink's documented semantics (``expected_edge_rows``).  Prints, per query,
   the rows per engine, the mismatches and a few examples; exits 1 on any mismatch or failure.

Output: a JSON summary (--summary PATH, and summary.json in the work directory).  The work directory
(--work; default a fresh temporary one) holds the inputs, Flink's outputs and logs; a default one is
removed at the end unless something failed or differed.
"""
from __future__ import annotations

import collections
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import generator  # noqa: E402
import harness  # noqa: E402  (bench/: the flags, the session and the windowagg jar of every benchmark)
import queries as Q  # noqa: E402
from harness import log  # noqa: E402

DIFFERENTIAL_QUERIES = tuple(Q.FLINK_COLUMNS)
DEFAULT_QUERIES = "q5_counts,q7,q11,cumulative"
# the column naming a query's key (None: q7, global windows)
KEY = {"q5": "auction", "q5_counts": "auction", "q7": None, "q11": "bidder", "cumulative": "auction"}

DAY_MS = 86_400_000
EDGE_ID = 9_000_000_001  # first id of the crafted keys (the generator's ids are ~1000 + events/50*3)
EDGE_PRICE = 1_000_000_000  # above every generated price (< 10**8 cents)


# ------------------------------------------------------------------------------ input

def utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def edge_bids(midnight_ms: int):
    """Crafted bids on keys the generator never uses, each testing one convention:

    * session gap (bidder EDGE_ID, auction EDGE_ID + 10): T0 = midnight - 120 s, T0 + 10 s (exactly the gap: one session
      in Flink, Spark and KIP-94), T0 + 20.001 s (gap + 1 ms: a new session), T0 + 30.001 s (exact gap
      again: joins the second session).  Prices 1 (never a q7 maximum).
    * window boundary (auction EDGE_ID + 1, bidder EDGE_ID + 11): T - 1 ms, T, T + 9.999 s, T + 10 s for
      T = midnight - 60 s, with prices above any generated one and increasing, so that q7's maximum of
      [T - 10 s, T), [T, T + 10 s) and [T + 10 s, T + 20 s) shows which window each bid went to (a
      bid at a window's end put in that window would raise its maximum).
    * day boundary (auction EDGE_ID + 2, bidder EDGE_ID + 12): midnight - 1 ms and midnight (the next
      day's first instant: CUMULATE's period restarts).  Prices 1.
    Returns (DataFrame in time order, dict of the times used)."""
    import pandas as pd

    # before the midnight, so that only the generated bids after it (and the one edge bid at it) make
    # a day of cumulative windows
    t_b = midnight_ms - 60_000  # a multiple of 10 s
    t0 = t_b - 60_000
    rows = []

    def bid(auction, bidder, price, t):
        rows.append((auction, bidder, price, "edge", "", t, ""))

    for t in (t0, t0 + 10_000, t0 + 20_001, t0 + 30_001):
        bid(EDGE_ID + 10, EDGE_ID, 1, t)
    for i, t in enumerate((t_b - 1, t_b, t_b + 9_999, t_b + 10_000)):
        bid(EDGE_ID + 1, EDGE_ID + 11, EDGE_PRICE + (i if i != 2 else -1) * 100_000_000, t)
    for t in (midnight_ms - 1, midnight_ms):
        bid(EDGE_ID + 2, EDGE_ID + 12, 1, t)
    df = pd.DataFrame(rows, columns=generator.BID_COLUMNS).sort_values("date_time", kind="stable")
    return df.reset_index(drop=True), {"session_t0": t0, "boundary_t": t_b, "midnight": midnight_ms}


def expected_edge_rows(query: str, times: dict) -> tuple[list, list]:
    """(the edge keys, their expected rows in Flink's columns), worked out from Flink's semantics."""
    t0, tb, m = times["session_t0"], times["boundary_t"], times["midnight"]
    if query == "q11":
        b = EDGE_ID
        return ([b, EDGE_ID + 11, EDGE_ID + 12],
                [(b, 2, t0, t0 + 20_000), (b, 2, t0 + 20_001, t0 + 40_001),
                 (EDGE_ID + 11, 4, tb - 1, tb + 20_000),          # tb-1 .. tb+10s: gaps 1, 9999, 1 ms
                 (EDGE_ID + 12, 2, m - 1, m + 10_000)])
    if query == "q7":
        # maxima of the three windows around tb (edge prices dominate)
        p = [EDGE_PRICE + d * 100_000_000 for d in (0, 1, -1, 3)]
        return (None, [(tb - 10_000, tb, p[0]), (tb, tb + 10_000, p[1]), (tb + 10_000, tb + 20_000, p[3])])
    if query in ("q5_counts", "cumulative", "q5"):
        rows = []
        by_auction = {EDGE_ID + 10: [t0, t0 + 10_000, t0 + 20_001, t0 + 30_001],
                      EDGE_ID + 1: [tb - 1, tb, tb + 9_999, tb + 10_000],
                      EDGE_ID + 2: [m - 1, m]}
        if query == "q5":
            return None, None  # the edge auctions are rarely a window's top: not checked
        for a, ts in by_auction.items():
            counts = collections.Counter()
            for t in ts:
                if query == "q5_counts":
                    s = (t // 2_000) * 2_000
                    for start in range(s - 8_000, s + 1, 2_000):  # the 5 windows [start, start+10 s) holding t
                        counts[(start, start + 10_000)] += 1
                else:
                    day = (t // DAY_MS) * DAY_MS
                    for end in range((t // 10_000 + 1) * 10_000, day + DAY_MS + 1, 10_000):
                        counts[(day, end)] += 1
            rows += [(a, s, e, n) for (s, e), n in counts.items()]
        return list(by_auction), rows
    return None, None


def make_input(a, work: Path) -> dict:
    """Generates and writes the bids; returns what the run needs to know about them."""
    cfg = generator.Config(events=a.events, seed=a.seed, rate=a.rate, base_time_ms=a.base_time_ms)
    bids = generator.generate(cfg)["bid"]
    midnight = (a.base_time_ms // DAY_MS + 1) * DAY_MS  # the first UTC midnight after the base
    info = {"generated_bids": len(bids), "base_time_ms": a.base_time_ms,
            "first_ms": int(bids["date_time"].min()), "last_ms": int(bids["date_time"].max())}
    if a.edges:
        import pandas as pd
        edges, times = edge_bids(midnight)
        bids = pd.concat([bids, edges], ignore_index=True).sort_values("date_time", kind="stable")
        bids = bids.reset_index(drop=True)
        info.update(edge_bids=len(edges), edge_times=times)
    if not bids["date_time"].is_monotonic_increasing:
        raise RuntimeError("the bids are not in time order")
    # the session rule's corner in the generated data: consecutive bids of a bidder exactly 10 s apart
    gaps = bids.sort_values(["bidder", "date_time"], kind="stable").groupby("bidder")["date_time"].diff()
    info["bidder_gaps_exactly_10s"] = int((gaps == Q.GAP_MS).sum())
    info["bidder_gaps_10s_plus_1ms"] = int((gaps == Q.GAP_MS + 1).sum())
    info["bids"] = len(bids)
    info["last_real_ms"] = int(bids["date_time"].max())

    flink_dir, stream_dir = work / "flink", work / "stream"
    info["flink_csv"] = generator.write_bids(bids, str(flink_dir), 1)[0]
    paths = generator.write_bids(bids, str(stream_dir), a.files)
    flush = Q.flush_bid(bids, info["last_real_ms"] + Q.FLUSH_AFTER_MS)
    last_mtime = os.stat(paths[-1]).st_mtime
    flush_path = stream_dir / f"part-{a.files:04d}.csv"
    tmp = stream_dir / f".part-{a.files:04d}.csv.tmp"
    flush.to_csv(tmp, index=False)
    os.replace(tmp, flush_path)
    os.utime(flush_path, (last_mtime + 1, last_mtime + 1))
    info["stream_dir"] = str(stream_dir)
    info["stream_files"] = a.files + 1
    info["flush_ms"] = info["last_real_ms"] + Q.FLUSH_AFTER_MS
    return info


# ------------------------------------------------------------------------------ Flink

def run_flink(a, queries: list[str], csv: str, work: Path, results: dict) -> None:
    """Every query in one flink_queries.py process, as one Flink job; fills results[query]."""
    out_dir, tj, lg = work / "flink-out", work / "flink.timing.json", work / "flink.log"
    args = ["--bids", csv, "--queries", ",".join(queries), "--out-dir", str(out_dir), "--parallelism", "1",
            "--state-backend", "hashmap", "--timing-json", str(tj)]
    # a short-lived JVM whose outputs, not timings, count here: its quick compiler alone starts it sooner
    java_options = " ".join(filter(None, [os.environ.get("JAVA_TOOL_OPTIONS"), "-XX:TieredStopAtLevel=1"]))
    t = time.time()
    try:
        status = harness.flink_process(a.flink_python, HERE / "flink_queries.py", args, lg, a.flink_timeout,
                                       {**os.environ, "JAVA_TOOL_OPTIONS": java_options})
        timing = json.loads(tj.read_text()) if tj.exists() else None
        for q in queries:
            out = out_dir / f"flink-{q}.csv"
            ok = status == "ok" and out.exists()
            results[q] = {"ok": ok, "out": str(out), "wall_s": round(time.time() - t, 1), "log": str(lg),
                          "status": status}
            if timing:
                results[q]["timing"] = timing
            if not ok:
                results[q]["error"] = status if status.startswith("timeout") else harness.tail(lg)
    except Exception as e:  # noqa: BLE001
        for q in queries:
            results[q] = {"ok": False, "wall_s": round(time.time() - t, 1), "error": repr(e)}
    log(f"flink {','.join(queries)}: {'ok' if all(results[q]['ok'] for q in queries) else 'FAILED'} "
        f"in {time.time() - t:.1f} s")


def first_line(e: BaseException) -> str:
    """The first informative line of an error (py4j's first line only names the JVM call)."""
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    for i, l in enumerate(lines):
        if l.startswith("An error occurred while calling") and i + 1 < len(lines):
            return " ".join(lines[i + 1:i + 3])[:400]
    return (lines[0] if lines else repr(e))[:400]


# ------------------------------------------------------------------------------ Spark

def spark_session(a):
    """The differential's own session: every benchmark's (harness.build_session, on a private copy of the jar),
    with Arrow and RocksDB's changelog checkpointing, then --conf's settings."""
    os.environ["WINDOWAGG_JAR"] = a.jar
    spark = harness.build_session("windowagg-bench-nexmark-differential", master=a.master,
                                  shuffle_partitions=a.shuffle_partitions, driver_memory=a.driver_memory,
                                  extra={"spark.sql.execution.arrow.pyspark.enabled": "true",
                                         "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
                                         **harness.extra_conf(a)})
    spark.sparkContext.setLogLevel("FATAL")
    return spark


def rows_of(df, query: str):
    """A result's rows in Flink's columns (the session end in Flink's convention: flink_end), as a
    pandas DataFrame of int64 columns."""
    from pyspark.sql import functions as F
    cols = [("flink_end" if c == "window_end" and "flink_end" in df.columns else c) for c in Q.FLINK_COLUMNS[query]]
    pdf = df.select(*[F.col(c).cast("long").alias(n) for c, n in zip(cols, Q.FLINK_COLUMNS[query])]).toPandas()
    if pdf.isna().any().any():
        raise RuntimeError(f"{query}: null values in the result")
    return pdf.astype("int64")


def not_flush(df, query: str, info: dict):
    from pyspark.sql import functions as F
    key = KEY.get(query) or ("auction" if query == "q5_counts" else None)
    if key:
        return df.where(F.col(key) != F.lit(Q.FLUSH_ID))
    return df.where(F.col("window_start") <= F.lit(info["last_real_ms"]))  # q7: the windows up to the last real bid


def run_streaming(spark, query: str, info: dict, work: Path, a) -> tuple:
    """windowagg's `query` on the stream of files, written by Spark's Parquet file sink (append mode;
    a memory sink would hold every row in the driver's heap); returns (its output read back in batch,
    without the flush key's rows; per-run facts)."""
    wa = Q.QUERIES[query][0]
    stream = Q.stream_bids(spark, info["stream_dir"], watermark=a.watermark)
    name = f"nexmark_{query}_{int(time.time() * 1000)}"
    ck, out = work / "checkpoints" / name, work / "stream-out" / name
    t = time.time()
    q = (wa(stream).writeStream.format("parquet").option("path", str(out)).queryName(name).outputMode("append")
         .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
    try:
        done = q.awaitTermination(a.stream_timeout)
        if not done:
            raise RuntimeError(f"streaming {query} did not finish within {a.stream_timeout} s")
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()).splitlines()[0][:500])
        progress = q.recentProgress
    finally:
        q.stop()
    wall = time.time() - t
    metrics = collections.Counter()
    for p in progress:
        om = (p["observedMetrics"] or {}).get("windowagg") if p["observedMetrics"] else None
        if om is not None:
            d = om.asDict() if hasattr(om, "asDict") else dict(om)
            for k, v in d.items():
                if isinstance(v, (int, float)):
                    metrics[k] += v
    facts = {"wall_s": round(wall, 1), "micro_batches": len(progress),
             "input_rows": sum(p["numInputRows"] for p in progress),
             "data_batches": sum(1 for p in progress if p["numInputRows"] > 0),
             "windowagg_metrics": dict(metrics)}
    # read through the sink's _spark_metadata log: the committed files only
    return not_flush(spark.read.parquet(str(out)), query, info), facts


# ------------------------------------------------------------------------------ comparison

def diff(reference, other) -> tuple[int, list, list]:
    """Two results (pandas DataFrames, same columns) as multisets: (rows in one and not the other,
    counted with multiplicity; the rows only in `reference`; the rows only in `other`, sorted)."""
    import pandas as pd
    cols = list(reference.columns)
    r = reference.value_counts(cols, sort=False).rename("r")
    o = other[cols].value_counts(cols, sort=False).rename("o")
    j = pd.concat([r, o], axis=1).fillna(0).astype("int64")
    d = j[j["r"] != j["o"]].sort_index()
    if d.empty:
        return 0, [], []
    more_r, more_o = (d["r"] - d["o"]).clip(lower=0), (d["o"] - d["r"]).clip(lower=0)
    n = int(more_r.sum() + more_o.sum())

    def rows(counts):
        out = []
        for idx, c in counts[counts > 0].items():
            idx = idx if isinstance(idx, tuple) else (idx,)
            out += [tuple(int(x) for x in idx)] * int(c)
        return out
    return n, rows(more_r), rows(more_o)


def examples_of(only_ref: list, only_other: list, cols: list[str], k: int) -> list[str]:
    """Up to k lines of differences, pairing rows of one key and window where both sides have one."""
    win = [i for i, c in enumerate(cols) if c not in ("num", "max_price")]

    def key(r):
        return tuple(r[i] for i in win)
    other_by_key = {key(r): r for r in only_other[:100_000]}
    out, used = [], set()
    for r in only_ref:
        if len(out) >= k:
            break
        o = other_by_key.get(key(r))
        if o is not None:
            used.add(key(r))
            out.append(f"  {dict(zip(cols, r))}  vs  {dict(zip(cols, o))}")
        else:
            out.append(f"  only in reference: {dict(zip(cols, r))}")
    for o in only_other:
        if len(out) >= k:
            break
        if key(o) not in used:
            out.append(f"  only in this engine: {dict(zip(cols, o))}")
    return out


# ------------------------------------------------------------------------------ main

def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 2,000 events at 50 per second of event time, ending 100 ms after a "
                                "UTC midnight, streamed as 2 files (tests/test_flink.py's input)")
    p.add_argument("--events", type=int, help="Nexmark events, about 92%% bids (default 50,000; quick 2,000)")
    p.add_argument("--rate", type=int,
                   help="events per second of event time (default 100: 50,000 events span 500 s, so q7 has "
                        "~50 windows and bidders have many sessions; generator's own default is 10,000; quick 50)")
    p.add_argument("--after-midnight-ms", type=int,
                   help="the last event's time after a UTC midnight (the cumulative query crosses a day; default "
                        "500; quick 100)")
    p.add_argument("--base-time-ms", type=int, help="the first event's time (overrides --after-midnight-ms)")
    p.add_argument("--no-edges", dest="edges", action="store_false", help="no crafted edge bids")
    p.add_argument("--queries", default=DEFAULT_QUERIES,
                   help=f"comma-separated, of {','.join(DIFFERENTIAL_QUERIES)} (default {DEFAULT_QUERIES})")
    p.add_argument("--files", type=int,
                   help="files (micro-batches) of windowagg's stream, besides the flush file (default 5; quick 2)")
    p.add_argument("--watermark", default="0 seconds", help="withWatermark delay of the stream")
    p.add_argument("--work", help="work directory (kept); default: a temporary one, removed when all match")
    p.add_argument("--jar", help="windowagg jar (default $WINDOWAGG_JAR, else the one in this checkout's "
                                 "package: harness.windowagg_jar); run on a private copy, as every benchmark's")
    p.add_argument("--flink-python", default=str(harness.FLINK_PYTHON))
    p.add_argument("--flink-first", action="store_true",
                   help="run the Flink jobs before Spark starts instead of alongside it")
    p.add_argument("--flink-timeout", type=float, default=600.0, help="seconds for the Flink job")
    p.add_argument("--stream-timeout", type=float, default=600.0, help="seconds per streaming query")
    p.add_argument("--no-spark", dest="spark_builtins", action="store_false", help="skip Spark's built-ins")
    p.add_argument("--no-streaming", dest="streaming", action="store_false", help="skip windowagg streaming")
    p.add_argument("--examples", type=int, default=5, help="differences shown per engine and query")
    p.add_argument("--summary", help="write the JSON summary here too")
    harness.add_session_args(p, shuffle_partitions=2, driver_memory="2g", seed=1)
    a = p.parse_args(argv)
    harness.defaults(a, events=(50_000, 2_000), rate=(100, 50), after_midnight_ms=(500, 100), files=(5, 2))
    a.queries = [q.strip() for q in a.queries.split(",") if q.strip()]
    bad = [q for q in a.queries if q not in DIFFERENTIAL_QUERIES]
    if bad:
        p.error(f"unknown queries {bad}; choose from {','.join(DIFFERENTIAL_QUERIES)}")
    if a.events < 100:
        p.error("--events must be at least 100")
    if a.base_time_ms is None:
        a.base_time_ms = Q.base_time_ms(a.events, a.rate, a.after_midnight_ms)
    jar = a.jar or harness.windowagg_jar()
    if not jar or not os.path.isfile(jar):
        p.error(f"no windowagg jar (run dev/package, or give --jar or $WINDOWAGG_JAR): {jar}")
    a.jar = os.path.abspath(jar)
    if not os.path.exists(a.flink_python):
        p.error(f"--flink-python {a.flink_python} does not exist (run bench/nexmark/setup-flink)")
    return a


def main(argv=None, spark=None) -> int:
    """Runs the differential; with `spark`, a session of the caller's (windowagg's extension in it: the
    tests' own) instead of one of its own, left running (the session's flags are then the caller's)."""
    a = parse_args(argv)
    t_start = time.time()
    temp_work = a.work is None
    work = Path(a.work or tempfile.mkdtemp(prefix="nexmark-differential-")).resolve()
    if not temp_work:
        if work.exists() and any(work.iterdir()):
            raise SystemExit(f"--work {work} is not empty")
        work.mkdir(parents=True, exist_ok=True)
    summary = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "args": {k: v for k, v in vars(a).items()}, "work": str(work), "queries": {}}
    log(f"work directory {work}")

    t = time.time()
    info = make_input(a, work)
    summary["input"] = info
    log(f"input: {info['bids']} bids ({info['generated_bids']} generated + {info.get('edge_bids', 0)} edge), "
        f"{utc(info['first_ms'])} .. {utc(info['last_real_ms'])}; {info['bidder_gaps_exactly_10s']} pairs of "
        f"consecutive bids of a bidder exactly 10 s apart; written in {time.time() - t:.1f} s")

    flink_results: dict = {}
    thread = threading.Thread(target=run_flink, args=(a, a.queries, info["flink_csv"], work, flink_results),
                              daemon=True)
    thread.start()
    if a.flink_first:
        thread.join()

    engines: dict[str, dict[str, list]] = {q: {} for q in a.queries}
    facts: dict[str, dict] = {q: {} for q in a.queries}
    failures: list[str] = []
    own_session, batch = spark is None, None
    try:
        t = time.time()
        if own_session:
            spark = spark_session(a)
        version = getattr(sys.modules.get("windowagg"), "__version__", "?")
        log(f"spark session in {time.time() - t:.1f} s (windowagg {version})")
        batch = Q.read_bids(spark, info["flink_csv"]).cache()
        n = batch.count()
        if n != info["bids"]:
            failures.append(f"spark read {n} bids of {info['bids']}")
        streamed_counts = None
        for q in a.queries:
            wa, sp, _, _ = Q.QUERIES[q]
            runs = [("wa_batch", lambda: wa(batch))]
            if a.spark_builtins and sp is not None:
                runs.append(("spark", lambda: sp(batch)))
            for eng, make in runs:
                t = time.time()
                try:
                    engines[q][eng] = rows_of(make(), q)
                    facts[q][eng] = {"wall_s": round(time.time() - t, 1)}
                    log(f"{q} {eng}: {len(engines[q][eng])} rows in {time.time() - t:.1f} s")
                except Exception as e:  # noqa: BLE001
                    failures.append(f"{q} {eng}: {first_line(e)}")
                    facts[q][eng] = {"error": traceback.format_exc()[:3000]}
                    log(f"{q} {eng}: FAILED {first_line(e)}")
            if a.streaming:
                t = time.time()
                try:
                    if q == "q5":
                        # hot items in streaming: q5_counts streamed, then q5_top over its final output (batch)
                        if streamed_counts is None:
                            streamed_counts = run_streaming(spark, "q5_counts", info, work, a)
                        out, f = Q.q5_top(streamed_counts[0]), dict(streamed_counts[1], top_step="batch, after")
                    else:
                        out, f = run_streaming(spark, q, info, work, a)
                        if q == "q5_counts":
                            streamed_counts = (out, f)
                    engines[q]["wa_stream"] = rows_of(out, q)
                    facts[q]["wa_stream"] = f
                    late = {k: v for k, v in f["windowagg_metrics"].items() if v}
                    if f["input_rows"] != info["bids"] + 1:
                        failures.append(f"{q} wa_stream: read {f['input_rows']} rows of {info['bids'] + 1}")
                    if late:
                        failures.append(f"{q} wa_stream: rows routed aside {late}")
                    log(f"{q} wa_stream: {len(engines[q]['wa_stream'])} rows in {time.time() - t:.1f} s "
                        f"({f['data_batches']} data micro-batches of {f['micro_batches']}; "
                        f"windowagg metrics {late or 'all 0'})")
                except Exception as e:  # noqa: BLE001
                    failures.append(f"{q} wa_stream: {first_line(e)}")
                    facts[q]["wa_stream"] = {"error": traceback.format_exc()[:3000]}
                    log(f"{q} wa_stream: FAILED {first_line(e)}")
    finally:
        if own_session and spark is not None:
            try:
                harness.stop(spark)
            except Exception as e:  # noqa: BLE001  (a JVM that died already)
                failures.append(f"spark stop: {first_line(e)}")
        elif batch is not None:
            batch.unpersist()

    t = time.time()
    thread.join()
    if time.time() - t > 1:
        log(f"waited {time.time() - t:.1f} s for Flink")
    summary["flink"] = flink_results
    for q in a.queries:
        fr = flink_results.get(q, {"ok": False, "error": "not run"})
        if fr["ok"]:
            try:
                engines[q]["flink"] = Q.read_flink(fr["out"], q)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{q} flink output: {e}")
        else:
            failures.append(f"{q} flink: {fr.get('error', '')[-500:]}")

    # ---------------------------------------------------------------- compare
    import pandas as pd
    total_mismatches = 0
    print()
    for q in a.queries:
        cols = Q.FLINK_COLUMNS[q]
        e = engines[q]
        qs = {"columns": cols, "rows": {k: len(v) for k, v in e.items()}, "comparisons": {}, "facts": facts[q]}
        print(f"== {q}: rows " + ", ".join(f"{k} {len(v):,}" for k, v in e.items()))
        pairs = [("flink", o) for o in ("wa_batch", "wa_stream", "spark")] + [("wa_batch", "wa_stream")]
        for ref, other in pairs:
            if ref not in e or other not in e:
                continue
            n, only_ref, only_other = diff(e[ref], e[other])
            total_mismatches += n
            qs["comparisons"][f"{other} vs {ref}"] = {
                "mismatches": n, f"only_in_{ref}": len(only_ref), f"only_in_{other}": len(only_other),
                "examples": examples_of(only_ref, only_other, cols, a.examples)}
            print(f"   {other:9s} vs {ref:8s}: {n} mismatches"
                  + (f" ({len(only_ref)} rows only in {ref}, {len(only_other)} only in {other})" if n else ""))
            if n:
                for line in examples_of(only_ref, only_other, cols, a.examples):
                    print("     " + line.replace("reference", ref).replace("this engine", other))
        # the edge keys against the rows worked out by hand
        if a.edges:
            keys, expected = expected_edge_rows(q, info["edge_times"])
            if expected is not None:
                checks = {}
                exp = pd.DataFrame(expected, columns=cols)  # in Flink's column order
                for eng, rows in e.items():
                    if keys is None:  # q7: the three windows around the boundary
                        got = rows[rows["window_start"].isin(exp["window_start"])]
                    else:
                        got = rows[rows[KEY[q]].isin(keys)]
                    n, miss, extra = diff(exp, got)
                    checks[eng] = {"expected": len(exp), "got": len(got), "mismatches": n,
                                   "examples": examples_of(miss, extra, cols, a.examples)}
                    total_mismatches += n
                qs["edge_check"] = checks
                bad = {k: v for k, v in checks.items() if v["mismatches"]}
                print(f"   edge keys vs the rows worked out by hand ({len(expected)} rows): "
                      + ("all engines match" if not bad else "MISMATCH in " + ", ".join(bad)))
                for k, v in bad.items():
                    for line in v["examples"]:
                        print(f"     {k}: " + line.replace("reference", "expected").replace("this engine", k))
        fr = flink_results.get(q, {})
        if fr.get("timing"):
            qs["flink_timing"] = {k: fr["timing"].get(k) for k in ("wall_s", "startup_s", "total_process_s")}
            qs["flink_timing"]["rows"] = fr["timing"].get("rows", {}).get(q)
        summary["queries"][q] = qs

    summary["failures"] = failures
    summary["total_mismatches"] = total_mismatches
    summary["wall_s"] = round(time.time() - t_start, 1)
    summary["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    ok = not failures and total_mismatches == 0
    summary["ok"] = ok
    text = json.dumps(summary, indent=1, default=str) + "\n"
    (work / "summary.json").write_text(text)
    if a.summary:
        Path(a.summary).parent.mkdir(parents=True, exist_ok=True)
        Path(a.summary).write_text(text)
    print()
    for f in failures:
        print(f"FAILED: {f}")
    print(f"{'OK' if ok else 'DIFFERENCES'}: {len(a.queries)} queries, {total_mismatches} mismatches, "
          f"{len(failures)} failures, {summary['wall_s']} s in all")
    if temp_work and ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"work directory kept: {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
