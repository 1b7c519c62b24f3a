"""Opt-in scale runs (WINDOWAGG_SCALE_TESTS=1): one key with 20 million rows in the default driver,
in batch and in streaming; 1,000 micro-batches over a moving key space with flat state and heap.

The session of the test run is started without a driver memory setting, so the driver has Spark's
default 1 GiB heap; the operator must stream the key through Spark's spilling sort instead of holding it.
WINDOWAGG_SCALE_REPORT=path.jsonl keeps the state and heap samples of the streaming runs.
"""

import datetime
import os

import pytest
from pyspark.sql import functions as F

from windowagg import CountWindows, SessionWindows, SlidingWindows, metrics, window

pytestmark = pytest.mark.skipif(
    os.environ.get("WINDOWAGG_SCALE_TESTS") != "1", reason="scale run: set WINDOWAGG_SCALE_TESTS=1"
)
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


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


def run_rate_stream(spark, query_of, batches, rows_per_batch, every=100, foreach_batch=None, reports=None):
    """Runs `query_of(rate stream)` over `batches` micro-batches of Spark's rate-micro-batch source
    (row i has value i) into the no-op sink, or `foreach_batch`; samples the state and the driver's heap
    every `every` micro-batches. Returns [(batch, state rows, state bytes, heap bytes)], and fills the list
    `reports` with the query's progress reports."""
    import time

    stream = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows_per_batch)
        .option("numPartitions", 2)
        .load()
    )
    writer = query_of(stream).writeStream.outputMode("append")
    query = (writer.foreachBatch(foreach_batch) if foreach_batch else writer.format("noop")).start()
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
        if reports is not None:
            reports.extend(query.recentProgress)
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


def emitted_figures(windows):
    """A micro-batch's windows (start and end in µs, n rows) as figures the test can check whole: per kind of
    window, how many, how many distinct, the first and last millisecond they are at; and how many are not
    what the input makes them. Ten rows at every millisecond from 0 on make the left window of millisecond m,
    [m - 1 s, m], hold 10 (min(m, 1000) + 1) rows, and its right window, [m + 1 µs, m + 1 µs + 1 s], once
    final, the ten rows of each of the 1000 milliseconds after m."""
    w = windows.select(F.unix_micros("window.start").alias("s"), F.unix_micros("window.end").alias("e"), "n")
    left = F.col("s") % 1000 == 0  # a left window starts at a whole millisecond, a right one 1 µs after one
    m = F.when(left, F.expr("e div 1000")).otherwise(F.expr("(s - 1) div 1000"))
    expected_n = F.when(left, 10 * (F.least(m, F.lit(1000)) + 1)).otherwise(10_000)
    figures = []
    for name, kind in (("left", left), ("right", ~left)):
        at = F.when(kind, m)
        figures += [F.count(at).alias(f"{name}_count"), F.count_distinct(at).alias(f"{name}_distinct"),
                    F.min(at).alias(f"{name}_first"), F.max(at).alias(f"{name}_last")]
    wrong = (F.col("e") - F.col("s") != 1_000_000) | (F.col("n") != expected_n)
    return w.agg(*figures, F.count_if(wrong).alias("wrong")).first().asDict()


def test_streaming_one_key_with_20_million_rows_in_the_default_driver(spark):
    assert spark.sparkContext.getConf().get("spark.driver.memory", "1g") == "1g"

    # 1,000,000 rows per micro-batch, ten per millisecond, all of one key
    def windowed(stream):
        events = stream.select(F.lit("k").alias("key"), F.timestamp_millis(F.floor(F.col("value") / 10)).alias("ts"))
        return events.withWatermark("ts", "1 second").groupBy("key", window("ts", SlidingWindows.of("1 second"))).agg(
            F.count("*").alias("n")
        )

    figures, reports = {}, []
    samples = run_rate_stream(spark, windowed, batches=20, rows_per_batch=1_000_000, every=5, reports=reports,
                              foreach_batch=lambda windows, batch: figures.update({batch: emitted_figures(windows)}))
    report("one key, 20M rows", "sliding", samples)
    assert samples[-1][0] >= 20
    # the micro-batches that completed (the last one may have been stopped), in order: each emitted what
    # its watermark made final, every window once, each holding the rows the input puts in it
    done = [p for p in reports if p["batchId"] in figures]
    assert len(done) >= 20 and [p["batchId"] for p in done] == list(range(len(done)))
    for name, end_offset in (("left", 0), ("right", 1_000_001)):
        emitted_through = -1  # the last millisecond of this kind's windows emitted so far
        for p in done:
            f = figures[p["batchId"]]
            assert f["wrong"] == 0, (p["batchId"], f)
            if f[f"{name}_count"]:
                assert f[f"{name}_first"] == emitted_through + 1, (name, p["batchId"], f)
                assert f[f"{name}_count"] == f[f"{name}_distinct"] == f[f"{name}_last"] - emitted_through, (name, f)
                emitted_through = f[f"{name}_last"]
            # final: the windows whose end is behind the micro-batch's watermark
            watermark = datetime.datetime.fromisoformat(p["eventTime"]["watermark"]) - EPOCH
            final_through = (watermark // datetime.timedelta(microseconds=1) - end_offset - 1) // 1000
            assert emitted_through == max(final_through, -1), (name, p["batchId"], p["eventTime"], f)
    assert emitted_through > 17 * 100_000  # ms: the windows of 17 of the 20 micro-batches' 100 s of event time at least


def report(run, kind, samples):
    """Appends the samples to WINDOWAGG_SCALE_REPORT (JSON lines), for docs/reliability.md."""
    import json

    path = os.environ.get("WINDOWAGG_SCALE_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"run": run, "kind": kind, "samples": samples}) + "\n")
