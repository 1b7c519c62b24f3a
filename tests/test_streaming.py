"""Streaming sliding windows: final output equals batch, late rows, update mode, bounded state, errors.

Every query reads JSON files (one per micro-batch, see streaming_support.py) with
``trigger(availableNow=True)``; after the last file Spark runs one more micro-batch without data
for the watermark the last file moved, which emits the windows that watermark made final.
"""

import collections
import random

import pyspark
import pytest
from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import streaming_support as ss
from windowagg import PythonWindows, SlidingWindows, window

SIZE = "30 seconds"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
QUERY_TIMEOUT = 180  # seconds, per query


@pytest.fixture(scope="module")
def streaming(spark):
    """The session, with few shuffle partitions (state stores) and RocksDB changelog checkpoints
    (no snapshot upload every micro-batch), which keep micro-batches short; restored afterwards."""
    settings = {
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    }
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    yield spark
    for key, value in previous.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def run_available_now(stream_df, checkpoint, sink="memory", name=None, mode="append", foreach_batch=None):
    """Runs the query on all available input and waits for it; returns the stopped query."""
    writer = stream_df.writeStream.outputMode(mode).option("checkpointLocation", str(checkpoint))
    if foreach_batch is not None:
        writer = writer.foreachBatch(foreach_batch)
    else:
        writer = writer.format(sink)
        if name is not None:
            writer = writer.queryName(name)
    query = writer.trigger(availableNow=True).start()
    try:
        finished = query.awaitTermination(QUERY_TIMEOUT)
        assert finished, f"the query did not finish within {QUERY_TIMEOUT} s"
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    return query


def not_flush(df):
    return df.where(~F.col("k").eqNullSafe("flush"))


def window_rows(df):
    """Keys, window bounds and aggregates, in a fixed column order."""
    return df.select("k", F.col("window.start").alias("start"), F.col("window.end").alias("end"), *ss.AGGREGATE_NAMES)


def batch_windows(spark, files):
    """The batch result on the rows of the given files (without the flush key)."""
    rows = not_flush(spark.read.schema(ss.SCHEMA).json(files))
    return window_rows(rows.groupBy("k", window("ts", SlidingWindows.of(SIZE))).agg(*ss.aggregates()))


# --- final output equals batch ---------------------------------------------------------------------


def random_events(seed, n=240):
    """Seeded events within 10 minutes: several keys and a null key, duplicate times, times exactly
    one size (and one size + 1 µs) apart, some microsecond times, some null values."""
    rnd = random.Random(seed)
    size = 30 * ss.SECOND
    pool = [rnd.randrange(0, 600) * ss.SECOND for _ in range(n // 3)]
    pool += [rnd.randrange(0, 600 * ss.SECOND) for _ in range(10)]
    pool += [p + size for p in pool[:10]] + [p + size + 1 for p in pool[10:15]] + [p - 1 for p in pool[15:20]]
    keys = ["k0", "k1", "k2", "k3", None]
    return [
        ss.event(i, rnd.choice(keys), rnd.choice(pool), None if rnd.random() < 0.05 else rnd.randint(-20, 100))
        for i in range(n)
    ]


def split_into_files(events, rnd):
    """The events in a random arrival order, cut into 3 to 6 files of random sizes."""
    shuffled = list(events)
    rnd.shuffle(shuffled)
    cuts = sorted(rnd.sample(range(1, len(shuffled)), rnd.randint(2, 5)))
    return [shuffled[a:b] for a, b in zip([0] + cuts, cuts + [len(shuffled)])]


@pytest.mark.parametrize("split, partitions", [(1, 2), (2, 1), (3, 3)])
def test_final_output_equals_batch(streaming, tmp_path, split, partitions):
    spark = streaming
    events = random_events(seed=2024)
    chunks = split_into_files(events, random.Random(split))
    # the flush row's watermark makes every real window final
    files = ss.write_files(str(tmp_path / "in"), chunks + [[ss.flush_event(10_000)]])
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))  # fixed in the checkpoint at start
    try:
        stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
        stream = stream.withWatermark("ts", "1 hour")  # the data spans 10 minutes: nothing is late
        windows = stream.groupBy("k", window("ts", SlidingWindows.of(SIZE))).agg(*ss.aggregates())
        name = f"final_equals_batch_{split}"
        query = run_available_now(windows, tmp_path / "checkpoint", name=name)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)
    try:
        got = ss.multiset(window_rows(not_flush(spark.table(name))).collect())
    finally:
        spark.catalog.dropTempView(name)
    expected = ss.multiset(batch_windows(spark, files[:-1]).collect())
    assert len(expected) > 300
    assert got == expected, ss.describe_difference(got, expected)
    assert ss.observed(query, "late_rows") == 0 and ss.observed(query, "null_time_rows") == 0
    data_batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert len(data_batches) == len(chunks) + 1  # one file per micro-batch
    # the windows the flush row's watermark made final came out of a last micro-batch without data
    assert query.recentProgress[-1]["numInputRows"] == 0


def test_aggregates_spark_rewrites_before_running_them_stream_and_read_back(streaming, tmp_path):
    """median, percentile and nvl are replaced by Spark's optimizer before it runs them (median by
    percentile, nvl by coalesce); the streaming processor, which evaluates them itself, and read_state
    replace them too."""
    import windowagg

    spark = streaming
    events = random_events(seed=7)
    files = ss.write_files(str(tmp_path / "in"), split_into_files(events, random.Random(7)) + [[ss.flush_event(10_000)]])

    def aggregated(df):
        return df.groupBy("k", window("ts", SlidingWindows.of(SIZE))).agg(
            F.median("v").alias("med"), F.percentile("v", 0.25).alias("p25"), F.sum(F.nvl("v", F.lit(0))).alias("s0"))

    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    emitted = []
    run_available_now(aggregated(stream.withWatermark("ts", "1 hour")), tmp_path / "checkpoint",
                      foreach_batch=lambda batch, _: emitted.extend(not_flush(batch).collect()))
    got = ss.multiset(emitted)
    expected = ss.multiset(aggregated(not_flush(spark.read.schema(ss.SCHEMA).json(files[:-1]))).collect())
    assert len(expected) > 300 and got == expected, ss.describe_difference(got, expected)
    # the flush key's window is still open: read back with the same aggregates
    (held,) = windowagg.read_state(spark, str(tmp_path / "checkpoint")).collect()
    assert held.k == "flush" and held.med == 0 and held.s0 == 0


# --- late rows -------------------------------------------------------------------------------------


def late_row_files(folder):
    """Size 10 s, grace 5 s. After file 1 the watermark is 200 - 5 = 195 s; in file 2, a@150 and
    null@120 are late (t + 10 < 195), a@190 is behind the watermark but fits the open window
    [190, 200], and b's time is malformed (null)."""
    s = ss.SECOND
    chunks = [
        [
            ss.event(1, "a", 100 * s, 1, "x1"),
            ss.event(2, "a", 105 * s, 2, "x2"),
            ss.event(3, None, 101 * s, 10, "x3"),
        ],
        [ss.event(4, "a", 200 * s, 3, "x4")],
        [
            ss.event(5, "a", 150 * s, 4, "late a"),
            ss.event(6, "a", 190 * s, 5, "x6"),
            ss.event(7, None, 196 * s, 6, "x7"),
            ss.event(8, None, 120 * s, 8, "late null key"),
            ss.event(9, "b", None, 7, "bad time"),
        ],
        [ss.flush_event(10)],
    ]
    return ss.write_files(folder, chunks)


LATE_DEFINITION = SlidingWindows.of("10 seconds").grace("5 seconds")


def at(seconds, micros=0):
    """A time of the late-row tests in microseconds after ss.BASE."""
    return seconds * ss.SECOND + micros


def micros(col):
    """A TIMESTAMP column as microseconds after ss.BASE (Python datetimes depend on the local zone)."""
    return F.unix_micros(col) - F.lit(ss.BASE_MICROS)


def late_test_rows(df):
    """The rows of a late-row test query with times in microseconds after ss.BASE."""
    columns = [
        "k",
        micros("window.start").alias("start"),
        micros("window.end").alias("end"),
        "s",
    ]
    if "late_reason" in df.columns:
        fields = [micros("late_row.ts") if c == "ts" else F.col(f"late_row.{c}") for c in ss.COLUMNS]
        late_row = F.struct(*[field.alias(c) for field, c in zip(fields, ss.COLUMNS)])
        columns += [
            "late_reason",
            F.when(F.col("late_row").isNotNull(), late_row).alias("late_row"),
            F.col("window").isNull().alias("window_is_null"),
        ]
    return df.select(*columns).collect()


# Per key: {(start, end): sum}. Not batch's result: a@190 does not create the final window
# [180, 190] (its end is behind the watermark 195), it only updates the open [190, 200].
EXPECTED_LATE_TEST_WINDOWS = {
    ("a", at(90), at(100)): 1,
    ("a", at(95), at(105)): 3,
    ("a", at(100, 1), at(110, 1)): 2,
    ("a", at(190), at(200)): 8,
    ("a", at(190, 1), at(200, 1)): 3,
    (None, at(91), at(101)): 10,
    (None, at(186), at(196)): 6,
}


def late_windows(stream, **options):
    return stream.groupBy("k", window("ts", LATE_DEFINITION, **options)).agg(F.sum("v").alias("s"))


def sums_by_window(rows):
    got = {}
    for row in rows:
        if row["k"] == "flush":
            continue
        key = (row["k"], row["start"], row["end"])
        assert key not in got, f"window {key} emitted twice"
        got[key] = row["s"]
    return got


def test_late_and_null_time_rows_are_emitted_with_their_columns(streaming, tmp_path):
    spark = streaming
    late_row_files(str(tmp_path / "in"))
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    windows = late_windows(stream, late_rows="emit")
    assert windows.columns == ["k", "window", "s", "late_reason", "late_row"]
    assert windows.schema["late_row"].dataType.fieldNames() == ss.COLUMNS
    query = run_available_now(windows, tmp_path / "checkpoint", name="late_rows_emit")
    try:
        rows = late_test_rows(spark.table("late_rows_emit"))
    finally:
        spark.catalog.dropTempView("late_rows_emit")

    late = sorted((r for r in rows if r["late_reason"] is not None), key=lambda r: r["late_row"]["id"])
    assert [(r["late_reason"], r["k"], r["late_row"].asDict()) for r in late] == [
        ("late", "a", {"id": 5, "k": "a", "ts": at(150), "v": 4, "note": "late a"}),
        ("late", None, {"id": 8, "k": None, "ts": at(120), "v": 8, "note": "late null key"}),
        ("null time", "b", {"id": 9, "k": "b", "ts": None, "v": 7, "note": "bad time"}),
    ]
    for r in late:  # no window and no aggregate on a late row
        assert r["s"] is None and r["start"] is None and r["end"] is None

    windows_only = [r for r in rows if r["late_reason"] is None]
    assert all(r["late_row"] is None for r in windows_only)
    assert sums_by_window(windows_only) == EXPECTED_LATE_TEST_WINDOWS
    assert ss.observed(query, "late_rows") == 2
    assert ss.observed(query, "null_time_rows") == 1


def test_late_rows_have_a_null_window(streaming, tmp_path):
    spark = streaming
    late_row_files(str(tmp_path / "in"))
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    run_available_now(late_windows(stream, late_rows="emit"), tmp_path / "checkpoint", name="late_null_window")
    try:
        late = [r for r in late_test_rows(spark.table("late_null_window")) if r["late_reason"] is not None]
    finally:
        spark.catalog.dropTempView("late_null_window")
    assert len(late) == 3
    assert [r["window_is_null"] for r in late] == [True, True, True]


def test_late_rows_are_only_counted_by_default(streaming, tmp_path):
    spark = streaming
    late_row_files(str(tmp_path / "in"))
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    windows = late_windows(stream)  # late_rows="count" is the default
    assert windows.columns == ["k", "window", "s"]
    assert late_windows(stream, late_rows="count").columns == ["k", "window", "s"]
    query = run_available_now(windows, tmp_path / "checkpoint", name="late_rows_count")
    try:
        rows = late_test_rows(spark.table("late_rows_count"))
    finally:
        spark.catalog.dropTempView("late_rows_count")
    assert sums_by_window(rows) == EXPECTED_LATE_TEST_WINDOWS
    assert ss.observed(query, "late_rows") == 2
    assert ss.observed(query, "null_time_rows") == 1


# --- update mode -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arrival",
    [
        "time order",
        "shuffled",
    ],
)
def test_update_mode_ends_with_the_batch_values(streaming, tmp_path, arrival):
    spark = streaming
    events = random_events(seed=77, n=150)
    if arrival == "time order":
        events.sort(key=lambda e: e["ts"])
        cuts = [25, 50, 75, 100, 125]
        chunks = [events[a:b] for a, b in zip([0] + cuts, cuts + [len(events)])]
    else:
        chunks = split_into_files(events, random.Random(5))
    files = ss.write_files(str(tmp_path / "in"), chunks)
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    stream = stream.withWatermark("ts", "1 hour")
    windows = stream.groupBy("k", window("ts", SlidingWindows.of(SIZE), emit="updates")).agg(*ss.aggregates())
    assert windows.columns == ["k", "window", *ss.AGGREGATE_NAMES]

    batches = {}

    def collect(df, batch_id):
        batches[batch_id] = window_rows(df).collect()

    run_available_now(windows, tmp_path / "checkpoint", mode="update", foreach_batch=collect)

    last = {}
    emitted = collections.Counter()
    for batch_id in sorted(batches):
        seen = set()
        for row in batches[batch_id]:
            key = (row["k"], row["start"], row["end"])
            assert key not in seen, f"window {key} emitted twice in micro-batch {batch_id}"
            seen.add(key)
            last[key] = row
            emitted[key] += 1
    got = ss.multiset(last.values())
    expected = ss.multiset(batch_windows(spark, files).collect())
    assert got == expected, ss.describe_difference(got, expected)
    # windows are emitted again when later micro-batches change them
    assert sum(1 for count in emitted.values() if count > 1) >= 5


def test_update_mode_emits_a_right_window_created_by_a_later_arriving_row(streaming, tmp_path):
    """Batch 0: a@15. Batch 1: a@10, which creates the right window [10 s + 1 us, 20 s + 1 us]
    holding only a@15: the micro-batch changed (created) it, so update mode must emit it."""
    spark = streaming
    s = ss.SECOND
    ss.write_files(str(tmp_path / "in"), [[ss.event(1, "a", 15 * s, 1)], [ss.event(2, "a", 10 * s, 2)]])
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    windows = stream.withWatermark("ts", "1 hour").groupBy(
        "k", window("ts", SlidingWindows.of("10 seconds"), emit="updates")
    ).agg(F.sum("v").alias("s"))
    batches = {}

    def collect(df, batch_id):
        bounds = df.select(micros("window.start").alias("start"), micros("window.end").alias("end"), "s")
        batches[batch_id] = sorted((r["start"], r["end"], r["s"]) for r in bounds.collect())

    run_available_now(windows, tmp_path / "checkpoint", mode="update", foreach_batch=collect)
    assert batches[0] == [(at(5), at(15), 1)]
    assert batches[1] == [(at(0), at(10), 2), (at(5), at(15), 3), (at(10, 1), at(20, 1), 1)]


# --- bounded state ---------------------------------------------------------------------------------


def test_state_stays_bounded_as_event_time_advances(streaming, tmp_path):
    spark = streaming
    rnd = random.Random(9)
    files, n = 40, 0
    chunks = []
    for i in range(files):  # file i: 20 s of event time, 4 keys, about 8 distinct times per key
        chunk = []
        for _ in range(32):
            t = (i * 20 + rnd.randrange(20)) * ss.SECOND
            chunk.append(ss.event(n, f"k{rnd.randrange(4)}", t, rnd.randint(0, 9)))
            n += 1
        chunks.append(chunk)
    ss.write_files(str(tmp_path / "in"), chunks)
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    windows = stream.groupBy("k", window("ts", SlidingWindows.of(SIZE).grace("10 seconds"))).agg(F.sum("v"))
    query = run_available_now(windows, tmp_path / "checkpoint", sink="noop")
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    assert len(progress) == files
    state_rows = [sum(op["numRowsTotal"] for op in p["stateOperators"]) for p in progress]
    middle, end = max(state_rows[10:20]), max(state_rows[-10:])
    assert middle > 0
    assert end <= 1.5 * middle, f"state grows with the input: numRowsTotal per micro-batch {state_rows}"
    assert ss.observed(query, "late_rows") == 0


# --- SQL -------------------------------------------------------------------------------------------


def test_sql_options_on_a_streaming_view(streaming, tmp_path):
    spark = streaming
    late_row_files(str(tmp_path / "in"))
    stream = spark.readStream.schema(ss.SCHEMA).json(str(tmp_path / "in")).withWatermark("ts", "5 seconds")
    stream.createOrReplaceTempView("stream_events")
    try:
        plain = spark.sql(
            "SELECT k, window, sum(v) AS s FROM stream_events GROUP BY k, sliding_window(ts, INTERVAL '10' SECOND)"
        )
        assert plain.isStreaming and plain.columns == ["k", "window", "s"]
        emitting = spark.sql(
            "SELECT k, window, sum(v) AS s FROM stream_events "
            "GROUP BY k, sliding_window(ts, INTERVAL '10' SECOND, 'emit=updates, lateRows=emit')"
        )
        assert emitting.columns == ["k", "window", "s", "late_reason", "late_row"]
        with pytest.raises(AnalysisException) as info:
            spark.sql(
                "SELECT k, sum(v) FROM stream_events "
                "GROUP BY k, sliding_window(ts, INTERVAL '10' SECOND, 'emit=sometimes')"
            )
        assert "emit" in str(info.value)
    finally:
        spark.catalog.dropTempView("stream_events")


# --- errors ----------------------------------------------------------------------------------------


@pytest.fixture
def stream(streaming, tmp_path):
    late_row_files(str(tmp_path / "in"))
    return streaming.readStream.schema(ss.SCHEMA).json(str(tmp_path / "in"))


def test_streaming_needs_a_watermark_or_a_grace(stream):
    with pytest.raises(AnalysisException) as info:
        stream.groupBy("k", window("ts", SlidingWindows.of("10 seconds"))).count()
    assert "needs a watermark" in str(info.value)
    # either one is enough
    assert stream.groupBy("k", window("ts", SlidingWindows.of("10 seconds").grace("0 seconds"))).count().isStreaming
    watermarked = stream.withWatermark("ts", "1 minute")
    assert watermarked.groupBy("k", window("ts", SlidingWindows.of("10 seconds"))).count().isStreaming


def test_a_watermark_on_another_column_is_not_enough(stream):
    other = stream.withColumn("ts2", F.col("ts")).withWatermark("ts2", "1 minute")
    with pytest.raises(AnalysisException) as info:
        other.groupBy("k", window("ts", SlidingWindows.of("10 seconds"))).count()
    assert "needs a watermark" in str(info.value)


def test_rate_source_without_watermark(spark):
    rate = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    with pytest.raises(AnalysisException) as info:
        rate.groupBy(window("timestamp", SlidingWindows.of("10 seconds"))).count()
    assert "needs a watermark" in str(info.value)


def test_streaming_needs_a_timestamp_time_column(stream):
    millis = stream.withColumn("t_ms", F.unix_millis("ts"))
    with pytest.raises(AnalysisException) as info:
        millis.groupBy("k", window("t_ms", SlidingWindows.of(10_000).grace("1 second"), time_unit="milliseconds")).count()
    assert "TIMESTAMP" in str(info.value)
    ntz = stream.withColumn("ts", F.col("ts").cast("timestamp_ntz"))
    with pytest.raises(AnalysisException) as info:
        ntz.groupBy("k", window("ts", SlidingWindows.of("10 seconds").grace("1 second"))).count()
    assert "TIMESTAMP" in str(info.value)


def test_streaming_needs_the_rocksdb_state_store(spark, stream):
    assert spark.conf.get(PROVIDER_CONF) == ROCKSDB  # windowagg.session() sets it
    hdfs = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    spark.conf.set(PROVIDER_CONF, hdfs)
    try:
        with pytest.raises(AnalysisException) as info:
            stream.groupBy("k", window("ts", SlidingWindows.of("10 seconds").grace("1 second"))).count()
        assert "RocksDB" in str(info.value)
    finally:
        spark.conf.set(PROVIDER_CONF, ROCKSDB)


def real_time_failure(streaming, tmp_path, definition):
    """The message a query of counts per key in ``definition``'s windows (emit="updates") in
    real-time mode stops with. The source is Spark's in-memory real-time stream (in Spark's own jar
    since 4.1), written to the console, a sink real-time mode takes; Python's
    trigger(realTime=...) comes with 4.3, so the trigger is built in the JVM."""
    jvm = streaming._jvm
    encoders = jvm.org.apache.spark.sql.Encoders
    source = jvm.org.apache.spark.sql.execution.streaming.sources.LowLatencyMemoryStream.apply(
        streaming._jsparkSession, 1, encoders.tuple(encoders.STRING(), encoders.TIMESTAMP()))
    clicks = DataFrame(source.toDF(), streaming).toDF("k", "ts")
    counts = clicks.groupBy("k", window("ts", definition, emit="updates")).count()
    writer = counts.writeStream.format("console").outputMode("update")
    writer = writer.option("checkpointLocation", str(tmp_path / "ck"))
    real_time = jvm.org.apache.spark.sql.execution.streaming.RealTimeTrigger.apply("5 seconds")
    writer._jwrite = writer._jwrite.trigger(real_time)
    query = writer.start()
    try:
        with pytest.raises(StreamingQueryException) as info:
            query.awaitTermination(QUERY_TIMEOUT)
    finally:
        query.stop()
    return str(info.value)


def test_real_time_mode_stops_what_this_spark_cannot_run_with_windowaggs_message(streaming, tmp_path):
    """Spark 4.1 and 4.2 run only stateless queries in real-time mode: a windowagg query there stops as
    its first batch is planned, naming the requirement. From 4.3 on (test_kafka.py's real-time tests)
    real-time mode runs windowagg but no Python function: PythonWindows stops, saying what lists
    windows in that mode. Never with Spark's allowlist of operators."""
    import pandas as pd

    def minutes(times):
        start = times.dt.floor("1min")
        return pd.DataFrame({"start": start, "end": start + pd.Timedelta("1min")})

    python_windows = PythonWindows.of(minutes, "1 minute", overlapping=False).grace("1 second")
    if pyspark.__version__.startswith(("4.1.", "4.2.")):
        definitions = {"sliding": SlidingWindows.of("10 seconds").grace("1 second"), "python": python_windows}
        for name, definition in definitions.items():
            message = real_time_failure(streaming, tmp_path / name, definition)
            assert "real-time mode" in message and "from Spark 4.3 on" in message, message
            assert f"this is Spark {pyspark.__version__}" in message, message
            assert "ALLOWLIST" not in message, message
    else:
        message = real_time_failure(streaming, tmp_path, python_windows)
        assert "real-time mode runs no Python function" in message and "TableWindows" in message, message
        assert "ALLOWLIST" not in message, message


@pytest.mark.parametrize(
    "options, phrase",
    [({"emit": "sometimes"}, "emit"), ({"late_rows": "drop"}, "lateRows"), ({"emit": "update"}, "emit")],
)
def test_unknown_option_values(stream, options, phrase):
    with pytest.raises(AnalysisException) as info:
        stream.groupBy("k", window("ts", SlidingWindows.of("10 seconds").grace("1 second"), **options)).count()
    assert phrase in str(info.value)
