"""SQL: the grouping function sliding_window(...) and the table function sliding_window_agg(...)."""

import collections

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

import brute_force as bf
import helpers as h

SIZE_SECONDS = 600
REGION = {0: "us", 1: "eu", None: None}

# Time columns of the view "events": name -> (ticks per second, Spark type of window bounds)
TIME_COLUMNS = {
    "ts": (1_000_000, T.TimestampType()),
    "ts_ntz": (1_000_000, T.TimestampNTZType()),
    "t_ms": (1000, T.LongType()),
    "t_s": (1, T.LongType()),
}


@pytest.fixture(scope="module")
def events(spark):
    """The view "events": user, region, several time columns of the same instants, amount."""
    rows = h.random_rows(2024, 400, size=SIZE_SECONDS, t_lo=-7200, t_hi=7200,
                         keys=["ann", "bob", "cy", "dee"], null_time=0.03)
    df = spark.createDataFrame(rows, h.ROW_SCHEMA).select(
        "id",
        F.col("k").alias("user"),
        F.when(F.col("k2") == 1, "eu").otherwise("us").alias("region"),
        F.timestamp_seconds("t").alias("ts"),
        F.timestamp_seconds("t").cast("timestamp_ntz").alias("ts_ntz"),
        (F.col("t") * 1000).alias("t_ms"),
        F.col("t").cast("int").alias("t_s"),
        F.col("v").alias("amount"),
        "page",
    )
    df.createOrReplaceTempView("events")
    yield rows
    spark.catalog.dropTempView("events")


def oracle(rows, time_column, keys):
    """{(key tuple, start ticks, end ticks): members} for the given time column and keys."""
    scale = TIME_COLUMNS[time_column][0]
    key_funcs = {"user": lambda r: r[h.K], "region": lambda r: REGION[r[h.K2]]}
    return bf.sliding_windows(
        rows,
        SIZE_SECONDS * scale,
        key=lambda r: tuple(key_funcs[k](r) for k in keys),
        time=lambda r: None if r[h.TIME] is None else r[h.TIME] * scale,
    )


def ticks(column_name, time_column):
    col = F.col(column_name)
    if time_column == "ts":
        return F.unix_micros(col)
    if time_column == "ts_ntz":
        return F.unix_micros(col.cast("timestamp"))
    return col


def check(result, rows, time_column, keys, start_col, end_col):
    got = h.collect_by_window(result, keys, ticks(start_col, time_column), ticks(end_col, time_column),
                              ["total", "n"])
    expected = oracle(rows, time_column, keys)
    h.assert_same_windows(got, expected)
    h.assert_values(
        got,
        {w: {"total": bf.agg_sum([r[h.V] for r in m]), "n": len(m)} for w, m in expected.items()},
        ["total", "n"],
    )


@pytest.mark.parametrize(
    "time_column, size_args",
    [
        ("ts", "INTERVAL '10' MINUTE"),
        ("ts", "'10 minutes'"),
        ("ts_ntz", "INTERVAL '10' MINUTE"),
        ("t_ms", "600000"),
        ("t_ms", "INTERVAL '10' MINUTE, 'milliseconds'"),
        ("t_s", "600, 'seconds'"),
        ("t_s", "'10 minutes', 'seconds'"),
    ],
)
def test_group_by_sliding_window(spark, events, time_column, size_args):
    result = spark.sql(
        f"SELECT user, window.start, window.end, sum(amount) AS total, count(1) AS n "
        f"FROM events GROUP BY user, sliding_window({time_column}, {size_args})"
    )
    assert result.columns == ["user", "start", "end", "total", "n"]
    assert result.schema["start"].dataType == TIME_COLUMNS[time_column][1]
    assert result.schema["end"].dataType == TIME_COLUMNS[time_column][1]
    check(result, events, time_column, ["user"], "start", "end")


def test_group_by_several_keys_in_sql(spark, events):
    result = spark.sql(
        "SELECT user, region, window.start AS s, window.end AS e, sum(amount) AS total, count(*) AS n "
        "FROM events GROUP BY user, region, sliding_window(ts, INTERVAL '10' MINUTE)"
    )
    check(result, events, "ts", ["user", "region"], "s", "e")


def sliding_reference(spark, rows):
    """The oracle's sliding windows of 10 minutes per user."""
    windows = oracle(rows, "ts", ["user"])
    return collections.Counter((user, start, end, len(m)) for ((user,), start, end), m in windows.items())


def session_reference(spark, rows):
    """Spark's session_window, gap 10 minutes, its bounds as windowagg's [first, last] (docs/semantics.md)."""
    timed = spark.table("events").where("ts IS NOT NULL")
    sessions = timed.groupBy("user", F.session_window("ts", "10 minutes")).agg(
        F.unix_micros(F.min("ts")), F.unix_micros(F.max("ts")), F.count("*"))
    return collections.Counter(tuple(r) for r in sessions.drop("session_window").collect())


def count_reference(spark, rows):
    """Spark's frame ROWS BETWEEN 2 PRECEDING AND CURRENT ROW at every row with a time: from the first row's time
    to the row's, and how many rows (neither depends on how rows of equal times are ordered)."""
    frame = Window.partitionBy("user").orderBy("ts").rowsBetween(-2, Window.currentRow)
    windows = spark.table("events").where("ts IS NOT NULL").select(
        "user", F.unix_micros(F.min("ts").over(frame)).alias("start"), F.unix_micros("ts").alias("end"),
        F.count("*").over(frame).alias("n"))
    return collections.Counter(tuple(r) for r in windows.collect())


@pytest.mark.parametrize(
    "grouping, reference",
    [
        ("sliding_window(ts, INTERVAL '10' MINUTE)", sliding_reference),
        ("windows(ts, 'session gap 10 minutes')", session_reference),
        ("windows(ts, 'count 3 rows')", count_reference),
    ],
    ids=["sliding", "session", "count"],
)
def test_grouping_functions_given_as_expressions_give_a_column_named_window(spark, events, grouping, reference):
    result = spark.table("events").groupBy("user", F.expr(grouping)).count()
    assert result.columns == ["user", "window", "count"]
    got = result.select("user", F.unix_micros("window.start"), F.unix_micros("window.end"), "count").collect()
    expected = reference(spark, events)
    assert len(expected) >= 20  # several windows of each user
    assert collections.Counter(tuple(r) for r in got) == expected


@pytest.mark.parametrize(
    "partitioning, keys",
    [
        ("PARTITION BY user", ["user"]),
        ("PARTITION BY (user, region)", ["user", "region"]),
        ("WITH SINGLE PARTITION", []),
    ],
)
def test_table_function_partitioning(spark, events, partitioning, keys):
    result = spark.sql(
        f"SELECT * FROM sliding_window_agg(TABLE(events) {partitioning} ORDER BY (ts), "
        "INTERVAL '10' MINUTE, 'sum(amount) AS total, count(1) AS n')"
    )
    assert result.columns == [*keys, "window_start", "window_end", "total", "n"]
    assert result.schema["window_start"].dataType == T.TimestampType()
    check(result, events, "ts", keys, "window_start", "window_end")


@pytest.mark.parametrize(
    "time_column, size, unit",
    [
        ("ts", "'10 minutes'", None),
        ("ts_ntz", "INTERVAL '10' MINUTE", None),
        ("t_ms", "600000", None),
        ("t_ms", "'10 minutes'", "'milliseconds'"),
        ("t_ms", "600000", "'milliseconds'"),
        ("t_s", "600", "'seconds'"),
        ("t_s", "INTERVAL '10' MINUTE", "'seconds'"),
    ],
)
def test_table_function_sizes_and_time_units(spark, events, time_column, size, unit):
    unit_arg = "" if unit is None else f", {unit}"
    result = spark.sql(
        f"SELECT * FROM sliding_window_agg(TABLE(events) PARTITION BY user ORDER BY ({time_column}), "
        f"{size}, 'sum(amount) AS total, count(1) AS n'{unit_arg})"
    )
    assert result.columns == ["user", "window_start", "window_end", "total", "n"]
    assert result.schema["window_end"].dataType == TIME_COLUMNS[time_column][1]
    check(result, events, time_column, ["user"], "window_start", "window_end")


def test_table_function_order_sensitive_and_filtered_aggregates(spark, events):
    result = spark.sql(
        "SELECT * FROM sliding_window_agg(TABLE(events) PARTITION BY user ORDER BY (t_ms), 600000, "
        "'collect_list(id) AS ids, first(id) AS first_id, last(id) AS last_id, "
        "count_if(amount > 20) AS big, max(amount) AS top')"
    )
    assert result.columns == ["user", "window_start", "window_end", "ids", "first_id", "last_id", "big", "top"]
    got = h.collect_by_window(result, ["user"], F.col("window_start"), F.col("window_end"),
                              ["ids", "first_id", "last_id", "big", "top"])
    expected = oracle(events, "t_ms", ["user"])
    h.assert_same_windows(got, expected)
    h.assert_time_ordered_lists(got, expected, {r[h.ID]: r[h.TIME] for r in events})
    h.assert_values(
        got,
        {
            w: {
                "big": sum(1 for r in m if r[h.V] is not None and r[h.V] > 20),
                "top": bf.agg_max([r[h.V] for r in m]),
            }
            for w, m in expected.items()
        },
        ["big", "top"],
    )


def test_filter_clauses_in_sql(spark, events):
    """FILTER (WHERE ...) in both SQL forms, on a column that is neither key nor aggregated."""
    expected = oracle(events, "t_ms", ["user"])
    want = {w: {"eu_max": bf.agg_max([r[h.V] for r in m if r[h.K2] == 1]),
                "n": len(m)} for w, m in expected.items()}
    by_group = spark.sql(
        "SELECT user, window.start AS s, window.end AS e, "
        "max(amount) FILTER (WHERE region = 'eu') AS eu_max, count(1) AS n "
        "FROM events GROUP BY user, sliding_window(t_ms, 600000)"
    )
    got = h.collect_by_window(by_group, ["user"], F.col("s"), F.col("e"), ["eu_max", "n"])
    h.assert_same_windows(got, expected)
    h.assert_values(got, want, ["eu_max", "n"])
    by_table = spark.sql(
        "SELECT * FROM sliding_window_agg(TABLE(events) PARTITION BY user ORDER BY (t_ms), 600000, "
        "\"max(amount) FILTER (WHERE region = 'eu') AS eu_max, count(1) AS n\")"
    )
    got = h.collect_by_window(by_table, ["user"], F.col("window_start"), F.col("window_end"), ["eu_max", "n"])
    h.assert_same_windows(got, expected)
    h.assert_values(got, want, ["eu_max", "n"])
