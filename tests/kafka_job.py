"""windowagg's streaming windows between Spark's Kafka source and sink, run as a child process by
test_kafka.py (its session needs the Kafka connector's jars, which the tests' shared session lacks).

    python tests/kafka_job.py BOOTSTRAP_SERVERS WORK_DIR OUT.json CONNECTOR_JARS

Produces `events()` in their arrival order to the topic "clicks" (Spark's Kafka sink, in batch), then
runs one streaming query per window definition of `definitions()` reading "clicks" with Spark's Kafka
source, ROWS_PER_BATCH rows per micro-batch, both at once, each writing its final windows to "NAME-windows" and
its late rows to "NAME-late" (JSON values keyed by user). Reads every output topic back in batch and
writes its rows and the queries' micro-batch counts to OUT.json; the test compares them with the
batch result over the on-time events. Then the Nexmark benchmark's generator writes its events to the
topic "nexmark", and q5's windowagg query reads them back as a stream (`nexmark_through_kafka`).
"""

import json
import os
import random
import sys

import streaming_support as ss

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "nexmark"))

import generator  # noqa: E402 (bench/nexmark: the Nexmark benchmark's generator and queries)
import queries as nexmark_queries  # noqa: E402

INPUT_TOPIC = "clicks"
ROWS_PER_BATCH = 45
LATE_DELAY_MINUTES = 45
GRACE_SECONDS = 30
SLIDING_SECONDS = 300
SESSION_GAP_SECONDS = 120
FLUSH_USER = "flush"
EVENT_SCHEMA = "id BIGINT, user STRING, ts TIMESTAMP, v BIGINT"
WINDOW_SCHEMA = "user STRING, start TIMESTAMP, end TIMESTAMP, clicks BIGINT, total BIGINT, ids ARRAY<BIGINT>"
# microseconds in and out: sliding windows start 1 µs after a row
TIME_FORMAT = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"}
MINUTE = 60 * ss.SECOND


def definitions():
    """name -> the window definition of one streaming query, each with the same grace."""
    from windowagg import SessionWindows, SlidingWindows

    grace = f"{GRACE_SECONDS} seconds"
    return {
        "sliding": SlidingWindows.of(f"{SLIDING_SECONDS} seconds").grace(grace),
        "session": SessionWindows.withInactivityGap(f"{SESSION_GAP_SECONDS} seconds").grace(grace),
    }


def events(seed=12):
    """Seeded clicks in their arrival order, as dicts (id, user, ts in µs after ss.BASE, v), and the
    ids of the late ones. Eight users click in visits over 90 minutes; on-time clicks arrive up to
    20 s out of order (less than the grace), and 12 late clicks arrive LATE_DELAY_MINUTES after their time,
    each more than a session gap away from the user's other clicks (so that it bridges no session).
    The last click, of the user "flush", is a day ahead: its watermark makes every window final."""
    rnd = random.Random(seed)
    gap = SESSION_GAP_SECONDS * ss.SECOND
    clicks = []  # (user, time)
    for u in range(8):
        for _visit in range(5):
            t = rnd.randrange(0, 90 * MINUTE, 1000)
            for _ in range(rnd.randint(2, 8)):
                clicks.append((f"user{u}", t))
                t += rnd.randrange(5 * ss.SECOND, 50 * ss.SECOND, 1000)
    late = []
    while len(late) < 12:
        user, t = f"user{rnd.randrange(8)}", rnd.randrange(0, 60 * MINUTE, 1000)
        if all(abs(t - other) > gap + ss.SECOND for who, other in clicks + late if who == user):
            late.append((user, t))
    arrivals = [(t + rnd.randrange(0, 20 * ss.SECOND, 1000), user, t) for user, t in clicks]
    arrivals += [(t + LATE_DELAY_MINUTES * MINUTE, user, t) for user, t in late]
    arrivals.sort()
    rows = [{"id": i, "user": user, "ts": t, "v": rnd.randint(1, 100)} for i, (_, user, t) in enumerate(arrivals)]
    rows.append({"id": len(rows), "user": FLUSH_USER, "ts": 1440 * MINUTE, "v": 0})
    late_clicks = set(late)
    late_ids = {row["id"] for row in rows if (row["user"], row["ts"]) in late_clicks}
    return rows, late_ids


def watermarks(rows):
    """Per row in arrival order, the watermark of the micro-batch that reads it (None before the
    first): the largest time of the micro-batches before minus the grace, as Spark computes it."""
    marks, largest = [], None
    for start in range(0, len(rows), ROWS_PER_BATCH):
        batch = rows[start : start + ROWS_PER_BATCH]
        mark = None if largest is None else largest - GRACE_SECONDS * ss.SECOND
        marks += [mark] * len(batch)
        largest = max([r["ts"] for r in batch] + ([] if largest is None else [largest]))
    return marks


def window_aggregates():
    from pyspark.sql import functions as F

    return [
        F.count(F.lit(1)).alias("clicks"),
        F.sum("v").alias("total"),
        F.array_sort(F.collect_list("id")).alias("ids"),
    ]


def window_rows(df):
    """Windows as sorted JSON texts [user, start µs, end µs, clicks, total, ids] (start and end from
    the TIMESTAMP columns start and end)."""
    from pyspark.sql import functions as F

    columns = ["user", F.unix_micros("start"), F.unix_micros("end"), "clicks", "total", "ids"]
    return sorted(json.dumps(list(r)) for r in df.select(*columns).collect())


def batch_windows(spark, rows, definition):
    """windowagg in batch over the given rows: the expected content of a windows topic."""
    from pyspark.sql import functions as F

    from windowagg import window

    df = spark.createDataFrame(
        [(r["id"], r["user"], ss.BASE_MICROS + r["ts"], r["v"]) for r in rows],
        "id bigint, user string, t bigint, v bigint",
    ).select("id", "user", F.timestamp_micros("t").alias("ts"), "v")
    windows = df.groupBy("user", window("ts", definition)).agg(*window_aggregates())
    return window_rows(windows.select("user", "window.start", "window.end", "clicks", "total", "ids"))


def produce(spark, bootstrap, rows, topic=INPUT_TOPIC):
    """Writes the rows to ``topic`` in this order (one task, so one producer keeps it), keyed by user."""
    records = [(r["user"], json.dumps({**r, "ts": ss.ts_text(r["ts"])})) for r in rows]
    (
        spark.createDataFrame(records, "key string, value string")
        .coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .save()
    )


def kafka_records(windows, windows_topic, late_topic):
    """The windowed output as Kafka records: final windows to ``windows_topic`` and late rows (their
    reason and input columns) to ``late_topic``, as JSON values keyed by user; the sink takes each
    record's topic from its ``topic`` column."""
    from pyspark.sql import functions as F

    is_late = F.col("late_reason").isNotNull()
    window_value = F.to_json(
        F.struct(
            "user", F.col("window.start").alias("start"), F.col("window.end").alias("end"), "clicks", "total", "ids"
        ),
        TIME_FORMAT,
    )
    late_value = F.to_json(F.struct("late_reason", "late_row.*"), TIME_FORMAT)
    return windows.select(
        F.when(is_late, F.lit(late_topic)).otherwise(F.lit(windows_topic)).alias("topic"),
        F.col("user").alias("key"),
        F.when(is_late, late_value).otherwise(window_value).alias("value"),
    )


def stream_through_kafka(spark, bootstrap, work_dir):
    """Runs one query per definition on all of INPUT_TOPIC (both at once); returns name -> the
    stopped query."""
    from pyspark.sql import functions as F

    from windowagg import window

    queries = {}
    for name, definition in definitions().items():
        clicks = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", INPUT_TOPIC)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", ROWS_PER_BATCH)
            .load()
            .select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA, TIME_FORMAT).alias("click"))
            .select("click.*")
        )
        windows = clicks.groupBy("user", window("ts", definition, late_rows="emit")).agg(*window_aggregates())
        queries[name] = (
            kafka_records(windows, f"{name}-windows", f"{name}-late")
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("checkpointLocation", f"{work_dir}/checkpoint-{name}")
            .outputMode("append")  # final windows, each once
            .trigger(availableNow=True)
            .queryName(f"kafka_{name}")
            .start()
        )
    try:
        for name, query in queries.items():
            if not query.awaitTermination(300):
                raise RuntimeError(f"the {name} query did not finish within 300 s")
            if query.exception() is not None:
                raise RuntimeError(f"the {name} query failed: {query.exception()}")
    finally:
        for query in queries.values():
            query.stop()
    return queries


def read_topic(spark, bootstrap, topic, schema):
    """Every record of ``topic`` (read in batch): the key and the JSON value parsed with ``schema``."""
    from pyspark.sql import functions as F

    records = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    return records.select(
        F.col("key").cast("string").alias("key"),
        F.from_json(F.col("value").cast("string"), schema, TIME_FORMAT).alias("value"),
    ).select("key", "value.*")


def read_back(spark, bootstrap):
    """name -> the windows and late rows its query wrote, and how many records' keys are not their user."""
    from pyspark.sql import functions as F

    out = {}
    for name in definitions():
        windows = read_topic(spark, bootstrap, f"{name}-windows", WINDOW_SCHEMA).cache()
        late = read_topic(spark, bootstrap, f"{name}-late", f"late_reason string, {EVENT_SCHEMA}").cache()
        since_base = F.unix_micros("ts") - F.lit(ss.BASE_MICROS)
        out[name] = {
            "windows": window_rows(windows),
            "late": sorted(
                json.dumps(r.asDict(), sort_keys=True)
                for r in late.select("late_reason", "id", "user", since_base.alias("ts"), "v").collect()
            ),
            "keys_not_their_user": sum(
                df.where(~F.col("key").eqNullSafe(F.col("user"))).count() for df in (windows, late)
            ),
        }
    return out


NEXMARK_TOPIC = "nexmark"
NEXMARK_PER_BATCH = 1_000


def nexmark_config():
    """A minute of Nexmark events, out of order by up to 2 s (some delayed), as the benchmark's generator makes them."""
    return generator.Config(3_000, seed=11, rate=50, max_disorder_ms=2_000, prob_delayed_event=0.2)


def nexmark_through_kafka(spark, bootstrap, work_dir):
    """The benchmark's generator writes nexmark_config()'s events to NEXMARK_TOPIC; returns the
    records' values in offset order, and q5's bids per auction and hopping window (windowagg) of
    the topic read as a stream, NEXMARK_PER_BATCH records per micro-batch, with a watermark as far
    behind as the events are out of order (so none is late)."""
    from pyspark.sql import functions as F

    config = nexmark_config()
    generator.write_kafka(spark, config, generator.generate(config), bootstrap, NEXMARK_TOPIC)

    def source(reader):
        return (reader.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", NEXMARK_TOPIC).option("startingOffsets", "earliest"))

    records = source(spark.read).option("endingOffsets", "latest").load()
    values = [r.value for r in records.orderBy("offset").select(F.col("value").cast("string").alias("value")).collect()]
    stream = source(spark.readStream).option("maxOffsetsPerTrigger", NEXMARK_PER_BATCH).load()
    bids = nexmark_queries.bids_from_kafka(stream).withWatermark("ts", f"{generator.disorder_bound_ms(config)} milliseconds")
    query = (
        nexmark_queries.q5_counts_windowagg(bids).writeStream.format("memory").queryName("nexmark_q5_counts")
        .option("checkpointLocation", f"{work_dir}/checkpoint-nexmark").outputMode("append")
        .trigger(availableNow=True).start()
    )
    if not query.awaitTermination(300) or query.exception() is not None:
        raise RuntimeError(f"the Nexmark query failed or did not finish within 300 s: {query.exception()}")
    windows = spark.table("nexmark_q5_counts").orderBy("auction", "window_start").collect()
    return {
        "values": values,
        "q5_counts": [list(r) for r in windows],
        "data_micro_batches": sum(1 for p in query.recentProgress if p["numInputRows"] > 0),
    }


def main(bootstrap, work_dir, path, jars):
    import windowagg

    spark = windowagg.session(
        app_name="windowagg-kafka-test",
        master="local[2]",
        config={
            "spark.jars": jars,
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            # no RocksDB snapshot upload every micro-batch: shorter micro-batches
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows, _late_ids = events()
        produce(spark, bootstrap, rows)
        queries = stream_through_kafka(spark, bootstrap, work_dir)
        result = {
            "topics": read_back(spark, bootstrap),
            "data_micro_batches": {
                name: sum(1 for p in q.recentProgress if p["numInputRows"] > 0) for name, q in queries.items()
            },
            "observed_late_rows": {name: ss.observed(q, "late_rows") for name, q in queries.items()},
            "nexmark": nexmark_through_kafka(spark, bootstrap, work_dir),
        }
    finally:
        spark.stop()
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
