"""A demo job: per-user 10-minute sliding windows over a generated clickstream.

Run it with ``dev/demo [--users N] [--events N] [--out DIR]`` (which sets up the environment first),
or ``python examples/python/demo.py ...`` where windowagg and matplotlib are installed: it uses the
package as any application does, and is not part of it. It

1. generates a deterministic (seeded) clickstream in local Spark: users visit in sessions of a few
   clicks each, busy users visit more often, every click has a page and a dwell time, and clicks
   arrive out of order (a few seconds of delay, now and then minutes);
2. computes, per user, sliding windows of 10 minutes (Kafka Streams' KIP-450: one ending at each
   click and one starting just after each click): clicks, total and maximum dwell, and distinct pages;
3. prints the busiest windows, writes all windows to Parquet (``windows/`` under ``--out``, default
   ``out/demo``) and draws the five busiest users' clicks per window over the day
   (``busiest-users.png``, with matplotlib).

With ``--streaming`` the same clickstream is cut by arrival time into files (``--files``) that land
one by one in a folder, read as a stream (one file per micro-batch). The 10-minute windows are
computed in Structured Streaming with a watermark one minute (``--grace``) behind the latest
click; each window is written once, when final, and clicks that arrive after all their windows
are final are written aside with the reason. In this mode the 1% of delayed clicks arrive up to
30 minutes late (``--max-delay-minutes``) instead of 10, so that some of them miss their windows.
Outputs, under ``--out`` (default ``out/demo-stream``): ``windows/`` and ``late/`` (Parquet, one
folder per micro-batch), ``micro-batches.png`` (clicks read, windows emitted and late clicks per
micro-batch, with matplotlib), ``checkpoint/`` and ``landing/`` (the input files).

With ``--kafka`` the clicks go through Kafka instead (``dev/demo --kafka`` starts a broker on
loopback and passes ``--bootstrap-servers`` and ``--kafka-jars``, Spark's Kafka connector): they are
produced in arrival order to the topic ``demo-clicks``, and two streaming queries read it with
Spark's Kafka source (``--micro-batches`` micro-batches) and write with its sink: 10-minute sliding
windows to ``demo-sliding-windows`` and sessions (``--session-gap``) to ``demo-sessions``, both final
and keyed by user, and each query's late clicks to a topic of their own (``demo-sliding-late``,
``demo-session-late``). Values are JSON. The summary is read back from the topics; the checkpoints
are under ``--out`` (default ``out/demo-kafka``).
"""

import argparse
import glob
import os
import shutil
import threading
import time
from typing import Dict, List, Optional

# Why a click is routed aside (late_reason), printed with the counts.
LATE_REASONS = {
    "late": "every window that could hold the click was final when it arrived",
    "no window": "it arrived behind the watermark, after its own window was final, and no later click "
    "made a window that holds it",
}

# What the windows' columns hold, printed with them.
WINDOW_COLUMNS = [
    ("user_id", "the user"),
    ("window_start, window_end", "the window, both ends included: 10 minutes ending at a click, or starting 1 µs after one"),
    ("clicks", "the user's clicks in the window"),
    ("total_dwell_ms, max_dwell_ms", "the total and the longest time spent on a page, over those clicks"),
    ("distinct_pages", "how many different pages those clicks were on"),
]

PAGES = [
    "/",
    "/search",
    "/category/shoes",
    "/category/books",
    "/item/1042",
    "/item/2203",
    "/item/3117",
    "/item/4821",
    "/cart",
    "/checkout",
    "/account",
    "/help",
]
SESSION_CLICKS = 12  # average clicks per visit
SESSION_MINUTES = 20  # the longest visit
SPAN_HOURS = 8  # the day the clicks span
START = "2024-03-01 08:00:00"


def generate_clicks(
    spark, users: int, events: int, seed: int = 7, max_delay_minutes: int = 10, ordered: bool = True
):
    """The clickstream as a DataFrame ``(user_id, page, dwell_ms, event_time, arrival_time)``,
    in arrival order (in no particular order if not ``ordered``); the same arguments give the same
    rows on any machine.

    ``max_delay_minutes`` bounds the extra delay of the 1% of clicks that arrive late; it changes
    only ``arrival_time`` (the streaming demo raises it so that some clicks miss their windows)."""
    from pyspark.sql import functions as F

    prime = 2_147_483_647

    def uniform(*cols):
        """A deterministic uniform number in (0, 1) from the hash of the given columns and seed."""
        return (F.pmod(F.xxhash64(F.lit(seed), *cols), F.lit(prime - 1)) + 1) / float(prime)

    salt = [F.lit(i) for i in range(10)]
    sessions = max(1, events // SESSION_CLICKS)
    span_ms = SPAN_HOURS * 3600 * 1000
    start_ms = F.unix_millis(F.to_timestamp(F.lit(START)))

    clicks = (
        spark.range(0, events, 1, numPartitions=4)
        .withColumn("session", F.floor(uniform(F.col("id"), salt[0]) * sessions))
        # busy users have more visits: a skewed draw per visit
        .withColumn("user", F.floor(F.pow(uniform(F.col("session"), salt[1]), 1.5) * users))
        .withColumn("session_start_ms", F.floor(uniform(F.col("session"), salt[2]) * span_ms))
        .withColumn("offset_ms", F.floor(uniform(F.col("id"), salt[3]) * SESSION_MINUTES * 60_000))
        .withColumn("page_index", F.floor(F.pow(uniform(F.col("id"), salt[4]), 1.6) * len(PAGES)))
        # dwell time: log-normal around 8 s (Box-Muller from two uniforms)
        .withColumn(
            "dwell_ms",
            F.round(
                F.exp(
                    F.log(F.lit(8000.0))
                    + 0.9
                    * F.sqrt(-2.0 * F.log(uniform(F.col("id"), salt[5])))
                    * F.cos(2.0 * 3.141592653589793 * uniform(F.col("id"), salt[6]))
                )
            ).cast("long"),
        )
        # arrival delay: ~2 s on average, and 1% of clicks up to max_delay_minutes (10) late
        .withColumn(
            "delay_ms",
            F.floor(-F.log(uniform(F.col("id"), salt[7])) * 2000)
            + F.when(
                uniform(F.col("id"), salt[8]) < 0.01,
                F.floor(uniform(F.col("id"), salt[9]) * (max_delay_minutes * 60_000)),
            ).otherwise(0),
        )
        .withColumn("event_ms", start_ms + F.col("session_start_ms") + F.col("offset_ms"))
    )
    page_names = F.array(*[F.lit(p) for p in PAGES])
    rows = clicks.select(
        F.format_string("user%05d", F.col("user").cast("int")).alias("user_id"),
        F.element_at(page_names, (F.col("page_index") + 1).cast("int")).alias("page"),
        F.col("dwell_ms"),
        F.timestamp_millis(F.col("event_ms")).alias("event_time"),
        F.timestamp_millis(F.col("event_ms") + F.col("delay_ms")).alias("arrival_time"),
    )
    return rows.orderBy("arrival_time", "user_id", "event_time", "page", "dwell_ms") if ordered else rows


def sliding_activity(clicks, size: str = "10 minutes"):
    """Per-user sliding windows of ``size`` with clicks, total and maximum dwell, and distinct pages."""
    from pyspark.sql import functions as F

    from windowagg import SlidingWindows, window

    return clicks.groupBy("user_id", window("event_time", SlidingWindows.of(size))).agg(
        F.count(F.lit(1)).alias("clicks"),
        F.sum("dwell_ms").alias("total_dwell_ms"),
        F.max("dwell_ms").alias("max_dwell_ms"),
        F.size(F.collect_set("page")).alias("distinct_pages"),
    ).select(*_activity_columns())


def _activity_columns():
    """The columns of a window's activity, as sliding_activity gives them and the Kafka demo writes them."""
    from pyspark.sql import functions as F

    return [
        "user_id",
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "clicks",
        "total_dwell_ms",
        "max_dwell_ms",
        "distinct_pages",
    ]


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the demo; see ``dev/demo --help``."""
    parser = argparse.ArgumentParser(prog="dev/demo", description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2_000, help="number of users (default 2000)")
    parser.add_argument("--events", type=int, default=300_000, help="number of clicks (default 300000)")
    parser.add_argument(
        "--out",
        default=None,
        help="output folder (default out/demo, out/demo-stream with --streaming, out/demo-kafka with --kafka)",
    )
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated data (default 7)")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    streaming = parser.add_argument_group("streaming mode (--grace and --max-delay-minutes also in Kafka mode)")
    streaming.add_argument(
        "--streaming", action="store_true", help="compute the windows in Structured Streaming, from files landing one by one"
    )
    streaming.add_argument("--files", type=int, default=24, help="input files, one per micro-batch (default 24)")
    streaming.add_argument(
        "--grace", default="1 minute", help="how far the watermark trails the latest click (default '1 minute')"
    )
    streaming.add_argument(
        "--max-delay-minutes",
        type=int,
        default=30,
        help="longest delay of the 1%% of late-arriving clicks (default 30; the batch mode uses 10)",
    )
    streaming.add_argument(
        "--land-every", type=float, default=0.5, help="seconds between two files landing (default 0.5)"
    )
    kafka = parser.add_argument_group(
        "Kafka mode (dev/demo --kafka starts a broker and sets --bootstrap-servers and --kafka-jars)"
    )
    kafka.add_argument("--kafka", action="store_true", help="stream the clicks through Kafka topics, in and out")
    kafka.add_argument("--bootstrap-servers", help="HOST:PORT of the Kafka broker (new topics demo-* are written)")
    kafka.add_argument("--kafka-jars", help="folder of the jars of Spark's Kafka connector")
    kafka.add_argument(
        "--micro-batches", type=int, default=24, help="micro-batches the clicks are read in (default 24)"
    )
    kafka.add_argument(
        "--session-gap", default="5 minutes", help="inactivity gap that closes a session (default '5 minutes')"
    )
    args = parser.parse_args(argv)
    if args.users < 1 or args.events < 1:
        parser.error("--users and --events must be positive")
    if args.kafka and args.streaming:
        parser.error("--kafka and --streaming are two modes: give one")
    if args.kafka:
        if not args.bootstrap_servers:
            parser.error("--kafka needs --bootstrap-servers HOST:PORT of a Kafka broker (dev/demo --kafka starts one)")
        if not args.kafka_jars or not glob.glob(os.path.join(args.kafka_jars, "*.jar")):
            parser.error(
                "--kafka needs --kafka-jars, a folder with the jars of Spark's Kafka connector "
                f"(got {args.kafka_jars!r}; dev/demo --kafka fetches them)"
            )
        if args.micro_batches < 1 or args.max_delay_minutes < 0:
            parser.error("--micro-batches must be positive, --max-delay-minutes not negative")
        return _run_kafka(args)
    if args.streaming:
        if args.files < 1 or args.max_delay_minutes < 0 or args.land_every < 0:
            parser.error("--files must be positive, --max-delay-minutes and --land-every not negative")
        return _run_streaming(args)
    return _run_batch(args)


def _run_batch(args: argparse.Namespace) -> int:
    import windowagg
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    began = time.time()
    spark = windowagg.session(
        app_name="windowagg-demo",
        master=args.master,
        config={
            "spark.sql.shuffle.partitions": "8",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
        },
    )
    spark.sparkContext.setLogLevel("WARN")
    try:
        clicks = generate_clicks(spark, args.users, args.events, args.seed)
        windows = sliding_activity(clicks)
        out = os.path.abspath(args.out or os.path.join("out", "demo"))
        path = os.path.join(out, "windows")
        windows.write.mode("overwrite").parquet(path)

        written = spark.read.parquet(path)
        count = written.count()
        print(f"{args.events} clicks of {args.users} users -> {count} sliding windows of 10 minutes per user")
        print("Their columns:")
        for columns, meaning in WINDOW_COLUMNS:
            print(f"  {columns:30s} {meaning}")
        print("The busiest window of each of the 10 busiest users:")
        busiest_first = [F.desc("clicks"), F.desc("total_dwell_ms"), F.asc("window_start")]
        rank = F.row_number().over(Window.partitionBy("user_id").orderBy(*busiest_first))
        (
            written.withColumn("rank", rank)
            .where("rank = 1")
            .drop("rank")
            .orderBy(*busiest_first, "user_id")
            .show(10, truncate=False)
        )
        print(f"Wrote the windows as Parquet to {path}")
        chart = _chart_busiest_users(clicks, written, os.path.join(out, "busiest-users.png"))
        if chart:
            print(f"Drew the five busiest users' clicks per window over the day: {chart}")
        print(f"Done in {time.time() - began:.1f} s")
    finally:
        spark.stop()
    return 0


def _pyplot():
    """matplotlib's pyplot drawing to files, or None (with a line saying so) when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        print("(no chart: matplotlib is not installed; dev/demo installs it, or pip install matplotlib)")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _chart_busiest_users(clicks, windows, png: str) -> Optional[str]:
    """A step chart of the clicks in each window (by its end) of the five users with the most clicks."""
    from pyspark.sql import functions as F

    plt = _pyplot()
    if plt is None:
        return None
    busiest = [
        r["user_id"] for r in clicks.groupBy("user_id").count().orderBy(F.desc("count"), "user_id").limit(5).collect()
    ]
    rows = (
        windows.where(F.col("user_id").isin(busiest))
        .select("user_id", "window_end", "clicks")
        .orderBy("user_id", "window_end")
        .collect()
    )
    figure, axes = plt.subplots(len(busiest), 1, figsize=(10, 1.4 + 1.3 * len(busiest)), sharex=True, squeeze=False)
    for row, user in zip(axes[:, 0], busiest):
        ends, counts = [], []
        for r in rows:
            if r["user_id"] != user:
                continue
            if ends and (r["window_end"] - ends[-1]).total_seconds() > 600:
                ends.append(ends[-1])  # idle for longer than a window: break the line
                counts.append(float("nan"))
            ends.append(r["window_end"])
            counts.append(r["clicks"])
        row.step(ends, counts, where="post", linewidth=1)
        row.set_ylabel(user, rotation=0, ha="right", va="center", fontsize="small")
        row.set_ylim(bottom=0)
    axes[0, 0].set_title("Clicks in each 10-minute sliding window, by its end: the five busiest users")
    axes[-1, 0].set_xlabel("window end (UTC)")
    figure.autofmt_xdate()
    figure.tight_layout()
    figure.savefig(png, dpi=110)
    plt.close(figure)
    return png


# ----------------------------------------------------------------------------------- streaming


def streaming_window(spark, time_col: str, size: str, grace: str, emit: str, late_rows: str):
    """``windowagg.window(time_col, SlidingWindows.of(size).grace(grace), emit=..., late_rows=...)``;
    with a windowagg package that predates those arguments, the same column from the JVM's
    ``windowagg.functions.window``."""
    import inspect

    import windowagg
    from windowagg import SlidingWindows

    if hasattr(SlidingWindows, "grace") and {"emit", "late_rows"} <= set(inspect.signature(windowagg.window).parameters):
        return windowagg.window(time_col, SlidingWindows.of(size).grace(grace), emit=emit, late_rows=late_rows)
    from pyspark.sql import functions as F
    from pyspark.sql.classic.column import Column, _to_java_column

    jvm = spark.sparkContext._jvm
    definition = jvm.windowagg.SlidingWindows.of(size).grace(grace)
    options = {"emit": emit, "lateRows": late_rows}
    return Column(jvm.windowagg.functions.window(_to_java_column(F.col(time_col)), definition, options))


CLICK_SCHEMA = "user_id STRING, page STRING, dwell_ms BIGINT, event_time TIMESTAMP, arrival_time TIMESTAMP"


def stage_click_files(clicks, folder: str, files: int, max_delay_minutes: int) -> List[str]:
    """Writes ``clicks`` cut into ``files`` consecutive slices of arrival time, one Parquet file per
    slice (rows in arrival order), and returns the files in arrival order (empty slices have none)."""
    from pyspark.sql import functions as F

    # arrivals lie between START and the last visit's end plus the longest delay (and a minute
    # for the few-seconds jitter); the last slice takes any straggler
    low = F.unix_millis(F.to_timestamp(F.lit(START)))
    span_ms = (SPAN_HOURS * 60 + SESSION_MINUTES + max_delay_minutes + 1) * 60_000
    width = span_ms // files + 1
    slice_of = F.least(F.floor((F.unix_millis("arrival_time") - low) / F.lit(width)), F.lit(files - 1))
    (
        clicks.withColumn("slice", slice_of.cast("int"))
        .repartition(min(files, 4), "slice")  # each slice in one task: one file per slice
        .sortWithinPartitions("arrival_time", "user_id", "event_time")
        .write.partitionBy("slice")
        .parquet(folder)
    )
    staged = []
    for i in range(files):
        staged.extend(sorted(glob.glob(os.path.join(folder, f"slice={i}", "*.parquet"))))
    return staged


def land_files(staged: List[str], landing: str, every: float, stop: threading.Event) -> None:
    """Moves the staged files into ``landing`` one by one (an atomic rename each, so the stream
    never sees half a file), ``every`` seconds apart; modification times increase file by file,
    the order in which the file source picks them up."""
    first = time.time() - len(staged)
    for i, path in enumerate(staged):
        if stop.is_set():
            return
        os.utime(path, (first + i, first + i))
        os.replace(path, os.path.join(landing, f"clicks-{i:04d}.parquet"))
        if every > 0 and i + 1 < len(staged):
            stop.wait(every)


def _run_streaming(args: argparse.Namespace) -> int:
    import windowagg
    from pyspark.sql import functions as F

    began = time.time()
    out = os.path.abspath(args.out or os.path.join("out", "demo-stream"))
    paths = {name: os.path.join(out, name) for name in ("landing", "staging", "checkpoint", "windows", "late")}
    for path in paths.values():  # a fresh run: the checkpoint would otherwise resume the last one
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(paths["landing"])

    spark = windowagg.session(
        app_name="windowagg-demo-streaming",
        master=args.master,
        config={
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            # streaming windows keep their state with transformWithState, on RocksDB
            "spark.sql.streaming.stateStore.providerClass": (
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
            ),
            "spark.sql.streaming.numRecentProgressUpdates": "1000",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    stop = threading.Event()
    writer = None
    query = None
    try:
        # the files are cut and sorted by arrival time below: no need for a global sort here
        clicks = generate_clicks(
            spark, args.users, args.events, args.seed, max_delay_minutes=args.max_delay_minutes, ordered=False
        )
        staged = stage_click_files(clicks, paths["staging"], args.files, args.max_delay_minutes)
        print(
            f"{args.events} clicks of {args.users} users, cut by arrival time into {len(staged)} files "
            f"({time.time() - began:.1f} s); they land in {paths['landing']} one by one"
        )

        stream = (
            spark.readStream.schema(CLICK_SCHEMA)
            .option("maxFilesPerTrigger", 1)  # one file per micro-batch
            .parquet(paths["landing"])
        )
        # each window once, when final; late clicks come out as rows with late_reason and late_row
        window = streaming_window(spark, "event_time", "10 minutes", args.grace, emit="final", late_rows="emit")
        windows = stream.groupBy("user_id", window).agg(
            F.count(F.lit(1)).alias("clicks"),
            F.sum("dwell_ms").alias("total_dwell_ms"),
            F.max("dwell_ms").alias("max_dwell_ms"),
            F.size(F.collect_set("page")).alias("distinct_pages"),
        )

        def write_batch(batch, batch_id: int) -> None:
            # One folder per micro-batch, overwritten if the batch is replayed after a failure:
            # with the checkpoint, each window lands exactly once.
            batch.persist()
            try:
                (
                    batch.where(F.col("late_reason").isNull())
                    .select(
                        "user_id",
                        F.col("window.start").alias("window_start"),
                        F.col("window.end").alias("window_end"),
                        "clicks",
                        "total_dwell_ms",
                        "max_dwell_ms",
                        "distinct_pages",
                    )
                    .write.mode("overwrite")
                    .parquet(os.path.join(paths["windows"], f"batch={batch_id}"))
                )
                (
                    batch.where(F.col("late_reason").isNotNull())
                    .select("late_reason", "late_row.*")
                    .write.mode("overwrite")
                    .parquet(os.path.join(paths["late"], f"batch={batch_id}"))
                )
            finally:
                batch.unpersist()

        query = (
            windows.writeStream.queryName("sliding_clicks")
            .outputMode("append")  # final emission: each window once, when the watermark passes its end
            .option("checkpointLocation", paths["checkpoint"])
            .foreachBatch(write_batch)
            .start()
        )
        writer = threading.Thread(
            target=land_files, args=(staged, paths["landing"], args.land_every, stop), name="land-files", daemon=True
        )
        streaming_began = time.time()
        writer.start()
        writer.join()
        query.processAllAvailable()
        # the watermark moved by the last file takes effect in one more micro-batch without data
        last_data = max((p["batchId"] for p in query.recentProgress if p["numInputRows"] > 0), default=-1)
        deadline = time.time() + 15
        while time.time() < deadline and not any(p["batchId"] > last_data for p in query.recentProgress):
            time.sleep(0.2)
        progress = query.recentProgress
        query.stop()
        query = None

        print(f"Streamed the {len(staged)} files in {time.time() - streaming_began:.1f} s")
        _print_streaming_summary(spark, paths, progress, began, os.path.join(out, "micro-batches.png"))
    finally:
        stop.set()
        if query is not None:
            query.stop()
        spark.stop()
        shutil.rmtree(paths["staging"], ignore_errors=True)
    return 0


def _print_streaming_summary(spark, paths: Dict[str, str], progress, began: float, png: str) -> None:
    from pyspark.sql import functions as F

    data_batches = [p for p in progress if p["numInputRows"] > 0]
    observed = {"late_rows": 0, "null_time_rows": 0, "unwindowed_rows": 0}
    for p in progress:
        metrics = (p.get("observedMetrics") or {}).get("windowagg")
        if metrics is not None:
            for name in observed:
                observed[name] += int(metrics[name] or 0)
    watermark = progress[-1]["eventTime"].get("watermark") if progress else None
    state_rows = [sum(op["numRowsTotal"] for op in p["stateOperators"]) for p in progress]

    windows = spark.read.parquet(paths["windows"])
    late = spark.read.parquet(paths["late"])
    window_count = windows.count()
    by_reason = {r["late_reason"]: r["count"] for r in late.groupBy("late_reason").count().collect()}
    only_watermark = len(progress) - len(data_batches)
    print(
        f"{sum(p['numInputRows'] for p in progress)} clicks read in {len(data_batches)} micro-batches"
        + (f" (and {only_watermark} without data, moving the watermark)" if only_watermark else "")
        + f"; last watermark {watermark}"
    )
    print(f"Final windows written: {window_count} -> {paths['windows']}; their columns:")
    for columns, meaning in WINDOW_COLUMNS:
        print(f"  {columns:30s} {meaning}")
    reasons = ", ".join(f"{count} {reason!r}" for reason, count in sorted(by_reason.items())) or "none"
    print(f"Clicks routed aside, by late_reason: {reasons} -> {paths['late']}")
    for reason, meaning in LATE_REASONS.items():
        if reason in by_reason:
            print(f"  {reason!r:12s} {meaning}")
    print(
        "Observed metrics 'windowagg' over the run (counted even when not written aside): "
        + ", ".join(f"{name} {count}" for name, count in observed.items())
    )
    if state_rows:
        print(f"State rows after each micro-batch: max {max(state_rows)}, at the end {state_rows[-1]}")
    print("Windows ending after the last watermark stay open: later clicks would make them final.")
    if by_reason:
        print("The first clicks routed aside, with how long after their event time they arrived:")
        (
            late.select(
                "late_reason",
                "user_id",
                "event_time",
                "arrival_time",
                F.round((F.unix_millis("arrival_time") - F.unix_millis("event_time")) / 60000.0, 1).alias(
                    "delay_minutes"
                ),
            )
            .orderBy("arrival_time", "user_id")
            .show(5, truncate=False)
        )
    chart = _chart_micro_batches(progress, windows, late, png)
    if chart:
        print(f"Drew the clicks read, windows emitted and late clicks of each micro-batch: {chart}")
    print(f"Done in {time.time() - began:.1f} s")


def _chart_micro_batches(progress, windows, late, png: str) -> Optional[str]:
    """Per micro-batch: the clicks it read, the final windows it emitted and the late clicks it routed aside."""
    plt = _pyplot()
    if plt is None:
        return None
    read = {p["batchId"]: p["numInputRows"] for p in progress}
    emitted = {r["batch"]: r["count"] for r in windows.groupBy("batch").count().collect()}
    routed = {r["batch"]: r["count"] for r in late.groupBy("batch").count().collect()}
    batches = sorted(read)
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True)
    top.bar([b - 0.2 for b in batches], [read[b] for b in batches], width=0.4, label="clicks read")
    top.bar([b + 0.2 for b in batches], [emitted.get(b, 0) for b in batches], width=0.4, label="final windows emitted")
    top.set_ylabel("rows")
    top.legend(loc="upper left", fontsize="small")
    top.set_title("Each micro-batch: clicks in, final windows out, late clicks aside")
    top.set_xticks(batches)
    bottom.bar(batches, [routed.get(b, 0) for b in batches], width=0.6, color="tab:red",
               label="clicks routed aside (late, or in no window)")
    bottom.set_ylabel("clicks aside")
    bottom.set_xlabel("micro-batch (the last ones only move the watermark)")
    bottom.legend(loc="upper left", fontsize="small")
    figure.tight_layout()
    figure.savefig(png, dpi=110)
    plt.close(figure)
    return png


# ----------------------------------------------------------------------------------- Kafka

KAFKA_TOPICS = {
    "clicks": "demo-clicks",
    "sliding": ("demo-sliding-windows", "demo-sliding-late"),
    "session": ("demo-sessions", "demo-session-late"),
}
# microseconds in the JSON values: a sliding window can start 1 µs after a click
JSON_TIME = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"}
WINDOW_JSON_SCHEMA = (
    "user_id STRING, window_start TIMESTAMP, window_end TIMESTAMP, clicks BIGINT, total_dwell_ms BIGINT, "
    "max_dwell_ms BIGINT, distinct_pages INT"
)


def click_windows(stream, definition):
    """Per-user windows of ``definition`` over a stream of clicks, late clicks emitted as rows."""
    from pyspark.sql import functions as F

    from windowagg import window

    return stream.groupBy("user_id", window("event_time", definition, emit="final", late_rows="emit")).agg(
        F.count(F.lit(1)).alias("clicks"),
        F.sum("dwell_ms").alias("total_dwell_ms"),
        F.max("dwell_ms").alias("max_dwell_ms"),
        F.size(F.collect_set("page")).alias("distinct_pages"),
    )


def to_kafka_records(windows, windows_topic: str, late_topic: str):
    """Kafka records keyed by user with JSON values: each final window to ``windows_topic``, each
    late click (its reason and columns) to ``late_topic``. Spark's sink takes a record's topic from
    its ``topic`` column, so one query writes both."""
    from pyspark.sql import functions as F

    is_late = F.col("late_reason").isNotNull()
    window_value = F.to_json(F.struct(*_activity_columns()), JSON_TIME)
    late_value = F.to_json(F.struct("late_reason", "late_row.*"), JSON_TIME)
    return windows.select(
        F.when(is_late, F.lit(late_topic)).otherwise(F.lit(windows_topic)).alias("topic"),
        F.col("user_id").alias("key"),
        F.when(is_late, late_value).otherwise(window_value).alias("value"),
    )


def _run_kafka(args: argparse.Namespace) -> int:
    import math

    import windowagg
    from pyspark.sql import functions as F

    from windowagg import SessionWindows, SlidingWindows

    began = time.time()
    out = os.path.abspath(args.out or os.path.join("out", "demo-kafka"))
    shutil.rmtree(out, ignore_errors=True)  # a fresh run: old checkpoints would resume the last one
    jars = sorted(glob.glob(os.path.join(args.kafka_jars, "*.jar")))
    spark = windowagg.session(
        app_name="windowagg-demo-kafka",
        master=args.master,
        config={
            "spark.jars": ",".join(jars),
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.streaming.numRecentProgressUpdates": "1000",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafka = {"kafka.bootstrap.servers": args.bootstrap_servers}
    queries = {}
    try:
        clicks = generate_clicks(spark, args.users, args.events, args.seed, max_delay_minutes=args.max_delay_minutes)
        # one task writes them all, so the topic keeps the arrival order
        (
            clicks.select(F.col("user_id").alias("key"), F.to_json(F.struct("*"), JSON_TIME).alias("value"))
            .coalesce(1)
            .write.format("kafka")
            .options(**kafka)
            .option("topic", KAFKA_TOPICS["clicks"])
            .save()
        )
        print(
            f"{args.events} clicks of {args.users} users produced in arrival order to {KAFKA_TOPICS['clicks']} "
            f"at {args.bootstrap_servers} ({time.time() - began:.1f} s)"
        )

        stream = (
            spark.readStream.format("kafka")
            .options(**kafka)
            .option("subscribe", KAFKA_TOPICS["clicks"])
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", math.ceil(args.events / args.micro_batches))
            .load()
            .select(F.from_json(F.col("value").cast("string"), CLICK_SCHEMA, JSON_TIME).alias("click"))
            .select("click.*")
        )
        definitions = {
            "sliding": SlidingWindows.of("10 minutes").grace(args.grace),
            "session": SessionWindows.withInactivityGap(args.session_gap).grace(args.grace),
        }
        streaming_began = time.time()
        for name, definition in definitions.items():
            windows_topic, late_topic = KAFKA_TOPICS[name]
            queries[name] = (
                to_kafka_records(click_windows(stream, definition), windows_topic, late_topic)
                .writeStream.format("kafka")
                .options(**kafka)
                .option("checkpointLocation", os.path.join(out, f"checkpoint-{name}"))
                .outputMode("append")  # final windows: each once, when the watermark passes its end
                .trigger(availableNow=True)  # everything in the topic now, then one micro-batch for the last watermark
                .queryName(f"{name}_clicks")
                .start()
            )
        for query in queries.values():
            query.awaitTermination()
            if query.exception() is not None:
                raise RuntimeError(f"the query {query.name} failed: {query.exception()}")
        streamed_in = time.time() - streaming_began
        print(f"Streamed them through the sliding and the session query at once in {streamed_in:.1f} s")
        _print_kafka_summary(spark, kafka, definitions, queries)
        print(f"Done in {time.time() - began:.1f} s")
    finally:
        for query in queries.values():
            query.stop()
        spark.stop()
    return 0


def _read_topic(spark, kafka: Dict[str, str], topic: str, schema: str):
    """Every record of ``topic`` now, its JSON value parsed with ``schema``."""
    import re

    from pyspark.sql import functions as F

    return (
        spark.read.format("kafka")
        .options(**kafka)
        # as a pattern: a topic no record was written to (no late clicks) was never created, and
        # reads as empty instead of failing
        .option("subscribePattern", re.escape(topic))
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), schema, JSON_TIME).alias("v"))
        .select("v.*")
    )


def _print_kafka_summary(spark, kafka: Dict[str, str], definitions, queries) -> None:
    from pyspark.sql import functions as F

    for name, query in queries.items():
        progress = query.recentProgress
        data_batches = sum(1 for p in progress if p["numInputRows"] > 0)
        metrics = [(p.get("observedMetrics") or {}).get("windowagg") for p in progress]
        observed = sum(int(m["late_rows"] or 0) for m in metrics if m is not None)
        windows_topic, late_topic = KAFKA_TOPICS[name]
        windows = _read_topic(spark, kafka, windows_topic, WINDOW_JSON_SCHEMA).count()
        late = _read_topic(spark, kafka, late_topic, f"late_reason STRING, {CLICK_SCHEMA}").count()
        print(
            f"{definitions[name].spec}: {sum(p['numInputRows'] for p in progress)} clicks in {data_batches} "
            f"micro-batches -> {windows} final windows in {windows_topic}, {late} late clicks in {late_topic} "
            f"(observed metrics: late_rows {observed})"
        )
    sessions = _read_topic(spark, kafka, KAFKA_TOPICS["session"][0], WINDOW_JSON_SCHEMA)
    print(f"The longest sessions, read back from {KAFKA_TOPICS['session'][0]}:")
    (
        sessions.withColumn(
            "minutes", F.round((F.unix_millis("window_end") - F.unix_millis("window_start")) / 60000.0, 1)
        )
        .orderBy(F.desc("minutes"), "user_id")
        .select("user_id", "window_start", "window_end", "minutes", "clicks", "distinct_pages")
        .show(5, truncate=False)
    )
    late = _read_topic(spark, kafka, KAFKA_TOPICS["sliding"][1], f"late_reason STRING, {CLICK_SCHEMA}")
    print(f"A few late clicks, read back from {KAFKA_TOPICS['sliding'][1]}:")
    (
        late.select(
            "user_id",
            "event_time",
            "arrival_time",
            F.round((F.unix_millis("arrival_time") - F.unix_millis("event_time")) / 60000.0, 1).alias("delay_minutes"),
        )
        .orderBy("arrival_time", "user_id")
        .show(5, truncate=False)
    )


if __name__ == "__main__":
    raise SystemExit(main())
