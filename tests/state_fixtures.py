"""Checkpoints written by windowagg releases, kept as test fixtures: state must survive upgrades.

A fixture is one streaming query's checkpoint after the first half of its input, the rows that query
emitted, and which release wrote it (tests/fixtures/state/<release>/<kind>/). test_state_fixtures
restarts each with the release under test on the second half, and checks that the two runs together
emit exactly the batch result over all rows, or, where this release cannot read the fixture's state
layout version (neither CURRENT nor CONVERTS), that the restart is refused with a message saying why.
``dev/make-state-fixtures`` writes them: sliding and session windows with windowagg 0.1.0, the kinds
0.1.0 lacked with 0.2.0, every kind with 0.3.0, and with 0.4.0 every kind and, as
``<kind>-from-0.3.0``, 0.3.0 checkpoints it upgraded (about.json lists the rows that release processed
after the first half). Any change to a state layout ships with fixtures written by the release
before it, and every release writes its own.

This module is imported both by the tests and by the generator, which may run an older windowagg:
it uses only what every release's Python package has (``window``, the definition classes).
"""

import datetime
import glob
import json
import os
import random
import shutil
import tempfile

import streaming_support

FIXTURES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "state")
SCHEMA = "k string, ts timestamp, v long"
WATERMARK = "2 minutes"
FLUSH_KEY = "~flush"
START = datetime.datetime(2024, 3, 10, 6, 0, tzinfo=datetime.timezone.utc)  # a DST change in New York

# The release before this one, whose checkpoints this one restarts; and the latest release that
# wrote fixtures: of every kind, and of the previous release's checkpoints it upgraded, one kind per
# layout it converts (UPGRADED_KINDS), for the next release to restart.
PREVIOUS_RELEASE = "0.3.0"
LATEST_FIXTURES = "0.4.0"
UPGRADED_KINDS = ("sliding", "session", "count")

# Each kind's state layout, its version in this release, and the earlier version it converts. 0.3.0
# wrote "partials by time" 2 (blocks of partials), "sessions" 2 (one entry per key) and "rows" 1,
# each kept in variables of the key's own group; 0.1.0 and 0.2.0 wrote version 1 of each. This
# release keeps each key's state in entries of one state map, grouped by state partition
# ("partials by time" 7, "sessions" 5, "rows" 4); a checkpoint of the previous release stays grouped
# by key and converts each key's state the first time it is read. Older versions are refused.
LAYOUTS = {
    **{kind: "partials by time" for kind in ("sliding", "tumbling", "hopping", "cumulative", "calendar", "unlimited", "custom", "table")},
    "python": "listed partials by time",
    "session": "sessions",
    "count": "rows",
    "duration": "rows",
    "tumbling-early": "partials by time",
    "session-early": "sessions",
    "duration-early": "rows",
    "count-early": "rows",
}
CURRENT = {"partials by time": 7, "listed partials by time": 5, "sessions": 5, "rows": 4}
CONVERTS = {"partials by time": 2, "sessions": 2, "rows": 1}

# kind: (the definition, from a windowagg module; emission)
KINDS = {
    "sliding": (lambda w: w.SlidingWindows.of("30 seconds"), "final"),
    "session": (lambda w: w.SessionWindows.withInactivityGap("20 seconds"), "final"),
    "tumbling": (lambda w: w.TimeWindows.of("1 minute"), "final"),
    "hopping": (lambda w: w.TimeWindows.of("1 minute").advanceBy("20 seconds"), "final"),
    "cumulative": (lambda w: w.CumulativeWindows.of("20 seconds", "2 minutes"), "final"),
    "calendar": (lambda w: w.CalendarWindows.days(1).inZone("America/New_York"), "final"),
    "count": (lambda w: w.CountWindows.of(5).slide(2), "final"),
    "duration": (lambda w: w.DurationWindows.of("30 seconds").every("10 seconds"), "final"),
    "unlimited": (lambda w: w.UnlimitedWindows.of(), "updates"),
}


def _periods(w):
    """Table windows: overlapping periods of several sizes over the input's ten minutes, some closing
    within its first half; read from a DataFrame of the active session."""
    from pyspark.sql import SparkSession

    bounds = ((0, 90), (60, 200), (150, 400), (300, 320), (350, 900))
    rows = [(START + datetime.timedelta(seconds=a), START + datetime.timedelta(seconds=b)) for a, b in bounds]
    periods = SparkSession.getActiveSession().createDataFrame(rows, "opens timestamp, closes timestamp")
    return w.TableWindows.of(periods, start="opens", end="closes")


def _python_quarters(w):
    """Fiscal quarters of years from February by a Python function, defined here so that it travels
    to the Python workers by value."""

    def fiscal_quarters(times):
        import pandas as pd

        quarters = times.dt.to_period("Q-JAN")
        return pd.DataFrame({"start": quarters.dt.start_time, "end": (quarters + 1).dt.start_time})

    return w.PythonWindows.of(fiscal_quarters, max_size="92 days 1 hour")


# The kinds 0.4.0 writes fixtures of too: user-defined JVM kinds (the examples jar), table windows
# and Python windows; and queries firing early, whose emission policy keeps state of its own beside
# the kind's (the partial times changed since the key last fired; over sessions and count windows,
# whose bounds change, the bounds fired).
FIXTURE_KINDS = {
    **KINDS,
    "custom": (lambda w: w.CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=2), "final"),
    "table": (_periods, "final"),
    "python": (_python_quarters, "final"),
    "tumbling-early": (lambda w: w.TimeWindows.of("1 minute"), "every 20 seconds"),
    "session-early": (lambda w: w.SessionWindows.withInactivityGap("20 seconds"), "every 20 seconds"),
    "duration-early": (lambda w: w.DurationWindows.of("30 seconds").every("10 seconds"), "every 20 seconds"),
    "count-early": (lambda w: w.CountWindows.of(5).slide(2), "every 20 seconds"),
}


def relocate(checkpoint):
    """Points a copied checkpoint's operator metadata at its own state schema files.

    Spark records them by absolute path (``stateSchemaFilePaths`` in ``state/<op>/_metadata/v2``), as
    they were where the fixture was written; a copy elsewhere must name its own.
    """
    root = os.path.abspath(checkpoint)
    for metadata_dir in glob.glob(os.path.join(root, "state", "*", "_metadata", "v2")):
        for name in os.listdir(metadata_dir):
            path = os.path.join(metadata_dir, name)
            if name.startswith(".") or not os.path.isfile(path):
                continue
            with open(path) as f:
                version, body = f.read().split("\n", 1)
            data = json.loads(body)
            for store in data.get("stateStoreInfo", []):
                store["stateSchemaFilePaths"] = [
                    "file:" + os.path.join(root, "state", p.split("/checkpoint/state/", 1)[1])
                    for p in store.get("stateSchemaFilePaths", [])
                ]
            with open(path, "w") as f:
                f.write(version + "\n" + json.dumps(data, separators=(",", ":")))
            # Hadoop's local file system checks a file against its .crc sibling: the edit has none
            crc = os.path.join(metadata_dir, f".{name}.crc")
            if os.path.exists(crc):
                os.remove(crc)


def halves():
    """The input: 200 rows over the first 5 minutes, then 200 over minutes 4 to 10, all on time."""
    rnd = random.Random(13)

    def row(lo, hi):
        t = START + datetime.timedelta(milliseconds=rnd.randrange(lo * 1000, hi * 1000))
        return (f"k{rnd.randrange(6)}", t, rnd.randrange(1, 100))

    return [row(0, 300) for _ in range(200)], [row(240, 600) for _ in range(200)]


def between():
    """Rows of two keys that a release upgrading a checkpoint of the first half processes before the
    second half: on time (ahead of the first half's watermark), they convert those keys' state and
    leave the others' as the earlier release wrote it (but for keys whose timer the watermark they
    move passes). The last is the latest time yet, so a micro-batch without data follows, as after
    the first half: a restart's file source then re-reads no file of the earlier run's folder."""
    rnd = random.Random(29)
    rows = [(k, START + datetime.timedelta(milliseconds=rnd.randrange(190_000, 230_000)), rnd.randrange(1, 100))
            for k in ("k0", "k1", "k0", "k1")]
    return rows + [("k0", START + datetime.timedelta(seconds=301), 7)]


def rows_as_json(rows):
    """Input rows as a fixture's about.json keeps them: key, epoch microseconds, value."""
    return [[k, int(t.timestamp()) * 1_000_000 + t.microsecond, v] for k, t, v in rows]


def rows_from_json(rows):
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return [(k, epoch + datetime.timedelta(microseconds=t), v) for k, t, v in rows]


def flushes():
    """Two rows of a key apart, far ahead, in two micro-batches: the watermark passes every window
    (a fiscal quarter's too)."""
    return [[(FLUSH_KEY, START + datetime.timedelta(days=days), 0)] for days in (120, 240)]


def json_lines(rows):
    """Input rows (key, time, value) as the file source reads them, a JSON line each."""
    for k, t, v in rows:
        ts = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
        yield json.dumps({"k": k, "ts": ts, "v": v})


def aggregated(df, windowagg, kind, streaming):
    """The fixture's query: per key and window, the sum and count, bounds as epoch microseconds."""
    from pyspark.sql import functions as F

    definition, emit = FIXTURE_KINDS[kind]
    if streaming:
        df = df.withWatermark("ts", WATERMARK)
        grouping = windowagg.window("ts", definition(windowagg), emit=emit)
    else:
        grouping = windowagg.window("ts", definition(windowagg))
    return (
        df.groupBy("k", grouping)
        .agg(F.sum("v").alias("total"), F.count(F.lit(1)).alias("n"))
        .select(
            "k",
            F.unix_micros("window.start").alias("start"),
            F.unix_micros("window.end").alias("end"),
            "total",
            "n",
        )
    )


def run_stream(spark, windowagg, kind, checkpoint, batches):
    """Runs the query over `batches` (lists of rows, one file each, one micro-batch each) from `checkpoint`.

    Returns the emitted rows as (batch id, k, start, end, total, n), the flush key left out.
    """
    emitted = []

    def collect(batch, batch_id):
        for r in batch.collect():
            if r.k != FLUSH_KEY:
                emitted.append((batch_id, r.k, r.start, r.end, r.total, r.n))

    source = tempfile.mkdtemp(prefix=f"windowagg-fixture-{kind}-")
    try:
        stream = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(source)
        query = (
            aggregated(stream, windowagg, kind, streaming=True)
            .writeStream.foreachBatch(collect)
            .outputMode("append" if FIXTURE_KINDS[kind][1] == "final" else "update")
            .option("checkpointLocation", checkpoint)
            .start()
        )
        streaming_support.feed(query, source, [json_lines(rows) for rows in batches])
    finally:
        shutil.rmtree(source, ignore_errors=True)
    return emitted


def latest(rows):
    """Per window, the row of the last micro-batch that emitted it (updates, early firing), as an
    upserting sink keeps them: a retraction (no count) removes the window; rows without the batch id."""
    last = {}
    for row in sorted(rows, key=lambda r: r[0]):  # stable: a micro-batch's rows stay in their order
        if row[5] is None:
            last.pop(row[1:4], None)
        else:
            last[row[1:4]] = row[1:]
    return sorted(last.values())
