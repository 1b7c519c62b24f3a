# Reproducer for docs/benchmarks-aligned.md: windowagg hopping cost follows slices x (size/advance), not rows.
# Run: .venv/bin/python bench/repro_hopping_sparse_slices.py (after dev/package; a few minutes).
# Same 200k rows, 10 keys; "dense": 10 rows per 10-s slice per key (5.6 h per key);
# "sparse": 1 row per 10-s slice per key (55.6 h per key). Spec 'hopping 1 hour every 10 seconds'.
import time


def main():
    import windowagg
    from pyspark.sql import functions as F
    spark = windowagg.session(app_name="repro", master="local[2]", config={
        "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.coalescePartitions.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    def data(step_ms):
        return (spark.range(200_000).select((F.col("id") % 10).cast("int").alias("k"),
                F.timestamp_millis(F.lit(1_699_920_000_000) + (F.col("id") / 10).cast("long") * step_ms + 1).alias("ts"),
                F.rand(1).alias("v")).repartition(4).cache())
    for name, step in [("dense (10 rows per slice)", 1000), ("sparse (1 row per slice)", 10_000)]:
        df = data(step); df.count()
        for spec in ["tumbling 10 seconds", "hopping 1 hour every 10 seconds", "hopping 1 hour every 1 minute"]:
            q = df.groupBy("k", F.expr(f"windows(ts, '{spec}')").alias("window")).agg(F.sum("v"), F.count(F.lit(1)))
            q.write.format("noop").mode("overwrite").save()  # warm-up
            t = time.perf_counter(); q.write.format("noop").mode("overwrite").save(); w = time.perf_counter() - t
            print(f"{name:28s} {spec:34s} windows={q.count():>9,}  {w:6.2f} s", flush=True)
        df.unpersist()
    spark.stop()


if __name__ == "__main__":
    main()
