"""Tumbling, hopping, cumulative and user-defined windows from Python: batch against Spark's own
window() and naive Python oracles, SQL against the DataFrame API, streaming against batch, errors.

The user-defined kinds are the examples jar's windowagg.examples.FiscalQuarters (Java, parameter
firstMonth) and windowagg.examples.BusinessDays (Scala), loaded by class name from spark.jars as a
user's own jar would be (conftest.py adds it to the test session).
"""

import collections
import datetime
import random
import sys
import zoneinfo

import pytest
from pyspark import cloudpickle
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

import brute_force as bf
import helpers as h
import streaming_support as ss
import windowagg
from windowagg import (
    CalendarWindows,
    CountWindows,
    CumulativeWindows,
    CustomWindows,
    DurationWindows,
    ListedWindows,
    PythonWindows,
    SessionWindows,
    SlidingWindows,
    TableWindows,
    TimeWindows,
    UnlimitedWindows,
    window,
)
from windowagg import _jvm
from windowagg import windows as windows_module

# the streaming fixture (session settings for short micro-batches) and query helpers
from test_streaming import not_flush, run_available_now, split_into_files, streaming  # noqa: F401

# Spark's Python workers cannot import this module: its functions (PythonWindows') travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

FISCAL = "windowagg.examples.FiscalQuarters"
BUSINESS_DAYS = "windowagg.examples.BusinessDays"
SECOND = 1_000_000  # microseconds
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)

VALUES = ["n", "sv", "avgv", "ids"]


def aggregates():
    """Compared everywhere: count, sum, avg and the member ids (sorted: equal times have no order)."""
    return [
        F.count(F.lit(1)).alias("n"),
        F.sum("v").alias("sv"),
        F.avg("v").alias("avgv"),
        F.array_sort(F.collect_list("id")).alias("ids"),
    ]


def python_values(members):
    vs = [r[h.V] for r in members]
    return {"n": len(members), "sv": bf.agg_sum(vs), "avgv": bf.agg_avg(vs), "ids": sorted(r[h.ID] for r in members)}


def collect(df, kind, keys=("k",), start="window.start", end="window.end"):
    """{(key tuple, start ticks, end ticks): values} of a windowed result."""
    return h.collect_by_window(df, list(keys), h.to_ticks(F.col(start), kind), h.to_ticks(F.col(end), kind), VALUES)


def assert_equal_results(got, expected):
    h.assert_same_windows(got, expected)
    h.assert_values(got, expected, VALUES)


def oracle(rows, windows_for, keys=("k",)):
    """The naive oracle's windows with their values, keyed like collect()."""
    windows = bf.enumerated_windows(rows, windows_for, key=lambda r: h.key_of(r, keys), time=lambda r: r[h.TIME])
    return {w: python_values(members) for w, members in windows.items()}


def windowagg_result(df, definition, kind, keys=("k",), **options):
    out = df.groupBy(*keys, window("ts", definition, **options)).agg(*aggregates())
    return collect(out, kind, keys)


def micros_of(moment):
    """An aware datetime as microseconds since the epoch (exact, pre-1970 included)."""
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * SECOND + delta.microseconds


def moment_of(micros):
    return EPOCH + datetime.timedelta(microseconds=micros)


# --- definitions: repr, spec, fallbacks ----------------------------------------------------------


DEFINITIONS = [
    (lambda: TimeWindows.of("1 hour"), "tumbling 1 hour", "TimeWindows.of(1 hour)"),
    (
        lambda: TimeWindows.of("1 hour").advanceBy("10 seconds"),
        "hopping 1 hour every 10 seconds",
        "TimeWindows.of(1 hour).advanceBy(10 seconds)",
    ),
    (
        lambda: TimeWindows.of(datetime.timedelta(minutes=90)).advanceBy("250ms").withOffset(10).grace("1 minute"),
        "hopping 90 minutes every 250 milliseconds offset 10 grace 1 minute",
        "TimeWindows.of(90 minutes).advanceBy(250 milliseconds).withOffset(10 ticks).grace(1 minute)",
    ),
    (lambda: TimeWindows.of(60_000).advanceBy(1_000), "hopping 60000 every 1000", None),
    (
        lambda: CumulativeWindows.of("1 hour", "1 day").withOffset("6 hours").grace(datetime.timedelta(seconds=30)),
        "cumulative 1 hour up to 1 day offset 6 hours grace 30 seconds",
        "CumulativeWindows.of(1 hour, 1 day).withOffset(6 hours).grace(30 seconds)",
    ),
    (lambda: CumulativeWindows.of("1 hour 30 minutes", datetime.timedelta(hours=3)), "cumulative 90 minutes up to 3 hours", None),
    (lambda: CumulativeWindows.of(10, 100), "cumulative 10 up to 100", "CumulativeWindows.of(10 ticks, 100 ticks)"),
    (
        lambda: CustomWindows.of(FISCAL, firstMonth=2),
        f"custom {FISCAL}(firstMonth=2)",
        f"CustomWindows.of({FISCAL}, firstMonth=2)",
    ),
    (lambda: CustomWindows.of(BUSINESS_DAYS).grace("1 day"), f"custom {BUSINESS_DAYS} grace 1 day", None),
    (lambda: SlidingWindows.of("10 minutes").grace("1 s"), "sliding 10 minutes grace 1 second", None),
    (lambda: SessionWindows.withInactivityGap(300), "session gap 300", None),
    (lambda: SessionWindows.withDynamicGap("gap_s"), "session gap column gap_s", None),
    (lambda: TableWindows.of("periods"), "table periods", "TableWindows.of(periods, start, end)"),
    (
        lambda: TableWindows.of(" db.periods ", start="opens", end="closes").grace("1 day"),
        "table db.periods columns opens, closes grace 1 day",
        None,
    ),
    (
        lambda: TableWindows.of("plans", keys=["customer", " region "]),
        "table plans keys customer, region",
        "TableWindows.of(plans, start, end).perKey(customer, region)",
    ),
    (
        lambda: TableWindows.of("shifts", keys=["worker"], overlapping=False),
        "table shifts keys worker non-overlapping",
        "TableWindows.of(shifts, start, end).perKey(worker).nonOverlapping()",
    ),
    (lambda: ListedWindows.of("periods", "1 day"), "listed by periods max size 1 day", "ListedWindows.maxSize(1 day).by(periods)"),
    (
        lambda: ListedWindows.of(" periods ", 1000, overlapping=False).grace("1 minute"),
        "listed by periods max size 1000 non-overlapping grace 1 minute",
        "ListedWindows.maxSize(1000).by(periods).nonOverlapping().grace(1 minute)",
    ),
]


@pytest.mark.parametrize("make, spec, jvm_repr", DEFINITIONS)
def test_spec_and_repr_come_from_the_jvm(spark, make, spec, jvm_repr):
    definition = make()
    jdef = definition._java_definition()
    assert definition.spec == spec == jdef.spec()
    assert repr(definition) == jdef.toString()
    if jvm_repr is not None:
        assert repr(definition) == jvm_repr


@pytest.mark.parametrize("make, spec, jvm_repr", DEFINITIONS)
def test_without_a_session_the_spec_is_the_calls_the_jvm_reads(spark, monkeypatch, make, spec, jvm_repr):
    definition = make()
    jdef = definition._java_definition()
    monkeypatch.setattr(windows_module, "_classic_session_running", lambda: False)
    calls = definition.spec  # what Spark Connect sends: Python does not re-implement the grammar
    assert calls.startswith(type(definition).__name__ + ".")
    parsed = _jvm.jvm_class(_jvm.active_jvm(), "windowagg.WindowSpec").parse(calls)
    assert parsed.equals(jdef), f"{calls} reads back as {parsed.toString()}"
    assert parsed.spec() == spec
    assert repr(definition).split(".")[0] == type(definition).__name__


def test_python_repr_names_the_python_arguments(spark, monkeypatch):
    monkeypatch.setattr(windows_module, "_classic_session_running", lambda: False)
    assert repr(TimeWindows.of("1 hour").advanceBy(datetime.timedelta(minutes=5)).withOffset("1 min")) == (
        "TimeWindows.of('1 hour').advanceBy(datetime.timedelta(seconds=300)).withOffset('1 min')"
    )
    assert repr(CumulativeWindows.of(5, 60).grace("1 s")) == "CumulativeWindows.of(5, 60).grace('1 s')"
    assert repr(CustomWindows.of(FISCAL, firstMonth=5)) == f"CustomWindows.of('{FISCAL}', firstMonth='5')"


def test_builders_return_new_definitions(spark):
    tumbling = TimeWindows.of("1 hour")
    hopping = tumbling.advanceBy("10 minutes")
    shifted = hopping.withOffset("1 minute").grace("5 s")
    assert (tumbling.advance, tumbling.offset, tumbling.grace_period) == (None, None, None)
    assert (hopping.advance, hopping.offset) == ("10 minutes", None)
    assert (shifted.size, shifted.advance, shifted.offset, shifted.grace_period) == ("1 hour", "10 minutes", "1 minute", "5 s")
    cumulative = CumulativeWindows.of("1 hour", "1 day")
    assert cumulative.withOffset("2 hours").offset == "2 hours" and cumulative.offset is None
    custom = CustomWindows.of(FISCAL, firstMonth=11)
    assert custom.params == {"firstMonth": "11"} and custom.grace("1 day").params == {"firstMonth": "11"}
    assert custom.grace("1 day").grace_period == "1 day" and custom.grace_period is None
    for definition in (tumbling, hopping, shifted, cumulative, custom):
        assert isinstance(definition, windowagg.WindowDefinition)


def test_snake_case_names_are_the_same_methods(spark):
    assert SessionWindows.with_inactivity_gap("5 minutes").spec == SessionWindows.withInactivityGap("5 minutes").spec
    assert SessionWindows.with_dynamic_gap("g").spec == "session gap column g"
    hopping = TimeWindows.of("1 hour").advance_by("10 minutes").with_offset("1 minute")
    assert hopping.spec == TimeWindows.of("1 hour").advanceBy("10 minutes").withOffset("1 minute").spec
    assert CumulativeWindows.of("1 hour", "1 day").with_offset("1 hour").spec == "cumulative 1 hour up to 1 day offset 1 hour"
    assert CalendarWindows.months(3).advance_by(1).in_zone("UTC").spec == "calendar 3 months every 1 in 'UTC'"
    assert UnlimitedWindows.of().start_on(5).spec == "unlimited starting 5"
    assert CountWindows.of(3).tie_break("seq").spec == "count 3 rows tie break seq"
    assert DurationWindows.of(10).tie_break("seq").spec == "duration 10 tie break seq"
    # one method under two names
    assert TimeWindows.advance_by is TimeWindows.advanceBy
    assert TimeWindows.__dict__["advance_by"] is TimeWindows.__dict__["advanceBy"]


@pytest.mark.parametrize("attribute, owner, suggestion", [
    (lambda: SessionWindows.withInactivityGapp, "SessionWindows", "withInactivityGap"),
    (lambda: SessionWindows.with_inactivty_gap, "SessionWindows", "with_inactivity_gap"),
    (lambda: TimeWindows.of("1 hour").advanced_by, "TimeWindows", "advance_by"),
    (lambda: TimeWindows.of("1 hour").advanceBY, "TimeWindows", "advanceBy"),
    (lambda: CalendarWindows.month, "CalendarWindows", "months"),
    (lambda: CountWindows.of(3).tiebreak, "CountWindows", "tie_break"),
    (lambda: SlidingWindows.of(3).grace_periods, "SlidingWindows", "grace_period"),
])
def test_an_unknown_attribute_names_the_closest(attribute, owner, suggestion):
    with pytest.raises(AttributeError) as error:
        attribute()
    assert str(error.value).startswith(f"{owner} has no attribute")
    assert str(error.value).endswith(f"did you mean '{suggestion}'?")


def test_an_unknown_attribute_far_from_every_name_names_none():
    with pytest.raises(AttributeError, match=r"^SlidingWindows has no attribute 'xyzzy'$"):
        SlidingWindows.of(3).xyzzy


def test_custom_parameters_are_strings_in_a_java_map(spark):
    assert CustomWindows.of(FISCAL, firstMonth=2)._java_definition().equals(
        CustomWindows.of(FISCAL, firstMonth="2")._java_definition()
    )
    assert CustomWindows.of(FISCAL, firstMonth="november").spec == f"custom {FISCAL}(firstMonth=november)"
    # the default firstMonth is February: the same windows (the definitions differ in their parameters)
    assert CustomWindows.of(FISCAL)._java_definition().definition().equals(
        CustomWindows.of(FISCAL, firstMonth=2)._java_definition().definition()
    )


# --- tumbling and hopping: equal to Spark's window() -----------------------------------------------


def spark_window_result(df, kind, size, advance, offset):
    """Spark's own window(ts, size, slide, startTime), grouped like windowagg's result."""
    w = F.window("ts", size, advance or size, offset or "0 seconds")
    out = df.where(F.col("ts").isNotNull()).groupBy("k", w.alias("w")).agg(*aggregates())
    return collect(out, kind, start="w.start", end="w.end")


TIME_WINDOW_CASES = [
    ("10 minutes", None, None),
    ("10 minutes", None, "3 minutes"),
    ("10 minutes", "4 minutes", None),  # size not a multiple of the advance
    ("1 hour", "15 minutes", "7 minutes 30 seconds"),
    ("7 seconds", "3 seconds", "2 seconds"),
    ("90 seconds", "90 seconds", "1 second"),  # hopping with advance = size: tumbling
    ("2 seconds", "1 second", "999999 microseconds"),
]


@pytest.fixture(scope="module")
def timed_rows():
    """Rows over six hours around the epoch (pre-1970 included), in microseconds, with times on
    and next to whole minutes and some sub-second times."""
    rows = h.random_rows(31, 300, size=10 * MINUTE, t_lo=-3 * HOUR, t_hi=3 * HOUR, null_time=0.03)
    rnd = random.Random(5)
    extra = []
    for i in range(40):
        base = rnd.randint(-180, 180) * MINUTE
        t = base + rnd.choice([0, 1, -1, SECOND, -SECOND, 7 * SECOND])
        extra.append((1000 + i, rnd.choice(["a", "b", None]), 0, t, rnd.randint(-5, 50), 0.0, "/"))
    return rows + extra


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
@pytest.mark.parametrize("size, advance, offset", TIME_WINDOW_CASES)
def test_time_windows_equal_spark_window(spark, timed_rows, kind, size, advance, offset):
    df = h.make_df(spark, timed_rows, kind)
    definition = TimeWindows.of(size)
    if advance is not None:
        definition = definition.advanceBy(advance)
    if offset is not None:
        definition = definition.withOffset(offset)
    out = df.groupBy("k", window("ts", definition)).agg(*aggregates())
    assert out.schema["window"].dataType.fieldNames() == ["start", "end"]
    assert {f.dataType for f in out.schema["window"].dataType.fields} == {h.expected_type(kind)}
    got = collect(out, kind)
    expected = spark_window_result(df, kind, size, advance, offset)
    assert len(expected) > 30
    assert any(start < 0 for _, start, _ in expected)  # windows before 1970
    assert_equal_results(got, expected)


def test_time_windows_equal_the_naive_oracle(spark, timed_rows):
    """The same data against Python's own enumeration (Spark's window() is not the only reference)."""
    df = h.make_df(spark, timed_rows, "timestamp")
    definition = TimeWindows.of("10 minutes").advanceBy("4 minutes").withOffset("1 minute")
    expected = oracle(timed_rows, bf.time_windows_for(10 * MINUTE, 4 * MINUTE, MINUTE))
    assert_equal_results(windowagg_result(df, definition, "timestamp"), expected)


# --- integral epoch columns --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "definition, unit, size, advance, offset",
    [
        (TimeWindows.of(10_000), None, 10_000, 10_000, 0),
        (TimeWindows.of(10_000).advanceBy(4_000).withOffset(1_000), None, 10_000, 4_000, 1_000),
        (TimeWindows.of("10 seconds").advanceBy("4 seconds"), "milliseconds", 10_000, 4_000, 0),
        (TimeWindows.of("1 minute").advanceBy("20 seconds").withOffset("5 seconds"), "seconds", 60, 20, 5),
        (TimeWindows.of(7).advanceBy(3).withOffset(2), "seconds", 7, 3, 2),
    ],
    ids=["ms-tumbling-ticks", "ms-hopping-ticks", "ms-hopping-durations", "s-hopping-durations", "s-hopping-ticks"],
)
def test_time_windows_on_integral_epochs(spark, definition, unit, size, advance, offset):
    rows = h.random_rows(8, 250, size=size, t_lo=-30 * size, t_hi=30 * size, null_time=0.05)
    df = h.make_df(spark, rows, "bigint")
    got = windowagg_result(df, definition, "bigint", time_unit=unit)
    assert_equal_results(got, oracle(rows, bf.time_windows_for(size, advance, offset)))


@pytest.mark.parametrize(
    "definition, unit, step, max_size, offset",
    [
        (CumulativeWindows.of(1_000, 5_000), None, 1_000, 5_000, 0),
        (CumulativeWindows.of("1 second", "5 seconds").withOffset("2500 ms"), "milliseconds", 1_000, 5_000, 2_500),
        (CumulativeWindows.of(15, 60).withOffset(10), "seconds", 15, 60, 10),
    ],
    ids=["ms-ticks", "ms-durations-offset", "s-ticks-offset"],
)
def test_cumulative_windows_on_integral_epochs(spark, definition, unit, step, max_size, offset):
    rows = h.random_rows(9, 250, size=step, t_lo=-8 * max_size, t_hi=8 * max_size, null_time=0.05)
    df = h.make_df(spark, rows, "bigint")
    got = windowagg_result(df, definition, "bigint", time_unit=unit)
    assert_equal_results(got, oracle(rows, bf.cumulative_windows_for(step, max_size, offset)))


# --- cumulative windows --------------------------------------------------------------------------------


CUMULATIVE_CASES = [
    ("20 minutes", "2 hours", None, 20 * MINUTE, 2 * HOUR, 0),
    ("15 minutes", "1 hour", "25 minutes", 15 * MINUTE, HOUR, 25 * MINUTE),
    ("1 hour", "1 hour", None, HOUR, HOUR, 0),  # one window per period: tumbling
]


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
@pytest.mark.parametrize("step, max_size, offset, step_us, max_us, offset_us", CUMULATIVE_CASES)
def test_cumulative_windows_equal_the_naive_oracle(spark, timed_rows, kind, step, max_size, offset, step_us, max_us, offset_us):
    df = h.make_df(spark, timed_rows, kind)
    definition = CumulativeWindows.of(step, max_size)
    if offset is not None:
        definition = definition.withOffset(offset)
    got = windowagg_result(df, definition, kind)
    expected = oracle(timed_rows, bf.cumulative_windows_for(step_us, max_us, offset_us))
    assert any(start < 0 for _, start, _ in expected)
    assert_equal_results(got, expected)


@pytest.mark.parametrize("step, max_size, offset, step_us, max_us, offset_us", CUMULATIVE_CASES[:2])
def test_cumulative_windows_equal_a_union_of_spark_window_queries(spark, timed_rows, step, max_size, offset, step_us, max_us, offset_us):
    """What a user would write without cumulative windows: for each length j * step, Spark's
    window(ts, length, step, offset) keeping only the windows that start at a period start."""
    df = h.make_df(spark, timed_rows, "timestamp").where(F.col("ts").isNotNull())
    offset_in_step = f"{offset_us % step_us} microseconds"
    union = None
    for j in range(1, max_us // step_us + 1):
        w = F.window("ts", f"{j * step_us} microseconds", step, offset_in_step)
        part = (
            df.groupBy("k", w.alias("w"))
            .agg(*aggregates())
            .where(F.pmod(F.unix_micros("w.start") - F.lit(offset_us), F.lit(max_us)) == 0)
        )
        union = part if union is None else union.unionByName(part)
    expected = collect(union, "timestamp", start="w.start", end="w.end")
    definition = CumulativeWindows.of(step, max_size)
    if offset is not None:
        definition = definition.withOffset(offset)
    assert len(expected) > 30
    assert_equal_results(windowagg_result(df, definition, "timestamp"), expected)


# --- user-defined kinds: FiscalQuarters, BusinessDays ------------------------------------------------


def fiscal_quarter(first_month, zone=datetime.timezone.utc):
    """The fiscal quarter of a time, computed with datetime in `zone`, as microseconds."""

    def windows(t):
        local = moment_of(t).astimezone(zone)
        months = local.year * 12 + (local.month - 1)  # months since year 0
        into_year = (local.month - first_month) % 12
        start = months - into_year % 3
        bounds = []
        for m in (start, start + 3):
            day = datetime.datetime(m // 12, m % 12 + 1, 1, tzinfo=zone)
            bounds.append(micros_of(day.astimezone(datetime.timezone.utc)))
        return [tuple(bounds)]

    return windows


def business_day(zone=datetime.timezone.utc):
    """The business day of a time (Friday's runs to Monday), computed with datetime in `zone`."""

    def windows(t):
        day = moment_of(t).astimezone(zone).date()
        while day.weekday() >= 5:
            day -= datetime.timedelta(days=1)
        following = day + datetime.timedelta(days=1)
        while following.weekday() >= 5:
            following += datetime.timedelta(days=1)

        def midnight(d):
            local = datetime.datetime(d.year, d.month, d.day, tzinfo=zone)
            return micros_of(local.astimezone(datetime.timezone.utc))

        return [(midnight(day), midnight(following))]

    return windows


def calendar_rows(seed, n=300):
    """Rows over 1968-1971 and 2023-2025, with times on and one microsecond before month starts and
    midnights (in UTC and in New York), and in the weeks of the 2024 daylight-saving changes."""
    rnd = random.Random(seed)
    spans = [
        (micros_of(datetime.datetime(1968, 6, 1, tzinfo=datetime.timezone.utc)), 3 * 365 * DAY),
        (micros_of(datetime.datetime(2023, 1, 1, tzinfo=datetime.timezone.utc)), 3 * 365 * DAY),
    ]
    times = []
    for _ in range(n // 2):
        lo, span = rnd.choice(spans)
        times.append(lo + rnd.randrange(span))
    new_york = zoneinfo.ZoneInfo("America/New_York")
    for year, month, day in [(1969, 2, 1), (1970, 1, 1), (2024, 2, 1), (2024, 5, 1), (2024, 3, 8), (2024, 11, 1)]:
        for zone in (datetime.timezone.utc, new_york):
            edge = micros_of(datetime.datetime(year, month, day, tzinfo=zone).astimezone(datetime.timezone.utc))
            times += [edge, edge - 1, edge + 1]
    for start in (datetime.datetime(2024, 3, 7, tzinfo=new_york), datetime.datetime(2024, 10, 31, tzinfo=new_york)):
        first = micros_of(start.astimezone(datetime.timezone.utc))
        times += [first + rnd.randrange(6 * DAY) for _ in range(30)]
    rows = []
    for i, t in enumerate(times):
        rows.append((i, rnd.choice(["a", "b", "c", None]), 0, t, rnd.randint(-10, 90), 0.0, "/"))
    rows.append((len(rows), "a", 0, None, 5, 0.0, "/"))  # a null time: not windowed
    return rows


@pytest.fixture(scope="module")
def calendar():
    return calendar_rows(12)


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
@pytest.mark.parametrize(
    "params, first_month",
    [({"firstMonth": 2}, 2), ({}, 2), ({"firstMonth": 11}, 11), ({"firstMonth": "january"}, 1)],
)
def test_fiscal_quarters_by_class_name(spark, calendar, kind, params, first_month):
    df = h.make_df(spark, calendar, kind)
    got = windowagg_result(df, CustomWindows.of(FISCAL, **params), kind)
    expected = oracle(calendar, fiscal_quarter(first_month))
    assert_equal_results(got, expected)


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
def test_business_days_by_class_name(spark, calendar, kind):
    df = h.make_df(spark, calendar, kind)
    got = windowagg_result(df, CustomWindows.of(BUSINESS_DAYS), kind)
    expected = oracle(calendar, business_day())
    assert any(end - start == 3 * DAY for _, start, end in expected)  # Friday's window holds the weekend
    assert_equal_results(got, expected)


@pytest.fixture
def new_york_session(spark):
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    yield spark
    spark.conf.set("spark.sql.session.timeZone", previous)


def test_custom_kinds_read_timestamps_in_the_session_time_zone(new_york_session, calendar):
    """TIMESTAMP windows follow New York's midnights (23- and 25-hour days at the daylight-saving
    changes); TIMESTAMP_NTZ carries no zone and is read as UTC."""
    spark = new_york_session
    new_york = zoneinfo.ZoneInfo("America/New_York")
    df = h.make_df(spark, calendar, "timestamp")
    expected = oracle(calendar, business_day(new_york))
    spans = {end - start for _, start, end in expected}
    assert 3 * DAY - HOUR in spans and 3 * DAY + HOUR in spans  # the weekends of the changes
    assert_equal_results(windowagg_result(df, CustomWindows.of(BUSINESS_DAYS), "timestamp"), expected)
    got = windowagg_result(df, CustomWindows.of(FISCAL, firstMonth=2), "timestamp")
    assert_equal_results(got, oracle(calendar, fiscal_quarter(2, new_york)))
    # TIMESTAMP_NTZ values made from naive datetimes (UTC wall clock), independent of the session zone
    utc_wall = [
        (r[h.ID], r[h.K], None if r[h.TIME] is None else moment_of(r[h.TIME]).replace(tzinfo=None), r[h.V])
        for r in calendar
    ]
    ntz = spark.createDataFrame(utc_wall, "id bigint, k string, ts timestamp_ntz, v bigint")
    out = ntz.groupBy("k", window("ts", CustomWindows.of(BUSINESS_DAYS))).agg(*aggregates())
    got = {}
    for row in out.select("k", "window.start", "window.end", *VALUES).collect():
        bounds = [micros_of(row[b].replace(tzinfo=datetime.timezone.utc)) for b in ("start", "end")]
        got[((row["k"],), *bounds)] = {v: row[v] for v in VALUES}
    assert_equal_results(got, oracle(calendar, business_day()))


# --- SQL: windows(...) and window_agg(...) equal the DataFrame API -------------------------------------


@pytest.fixture(scope="module")
def kind_events(spark, timed_rows):
    """The view "kind_events": user, ts, ts_ntz, t_ms, t_s of the same instants (whole milliseconds), v."""
    raw = timed_rows + [(r[h.ID] + 10_000, *r[1:]) for r in calendar_rows(3, 60)]
    rows = [(r[h.ID], r[h.K], None if r[h.TIME] is None else r[h.TIME] // 1000 * 1000, r[h.V]) for r in raw]
    df = spark.createDataFrame(rows, "id bigint, user string, t bigint, v bigint").select(
        "id",
        "user",
        F.timestamp_micros("t").alias("ts"),
        F.timestamp_micros("t").cast("timestamp_ntz").alias("ts_ntz"),
        F.floor(F.col("t") / 1000).alias("t_ms"),
        F.floor(F.col("t") / 1_000_000).alias("t_s"),
        "v",
    )
    df.createOrReplaceTempView("kind_events")
    yield df
    spark.catalog.dropTempView("kind_events")


SQL_CASES = [
    ("ts", TimeWindows.of("10 minutes"), "tumbling 10 minutes", None),
    ("ts_ntz", TimeWindows.of("10 minutes").withOffset("3 minutes"), "tumbling 10 minutes offset 3 minutes", None),
    ("ts", TimeWindows.of("10 minutes").advanceBy("4 minutes"), "hopping 10 minutes every 4 minutes", None),
    ("t_ms", TimeWindows.of(60_000).advanceBy(25_000).withOffset(5_000), "hopping 60000 every 25000 offset 5000", None),
    ("t_s", TimeWindows.of("1 minute").advanceBy("20 seconds"), "hopping 1 minute every 20 seconds", "seconds"),
    ("ts", CumulativeWindows.of("15 minutes", "1 hour").withOffset("5 minutes"), "cumulative 15 minutes up to 1 hour offset 5 minutes", None),
    ("t_s", CumulativeWindows.of(600, 3600), "cumulative 600 up to 3600", "seconds"),
    ("ts", CustomWindows.of(FISCAL, firstMonth=2), f"custom {FISCAL}(firstMonth=2)", None),
    ("ts_ntz", CustomWindows.of(BUSINESS_DAYS), f"custom {BUSINESS_DAYS}", None),
    ("t_ms", CustomWindows.of(BUSINESS_DAYS), f"custom {BUSINESS_DAYS}", "milliseconds"),
]


def sql_kind(column):
    return {"ts": "timestamp", "ts_ntz": "timestamp_ntz"}.get(column, "bigint")


def dataframe_result(df, column, definition, unit):
    out = df.groupBy("user", window(column, definition, time_unit=unit)).agg(*aggregates())
    return collect(out, sql_kind(column), keys=["user"])


@pytest.mark.parametrize("column, definition, spec, unit", SQL_CASES)
def test_sql_windows_grouping_equals_the_dataframe_api(spark, kind_events, column, definition, spec, unit):
    assert definition.spec == spec
    options = "" if unit is None else f", 'timeUnit={unit}'"
    out = spark.sql(
        "SELECT user, window.start AS s, window.end AS e, count(1) AS n, sum(v) AS sv, avg(v) AS avgv, "
        f"array_sort(collect_list(id)) AS ids FROM kind_events GROUP BY user, windows({column}, '{spec}'{options})"
    )
    got = collect(out, sql_kind(column), keys=["user"], start="s", end="e")
    expected = dataframe_result(kind_events, column, definition, unit)
    assert len(expected) > 5
    assert_equal_results(got, expected)


@pytest.mark.parametrize("column, definition, spec, unit", SQL_CASES)
def test_sql_window_agg_equals_the_dataframe_api(spark, kind_events, column, definition, spec, unit):
    options = "" if unit is None else f", 'timeUnit={unit}'"
    out = spark.sql(
        f"SELECT * FROM window_agg(TABLE(kind_events) PARTITION BY user ORDER BY ({column}), '{definition.spec}', "
        f"'count(1) AS n, sum(v) AS sv, avg(v) AS avgv, array_sort(collect_list(id)) AS ids'{options})"
    )
    assert out.columns == ["user", "window_start", "window_end", *VALUES]
    got = collect(out, sql_kind(column), keys=["user"], start="window_start", end="window_end")
    assert_equal_results(got, dataframe_result(kind_events, column, definition, unit))


def test_sql_spec_words_are_case_insensitive_and_take_a_grace(spark, kind_events):
    a = spark.sql("SELECT user, window, count(1) AS n FROM kind_events GROUP BY user, windows(ts, 'HOPPING 10 minutes EVERY 5 minutes grace 1 minute')")
    b = spark.sql("SELECT user, window, count(1) AS n FROM kind_events GROUP BY user, windows(ts, 'hopping 10 minutes every 5 minutes')")
    assert a.count() > 0
    assert sorted(map(tuple, a.collect()), key=repr) == sorted(map(tuple, b.collect()), key=repr)


# --- streaming: equal to batch, late rows, updates -----------------------------------------------------


def half_minutes_and_minutes(times):
    """PythonWindows: each time's half minute and its minute (overlapping windows, in the row form)."""
    import numpy as np
    import pandas as pd

    positions = np.arange(len(times))
    half, minute = times.dt.floor("30s"), times.dt.floor("min")
    return pd.DataFrame({
        "row": np.concatenate([positions, positions]),
        "start": pd.concat([half, minute], ignore_index=True),
        "end": pd.concat([half + pd.Timedelta("30s"), minute + pd.Timedelta("1min")], ignore_index=True),
    })


STREAM_KINDS = {
    "tumbling": (TimeWindows.of("30 seconds"), 600, "1 hour"),
    "hopping": (TimeWindows.of("30 seconds").advanceBy("10 seconds").withOffset("3 seconds"), 600, "1 hour"),
    "cumulative": (CumulativeWindows.of("10 seconds", "1 minute"), 600, "1 hour"),
    "business days": (CustomWindows.of(BUSINESS_DAYS), 10 * 86_400, "30 days"),  # 2024-01-01 is a Monday
    "python": (PythonWindows.of(half_minutes_and_minutes, "1 minute"), 600, "1 hour"),
}


def stream_events(seed, span_seconds, n=200):
    """Seeded events over `span_seconds` after 2024-01-01: several keys and a null key, duplicate
    times, times on whole 10 s and one microsecond before, some null values."""
    rnd = random.Random(seed)
    pool = [rnd.randrange(span_seconds) * SECOND for _ in range(n // 3)]
    pool += [rnd.randrange(span_seconds // 10) * 10 * SECOND - d for d in (0, 1) for _ in range(5)]
    pool = [max(p, 0) for p in pool]
    keys = ["k0", "k1", "k2", None]
    return [
        ss.event(i, rnd.choice(keys), rnd.choice(pool), None if rnd.random() < 0.05 else rnd.randint(-20, 100))
        for i in range(n)
    ]


def stream_rows(df):
    return df.select("k", F.col("window.start").alias("start"), F.col("window.end").alias("end"), *ss.AGGREGATE_NAMES)


def batch_result(spark, files, definition):
    rows = not_flush(spark.read.schema(ss.SCHEMA).json(files))
    return stream_rows(rows.groupBy("k", window("ts", definition)).agg(*ss.aggregates()))


@pytest.mark.parametrize("name", list(STREAM_KINDS))
def test_streaming_final_output_equals_batch(streaming, tmp_path, name):
    spark = streaming
    definition, span, delay = STREAM_KINDS[name]
    seed = list(STREAM_KINDS).index(name)
    chunks = split_into_files(stream_events(seed, span), random.Random(seed))
    flush_days = 2 * span // 86_400 + 40  # its watermark makes every real window final
    files = ss.write_files(str(tmp_path / "in"), chunks + [[ss.flush_event(10_000, days=flush_days)]])
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    stream = stream.withWatermark("ts", delay)  # longer than the data's span: nothing is late
    out = stream.groupBy("k", window("ts", definition)).agg(*ss.aggregates())
    query_name = "kinds_final_" + name.replace(" ", "_")
    query = run_available_now(out, tmp_path / "checkpoint", name=query_name)
    try:
        got = ss.multiset(stream_rows(not_flush(spark.table(query_name))).collect())
    finally:
        spark.catalog.dropTempView(query_name)
    expected = ss.multiset(batch_result(spark, files[:-1], definition).collect())
    assert len(expected) >= 8
    assert got == expected, ss.describe_difference(got, expected)
    assert ss.observed(query, "late_rows") == 0


@pytest.mark.parametrize("name", list(STREAM_KINDS))
def test_streaming_updates_end_with_the_batch_values(streaming, tmp_path, name):
    spark = streaming
    definition, span, delay = STREAM_KINDS[name]
    seed = 10 + list(STREAM_KINDS).index(name)
    events = stream_events(seed, span, n=120)
    files = ss.write_files(str(tmp_path / "in"), split_into_files(events, random.Random(seed)))
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    out = stream.withWatermark("ts", delay).groupBy("k", window("ts", definition, emit="updates")).agg(*ss.aggregates())
    batches = {}

    def keep(df, batch_id):
        batches[batch_id] = stream_rows(df).collect()

    run_available_now(out, tmp_path / "checkpoint", mode="update", foreach_batch=keep)
    last = {}
    emitted = collections.Counter()
    for batch_id in sorted(batches):
        for row in batches[batch_id]:
            key = (row["k"], row["start"], row["end"])
            last[key] = row
            emitted[key] += 1
    got = ss.multiset(last.values())
    expected = ss.multiset(batch_result(spark, files, definition).collect())
    assert got == expected, ss.describe_difference(got, expected)
    assert any(count > 1 for count in emitted.values())  # windows changed by later micro-batches


def at(seconds):
    return seconds * SECOND


def late_files(folder):
    """Grace 5 s. After file 2 the watermark is 200 - 5 = 195 s. In file 3, a@150 and null@120 are
    late (every window holding them ends by 160 s), a@197 and null@196 are not, and b's time is
    malformed (null)."""
    chunks = [
        [ss.event(1, "a", at(100), 1), ss.event(2, "a", at(105), 2), ss.event(3, None, at(101), 10)],
        [ss.event(4, "a", at(200), 3)],
        [
            ss.event(5, "a", at(150), 4, "late a"),
            ss.event(6, "a", at(197), 5),
            ss.event(7, None, at(196), 6),
            ss.event(8, None, at(120), 8, "late null key"),
            ss.event(9, "b", None, 7, "bad time"),
        ],
        [ss.flush_event(10)],
    ]
    return ss.write_files(folder, chunks)


LATE_CASES = {
    # {(key, start s, end s): sum}
    "tumbling": (
        TimeWindows.of("10 seconds").grace("5 seconds"),
        {("a", 100, 110): 3, ("a", 190, 200): 5, ("a", 200, 210): 3, (None, 100, 110): 10, (None, 190, 200): 6},
    ),
    "cumulative": (
        CumulativeWindows.of("5 seconds", "20 seconds").grace("5 seconds"),
        {
            ("a", 100, 105): 1, ("a", 100, 110): 3, ("a", 100, 115): 3, ("a", 100, 120): 3,
            ("a", 180, 200): 5, ("a", 200, 205): 3, ("a", 200, 210): 3, ("a", 200, 215): 3, ("a", 200, 220): 3,
            (None, 100, 105): 10, (None, 100, 110): 10, (None, 100, 115): 10, (None, 100, 120): 10,
            (None, 180, 200): 6,
        },
    ),
}


@pytest.mark.parametrize("name", list(LATE_CASES))
def test_streaming_late_rows_are_counted_and_emitted(streaming, tmp_path, name):
    spark = streaming
    definition, expected = LATE_CASES[name]
    late_files(str(tmp_path / "in"))
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    out = stream.groupBy("k", window("ts", definition, late_rows="emit")).agg(F.sum("v").alias("s"))
    assert out.columns == ["k", "window", "s", "late_reason", "late_row"]
    query_name = f"kinds_late_{name}"
    query = run_available_now(out, tmp_path / "checkpoint", name=query_name)
    try:
        rows = spark.table(query_name).select(
            "k",
            ((F.unix_micros("window.start") - F.lit(ss.BASE_MICROS)) / SECOND).cast("long").alias("start"),
            ((F.unix_micros("window.end") - F.lit(ss.BASE_MICROS)) / SECOND).cast("long").alias("end"),
            "s", "late_reason", "late_row.id", "late_row.note",
        ).collect()
    finally:
        spark.catalog.dropTempView(query_name)
    late = sorted(((r["late_reason"], r["k"], r["id"], r["note"]) for r in rows if r["late_reason"] is not None), key=repr)
    assert late == sorted([("late", "a", 5, "late a"), ("late", None, 8, "late null key"), ("null time", "b", 9, "bad time")], key=repr)
    windows = {}
    for r in rows:
        if r["late_reason"] is None and r["k"] != "flush":
            key = (r["k"], r["start"], r["end"])
            assert key not in windows, f"window {key} emitted twice"
            windows[key] = r["s"]
    assert windows == expected
    assert ss.observed(query, "late_rows") == 2
    assert ss.observed(query, "null_time_rows") == 1


def test_streaming_with_a_grace_and_no_watermark(streaming, tmp_path):
    stream = streaming.readStream.schema(ss.SCHEMA).json(str(tmp_path))
    with pytest.raises(AnalysisException, match="needs a watermark"):
        stream.groupBy("k", window("ts", TimeWindows.of("10 seconds"))).count()
    for definition in (
        TimeWindows.of("10 seconds").advanceBy("5 seconds").grace("0 seconds"),
        CumulativeWindows.of("5 seconds", "1 minute").grace("1 second"),
        CustomWindows.of(FISCAL).grace("1 day"),
    ):
        assert stream.groupBy("k", window("ts", definition)).count().isStreaming


# --- errors --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, phrase",
    [
        (lambda: TimeWindows.of("0 seconds"), "window size must be positive"),
        (lambda: TimeWindows.of(-5), "window size must be positive"),
        (lambda: TimeWindows.of(datetime.timedelta(0)), "window size must be positive"),
        (lambda: TimeWindows.of("1 hour").advanceBy("0 s"), "window advance must be positive"),
        (lambda: TimeWindows.of("1 hour").advanceBy(-1), "window advance must be positive"),
        (lambda: TimeWindows.of("1 hour").withOffset("-1 minute"), "window offset must not be negative"),
        (lambda: TimeWindows.of("1 fortnight"), "fortnight"),
        (lambda: TimeWindows.of("1 month"), "month"),
        (lambda: TimeWindows.of("1 hour").grace("-1 s"), "negative"),
        (lambda: CumulativeWindows.of("0 minutes", "1 hour"), "cumulative window step must be positive"),
        (lambda: CumulativeWindows.of("1 minute", "-1 hour"), "cumulative window max size must be positive"),
        (lambda: CumulativeWindows.of(0, 10), "step must be positive"),
        (lambda: CumulativeWindows.of("1 minute", "1 hour").withOffset(datetime.timedelta(seconds=-1)), "must not be negative"),
        (lambda: CustomWindows.of("com.example.NoSuchWindows"), "com.example.NoSuchWindows is not on the classpath"),
        (lambda: CustomWindows.of("java.lang.String"), "java.lang.String is not a window definition"),
        (lambda: CustomWindows.of(FISCAL, firstMonth=13), "firstMonth must be 1 to 12"),
        (lambda: CustomWindows.of(FISCAL, firstMonth="smarch"), "smarch"),
        (lambda: CustomWindows.of(FISCAL, lastMonth=1), "unknown parameter 'lastMonth'"),
        (lambda: CustomWindows.of(BUSINESS_DAYS, country="NL"), "takes no parameters"),
        (lambda: CustomWindows.of("  "), "must not be empty"),
        (lambda: ListedWindows.of(" ", "1 day"), "the column listing the windows must have a name"),
        (lambda: ListedWindows.of("periods", "0 seconds"), "max size of listed windows must be positive"),
    ],
)
def test_invalid_definitions_raise_value_error_at_construction(spark, make, phrase):
    with pytest.raises(ValueError) as info:
        make()
    assert phrase in str(info.value)
    assert "JVM stacktrace" not in str(info.value)


def test_rejected_parameters_are_named(spark):
    with pytest.raises(ValueError, match=r"rejected its parameters firstMonth=13: "):
        CustomWindows.of(FISCAL, firstMonth=13)


@pytest.mark.parametrize(
    "make",
    [
        lambda: TimeWindows.of(1.5),
        lambda: TimeWindows.of(None),
        lambda: TimeWindows.of(True),
        lambda: TimeWindows.of("1 hour").advanceBy([1]),
        lambda: TimeWindows.of("1 hour").withOffset(0.5),
        lambda: TimeWindows.of("1 hour").grace(5),
        lambda: CumulativeWindows.of("1 hour", None),
        lambda: CumulativeWindows.of(60, "1 hour"),  # ticks and a duration
        lambda: CumulativeWindows.of("1 hour", "1 day").grace(1),
        lambda: CustomWindows.of(None),
        lambda: CustomWindows.of(FiscalLike()),
        lambda: ListedWindows.of(F.col("periods"), "1 day"),
        lambda: ListedWindows.of("periods", 1.5),
        lambda: ListedWindows.of("periods", "1 day", overlapping="no"),
    ],
)
def test_wrong_python_types_raise_type_error(make):
    with pytest.raises(TypeError):
        make()


class FiscalLike:
    pass


def test_out_of_range_ticks_raise_value_error():
    with pytest.raises(ValueError, match="64-bit"):
        TimeWindows.of(2**63)
    with pytest.raises(ValueError, match="64-bit"):
        CumulativeWindows.of(1, -(2**63) - 1)


def test_a_str_and_a_timedelta_make_one_cumulative_definition(spark):
    mixed = CumulativeWindows.of("1 hour", datetime.timedelta(days=1, microseconds=0))
    assert mixed._java_definition().equals(CumulativeWindows.of("1 hour", "1 day")._java_definition())


@pytest.fixture(scope="module")
def small(spark):
    df = spark.createDataFrame([("a", 0, 1)], "k string, t long, v long").select(
        "k", "t", F.timestamp_micros("t").alias("ts"), "v"
    )
    df.createOrReplaceTempView("kinds_small")
    yield df
    spark.catalog.dropTempView("kinds_small")


@pytest.mark.parametrize(
    "definition, column, phrase",
    [
        (TimeWindows.of("1 hour").advanceBy("2 hours"), "ts", "window advance 2 hours is larger than the window size 1 hour"),
        (TimeWindows.of("1 hour").withOffset("1 hour"), "ts", "window offset 1 hour must be less than the size 1 hour"),
        (TimeWindows.of("1 hour").advanceBy("10 minutes").withOffset("10 minutes"), "ts", "must be less than the advance"),
        (TimeWindows.of(10).advanceBy(20), "t", "larger than the window size"),
        (TimeWindows.of(10), "ts", "is a number of ticks, but the time column is a timestamp"),
        (TimeWindows.of("1500 us"), "t", "give the column's unit as the option timeUnit"),
        (CumulativeWindows.of("7 minutes", "1 hour"), "ts", "max size 1 hour is not a whole multiple of the step 7 minutes"),
        (CumulativeWindows.of("1 minute", "1 hour").withOffset("1 hour"), "ts", "must be less than the max size"),
        (CumulativeWindows.of(3, 10), "t", "not a whole multiple"),
    ],
)
def test_invalid_combinations_raise_analysis_exception(spark, small, definition, column, phrase):
    with pytest.raises(AnalysisException) as info:
        small.groupBy("k", window(column, definition)).count()
    assert phrase in str(info.value)


@pytest.mark.parametrize(
    "spec, phrase",
    [
        ("rolling 10 minutes", "unknown window kind 'rolling'"),
        ("", "must not be empty"),
        ("hopping 1 hour", "says no advance"),
        ("hopping 1 hour every 2 hours", "larger than the window size"),
        ("tumbling 1 hour every 10 minutes", "takes no 'every'"),
        ("cumulative 1 hour", "says no max size"),
        ("cumulative 7 minutes up to 1 hour", "not a whole multiple"),
        ("tumbling 1 hour offset -5 minutes", "must not be negative"),
        ("tumbling 0 minutes", "must be positive"),
        ("custom com.example.NoSuchWindows", "com.example.NoSuchWindows is not on the classpath"),
        ("custom java.lang.String", "is not a window definition"),
        (f"custom {FISCAL}(firstMonth=13)", "firstMonth must be 1 to 12"),
        (f"custom {FISCAL}(firstMonth)", "write name=value"),
    ],
)
def test_bad_specs_in_sql_raise_analysis_exception(spark, small, spec, phrase):
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"SELECT k, count(1) FROM kinds_small GROUP BY k, windows(ts, '{spec}')")
    assert phrase in str(info.value)
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"SELECT * FROM window_agg(TABLE(kinds_small) PARTITION BY k ORDER BY (ts), '{spec}', 'count(1) AS n')")
    assert phrase in str(info.value)


# --- windows given as a table --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["timestamp", "timestamp_ntz"])
def test_table_windows_equal_the_range_join_a_user_writes(spark, kind):
    """Overlapping windows of many sizes from a DataFrame, against events JOIN periods ON ts >= start
    AND ts < end and a GROUP BY; identical rows of the table are one window."""
    rnd = random.Random(3)
    starts = [rnd.randrange(0, 86_400) for _ in range(80)]
    periods = spark.createDataFrame(
        [(s, s + rnd.randrange(60, 7_200)) for s in starts] + [(starts[0], starts[0] + 60)] * 2, "s long, e long"
    ).select(F.timestamp_seconds("s").cast(kind).alias("start"), F.timestamp_seconds("e").cast(kind).alias("end"))
    events = spark.createDataFrame(
        [(f"k{rnd.randrange(5)}", rnd.randrange(-600, 87_000), rnd.randrange(100)) for _ in range(3_000)],
        "k string, t long, v long",
    ).select("k", F.timestamp_seconds("t").cast(kind).alias("ts"), "v")
    got = events.groupBy("k", window("ts", TableWindows.of(periods))).agg(
        F.sum("v").alias("s"), F.count("*").alias("n")
    ).select("k", "window.start", "window.end", "s", "n")
    distinct = periods.distinct()
    expected = events.join(distinct, (events.ts >= distinct.start) & (events.ts < distinct.end)).groupBy(
        "k", "start", "end"
    ).agg(F.sum("v").alias("s"), F.count("*").alias("n"))
    rows = sorted(got.collect())
    assert len(rows) > 200
    assert rows == sorted(expected.collect())
    in_no_window = events.count() - events.join(distinct, (events.ts >= distinct.start) & (events.ts < distinct.end), "left_semi").count()
    assert windowagg.metrics(got)["unwindowedRows"] == in_no_window > 0


def test_per_key_table_windows_equal_the_range_join_on_the_key(spark):
    """Each customer's own subscription periods (overlapping, of many sizes) against events JOIN periods
    ON the key AND ts >= start AND ts < end and a GROUP BY; a customer with no periods has no windows."""
    rnd = random.Random(5)
    periods = spark.createDataFrame(
        [(c, s, s + rnd.randrange(60, 20_000)) for c in range(8) for s in [rnd.randrange(0, 86_400) for _ in range(12)]],
        "customer int, s long, e long",
    ).select("customer", F.timestamp_seconds("s").alias("start"), F.timestamp_seconds("e").alias("end"))
    events = spark.createDataFrame(
        [(rnd.randrange(10), rnd.randrange(0, 87_000), rnd.randrange(100)) for _ in range(3_000)],
        "customer long, t long, v long",
    ).select("customer", F.timestamp_seconds("t").alias("ts"), "v")
    definition = TableWindows.of(periods, keys=["customer"])
    assert definition.key_columns == "customer"
    got = events.groupBy("customer", window("ts", definition)).agg(F.sum("v").alias("s"), F.count("*").alias("n"))
    got = got.select("customer", "window.start", "window.end", "s", "n")
    p = periods.distinct()
    on = (events.customer == p.customer) & (events.ts >= p.start) & (events.ts < p.end)
    expected = events.join(p, on).groupBy(events.customer, "start", "end").agg(F.sum("v").alias("s"), F.count("*").alias("n"))
    rows = sorted(got.collect())
    assert len(rows) > 80 and {r.customer for r in rows} <= set(range(8))
    assert rows == sorted(expected.collect())
    assert windowagg.metrics(got)["unwindowedRows"] == events.count() - events.join(p, on, "left_semi").count()
    with pytest.raises(AnalysisException, match="has overlapping windows for customer .*, where they were asked to be non-overlapping"):
        events.groupBy("customer", window("ts", TableWindows.of(periods, keys=["customer"], overlapping=False))).count()


def test_table_windows_by_name_in_sql_and_from_python(spark):
    spark.sql(
        "SELECT * FROM VALUES (TIMESTAMP'2024-01-01 00:00:00', TIMESTAMP'2024-01-01 00:10:00'), "
        "(TIMESTAMP'2024-01-01 00:05:00', TIMESTAMP'2024-01-01 00:20:00') AS t(opens, closes)"
    ).createOrReplaceTempView("kinds_periods")
    events = spark.sql(
        "SELECT * FROM VALUES ('a', TIMESTAMP'2024-01-01 00:01:00', 1), ('a', TIMESTAMP'2024-01-01 00:06:00', 2), "
        "('a', TIMESTAMP'2024-01-01 00:30:00', 4) AS t(k, ts, v)"
    )
    events.createOrReplaceTempView("kinds_events")
    definition = TableWindows.of("kinds_periods", start="opens", end="closes")
    assert definition.table == "kinds_periods" and definition.start_column == "opens" and definition.end_column == "closes"
    sql = spark.sql(
        f"SELECT window.start, window.end, sum(v) AS s FROM kinds_events GROUP BY k, windows(ts, '{definition.spec}')"
    )
    api = events.groupBy("k", window("ts", definition)).agg(F.sum("v").alias("s")).select("window.start", "window.end", "s")
    expected = [
        (datetime.datetime(2024, 1, 1, 0, 0), datetime.datetime(2024, 1, 1, 0, 10), 3),
        (datetime.datetime(2024, 1, 1, 0, 5), datetime.datetime(2024, 1, 1, 0, 20), 2),
    ]
    assert sorted(tuple(r) for r in sql.collect()) == sorted(tuple(r) for r in api.collect()) == expected


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: TableWindows.of(42), TypeError, r"a DataFrame or a table name \(a str\), not int"),
        (lambda: TableWindows.of(" "), ValueError, "table name of table windows must not be empty"),
        (lambda: TableWindows.of("t", start=1), TypeError, "start column of table windows must be a column name"),
        (lambda: TableWindows.of("t", end=""), ValueError, "end column of table windows must not be empty"),
        (lambda: TableWindows.of("t").grace(5), TypeError, "a grace period must be a str"),
        (lambda: TableWindows.of("t", keys="customer"), TypeError, "keys of table windows must be a list of column names"),
        (lambda: TableWindows.of("t", keys=7), TypeError, "keys of table windows must be a list of column names"),
        (lambda: TableWindows.of("t", keys=["a, b"]), ValueError, "must name columns, one per item"),
        (lambda: TableWindows.of("t", keys=[]), ValueError, "must name columns, one per item"),
        (lambda: TableWindows.of("t", overlapping="no"), TypeError, "overlapping must be True or False"),
    ],
)
def test_table_windows_arguments_of_the_wrong_type_or_value(make, error, message):
    with pytest.raises(error, match=message):
        make()
