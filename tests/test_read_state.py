"""read_state: what a streaming windowed aggregation's checkpoint holds per key.

Each query runs over micro-batches of rows and stops; its checkpoint's state is then read. The open
windows read must be exactly the windows of a batch aggregation over every row so far that the
query has not emitted yet, with the batch's values (the brute force of each kind checks the batch
elsewhere); a key's timer lies ahead of the watermark; rows a key holds back are counted.
"""

import datetime
import json
import os
import shutil
import tempfile

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

import state_fixtures as sf
import streaming_support as ss
import windowagg
from windowagg import (
    CalendarWindows,
    CountWindows,
    CumulativeWindows,
    CustomWindows,
    DurationWindows,
    PythonWindows,
    SessionWindows,
    SlidingWindows,
    TableWindows,
    TimeWindows,
    UnlimitedWindows,
)

SCHEMA = "k string, ts timestamp, v long"
START = datetime.datetime(2024, 3, 10, 6, 0, tzinfo=datetime.timezone.utc)


def python_quarters():
    """Fiscal quarters of years from February, as a PythonWindows function (defined here, so that it
    travels to the Python workers by value: this test module is not importable there)."""

    def fiscal_quarters(times):
        import pandas as pd

        quarters = times.dt.to_period("Q-JAN")
        return pd.DataFrame({"start": quarters.dt.start_time, "end": (quarters + 1).dt.start_time})

    return PythonWindows.of(fiscal_quarters, max_size="92 days 1 hour")


def periods(spark):
    """Overlapping periods of several sizes for table windows."""
    rows = [(START + datetime.timedelta(seconds=a), START + datetime.timedelta(seconds=b)) for a, b in
            ((0, 90), (60, 200), (150, 400), (300, 320), (350, 900))]
    return spark.createDataFrame(rows, "opens timestamp, closes timestamp")


# kind: (definition given the session, emit)
KINDS = {
    "sliding": (lambda s: SlidingWindows.of("30 seconds"), "final"),
    "session": (lambda s: SessionWindows.with_inactivity_gap("20 seconds"), "final"),
    "tumbling": (lambda s: TimeWindows.of("1 minute"), "final"),
    "hopping": (lambda s: TimeWindows.of("1 minute").advance_by("20 seconds"), "final"),
    "cumulative": (lambda s: CumulativeWindows.of("20 seconds", "2 minutes"), "final"),
    "calendar": (lambda s: CalendarWindows.days(1).in_zone("America/New_York"), "final"),
    "unlimited": (lambda s: UnlimitedWindows.of(), "updates"),
    "custom": (lambda s: CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=2), "final"),
    "table": (lambda s: TableWindows.of(periods(s), start="opens", end="closes"), "final"),
    "python": (lambda s: python_quarters(), "final"),
    "count": (lambda s: CountWindows.of(5).slide(2), "final"),
    "duration": (lambda s: DurationWindows.of("30 seconds").every("10 seconds"), "final"),
}
ROW_KINDS = ("count", "duration")


def rows_between(rnd, lo, hi, n, keys=("a", "b", "c")):
    return [(rnd.choice(keys), START + datetime.timedelta(milliseconds=rnd.randrange(lo * 1000, hi * 1000)), rnd.randrange(1, 50))
            for _ in range(n)]


def input_batches():
    import random

    rnd = random.Random(7)
    # the watermark trails by 20 s: the first batch closes some windows of the first minutes
    return [rows_between(rnd, 0, 120, 40), rows_between(rnd, 100, 300, 40), rows_between(rnd, 290, 330, 10)]


def aggregation(df, definition, streaming, emit):
    grouping = windowagg.window("ts", definition, emit=emit) if streaming else windowagg.window("ts", definition)
    source = df.withWatermark("ts", "20 seconds") if streaming else df
    return source.groupBy("k", grouping).agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"))


def run(spark, kind, checkpoint, batches):
    """Runs the kind's query over `batches` (one micro-batch each) from `checkpoint`; the rows it emitted."""
    definition, emit = KINDS[kind]
    emitted = []

    def collect(batch, batch_id):
        emitted.extend((batch_id, r.k, r.window.start, r.window.end, r.total, r.n) for r in batch.collect())

    source = tempfile.mkdtemp(prefix=f"windowagg-read-state-{kind}-")
    try:
        stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(source)
        query = (aggregation(stream, definition(spark), True, emit).writeStream.foreachBatch(collect)
                 .outputMode("update" if emit == "updates" else "append").option("checkpointLocation", checkpoint).start())
        ss.feed(query, source, [sf.json_lines(rows) for rows in batches])
    finally:
        shutil.rmtree(source, ignore_errors=True)
    return emitted


def watermark_of(checkpoint, batch_id):
    with open(os.path.join(checkpoint, "offsets", str(batch_id))) as f:
        return json.loads(f.read().split("\n")[1])["batchWatermarkMs"]


def open_windows(spark, kind, rows, emitted, emit):
    """The windows of a batch aggregation over `rows` the query has not emitted as final (with emit
    'updates', every window: none is final), with their values."""
    definition, _ = KINDS[kind]
    batch = aggregation(spark.createDataFrame(rows, SCHEMA), definition(spark), False, emit)
    windows = {(r.k, r.window.start, r.window.end): (r.total, r.n) for r in batch.collect()}
    if emit == "final":
        for _, k, start, end, _, _ in emitted:
            windows.pop((k, start, end))
    return windows


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_open_windows_read_are_the_batch_windows_not_emitted_yet(spark, kind, tmp_path):
    checkpoint = str(tmp_path / "checkpoint")
    batches = input_batches()
    emitted = run(spark, kind, checkpoint, batches)
    state = windowagg.read_state(spark, checkpoint)
    assert state.columns == ["k", "window", "total", "n", "held_rows", "next_close", "state"]
    got = state.collect()
    _, emit = KINDS[kind]
    rows = [r for batch in batches for r in batch]
    last_batch = max(int(n) for n in os.listdir(os.path.join(checkpoint, "commits")) if n.isdigit())
    watermark_ms = watermark_of(checkpoint, last_batch)

    records = {r.state for r in got}
    assert len(records) == 1, records
    (record,) = records
    layout = {"session": "sessions", "count": "rows", "duration": "rows", "python": "listed partials by time"}.get(
        kind, "partials by time")
    assert (record.layout, record.keying, record.emit, record.batch_id) == (layout, "state partition", emit, last_batch)
    assert epoch_ms(record.watermark) == watermark_ms

    windows = {(r.k, r.window.start, r.window.end): (r.total, r.n) for r in got if r.window is not None}
    if kind in ROW_KINDS:
        # Cut at rows: no window is open between evaluations. A key holds its rows the watermark has
        # not passed (their order may still change), and of the others at most those a window still
        # to come can hold: a count window's 5 rows, or the rows of a duration window's 30 s and one
        # evaluation interval behind the watermark.
        assert not windows
        held = {r.k: r.held_rows for r in got}
        assert set(held) == {k for k, _, _ in rows}
        for key in held:
            times = [epoch_ms(ts) for k, ts, _ in rows if k == key]
            waiting = sum(t >= watermark_ms for t in times)
            behind = 5 if kind == "count" else sum(watermark_ms - 40_000 <= t < watermark_ms for t in times)
            assert waiting <= held[key] <= waiting + behind, (key, waiting, behind, held[key])
    else:
        expected = open_windows(spark, kind, rows, emitted, emit)
        assert expected, f"{kind}: the input leaves no window open"
        assert windows == expected
    # a key is looked at again once the watermark passes its timer, never before
    for r in got:
        if r.next_close is not None:
            assert epoch_ms(r.next_close) > watermark_ms, r


def epoch_ms(moment):
    """Epoch milliseconds of a datetime, naive ones (as PySpark collects timestamps) in local time."""
    return round(moment.timestamp() * 1000)


def test_state_after_an_earlier_micro_batch(spark, tmp_path):
    checkpoint = str(tmp_path / "checkpoint")
    batches = input_batches()
    emitted = run(spark, "tumbling", checkpoint, batches)
    state = windowagg.read_state(spark, checkpoint, batch_id=0)
    got = {(r.k, r.window.start, r.window.end): (r.total, r.n) for r in state.collect()}
    assert {r.state.batch_id for r in state.collect()} == {0}
    expected = open_windows(spark, "tumbling", batches[0], [e for e in emitted if e[0] == 0], "final")
    assert got == expected


def test_sql_reads_the_same(spark, tmp_path):
    checkpoint = str(tmp_path / "checkpoint")
    run(spark, "hopping", checkpoint, input_batches())
    by_python = sorted(windowagg.read_state(spark, checkpoint).collect())
    by_sql = sorted(spark.sql(f"SELECT * FROM windowagg_state('{checkpoint}')").collect())
    assert by_python == by_sql and by_python


def test_a_checkpoint_of_the_previous_release_reads_after_a_restart_converted_keys_or_not(spark, tmp_path):
    """After one micro-batch on this release, the keys it read are converted and the others are still
    in 0.3.0's layout: both read the same way."""
    checkpoint = str(tmp_path / "checkpoint")
    shutil.copytree(os.path.join(sf.FIXTURES_DIR, sf.PREVIOUS_RELEASE, "sliding", "checkpoint"), checkpoint)
    sf.relocate(checkpoint)
    with pytest.raises(AnalysisException) as before_restart:
        windowagg.read_state(spark, checkpoint)
    assert "restart the query once with this release" in str(before_restart.value)

    with open(os.path.join(sf.FIXTURES_DIR, sf.PREVIOUS_RELEASE, "sliding", "first_output.json")) as f:
        first = [tuple(r) for r in json.load(f)]
    first_half, _ = sf.halves()
    late_key_rows = [("k0", sf.START + datetime.timedelta(seconds=250), 5)]
    second = sf.run_stream(spark, windowagg, "sliding", checkpoint, [late_key_rows])
    state = windowagg.read_state(spark, checkpoint)
    got = {(r.k, r.window.start, r.window.end): (r.total, r.n) for r in state.collect()}
    assert {r.state.keying for r in state.collect()} == {"key"}
    batch = sf.aggregated(spark.createDataFrame(first_half + late_key_rows, sf.SCHEMA), windowagg, "sliding", streaming=False)
    expected = {(r.k, r.start, r.end): (r.total, r.n) for r in batch.collect()}
    for row in first + second:
        expected.pop(tuple(row[1:4]))
    micros = {(k, round(s.timestamp() * 1_000_000), round(e.timestamp() * 1_000_000)): v for (k, s, e), v in got.items()}
    assert micros == expected
    assert {k for k, _, _ in got} > {"k0"}, "the keys the restart did not read are read too"


def refused(call) -> str:
    with pytest.raises(AnalysisException) as error:
        call()
    assert error.value.getCondition() == "WINDOWAGG_CHECKPOINT_MISMATCH", str(error.value)
    return str(error.value)


def test_errors_name_the_checkpoint_and_what_is_wrong(spark, tmp_path):
    missing = str(tmp_path / "nowhere")
    assert f"there is no checkpoint at {missing}" in refused(lambda: windowagg.read_state(spark, missing))

    checkpoint = str(tmp_path / "checkpoint")
    run(spark, "tumbling", checkpoint, input_batches()[:2])
    message = refused(lambda: windowagg.read_state(spark, checkpoint, batch_id=99))
    last = max(int(n) for n in os.listdir(os.path.join(checkpoint, "commits")) if n.isdigit())
    assert f"has no committed micro-batch 99: its committed micro-batches are 0 to {last}" in message
    assert "there is no aggregation 3" in refused(lambda: windowagg.read_state(spark, checkpoint, aggregation=3))

    record = os.path.join(checkpoint, "windowagg", "state.json")
    with open(record) as f:
        text = f.read()
    os.remove(os.path.join(checkpoint, "windowagg", ".state.json.crc"))
    current = f'"version" : {sf.CURRENT["partials by time"]}'
    assert current in text
    with open(record, "w") as f:
        f.write(text.replace(current, '"version" : 9'))
    assert "version 9" in refused(lambda: windowagg.read_state(spark, checkpoint))

    other = str(tmp_path / "other")
    stream = spark.readStream.format("rate").option("rowsPerSecond", 10).load()
    query = (stream.withWatermark("timestamp", "1 second").dropDuplicates(["value", "timestamp"])
             .writeStream.format("noop").option("checkpointLocation", other).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert "not the checkpoint of a windowagg streaming query" in refused(lambda: windowagg.read_state(spark, other))

    with pytest.raises(TypeError):
        windowagg.read_state(spark, checkpoint, batch_id="1")
