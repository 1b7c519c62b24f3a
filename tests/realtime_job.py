"""windowagg's streaming windows in Spark's real-time mode (trigger(realTime=...), Spark 4.3), run as a
child process by test_kafka.py (its session needs the Kafka connector's jars).

    python tests/realtime_job.py BOOTSTRAP_SERVERS WORK_DIR OUT.json JARS

JARS: Spark's Kafka connector's jars and the examples jar (its user-defined kind), comma separated.

Produces the first half of `events()` to the topic "rt-clicks", runs one real-time query per
definition of `definitions(spark)` (all at once) until each has read every record and two more of its
batches have ended (final windows come out when the batch after the one that moved the watermark
ends), and stops them; produces the second half (its late clicks among them) and restarts each query
from its checkpoint. Then runs the same queries in micro-batches (availableNow, the first half in
the first micro-batch) into other topics, reads every topic back and writes to OUT.json, per
definition, both runs' windows as their last update per window, the late rows, and counts.
"""

import json
import random
import sys
import time

import streaming_support as ss
from kafka_job import produce

INPUT_TOPIC = "rt-clicks"
GRACE = "30 seconds"
MINUTE = 60 * ss.SECOND
USERS = 6
LATE_CLICKS = 5
FLUSH_USER = "flush"
EVENT_SCHEMA = "id BIGINT, user STRING, ts TIMESTAMP, v BIGINT"
TIME_FORMAT = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"}
# real-time batches of one second (Spark's least by default is five): quicker final windows and restarts
BATCH = "1 second"


def definitions(spark):
    """name -> (window definition, options): every kind of window with every emission real-time mode
    runs, sessions' retractions and processing time among them (``PythonWindows`` does not run in
    this mode: docs/streaming.md)."""
    from windowagg import (CalendarWindows, CumulativeWindows, CustomWindows, SessionWindows, SlidingWindows,
                           TableWindows, TimeWindows, UnlimitedWindows)

    # windows of several sizes, overlapping, over the clicks' hour (the flush click is in none)
    periods = spark.createDataFrame(
        [(ss.BASE_MICROS + start * MINUTE, ss.BASE_MICROS + end * MINUTE) for start, end in [(0, 25), (10, 50), (45, 65)]],
        "start BIGINT, end BIGINT",
    ).selectExpr("timestamp_micros(start) AS start", "timestamp_micros(end) AS end")
    updates = {"emit": "updates"}
    return {
        "sliding": (SlidingWindows.of("5 minutes").grace(GRACE), updates),
        "tumbling": (TimeWindows.of("10 minutes").grace(GRACE), updates),
        "hopping": (TimeWindows.of("10 minutes").advanceBy("4 minutes").grace(GRACE), updates),
        "cumulative": (CumulativeWindows.of("5 minutes", "20 minutes").grace(GRACE), updates),
        "calendar": (CalendarWindows.days(1).inZone("America/New_York").grace(GRACE), updates),
        "unlimited": (UnlimitedWindows.of().grace(GRACE), updates),
        "table": (TableWindows.of(periods).grace(GRACE), updates),
        "custom": (CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=2).grace(GRACE), updates),
        "session": (SessionWindows.withInactivityGap("2 minutes").grace(GRACE), updates),
        "final": (TimeWindows.of("10 minutes").grace(GRACE), {"emit": "final", "late_rows": "emit"}),
        "processing": (TimeWindows.of("2 seconds"), {"emit": "updates", "time": "processing"}),
    }


def events(seed=27):
    """Seeded clicks in two halves, as dicts (id, user, ts in µs after ss.BASE, v): the first half's
    clicks in the first 30 minutes, the second's in the next 30, each up to 20 s out of order (less
    than the grace); the second half also holds LATE_CLICKS clicks of the first ten minutes (late
    once the first half has moved the watermark) and last a click of the user "flush" a day ahead,
    whose watermark makes every window final."""
    rnd = random.Random(seed)
    halves = []
    for start in (0, 30 * MINUTE):
        clicks = [(f"user{rnd.randrange(USERS)}", start + rnd.randrange(0, 30 * MINUTE, 1000)) for _ in range(90)]
        clicks.sort(key=lambda c: c[1] + rnd.randrange(0, 20 * ss.SECOND))
        halves.append(clicks)
    # users of their own, so that a late click is late in every kind of window, whatever the batches
    halves[1] += [(f"late{i}", rnd.randrange(0, 10 * MINUTE, 1000)) for i in range(LATE_CLICKS)]
    halves[1].append((FLUSH_USER, 1440 * MINUTE))
    first = [{"id": i, "user": u, "ts": t, "v": rnd.randint(1, 100)} for i, (u, t) in enumerate(halves[0])]
    second = [{"id": len(first) + i, "user": u, "ts": t, "v": rnd.randint(1, 100)} for i, (u, t) in enumerate(halves[1])]
    return first, second


def start(spark, bootstrap, name, kind, topic, checkpoint, trigger, max_offsets=None):
    """The query of ``kind`` (a definition and its options) from INPUT_TOPIC to ``topic``: each output
    row as JSON, in update mode (real-time mode takes no other)."""
    from pyspark.sql import functions as F

    from windowagg import window

    definition, options = kind
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", INPUT_TOPIC)
        .option("startingOffsets", "earliest")
    )
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", max_offsets)
    clicks = reader.load().select(
        F.from_json(F.col("value").cast("string"), EVENT_SCHEMA, TIME_FORMAT).alias("click")).select("click.*")
    time_column = F.current_timestamp() if options.get("time") == "processing" else "ts"
    windows = clicks.groupBy("user", window(time_column, definition, **options)).agg(
        F.count(F.lit(1)).alias("clicks"), F.sum("v").alias("total"))
    return (
        windows.select(F.to_json(F.struct("*"), TIME_FORMAT).alias("value"))
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", checkpoint)
        .outputMode("update")
        .trigger(**trigger)
        .queryName(f"rt_{name}_{topic.replace('-', '_')}")
        .start()
    )


def until_read(queries, rows, timeout=180):
    """Waits until each real-time query has read ``rows`` records in this run and two more of its
    batches have ended, then stops them all."""
    deadline = time.monotonic() + timeout
    try:
        for name, query in queries.items():
            while True:
                if query.exception() is not None:
                    raise RuntimeError(f"the real-time {name} query failed: {query.exception()}")
                progress = query.recentProgress
                read, reached = 0, None
                for p in progress:
                    read += p["numInputRows"]
                    if reached is None and read >= rows:
                        reached = p["batchId"]
                if reached is not None and progress[-1]["batchId"] >= reached + 2:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the real-time {name} query read {read} of {rows} records in {timeout} s")
                time.sleep(0.25)
    finally:
        for query in queries.values():
            query.stop()


def last_updates(spark, bootstrap, topic):
    """The records of ``topic`` in order, as the windows they leave (a window's last update; a
    retraction removes a session), the late rows, and the number of window records."""
    from pyspark.sql import functions as F

    records = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select("offset", F.col("value").cast("string").alias("json"))
        .orderBy("offset")
        .collect()
    )
    windows, late, updates = {}, [], 0
    for record in records:
        row = json.loads(record.json)
        if row.get("late_reason"):
            late.append(json.dumps(row["late_row"], sort_keys=True))
            continue
        updates += 1
        key = json.dumps([row["user"], row["window"]["start"], row["window"]["end"]])
        if row.get("retraction"):
            windows.pop(key, None)
        else:
            windows[key] = [row["clicks"], row["total"]]
    return {"windows": windows, "late": sorted(late), "updates": updates}


def main(bootstrap, work_dir, path, jars):
    import windowagg

    spark = windowagg.session(
        app_name="windowagg-real-time-test",
        # real-time mode runs every stage of a query at once: per query a task for the topic's one
        # partition and one per shuffle partition, for the eleven queries at once
        master="local[36]",
        config={
            "spark.jars": jars,
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.streaming.realTimeMode.minBatchDuration": "1000",
            # the quick compiler's code cache (48 MB) filled on a busy machine with these 21 queries'
            # generated code, and the JVM went on interpreting everything
            "spark.driver.extraJavaOptions": "-XX:ReservedCodeCacheSize=160m",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    first, second = events()
    real_time = {"realTime": BATCH}
    try:
        # once: a table's windows are a temporary view, which a restarted query must find again
        kinds = definitions(spark)
        names = list(kinds)
        produce(spark, bootstrap, first, INPUT_TOPIC)
        until_read({n: start(spark, bootstrap, n, kinds[n], f"rt-{n}", f"{work_dir}/rt-{n}", real_time) for n in names},
                   len(first))
        produce(spark, bootstrap, second, INPUT_TOPIC)
        until_read({n: start(spark, bootstrap, n, kinds[n], f"rt-{n}", f"{work_dir}/rt-{n}", real_time) for n in names},
                   len(second))
        micro = {n: start(spark, bootstrap, n, kinds[n], f"mb-{n}", f"{work_dir}/mb-{n}", {"availableNow": True},
                          len(first))
                 for n in names if n != "processing"}
        for name, query in micro.items():
            if not query.awaitTermination(300) or query.exception() is not None:
                raise RuntimeError(f"the micro-batch {name} query failed: {query.exception()}")
        result = {
            "rows": len(first) + len(second),
            "late_ids": [r["id"] for r in second[-LATE_CLICKS - 1 : -1]],
            "real_time": {n: last_updates(spark, bootstrap, f"rt-{n}") for n in names},
            "micro_batch": {n: last_updates(spark, bootstrap, f"mb-{n}") for n in micro},
        }
    finally:
        spark.stop()
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main(*sys.argv[1:]))
    except Exception as failure:  # its message last, where the test's report of the output ends
        import traceback

        traceback.print_exc()
        print(f"realtime_job.py failed: {str(failure)[:3000]}", file=sys.stderr)
        raise SystemExit(1)
