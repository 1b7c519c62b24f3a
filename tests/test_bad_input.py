"""Bad input never crashes: generated invalid and edge-case inputs on every public surface.

Each case either gives the right result (checked against a small oracle: one row is in windows that
hold its time, once each; empty data gives no windows) or fails with windowagg's own error naming the
problem: an AnalysisException (the JVM's WindowAggException), a ValueError or TypeError from the
Python wrapper, or, for a time at the very end of the 64-bit range, a job failure carrying
windowagg's WindowError. Never a raw JVM exception (NullPointerException, ClassCastException,
ArithmeticException, NumberFormatException...), an internal error, or bounds wrapped into wrong
windows. Cases are generated from fixed seeds, so a failure reproduces; most stop at analysis, and
the queries that run read one row, so the module stays quick.
"""

import datetime
import math
import random
import re
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
    """("ok", value) or ("error", message) for windowagg's own errors; any other failure fails the test."""
    try:
        value = run()
    except (AnalysisException, ValueError, TypeError) as error:
        text = str(error)
        assert not CRASH.search(text), f"a crash instead of a clear error: {text[:2000]}"
        OUTCOMES["error"] += 1
        return "error", text.split("\n\nJVM stacktrace:")[0]
    except Exception as error:  # a job failure: only windowagg's range error may come out of one
        text = str(error)
        assert RUNTIME_WINDOW_ERROR.search(text) and not CRASH.search(text), (
            f"{type(error).__name__} instead of windowagg's error: {text[:3000]}")
        OUTCOMES["error"] += 1
        return "error", RUNTIME_WINDOW_ERROR.search(text).group(0)
    OUTCOMES["ok"] += 1
    return "ok", value


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
        if kind == "error":
            assert len(definition) > 10, definition
            continue
        # int values are ticks of an integral column; durations meet a timestamp column
        column = "t" if isinstance(value, int) and not isinstance(value, bool) else "ts"
        outcome(lambda: one.groupBy("k", window(column, definition)).agg(F.count("*").alias("n")))


def test_window_options_of_the_wrong_value_or_type(one):
    definition = SlidingWindows.of(10)
    for name in ("time_unit", "emit", "late_rows", "time"):
        for value in (None, "", "bogus", 3, 1.5, ["final"], "FINAL", " updates ", "emit", "seconds", "processing"):
            outcome(lambda: one.groupBy("k", window("t", definition, **{name: value})).count())
    for column in (None, 3, F.lit(None), F.lit("x"), F.col("nope"), "x", "v + 1", F.col("v") + 1, F.current_timestamp()):
        outcome(lambda: one.groupBy("k", window(column, definition)).count())
    for definition in (None, "sliding 10", 10, SlidingWindows):
        kind, message = outcome(lambda: window("t", definition))
        assert kind == "error" and "window definition" in message


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


SQL_SIZES = [
    "NULL", "CAST(NULL AS STRING)", "'abc'", "''", "0", "-5", "1.5", "array(1)", "t", "INTERVAL '0' MINUTE", "INTERVAL '-1' MINUTE",
    "INTERVAL '1' MONTH", "INTERVAL '106751991' DAY", "make_interval(0, 0, 0, 2000000000)", "make_interval(0, 0, 0, 106751992)",
    "make_interval(0, 0, 0, -1)", "make_interval(0, 1)", "9223372036854775807", "CAST(127 AS TINYINT)", "'106751991 days'",
    "'1 month'", "true", "X'00'", "CAST(1 AS DECIMAL(3,0))", "rand()", "'1 s' || ''",
]
SQL_OPTIONS = [
    "''", "NULL", "'='", "'emit='", "'emit=maybe'", "'bogus=1'", "'timeUnit=fortnights'", "'fortnights'", "',,,'",
    "'emit=final,emit=updates'", "'lateRows=emit'", "'time=processing'", "'time=never'", "1", "'timeUnit='", "' seconds '",
    "CAST(NULL AS STRING)", "'a=b=c'",
]


def test_sql_size_and_option_arguments(spark, one):
    """sliding_window, sliding_window_agg, session_window_agg with every kind of size, and options on all functions."""
    for i, size in enumerate(SQL_SIZES):
        for column, unit in [(("ts", ""), ("t", ""), ("t", ", 'microseconds'"))[i % 3]]:
            for sql in (
                f"SELECT count(1) FROM bad_one GROUP BY k, sliding_window({column}, {size}{unit})",
                f"SELECT * FROM sliding_window_agg(TABLE(bad_one) PARTITION BY k ORDER BY ({column}), {size}, 'count(1) AS n'{unit})",
                f"SELECT * FROM session_window_agg(TABLE(bad_one) PARTITION BY k ORDER BY ({column}), {size}, 'count(1) AS n'{unit})",
            ):
                outcome(lambda: spark.sql(sql))
    for i, option in enumerate(SQL_OPTIONS):
        column = ("ts", "t")[i % 2]
        sql = (
            f"SELECT count(1) FROM bad_one GROUP BY k, windows({column}, 'sliding 10', {option})",
            f"SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY ({column}), 'sliding 10', 'count(1) AS n', {option})",
            f"SELECT count(1) FROM bad_one GROUP BY k, sliding_window({column}, 10, {option})",
        )[i % 3]
        outcome(lambda: spark.sql(sql))


def test_days_overflowing_microseconds_are_an_error(spark, one):
    """A calendar interval of 2e9 days is beyond a 64-bit count of µs: it must not wrap into a small size."""
    kind, message = outcome(lambda: spark.sql(
        "SELECT count(1) FROM bad_one GROUP BY k, sliding_window(ts, make_interval(0, 0, 0, 2000000000))"))
    assert kind == "error" and "too large" in message, message


MISC_SQL = [
    "SELECT count(1) FROM bad_one GROUP BY windows(ts)", "SELECT count(1) FROM bad_one GROUP BY windows()",
    "SELECT count(1) FROM bad_one GROUP BY windows(ts, 'sliding 1 s', 'emit=final', 4)",
    "SELECT count(1) FROM bad_one GROUP BY windows(ts, NULL)", "SELECT count(1) FROM bad_one GROUP BY windows(ts, 5)",
    "SELECT count(1) FROM bad_one GROUP BY windows(ts, k)", "SELECT count(1) FROM bad_one GROUP BY windows(NULL, 'sliding 1 s')",
    "SELECT count(1) FROM bad_one GROUP BY windows(x, 'sliding 1 s')",
    "SELECT count(1) FROM bad_one GROUP BY windows(CAST(t AS DECIMAL(20,0)), 'sliding 1')",
    "SELECT windows(ts, 'sliding 1 s') FROM bad_one", "SELECT count(1) FROM bad_one WHERE windows(ts, 'sliding 1 s') IS NULL",
    "SELECT * FROM window_agg(TABLE(bad_one), 'sliding 1 s', 'count(1) AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', '')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', NULL)",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', 'count(1) AS n FROM bad_one')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', 'v')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', '*')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', 'count(1)); DROP TABLE x; --')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', 'sum(nope) AS s')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts, t), 'sliding 1 s', 'count(1) AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts DESC), 'sliding 1 s', 'count(1) AS n')",
    "SELECT * FROM window_agg(1, 'sliding 1 s', 'count(1) AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', 'count(1) AS n', 'emit=final', 5)",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'sliding 1 s', 'new_rows(count(1)) AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'count 3 rows', 'new_rows(1) AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'count 3 rows', 'new_rows() AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (ts), 'count 3 rows', 'new_rows(new_rows(count(1))) AS n')",
    "SELECT new_rows(count(1)) FROM bad_one",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (t), 'session gap column x', 'count(1) AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (t), 'session gap column k', 'count(1) AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (t), 'count 3 rows tie break nope', 'count(1) AS n')",
    "SELECT * FROM window_agg(TABLE(bad_one) PARTITION BY k ORDER BY (t), 'count 3 rows every 10 seconds', 'count(1) AS n')",
]


def test_malformed_sql_calls(spark, one):
    for sql in MISC_SQL:
        outcome(lambda: spark.sql(sql).collect())


# --- data: empty, one row, times at the ends of each type's range, NaN and infinities ----------------

EDGE_DEFINITIONS = [
    ("sliding", SlidingWindows.of(10), 1),  # the left window [t - 10, t], and none to its right
    ("session", SessionWindows.withInactivityGap(10), 1),
    ("tumbling", TimeWindows.of(10), 1),
    ("hopping", TimeWindows.of(10).advanceBy(5), 2),
    ("hopping", TimeWindows.of(10).advanceBy(3).withOffset(2), None),
    ("cumulative", CumulativeWindows.of(LONG_MAX, LONG_MAX), None),
    ("tumbling", TimeWindows.of(LONG_MAX), None),
    ("unlimited", UnlimitedWindows.of().startOn(LONG_MIN), None),
    ("count", CountWindows.of(3), 1),
    ("count", CountWindows.of(3).every(10), 1),
    ("duration", DurationWindows.of(10), 1),
    ("duration", DurationWindows.of(10).every(4), None),
]


def windows_per_key(df: Any, column: str, definition: Any) -> Tuple[str, Any]:
    """Each key's windows (s, e, n in ticks), one key per row of `df`; when a time at the end of the range
    fails the job, each key is run alone, so the other keys are still checked."""
    def run(part: Any) -> List[Any]:
        return (part.groupBy("k", window(column, definition)).agg(F.count("*").alias("n"))
                .selectExpr("k", f"{ticks('window.start', column)} AS s", f"{ticks('window.end', column)} AS e", "n")
                .collect())

    kind, rows = outcome(lambda: run(df))
    if kind == "ok":
        return "ok", {k: [r for r in rows if r["k"] == k] for k in (r["k"] for r in df.select("k").collect())}
    if "range of a 64-bit time" not in rows:
        return kind, rows
    per_key = {}
    for key in [r["k"] for r in df.select("k").collect()]:
        kind, rows = outcome(lambda: run(df.where(F.col("k") == key)))
        per_key[key] = rows if kind == "ok" else None
    return "ok", per_key


def test_one_row_at_the_ends_of_bigint_and_tinyint(spark):
    """One row per key at Long.MinValue, -1, 0, Long.MaxValue... (BIGINT, ticks) and at -128, 127 (TINYINT):
    windows that hold it, counted once, or an error naming the range, never bounds wrapped around the range."""
    for times, cast in (((LONG_MIN, LONG_MIN + 11, 0, LONG_MAX - 11, LONG_MAX), "bigint"),
                        ((-128, 127), "tinyint")):
        df = spark.createDataFrame([(str(t), t) for t in times], "k string, t bigint").select(
            "k", F.col("t").cast(cast).alias("t"))
        for kind_word, definition, expected in EDGE_DEFINITIONS:
            kind, per_key = windows_per_key(df, "t", definition)
            if kind == "ok":
                for key, rows in per_key.items():
                    if rows is not None:  # None: windowagg's range error for this time
                        t = int(key)
                        single = (0 if t == LONG_MAX else 1) if kind_word == "unlimited" else expected
                        check_one_row(rows, t, kind_word, single)


def test_one_row_at_the_ends_of_timestamps(spark):
    """TIMESTAMP and TIMESTAMP_NTZ at 0001-01-01 and 9999-12-31 23:59:59.999999 through every kind."""
    definitions = [
        # the longest sizes a timestamp can take: 106751991 days is Long.MaxValue µs (as text a duration is
        # at most Long.MaxValue ns, about 292 years, so these are timedeltas)
        ("sliding", SlidingWindows.of(HUGE), 1), ("sliding", SlidingWindows.of("1 day"), 1),
        ("session", SessionWindows.withInactivityGap(HUGE), 1), ("tumbling", TimeWindows.of("1 day"), 1),
        ("hopping", TimeWindows.of(HUGE).advanceBy(HUGE / 2), None),
        ("cumulative", CumulativeWindows.of("1 hour", "1 day"), None), ("calendar", CalendarWindows.years(1), 1),
        ("calendar", CalendarWindows.months(1).inZone("Pacific/Kiritimati"), 1), ("unlimited", UnlimitedWindows.of(), None),
        ("count", CountWindows.of(3).every("1 day"), 1), ("duration", DurationWindows.of(HUGE), 1),
        ("duration", DurationWindows.tumbling(HUGE), 1),
        ("custom", CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=2), 1),
    ]
    times = (TS_MIN, TS_MIN + 1, 0, TS_MAX - 1, TS_MAX)
    for type_name in ("timestamp", "timestamp_ntz"):
        df = spark.createDataFrame([(str(t), t) for t in times], "k string, t bigint").select(
            "k", F.timestamp_micros("t").cast(type_name).alias("ts"))
        for kind_word, definition, expected in definitions:
            if type_name == "timestamp_ntz" and kind_word not in ("calendar", "unlimited", "custom", "tumbling"):
                continue  # TIMESTAMP_NTZ differs in the zone only: the kinds that read the calendar
            kind, per_key = windows_per_key(df, "ts", definition)
            if kind == "ok":
                for key, rows in per_key.items():
                    if rows is not None:
                        t = int(key)
                        # unlimited windows are [epoch, 9999-12-31T00:00:00Z): other rows are in none (and counted)
                        single = (1 if 0 <= t < TS_MAX - 86_400_000_000 + 1 else 0) if kind_word == "unlimited" else expected
                        check_one_row(rows, t, kind_word, single)


def test_empty_data_gives_no_windows(spark, one):
    for spec in VALID_SPECS:
        kind, rows = outcome(lambda: spark.sql(
            f"SELECT * FROM window_agg(TABLE(bad_empty) PARTITION BY k ORDER BY (ts), '{spec.replace(chr(39), chr(39) * 2)}', "
            "'count(1) AS n, sum(x) AS total')").collect())
        assert kind == "error" or rows == [], (spec, rows)


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
