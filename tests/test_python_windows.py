"""PythonWindows: windows a vectorized Python function gives each batch of times, run by Spark's Arrow
Python workers before the shuffle, windowed by the JVM's listed windows.

- Fiscal quarters written with pandas equal the JVM kind windowagg.examples.FiscalQuarters, in UTC
  and in a zone whose daylight-saving changes fall at midnight (a quarter starting at a repeated
  midnight).
- Business hours with holidays, market quarter-hours (on TIMESTAMP_NTZ) and integral epochs equal a
  brute force computing each row's windows in plain Python; windows that overlap, given in the
  ``row, start, end`` form, equal Spark's explode and groupBy.
- Rows in no window and rows with a null time are counted; aggregating before the shuffle or not
  gives the same windows; the SQL grouping function takes the listing last, as on Spark Connect.
- What assign returns is checked (in plain Python, and through Spark for a few), and so are the
  windows (by the JVM), with messages naming the problem.
"""

import datetime
import json
import os
import random
import subprocess
import sys
import zoneinfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.sql import functions as F

from windowagg import CustomWindows, ListedWindows, PythonWindows, metrics, window
from windowagg import _executor

# Spark's Python workers cannot import this test module, so its functions travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
MICROS = datetime.timedelta(microseconds=1)
AGGREGATE_BEFORE_SHUFFLE = "spark.windowagg.aggregateBeforeShuffle"


# --- the assign functions: vectorized, as a user writes them ----------------------------------------


def fiscal_quarters(times: pd.Series) -> pd.DataFrame:
    """Quarters of fiscal years starting in February: pandas' periods of years ending in January."""
    quarters = times.dt.to_period("Q-JAN")
    return pd.DataFrame({"start": quarters.dt.start_time, "end": (quarters + 1).dt.start_time})


HOLIDAYS = pd.to_datetime(["2024-12-24", "2024-12-25", "2024-12-31", "2025-01-01"])
HOLIDAY_DATES = set(HOLIDAYS.to_pydatetime())


def business_hours(times: pd.Series) -> pd.DataFrame:
    """09:00 to 17:00 on weekdays that are not holidays."""
    day = times.dt.normalize()
    opens, closes = day + pd.Timedelta("9h"), day + pd.Timedelta("17h")
    open_ = (times.dt.weekday < 5) & ~day.isin(HOLIDAYS) & (times >= opens) & (times < closes)
    return pd.DataFrame({"start": opens.where(open_), "end": closes.where(open_)})


def market_quarter_hours(times: pd.Series) -> pd.DataFrame:
    """Every 15 minutes from 09:30 to 16:00 on weekdays."""
    start = times.dt.floor("15min")
    since_midnight = times - times.dt.normalize()
    open_ = (times.dt.weekday < 5) & (since_midnight >= pd.Timedelta("9h30min")) & (since_midnight < pd.Timedelta("16h"))
    return pd.DataFrame({"start": start.where(open_), "end": (start + pd.Timedelta("15min")).where(open_)})


def hour_and_day(times: pd.Series) -> pd.DataFrame:
    """Two windows per time, its hour and its day, in the row form."""
    positions = np.arange(len(times))
    hour, day = times.dt.floor("h"), times.dt.floor("D")
    return pd.DataFrame({
        "row": np.concatenate([positions, positions]),
        "start": pd.concat([hour, day], ignore_index=True),
        "end": pd.concat([hour + pd.Timedelta("1h"), day + pd.Timedelta("1D")], ignore_index=True),
    })


def whole_seconds_after_the_epoch(times: pd.Series) -> pd.DataFrame:
    """Epoch milliseconds: the second of a time from 1970 on; earlier times are in no window."""
    start = (times // 1000 * 1000).astype("Int64").where(times >= 0)
    return pd.DataFrame({"start": start, "end": start + 1000})


# --- the brute force: each row's windows in plain Python ---------------------------------------------


def micros_of(moment):
    """An aware datetime as epoch microseconds."""
    return (moment - EPOCH) // MICROS


def local_of(micros, zone):
    return (EPOCH + micros * MICROS).astimezone(zone).replace(tzinfo=None)


def micros_of_local(local, zone):
    """As java.time reads a local time: a skipped or repeated one with the offset before the change."""
    return micros_of(local.replace(tzinfo=zone, fold=0))


def fiscal_quarter_of(local):
    months = local.year * 12 + local.month - 1
    first = months - (local.month - 2) % 3
    return [tuple(datetime.datetime(m // 12, m % 12 + 1, 1) for m in (first, first + 3))]


def business_hours_of(local):
    day = datetime.datetime(local.year, local.month, local.day)
    if day.weekday() >= 5 or day in HOLIDAY_DATES or not 9 <= local.hour < 17:
        return []
    return [(day.replace(hour=9), day.replace(hour=17))]


def market_quarter_hour_of(local):
    minute = local.hour * 60 + local.minute
    if local.weekday() >= 5 or not 9 * 60 + 30 <= minute < 16 * 60:
        return []
    start = local.replace(minute=local.minute - local.minute % 15, second=0, microsecond=0)
    return [(start, start + datetime.timedelta(minutes=15))]


def brute_force(rows, windows_of, zone=UTC):
    """(k, start, end) -> (count, sum, min, max) of v, windows in epoch microseconds."""
    members = {}
    for k, t, v in rows:
        if t is None:
            continue
        for start, end in windows_of(local_of(t, zone)):
            members.setdefault((k, micros_of_local(start, zone), micros_of_local(end, zone)), []).append(v)
    return {key: summary(values) for key, values in members.items()}


def summary(values):
    present = [v for v in values if v is not None]
    return (len(values), sum(present) if present else None, min(present, default=None), max(present, default=None))


# --- data and queries --------------------------------------------------------------------------------


def random_rows(seed, n, first, last, edges=()):
    """(k, t, v) rows with t in epoch microseconds between two aware datetimes, a few null times and
    values, and every time of ``edges`` (aware datetimes), one microsecond before it and after it."""
    rnd = random.Random(seed)
    times = [rnd.randrange(micros_of(first), micros_of(last)) for _ in range(n)]
    times += [micros_of(edge) + d for edge in edges for d in (-1, 0, 1)]
    rows = [(rnd.choice("abcd"), t, None if rnd.random() < 0.05 else rnd.randint(-50, 100)) for t in times]
    return rows + [("a", None, 7), ("b", None, None)]


def events(spark, rows, time_type="timestamp"):
    df = spark.createDataFrame(rows, "k string, t bigint, v bigint")
    ts = {"timestamp": F.timestamp_micros("t"), "timestamp_ntz": F.timestamp_micros("t").cast("timestamp_ntz")}
    return df.select("k", ts[time_type].alias("ts"), "v")


def windowed(df, definition, **options):
    """The windows' aggregates by (k, start, end), bounds in epoch microseconds (ticks for an integral
    time), and the DataFrame collected (for its metrics)."""
    out = df.groupBy("k", window("ts", definition, **options)).agg(
        F.count(F.lit(1)).alias("n"), F.sum("v").alias("sv"), F.min("v").alias("mn"), F.max("v").alias("mx")
    )
    ticks = {"timestamp": F.unix_micros, "timestamp_ntz": lambda c: F.unix_micros(c.cast("timestamp"))}
    as_ticks = ticks.get(dict(df.dtypes)["ts"], lambda c: c)
    result = out.select("k", as_ticks(F.col("window.start")).alias("s"), as_ticks(F.col("window.end")).alias("e"),
                        "n", "sv", "mn", "mx")
    return {(r.k, r.s, r.e): (r.n, r.sv, r.mn, r.mx) for r in result.collect()}, result


@pytest.fixture
def session_zone(spark):
    """Sets the session time zone for a test."""
    previous = spark.conf.get("spark.sql.session.timeZone")
    yield lambda zone: spark.conf.set("spark.sql.session.timeZone", zone)
    spark.conf.set("spark.sql.session.timeZone", previous)


FISCAL = CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=2)
QUARTERS = PythonWindows.of(fiscal_quarters, "92 days 1 hour", overlapping=False)


# --- results -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("zone", ["UTC", "America/Havana"])
def test_fiscal_quarters_equal_the_jvm_kind(spark, session_zone, zone):
    """Havana's clocks go back from 01:00 to 00:00 on 2020-11-01: its quarter starts at the first of
    the two midnights, as java.time reads it, and the times of the second are in that quarter."""
    session_zone(zone)
    havana = zoneinfo.ZoneInfo("America/Havana")
    repeated_midnight, next_quarter = datetime.datetime(2020, 11, 1, tzinfo=havana), datetime.datetime(2021, 2, 1, tzinfo=havana)
    edges = [repeated_midnight, repeated_midnight + datetime.timedelta(minutes=30), next_quarter,
             datetime.datetime(2022, 1, 31, 23, 59, tzinfo=havana)]
    rows = random_rows(7, 3000, datetime.datetime(2019, 6, 1, tzinfo=UTC), datetime.datetime(2022, 6, 1, tzinfo=UTC), edges)
    df = events(spark, rows)
    got, _ = windowed(df, QUARTERS)
    expected, _ = windowed(df, FISCAL)
    assert len(expected) >= 4 * 12 and got == expected
    if zone == "America/Havana":
        assert ("a", micros_of(repeated_midnight), micros_of(next_quarter)) in got
    assert got == brute_force(rows, fiscal_quarter_of, zoneinfo.ZoneInfo(zone))


def test_business_hours_with_holidays_equal_the_brute_force_with_and_without_aggregating_before_the_shuffle(spark):
    days = [datetime.datetime(2024, 12, d, tzinfo=UTC) for d in (20, 23, 24, 27, 31)]
    edges = [day.replace(hour=h) for day in days for h in (9, 17)]
    rows = random_rows(11, 1500, datetime.datetime(2024, 12, 15, tzinfo=UTC), datetime.datetime(2025, 1, 10, tzinfo=UTC),
                       edges)
    df = events(spark, rows)
    hours = PythonWindows.of(business_hours, "8 hours", overlapping=False)
    expected = brute_force(rows, business_hours_of)
    no_window = sum(1 for _, t, _ in rows if t is not None and not business_hours_of(local_of(t, UTC)))
    assert len(expected) > 20 and no_window > 100
    try:
        for mode in ("always", "never", "auto"):
            spark.conf.set(AGGREGATE_BEFORE_SHUFFLE, mode)
            got, result = windowed(df, hours)
            assert got == expected, mode
            counts = metrics(result)
            assert (counts["unwindowedRows"], counts["nullTimeRows"], counts["inputRows"]) == (no_window, 2, len(rows)), mode
        # windows declared non-overlapping are aggregated whole before the shuffle
        assert "partials aggregated before the shuffle" in result._jdf.queryExecution().executedPlan().toString()
    finally:
        spark.conf.unset(AGGREGATE_BEFORE_SHUFFLE)


def test_market_quarter_hours_on_timestamp_ntz_equal_the_brute_force(spark):
    edges = [datetime.datetime(2024, 3, d, h, m, tzinfo=UTC) for d in (1, 4) for h, m in ((9, 30), (10, 0), (16, 0))]
    rows = random_rows(5, 1500, datetime.datetime(2024, 2, 26, tzinfo=UTC), datetime.datetime(2024, 3, 11, tzinfo=UTC),
                       edges)
    every_15 = PythonWindows.of(market_quarter_hours, "15 minutes", overlapping=False, time_type="timestamp_ntz")
    got, _ = windowed(events(spark, rows, "timestamp_ntz"), every_15)
    expected = brute_force(rows, market_quarter_hour_of)
    assert len(expected) > 100 and got == expected


def test_overlapping_windows_in_the_row_form_equal_explode_and_group_by(spark):
    rows = random_rows(3, 1000, datetime.datetime(2024, 3, 1, tzinfo=UTC), datetime.datetime(2024, 3, 4, tzinfo=UTC))
    df = events(spark, rows)
    got, result = windowed(df, PythonWindows.of(hour_and_day, "1 day"))
    hour, day = F.date_trunc("hour", "ts"), F.date_trunc("day", "ts")
    exploded = df.where(F.col("ts").isNotNull()).select("k", "v", F.explode(F.array(
        F.struct(hour.alias("start"), (hour + F.expr("INTERVAL 1 HOUR")).alias("end")),
        F.struct(day.alias("start"), (day + F.expr("INTERVAL 1 DAY")).alias("end")),
    )).alias("w"))
    grouped = exploded.groupBy("k", "w").agg(
        F.count(F.lit(1)).alias("n"), F.sum("v").alias("sv"), F.min("v").alias("mn"), F.max("v").alias("mx")
    ).select("k", F.unix_micros("w.start").alias("s"), F.unix_micros("w.end").alias("e"), "n", "sv", "mn", "mx")
    expected = {(r.k, r.s, r.e): (r.n, r.sv, r.mn, r.mx) for r in grouped.collect()}
    assert len(expected) > 3 * 24 and got == expected
    # each time is its own partial: overlapping windows are not aggregated before the shuffle by default
    assert "partials aggregated before the shuffle" not in result._jdf.queryExecution().executedPlan().toString()


def test_integral_epochs_take_the_time_unit(spark):
    rnd = random.Random(9)
    rows = [(rnd.choice("ab"), rnd.randrange(-5000, 20000), rnd.randint(0, 9)) for _ in range(400)] + [("a", None, 1)]
    df = spark.createDataFrame(rows, "k string, ts bigint, v bigint")
    seconds = PythonWindows.of(whole_seconds_after_the_epoch, "1 second", overlapping=False, time_type="bigint")
    got, result = windowed(df, seconds, time_unit="milliseconds")
    members = {}
    for k, t, v in rows:
        if t is not None and t >= 0:
            members.setdefault((k, t // 1000 * 1000, t // 1000 * 1000 + 1000), []).append(v)
    assert got == {key: summary(values) for key, values in members.items()}
    counts = metrics(result)
    assert (counts["unwindowedRows"], counts["nullTimeRows"]) == (sum(1 for _, t, _ in rows if t is not None and t < 0), 1)


def test_sql_grouping_function_takes_the_listing_last(spark):
    """The call Spark Connect makes: windows(ts, spec, listing)."""
    rows = random_rows(13, 300, datetime.datetime(2023, 1, 1, tzinfo=UTC), datetime.datetime(2024, 1, 1, tzinfo=UTC))
    df = events(spark, rows)
    assert QUARTERS.spec == "listed max size 2209 hours non-overlapping"  # 92 days 1 hour
    windows = F.call_function("windows", F.col("ts"), F.lit(QUARTERS.spec), QUARTERS._listing("ts")).alias("window")
    out = df.groupBy("k", windows).agg(F.count(F.lit(1)).alias("n")).select("k", F.unix_micros("window.start").alias("s"), "n")
    expected = {(k, start): n for (k, start, _), (n, *_) in brute_force(rows, fiscal_quarter_of).items()}
    assert {(r.k, r.s): r.n for r in out.collect()} == expected


def test_python_windows_are_the_listed_windows_of_the_column_their_function_computes(spark):
    """One kind, two ways to list: ListedWindows reads each row's windows from a column of the rows,
    PythonWindows computes that column with its function; the JVM and SQL call both listed."""
    rows = random_rows(17, 500, datetime.datetime(2023, 1, 1, tzinfo=UTC), datetime.datetime(2024, 1, 1, tzinfo=UTC))
    df = events(spark, rows).withColumn("quarters", QUARTERS._listing("ts"))
    by_column = ListedWindows.of("quarters", "92 days 1 hour", overlapping=False)
    assert isinstance(QUARTERS, ListedWindows) and (QUARTERS.listing_column, by_column.listing_column) == (None, "quarters")
    assert (QUARTERS.max_size, QUARTERS.overlapping) == (by_column.max_size, by_column.overlapping) == ("92 days 1 hour", False)
    assert by_column.spec == "listed by quarters max size 2209 hours non-overlapping"
    got, _ = windowed(df, by_column)
    assert got == windowed(df, QUARTERS)[0] == brute_force(rows, fiscal_quarter_of)
    # SQL's windows(ts, spec) reads the column the spec names, as Spark Connect calls it
    named = F.call_function("windows", F.col("ts"), F.lit(by_column.spec)).alias("window")
    out = df.groupBy("k", named).agg(F.count(F.lit(1)).alias("n")).select("k", F.unix_micros("window.start").alias("s"), "n")
    assert {(r.k, r.s): r.n for r in out.collect()} == {(k, s): n for (k, s, _), (n, *_) in got.items()}


# --- the definition ----------------------------------------------------------------------------------


def test_definition_keeps_its_function_across_builders(spark):
    hours = PythonWindows.of(business_hours, datetime.timedelta(hours=8), overlapping=False).grace("1 hour")
    assert hours.assign is business_hours and hours.time_type == "timestamp" and not hours.overlapping
    assert hours.grace_period == "1 hour" and hours.spec == "listed max size 8 hours non-overlapping grace 1 hour"
    assert repr(hours) == (
        "PythonWindows.of(business_hours, datetime.timedelta(seconds=28800), overlapping=False).grace('1 hour')"
    )
    ticks = PythonWindows.of(whole_seconds_after_the_epoch, 1000, time_type="bigint")
    assert ticks.overlapping and ticks.spec == "listed max size 1000"
    assert repr(ticks) == "PythonWindows.of(whole_seconds_after_the_epoch, '1000', time_type='bigint')"


@pytest.mark.parametrize(
    "arguments, error, message",
    [
        ((None, "1 day"), TypeError, "assign must be a function"),
        ((fiscal_quarters, 1.5), TypeError, "the max size of Python windows must be a str"),
        ((fiscal_quarters, "1 day", "no"), TypeError, "overlapping must be True or False"),
        ((fiscal_quarters, "1 day", True, pa.int64()), TypeError, "time_type must be a str"),
        ((fiscal_quarters, "1 day", True, "date"), ValueError,
         "time_type must be one of 'timestamp', 'timestamp_ntz', 'bigint'"),
        ((fiscal_quarters, "soon"), ValueError, "soon"),
        ((fiscal_quarters, "-1 day"), ValueError, "max size"),
    ],
)
def test_arguments_are_checked_at_construction(spark, arguments, error, message):
    with pytest.raises(error, match=message):
        PythonWindows.of(*arguments)


# --- what assign returns, checked in plain Python ----------------------------------------------------


NTZ_TIMES = pa.array([0, None, 90 * 60 * 1_000_000], pa.timestamp("us"))


def listed(assign, times=NTZ_TIMES, time_type="timestamp_ntz"):
    """The listing as (start, end) pairs in ticks per row, None for a null time."""
    listing = _executor.listed_windows(times, assign, time_type)
    bounds = pa.struct([("start", pa.int64()), ("end", pa.int64())])
    return [None if windows is None else [(w["start"], w["end"]) for w in windows]
            for windows in listing.cast(pa.list_(bounds)).to_pylist()]


def test_the_listing_of_each_form():
    hour = 3600 * 1_000_000
    assert listed(hour_and_day) == [[(0, hour), (0, 24 * hour)], None, [(hour, 2 * hour), (0, 24 * hour)]]
    def only_the_first(times):
        first = times.index == 0
        return pd.DataFrame({"start": times.where(first), "end": (times + pd.Timedelta("1s")).where(first)})

    assert listed(only_the_first) == [[(0, 1_000_000)], None, []]
    never = lambda t: pd.DataFrame({"row": pd.Series([], dtype="int64"), "start": [], "end": []})
    assert listed(never) == [[], None, []]
    assert listed(hour_and_day, pa.array([None], pa.timestamp("us"))) == [None]  # assign is not called
    # aware bounds are instants; naive ones are wall-clock times in the session zone (here Havana's)
    havana = pa.array([micros_of(datetime.datetime(2020, 11, 1, 4, 30, tzinfo=UTC))], pa.timestamp("us", tz="America/Havana"))
    first_midnight = micros_of(datetime.datetime(2020, 11, 1, 4, tzinfo=UTC))  # 00:00 at -04:00, before the clocks go back
    assert listed(fiscal_quarters, havana, "timestamp")[0][0][0] == first_midnight

    def aware(times):
        return pd.DataFrame({"start": times.dt.floor("D").dt.tz_localize("America/Havana", ambiguous=True),
                             "end": times.dt.ceil("D").dt.tz_localize("UTC")})

    assert listed(aware, havana, "timestamp")[0][0] == (first_midnight, micros_of(datetime.datetime(2020, 11, 2, tzinfo=UTC)))
    # nullable integers for integral times in no window
    epochs = pa.array([-5, 1500, None], pa.int32())
    assert listed(whole_seconds_after_the_epoch, epochs, "bigint") == [[], [(1000, 2000)], None]


def test_the_function_the_executors_run_travels_as_spark_pickles_it():
    """Spark pickles the Arrow UDF's function for the executors: it is named after assign, and a
    fresh interpreter that imports only the package runs it (windowagg's own code by reference)."""
    function = _executor.listing(hour_and_day, "timestamp_ntz")
    assert function.__name__ == "hour_and_day"
    pickled = cloudpickle.dumps(function)
    assert b"windowagg._executor" in pickled
    script = "import pickle, sys; times = pickle.loads(bytes.fromhex(sys.argv[1])); " \
             "print(pickle.loads(sys.stdin.buffer.read())(times).to_pylist())"
    ran = subprocess.run([sys.executable, "-c", script, cloudpickle.dumps(NTZ_TIMES).hex()], input=pickled,
                         capture_output=True, check=True)
    assert ran.stdout.decode() == f"{function(NTZ_TIMES).to_pylist()}\n"


def test_a_skipped_local_time_is_read_as_java_time_reads_it():
    """Havana skips from 00:00 to 01:00 on 2021-03-14: java.time reads 00:30 with the offset before
    the change (-05:00), 01:30 after it."""
    times = pa.array([micros_of(datetime.datetime(2021, 3, 14, 12, tzinfo=UTC))], pa.timestamp("us", tz="America/Havana"))

    def from_half_past_midnight(times):
        return pd.DataFrame({"start": times.dt.normalize() + pd.Timedelta("30min"), "end": times.dt.ceil("D")})

    start = listed(from_half_past_midnight, times, "timestamp")[0][0][0]
    assert start == micros_of(datetime.datetime(2021, 3, 14, 5, 30, tzinfo=UTC))


def test_a_zone_of_one_fixed_offset_reads_times_as_a_region_of_that_offset_does():
    """'+05:30' and UTC take the shortcut of a fixed offset; Asia/Kolkata (+05:30 since 1945) does not."""
    instants = [micros_of(datetime.datetime(2024, 5, d, h, tzinfo=UTC)) for d in (1, 2) for h in (0, 12, 23)]

    def local_days(times):
        return pd.DataFrame({"start": times.dt.normalize(), "end": times.dt.normalize() + pd.Timedelta("1D")})

    def days_in(zone):
        return listed(local_days, pa.array(instants, pa.timestamp("us", tz=zone)), "timestamp")

    assert days_in("+05:30") == days_in("Asia/Kolkata") != days_in("UTC")
    assert days_in("UTC") == days_in("Etc/UTC")


def boom(times):
    raise ZeroDivisionError("no windows today")


@pytest.mark.parametrize(
    "assign, time_type, error, message",
    [
        (boom, "timestamp_ntz", RuntimeError, "PythonWindows: boom raised ZeroDivisionError: no windows today"),
        (lambda t: t, "timestamp_ntz", TypeError, "returned a Series, not a pandas DataFrame with columns start and end"),
        (lambda t: pd.DataFrame({"start": t}), "timestamp_ntz", ValueError, "without the column end"),
        (lambda t: pd.DataFrame({"begin": t, "finish": t}), "timestamp_ntz", ValueError,
         "without the columns start and end"),
        (lambda t: fiscal_quarters(t)[:1], "timestamp_ntz", ValueError, "returned 1 row for 2 times"),
        (lambda t: fiscal_quarters(t).astype(str), "timestamp_ntz", TypeError,
         "returned a column start of object, not datetimes"),
        (lambda t: fiscal_quarters(t).assign(end=pd.NaT), "timestamp_ntz", ValueError, "a window needs both"),
        (lambda t: fiscal_quarters(t).assign(row=[0, 2]), "timestamp_ntz", ValueError,
         "returned the row 2, not the position"),
        (lambda t: fiscal_quarters(t).assign(row=[0.0, 1.0]), "timestamp_ntz", TypeError,
         "returned a column row of float64"),
        (lambda t: fiscal_quarters(t).apply(lambda c: c.dt.tz_localize("UTC")), "timestamp_ntz", TypeError,
         "windows of a TIMESTAMP_NTZ column are naive"),
        (lambda t: pd.DataFrame({"start": t / 2, "end": t / 2}), "bigint", TypeError,
         "returned a column start of float64, not integers"),
        (fiscal_quarters, "timestamp", TypeError,
         r"time_type='timestamp'\) got a time column of Arrow type timestamp\[us\]; pass time_type='timestamp_ntz'"),
    ],
)
def test_what_assign_returns_is_checked(assign, time_type, error, message):
    times = pa.array([10, 20], pa.int64()) if time_type == "bigint" else NTZ_TIMES
    with pytest.raises(error, match=message):
        _executor.listed_windows(times, assign, time_type)


# --- errors through Spark: the wrapper's and the JVM's -----------------------------------------------


def one_window(start_offset, end_offset):
    def windows(times):
        return pd.DataFrame({"start": times + pd.Timedelta(start_offset), "end": times + pd.Timedelta(end_offset)})
    return windows


def two_windows(times):
    return pd.concat([one_window("0s", "1h")(times), one_window("-1s", "1h")(times)], ignore_index=True).assign(
        row=np.concatenate([np.arange(len(times))] * 2))


@pytest.mark.parametrize(
    "definition, message",
    [
        (PythonWindows.of(boom, "1 hour"), "PythonWindows: boom raised ZeroDivisionError: no windows today"),
        (PythonWindows.of(lambda t: t.to_frame(), "1 hour"), "without the columns start and end"),
        (PythonWindows.of(one_window("1s", "1h"), "2 hours"), "does not contain the time"),
        (PythonWindows.of(one_window("0s", "3h"), "2 hours"), "longer than the max size 2 hours"),
        (PythonWindows.of(one_window("0s", "0s"), "2 hours"), "empty or inverted"),
        (PythonWindows.of(two_windows, "2 hours", overlapping=False), "declared non-overlapping give a time at most one"),
    ],
)
def test_errors_surface_when_the_query_runs(spark, definition, message):
    df = spark.createDataFrame([("a", "2024-03-01 10:00:00")], "k string, ts string")
    df = df.select("k", F.to_timestamp("ts").alias("ts"))
    with pytest.raises(Exception) as raised:
        df.groupBy("k", window("ts", definition)).count().collect()
    assert message in str(raised.value)
