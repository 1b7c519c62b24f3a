"""The DataFrame API, groupBy(..., window(ts, SlidingWindows.of(S))), against the oracle."""

import datetime
import zlib

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F
from pyspark.sql import types as T

import brute_force as bf
import helpers as h
from windowagg import SlidingWindows, window

ALL_AGG_NAMES = ["n", "nv", "sv", "minv", "maxv", "avgv", "cif"]


def run_windowagg(df, keys, definition, kind, time_unit=None):
    """groupBy(keys, window) with every aggregate; returns (result df, collected dict).

    Integral times are in milliseconds unless `time_unit` says otherwise."""
    if time_unit is None and kind in h.INTEGRAL_KINDS:
        time_unit = "milliseconds"
    result = df.groupBy(*keys, window("ts", definition, time_unit)).agg(
        *h.windowagg_aggregates(), *h.reference_aggregates()
    )
    names = [c for c in result.columns if c not in (*keys, "window")]
    got = h.collect_by_window(
        result, keys, h.to_ticks(F.col("window.start"), kind), h.to_ticks(F.col("window.end"), kind), names
    )
    return result, got


def check_against_oracle(spark, rows, df, keys, size_ticks, got):
    expected = h.expected_windows(rows, size_ticks, keys)
    h.assert_same_windows(got, expected)
    h.assert_values(got, {w: h.python_aggregates(m) for w, m in expected.items()}, ALL_AGG_NAMES)
    h.assert_time_ordered_lists(got, expected, {r[h.ID]: r[h.TIME] for r in rows})
    reference = h.reference_by_groupby(spark, df, expected, keys, h.reference_aggregates())
    h.assert_same_windows(reference, expected)
    h.assert_values(got, reference, list(next(iter(reference.values())).keys()))
    return expected


# (kind, tick range, size in ticks, the size as given to SlidingWindows.of)
CASES = [
    ("bigint", (-2000, 2000), 37, 37),
    ("bigint", (-500, 500), 1, "1 millisecond"),
    ("bigint", (-5000, 5000), 250, datetime.timedelta(milliseconds=250)),
    ("int", (-2000, 2000), 100, "100 ms"),
    ("smallint", (-3000, 3000), 500, "0.5 seconds"),
    ("tinyint", (-128, 127), 10, 10),
    ("timestamp", (-5_000_000, 5_000_000), 1_000_000, "1 second"),
    ("timestamp", (-400_000, 400_000), 25_000, datetime.timedelta(milliseconds=25)),
    ("timestamp_ntz", (-5_000_000, 5_000_000), 1_000_000, "1 second"),
]


@pytest.mark.parametrize("kind, span, size_ticks, size", CASES)
@pytest.mark.parametrize("keys", [("k",), ("k", "k2")])
def test_random_data_matches_the_contract(spark, kind, span, size_ticks, size, keys):
    seed = zlib.crc32(repr((kind, span, size_ticks, keys)).encode())
    rows = h.random_rows(seed, 300, size=size_ticks, t_lo=span[0], t_hi=span[1])
    df = h.make_df(spark, rows, kind)
    result, got = run_windowagg(df, keys, SlidingWindows.of(size), kind)
    window_type = result.schema["window"].dataType
    assert isinstance(window_type, T.StructType)
    assert [f.name for f in window_type.fields] == ["start", "end"]
    assert all(f.dataType == h.expected_type(kind) for f in window_type.fields)
    check_against_oracle(spark, rows, df, keys, size_ticks, got)


@pytest.mark.parametrize("seed", [1, 2])
def test_no_grouping_key(spark, seed):
    rows = h.random_rows(seed, 150, size=20, t_lo=-300, t_hi=300, null_time=0.05)
    df = h.make_df(spark, rows, "bigint")
    _, got = run_windowagg(df, [], SlidingWindows.of(20), "bigint")
    check_against_oracle(spark, rows, df, [], 20, got)


def test_many_duplicate_times_and_a_dense_key(spark):
    rows = h.random_rows(7, 400, size=3, t_lo=0, t_hi=12, keys=["hot"], null_key=0.0)
    df = h.make_df(spark, rows, "bigint")
    _, got = run_windowagg(df, ["k"], SlidingWindows.of(3), "bigint")
    check_against_oracle(spark, rows, df, ["k"], 3, got)


def test_semantics_example_epoch_millis(spark):
    """SEMANTICS.md: S = 10 ms, records at 10, 14, 15 ms (hand-checked)."""
    df = spark.createDataFrame([(10,), (14,), (15,)], "t bigint")
    for size in (10, "10 milliseconds", datetime.timedelta(milliseconds=10)):
        rows = (
            df.groupBy(window("t", SlidingWindows.of(size), time_unit="milliseconds"))
            .agg(F.count(F.lit(1)).alias("n"))
            .select("window.start", "window.end", "n")
            .orderBy("start")
            .collect()
        )
        assert [tuple(r) for r in rows] == [(0, 10, 1), (4, 14, 2), (5, 15, 3), (11, 21, 2), (15, 25, 1)]


def test_semantics_example_as_timestamps(spark):
    """The same records as TIMESTAMPs: right windows start 1 µs (the resolution) after a record."""
    df = spark.createDataFrame([(10_000,), (14_000,), (15_000,)], "t bigint").select(
        F.timestamp_micros("t").alias("ts")
    )
    rows = (
        df.groupBy(window("ts", SlidingWindows.of("10 ms")))
        .agg(F.count(F.lit(1)).alias("n"))
        .select(F.unix_micros("window.start").alias("s"), F.unix_micros("window.end").alias("e"), "n")
        .orderBy("s")
        .collect()
    )
    assert [tuple(r) for r in rows] == [
        (0, 10_000, 1),
        (4_000, 14_000, 2),
        (5_000, 15_000, 3),
        (10_001, 20_001, 2),
        (14_001, 24_001, 1),
    ]


def test_single_row(spark):
    df = spark.createDataFrame([("u", -1_000_000)], "k string, t bigint").select(
        "k", F.timestamp_micros("t").alias("ts")
    )
    rows = (
        df.groupBy("k", window(F.col("ts"), SlidingWindows.of("1 second")))
        .agg(F.count(F.lit(1)).alias("n"))
        .select("k", F.unix_micros("window.start").alias("s"), F.unix_micros("window.end").alias("e"), "n")
        .collect()
    )
    assert [tuple(r) for r in rows] == [("u", -2_000_000, -1_000_000, 1)]


def test_empty_input(spark):
    df = spark.createDataFrame([], "k string, t bigint")
    assert df.groupBy("k", window("t", SlidingWindows.of(5))).count().collect() == []


@pytest.mark.parametrize(
    "unit, size, size_ticks",
    [
        ("seconds", "10 seconds", 10),
        ("seconds", 7, 7),
        ("microseconds", "1 ms", 1000),
        ("milliseconds", datetime.timedelta(seconds=2), 2000),
    ],
)
def test_integral_time_units(spark, unit, size, size_ticks):
    rows = h.random_rows(11, 200, size=size_ticks, t_lo=-30 * size_ticks, t_hi=30 * size_ticks)
    df = h.make_df(spark, rows, "bigint")
    _, got = run_windowagg(df, ["k"], SlidingWindows.of(size), "bigint", time_unit=unit)
    check_against_oracle(spark, rows, df, ["k"], size_ticks, got)


def test_integral_time_needs_its_unit_for_durations_not_for_ticks(spark):
    df = spark.createDataFrame([(0,), (1000,)], "t bigint")
    with pytest.raises(AnalysisException, match="give the column's unit as the option timeUnit"):
        df.groupBy(window("t", SlidingWindows.of("1 second"))).count().collect()

    def ends(column):
        return sorted(r.end for r in df.groupBy(column).count().select("window.end").collect())

    # [-1000, 0] and [0, 1000] (left windows), [1, 1001] (right window of 0)
    assert ends(window("t", SlidingWindows.of("1 second"), time_unit="milliseconds")) == [0, 1000, 1001]
    assert ends(window("t", SlidingWindows.of(1000))) == [0, 1000, 1001]


def test_time_column_given_as_a_column_expression(spark):
    rows = h.random_rows(5, 120, size=50, t_lo=-1000, t_hi=1000)
    df = h.make_df(spark, rows, "bigint").withColumnRenamed("ts", "event time")
    result = df.groupBy("k", window(df["event time"], SlidingWindows.of(50))).agg(F.count(F.lit(1)).alias("n"))
    got = h.collect_by_window(result, ["k"], F.col("window.start"), F.col("window.end"), ["n"])
    expected = h.expected_windows(rows, 50, ["k"])
    h.assert_same_windows(got, expected)
    h.assert_values(got, {w: {"n": len(m)} for w, m in expected.items()}, ["n"])


FILTERED = {
    # name: (aggregate with FILTER, the same in Python over a window's member rows)
    "on_grouping_key": ("sum(v) FILTER (WHERE k2 = 1)", lambda m: bf.agg_sum([r[h.V] for r in m if r[h.K2] == 1])),
    "on_other_column": (
        "count(1) FILTER (WHERE page = '/cart')",
        lambda m: sum(1 for r in m if r[h.PAGE] == "/cart"),
    ),
    "on_aggregated_column": ("max(v) FILTER (WHERE v % 2 = 0)",
                             lambda m: bf.agg_max([r[h.V] for r in m if r[h.V] is not None and r[h.V] % 2 == 0])),
    "on_unaggregated_id": ("count(v) FILTER (WHERE id % 3 = 0)",
                lambda m: bf.agg_count([r[h.V] for r in m if r[h.ID] % 3 == 0])),
}


@pytest.mark.parametrize("keys", [("k",), ("k", "k2")])
@pytest.mark.parametrize("name", list(FILTERED))
def test_filter_clauses(spark, keys, name):
    """FILTER (WHERE ...) works whatever columns it references, alone or beside other aggregates."""
    rows = h.random_rows(31, 250, size=25, t_lo=-400, t_hi=400)
    df = h.make_df(spark, rows, "bigint")
    expected = h.expected_windows(rows, 25, keys)
    text, python = FILTERED[name]
    for aggregates in ([F.expr(text).alias("f")], [F.sum("x").alias("other"), F.expr(text).alias("f"), F.count("page")]):
        result = df.groupBy(*keys, window("ts", SlidingWindows.of(25))).agg(*aggregates)
        got = h.collect_by_window(result, keys, F.col("window.start"), F.col("window.end"), ["f"])
        h.assert_same_windows(got, expected)
        h.assert_values(got, {w: {"f": python(m)} for w, m in expected.items()}, ["f"])
