"""Opt-in scale runs (WINDOWAGG_SCALE_TESTS=1): one key with 20 million rows in the default driver,
in batch and in streaming; 1,000 micro-batches over a moving key space with flat state and heap.

The session of the test run is started without a driver memory setting, so the driver has Spark's
default 1 GiB heap; the operator must stream the key through Spark's spilling sort instead of holding it.
WINDOWAGG_SCALE_REPORT=path.jsonl keeps the state and heap samples of the streaming runs.
"""

import os

import pytest
from pyspark.sql import functions as F

from windowagg import CountWindows, SessionWindows, SlidingWindows, metrics, window

pytestmark = pytest.mark.skipif(
    os.environ.get("WINDOWAGG_SCALE_TESTS") != "1", reason="scale run: set WINDOWAGG_SCALE_TESTS=1"
)


def test_one_key_with_20_million_rows_in_the_default_driver(spark):
    rows, size = 20_000_000, 1000
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.memory", "1g") == "1g"
    # times 0..N-1 ms: N left windows, and right windows only for the last `size` times
    # (every earlier right window starts where a left window starts), so N + size windows.
    events = spark.range(rows).select(F.lit("k").alias("key"), F.col("id").alias("t"))
    out = events.groupBy("key", window("t", SlidingWindows.of(size))).agg(F.count("*").alias("n"))
    stats = out.agg(F.count("*").alias("windows"), F.max("n").alias("widest"), F.min("n").alias("narrowest"))
    result = stats.collect()[0]
    assert result["windows"] == rows + size
    assert result["widest"] == size + 1
    assert result["narrowest"] == 1
    assert metrics(stats)["inputRows"] == rows


def run_rate_stream(spark, query_of, batches, rows_per_batch, every=100):
    """Runs `query_of(rate stream)` over `batches` micro-batches of Spark's rate-micro-batch source
    (row i has value i) into the no-op sink; samples the state and the driver's heap every `every`
    micro-batches. Returns [(batch, state rows, state bytes, heap bytes)]."""
    import time

    stream = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows_per_batch)
        .option("numPartitions", 2)
        .load()
    )
    query = query_of(stream).writeStream.format("noop").outputMode("append").start()
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    samples, next_sample = [], every
    try:
        while next_sample <= batches:
            assert query.exception() is None, query.exception()
            progress = query.lastProgress
            if progress is None or progress["batchId"] < next_sample:
                time.sleep(0.05)
                continue
            spark.sparkContext._jvm.java.lang.System.gc()
            heap = runtime.totalMemory() - runtime.freeMemory()
            state = progress["stateOperators"][0]
            samples.append((progress["batchId"], state["numRowsTotal"], state["memoryUsedBytes"], heap))
            print(f"batch {progress['batchId']}: state rows {state['numRowsTotal']}, "
                  f"state bytes {state['memoryUsedBytes']}, heap {heap >> 20} MiB", flush=True)
            next_sample += every
    finally:
        query.stop()
    return samples


KEY_SPACE_KINDS = {
    "sliding": lambda: SlidingWindows.of("10 seconds"),
    "session": lambda: SessionWindows.withInactivityGap("5 seconds"),
    "count": lambda: CountWindows.of(50).slide(10),
}


@pytest.mark.parametrize("kind", sorted(KEY_SPACE_KINDS))
def test_1000_micro_batches_over_a_moving_key_space_keep_state_and_heap_flat(spark, kind):
    # one row per millisecond of event time, 1,000 per micro-batch; 100 keys at a time, and every
    # minute of event time (60 micro-batches) a new set of 100 keys: the old ones' windows close
    def windowed(stream):
        events = stream.select(
            (F.floor(F.col("value") / 60_000) * 100 + F.col("value") % 100).alias("key"),
            F.timestamp_millis("value").alias("ts"),
        ).withWatermark("ts", "5 seconds")
        return events.groupBy("key", window("ts", KEY_SPACE_KINDS[kind]())).agg(F.count("*").alias("n"))

    samples = run_rate_stream(spark, windowed, batches=1000, rows_per_batch=1000)
    report("moving key space", kind, samples)
    warm = [s for s in samples if s[0] >= 200]
    rows = [s[1] for s in warm]
    if kind == "count":
        # a count window is cut at rows, not time: each key keeps its last rows (50 settled, the ones
        # ahead of the watermark, a few counters) for the windows its next rows will close, so state
        # is bounded per key ever seen rather than flat
        for batch, state_rows, _, _ in warm:
            keys_seen = 100 * (batch // 60 + 1)
            assert state_rows <= 110 * keys_seen, f"{kind}: more than 110 state rows per key at batch {batch}"
    else:
        # flat: the later half of the run holds no more than the earlier (keys overlap at each switch)
        half = len(rows) // 2
        assert max(rows[half:]) <= 1.25 * max(rows[:half]), f"{kind}: state rows grow: {rows}"
    heaps = [s[3] for s in warm]
    assert heaps[-1] <= 2 * heaps[0] + (128 << 20), f"{kind}: heap grows: {heaps}"


def test_streaming_one_key_with_20_million_rows_in_the_default_driver(spark):
    assert spark.sparkContext.getConf().get("spark.driver.memory", "1g") == "1g"

    # 1,000,000 rows per micro-batch, ten per millisecond, all of one key
    def windowed(stream):
        events = stream.select(F.lit("k").alias("key"), F.timestamp_millis(F.floor(F.col("value") / 10)).alias("ts"))
        return events.withWatermark("ts", "1 second").groupBy("key", window("ts", SlidingWindows.of("1 second"))).agg(
            F.count("*").alias("n")
        )

    samples = run_rate_stream(spark, windowed, batches=20, rows_per_batch=1_000_000, every=5)
    report("one key, 20M rows", "sliding", samples)
    assert samples[-1][0] >= 20


def report(run, kind, samples):
    """Appends the samples to WINDOWAGG_SCALE_REPORT (JSON lines), for docs/reliability.md."""
    import json

    path = os.environ.get("WINDOWAGG_SCALE_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"run": run, "kind": kind, "samples": samples}) + "\n")
