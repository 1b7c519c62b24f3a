"""The inputs and queries that more than one benchmark uses, so that no benchmark imports another
(bench/README.md's table of files names who uses which; table_events is table_windows.py's, global and
per key). The same arguments and seed give the same rows. Nothing here runs at import time; nothing
here imports pyspark at import time.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

BASE_MS = 1_700_000_000_000  # 2023-11-14, any fixed instant will do
TABLE_BASE_MS = 1_699_920_000_000 + 1_234_567  # 2023-11-14 00:20:34.567 UTC: table_windows.py's start
SESSION_GAP_S = 30  # the gap the session events are made for: breaks are longer, steps within a burst shorter


def sliding_batch_input(spark, rows: int, keys: int, density: float, seed: int, partitions: int):
    """(k, ts, v): rows rows over `keys` keys; key k's i-th event is at (i + u) / density seconds, u uniform
    in [0, 1) and truncated to the millisecond, so times are distinct per key and whole milliseconds
    (this lets the harness tell windowagg's left windows, ending on a record's time, from its right
    windows, ending at t + 1 µs + S). Rows are shuffled randomly so no competitor gets sorted input."""
    from pyspark.sql import functions as F

    step_ms = 1000.0 / density
    df = (spark.range(rows)
          .select((F.col("id") % keys).cast("int").alias("k"),
                  (F.col("id") / keys).cast("long").alias("i"))
          .withColumn("u", F.rand(seed))
          .withColumn("ts_ms", F.lit(BASE_MS) + F.floor((F.col("i") + F.col("u")) * step_ms).cast("long"))
          .select("k",
                  F.timestamp_millis("ts_ms").alias("ts"),
                  F.round(F.rand(seed + 1) * 1000.0, 3).alias("v"))
          .orderBy(F.rand(seed + 2))
          .repartition(partitions))
    return df


def sliding_window_seconds(target: float, density: float, span: float) -> int:
    """Whole seconds S such that the mean left-window ("current row and S before") count is
    about `target` for events of `density` per second over a key's time span `span` seconds.

    A row at offset x into the span sees min(x, S) * density earlier rows, so the mean frame is
    density * (S - S^2 / (2 * span)) (+1 for the row itself); solving for S corrects the start
    edge, which otherwise makes large S fall well short of the target."""
    want = max(target - 1.0, 0.0) / density
    disc = span * span - 2.0 * span * want
    s = span - math.sqrt(disc) if disc > 0 else span
    return max(1, round(s))


class WindowAgg:
    """windowagg's sliding-window groupBy column, through the Python package when it is installed, else
    through py4j straight to the jar's Scala API (both give the same Catalyst plan)."""

    def __init__(self, spark):
        self.spark = spark
        try:
            import windowagg
            self.mod = windowagg
            self.via = "python package windowagg"
        except ImportError:
            self.mod = None
            self.via = "py4j to windowagg.functions.window"

    def column(self, ts: str, size: str):
        from pyspark.sql import functions as F
        if self.mod is not None:
            return self.mod.window(ts, self.mod.SlidingWindows.of(size))
        from pyspark.sql.classic.column import Column, _to_java_column
        jvm = self.spark.sparkContext._jvm
        jc = jvm.windowagg.functions.window(_to_java_column(F.col(ts)), jvm.windowagg.SlidingWindows.of(size))
        return Column(jc).alias("window")


def sliding_query(name: str, df, size_s: int, wa: WindowAgg, partitions: int):
    """sum, count and max of v per k over sliding windows of size_s seconds: sliding_batch.py's competitors."""
    from pyspark.sql import functions as F
    size = f"{size_s} seconds"
    aggs = harness.sum_count_max()
    if name == "windowagg":
        return df.groupBy("k", wa.column("ts", size)).agg(*aggs)
    if name in ("over_range", "over_segtree"):
        frame = f"(PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL {size_s} SECONDS PRECEDING AND CURRENT ROW)"
        return df.selectExpr("k", "ts", "v", *(f"{f}(v) OVER {frame} AS {f}_v" for f in ("sum", "count", "max")))
    if name == "hopping":
        return df.groupBy("k", F.window("ts", size, "1 second")).agg(*aggs)
    if name == "sort_floor":
        return df.repartition(partitions, "k").sortWithinPartitions("k", "ts")
    raise ValueError(name)


def sliding_stream_files(spark, folder: Path, rows: int, batches: int, keys: int, density: float, seed: int,
                         jitter_ms: int, base_ms: int = BASE_MS) -> list[Path]:
    """(k, ts, v) files: `rows` events, the i-th at base_ms + i / (keys * density) s plus up to jitter_ms, key
    uniform at random, written as `batches` files of consecutive events (harness.write_batches)."""
    from pyspark.sql import functions as F

    per_batch = -(-rows // batches)
    step_ms = 1000.0 / (keys * density)
    events = (spark.range(rows, numPartitions=4)
              .select(F.col("id"),
                      (F.col("id") / per_batch).cast("int").alias("batch"),
                      F.floor(F.rand(seed) * keys).cast("int").alias("k"),
                      (F.lit(base_ms) + F.floor(F.col("id") * step_ms + F.rand(seed + 1) * jitter_ms)).alias("ts_ms"),
                      F.round(F.rand(seed + 2) * 1000.0, 3).alias("v"))
              .repartition(4, "batch")
              .sortWithinPartitions("batch", "id")
              .select("batch", "k", F.timestamp_millis("ts_ms").alias("ts"), "v"))
    return harness.write_batches(events, folder, batches)


def session_events(spark, rows: int, keys: int, mean_session: float, seed: int):
    """(k, i, ts, v), i the event's index within its key: key k's events form bursts. Each event's distance
    to the previous event of its key is, with probability 1/mean_session, a break uniform in
    [gap + 1 s, 10 * gap] (gap = SESSION_GAP_S), else uniform in [1 ms, 5 s], in whole milliseconds;
    timestamps are the running sum per key. So sessions of that gap have a geometric number of rows, of
    mean mean_session."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    p_break = 1.0 / mean_session
    small = F.lit(1) + F.floor(F.rand(seed + 1) * 4999)                       # 1 ms .. 5 s
    big = (F.lit((SESSION_GAP_S + 1) * 1000)
           + F.floor(F.rand(seed + 2) * (9 * SESSION_GAP_S - 1) * 1000))      # gap+1 s .. 10 gap
    d = (spark.range(rows, numPartitions=8)
         .select((F.col("id") % keys).cast("int").alias("k"), (F.col("id") / keys).cast("long").alias("i"))
         .withColumn("delta", F.when(F.col("i") == 0, F.lit(0))
                     .when(F.rand(seed) < p_break, big).otherwise(small).cast("long"))
         .withColumn("ts_ms", F.lit(BASE_MS) + F.sum("delta").over(
             Window.partitionBy("k").orderBy("i").rowsBetween(Window.unboundedPreceding, 0)))
         .select("k", "i", F.timestamp_millis("ts_ms").alias("ts"),
                 F.round(F.rand(seed + 3) * 1000.0, 3).alias("v")))
    return d


def session_files(spark, folder: Path, rows: int, files: int, keys: int, mean_session: float,
                  seed: int) -> list[Path]:
    """(k, ts, v) files: session_events' first `rows` events in event-time order, as `files` files
    (harness.write_batches)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    per_file = -(-rows // files)
    d = session_events(spark, rows, keys, mean_session, seed)
    return harness.write_batches(
        d.withColumn("n", F.row_number().over(Window.orderBy("ts", "k")) - 1)
        .withColumn("batch", (F.col("n") / per_file).cast("int"))
        .repartition(4, "batch").sortWithinPartitions("batch", "n")
        .select("batch", "k", "ts", "v"), folder, files)


def session_query(name: str, df):
    """sum, count and max of v per k over sessions of SESSION_GAP_S: sessions.py's competitors."""
    from pyspark.sql import functions as F
    import windowagg
    gap = f"{SESSION_GAP_S} seconds"
    column = (windowagg.window("ts", windowagg.SessionWindows.withInactivityGap(gap)) if name == "windowagg"
              else F.session_window("ts", gap) if name == "spark" else None)
    if column is None:
        raise ValueError(name)
    return df.groupBy("k", column).agg(*harness.sum_count_max())


def table_events(spark, rows: int, keys: int, days: float, seed: int, partitions: int):
    """rows events over `keys` keys (id % keys), ts uniform over `days` days from TABLE_BASE_MS, whole
    milliseconds; v a multiple of 1/1024 in [0, 1000). Rows are shuffled randomly."""
    from pyspark.sql import functions as F
    span_ms = days * 86_400_000
    return (spark.range(rows)
            .select((F.col("id") % keys).cast("int").alias("k"),
                    F.timestamp_millis((F.lit(TABLE_BASE_MS) + F.floor(F.rand(seed) * span_ms)).cast("long")).alias("ts"),
                    (F.floor(F.rand(seed + 1) * 1_024_000) / 1024.0).alias("v"))
            .orderBy(F.rand(seed + 2))
            .repartition(partitions))
