"""Helpers for the streaming tests: input files for Spark's file source, queries, comparisons.

Streaming tests feed JSON files to ``spark.readStream...option("maxFilesPerTrigger", 1)``, so that
every file is one micro-batch, in the order of the files' modification times (set explicitly).
The exactly-once test's child process (streaming_job.py) imports this module too.
"""

import collections
import datetime
import json
import os
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence

# The input of every streaming test: "ts" is an ISO-8601 string in the files; a malformed one
# reads as a null time. "note" is a column that is neither key, time nor aggregated.
SCHEMA = "id bigint, k string, ts timestamp, v bigint, note string"
COLUMNS = ["id", "k", "ts", "v", "note"]

BASE = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
BASE_MICROS = 1_704_067_200_000_000  # BASE as microseconds since the epoch
SECOND = 1_000_000  # microseconds


def ts_text(micros: int) -> str:
    """The time ``micros`` after 2024-01-01T00:00:00Z as the JSON reader's ISO-8601 text."""
    moment = BASE + datetime.timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event(id_: int, k: Optional[str], micros: Optional[int], v: Optional[int], note: str = "") -> Dict[str, Any]:
    """One input row; ``micros=None`` gives a malformed time (read as null)."""
    return {"id": id_, "k": k, "ts": "not a time" if micros is None else ts_text(micros), "v": v, "note": note}


def flush_event(id_: int, days: int = 1) -> Dict[str, Any]:
    """A row of the key "flush", far in the future: its watermark makes every real window final."""
    return event(id_, "flush", days * 86_400 * SECOND, 0, "flush")


def feed(query: Any, folder: str, files: Sequence[Iterable[str]]) -> None:
    """Gives the running `query` each of `files` (its JSON lines) as one more file of `folder`, waiting
    until it has read each; then stops it and raises what it failed with. A file is written aside under
    a name the file source skips (a leading dot) and moved in whole, so the query never reads one half
    written or twice."""
    try:
        for i, lines in enumerate(files):
            hidden = os.path.join(folder, f".part-{i:03d}")
            with open(hidden, "w") as f:
                f.writelines(line + "\n" for line in lines)
            os.rename(hidden, os.path.join(folder, f"part-{i:03d}.json"))
            query.processAllAvailable()
    finally:
        query.stop()
    if query.exception() is not None:
        raise query.exception()


def write_files(folder: str, chunks: Sequence[Sequence[Dict[str, Any]]]) -> List[str]:
    """Writes one JSON-lines file per chunk; the file source reads them in this order (one per
    micro-batch with maxFilesPerTrigger=1) as their modification times increase one second each."""
    os.makedirs(folder, exist_ok=True)
    first_mtime = int(time.time()) - 10_000
    paths = []
    for i, rows in enumerate(chunks):
        path = os.path.join(folder, f"part-{i:04d}.json")
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
        os.utime(path, (first_mtime + i, first_mtime + i))
        paths.append(path)
    return paths


def aggregates() -> list:
    """Aggregates compared between streaming and batch; lists are sorted (equal times have no order)."""
    from pyspark.sql import functions as F

    return [
        F.count(F.lit(1)).alias("n"),
        F.sum("v").alias("sv"),
        F.min("v").alias("minv"),
        F.max("v").alias("maxv"),
        F.avg("v").alias("avgv"),
        F.array_sort(F.collect_list("v")).alias("vs"),
        F.array_sort(F.collect_list("id")).alias("ids"),
    ]


AGGREGATE_NAMES = ["n", "sv", "minv", "maxv", "avgv", "vs", "ids"]


def canonical(row: Any) -> str:
    """A row (nested rows included) as a string that is equal exactly when the rows are equal."""
    data = row.asDict(recursive=True) if hasattr(row, "asDict") else row
    return json.dumps(data, sort_keys=True, default=str)


def multiset(rows: Iterable[Any]) -> collections.Counter:
    """The rows as a multiset of canonical strings."""
    return collections.Counter(canonical(row) for row in rows)


def describe_difference(got: collections.Counter, expected: collections.Counter) -> str:
    """A readable summary of how two multisets of rows differ."""
    missing = expected - got
    extra = got - expected
    duplicated = {row: count for row, count in got.items() if count > 1}
    return (
        f"expected {sum(expected.values())} rows, got {sum(got.values())}; "
        f"{sum(missing.values())} missing (e.g. {list(missing)[:3]}), "
        f"{sum(extra.values())} unexpected (e.g. {list(extra)[:3]}), "
        f"{len(duplicated)} rows more than once (e.g. {list(duplicated.items())[:3]})"
    )


def observed(query: Any, field: str) -> int:
    """The sum over the query's progress reports of a field of the observed metrics "windowagg".

    Every micro-batch that read rows must report the field: a check such as ``observed(q, "late_rows") == 0``
    must fail when the metrics are not published, not pass on a sum of nothing."""
    progress = query.recentProgress
    read_rows = [p for p in progress if p["numInputRows"] > 0]
    assert read_rows, f"the query read no rows, so no micro-batch can have reported windowagg.{field}"
    total = 0
    for report in progress:
        metrics = (report.get("observedMetrics") or {}).get("windowagg")
        if metrics is None and report["numInputRows"] == 0:
            continue  # a micro-batch without data may report none
        fields = metrics.asDict() if metrics is not None else {}
        assert field in fields, f"micro-batch {report['batchId']} did not report windowagg.{field}: {report.get('observedMetrics')}"
        total += int(fields[field])
    return total
