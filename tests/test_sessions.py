"""Session windows from Python: batch against Spark's session_window, SQL, errors, streaming updates."""

import datetime

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from windowagg import SessionWindows, metrics, window


DAY = datetime.datetime(2024, 1, 1)


@pytest.fixture(scope="module")
def clicks(spark):
    rows = [("u1", 0), ("u1", 5), ("u1", 10), ("u1", 16), ("u1", 30), ("u2", 3), ("u2", 9), (None, 1)]
    return spark.createDataFrame(
        [(u, DAY + datetime.timedelta(seconds=s), s) for u, s in rows],
        "user string, ts timestamp, amount long",
    )


def seconds(moment):
    """A time as seconds after the clicks' day began, to the microsecond."""
    return (moment - DAY).total_seconds()


def sessions(df, start="window.start", end="window.end"):
    """The sessions as (user, start, end, n, total), bounds in seconds: a list, so that a session twice shows."""
    rows = df.select("user", F.col(start).alias("start"), F.col(end).alias("end"), "n", "total").collect()
    return [(r["user"], seconds(r["start"]), seconds(r["end"]), r["n"], r["total"]) for r in rows]


def test_sessions_are_first_to_last_with_an_inclusive_gap(clicks):
    out = clicks.groupBy("user", window("ts", SessionWindows.withInactivityGap("5 seconds"))).agg(
        F.count("*").alias("n"), F.sum("amount").alias("total")
    )
    assert set(sessions(out)) == {
        ("u1", 0, 10, 3, 15), ("u1", 16, 16, 1, 16), ("u1", 30, 30, 1, 30),
        ("u2", 3, 3, 1, 3), ("u2", 9, 9, 1, 9), (None, 1, 1, 1, 1),
    }


def spark_sessions(clicks, gap):
    """Spark's session_window with the same gap, its bounds as windowagg's [first, last] (docs/semantics.md)."""
    theirs = clicks.groupBy("user", F.session_window("ts", gap).alias("w")).agg(
        F.count("*").alias("n"), F.sum("amount").alias("total"), F.max("ts").alias("last")
    ).select("user", F.col("w.start").alias("window_start"), F.col("last").alias("window_end"), "n", "total")
    return set(sessions(theirs, "window_start", "window_end"))


def test_sessions_equal_spark_session_window_with_the_same_gap(clicks):
    # u1's clicks at 0, 5 and 10 s are exactly one gap apart: one session in both
    ours = clicks.groupBy("user", window("ts", SessionWindows.withInactivityGap(datetime.timedelta(seconds=5)))).agg(
        F.count("*").alias("n"), F.sum("amount").alias("total")
    )
    assert set(sessions(ours)) == spark_sessions(clicks, "5 seconds")
    assert ("u1", 0, 10, 3, 15) in sessions(ours)


def test_dynamic_gap_and_invalid_gaps_are_counted(spark):
    df = spark.createDataFrame([("a", 0, 5), ("a", 3, None), ("a", 4, -1), ("a", 8, 5)], "k string, t long, g long")
    out = df.groupBy("k", window("t", SessionWindows.withDynamicGap("g"))).count().select("window.start", "window.end", "count")
    assert sorted(tuple(r) for r in out.collect()) == [(0, 0, 1), (8, 8, 1)]
    assert metrics(out)["invalidGapRows"] == 2


def test_session_window_agg_in_sql(spark, clicks):
    clicks.createOrReplaceTempView("session_clicks")
    out = spark.sql(
        "SELECT * FROM session_window_agg(TABLE(session_clicks) PARTITION BY user ORDER BY (ts), "
        "INTERVAL '5' SECOND, 'count(1) AS n, sum(amount) AS total')"
    )
    assert out.columns == ["user", "window_start", "window_end", "n", "total"]
    got = sessions(out, "window_start", "window_end")
    assert len(got) == 6 and set(got) == spark_sessions(clicks, "5 seconds")


@pytest.mark.parametrize("gap", [0, -3, "0 seconds", "-1 minute"])
def test_non_positive_gaps_are_rejected(spark, gap):
    with pytest.raises(ValueError, match="positive"):
        SessionWindows.withInactivityGap(gap)._java_definition()


def test_a_gap_column_of_the_wrong_type_is_an_analysis_error(clicks):
    with pytest.raises(AnalysisException, match="gap column"):
        clicks.groupBy("user", window("ts", SessionWindows.withDynamicGap("user"))).count()


def test_streaming_updates_retract_merged_sessions(spark, tmp_path):
    import json
    import os

    folder = tmp_path / "in"
    os.makedirs(folder)
    for i, second in enumerate([0, 18, 9]):
        with open(folder / f"part-{i}.json", "w") as f:
            f.write(json.dumps({"user": "a", "ts": f"2024-01-01 00:00:{second:02d}", "amount": 1}) + "\n")
        os.utime(folder / f"part-{i}.json", (1_700_000_000 + i, 1_700_000_000 + i))  # read in this order
    stream = (
        spark.readStream.schema("user string, ts timestamp, amount long").option("maxFilesPerTrigger", 1).json(str(folder))
        .withWatermark("ts", "1 hour")
    )
    out = stream.groupBy("user", window("ts", SessionWindows.withInactivityGap("10 seconds"), emit="updates")).agg(
        F.count("*").alias("n")
    )
    query = (
        out.writeStream.format("memory").queryName("py_session_updates").outputMode("update")
        .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
    )
    query.awaitTermination()
    rows = {
        (r["window"]["start"].second, r["window"]["end"].second, r["retraction"], r["n"])
        for r in spark.table("py_session_updates").collect()
    }
    assert (0, 0, True, None) in rows and (18, 18, True, None) in rows
    assert (0, 18, False, 3) in rows


def test_streaming_early_sessions_retract_after_a_restart_what_an_earlier_run_fired(spark, tmp_path):
    """emit 'every ...' over sessions: a running value fired before a restart is retracted after it."""
    import json
    import os

    folder = tmp_path / "in"
    os.makedirs(folder)

    def write(i, user, second, amount):
        with open(folder / f"part-{i}.json", "w") as f:
            f.write(json.dumps({"user": user, "ts": f"2024-01-01 00:{second // 60:02d}:{second % 60:02d}", "amount": amount}) + "\n")
        os.utime(folder / f"part-{i}.json", (1_700_000_000 + i, 1_700_000_000 + i))  # read in this order

    def run():
        stream = (
            spark.readStream.schema("user string, ts timestamp, amount long").option("maxFilesPerTrigger", 1)
            .json(str(folder)).withWatermark("ts", "100 seconds")
        )
        out = stream.groupBy(
            "user", window("ts", SessionWindows.withInactivityGap("15 seconds"), emit="every 10 seconds")
        ).agg(F.sum("amount").alias("total"))
        assert out.columns == ["user", "window", "total", "retraction", "is_final"]
        written = []  # the rows of each micro-batch, in order, as an upserting sink would take them
        query = (
            out.writeStream.foreachBatch(lambda batch, _: written.extend(batch.where("user = 'a'").collect()))
            .outputMode("update").option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
        )
        query.awaitTermination()
        return [
            (seconds(r["window"]["start"]), seconds(r["window"]["end"]), r["total"], r["is_final"], r["retraction"])
            for r in written
        ]

    write(0, "b", 0, 0)  # the watermark: 100 s before the day's first second
    write(1, "a", 1, 1)  # a's first value fires at once
    write(2, "a", 25, 2)  # the watermark (99 s before) is in the interval a fired in: it waits, until the
    # no-data micro-batch after it, at 75 s before, fires it
    before = run()
    write(3, "a", 13, 4)  # within 15 s of both: one session [1 s, 25 s], waiting for the watermark's next interval
    write(4, "b", 300, 0)
    write(5, "b", 301, 0)  # read at a watermark of 200 s: [1 s, 25 s] is final, and the values fired before the
    # restart under other bounds are retracted
    after = run()
    assert before == [(1.0, 1.0, 1, False, False), (25.0, 25.0, 2, False, False)]
    assert after == [(1.0, 1.0, None, False, True), (25.0, 25.0, None, False, True), (1.0, 25.0, 7, True, False)]
