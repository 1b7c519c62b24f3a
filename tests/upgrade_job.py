"""The first run of this release on checkpoints of the previous one, as a child process of
test_state_upgrade.py.

    python tests/upgrade_job.py INPUT OUTPUT CHECKPOINTS LOCAL_DIR KIND...

For each KIND, restarts the state fixture's query (state_fixtures.aggregated) from CHECKPOINTS/<kind>,
a copy of the previous release's fixture, with late rows emitted, reading the JSON files of INPUT
one per micro-batch (availableNow). Each query writes through foreachBatch, which overwrites one
folder per micro-batch (OUTPUT/<kind>/batch_id=<id>): idempotent when a micro-batch runs again after
a restart. The test kills the job (SIGKILL) during the first micro-batch after the upgrade and starts
it again; it prints FINISHED when every query has ended normally.
"""

import os
import sys

import state_fixtures


def main(argv):
    input_dir, output_dir, checkpoints, local_dir, *kinds = argv
    import windowagg
    from pyspark.sql import functions as F

    spark = windowagg.session(
        app_name="windowagg-upgrade",
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
    stream = spark.readStream.schema(state_fixtures.SCHEMA).option("maxFilesPerTrigger", 1).json(input_dir)
    queries = []
    for kind in kinds:
        definition, emit = state_fixtures.KINDS[kind]
        windows = (
            stream.withWatermark("ts", state_fixtures.WATERMARK)
            .groupBy("k", windowagg.window("ts", definition(windowagg), emit=emit, late_rows="emit"))
            .agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"))
            .select(
                "k",
                F.unix_micros("window.start").alias("start"),
                F.unix_micros("window.end").alias("end"),
                "total",
                "n",
                "late_reason",
                F.col("late_row.ts").alias("late_ts"),
            )
        )

        def write_batch(batch, batch_id, out=os.path.join(output_dir, kind)):
            batch.write.mode("overwrite").parquet(os.path.join(out, f"batch_id={batch_id}"))

        queries.append(
            windows.writeStream.option("checkpointLocation", os.path.join(checkpoints, kind))
            .foreachBatch(write_batch)
            .outputMode("update" if emit == "updates" else "append")
            .trigger(availableNow=True)
            .start()
        )
    for q in queries:
        q.awaitTermination()
    print("FINISHED", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
