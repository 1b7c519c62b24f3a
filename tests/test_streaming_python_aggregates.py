"""A Python user's own aggregates over windows in Structured Streaming: grouped-aggregate pandas UDFs
and Arrow UDFs (Spark refuses both in its own streaming aggregation).

The rows a window holds are kept in the query's state (collected as the windows are computed) and
each window the query emits goes to Python with them, many windows per Arrow batch. Checked against
the batch result (itself checked against brute force in test_python_aggregates.py): every kind's
final windows, each UDF fed the window's rows in time order; updates and early firing over sessions,
as an upserting sink keeps them; a restart from the checkpoint; a UDF's error naming key and window.
"""

import datetime
import json
import shutil
import tempfile

import pytest
from pyspark.sql import functions as F

import streaming_support as ss
import test_python_aggregates as tpa
import windowagg
from windowagg import SessionWindows, TimeWindows, window

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

SCHEMA = "id long, k string, t long, v double, w double"
FLUSH = "~flush"
# kinds whose windows close (an unlimited window never does), with their rows kept in the state
KINDS = ["tumbling", "hopping", "cumulative", "sliding", "session", "dynamic session", "calendar", "count", "duration",
         "custom", "python", "table"]


def chunks(rows, size=60):
    """The rows in time order, in files of `size`, then a flush row far ahead that closes every window."""
    ordered = sorted(rows, key=lambda r: r[2])
    files = [ordered[i:i + size] for i in range(0, len(ordered), size)]
    return files + [[(10**6, FLUSH, ordered[-1][2] + 400 * tpa.HOUR, 0.0, 1.0)]]


def run_stream(spark, aggregate, files, checkpoint=None, output_mode="append"):
    """Runs `aggregate` (a function of the streaming frame) over `files`, one micro-batch each; returns
    the emitted rows, in order, the flush key's left out."""
    source = tempfile.mkdtemp(prefix="windowagg-python-stream-")
    written = []
    try:
        stream = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(source)
                  .select("id", "k", F.timestamp_micros("t").alias("ts"), "v", "w",
                          F.make_dt_interval(secs=F.lit(600)).alias("gap_s"))
                  .withWatermark("ts", "1 hour"))
        writer = (aggregate(stream).writeStream.outputMode(output_mode)
                  .foreachBatch(lambda batch, _: written.extend(batch.where(F.col("k") != FLUSH).collect())))
        if checkpoint:
            writer = writer.option("checkpointLocation", checkpoint)
        ss.feed(writer.start(), source,
                [(json.dumps(dict(zip(("id", "k", "t", "v", "w"), r))) for r in rows) for rows in files])
    finally:
        shutil.rmtree(source, ignore_errors=True)
    return written


def first_time():
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("string")
    def first_seen(ts: pd.Series) -> str:
        return str(ts.iloc[0])  # a timestamp as Spark hands it to pandas: the session's local time, no zone

    return first_seen


def windowed(df, definition, emit="final"):
    ids_as_given, wmedian = tpa.udfs()
    return df.groupBy("k", window("ts", definition, emit=emit)).agg(
        ids_as_given("id").alias("given"), wmedian("v", "w").alias("m"), first_time()("ts").alias("first"),
        F.count(F.lit(1)).alias("n"))


def as_compared(rows):
    return sorted((r["k"], r["window"]["start"], r["window"]["end"], r["given"], r["m"], r["first"], r["n"])
                  for r in rows)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_gives_each_udf_its_windows_rows_as_batch_does(spark, kind):
    rows = tpa.random_rows(seed=KINDS.index(kind), n=240)
    definition = tpa.kinds(spark)[kind]
    batch = windowed(tpa.frame(spark, rows), definition).collect()
    got = run_stream(spark, lambda s: windowed(s, definition), chunks(rows))
    assert len(got) > 0 and as_compared(got) == as_compared(batch)


def upserted(rows):
    """What an upserting sink keeps of emitted rows: each window's last value; a retraction removes it."""
    kept = {}
    for r in rows:
        bounds = (r["k"], r["window"]["start"], r["window"]["end"])
        if r["retraction"]:
            assert kept.pop(bounds, None) is not None, f"{bounds} retracted but never emitted"
        else:
            kept[bounds] = r
    return list(kept.values())


@pytest.mark.parametrize("emit", ["updates", "every 1 hour"])
def test_sessions_emitted_before_final_end_with_the_batch_values(spark, emit):
    rows = tpa.random_rows(seed=7, n=240)
    definition = SessionWindows.withInactivityGap("20 minutes")
    batch = windowed(tpa.frame(spark, rows), definition).collect()
    got = run_stream(spark, lambda s: windowed(s, definition, emit=emit), chunks(rows, size=20), output_mode="update")
    # retractions carry no values; values before the final ones are over the rows so far
    assert all(r["given"] is None and r["m"] is None for r in got if r["retraction"])
    assert sum(1 for r in got if not r["retraction"]) > len(batch)
    assert as_compared(upserted(got)) == as_compared(batch)


def test_a_restart_keeps_the_rows_open_windows_hold(spark, tmp_path):
    rows = tpa.random_rows(seed=11, n=240)
    definition = TimeWindows.of("6 hours")
    batch = windowed(tpa.frame(spark, rows), definition).collect()
    files = chunks(rows)
    checkpoint = str(tmp_path / "checkpoint")
    first = run_stream(spark, lambda s: windowed(s, definition), files[:2], checkpoint)
    # what the checkpoint holds for the open windows: each one's rows so far, for the UDFs
    state = windowagg.read_state(spark, checkpoint)
    assert state.columns == ["k", "window", "n", "rows for ids_as_given, wmedian, first_seen", "held_rows", "next_close",
                             "state"]
    held = state.collect()
    assert held
    for r in held:
        start, end = (int(b.replace(tzinfo=datetime.timezone.utc).timestamp()) * tpa.SECOND for b in r.window)
        so_far = [row for chunk in files[:2] for row in chunk if row[1] == r.k and start <= row[2] < end]
        assert sorted(c._1 for c in r[3]) == sorted(row[0] for row in so_far) and r.n == len(so_far)
    second = run_stream(spark, lambda s: windowed(s, definition), files[2:], checkpoint)
    assert first and second
    assert as_compared(first + second) == as_compared(batch)


def test_an_arrow_udf_and_a_failing_udf_naming_its_key_and_window(spark):
    from pyspark.sql.functions import arrow_udf, pandas_udf

    @arrow_udf("double")
    def spread(v: pa.Array) -> float:
        return pa.compute.max(v).as_py() - pa.compute.min(v).as_py()

    rows = tpa.random_rows(seed=5, n=120)
    definition = TimeWindows.of("6 hours")

    def spreads(df):
        return df.groupBy("k", window("ts", definition)).agg(spread("v").alias("s"))

    batch = sorted(tuple(r) for r in spreads(tpa.frame(spark, rows)).collect())
    assert sorted(tuple(r) for r in run_stream(spark, spreads, chunks(rows))) == batch

    @pandas_udf("double")
    def picky(v: pd.Series) -> float:
        if (v == 13.0).any():
            raise ValueError("13 is unlucky")
        return float(v.sum())

    rows = [(i, "a" if i < 5 else "b", tpa.START + i * tpa.MINUTE, float(i + 9), 1.0) for i in range(10)]
    with pytest.raises(Exception) as info:
        run_stream(spark, lambda s: s.groupBy("k", window("ts", TimeWindows.of("3 minutes"))).agg(picky("v")),
                   chunks(rows, size=5))
    text = str(info.value)
    window_ = "the window from 2024-01-01 00:03:00 UTC to 2024-01-01 00:06:00 UTC"
    assert f"picky failed on {window_} of the key ('a',)" in text, text
    assert "13 is unlucky" in text


def test_an_iterator_form_is_refused_in_streaming_by_name(spark, tmp_path):
    from typing import Iterator

    from pyspark.sql.functions import pandas_udf

    @pandas_udf("double")
    def total(vs: Iterator[pd.Series]) -> float:
        return float(sum(v.sum() for v in vs))

    source = tmp_path / "in"
    tpa.frame(spark, tpa.random_rows(seed=3, n=20)).write.parquet(str(source))
    stream = spark.readStream.schema(tpa.frame(spark, tpa.random_rows(seed=3, n=2)).schema).parquet(str(source)).withWatermark("ts", "1 hour")
    with pytest.raises(Exception) as info:
        stream.groupBy("k", window("ts", TimeWindows.of("1 hour"))).agg(total("v"))
    text = str(info.value)
    assert "total" in text and "iterator form" in text, text
