"""Calendar windows from Python: months, quarters, weeks and days in a time zone against naive
datetime/zoneinfo oracles, SQL against the DataFrame API, spec and repr, errors."""

import datetime
import zoneinfo

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

import helpers as h
from test_kinds import DAY, HOUR, assert_equal_results, calendar_rows, micros_of, moment_of, oracle, windowagg_result
from windowagg import CalendarWindows, window

NEW_YORK = zoneinfo.ZoneInfo("America/New_York")
UTC = datetime.timezone.utc


def calendar_windows(unit, n, advance=None, zone=UTC, first_day=0):
    """The windows of a time (µs) by datetime arithmetic: units counted from 1970-01-01 (weeks from
    the week holding it that starts on `first_day`, 0 = Monday), windows of n units every k."""
    k = advance or n
    epoch_day = datetime.date(1970, 1, 1)
    first_week = epoch_day - datetime.timedelta(days=(epoch_day.weekday() - first_day) % 7)

    def start_of(index):
        if unit in ("months", "quarters", "years"):
            months = index * {"months": 1, "quarters": 3, "years": 12}[unit]
            date = datetime.date(1970 + months // 12, months % 12 + 1, 1)
        elif unit == "weeks":
            date = first_week + datetime.timedelta(weeks=index)
        else:
            date = epoch_day + datetime.timedelta(days=index)
        return micros_of(datetime.datetime.combine(date, datetime.time(), zone))

    def index_of(t):
        date = moment_of(t).astimezone(zone).date()
        if unit in ("months", "quarters", "years"):
            months = (date.year - 1970) * 12 + date.month - 1
            return months // {"months": 1, "quarters": 3, "years": 12}[unit]
        if unit == "weeks":
            return (date - first_week).days // 7
        return (date - epoch_day).days

    def windows(t):
        u = index_of(t)
        return [(start_of(s), start_of(s + n)) for s in range(u - n + 1, u + 1) if s % k == 0]

    return windows


@pytest.fixture(scope="module")
def calendar():
    return calendar_rows(21)


@pytest.mark.parametrize(
    "definition, unit, n, advance, zone, first_day",
    [
        (CalendarWindows.months(1), "months", 1, None, UTC, 0),
        (CalendarWindows.months(1).inZone("America/New_York"), "months", 1, None, NEW_YORK, 0),
        (CalendarWindows.months(3).advanceBy(1).inZone("America/New_York"), "months", 3, 1, NEW_YORK, 0),
        (CalendarWindows.quarters(1), "quarters", 1, None, UTC, 0),
        (CalendarWindows.years(1).inZone("Asia/Kolkata"), "years", 1, None, zoneinfo.ZoneInfo("Asia/Kolkata"), 0),
        (CalendarWindows.weeks(1, "SUNDAY").inZone("America/New_York"), "weeks", 1, None, NEW_YORK, 6),
        (CalendarWindows.days(1).inZone("America/New_York"), "days", 1, None, NEW_YORK, 0),
        (CalendarWindows.days(7).advanceBy(1), "days", 7, 1, UTC, 0),
    ],
)
def test_calendar_windows_equal_the_datetime_oracle(spark, calendar, definition, unit, n, advance, zone, first_day):
    df = h.make_df(spark, calendar, "timestamp")
    got = windowagg_result(df, definition, "timestamp")
    expected = oracle(calendar, calendar_windows(unit, n, advance, zone, first_day))
    assert_equal_results(got, expected)


def test_new_york_days_last_23_and_25_hours_at_the_2024_changes(spark, calendar):
    df = h.make_df(spark, calendar, "timestamp")
    got = windowagg_result(df, CalendarWindows.days(1).inZone("America/New_York"), "timestamp")
    lengths = {end - start for _, start, end in got}
    assert {23 * HOUR, 24 * HOUR, 25 * HOUR} <= lengths


def test_the_session_time_zone_is_the_default_and_ntz_ignores_zones(spark, calendar):
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = h.make_df(spark, calendar, "timestamp")
        got = windowagg_result(df, CalendarWindows.months(1), "timestamp")
        assert_equal_results(got, oracle(calendar, calendar_windows("months", 1, zone=NEW_YORK)))
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    ntz = h.make_df(spark, calendar, "timestamp_ntz")
    got = windowagg_result(ntz, CalendarWindows.months(1).inZone("America/New_York"), "timestamp_ntz")
    assert_equal_results(got, oracle(calendar, calendar_windows("months", 1)))


def test_sql_calendar_specs_equal_the_dataframe_api(spark, calendar):
    df = h.make_df(spark, calendar, "timestamp")
    df.createOrReplaceTempView("calendar_events")
    definition = CalendarWindows.months(3).advanceBy(1).inZone("America/New_York")
    assert definition.spec == "calendar 3 months every 1 in 'America/New_York'"
    assert repr(definition) == "CalendarWindows.months(3).advanceBy(1).inZone(America/New_York)"
    expected = windowagg_result(df, definition, "timestamp")
    spec = definition.spec.replace("'", "''")
    out = spark.sql(
        "SELECT k, window, count(1) AS n, sum(v) AS sv, avg(v) AS avgv, array_sort(collect_list(id)) AS ids "
        f"FROM calendar_events GROUP BY k, windows(ts, '{spec}')"
    )
    got = h.collect_by_window(
        out, ["k"], h.to_ticks(F.col("window.start"), "timestamp"), h.to_ticks(F.col("window.end"), "timestamp"),
        ["n", "sv", "avgv", "ids"],
    )
    assert_equal_results(got, expected)


def test_bad_calendar_windows_are_named(spark):
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Olympus'"):
        CalendarWindows.months(1).inZone("Mars/Olympus")
    with pytest.raises(ValueError, match="positive"):
        CalendarWindows.days(0)
    with pytest.raises(ValueError, match="larger than the size"):
        CalendarWindows.months(3).advanceBy(4)
    with pytest.raises(TypeError, match="must be an int"):
        CalendarWindows.months(1.5)
    with pytest.raises(ValueError, match="unknown first day"):
        CalendarWindows.weeks(1, "Caturday")
    epoch = spark.createDataFrame([(1, 1000)], "k int, t long")
    with pytest.raises(AnalysisException, match="needs a time zone"):
        epoch.groupBy("k", window("t", CalendarWindows.months(1), time_unit="milliseconds")).count()
    with pytest.raises(AnalysisException, match="give the column's unit"):
        epoch.groupBy("k", window("t", CalendarWindows.days(1))).count()
    got = epoch.groupBy("k", window("t", CalendarWindows.days(1), time_unit="milliseconds")).count().collect()
    assert [(r["window"]["start"], r["window"]["end"]) for r in got] == [(0, DAY // 1000)]


def test_unlimited_windows_give_one_row_per_key_and_count_rows_before_the_start(spark, calendar):
    import windowagg
    from windowagg import UnlimitedWindows

    start = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    definition = UnlimitedWindows.of().startOn(start)
    assert definition.spec == "unlimited starting 2024-01-01T00:00:00Z"
    df = h.make_df(spark, calendar, "timestamp")
    out = df.groupBy("k", window("ts", definition)).agg(F.count(F.lit(1)).alias("n"))
    rows = out.collect()
    since = [r for r in calendar if r[h.TIME] is not None and r[h.TIME] >= micros_of(start)]
    assert {r["k"]: r["n"] for r in rows} == {k: sum(1 for r in since if r[h.K] == k) for k in {r[h.K] for r in since}}
    assert {r["window"]["start"] for r in rows} == {start.replace(tzinfo=None)}  # naive, in the session zone (UTC)
    before = sum(1 for r in calendar if r[h.TIME] is not None and r[h.TIME] < micros_of(start))
    assert windowagg.metrics(out)["unwindowedRows"] == before
    with pytest.raises(ValueError, match="aware"):
        UnlimitedWindows.of().startOn(datetime.datetime(2024, 1, 1))
