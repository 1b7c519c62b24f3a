"""A Python user's own aggregates over windowagg windows: grouped-aggregate pandas UDFs
(``@pandas_udf``, Series -> scalar) and Arrow UDFs (``arrow_udf``), in batch, for every kind.

Each window's UDF must get exactly that window's rows, in time order. Two UDFs tell: one returns the
ids it was given, in the order given; one computes a weighted median. They are checked on random
rows against the naive oracles of brute_force.py (time windows, sliding windows) and, for every
kind, against the same windows computed with built-in aggregates only (whose windows the
conformance suites check against brute force): the same windows, each UDF fed the window's members
in time order, the built-in aggregates beside the UDFs unchanged. Windows that are spans of time take
one way (the UDF called on slices of each key's rows), Storm's, listed windows and sessions whose gap a
column gives the other (each window's rows collected); both are checked here.
"""

import random
import sys

import pytest
from pyspark import cloudpickle
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

import brute_force as bf
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
    expired_rows,
    new_rows,
    window,
)

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")

# Spark's Python workers cannot import this module: the UDFs and PythonWindows' function travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SECOND = 1_000_000  # microseconds
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
START = 1_704_067_200 * SECOND  # 2024-01-01 00:00 UTC, a Monday
BUSINESS_DAYS = "windowagg.examples.BusinessDays"


def weighted_median(values, weights):
    """The smallest value whose weight, with all smaller values' (ties by weight), reaches half the total."""
    order = np.lexsort((np.asarray(weights), np.asarray(values)))
    v, w = np.asarray(values)[order], np.asarray(weights)[order]
    return float(v[np.searchsorted(np.cumsum(w), w.sum() / 2)])


def received(ids: "pd.Series") -> str:
    return ",".join(str(i) for i in ids)


def udfs():
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("string")
    def ids_as_given(ids: pd.Series) -> str:
        return received(ids)

    @pandas_udf("double")
    def wmedian(v: pd.Series, w: pd.Series) -> float:
        return weighted_median(v, w)

    return ids_as_given, wmedian


def random_rows(seed, n=400, span=2 * 24 * HOUR):
    """(id, key, time in µs, value, weight): times of many rows repeat, so ties are checked too."""
    rnd = random.Random(seed)
    pool = [START + rnd.randrange(span) // SECOND * SECOND for _ in range(n // 2)]
    return [
        (i, rnd.choice(["a", "b", "c"]), rnd.choice(pool), float(rnd.randrange(50)), float(rnd.randrange(1, 6)))
        for i in range(n)
    ]


def frame(spark, rows):
    df = spark.createDataFrame(rows, "id long, k string, t long, v double, w double")
    gap = F.make_dt_interval(secs=F.lit(600)).alias("gap_s")
    return df.select("id", "k", F.timestamp_micros("t").alias("ts"), "v", "w", gap)


def six_hours_and_days(times):
    """PythonWindows: each time's 6 hours and its day (overlapping windows)."""
    positions = np.arange(len(times))
    six, day = times.dt.floor("6h"), times.dt.floor("D")
    return pd.DataFrame({
        "row": np.concatenate([positions, positions]),
        "start": pd.concat([six, day], ignore_index=True),
        "end": pd.concat([six + pd.Timedelta("6h"), day + pd.Timedelta("1D")], ignore_index=True),
    })


def kinds(spark):
    periods = spark.createDataFrame(
        [(0, 3), (2, 20), (2, 20), (13, 14), (30, 60)], "s long, e long"
    ).select(
        F.timestamp_micros(F.lit(START) + F.col("s") * HOUR).alias("start"),
        F.timestamp_micros(F.lit(START) + F.col("e") * HOUR).alias("end"),
    )
    return {
        "tumbling": TimeWindows.of("6 hours"),
        "hopping": TimeWindows.of("6 hours").advanceBy("2 hours").withOffset("30 minutes"),
        "cumulative": CumulativeWindows.of("2 hours", "12 hours"),
        "sliding": SlidingWindows.of("3 hours"),
        "session": SessionWindows.withInactivityGap("20 minutes"),
        "dynamic session": SessionWindows.withDynamicGap("gap_s"),
        "calendar": CalendarWindows.days(1).inZone("America/New_York"),
        "unlimited": UnlimitedWindows.of(),
        "count": CountWindows.of(5).slide(2).tieBreak("id"),
        "duration": DurationWindows.of("4 hours").every("1 hour").tieBreak("id"),
        "custom": CustomWindows.of(BUSINESS_DAYS),
        "python": PythonWindows.of(six_hours_and_days, "1 day"),
        "table": TableWindows.of(periods),
    }


KINDS = ["tumbling", "hopping", "cumulative", "sliding", "session", "dynamic session", "calendar", "unlimited",
         "count", "duration", "custom", "python", "table"]


def with_bounds(result):
    """The result with its window's bounds as microseconds since the epoch (ws, we)."""
    return result.withColumn("ws", F.unix_micros("window.start")).withColumn("we", F.unix_micros("window.end"))


def check_udf_rows(row, members, time_of):
    """The UDFs' values for one window, against its members (ids), ties in time in any order."""
    given = [int(i) for i in row["given"].split(",")]
    assert sorted(given) == sorted(members), (row, members)
    times = [time_of[i] for i in given]
    assert times == sorted(times), f"rows not in time order: {given}"
    assert row["n"] == len(members)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_gives_each_udf_its_windows_rows_in_time_order(spark, kind):
    ids_as_given, wmedian = udfs()
    rows = random_rows(seed=KINDS.index(kind))
    by_id = {r[0]: r for r in rows}
    df = frame(spark, rows)
    definition = kinds(spark)[kind]
    builtins = [F.count(F.lit(1)).alias("n"), F.sum("v").alias("s"), F.max_by("id", "v").alias("top")]
    with_udfs = df.groupBy("k", window("ts", definition)).agg(
        *builtins,
        ids_as_given("id").alias("given"),
        wmedian("v", "w").alias("m"),
        (wmedian("w", "v") + F.max("v")).alias("mixed"),
    )
    alone = df.groupBy("k", window("ts", definition)).agg(
        *builtins, F.collect_list("id").alias("members"), F.max("v").alias("max_v")
    )

    def by_window(result):
        found = {}
        for r in with_bounds(result).collect():
            d = r.asDict()
            members = sorted(d["members"]) if "members" in d else sorted(int(i) for i in d["given"].split(","))
            found[(d["k"], d["ws"], d["we"], tuple(members))] = d
        return found

    got, expected = by_window(with_udfs), by_window(alone)
    assert len(expected) >= 3  # one window per key at least (unlimited windows)
    assert sorted(got) == sorted(expected)
    time_of = {i: r[2] for i, r in by_id.items()}
    for window_id, row in got.items():
        members = list(window_id[3])
        check_udf_rows(row, members, time_of)
        reference = expected[window_id]
        assert (row["n"], row["s"], row["top"]) == (reference["n"], reference["s"], reference["top"])
        vs, ws = [by_id[i][3] for i in members], [by_id[i][4] for i in members]
        assert row["m"] == weighted_median(vs, ws)
        assert row["mixed"] == weighted_median(ws, vs) + reference["max_v"]


@pytest.mark.parametrize(
    "kind,windows_of",
    [
        ("tumbling", lambda: bf.time_windows_for(6 * HOUR, 6 * HOUR)),
        ("hopping", lambda: bf.time_windows_for(6 * HOUR, 2 * HOUR, 30 * MINUTE)),
        ("cumulative", lambda: bf.cumulative_windows_for(2 * HOUR, 12 * HOUR)),
        ("sliding", None),
    ],
)
@pytest.mark.parametrize("seed", [11, 12])
def test_udf_values_equal_pandas_over_the_oracles_windows(spark, kind, windows_of, seed):
    ids_as_given, wmedian = udfs()
    rows = random_rows(seed, n=300)
    out = frame(spark, rows).groupBy("k", window("ts", kinds(spark)[kind])).agg(
        ids_as_given("id").alias("given"), wmedian("v", "w").alias("m"), F.count(F.lit(1)).alias("n")
    )
    if windows_of is None:
        oracle = bf.sliding_windows(rows, 3 * HOUR, key=lambda r: r[1], time=lambda r: r[2])
    else:
        oracle = bf.enumerated_windows(rows, windows_of(), key=lambda r: r[1], time=lambda r: r[2])
    got = {(r.k, r.ws, r.we): r.asDict() for r in with_bounds(out).collect()}
    assert sorted(got) == sorted(oracle)
    time_of = {r[0]: r[2] for r in rows}
    for window_id, members in oracle.items():
        row = got[window_id]
        check_udf_rows(row, [m[0] for m in members], time_of)
        assert row["m"] == weighted_median([m[3] for m in members], [m[4] for m in members])


def test_an_arrow_udf_and_sql_with_a_registered_udf(spark):
    from pyspark.sql.functions import arrow_udf
    import pyarrow as pa
    import pyarrow.compute as pc

    @arrow_udf("double")
    def spread(v: pa.Array) -> float:
        return pc.max(v).as_py() - pc.min(v).as_py()

    _, wmedian = udfs()
    rows = random_rows(seed=5, n=200)
    df = frame(spark, rows)
    df.createOrReplaceTempView("udf_events")
    spark.udf.register("wmedian", wmedian)
    spark.udf.register("spread", spread)
    windows = SlidingWindows.of("3 hours")
    bounds = [F.unix_micros("window.start").alias("start"), F.unix_micros("window.end").alias("end")]
    by_api = df.groupBy("k", window("ts", windows)).agg(spread("v").alias("r"), F.sum("v").alias("s")).select(
        "k", *bounds, "r", "s"
    )
    by_sql = spark.sql(
        "SELECT k, unix_micros(window.start) AS start, unix_micros(window.end) AS end, spread(v) AS r, sum(v) AS s "
        "FROM udf_events GROUP BY k, windows(ts, 'sliding 3 hours')"
    )
    by_table_function = spark.sql(
        "SELECT k, unix_micros(window_start) AS start, unix_micros(window_end) AS end, r, s FROM window_agg("
        "TABLE(udf_events) PARTITION BY k ORDER BY (ts), 'sliding 3 hours', 'spread(v) AS r, sum(v) AS s')"
    )
    expected = sorted(map(tuple, by_api.collect()))
    assert len(expected) > 50
    assert sorted(map(tuple, by_sql.collect())) == expected
    assert sorted(map(tuple, by_table_function.collect())) == expected
    oracle = bf.sliding_windows(rows, 3 * HOUR, key=lambda r: r[1], time=lambda r: r[2])
    assert expected == sorted(
        (k, start, end, max(m[3] for m in ms) - min(m[3] for m in ms), sum(m[3] for m in ms))
        for (k, start, end), ms in oracle.items()
    )
    medians = spark.sql(
        "SELECT unix_micros(window.start) AS start, wmedian(v, w) AS m FROM udf_events "
        "GROUP BY k, windows(ts, 'sliding 3 hours')"
    )
    assert sorted(r.m for r in medians.collect()) == sorted(
        weighted_median([m[3] for m in ms], [m[4] for m in ms]) for ms in oracle.values()
    )
    # Spark computes one kind of Python aggregate UDF in one aggregation
    with pytest.raises(AnalysisException) as info:
        df.groupBy("k", window("ts", windows)).agg(spread("v"), wmedian("v", "w"))
    assert "spread" in str(info.value) and "wmedian" in str(info.value) and "different kinds" in str(info.value)


def test_keys_and_values_pass_through_exactly(spark):
    """Float keys (-0.0 and NaN are not normalized), map values and a key computed from columns
    come out of the windows as they do without a UDF."""
    _, wmedian = udfs()
    rows = [(i, [0.0, -0.0, float("nan"), 1.5][i % 4], START + (i % 7) * MINUTE, float(i), 1.0) for i in range(40)]
    df = spark.createDataFrame(rows, "id long, k double, t long, v double, w double").select(
        "id", "k", F.timestamp_micros("t").alias("ts"), "v", "w"
    )
    aggs = [F.map_from_entries(F.collect_list(F.struct("id", "v"))).alias("by_id"), F.first("k").alias("first_k")]
    keys = ["k", (F.col("id") % 2).alias("parity")]
    with_udf = df.groupBy(*keys, window("ts", TimeWindows.of("3 minutes"))).agg(*aggs, wmedian("v", "w").alias("m"))
    alone = df.groupBy(*keys, window("ts", TimeWindows.of("3 minutes"))).agg(*aggs)

    def as_text(result, names):
        return sorted(repr([r[n] for n in names]) for r in result.collect())

    names = ["k", "parity", "window", "by_id", "first_k"]
    assert as_text(with_udf, names) == as_text(alone, names)
    assert {repr(r.k) for r in with_udf.collect()} == {"0.0", "-0.0", "nan", "1.5"}


def test_a_key_less_aggregation(spark):
    ids_as_given, _ = udfs()
    rows = random_rows(seed=7, n=120)
    out = frame(spark, rows).groupBy(window("ts", SessionWindows.withInactivityGap("30 minutes"))).agg(
        ids_as_given("id").alias("given"), F.count(F.lit(1)).alias("n")
    )
    got = out.collect()
    assert sum(r.n for r in got) == len(rows)
    time_of = {r[0]: r[2] for r in rows}
    for r in got:
        given = [int(i) for i in r.given.split(",")]
        assert len(given) == r.n and [time_of[i] for i in given] == sorted(time_of[i] for i in given)


@pytest.mark.parametrize("kind", ["count", "duration"])
@pytest.mark.parametrize("view", [new_rows, expired_rows], ids=["new", "expired"])
def test_storm_views_give_a_udf_the_new_or_expired_rows(spark, kind, view):
    """Under Storm's new_rows / expired_rows a UDF gets the rows the view holds, in time order, the
    same rows collect_list gets under it; a window whose view holds none gets null, the UDF not called."""
    ids_as_given, wmedian = udfs()
    rows = random_rows(seed=21, n=160)
    by_id = {r[0]: r for r in rows}
    out = frame(spark, rows).groupBy("k", window("ts", kinds(spark)[kind])).agg(
        view(ids_as_given("id")).alias("given"),
        view(wmedian("v", "w")).alias("m"),
        view(F.collect_list("id")).alias("members"),
        F.count(F.lit(1)).alias("n"),
    )
    got = with_bounds(out).collect()
    assert sum(1 for r in got if r.members) >= 10
    if view is expired_rows:
        assert any(not r.members for r in got)  # the first windows of a key expire nothing
    time_of = {i: r[2] for i, r in by_id.items()}
    for r in got:
        if not r.members:
            assert r.given is None and r.m is None, r
            continue
        given = [int(i) for i in r.given.split(",")]
        assert sorted(given) == sorted(r.members), r
        assert [time_of[i] for i in given] == sorted(time_of[i] for i in given), r
        assert r.m == weighted_median([by_id[i][3] for i in r.members], [by_id[i][4] for i in r.members])
    # every window is there, as without the UDFs
    alone = frame(spark, rows).groupBy("k", window("ts", kinds(spark)[kind])).agg(F.count(F.lit(1)).alias("n"))
    assert sorted((r.k, r.window, r.n) for r in got) == sorted(map(tuple, alone.collect()))


def test_what_a_pandas_udf_is_not_given_is_refused_by_name(spark):
    ids_as_given, wmedian = udfs()
    df = frame(spark, random_rows(seed=3, n=20))
    with pytest.raises(AnalysisException) as info:
        df.groupBy("k", window("ts", CountWindows.of(3).tieBreak("id"))).agg(
            expired_rows(wmedian("v", "w")), ids_as_given("id")
        ).collect()
    text = str(info.value)
    assert "wmedian" in text and "expired" in text and "ids_as_given" in text and "different rows" in text


def test_a_udf_returning_another_type_is_named_in_the_error(spark):
    """Spark converts a UDF's values to its declared type after it returns: a value that does not
    convert fails the query, naming the UDF where windowagg calls it on slices (windows that are spans
    of time); where Spark's own Python aggregation calls it (Storm's windows), as over Spark's window()."""
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("double")
    def not_a_number(v: pd.Series) -> float:
        return "many"

    df = frame(spark, random_rows(seed=9, n=40))
    for definition, named in [(TimeWindows.of("1 hour"), "not_a_number"), (CountWindows.of(4).tieBreak("id"), "_0")]:
        with pytest.raises(Exception) as info:
            df.groupBy("k", window("ts", definition)).agg(not_a_number("v"), F.count(F.lit(1))).collect()
        assert f"column '{named}'" in str(info.value) and "'double'" in str(info.value), definition


def plan_of(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_windows_of_spans_of_time_call_the_udf_on_slices_of_each_keys_rows(spark):
    """Each key's rows go to Python once, beside its windows, where the windows are spans of time and
    the input gives the same rows each time it is read; the other windows' rows are collected."""
    _, wmedian = udfs()
    df = frame(spark, random_rows(seed=9, n=60))
    for definition, sliced in [
        (SlidingWindows.of("1 hour"), True),
        (SessionWindows.withInactivityGap("20 minutes"), True),
        (CountWindows.of(5).tieBreak("id"), False),
        (SessionWindows.withDynamicGap("gap_s"), False),
    ]:
        plan = plan_of(df.groupBy("k", window("ts", definition)).agg(wmedian("v", "w")))
        assert ("FlatMapCoGroupsInPandas" in plan) == sliced, plan
        assert ("ArrowAggregatePython" in plan) != sliced, plan
    # arguments given by name are passed by name, by Spark's Python aggregation
    by_name = df.groupBy("k", window("ts", SlidingWindows.of("1 hour"))).agg(
        wmedian(w=F.col("w"), v=F.col("v")).alias("m")
    )
    assert "ArrowAggregatePython" in plan_of(by_name)
    by_position = df.groupBy("k", window("ts", SlidingWindows.of("1 hour"))).agg(wmedian("v", "w").alias("m"))
    assert sorted(map(tuple, by_name.collect())) == sorted(map(tuple, by_position.collect()))
    random_values = df.withColumn("v", F.rand(3))
    plan = plan_of(random_values.groupBy("k", window("ts", SlidingWindows.of("1 hour"))).agg(wmedian("v", "w")))
    assert "FlatMapCoGroupsInPandas" not in plan and "ArrowAggregatePython" in plan


def test_a_failing_udf_names_the_key_and_window_it_failed_on(spark):
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("double")
    def picky(v: pd.Series) -> float:
        if (v == 13.0).any():
            raise ValueError("13 is unlucky")
        return float(v.sum())

    rows = [(i, "a" if i < 5 else "b", START + i * MINUTE, float(i + 9), 1.0) for i in range(10)]
    df = frame(spark, rows)
    with pytest.raises(Exception) as info:
        df.groupBy("k", window("ts", TimeWindows.of("3 minutes"))).agg(picky("v")).collect()
    text = str(info.value)
    # row 4 (v 13) is key a's, at 00:04, in the window from 00:03 to 00:06
    window_ = "the window from 2024-01-01 00:03:00 UTC to 2024-01-01 00:06:00 UTC"
    assert f"picky failed on {window_} of the key ('a',)" in text, text
    assert "13 is unlucky" in text


def test_a_key_whose_rows_exceed_an_arrow_batch(spark):
    """A key's rows reach Python in several Arrow batches (50 rows each here) and are one key's rows still."""
    ids_as_given, wmedian = udfs()
    rows = [(i, "a", START + (i // 3) * MINUTE, float(i % 17), 1.0 + i % 3) for i in range(400)]
    df = frame(spark, rows)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "50")
    try:
        got = with_bounds(df.groupBy("k", window("ts", SlidingWindows.of("2 hours"))).agg(
            ids_as_given("id").alias("given"), wmedian("v", "w").alias("m"), F.count(F.lit(1)).alias("n")
        )).collect()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    oracle = bf.sliding_windows(rows, 2 * HOUR, key=lambda r: r[1], time=lambda r: r[2])
    assert max(len(m) for m in oracle.values()) > 50
    assert sorted((r.ws, r.we) for r in got) == sorted((s, e) for _, s, e in oracle)
    time_of = {r[0]: r[2] for r in rows}
    for r in got:
        members = oracle[("a", r.ws, r.we)]
        check_udf_rows(r.asDict(), [m[0] for m in members], time_of)
        assert r.m == weighted_median([m[3] for m in members], [m[4] for m in members])
