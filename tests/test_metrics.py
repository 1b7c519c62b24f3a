"""Rows with a null time are not windowed but counted; windowagg.metrics reads the counts."""

import pytest
from pyspark.sql import functions as F

import helpers as h
from windowagg import SlidingWindows, metrics, window


@pytest.mark.parametrize("kind", ["bigint", "timestamp"])
def test_null_time_rows_are_skipped_and_counted(spark, kind):
    size_ticks = 40 if kind == "bigint" else 40_000
    rows = h.random_rows(99, 250, size=size_ticks, t_lo=-50 * size_ticks, t_hi=50 * size_ticks, null_time=0.2)
    null_times = sum(1 for r in rows if r[h.TIME] is None)
    assert null_times > 10
    df = h.make_df(spark, rows, kind)
    size = size_ticks if kind == "bigint" else "40 ms"
    result = (
        df.groupBy("k", window("ts", SlidingWindows.of(size)))
        .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("sv"))
        .select("k", h.to_ticks(F.col("window.start"), kind).alias("s"),
                h.to_ticks(F.col("window.end"), kind).alias("e"), "n", "sv")
    )
    collected = result.collect()  # the action whose metrics are read below

    expected = h.expected_windows(rows, size_ticks, ["k"])
    got = {((r["k"],), r["s"], r["e"]): {"n": r["n"], "sv": r["sv"]} for r in collected}
    h.assert_same_windows(got, expected)
    h.assert_values(got, {w: h.python_aggregates(m) for w, m in expected.items()}, ["n", "sv"])

    m = metrics(result)
    assert {"inputRows", "nullTimeRows", "windows"} <= set(m)
    assert all(isinstance(v, int) for v in m.values())
    assert m["nullTimeRows"] == null_times
    assert m["windows"] == len(expected)
    assert m["inputRows"] == len(rows)


def test_metrics_without_null_times(spark):
    df = spark.createDataFrame([(10,), (14,), (15,)], "t bigint")
    result = df.groupBy(window("t", SlidingWindows.of(10))).count()
    assert len(result.collect()) == 5
    m = metrics(result)
    assert (m["inputRows"], m["nullTimeRows"], m["windows"]) == (3, 0, 5)


def test_metrics_of_a_sql_query(spark):
    spark.createDataFrame([(1, None), (1, 10), (2, None), (2, 11)], "k int, t bigint").createOrReplaceTempView(
        "metric_events"
    )
    try:
        result = spark.sql(
            "SELECT * FROM sliding_window_agg(TABLE(metric_events) PARTITION BY k ORDER BY (t), 5, 'count(1) AS n')"
        )
        assert sorted((r.k, r.window_start, r.n) for r in result.collect()) == [(1, 5, 1), (2, 6, 1)]
        m = metrics(result)
        assert (m["inputRows"], m["nullTimeRows"], m["windows"]) == (4, 2, 2)
    finally:
        spark.catalog.dropTempView("metric_events")
