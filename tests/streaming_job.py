"""A streaming windowagg job, run as a child process by test_streaming_exactly_once.py.

    python tests/streaming_job.py INPUT OUTPUT CHECKPOINT LOCAL_DIR

Reads the JSON files of INPUT one per micro-batch (availableNow), computes sliding windows of 30 s
with a grace of 20 s (no withWatermark) and late rows emitted, and appends them to a Parquet file
sink at OUTPUT with its checkpoint at CHECKPOINT; beside it, a second query computes sessions (gap
8 s, grace 2 hours: no row is late for them) into OUTPUT-sessions with CHECKPOINT-sessions, and a
third Storm's count windows (the last 5 rows every 2 rows, ties broken by id, lag 2 hours) into
OUTPUT-counts with CHECKPOINT-counts. The test kills it (SIGKILL) and starts it again from the same
checkpoints; it prints FINISHED when all queries end normally.
"""

import sys

import streaming_support as ss

SIZE = "30 seconds"
GRACE = "20 seconds"
SESSION_GAP = "8 seconds"


def windows(stream):
    """The job's query over a streaming (or, for the expected result, batch) input."""
    from windowagg import SlidingWindows, window

    return stream.groupBy("k", window("ts", SlidingWindows.of(SIZE).grace(GRACE), late_rows="emit")).agg(
        *ss.aggregates()
    )


def sessions(stream):
    """The job's second query: KIP-94 sessions over the same input."""
    from windowagg import SessionWindows, window

    return stream.groupBy("k", window("ts", SessionWindows.withInactivityGap(SESSION_GAP).grace("2 hours"))).agg(
        *ss.aggregates()
    )


def counts(stream):
    """The job's third query: Storm's count windows, whose state holds settled and waiting rows."""
    from windowagg import CountWindows, window

    definition = CountWindows.of(5).slide(2).tieBreak("id").lag("2 hours")
    return stream.groupBy("k", window("ts", definition)).agg(*ss.aggregates())


def main(argv):
    input_dir, output_dir, checkpoint_dir, local_dir = argv
    import windowagg

    spark = windowagg.session(
        app_name="windowagg-exactly-once",
        master="local[2]",
        config={
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.local.dir": local_dir,
            # a short-lived JVM: JIT compiling with C1 only starts it faster
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(input_dir)
    queries = [
        query.writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
        for query, out, checkpoint in [
            (windows(stream), output_dir, checkpoint_dir),
            (sessions(stream), output_dir + "-sessions", checkpoint_dir + "-sessions"),
            (counts(stream), output_dir + "-counts", checkpoint_dir + "-counts"),
        ]
    ]
    for query in queries:
        query.awaitTermination()
    print(f"FINISHED after {len(queries[0].recentProgress)} micro-batches", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
