"""Bad input never crashes: generated invalid and edge-case inputs on every public surface.

Each case either gives the right result (the oracle's: tests/brute_force.py and docs/semantics.md's
rules give the windows of one row; empty data gives no windows) or fails with windowagg's own error
naming the problem: an AnalysisException (the JVM's WindowAggException), a ValueError or TypeError
from the Python wrapper, or, for a row whose windows would reach beyond the 64-bit range, a job
failure carrying windowagg's WindowError. Where a listed case's outcome is known, the test requires
it: the oracle's windows, or the error's condition and the words naming the problem. Never a raw JVM
exception (NullPointerException, ClassCastException, ArithmeticException, NumberFormatException...),
an internal error, or bounds wrapped into wrong windows. Cases are generated from fixed seeds, so a
failure reproduces; most stop at analysis, and the queries that run read one row, so the module
stays quick.
"""

import datetime
import math
import random
import re
import zoneinfo
from collections import Counter
from typing import Any, Callable, List, Optional, Tuple

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from windowagg import (
    CalendarWindows,
    CountWindows,
    CumulativeWindows,
    CustomWindows,
    DurationWindows,
    SessionWindows,
    SlidingWindows,
    TableWindows,
    TimeWindows,
    UnlimitedWindows,
    window,
)

import brute_force as bf

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
TS_MIN = -62135596800000000  # 0001-01-01 00:00:00 in µs
TS_MAX = 253402300799999999  # 9999-12-31 23:59:59.999999 in µs
HUGE = datetime.timedelta(days=106751991)  # about Long.MaxValue µs

# What a crash looks like, anywhere in an error's text (the JVM's cause chain included).
CRASH = re.compile(
    r"(NullPointer|ClassCast|Arithmetic|IllegalState|NumberFormat|IndexOutOfBounds|NoSuchElement|DateTime|"
    r"UnsupportedOperation)Exception|OutOfMemoryError|StackOverflowError|MatchError|long overflow|INTERNAL_ERROR|"
    r"CodeGenerator|failed to compile|year -?\d+ is out of range"  # the last: Python could not show a bound
)
# windowagg's own error raised while rows are processed (a time at the end of the range)
RUNTIME_WINDOW_ERROR = re.compile(r"windowagg\.core\.WindowError: .*range of a 64-bit time")

OUTCOMES: Counter = Counter()


def outcome(run: Callable[[], Any]) -> Tuple[str, Any]:
    """("ok", value), or ("error", "[condition] message") for windowagg's own errors, the condition being
    the error's (windowagg's or Spark's) or the Python exception's class; any other failure fails the test."""
    try:
        value = run()
    except (AnalysisException, ValueError, TypeError) as error:
        text = str(error)
        assert not CRASH.search(text), f"a crash instead of a clear error: {text[:2000]}"
        OUTCOMES["error"] += 1
        condition = error.getCondition() if isinstance(error, AnalysisException) else type(error).__name__
        return "error", f"[{condition}] " + text.split("\n\nJVM stacktrace:")[0]
    except Exception as error:  # a job failure: only windowagg's range error may come out of one
        text = str(error)
        assert RUNTIME_WINDOW_ERROR.search(text) and not CRASH.search(text), (
            f"{type(error).__name__} instead of windowagg's error: {text[:3000]}")
        OUTCOMES["error"] += 1
        return "error", "[WindowError] " + RUNTIME_WINDOW_ERROR.search(text).group(0)
    OUTCOMES["ok"] += 1
    return "ok", value


def assert_refused(result: Tuple[str, Any], condition: str, *words: str) -> None:
    """The outcome is the error `condition` with a message holding each of `words` (what names the problem)."""
    kind, value = result
    assert kind == "error", f"expected {condition} naming {words}, got the result {value}"
    assert value.startswith(f"[{condition}] ") and all(word in value for word in words), (
        f"expected {condition} naming {words}, got: {value[:1500]}")


def assert_outcome(result: Tuple[str, Any], expected: Any) -> None:
    """`expected` is the list of windows (s, e, n) the query must give, or an error: (condition, *words)."""
    if isinstance(expected, list):
        kind, value = result
        assert kind == "ok", f"expected the windows {expected}, got {value[:1500]}"
        assert sorted(tuple(row) for row in value) == sorted(expected)
    else:
        assert_refused(result, *expected)


def one_row_sliding(t: int, size: int) -> List[Tuple[int, int, int]]:
    """The oracle's sliding windows (s, e, n) of one row at t: its left window alone."""
    return [(start, end, 1) for start, end in bf.window_bounds([t], size)]


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    print(f"\nbad inputs: {sum(OUTCOMES.values())} tried, {OUTCOMES['error']} windowagg errors, "
          f"{OUTCOMES['ok']} correct results")


@pytest.fixture(scope="module")
def one(spark):
    """One row at t = 1 µs (and ts, its TIMESTAMP), and an empty table of the same shape."""
    df = spark.createDataFrame([("a", 1, 5, 1.0)], "k string, t bigint, v bigint, x double").select(
        "*", F.timestamp_micros("t").alias("ts"), F.col("t").cast("tinyint").alias("tb"),
        F.timestamp_micros("t").cast("timestamp_ntz").alias("tn"))
    df.createOrReplaceTempView("bad_one")
    df.limit(0).createOrReplaceTempView("bad_empty")
    yield df
    spark.catalog.dropTempView("bad_one")
    spark.catalog.dropTempView("bad_empty")


def contains(start: int, end: int, t: int, kind: str) -> bool:
    """Whether a window of `kind` (by its spec's first word) reported as (start, end) holds time t."""
    if kind in ("sliding", "session", "count"):
        return start <= t <= end
    if kind == "duration":
        return start < t <= end
    return start <= t < end


def ticks(bound: str, column: str) -> str:
    """A window bound in ticks of the time column (µs for timestamps), which Python can hold at any time."""
    return f"unix_micros(CAST({bound} AS TIMESTAMP))" if column in ("ts", "tn") else bound


def check_one_row(rows: List[Any], t: int, kind: str, expected: Optional[int] = None) -> None:
    """The oracle for one row at t: every window holds t and counts it once; `expected` windows when known."""
    for row in rows:
        start, end, n = row["s"], row["e"], row["n"]
        assert start <= end, f"wrapped bounds {row} for a row at {t}"
        assert contains(start, end, t, kind), f"window {row} does not hold the row at {t}"
        assert n == 1, row
    if expected is not None:
        assert len(rows) == expected, (rows, t, kind)


# --- Python builders: wrong types, nulls, zero, negative, huge, unparsable ---------------------------

LENGTHS = [
    None, 1.5, True, [1], object(), 0, -1, 1, 2**63, LONG_MAX, LONG_MIN, -(2**63) - 1, "", "   ", "abc", "0 s", "-1 s",
    "10", "1 month", "1 year", "106751991 days", "106751992 days", "9223372036854775807", "9223372036854775808",
    "1.5 us", "1e9 s", "10 minutes 5", "interval", "1 fortnight", "1..5 s", "nan s", "1 ns", "99999999999999999999 days",
    datetime.timedelta(0), datetime.timedelta(days=-1), datetime.timedelta(days=999999999), datetime.timedelta(microseconds=1),
]
BUILDERS = {
    "SlidingWindows.of": lambda s: SlidingWindows.of(s),
    "SessionWindows.withInactivityGap": lambda s: SessionWindows.withInactivityGap(s),
    "SessionWindows.withDynamicGap": lambda s: SessionWindows.withDynamicGap(s),
    "TimeWindows.of": lambda s: TimeWindows.of(s),
    "TimeWindows.advanceBy": lambda s: TimeWindows.of("1 hour").advanceBy(s),
    "TimeWindows.withOffset": lambda s: TimeWindows.of("1 hour").withOffset(s),
    "CumulativeWindows.of(step)": lambda s: CumulativeWindows.of(s, "1 day"),
    "CumulativeWindows.of(max)": lambda s: CumulativeWindows.of("1 hour", s),
    "CumulativeWindows.withOffset": lambda s: CumulativeWindows.of("1 hour", "1 day").withOffset(s),
    "CalendarWindows.days": lambda s: CalendarWindows.days(s),
    "CalendarWindows.weeks": lambda s: CalendarWindows.weeks(1, s),
    "CalendarWindows.advanceBy": lambda s: CalendarWindows.months(3).advanceBy(s),
    "CalendarWindows.inZone": lambda s: CalendarWindows.days(1).inZone(s),
    "UnlimitedWindows.startOn": lambda s: UnlimitedWindows.of().startOn(s),
    "CountWindows.of": lambda s: CountWindows.of(s),
    "CountWindows.tumbling": lambda s: CountWindows.tumbling(s),
    "CountWindows.slide": lambda s: CountWindows.of(3).slide(s),
    "CountWindows.every": lambda s: CountWindows.of(3).every(s),
    "DurationWindows.of": lambda s: DurationWindows.of(s),
    "DurationWindows.tumbling": lambda s: DurationWindows.tumbling(s),
    "DurationWindows.lag": lambda s: DurationWindows.of("1 minute").lag(s),
    "tieBreak": lambda s: CountWindows.of(3).tieBreak(s),
    "grace": lambda s: SlidingWindows.of("1 minute").grace(s),
    "CustomWindows.of": lambda s: CustomWindows.of(s),
    "CustomWindows.of(params)": lambda s: CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=s),
    "TableWindows.of": lambda s: TableWindows.of(s),
    "TableWindows.of(start)": lambda s: TableWindows.of("bad_input_periods", start=s),
    "TableWindows.of(keys)": lambda s: TableWindows.of("bad_input_periods", keys=s if s is None or isinstance(s, list) else [s]),
}


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_builders_take_any_value_or_say_what_is_wrong(spark, one, builder):
    """Every builder given every value: a definition, or a ValueError/TypeError that names the problem.
    A definition that builds is then analysed against each kind of time column."""
    for value in LENGTHS:
        kind, definition = outcome(lambda: BUILDERS[builder](value))
        if kind == "error":  # the wrapper's own error, with a message
            assert re.match(r"\[(ValueError|TypeError)\] .{10}", definition), definition
            continue
        # int values are ticks of an integral column; durations meet a timestamp column
        column = "t" if isinstance(value, int) and not isinstance(value, bool) else "ts"
        outcome(lambda: one.groupBy("k", window(column, definition)).agg(F.count("*").alias("n")))


OPTION_VALUES = (None, "", "bogus", 3, 1.5, ["final"], "FINAL", " updates ", "emit", "seconds", "processing")
# option: (the values among OPTION_VALUES it takes, the error naming a string it refuses); None is the
# default, and a value that is not a string is refused by the wrapper
OPTIONS = {
    "time_unit": ((None, "seconds"), lambda v: ("WINDOWAGG_INVALID_OPTION", f"unknown time unit '{v}'")),
    # emit's words are read ignoring case and surrounding spaces
    "emit": ((None, "FINAL", " updates "), lambda v: ("WINDOWAGG_INVALID_OPTION", "emit must be 'final'", f"got '{v}'")),
    "late_rows": ((None, "emit"), lambda v: ("WINDOWAGG_INVALID_OPTION", "lateRows must be 'count' or 'emit'", f"got '{v}'")),
    "time": ((None,), lambda v: ("WINDOWAGG_INVALID_QUERY", "needs a streaming DataFrame") if v == "processing"
             else ("WINDOWAGG_INVALID_OPTION", "time must be 'event' or 'processing'", f"got '{v}'")),
}
# time columns (built when the test runs): the row's windows at the column's value, or the error naming it
TIME_COLUMNS = [
    (lambda: None, ("TypeError", "the time column must be a column name or a Column, not NoneType")),
    (lambda: 3, ("TypeError", "the time column must be a column name or a Column, not int")),
    (lambda: F.lit(None), ("WINDOWAGG_INVALID_TIME_COLUMN", "has type VOID")),
    (lambda: F.lit("x"), ("WINDOWAGG_INVALID_TIME_COLUMN", "has type STRING")),
    (lambda: F.col("nope"), ("UNRESOLVED_COLUMN.WITH_SUGGESTION", "`nope` cannot be resolved")),
    (lambda: "x", ("WINDOWAGG_INVALID_TIME_COLUMN", "'x' has type DOUBLE")),
    (lambda: "v + 1", ("UNRESOLVED_COLUMN.WITH_SUGGESTION", "`v + 1` cannot be resolved")),  # a name, not an expression
    (lambda: F.col("v") + 1, one_row_sliding(6, 10)),  # v + 1 = 6
    (lambda: F.current_timestamp(), ("WINDOWAGG_INVALID_WINDOW", "size 10 is a number of ticks, but the time column is a timestamp")),
]


def sliding_10_windows(one: Any, column: Any, **options: Any) -> List[Any]:
    return (one.groupBy("k", window(column, SlidingWindows.of(10), **options)).agg(F.count("*").alias("n"))
            .select("window.start", "window.end", "n").collect())


def test_window_options_of_the_wrong_value_or_type(one):
    """Each option with each value: the row's window (the oracle's), or the error naming the option and value."""
    for name, (takes, refusal) in OPTIONS.items():
        for value in OPTION_VALUES:
            if value in takes:
                expected = one_row_sliding(1, 10)
            elif isinstance(value, str):
                expected = refusal(value)
            else:
                expected = ("TypeError", f"{name} must be a str", f"not {type(value).__name__}")
            assert_outcome(outcome(lambda: sliding_10_windows(one, "t", **{name: value})), expected)
    for column, expected in TIME_COLUMNS:
        assert_outcome(outcome(lambda: sliding_10_windows(one, column())), expected)
    for definition in (None, "sliding 10", 10, SlidingWindows):
        assert_refused(outcome(lambda: window("t", definition)), "TypeError", "expected a window definition",
                       f"not {type(definition).__name__}")


# --- spec strings: garbage, truncations, unknown words, huge numbers ----------------------------------

VALID_SPECS = [
    "sliding 10 minutes grace 1 minute", "session gap 5 minutes", "session gap column v", "tumbling 1 minute offset 10 seconds",
    "hopping 1 hour every 10 minutes offset 5 seconds", "cumulative 1 hour up to 1 day offset 1 hour",
    "calendar 3 months every 1 in 'America/New_York'", "calendar 2 weeks from sunday", "unlimited starting 2024-01-01T00:00:00Z",
    "count 30 rows every 10 rows lag 5 seconds tie break v", "count 3 rows every 10 seconds", "duration 20 seconds every 5 rows",
    "duration 20 seconds every 10 seconds lag 5 seconds", "custom windowagg.examples.FiscalQuarters(firstMonth=2) grace 1 day",
]
WORDS = [
    "sliding", "session", "tumbling", "hopping", "cumulative", "calendar", "unlimited", "count", "duration", "custom", "gap",
    "column", "every", "offset", "grace", "up", "to", "lag", "tie", "break", "from", "in", "starting", "rows", "row", "days",
    "month", "minutes", "s", "us", "ns", "fortnight", "0", "-1", "1", "7", "2147483648", "9223372036854775807",
    "9223372036854775808", "99999999999999999999", "106751991", "106751992", "1.5", "1e9", "NaN", "'", "''", "'Mars/Base'",
    "(", ")", "=", ",", "monday", "funday", "2024-01-01T00:00:00Z", "+1000000000-01-01T00:00:00Z", "\u0000", "\u0661", "`v`",
]
EDGE_SPECS = [
    "", " ", "calendar 99999999999 days", "calendar 1 day every 99999999999", "unlimited starting 99999999999999999999",
    "unlimited starting -9223372036854775808", "unlimited starting 9223372036854775807", "unlimited starting +1000000000-01-01T00:00:00Z",
    "count 99999999999999999999 rows", "count 3 rows every 99999999999999999999 rows", "sliding 106751991 days",
    "sliding 106751992 days", "tumbling 9223372036854775807", "hopping 9223372036854775807 every 9223372036854775806",
    "tumbling 9223372036854775807 offset 9223372036854775806", "cumulative 9223372036854775807 up to 9223372036854775807",
    "cumulative 4611686018427387904 up to 9223372036854775807", "session gap 9223372036854775807",
    "duration 9223372036854775807 every 9223372036854775807", "count 9223372036854775807 rows",
    "count 3 rows every 9223372036854775807", "calendar 2147483647 years", "calendar 1 day in '", "sliding 1 s grace 1 s grace 1 s",
    "SLIDING 1 S", "custom java.lang.String", "custom windowagg.examples.FiscalQuarters(firstMonth=13)",
    "custom windowagg.examples.FiscalQuarters(firstMonth=", "custom windowagg.examples.BusinessDays(",
]


def generated_specs(seed: int, n: int) -> List[str]:
    """Random word salads, valid specs cut short, and valid specs with one word swapped for a random one."""
    rnd = random.Random(seed)
    specs = []
    for _ in range(n):
        choice = rnd.random()
        if choice < 0.4:
            specs.append(" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(1, 7))))
        elif choice < 0.7:
            spec = rnd.choice(VALID_SPECS)
            specs.append(spec[: rnd.randint(0, len(spec))])
        else:
            words = rnd.choice(VALID_SPECS).split(" ")
            words[rnd.randrange(len(words))] = rnd.choice(WORDS)
            specs.append(" ".join(words))
    return specs


def spec_queries(spec: str, column: str, unit: Optional[str]) -> List[str]:
    literal = spec.replace("'", "''")
    unit_arg = "" if unit is None else f", '{unit}'"
    return [
        f"SELECT k, {ticks('window.start', column)} AS s, {ticks('window.end', column)} AS e, count(1) AS n "
        f"FROM bad_one GROUP BY k, windows({column}, '{literal}'{unit_arg})",
        f"SELECT {ticks('window_start', column)} AS s, {ticks('window_end', column)} AS e, n "
        f"FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY ({column}), '{literal}', 'count(1) AS n'{unit_arg})",
    ]


def test_specs_in_sql_parse_or_say_what_is_wrong(spark, one):
    """Generated and edge-case specs through windows() and window_agg(), on each kind of time column;
    those that analyse run on the one row and are checked against the oracle."""
    columns = [("ts", None), ("t", None), ("t", "microseconds"), ("tb", "seconds")]  # the row is at 1 tick of each
    runs = 0
    for i, spec in enumerate(EDGE_SPECS + generated_specs(13, 50)):
        kind_word = spec.strip().split(" ")[0].lower() if spec.strip() else ""
        # windows() or window_agg(), on each kind of column in turn
        for sql in [spec_queries(spec, *columns[i % 4])[i % 2]]:
            kind, df = outcome(lambda: spark.sql(sql))
            # kinds with few windows per row run on the row; others (a hopping or duration window every
            # tick puts a row in billions of windows) are checked at analysis only
            few = kind_word in ("sliding", "session", "tumbling", "count", "unlimited") or (kind_word == "duration" and "every" not in spec)
            if kind == "ok" and few and runs < 15:
                runs += 1
                kind, rows = outcome(lambda: df.collect())
                if kind == "ok":
                    check_one_row(rows, 1, kind_word)


DAY_US = 86_400_000_000
TS, T, T_US = ("ts", ""), ("t", ""), ("t", ", 'microseconds'")  # a time column, and its unit argument
NOT_A_LENGTH = "must be an INTERVAL, a string like '10 minutes' or an integer number of ticks"
NEEDS_A_UNIT = ("WINDOWAGG_INVALID_WINDOW", "the time column is an integral epoch", "give the column's unit as the option timeUnit")
# (size, the time column it is given for, expected: the size in ticks, or the error of every function)
SQL_SIZES = [
    ("NULL", TS, ("WINDOWAGG_INVALID_QUERY", "must not be null")),
    ("CAST(NULL AS STRING)", T, ("WINDOWAGG_INVALID_QUERY", "must not be null")),
    ("'abc'", T_US, ("WINDOWAGG_INVALID_WINDOW", "cannot parse 'abc' as a length of time")),
    ("''", TS, ("WINDOWAGG_INVALID_WINDOW", "cannot parse '' as a length of time")),
    ("0", T, ("WINDOWAGG_INVALID_WINDOW", "must be positive, got 0 ticks")),
    ("-5", T_US, ("WINDOWAGG_INVALID_WINDOW", "must be positive, got -5 ticks")),
    ("1.5", TS, ("WINDOWAGG_INVALID_WINDOW", NOT_A_LENGTH, "got DECIMAL(2,1)")),
    ("array(1)", T, ("WINDOWAGG_INVALID_WINDOW", NOT_A_LENGTH, "got ARRAY<INT>")),
    ("t", T_US, ("WINDOWAGG_INVALID_QUERY", "must be a constant, got bad_one.t")),
    ("INTERVAL '0' MINUTE", TS, ("WINDOWAGG_INVALID_WINDOW", "must be positive, got 0 seconds")),
    ("INTERVAL '-1' MINUTE", T, ("WINDOWAGG_INVALID_WINDOW", "must be positive, got -1 minute")),
    ("INTERVAL '1' MONTH", T_US, ("WINDOWAGG_INVALID_WINDOW", "INTERVAL '1' MONTH: months and years have no fixed length")),
    ("INTERVAL '106751991' DAY", TS, 106_751_991 * DAY_US),
    ("make_interval(0, 0, 0, 2000000000)", TS, ("WINDOWAGG_INVALID_WINDOW", "2000000000 days is too large")),
    ("make_interval(0, 0, 0, 106751992)", T_US, ("WINDOWAGG_INVALID_WINDOW", "106751992 days is too large")),
    ("make_interval(0, 0, 0, -1)", TS, ("WINDOWAGG_INVALID_WINDOW", "must be positive, got -1 day")),
    ("make_interval(0, 1)", T, ("WINDOWAGG_INVALID_WINDOW", "months have no fixed length")),
    ("9223372036854775807", T_US, LONG_MAX),
    ("CAST(127 AS TINYINT)", TS, ("WINDOWAGG_INVALID_WINDOW", "127 is a number of ticks, but the time column is a timestamp")),
    ("'106751991 days'", T, NEEDS_A_UNIT),
    ("'1 month'", T_US, ("WINDOWAGG_INVALID_WINDOW", "'1 month': months and years have no fixed length")),
    ("true", TS, ("WINDOWAGG_INVALID_WINDOW", NOT_A_LENGTH, "got BOOLEAN")),
    ("X'00'", T, ("WINDOWAGG_INVALID_WINDOW", NOT_A_LENGTH, "got BINARY")),
    ("CAST(1 AS DECIMAL(3,0))", T_US, ("WINDOWAGG_INVALID_WINDOW", NOT_A_LENGTH, "got DECIMAL(3,0)")),
    ("rand()", TS, ("WINDOWAGG_INVALID_QUERY", "must be a constant, got rand()")),
    ("'1 s' || ''", T, NEEDS_A_UNIT),
]
# a table function's arguments cannot name the table's columns: Spark finds none
TABLE_FUNCTION_ERRORS = {"t": ("UNRESOLVED_COLUMN.WITHOUT_SUGGESTION", "`t` cannot be resolved")}
# (options, the time column; expected: the options name no error, or the error naming it)
SQL_OPTIONS = [
    ("''", "ts", ("WINDOWAGG_INVALID_TIME_COLUMN", "a time unit ('') applies only to integral time columns")),
    ("NULL", "t", ("WINDOWAGG_INVALID_QUERY", "the time unit or options argument must be a constant string, got NULL")),
    ("'='", "ts", ("WINDOWAGG_INVALID_OPTION", "unknown window option ''")),
    ("'emit='", "t", ("WINDOWAGG_INVALID_OPTION", "emit must be 'final'", "got ''")),
    ("'emit=maybe'", "ts", ("WINDOWAGG_INVALID_OPTION", "emit must be 'final'", "got 'maybe'")),
    ("'bogus=1'", "t", ("WINDOWAGG_INVALID_OPTION", "unknown window option 'bogus'")),
    ("'timeUnit=fortnights'", "ts", ("WINDOWAGG_INVALID_TIME_COLUMN", "a time unit ('fortnights') applies only to integral time columns")),
    ("'fortnights'", "t", ("WINDOWAGG_INVALID_OPTION", "unknown time unit 'fortnights'")),
    ("',,,'", "ts", ("WINDOWAGG_INVALID_TIME_COLUMN", "a time unit (',,,') applies only to integral time columns")),
    ("'emit=final,emit=updates'", "t", ("WINDOWAGG_INVALID_OPTION", "window option 'emit' is given 2 times (emit=final, emit=updates): give it once")),
    ("'late_rows=emit, lateRows=count'", "t", ("WINDOWAGG_INVALID_OPTION", "window option 'lateRows' is given 2 times")),
    ("'lateRows=emit'", "ts", None),
    ("'time=processing'", "t", ("WINDOWAGG_INVALID_QUERY", "time 'processing' needs a streaming DataFrame")),
    ("'time=never'", "ts", ("WINDOWAGG_INVALID_OPTION", "time must be 'event' or 'processing', got 'never'")),
    ("1", "t", ("WINDOWAGG_INVALID_QUERY", "the time unit or options argument must be a constant string, got 1")),
    ("'timeUnit='", "ts", ("WINDOWAGG_INVALID_TIME_COLUMN", "a time unit ('') applies only to integral time columns")),
    ("' seconds '", "t", None),
    ("CAST(NULL AS STRING)", "ts", ("WINDOWAGG_INVALID_QUERY", "the time unit or options argument must not be null")),
    ("'a=b=c'", "t", ("WINDOWAGG_INVALID_OPTION", "unknown window option 'a'")),
]
# windows of 10 ticks on each time column (the row is at 1 tick of both): as a spec, and as a size
TEN_TICKS = {"ts": ("'sliding 10 microseconds'", "'10 microseconds'"), "t": ("'sliding 10'", "10")}


def test_sql_size_and_option_arguments(spark, one):
    """sliding_window, sliding_window_agg and session_window_agg with every kind of size, and options on the
    functions that take them: the oracle's windows of the row at 1 tick, or the error naming the argument."""
    for size, (column, unit), expected in SQL_SIZES:
        start, end = ticks("window.start", column), ticks("window.end", column)
        table_start, table_end = ticks("window_start", column), ticks("window_end", column)
        table = f"(TABLE(bad_one) PARTITION BY k ORDER BY ({column}), {size}, 'count(1) AS n'{unit})"
        for sql, function in (
            (f"SELECT {start}, {end}, count(1) FROM bad_one GROUP BY k, sliding_window({column}, {size}{unit})", "sliding"),
            (f"SELECT {table_start}, {table_end}, n FROM sliding_window_agg{table}", "sliding"),
            (f"SELECT {table_start}, {table_end}, n FROM session_window_agg{table}", "session"),
        ):
            if isinstance(expected, int):  # a session of one row is [t, t]
                want = one_row_sliding(1, expected) if function == "sliding" else [(1, 1, 1)]
            else:
                want = TABLE_FUNCTION_ERRORS.get(size, expected) if "_agg" in sql else expected
            assert_outcome(outcome(lambda: spark.sql(sql).collect()), want)
    for i, (option, column, expected) in enumerate(SQL_OPTIONS):
        spec, size = TEN_TICKS[column]
        start, end = ticks("window.start", column), ticks("window.end", column)
        sql = (
            f"SELECT {start}, {end}, count(1) FROM bad_one GROUP BY k, windows({column}, {spec}, {option})",
            f"SELECT {ticks('window_start', column)}, {ticks('window_end', column)}, n "
            f"FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY ({column}), {spec}, 'count(1) AS n', {option})",
            f"SELECT {start}, {end}, count(1) FROM bad_one GROUP BY k, sliding_window({column}, {size}, {option})",
        )[i % 3]
        assert_outcome(outcome(lambda: spark.sql(sql).collect()), one_row_sliding(1, 10) if expected is None else expected)


def test_days_overflowing_microseconds_are_an_error(spark, one):
    """A calendar interval of 2e9 days is beyond a 64-bit count of µs: it must not wrap into a small size."""
    kind, message = outcome(lambda: spark.sql(
        "SELECT count(1) FROM bad_one GROUP BY k, sliding_window(ts, make_interval(0, 0, 0, 2000000000))"))
    assert kind == "error" and "too large" in message, message


WINDOW_AGG = "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY ({}), {})"
NOT_AGGREGATED = "is neither a grouping key nor inside an aggregate function"
INVALID_QUERY, INVALID_TIME_COLUMN = "WINDOWAGG_INVALID_QUERY", "WINDOWAGG_INVALID_TIME_COLUMN"
# (query, the error naming its problem)
MISC_SQL = [
    ("SELECT count(1) FROM bad_one GROUP BY windows(ts)", (INVALID_QUERY, "windows takes (time_column, spec [, options]), got 1 argument")),
    ("SELECT count(1) FROM bad_one GROUP BY windows()", (INVALID_QUERY, "windows takes", "got 0 argument")),
    ("SELECT count(1) FROM bad_one GROUP BY windows(ts, 'sliding 1 s', 'emit=final', 4)", (INVALID_QUERY, "windows takes", "got 4 argument")),
    ("SELECT count(1) FROM bad_one GROUP BY windows(ts, NULL)", (INVALID_QUERY, "the window spec of windows must be a constant string, got NULL")),
    ("SELECT count(1) FROM bad_one GROUP BY windows(ts, 5)", (INVALID_QUERY, "the window spec of windows must be a constant string, got 5")),
    ("SELECT count(1) FROM bad_one GROUP BY windows(ts, k)", (INVALID_QUERY, "the window spec of windows must be a constant string, got bad_one.k")),
    ("SELECT count(1) FROM bad_one GROUP BY windows(NULL, 'sliding 1 s')", (INVALID_TIME_COLUMN, "time column 'NULL' has type VOID")),
    ("SELECT count(1) FROM bad_one GROUP BY windows(x, 'sliding 1 s')", (INVALID_TIME_COLUMN, "time column 'bad_one.x' has type DOUBLE")),
    ("SELECT count(1) FROM bad_one GROUP BY windows(CAST(t AS DECIMAL(20,0)), 'sliding 1')", (INVALID_TIME_COLUMN, "has type DECIMAL(20,0)")),
    ("SELECT windows(ts, 'sliding 1 s') FROM bad_one", (INVALID_QUERY, "can only be used as a grouping key")),
    ("SELECT count(1) FROM bad_one WHERE windows(ts, 'sliding 1 s') IS NULL", (INVALID_QUERY, "can only be used as a grouping key")),
    ("SELECT * FROM window_agg(TABLE(bad_one), 'sliding 1 s', 'count(1) AS n')", (INVALID_QUERY, "window_agg needs the time column in ORDER BY")),
    (WINDOW_AGG.format("ts", "'sliding 1 s'"), (INVALID_QUERY, "window_agg takes 3 or 4 arguments, got 2")),
    (WINDOW_AGG.format("ts", "'sliding 1 s', ''"), (INVALID_QUERY, "cannot parse the aggregate list ''")),
    (WINDOW_AGG.format("ts", "'sliding 1 s', NULL"), (INVALID_QUERY, "aggregates must be a constant string, got NULL")),
    (WINDOW_AGG.format("ts", "'sliding 1 s', 'count(1) AS n FROM bad_one'"),
     (INVALID_QUERY, "the aggregate list 'count(1) AS n FROM bad_one' must be a plain list of expressions")),
    (WINDOW_AGG.format("ts", "'sliding 1 s', 'v'"), (INVALID_QUERY, "column bad_one.v " + NOT_AGGREGATED)),
    (WINDOW_AGG.format("ts", "'sliding 1 s', '*'"), (INVALID_QUERY, "column bad_one.t, bad_one.v, bad_one.x", NOT_AGGREGATED)),
    (WINDOW_AGG.format("ts", "'sliding 1 s', 'count(1)); DROP TABLE x; --'"),
     (INVALID_QUERY, "cannot parse the aggregate list 'count(1)); DROP TABLE x; --'")),
    (WINDOW_AGG.format("ts", "'sliding 1 s', 'sum(nope) AS s'"), (INVALID_QUERY, "column nope ")),
    (WINDOW_AGG.format("ts, t", "'sliding 1 s', 'count(1) AS n'"), (INVALID_QUERY, "window_agg needs exactly one time column in ORDER BY, got 2")),
    (WINDOW_AGG.format("ts DESC", "'sliding 1 s', 'count(1) AS n'"), (INVALID_QUERY, "window_agg orders rows by time ascending; remove DESC")),
    ("SELECT * FROM window_agg(1, 'sliding 1 s', 'count(1) AS n')",
     (INVALID_QUERY, "the first argument of window_agg must be a TABLE(...) argument, got 1")),
    (WINDOW_AGG.format("ts", "'sliding 1 s', 'count(1) AS n', 'emit=final', 5"), (INVALID_QUERY, "window_agg takes 3 or 4 arguments, got 5")),
    (WINDOW_AGG.format("ts", "'sliding 1 s', 'new_rows(count(1)) AS n'"),
     (INVALID_QUERY, "new_rows(count(1)) is Storm's window view, for Storm's windows")),
    (WINDOW_AGG.format("ts", "'count 3 rows', 'new_rows(1) AS n'"), (INVALID_QUERY, "new_rows takes an expression of aggregates", "got 1")),
    (WINDOW_AGG.format("ts", "'count 3 rows', 'new_rows() AS n'"), (INVALID_QUERY, "new_rows takes one aggregate", "got 0 arguments")),
    (WINDOW_AGG.format("ts", "'count 3 rows', 'new_rows(new_rows(count(1))) AS n'"),
     (INVALID_QUERY, "not of other views", "got new_rows(count(1))")),
    ("SELECT new_rows(count(1)) FROM bad_one", (INVALID_QUERY, "can only be used in an aggregation grouped by Storm's windows")),
    (WINDOW_AGG.format("t", "'session gap column x', 'count(1) AS n'"), (INVALID_TIME_COLUMN, "the gap column 'bad_one.x' has type DOUBLE")),
    (WINDOW_AGG.format("t", "'session gap column k', 'count(1) AS n'"), (INVALID_TIME_COLUMN, "the gap column 'bad_one.k' has type STRING")),
    (WINDOW_AGG.format("t", "'count 3 rows tie break nope', 'count(1) AS n'"), ("UNRESOLVED_COLUMN.WITH_SUGGESTION", "`nope` cannot be resolved")),
    (WINDOW_AGG.format("t", "'count 3 rows every 10 seconds', 'count(1) AS n'"), NEEDS_A_UNIT),
]


def test_malformed_sql_calls(spark, one):
    for sql, expected in MISC_SQL:
        assert_refused(outcome(lambda: spark.sql(sql).collect()), *expected)


# --- data: empty, one row, times at the ends of each type's range, NaN and infinities ----------------

# the oracle: the windows (start, end) of one row at time t of a column of the given type
Windows = Callable[[int, str], List[Tuple[int, int]]]


def ceiling(t: int, step: int) -> int:
    """The first multiple of step at or after t."""
    return -(-t // step) * step


def at_row(windows: Callable[[int], List[Tuple[int, int]]]) -> Windows:
    """The windows of a kind that does not read the calendar: the same for every type of time column."""
    return lambda t, type_name: windows(t)


def storm_duration(length: int, slide: int) -> Windows:
    """Storm's duration windows (end - length, end] with ends at multiples of the slide, those holding t."""
    return at_row(lambda t: [(end - length, end) for end in range(ceiling(t, slide), t + length, slide)])


def storm_count_every(slide: int) -> Windows:
    """A count window sliding in time over one row: from the row to the first multiple of the slide at or after it."""
    return at_row(lambda t: [(t, ceiling(t, slide))])


def ending_at_row(length: int) -> Windows:
    """The left sliding window [t - length, t] of a row alone (no right window without a later row), or
    Storm's duration window (t - length, t] at the row: the same bounds."""
    return at_row(lambda t: [(t - length, t)])


SINGLE = at_row(lambda t: [(t, t)])  # one row's session, and its count window

EDGE_DEFINITIONS = [  # (definition, the windows of one row at t)
    (SlidingWindows.of(10), ending_at_row(10)),
    (SessionWindows.withInactivityGap(10), SINGLE),
    (TimeWindows.of(10), at_row(bf.time_windows_for(10, 10))),
    (TimeWindows.of(10).advanceBy(5), at_row(bf.time_windows_for(10, 5))),
    (TimeWindows.of(10).advanceBy(3).withOffset(2), at_row(bf.time_windows_for(10, 3, 2))),
    (CumulativeWindows.of(LONG_MAX, LONG_MAX), at_row(bf.cumulative_windows_for(LONG_MAX, LONG_MAX))),
    (TimeWindows.of(LONG_MAX), at_row(bf.time_windows_for(LONG_MAX, LONG_MAX))),
    (UnlimitedWindows.of().startOn(LONG_MIN), at_row(lambda t: [(LONG_MIN, LONG_MAX)] if t < LONG_MAX else [])),
    (CountWindows.of(3), SINGLE),
    (CountWindows.of(3).every(10), storm_count_every(10)),
    (DurationWindows.of(10), ending_at_row(10)),
    (DurationWindows.of(10).every(4), storm_duration(10, 4)),
]


def assert_windows_per_key(df: Any, column: str, type_name: str, definition: Any, windows: Windows) -> None:
    """One row per key (its time as the key's text), each key's windows (s, e, n in ticks) those of the oracle,
    counting the row once; a key whose windows would reach beyond the 64-bit range fails with windowagg's range
    error, run alone (it fails the job of every key with it)."""
    expected = {}
    for key in [r["k"] for r in df.select("k").collect()]:
        expected[key] = sorted((start, end, 1) for start, end in windows(int(key), type_name))

    def run(part: Any) -> Tuple[str, Any]:
        return outcome(lambda: part.groupBy("k", window(column, definition)).agg(F.count("*").alias("n"))
                       .selectExpr("k", f"{ticks('window.start', column)} AS s", f"{ticks('window.end', column)} AS e", "n")
                       .collect())

    in_range = [k for k, rows in expected.items() if all(LONG_MIN <= bound <= LONG_MAX for r in rows for bound in r[:2])]
    kind, rows = run(df.where(F.col("k").isin(in_range)))
    assert kind == "ok", (definition, rows)
    got = {key: sorted((r["s"], r["e"], r["n"]) for r in rows if r["k"] == key) for key in in_range}
    assert got == {key: expected[key] for key in in_range}, definition
    for key in set(expected) - set(in_range):
        assert_refused(run(df.where(F.col("k") == key)), "WindowError", "range of a 64-bit time")


def test_one_row_at_the_ends_of_bigint_and_tinyint(spark):
    """One row per key at Long.MinValue, -1, 0, Long.MaxValue... (BIGINT, ticks) and at -128, 127 (TINYINT):
    the windows that hold it, counted once, or an error naming the range, never bounds wrapped around the range."""
    for times, cast in (((LONG_MIN, LONG_MIN + 11, 0, LONG_MAX - 11, LONG_MAX), "bigint"),
                        ((-128, 127), "tinyint")):
        df = spark.createDataFrame([(str(t), t) for t in times], "k string, t bigint").select(
            "k", F.col("t").cast(cast).alias("t"))
        for definition, windows in EDGE_DEFINITIONS:
            assert_windows_per_key(df, "t", cast, definition, windows)


# --- calendars at the ends of the timestamp range (local dates in years 0 and 10000 included) -----------

EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
CYCLE_DAYS = 146_097  # 400 Gregorian years: dates repeat with this period, which reaches years 0 and 10000


def days_since_epoch(year: int, month: int, day: int = 1) -> int:
    """The day, counted from 1970-01-01, of a date of the proleptic Gregorian calendar (years 0 to 10000)."""
    shift = 0 if 1 <= year <= 9999 else (400 if year < 1 else -400)
    return datetime.date(year + shift, month, day).toordinal() - EPOCH_ORDINAL - shift // 400 * CYCLE_DAYS


def year_and_month(days: int) -> Tuple[int, int]:
    """The year and month of a day counted from 1970-01-01."""
    ordinal = days + EPOCH_ORDINAL
    shift = 0 if 1 <= ordinal <= datetime.date.max.toordinal() else (1 if ordinal < 1 else -1)
    date = datetime.date.fromordinal(ordinal + shift * CYCLE_DAYS)
    return date.year - shift * 400, date.month


def utc_offset(zone: str, micros: int) -> int:
    """The zone's offset (µs) at a time; years Python cannot hold take the nearest day's (no zone changes
    its offset at the ends of the range). Times are read as local or UTC alike: none is near a change."""
    days = min(max(micros // DAY_US, days_since_epoch(1, 1, 2)), days_since_epoch(9999, 12, 30))
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(days=days)
    return zoneinfo.ZoneInfo(zone).utcoffset(moment) // datetime.timedelta(microseconds=1)


def calendar_months(months: int, first_month: int = 1, zone: str = "UTC") -> Windows:
    """The window of `months` calendar months (they start in first_month, first_month + months, ...) holding t,
    from local midnight to local midnight in `zone` for a TIMESTAMP; a TIMESTAMP_NTZ is a local time already."""

    def windows(t: int, type_name: str) -> List[Tuple[int, int]]:
        here = zone if type_name == "timestamp" else "UTC"
        year, month = year_and_month((t + utc_offset(here, t)) // DAY_US)
        index = year * 12 + month - first_month
        first = index - index % months + first_month - 1  # months since year 0, of the window's first month
        bounds = [days_since_epoch(m // 12, m % 12 + 1) * DAY_US for m in (first, first + months)]
        return [tuple(b - utc_offset(here, b) for b in bounds)]

    return windows


HUGE_US = HUGE // datetime.timedelta(microseconds=1)
UNLIMITED_END = days_since_epoch(9999, 12, 31) * DAY_US  # 9999-12-31T00:00:00Z
TIMESTAMP_DEFINITIONS = [  # (definition, the windows of one row at t, whether it reads the calendar)
    # the longest sizes a timestamp can take: 106751991 days is about Long.MaxValue µs (as text a duration is
    # at most Long.MaxValue ns, about 292 years, so these are timedeltas)
    (SlidingWindows.of(HUGE), ending_at_row(HUGE_US), False),
    (SlidingWindows.of("1 day"), ending_at_row(DAY_US), False),
    (SessionWindows.withInactivityGap(HUGE), SINGLE, False),
    (TimeWindows.of("1 day"), at_row(bf.time_windows_for(DAY_US, DAY_US)), True),
    (TimeWindows.of(HUGE).advanceBy(HUGE / 2), at_row(bf.time_windows_for(HUGE_US, HUGE_US // 2)), False),
    (CumulativeWindows.of("1 hour", "1 day"), at_row(bf.cumulative_windows_for(DAY_US // 24, DAY_US)), False),
    (CalendarWindows.years(1), calendar_months(12), True),
    (CalendarWindows.months(1).inZone("Pacific/Kiritimati"), calendar_months(1, zone="Pacific/Kiritimati"), True),
    (UnlimitedWindows.of(), at_row(lambda t: [(0, UNLIMITED_END)] if 0 <= t < UNLIMITED_END else []), True),
    (CountWindows.of(3).every("1 day"), storm_count_every(DAY_US), False),
    (DurationWindows.of(HUGE), ending_at_row(HUGE_US), False),
    (DurationWindows.tumbling(HUGE), storm_duration(HUGE_US, HUGE_US), False),
    (CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=2), calendar_months(3, first_month=2), True),
]


def test_one_row_at_the_ends_of_timestamps(spark):
    """TIMESTAMP and TIMESTAMP_NTZ at 0001-01-01 and 9999-12-31 23:59:59.999999 through every kind."""
    times = (TS_MIN, TS_MIN + 1, 0, TS_MAX - 1, TS_MAX)
    for type_name in ("timestamp", "timestamp_ntz"):
        df = spark.createDataFrame([(str(t), t) for t in times], "k string, t bigint").select(
            "k", F.timestamp_micros("t").cast(type_name).alias("ts"))
        for definition, windows, reads_the_calendar in TIMESTAMP_DEFINITIONS:
            if type_name == "timestamp_ntz" and not reads_the_calendar:
                continue  # TIMESTAMP_NTZ differs in the zone only: the kinds that read the calendar
            assert_windows_per_key(df, "ts", type_name, definition, windows)


def test_empty_data_gives_no_windows(spark, one):
    """Every valid spec (on the BIGINT column in µs, where each is valid) gives no windows of no rows."""
    for spec in VALID_SPECS:
        assert_outcome(outcome(lambda: spark.sql(
            f"SELECT * FROM window_agg(TABLE(bad_empty) PARTITION BY k ORDER BY (t), '{spec.replace(chr(39), chr(39) * 2)}', "
            "'count(1) AS n, sum(x) AS total', 'microseconds')").collect()), [])


def spark_max(values: List[float]) -> float:
    """Spark's max of doubles: NaN is larger than every other value."""
    return math.nan if any(math.isnan(v) for v in values) else max(values)


def test_nan_and_infinite_aggregate_inputs(spark):
    """NaN and ±Infinity in the aggregated doubles give Spark's values for the rows of each window."""
    inf = math.inf
    xs = [1.0, math.nan, inf, -inf, 2.5, -0.0, inf, 1e308, 1e308, -1e308]
    rows = [("a", i * 3, x) for i, x in enumerate(xs)]
    df = spark.createDataFrame(rows, "k string, t bigint, x double")
    result = (df.groupBy("k", window("t", SlidingWindows.of(5)))
              .agg(F.sum("x").alias("total"), F.max("x").alias("top"), F.min("x").alias("low"), F.count("*").alias("n"))
              .select("window.start", "window.end", "total", "top", "low", "n").collect())
    assert result
    for row in result:
        inside = [x for _, t, x in rows if row["start"] <= t <= row["end"]]
        assert row["n"] == len(inside)
        expected_sum = sum(inside)  # at most two rows: the order of the additions does not matter
        same = (math.isnan(row["total"]) and math.isnan(expected_sum)) or row["total"] == pytest.approx(expected_sum)
        assert same, (row, inside)
        top = spark_max(inside)
        assert (math.isnan(row["top"]) and math.isnan(top)) or row["top"] == top, (row, inside)
        low = min(inside, key=lambda v: (math.isnan(v), v))
        assert (math.isnan(row["low"]) and math.isnan(low)) or row["low"] == low, (row, inside)
