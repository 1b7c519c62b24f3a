"""A streaming windowagg job, run as a child process by test_streaming_exactly_once.py.

    python tests/streaming_job.py INPUT OUTPUT CHECKPOINTS LOCAL_DIR

Reads the JSON files of INPUT one per micro-batch (availableNow) with a watermark of 20 s and runs
one query per window kind (state_fixtures.KINDS: every kind the streaming engine has), sessions
firing early (their emission policy keeps state of its own) and tumbling windows with a pandas UDF
(each window's rows are kept in the state), late rows emitted. Half of the kinds
write to Parquet file sinks (OUTPUT/<kind>), the others, and every kind that emits values before
final ones, through foreachBatch, which overwrites one folder per micro-batch
(OUTPUT/<kind>/batch_id=<id>): idempotent when a micro-batch runs again after a restart. Each query
checkpoints in CHECKPOINTS/<kind>. The test kills the job (SIGKILL) and starts it again from the same
checkpoints; it prints FINISHED when every query has ended normally.
"""

import os
import sys

import state_fixtures
import streaming_support as ss

WATERMARK = "20 seconds"
# kind: (the definition, from a windowagg module; emission)
JOB_KINDS = {
    **state_fixtures.KINDS,
    "session-early": state_fixtures.FIXTURE_KINDS["session-early"],
    "tumbling-pandas": (lambda w: w.TimeWindows.of("1 minute"), "final"),
}
KINDS = list(JOB_KINDS)
FILE_SINK_KINDS = KINDS[0::2]


def emits_before_final(kind):
    """Whether the kind's query emits values before a window is final (updates, early firing)."""
    return JOB_KINDS[kind][1] != "final"


def uses_file_sink(kind):
    return kind in FILE_SINK_KINDS and not emits_before_final(kind)


def query(stream, kind, streaming=True):
    """The job's query for `kind` over a streaming (or, for the expected result, batch) input."""
    import windowagg

    definition, emit = JOB_KINDS[kind]
    if streaming:
        grouping = windowagg.window("ts", definition(windowagg), emit=emit, late_rows="emit")
    else:
        grouping = windowagg.window("ts", definition(windowagg))
    aggregates = ss.aggregates()
    if kind == "tumbling-pandas":
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        # a nested function: pickled by value, so that Spark's Python workers need not import this module
        @pandas_udf("long")
        def total(v: pd.Series) -> int:
            return int(v.sum())

        aggregates = [total("v").alias(name) if name == "sv" else a for name, a in zip(ss.AGGREGATE_NAMES, aggregates)]
    return stream.groupBy("k", grouping).agg(*aggregates)


def main(argv):
    input_dir, output_dir, checkpoints, local_dir = argv
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
    stream = (
        spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(input_dir).withWatermark("ts", WATERMARK)
    )
    queries = []
    for kind in KINDS:
        out = os.path.join(output_dir, kind)
        writer = query(stream, kind).writeStream.option("checkpointLocation", os.path.join(checkpoints, kind))
        if uses_file_sink(kind):
            writer = writer.format("parquet").option("path", out).outputMode("append")
        else:

            def write_batch(batch, batch_id, out=out):
                batch.write.mode("overwrite").parquet(os.path.join(out, f"batch_id={batch_id}"))

            writer = writer.foreachBatch(write_batch).outputMode("update" if emits_before_final(kind) else "append")
        queries.append(writer.trigger(availableNow=True).start())
    for q in queries:
        q.awaitTermination()
    print(f"FINISHED after {len(queries[0].recentProgress)} micro-batches", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
