"""windowagg's batch and streaming queries, run by test_cluster.py on a standalone cluster through
spark-submit (``--jars`` and ``spark.sql.extensions`` given there, not by windowagg.session()) and
on the test run's local session; both write Parquet, which the test compares row for row.

    spark-submit --master spark://... --jars windowagg.jar ... tests/cluster_job.py INPUT OUT

INPUT holds the JSON files of `write_input`, one micro-batch each. OUT receives one Parquet folder
per query (`BATCH_QUERIES`, `STREAMING_QUERIES`), the streaming queries' checkpoints, and
``run.json``: the application id, the executors that ran it, the Python and windowagg package
their Python workers import, and the streaming queries' run ids.
"""

import json
import os
import random
import sys
import time

SCHEMA = "id bigint, k string, ts timestamp, v bigint"
START = 1_704_067_200  # 2024-01-01T00:00:00Z, in seconds
WATERMARK_DELAY = "10 seconds"
BATCH_QUERIES = ("batch sliding", "batch session", "batch sql hopping")
STREAMING_QUERIES = ("streaming sliding", "streaming session")


def folder_of(name):
    """The output folder of a query under OUT."""
    return name.replace(" ", "-")


def write_input(folder, keys, files, seed=12):
    """`files` JSON files for `keys` keys, one minute of event time each: file i holds 4 rows per
    key in [60 i, 60 i + 24] s (a 35 s hole before the next minute, so no session spans two
    files), a row at 60 i + 24 s that moves the watermark to 60 i + 14 s for the next file, and
    from file 2 on a row two minutes old for every tenth key, late for both streaming queries (its
    sliding windows ended and its session closed before that watermark). The files'
    modification times increase in their order, the order the file source reads them in.
    Returns the number of late rows written."""
    rnd = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    first_mtime = int(time.time()) - 10_000
    row_id = late = 0
    for i in range(files):
        rows = [(k, 60 * i + rnd.randrange(25)) for k in range(keys) for _ in range(4)]
        rows.append((0, 60 * i + 24))
        if i >= 2:
            old = [(k, 60 * (i - 2) + rnd.randrange(25)) for k in range(0, keys, 10)]
            rows += old
            late += len(old)
        rnd.shuffle(rows)
        path = os.path.join(folder, f"part-{i:04d}.json")
        with open(path, "w", encoding="utf-8") as handle:
            for k, second in rows:
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START + second))
                handle.write(json.dumps({"id": row_id, "k": f"key{k:05d}", "ts": stamp, "v": rnd.randint(-5, 50)}) + "\n")
                row_id += 1
        os.utime(path, (first_mtime + i, first_mtime + i))
    return late


def definitions():
    import windowagg as w

    return {"sliding": w.SlidingWindows.of("30 seconds"), "session": w.SessionWindows.withInactivityGap("20 seconds")}


def aggregates():
    from pyspark.sql import functions as F

    return [F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"), F.max("v").alias("hi")]


def run_batch(spark, input_dir, out_dir):
    """The batch queries over every input row, each written as Parquet to OUT/<name>."""
    import windowagg as w

    rows = spark.read.schema(SCHEMA).json(input_dir)
    results = {
        f"batch {name}": rows.groupBy("k", w.window("ts", definition)).agg(*aggregates())
        for name, definition in definitions().items()
    }
    rows.createOrReplaceTempView("cluster_events")
    results["batch sql hopping"] = spark.sql(
        "SELECT * FROM window_agg(TABLE(cluster_events) PARTITION BY k ORDER BY (ts), "
        "'hopping 1 minute every 20 seconds', 'count(1) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi')"
    )
    for name, df in results.items():
        df.write.mode("overwrite").parquet(os.path.join(out_dir, folder_of(name)))


def run_streaming(spark, input_dir, out_dir, timeout=600):
    """The streaming queries, one after the other: the input files one per micro-batch
    (availableNow), a watermark of 10 s, final windows and late rows (late_rows="emit") appended to
    a Parquet file sink at OUT/<name>, checkpoints under OUT/checkpoints. Returns each query's run id,
    which names its state stores in the executors' logs."""
    import windowagg as w

    stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(input_dir)
    stream = stream.withWatermark("ts", WATERMARK_DELAY)
    run_ids = {}
    for name, definition in definitions().items():
        folder = folder_of(f"streaming {name}")
        windowed = stream.groupBy("k", w.window("ts", definition, late_rows="emit")).agg(*aggregates())
        query = (
            windowed.writeStream.format("parquet").outputMode("append")
            .option("path", os.path.join(out_dir, folder))
            .option("checkpointLocation", os.path.join(out_dir, "checkpoints", folder))
            .trigger(availableNow=True)
            .start()
        )
        try:
            if not query.awaitTermination(timeout):
                raise RuntimeError(f"the streaming {name} query did not finish within {timeout} s")
            if query.exception() is not None:
                raise RuntimeError(f"the streaming {name} query failed: {query.exception()}")
        finally:
            query.stop()
        run_ids[f"streaming {name}"] = str(query.runId)
    return run_ids


def executor_ids(spark):
    """The ids of the executors registered with the driver."""
    ids = spark.sparkContext._jsc.sc().getExecutorIds().mkString(",")
    return sorted(ids.split(",")) if ids else []


def executor_pythons(spark):
    """The Python executable and the windowagg package the executors' Python workers run, as
    distinct [executable, package file] pairs (a task per core)."""
    cores = spark.sparkContext.defaultParallelism

    def where(_):
        import windowagg

        yield sys.executable, windowagg.__file__

    return sorted(set(spark.sparkContext.parallelize(range(cores), cores).mapPartitions(where).collect()))


def main(input_dir, out_dir):
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("windowagg-cluster-test").getOrCreate()
    try:
        run = {"app": spark.sparkContext.applicationId, "executors at start": executor_ids(spark)}
        run["executor pythons"] = executor_pythons(spark)
        run_batch(spark, input_dir, out_dir)
        run["streaming run ids"] = run_streaming(spark, input_dir, out_dir)
        run["executors at end"] = executor_ids(spark)
        with open(os.path.join(out_dir, "run.json"), "w") as handle:
            json.dump(run, handle)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: spark-submit ... cluster_job.py INPUT_DIR OUT_DIR")
    raise SystemExit(main(*sys.argv[1:]))
