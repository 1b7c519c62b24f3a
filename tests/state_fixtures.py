"""Checkpoints written by windowagg releases, kept as test fixtures: state must survive upgrades.

A fixture is one streaming query's checkpoint after the first half of its input, the rows that query
emitted, and which release wrote it (tests/fixtures/state/<release>/<kind>/). test_state_fixtures
restarts each with the release under test on the second half, and checks that the two runs together
emit exactly the batch result over all rows, or, where this release cannot read the fixture's state
layout version (READS), that the restart is refused with a message saying why.
``dev/make-state-fixtures`` writes them: sliding and session windows with windowagg 0.1.0, the kinds
0.1.0 lacked with 0.2.0, and every kind with 0.3.0. Any change to a state layout ships with
fixtures written by the release before it.

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

FIXTURES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "state")
SCHEMA = "k string, ts timestamp, v long"
WATERMARK = "2 minutes"
FLUSH_KEY = "~flush"
START = datetime.datetime(2024, 3, 10, 6, 0, tzinfo=datetime.timezone.utc)  # a DST change in New York

# The release before this one: it has a fixture of every kind.
PREVIOUS_RELEASE = "0.3.0"

# Each kind's state layout, and the versions of each layout this release reads (from, to). 0.3.0
# wrote "partials by time" 2 (blocks of partials), "sessions" 2 (one entry per key) and "rows" 1;
# 0.1.0 and 0.2.0 wrote version 1 of each. This release keeps each key's state under its state
# partition, with one timer of Spark's per partition ("partials by time" 5, "sessions" 3, "rows" 2),
# and reads no earlier version: every fixture's restart is refused, saying why.
LAYOUTS = {
    **{kind: "partials by time" for kind in ("sliding", "tumbling", "hopping", "cumulative", "calendar", "unlimited")},
    "session": "sessions",
    "count": "rows",
    "duration": "rows",
}
READS = {"partials by time": (5, 5), "sessions": (3, 3), "rows": (2, 2)}

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


def flushes():
    """Two rows of a key apart, far ahead, in two micro-batches: the watermark passes every window."""
    return [[(FLUSH_KEY, START + datetime.timedelta(days=days), 0)] for days in (10, 20)]


def write_input(directory, name, rows):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name + ".tmp"), "w") as f:
        for k, t, v in rows:
            ts = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
            f.write(json.dumps({"k": k, "ts": ts, "v": v}) + "\n")
    os.rename(os.path.join(directory, name + ".tmp"), os.path.join(directory, name + ".json"))


def aggregated(df, windowagg, kind, streaming):
    """The fixture's query: per key and window, the sum and count, bounds as epoch microseconds."""
    from pyspark.sql import functions as F

    definition, emit = KINDS[kind]
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
            .outputMode("update" if KINDS[kind][1] == "updates" else "append")
            .option("checkpointLocation", checkpoint)
            .start()
        )
        try:
            for i, rows in enumerate(batches):
                write_input(source, f"part-{i:03d}", rows)
                query.processAllAvailable()
        finally:
            query.stop()
        if query.exception() is not None:
            raise query.exception()
    finally:
        shutil.rmtree(source, ignore_errors=True)
    return emitted


def latest(rows):
    """Per window, the row of the last micro-batch that emitted it (updates); rows without the batch id."""
    last = {}
    for row in sorted(rows, key=lambda r: r[0]):
        last[row[1:4]] = row[1:]
    return sorted(last.values())
