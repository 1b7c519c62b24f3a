"""Apache Storm's windows (CountWindows, DurationWindows) from Python: every configuration Storm lists
against a naive enumeration of Storm's rules, per-row windows against Spark's OVER frames, SQL against
the DataFrame API, specs, streaming (Storm's worked example, equal to batch, late rows), errors.

The oracle (storm_windows below) restates the rules of docs/semantics.md literally, per key over the
rows in (time, seq) order, seq being a unique tie-break column: a count window holds the last n rows up
to its end, a duration window the rows in (end - length, end]; a window is evaluated at every m-th
row (m = 1: at every row) or at every multiple of a slide in time, for counts those that bring rows,
for durations those whose window holds rows.
"""

import collections
import datetime
import json
import os
import random
import time

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import Window
from pyspark.sql import functions as F

import brute_force as bf
import streaming_support as ss
import windowagg
from windowagg import CountWindows, DurationWindows, SlidingWindows, window
from windowagg import _jvm
from windowagg import windows as windows_module

# the streaming fixture (session settings for short micro-batches) and query helpers
from test_streaming import QUERY_TIMEOUT, not_flush, run_available_now, split_into_files, streaming  # noqa: F401

SECOND = 1_000_000  # microseconds
ID, K, T, V, SEQ = range(5)  # fields of a raw row; T in microseconds (or None)
SCHEMA = "id bigint, k string, t bigint, v bigint, seq bigint"


# --- data and the oracle ---------------------------------------------------------------------------


def storm_rows(seed, n=160):
    """Seeded rows (id, k, t, v, seq): keys a, b, c and a null key; whole-second times in [-20 s, 40 s]
    (before 1970 included), so many rows share a time, some one microsecond before a multiple of
    10 s; a few null times and null values; seq a unique permutation unrelated to id and time."""
    rnd = random.Random(seed)
    pool = [rnd.randint(-20, 40) * SECOND for _ in range(22)]
    pool += [rnd.randint(-2, 4) * 10 * SECOND - 1 for _ in range(4)]
    seqs = list(range(1000, 1000 + n))
    rnd.shuffle(seqs)
    rows = []
    for i in range(n):
        t = None if rnd.random() < 0.03 else rnd.choice(pool)
        v = None if rnd.random() < 0.08 else rnd.randint(-20, 100)
        rows.append((i, rnd.choice(["a", "b", "c", None]), t, v, seqs[i]))
    return rows


def multiples_holding(t, length, slide):
    """The multiples E of `slide` whose window (E - length, E] holds t, by trying every k near t."""
    found = []
    for k in range((t - length) // slide - 1, (t + length) // slide + 2):
        end = k * slide
        if end - length < t <= end:
            found.append(end)
    return found


def first_multiple_from(t, slide):
    """The least multiple of `slide` at or after t, by stepping (no ceiling arithmetic)."""
    end = (t // slide) * slide
    while end < t:
        end += slide
    while end - slide >= t:
        end -= slide
    return end


def storm_windows(rows, *, count=None, length=None, every_rows=None, every=None):
    """Storm's windows of every key: a count (`count` rows) or duration (`length` µs) length, evaluated
    at every `every_rows`-th row (default 1) or at multiples of `every` µs.

    :returns: (windows, unwindowed): windows a list of (key, start, end, members in (time, seq)
        order), one per evaluation; unwindowed the number of timed rows in no window.
    """
    per_key = collections.defaultdict(list)
    for row in rows:
        if row[T] is not None:
            per_key[row[K]].append(row)
    windows, unwindowed = [], 0
    for key, members in per_key.items():
        members.sort(key=lambda r: (r[T], r[SEQ]))
        if every is None:
            m = every_rows or 1
            ends = [members[p][T] for p in range(len(members)) if (p + 1) % m == 0]
            cut_at = [p for p in range(len(members)) if (p + 1) % m == 0]
        elif count is not None:
            ends = sorted({first_multiple_from(r[T], every) for r in members})
            cut_at = [max(p for p, r in enumerate(members) if r[T] <= end) for end in ends]
        else:
            ends = sorted({end for r in members for end in multiples_holding(r[T], length, every)})
            cut_at = [None] * len(ends)
        held_ids = set()
        for end, p in zip(ends, cut_at):
            if count is not None:
                held = members[max(0, p - count + 1): p + 1]  # the last `count` rows up to the p-th
                start = held[0][T]
            else:
                held = [r for r in members if end - length < r[T] <= end]  # every row at the end time
                start = end - length
            assert held, "no window is empty"
            windows.append((key, start, end, held))
            held_ids.update(r[ID] for r in held)
        unwindowed += sum(1 for r in members if r[ID] not in held_ids)
    return windows, unwindowed


def oracle_multiset(windows, ordered=True):
    """The oracle's windows as a multiset of (key, start, end, n, sum(v), seqs)."""
    result = collections.Counter()
    for key, start, end, held in windows:
        seqs = [r[SEQ] for r in held]
        result[(key, start, end, len(held), bf.agg_sum([r[V] for r in held]), tuple(seqs if ordered else sorted(seqs)))] += 1
    return result


def aggregates():
    return [F.count(F.lit(1)).alias("n"), F.sum("v").alias("sv"), F.collect_list("seq").alias("seqs")]


def result_multiset(rows, ordered=True):
    """Collected rows (k, start, end, n, sv, seqs) as a multiset like oracle_multiset's."""
    return collections.Counter(
        (r["k"], r["start"], r["end"], r["n"], r["sv"], tuple(r["seqs"] if ordered else sorted(r["seqs"]))) for r in rows
    )


def describe(got, expected):
    missing, extra = expected - got, got - expected
    return (
        f"expected {sum(expected.values())} windows, got {sum(got.values())}; {sum(missing.values())} missing "
        f"(e.g. {sorted(missing, key=repr)[:3]}), {sum(extra.values())} unexpected (e.g. {sorted(extra, key=repr)[:3]})"
    )


@pytest.fixture(scope="module")
def rows():
    return storm_rows(2026)


@pytest.fixture(scope="module")
def events(spark, rows):
    """The rows with "ts" (TIMESTAMP of t) and "ts_ms" (t in epoch milliseconds); the view "storm_events"."""
    df = spark.createDataFrame(rows, SCHEMA).select(
        "id", "k", "t", F.timestamp_micros("t").alias("ts"), F.floor(F.col("t") / 1000).alias("ts_ms"), "v", "seq"
    )
    df.createOrReplaceTempView("storm_events")
    yield df
    spark.catalog.dropTempView("storm_events")


def windowed(df, definition, column="ts", keys=("k",), **options):
    """The windowed DataFrame: keys, start and end in ticks (µs for TIMESTAMP), n, sv, seqs."""
    out = df.groupBy(*keys, window(column, definition, **options)).agg(*aggregates())
    if column == "ts":
        bounds = [F.unix_micros("window.start").alias("start"), F.unix_micros("window.end").alias("end")]
    else:
        bounds = [F.col("window.start").alias("start"), F.col("window.end").alias("end")]
    return out.select(*keys, *bounds, "n", "sv", "seqs")


# --- batch: every configuration Storm lists, against the oracle ------------------------------------


BATCH_CASES = {
    # Storm's withWindow(Count(4), Count(3))
    "count / count": (CountWindows.of(4).slide(3).tieBreak("seq"), dict(count=4, every_rows=3)),
    # a slide longer than the length: rows between windows are in none
    "count / longer count": (CountWindows.of(2).slide(3).tieBreak("seq"), dict(count=2, every_rows=3)),
    # withWindow(Count(3)): a window per row
    "count per row": (CountWindows.of(3).tieBreak("seq"), dict(count=3)),
    # withTumblingWindow(Count(4)): a key's last rows wait for a fourth one, in no window
    "count tumbling": (CountWindows.tumbling(4).tieBreak("seq"), dict(count=4, every_rows=4)),
    # withWindow(Count(3), Duration(10 s))
    "count / duration": (CountWindows.of(3).every("10 seconds").tieBreak("seq"), dict(count=3, every=10 * SECOND)),
    # withWindow(Duration(5 s)): a window per row
    "duration per row": (DurationWindows.of("5 seconds").tieBreak("seq"), dict(length=5 * SECOND)),
    # withWindow(Duration(5 s), Count(3))
    "duration / count": (DurationWindows.of("5 seconds").slide(3).tieBreak("seq"), dict(length=5 * SECOND, every_rows=3)),
    # a one-second length: most windows hold one time only, rows before it are in none
    "short duration / count": (
        DurationWindows.of(datetime.timedelta(seconds=1)).slide(4).tieBreak("seq"),
        dict(length=SECOND, every_rows=4),
    ),
    # withWindow(Duration(20 s), Duration(10 s)); the lag only matters in streaming
    "duration / duration": (
        DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds"),
        dict(length=20 * SECOND, every=10 * SECOND),
    ),
    "duration / duration not dividing it": (
        DurationWindows.of("7 seconds").every("3 seconds").tieBreak("seq"),
        dict(length=7 * SECOND, every=3 * SECOND),
    ),
    # withTumblingWindow(Duration(10 s))
    "duration tumbling": (DurationWindows.tumbling("10 seconds").tieBreak("seq"), dict(length=10 * SECOND, every=10 * SECOND)),
}

@pytest.mark.parametrize("name", list(BATCH_CASES))
def test_batch_equals_storms_rules(spark, rows, events, name):
    definition, shape = BATCH_CASES[name]
    out = windowed(events, definition)
    collected = out.collect()  # the action whose metrics are read below
    expected_windows, unwindowed = storm_windows(rows, **shape)
    # collect_list sees a window's rows in counting order: (time, seq) with a tie-break column
    ordered = definition.tie_break_column is not None
    got, expected = result_multiset(collected, ordered), oracle_multiset(expected_windows, ordered)
    assert len(expected_windows) > 20
    assert got == expected, describe(got, expected)
    metrics = windowagg.metrics(out)
    assert metrics["unwindowedRows"] == unwindowed
    assert metrics["nullTimeRows"] == sum(1 for r in rows if r[T] is None)
    assert metrics["windows"] == len(expected_windows)


@pytest.mark.parametrize("name", list(BATCH_CASES))
def test_window_view_new_and_expired_rows(spark, rows, events, name):
    """new_rows / expired_rows (Storm's getNew() / getExpired()) against consecutive oracle windows of a key."""
    definition, shape = BATCH_CASES[name]
    seqs = F.array_sort(F.collect_list("seq"))
    out = events.groupBy("k", window("ts", definition)).agg(
        windowagg.new_rows(seqs).alias("new"),
        windowagg.expired_rows(seqs).alias("expired"),
        windowagg.new_rows(F.count("*")).alias("new_count"),
        windowagg.expired_rows(F.sum("v")).alias("expired_sv"),
    )
    got = collections.Counter(
        (r["k"], tuple(r["new"]), tuple(r["expired"]), r["new_count"], r["expired_sv"]) for r in out.collect()
    )
    expected = collections.Counter()
    previous = {}
    for key, _, _, held in storm_windows(rows, **shape)[0]:
        before = previous.get(key, [])
        new = [r for r in held if r not in before]
        expired = [r for r in before if r not in held]
        sv = sum(r[V] for r in expired if r[V] is not None) if any(r[V] is not None for r in expired) else None
        expected[(key, tuple(sorted(r[SEQ] for r in new)), tuple(sorted(r[SEQ] for r in expired)), len(new), sv)] += 1
        previous[key] = held
    assert got == expected, describe(got, expected)


def test_window_view_in_sql_and_describe_function(spark, events):
    sql = spark.sql(
        "SELECT k, new_rows(count(1)) AS new_count, expired_rows(count(1)) AS expired_count "
        "FROM storm_events GROUP BY k, windows(ts, 'count 3 rows every 2 rows tie break seq')"
    )
    api = events.groupBy("k", window("ts", CountWindows.of(3).slide(2).tieBreak("seq"))).agg(
        windowagg.new_rows(F.count("*")).alias("new_count"), windowagg.expired_rows(F.count("*")).alias("expired_count")
    )
    assert sorted(map(tuple, sql.collect()), key=repr) == sorted(map(tuple, api.drop("window").collect()), key=repr)
    usage = " ".join(r[0] for r in spark.sql("DESCRIBE FUNCTION EXTENDED new_rows").collect())
    assert "not in the key's previous window" in usage


def test_processing_time_is_refused_on_batch_and_on_another_time_column(spark, events, stream):
    with pytest.raises(AnalysisException) as info:
        events.groupBy("k", window(F.current_timestamp(), DurationWindows.of("1 second"), time="processing")).count()
    assert "time 'processing' needs a streaming DataFrame" in str(info.value)
    with pytest.raises(AnalysisException) as info:
        stream.groupBy("k", window("ts", DurationWindows.of("1 second"), time="processing")).count()
    assert "must be current_timestamp()" in str(info.value)
    with pytest.raises(TypeError):
        window("ts", DurationWindows.of("1 second"), time=1)


def test_window_view_needs_storms_windows(spark, events):
    with pytest.raises(AnalysisException) as info:
        events.groupBy("k", window("ts", SlidingWindows.of("5 seconds"))).agg(windowagg.new_rows(F.count("*"))).collect()
    assert "Storm's window view" in str(info.value)
    with pytest.raises(TypeError):
        windowagg.expired_rows("v")


def test_the_oracle_has_rows_in_no_window_and_windows_sharing_bounds(rows):
    """The data exercises what the cases are about: rows in no window, and (per row) several windows
    with the same bounds but different rows, cut through rows sharing a time."""
    assert storm_windows(rows, count=4, every_rows=4)[1] > 0
    assert storm_windows(rows, count=2, every_rows=3)[1] > 20
    assert storm_windows(rows, length=SECOND, every_rows=4)[1] > 0
    per_row = storm_windows(rows, count=3)[0]
    bounds = collections.Counter((k, s, e) for k, s, e, _ in per_row)
    assert any(c > 1 for c in bounds.values())
    assert any(s < 0 for _, s, _, _ in per_row)


@pytest.mark.parametrize(
    "definition, shape",
    [
        (DurationWindows.of(5_000).every(2_000), dict(length=5 * SECOND, every=2 * SECOND)),
        (CountWindows.of(3).every(10_000).tieBreak("seq"), dict(count=3, every=10 * SECOND)),
        (DurationWindows.of(3_000).slide(2).tieBreak("seq"), dict(length=3 * SECOND, every_rows=2)),
    ],
    ids=["duration/duration", "count/duration", "duration/count"],
)
def test_int_lengths_are_ticks_of_an_integral_time_column(spark, rows, events, definition, shape):
    out = windowed(events, definition, column="ts_ms").collect()
    expected_windows, _ = storm_windows(rows, **shape)
    in_ms = [(k, s // 1000, e // 1000, held) for k, s, e, held in expected_windows]  # whole seconds: exact
    ordered = definition.tie_break_column is not None
    got, expected = result_multiset(out, ordered), oracle_multiset(in_ms, ordered)
    assert got == expected, describe(got, expected)


def test_without_a_tie_break_results_do_not_depend_on_arrival_order(spark, events):
    """Rows sharing a time are counted in order of the values the aggregates read."""
    plain = events.drop("seq", "id")

    def run(df, definition):
        out = df.groupBy("k", window("ts", definition)).agg(F.sum("v").alias("sv"), F.collect_list("v").alias("vs"))
        return collections.Counter(ss.canonical(r) for r in out.collect())

    for definition in (CountWindows.of(4).slide(3), DurationWindows.of("5 seconds").slide(2)):
        once = run(plain, definition)
        assert run(plain.repartition(3).orderBy(F.rand(7)), definition) == once, definition


# --- per-row windows are Spark's OVER frames -------------------------------------------------------


@pytest.mark.parametrize("n", [1, 4])
def test_count_per_row_equals_a_rows_frame(spark, events, n):
    timed = events.where(F.col("ts").isNotNull())
    frame = Window.partitionBy("k").orderBy("ts", "seq").rowsBetween(-(n - 1), Window.currentRow)
    over = timed.select(
        "k",
        F.min("t").over(frame).alias("start"),
        F.col("t").alias("end"),
        F.count(F.lit(1)).over(frame).alias("n"),
        F.sum("v").over(frame).alias("sv"),
        F.collect_list("seq").over(frame).alias("seqs"),
    ).collect()
    got = result_multiset(windowed(events, CountWindows.of(n).tieBreak("seq")).collect())
    assert got == result_multiset(over)


@pytest.mark.parametrize("seconds", [1, 10])
def test_duration_per_row_equals_a_range_frame(spark, events, seconds):
    length = seconds * SECOND
    timed = events.where(F.col("ts").isNotNull())
    # RANGE is closed on the left: (t - L, t] is [t - (L - 1 µs), t] in microseconds
    frame = Window.partitionBy("k").orderBy("t").rangeBetween(-(length - 1), Window.currentRow)
    over = timed.select(
        "k",
        (F.col("t") - F.lit(length)).alias("start"),
        F.col("t").alias("end"),
        F.count(F.lit(1)).over(frame).alias("n"),
        F.sum("v").over(frame).alias("sv"),
        F.collect_list("seq").over(frame).alias("seqs"),
    ).collect()
    got = result_multiset(windowed(events, DurationWindows.of(f"{seconds} seconds")).collect(), ordered=False)
    assert got == result_multiset(over, ordered=False)


# --- SQL and specs ---------------------------------------------------------------------------------


SQL_CASES = [
    (CountWindows.of(3).slide(2).tieBreak("seq"), "count 3 rows every 2 rows tie break seq"),
    (CountWindows.of(4).every("10 seconds").tieBreak("seq"), "count 4 rows every 10 seconds tie break seq"),
    (DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds"), "duration 20 seconds every 10 seconds lag 5 seconds"),
    (DurationWindows.of("5 seconds").slide(3).tieBreak("seq"), "duration 5 seconds every 3 rows tie break seq"),
]


@pytest.mark.parametrize("definition, spec", SQL_CASES, ids=[spec for _, spec in SQL_CASES])
def test_sql_equals_the_dataframe_api(spark, events, definition, spec):
    assert definition.spec == spec
    aggs = "count(1) AS n, sum(v) AS sv, collect_list(seq) AS seqs"
    grouped = spark.sql(
        "SELECT k, unix_micros(window.start) AS start, unix_micros(window.end) AS end, "
        f"{aggs} FROM storm_events GROUP BY k, windows(ts, '{spec}')"
    ).collect()
    table = spark.sql(
        f"SELECT k, unix_micros(window_start) AS start, unix_micros(window_end) AS end, n, sv, seqs "
        f"FROM window_agg(TABLE(storm_events) PARTITION BY k ORDER BY (ts), '{spec}', '{aggs}')"
    ).collect()
    ordered = definition.tie_break_column is not None
    expected = result_multiset(windowed(events, definition).collect(), ordered)
    assert sum(expected.values()) > 20
    assert result_multiset(grouped, ordered) == expected
    assert result_multiset(table, ordered) == expected


DEFINITIONS = [
    (lambda: CountWindows.of(30), "count 30 rows", "CountWindows.of(30)"),
    (lambda: CountWindows.of(1), "count 1 row", "CountWindows.of(1)"),
    (
        lambda: CountWindows.of(30).slide(10).lag("5 seconds").tieBreak("seq"),
        "count 30 rows every 10 rows lag 5 seconds tie break seq",
        "CountWindows.of(30).slide(10).lag(5 seconds).tieBreak(seq)",
    ),
    (lambda: CountWindows.tumbling(4), "count 4 rows every 4 rows", "CountWindows.of(4).slide(4)"),
    (lambda: CountWindows.tumbling(1), "count 1 row", "CountWindows.of(1)"),
    (lambda: CountWindows.of(5).slide(1).tieBreak(" seq "), "count 5 rows tie break seq", "CountWindows.of(5).tieBreak(seq)"),
    (
        lambda: CountWindows.of(3).every(datetime.timedelta(milliseconds=250)).lag(datetime.timedelta(0)),
        "count 3 rows every 250 milliseconds lag 0 seconds",
        "CountWindows.of(3).every(250 milliseconds).lag(0 seconds)",
    ),
    (lambda: CountWindows.of(3).slide(2).every(60_000), "count 3 rows every 60000", "CountWindows.of(3).every(60000 ticks)"),
    (lambda: CountWindows.of(3).every("1 min").slide(2), "count 3 rows every 2 rows", "CountWindows.of(3).slide(2)"),
    (lambda: DurationWindows.of("20 seconds"), "duration 20 seconds", "DurationWindows.of(20 seconds)"),
    (
        lambda: DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds"),
        "duration 20 seconds every 10 seconds lag 5 seconds",
        "DurationWindows.of(20 seconds).every(10 seconds).lag(5 seconds)",
    ),
    (lambda: DurationWindows.of("20 seconds").slide(5), "duration 20 seconds every 5 rows", None),
    (lambda: DurationWindows.of("1 hour 30 minutes").slide(1).tieBreak("seq"), "duration 90 minutes tie break seq", None),
    (lambda: DurationWindows.tumbling("5 s"), "duration 5 seconds every 5 seconds", "DurationWindows.of(5 seconds).every(5 seconds)"),
    (lambda: DurationWindows.tumbling(datetime.timedelta(minutes=1)), "duration 1 minute every 1 minute", None),
    (lambda: DurationWindows.of(20_000).every(5_000), "duration 20000 every 5000", "DurationWindows.of(20000 ticks).every(5000 ticks)"),
    (lambda: DurationWindows.of("1.5 s").slide(2).lag("250ms"), "duration 1500 milliseconds every 2 rows lag 250 milliseconds", None),
]


@pytest.mark.parametrize("make, spec, jvm_repr", DEFINITIONS, ids=[d[1] for d in DEFINITIONS])
def test_spec_and_repr_come_from_the_jvm_and_read_back(spark, make, spec, jvm_repr):
    definition = make()
    jdef = definition._java_definition()
    assert definition.spec == spec == jdef.spec()
    assert repr(definition) == jdef.toString()
    if jvm_repr is not None:
        assert repr(definition) == jvm_repr
    parsed = _jvm.jvm_class(_jvm.active_jvm(), "windowagg.WindowSpec").parse(spec)
    assert parsed.equals(jdef), f"'{spec}' reads back as {parsed.toString()}"


@pytest.mark.parametrize("make, spec, jvm_repr", DEFINITIONS, ids=[d[1] for d in DEFINITIONS])
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


@pytest.mark.parametrize("column", ["offset", "lag", "my col"])
def test_a_tie_break_column_named_like_a_clause_word_reads_back(spark, monkeypatch, column):
    definition = CountWindows.of(5).tieBreak(column)
    assert definition.spec == f"count 5 rows tie break `{column}`"
    parsed = _jvm.jvm_class(_jvm.active_jvm(), "windowagg.WindowSpec").parse(definition.spec)
    assert parsed.equals(definition._java_definition())
    monkeypatch.setattr(windows_module, "_classic_session_running", lambda: False)
    assert _jvm.jvm_class(_jvm.active_jvm(), "windowagg.WindowSpec").parse(definition.spec).equals(parsed)


def test_python_repr_and_builders(spark, monkeypatch):
    count = CountWindows.of(30)
    slid = count.slide(10)
    timed = slid.every("10 seconds").lag(datetime.timedelta(seconds=5)).tieBreak("seq")
    assert (count.length, count.slide_rows, count.slide_interval, count.lag_period, count.tie_break_column) == (30, None, None, None, None)
    assert (slid.slide_rows, slid.slide_interval) == (10, None)
    assert (timed.slide_rows, timed.slide_interval, timed.tie_break_column) == (None, "10 seconds", "seq")
    duration = DurationWindows.tumbling("5 seconds")
    assert (duration.length, duration.slide_interval, duration.slide_rows) == ("5 seconds", "5 seconds", None)
    assert duration.slide(3).slide_interval is None and duration.slide(3).slide_rows == 3
    for definition in (count, slid, timed, duration):
        assert isinstance(definition, windowagg.WindowDefinition)
    assert windowagg.CountWindows is CountWindows and windowagg.DurationWindows is DurationWindows
    monkeypatch.setattr(windows_module, "_classic_session_running", lambda: False)
    assert repr(timed) == "CountWindows.of(30).every('10 seconds').lag(datetime.timedelta(seconds=5)).tieBreak('seq')"
    assert repr(CountWindows.tumbling(3)) == "CountWindows.tumbling(3)"
    assert repr(windowagg.TimeWindows.of(10).grace("1 s").grace("2 s")) == "TimeWindows.of(10).grace('2 s')"
    assert repr(DurationWindows.of(20_000).slide(2)) == "DurationWindows.of(20000).slide(2)"


# --- streaming -------------------------------------------------------------------------------------


def add_file(folder, name, rows):
    """Adds a JSON-lines file to a folder a running file stream reads (written aside, then renamed in)."""
    hidden = os.path.join(folder, f".{name}.tmp")  # names starting with '.' are not listed
    with open(hidden, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    os.rename(hidden, os.path.join(folder, name))


def process_until(query, input_rows):
    """Waits until the query has read `input_rows` rows in all and run every micro-batch they call for
    (the no-data one for the watermark they moved included)."""
    deadline = time.monotonic() + QUERY_TIMEOUT
    while sum(p["numInputRows"] for p in query.recentProgress) < input_rows:
        assert time.monotonic() < deadline, f"the query did not read {input_rows} rows within {QUERY_TIMEOUT} s"
        assert query.exception() is None, query.exception()
        query.processAllAvailable()
    query.processAllAvailable()


def since_base(col):
    return F.unix_micros(col) - F.lit(ss.BASE_MICROS)


def hms(h, m, s):
    """A time of Storm's example, in microseconds after ss.BASE (a whole minute)."""
    return ((h * 60 + m) * 60 + s) * SECOND


def test_storms_worked_example(streaming, tmp_path):
    """Storm's document: length 20 s, slide 10 s, lag 5 s. e1..e6 come first (the watermark then is
    6:00:31), e7..e10 next (then 8:00:34): each group makes three windows final, and e10 waits."""
    spark = streaming
    folder = str(tmp_path / "in")
    os.makedirs(folder)
    definition = DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds")
    stream = spark.readStream.schema(ss.SCHEMA).json(folder)
    windows = stream.groupBy(window("ts", definition)).agg(F.array_sort(F.collect_list("note")).alias("events"))
    query = (
        windows.writeStream.format("memory").queryName("storm_example").outputMode("append")
        .option("checkpointLocation", str(tmp_path / "checkpoint")).start()
    )

    def emitted():
        out = spark.table("storm_example").select(
            since_base("window.start").alias("start"), since_base("window.end").alias("end"), "events"
        )
        return sorted(((r["start"], r["end"], r["events"]) for r in out.collect()), key=lambda w: w[1])

    first = [(3, 1), (5, 2), (7, 3), (18, 4), (26, 5), (36, 6)]  # (second, i): e1..e6 at 6:00:ss
    second = [(25, 7), (26, 8), (27, 9), (39, 10)]  # e7..e10 at 8:00:ss
    try:
        add_file(folder, "part-0000.json", [ss.event(i, None, hms(6, 0, s), i, f"e{i}") for s, i in first])
        process_until(query, 6)
        assert emitted() == [
            (hms(5, 59, 50), hms(6, 0, 10), ["e1", "e2", "e3"]),
            (hms(6, 0, 0), hms(6, 0, 20), ["e1", "e2", "e3", "e4"]),
            (hms(6, 0, 10), hms(6, 0, 30), ["e4", "e5"]),
        ]
        add_file(folder, "part-0001.json", [ss.event(i, None, hms(8, 0, s), i, f"e{i}") for s, i in second])
        process_until(query, 10)
        assert emitted()[3:] == [
            (hms(6, 0, 20), hms(6, 0, 40), ["e5", "e6"]),
            (hms(6, 0, 30), hms(6, 0, 50), ["e6"]),
            (hms(8, 0, 10), hms(8, 0, 30), ["e7", "e8", "e9"]),
        ]
        assert ss.observed(query, "late_rows") == 0
    finally:
        query.stop()
        spark.catalog.dropTempView("storm_example")


def storm_stream_events(seed, n=150):
    """Seeded events within two minutes after ss.BASE: keys k0..k2 and a null key, many shared
    (whole-second) times, some null values."""
    rnd = random.Random(seed)
    pool = [rnd.randrange(120) * SECOND for _ in range(30)]
    return [
        ss.event(i, rnd.choice(["k0", "k1", "k2", None]), rnd.choice(pool), None if rnd.random() < 0.05 else rnd.randint(-20, 100))
        for i in range(n)
    ]


@pytest.mark.parametrize(
    "seed, definition",
    [(1, CountWindows.of(4).slide(3).tieBreak("id").lag("1 hour")), (2, CountWindows.of(3).every("10 seconds").lag("1 hour"))],
    ids=["count/count by id", "count/duration, no tie-break"],
)
def test_streaming_equals_batch_under_random_splits(streaming, tmp_path, seed, definition):
    """On-time rows (the lag exceeds the data's span) in random order over 3 to 6 micro-batches; the
    flush row's watermark makes every window final. A key's last rows wait for their window in
    streaming, and are in none in batch."""
    spark = streaming
    events = storm_stream_events(seed)
    chunks = split_into_files(events, random.Random(seed))
    files = ss.write_files(str(tmp_path / "in"), chunks + [[ss.flush_event(10_000)]])
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    out = stream.groupBy("k", window("ts", definition)).agg(*ss.aggregates())
    query = run_available_now(out, tmp_path / "checkpoint", name="storm_splits")
    try:
        got = ss.multiset(streaming_rows(not_flush(spark.table("storm_splits"))).collect())
    finally:
        spark.catalog.dropTempView("storm_splits")
    batch = not_flush(spark.read.schema(ss.SCHEMA).json(files[:-1]))
    expected = ss.multiset(streaming_rows(batch.groupBy("k", window("ts", definition)).agg(*ss.aggregates())).collect())
    assert sum(expected.values()) >= 20
    assert got == expected, ss.describe_difference(got, expected)
    assert ss.observed(query, "late_rows") == 0


def streaming_rows(df):
    return df.select("k", F.col("window.start").alias("start"), F.col("window.end").alias("end"), *ss.AGGREGATE_NAMES)


def test_streaming_late_rows_and_rows_in_no_window(streaming, tmp_path):
    """Count 2 rows every 3 rows, lag 5 s. After file 1 the watermark is 200 - 5 = 195 s: in file 2,
    a@150 is late, a@197 and a@198 are not (they come before a@200 in a's order). a's rows in order:
    100, 105, 197 | 198, 200, 201: windows {105, 197} and {200, 201}; 100 and 198 are in none, as is
    b@100 of b's 100, 101, 102."""
    spark = streaming
    s = SECOND
    chunks = [
        [ss.event(1, "a", 100 * s, 1), ss.event(2, "a", 105 * s, 2),
         ss.event(11, "b", 100 * s, 10), ss.event(12, "b", 101 * s, 20), ss.event(13, "b", 102 * s, 30)],
        [ss.event(3, "a", 200 * s, 3)],
        [ss.event(4, "a", 150 * s, 4, "late"), ss.event(5, "a", 197 * s, 5), ss.event(6, "a", 198 * s, 6),
         ss.event(7, "a", 201 * s, 7)],
        [ss.flush_event(100)],
    ]
    ss.write_files(str(tmp_path / "in"), chunks)
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    definition = CountWindows.of(2).slide(3).lag("5 seconds")
    out = stream.groupBy("k", window("ts", definition, late_rows="emit")).agg(
        F.sum("v").alias("s"), F.array_sort(F.collect_list("id")).alias("ids")
    )
    assert out.columns == ["k", "window", "s", "ids", "late_reason", "late_row"]
    query = run_available_now(out, tmp_path / "checkpoint", name="storm_late")
    try:
        rows = spark.table("storm_late").select(
            "k", (since_base("window.start") / s).cast("long").alias("start"),
            (since_base("window.end") / s).cast("long").alias("end"), "s", "ids", "late_reason", "late_row",
        ).where(~F.col("k").eqNullSafe("flush")).collect()
    finally:
        spark.catalog.dropTempView("storm_late")
    windows = sorted((r["k"], r["start"], r["end"], r["s"], r["ids"]) for r in rows if r["late_reason"] is None)
    assert windows == [("a", 105, 197, 7, [2, 5]), ("a", 200, 201, 10, [3, 7]), ("b", 101, 102, 50, [12, 13])]
    late = [r for r in rows if r["late_reason"] == "late"]
    assert [(r["k"], r["late_row"]["id"], r["late_row"]["note"]) for r in late] == [("a", 4, "late")]
    assert all(r["start"] is None and r["s"] is None for r in late)
    no_window = [r for r in rows if r["late_reason"] == "no window"]
    assert len(no_window) == 3 and all(r["late_row"] is None for r in no_window)
    assert sorted(r["k"] for r in no_window) == ["a", "a", "b"]
    assert {r["late_reason"] for r in rows} == {None, "late", "no window"}
    assert ss.observed(query, "late_rows") == 1
    assert ss.observed(query, "unwindowed_rows") == 3


def test_streaming_idle_keys_expire(streaming, tmp_path):
    """expire_idle_keys: a key the watermark leaves a minute behind is forgotten, and its rows that no
    window took come out as expired. a's two rows wait for a third; b's three make a window and b
    is forgotten with nothing left; a comes back after it was forgotten and starts afresh: its next
    three rows make its next window; c's one row expires once the flush's watermark passes it."""
    spark = streaming
    s = SECOND
    chunks = [
        [ss.event(1, "a", 100 * s, 1), ss.event(2, "a", 101 * s, 2),
         ss.event(11, "b", 100 * s, 10), ss.event(12, "b", 101 * s, 20), ss.event(13, "b", 102 * s, 30)],
        [ss.event(21, "c", 500 * s, 100)],
        [ss.event(3, "a", 600 * s, 4), ss.event(4, "a", 601 * s, 8), ss.event(5, "a", 602 * s, 16)],
        [ss.flush_event(100)],
    ]
    ss.write_files(str(tmp_path / "in"), chunks)
    stream = spark.readStream.schema(ss.SCHEMA).option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
    definition = CountWindows.tumbling(3).lag("5 seconds")
    out = stream.groupBy("k", window("ts", definition, late_rows="emit", expire_idle_keys="1 minute")).agg(
        F.sum("v").alias("s")
    )
    query = run_available_now(out, tmp_path / "checkpoint", name="storm_expiry")
    try:
        rows = spark.table("storm_expiry").where(~F.col("k").eqNullSafe("flush")).collect()
    finally:
        spark.catalog.dropTempView("storm_expiry")
    assert sorted((r["k"], r["s"]) for r in rows if r["late_reason"] is None) == [("a", 28), ("b", 60)]
    assert sorted(r["k"] for r in rows if r["late_reason"] == "expired") == ["a", "a", "c"]
    assert ss.observed(query, "expired_rows") == 3


def test_expire_idle_keys_refused_where_keys_go_by_themselves(streaming):
    stream = streaming.readStream.format("rate").load().withWatermark("timestamp", "1 second")
    with pytest.raises(AnalysisException, match="drop expireIdleKeys"):
        stream.groupBy(window("timestamp", SlidingWindows.of("1 minute"), expire_idle_keys="1 hour")).count()
    with pytest.raises(TypeError, match="expire_idle_keys must be a str"):
        window("timestamp", CountWindows.of(3), expire_idle_keys=3600)


# --- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, phrase",
    [
        (lambda: CountWindows.of(0), "a count window's length must be a positive number of rows, got 0"),
        (lambda: CountWindows.tumbling(-3), "a count window's length must be a positive number of rows"),
        (lambda: CountWindows.of(3).slide(0), "the slide must be a positive number of rows"),
        (lambda: CountWindows.of(3).lag("-5 seconds"), "the lag must not be negative"),
        (lambda: DurationWindows.of("1 minute").lag(datetime.timedelta(seconds=-1)), "the lag must not be negative"),
        (lambda: CountWindows.of(3).every("0 seconds"), "the slide must be positive"),
        (lambda: DurationWindows.of("1 minute").every(-5), "the slide must be positive"),
        (lambda: DurationWindows.of("0 seconds"), "window length must be positive"),
        (lambda: DurationWindows.of(-1), "window length must be positive"),
        (lambda: DurationWindows.tumbling("1 month"), "month"),
        (lambda: CountWindows.of(3).tieBreak("  "), "the tie-break column name must not be empty"),
        (lambda: CountWindows.of(2**63), "does not fit in a 64-bit number of rows"),
    ],
)
def test_invalid_definitions_raise_value_error(spark, make, phrase):
    with pytest.raises(ValueError) as info:
        make()
    assert phrase in str(info.value)
    assert "JVM stacktrace" not in str(info.value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: CountWindows.of(2.5),
        lambda: CountWindows.of("3"),
        lambda: CountWindows.of(True),
        lambda: CountWindows.tumbling(None),
        lambda: CountWindows.of(3).slide(2.5),
        lambda: CountWindows.of(3).slide("2 rows"),
        lambda: CountWindows.of(3).every(1.5),
        lambda: CountWindows.of(3).lag(5),
        lambda: CountWindows.of(3).tieBreak(F.col("seq")),
        lambda: DurationWindows.of(None),
        lambda: DurationWindows.of(1.5),
        lambda: DurationWindows.tumbling(2.0),
        lambda: DurationWindows.of("1 minute").slide(True),
        lambda: DurationWindows.of("1 minute").every([10]),
        lambda: DurationWindows.of("1 minute").lag(None),
    ],
)
def test_wrong_python_types_raise_type_error(make):
    with pytest.raises(TypeError):
        make()


def test_a_missing_tie_break_column_is_named(spark, events):
    with pytest.raises(AnalysisException) as info:
        events.groupBy("k", window("ts", CountWindows.of(3).tieBreak("no_such_column"))).count().collect()
    assert "no_such_column" in str(info.value)


@pytest.mark.parametrize(
    "definition, phrase",
    [
        (DurationWindows.of(10_000), "is a number of ticks, but the time column is a timestamp"),
        (CountWindows.of(3).every(1_000), "is a number of ticks, but the time column is a timestamp"),
    ],
)
def test_invalid_combinations_raise_analysis_exception(spark, events, definition, phrase):
    with pytest.raises(AnalysisException) as info:
        events.groupBy("k", window("ts", definition)).count()
    assert phrase in str(info.value)


@pytest.mark.parametrize(
    "spec, phrase",
    [
        ("count 0 rows", "positive number of rows"),
        ("count 3 minutes", "a count window's length is a number of rows"),
        ("count 3 rows tie break a b", "tie break takes one column name"),
        ("duration 0 seconds", "must be positive"),
        ("duration 10 seconds every 0 rows", "positive number of rows"),
        ("duration 10 seconds lag -1 second", "must not be negative"),
        ("count 3 rows grace 1 minute", "grace"),
    ],
)
def test_bad_specs_in_sql_raise_analysis_exception(spark, events, spec, phrase):
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"SELECT k, count(1) FROM storm_events GROUP BY k, windows(ts, '{spec}')")
    assert phrase in str(info.value)
    with pytest.raises(AnalysisException) as info:
        spark.sql(f"SELECT * FROM window_agg(TABLE(storm_events) PARTITION BY k ORDER BY (ts), '{spec}', 'count(1) AS n')")
    assert phrase in str(info.value)


@pytest.fixture
def stream(streaming, tmp_path):
    ss.write_files(str(tmp_path / "in"), [[ss.event(1, "a", 0, 1)]])
    return streaming.readStream.schema(ss.SCHEMA).json(str(tmp_path / "in"))


@pytest.mark.parametrize(
    "definition",
    [CountWindows.of(3).lag("1 second"), CountWindows.tumbling(3).every("1 minute").lag("0 seconds"),
     DurationWindows.of("1 minute").slide(2).lag("1 second"), DurationWindows.of("1 minute").lag("1 second"),
     DurationWindows.of("1 minute").every("10 seconds").lag("1 second")],
    ids=["count per row", "count/duration", "duration/count", "duration per row", "duration/duration"],
)
def test_updates_are_refused_for_windows_cut_at_rows(stream, definition):
    with pytest.raises(AnalysisException) as info:
        stream.groupBy("k", window("ts", definition, emit="updates")).count()
    assert "final only" in str(info.value)
    assert stream.groupBy("k", window("ts", definition)).count().isStreaming


def test_storm_windows_in_streaming_need_a_watermark_or_lag(stream):
    sliding_in_time = DurationWindows.of("1 minute").every("10 seconds")
    with pytest.raises(AnalysisException) as info:
        stream.groupBy("k", window("ts", sliding_in_time)).count()
    assert "needs a watermark" in str(info.value)
    assert stream.groupBy("k", window("ts", sliding_in_time.lag("5 seconds"))).count().isStreaming
    assert stream.withWatermark("ts", "1 minute").groupBy("k", window("ts", CountWindows.of(3))).count().isStreaming
