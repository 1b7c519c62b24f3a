"""Errors: each is raised at analysis time, before any data is read, and names the problem."""

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from windowagg import SlidingWindows, window


@pytest.fixture(scope="module")
def events(spark):
    df = spark.createDataFrame(
        [("ann", 1, "/", 5, 1.5, "2024-01-01"), ("bob", 2, "/cart", 7, 2.5, "2024-01-02")],
        "user string, t_ms bigint, page string, amount bigint, score double, day string",
    ).select(
        "*",
        F.timestamp_millis("t_ms").alias("ts"),
        F.to_date("day").alias("d"),
    )
    df.createOrReplaceTempView("err_events")
    yield df
    spark.catalog.dropTempView("err_events")


def message(info):
    return str(info.value)


TVF = "SELECT * FROM sliding_window_agg(TABLE(err_events) PARTITION BY user ORDER BY ({time}), {size}, '{aggs}')"


@pytest.mark.parametrize("column", ["page", "score", "d"])
def test_wrong_time_column_type(events, column):
    with pytest.raises(AnalysisException) as info:
        events.groupBy("user", window(column, SlidingWindows.of("1 minute"))).count()
    assert "time column" in message(info).lower()


def test_wrong_time_column_type_in_sql(spark, events):
    with pytest.raises(AnalysisException) as info:
        spark.sql("SELECT count(1) FROM err_events GROUP BY sliding_window(page, INTERVAL '1' MINUTE)")
    assert "time column" in message(info).lower()
    with pytest.raises(AnalysisException) as info:
        spark.sql(TVF.format(time="page", size="INTERVAL '1' MINUTE", aggs="count(1) AS n"))
    assert "time column" in message(info).lower()


def test_missing_time_column(spark, events):
    with pytest.raises(AnalysisException) as info:
        events.groupBy("user", window("no_such_ts", SlidingWindows.of("1 minute"))).count()
    assert "no_such_ts" in message(info)
    with pytest.raises(AnalysisException) as info:
        spark.sql("SELECT count(1) FROM err_events GROUP BY sliding_window(no_such_ts, INTERVAL '1' MINUTE)")
    assert "no_such_ts" in message(info)
    with pytest.raises(AnalysisException) as info:
        spark.sql(TVF.format(time="no_such_ts", size="INTERVAL '1' MINUTE", aggs="count(1) AS n"))
    assert "no_such_ts" in message(info)


@pytest.mark.parametrize("aggs", ["sum(amount AS total", "count(1) AS n,, max(amount)", "sum(amount) total total"])
def test_unparsable_aggregate_text(spark, events, aggs):
    with pytest.raises(AnalysisException) as info:
        spark.sql(TVF.format(time="ts", size="INTERVAL '1' MINUTE", aggs=aggs))
    assert "aggregate" in message(info).lower()


def test_distinct_aggregates(spark, events):
    definition = SlidingWindows.of("1 minute")
    for agg in (F.count_distinct("page"), F.sum_distinct("amount")):
        with pytest.raises(AnalysisException) as info:
            events.groupBy("user", window("ts", definition)).agg(agg)
        assert "DISTINCT" in message(info).upper()
    with pytest.raises(AnalysisException) as info:
        spark.sql(
            "SELECT count(DISTINCT page) FROM err_events GROUP BY user, sliding_window(ts, INTERVAL '1' MINUTE)"
        )
    assert "DISTINCT" in message(info).upper()
    with pytest.raises(AnalysisException) as info:
        spark.sql(TVF.format(time="ts", size="INTERVAL '1' MINUTE", aggs="count(DISTINCT page) AS pages"))
    assert "DISTINCT" in message(info).upper()


@pytest.mark.parametrize("function", ["rank()", "row_number()", "dense_rank()"])
def test_ranking_functions(spark, events, function):
    with pytest.raises(AnalysisException) as info:
        spark.sql(TVF.format(time="ts", size="INTERVAL '1' MINUTE", aggs=f"count(1) AS n, {function} AS r"))
    assert function.rstrip("()") in message(info).lower()


def test_integer_size_on_a_timestamp_column(spark, events):
    with pytest.raises(AnalysisException) as info:
        events.groupBy("user", window("ts", SlidingWindows.of(10))).count()
    text = message(info).lower()
    assert "size" in text or "tick" in text or "duration" in text
    with pytest.raises(AnalysisException):
        spark.sql("SELECT count(1) FROM err_events GROUP BY user, sliding_window(ts, 10)")


def test_duration_that_is_not_a_whole_number_of_ticks(spark, events):
    with pytest.raises(AnalysisException) as info:
        events.groupBy("user", window("t_ms", SlidingWindows.of("1500 us"), time_unit="milliseconds")).count()
    assert "whole number" in message(info)
    with pytest.raises(AnalysisException) as info:
        spark.sql("SELECT count(1) FROM err_events GROUP BY user, sliding_window(t_ms, '1500 us', 'milliseconds')")
    assert "whole number" in message(info)


def test_non_positive_size_in_sql(spark, events):
    with pytest.raises(AnalysisException) as info:
        spark.sql("SELECT count(1) FROM err_events GROUP BY user, sliding_window(ts, INTERVAL '0' MINUTE)")
    assert "positive" in message(info)
    with pytest.raises(AnalysisException) as info:
        spark.sql(TVF.format(time="t_ms", size="-5", aggs="count(1) AS n"))
    assert "positive" in message(info)


def test_unknown_time_unit(spark, events):
    with pytest.raises((ValueError, AnalysisException)) as info:
        events.groupBy("user", window("t_ms", SlidingWindows.of(10), time_unit="fortnights")).count()
    assert "unit" in message(info).lower()


@pytest.mark.parametrize(
    "build, condition, sql_state",
    [
        (lambda s, e: e.groupBy("user", window("page", SlidingWindows.of("1 minute"))).count(),
         "WINDOWAGG_INVALID_TIME_COLUMN", "42K09"),
        (lambda s, e: e.groupBy("user", window("ts", SlidingWindows.of("1 minute"), emit="sometimes")).count(),
         "WINDOWAGG_INVALID_OPTION", "42K06"),
        (lambda s, e: e.groupBy("user", window("ts", SlidingWindows.of("1 minute"))).agg(F.countDistinct("page")),
         "WINDOWAGG_UNSUPPORTED_AGGREGATE", "0A000"),
        (lambda s, e: s.sql("SELECT user, count(1) FROM err_events GROUP BY user, windows(ts, 'sliding banana')"),
         "WINDOWAGG_INVALID_WINDOW", "22023"),
        (lambda s, e: s.sql("SELECT page, count(1) FROM err_events GROUP BY user, windows(ts, 'sliding 1 minute')"),
         "WINDOWAGG_INVALID_QUERY", "42000"),
    ],
    ids=["time column", "option", "aggregate", "spec in SQL", "query in SQL"],
)
def test_errors_carry_windowaggs_condition_and_sqlstate(spark, events, build, condition, sql_state):
    with pytest.raises(AnalysisException) as info:
        build(spark, events)
    error = info.value
    assert error.getCondition() == condition
    assert error.getSqlState() == sql_state
    text = error.getMessageParameters()["message"]
    assert text and text in error.getMessage() and text in str(error)
