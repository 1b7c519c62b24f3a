"""The Nexmark window queries, in windowagg and in Spark's own built-ins (PySpark DataFrames).

Every query is a function of a DataFrame of bids: the bid columns of generator.py (``auction,
bidder, price, channel, url, date_time, extra``; ``date_time`` epoch milliseconds BIGINT) plus
``ts`` TIMESTAMP = ``timestamp_millis(date_time)`` (``with_ts``; ``read_bids`` and ``stream_bids``
add it, and ``bids_from_kafka`` to the records generator.write_kafka writes). Each works on a batch
DataFrame and on a streaming one (append output mode, final emission, event time: the caller puts
``withWatermark("ts", ...)`` on the stream, which ``stream_bids`` does), except where a docstring
says otherwise. Window bounds come out as epoch milliseconds (BIGINT), as flink_queries.py writes
them, so outputs compare directly.

  query        windowagg                                         Spark built-in
  q5_counts    TimeWindows.of("10 seconds").advanceBy("2 seconds")  window(ts, "10 seconds", "2 seconds")
  q5           q5_counts, then per window the auction(s) with the most bids (a max per window joined
               back; ties all kept, as Flink's "num >= maxn"): BATCH ONLY.  In streaming, run q5_counts
               and apply ``q5_top`` to its (complete, final) output afterwards, as a batch query: a
               second aggregation over a windowed one in append mode is not something either
               windowagg's ``window`` or Spark's ``window`` chains (differential.py does exactly this).
  q5_sliding   SlidingWindows.of("10 seconds") per auction (KIP-450)   (none; no Flink counterpart either)
  q7           TimeWindows.of("10 seconds"), no key, max(price)       window(ts, "10 seconds")
  q11          SessionWindows.withInactivityGap("10 seconds") per bidder   session_window(ts, "10 seconds")
  cumulative   CumulativeWindows.of("10 seconds", "1 day") per auction   (none)
  q12          TimeWindows.of("10 seconds") per bidder on processing time: window(current_timestamp(),
               ..., time="processing"), STREAMING ONLY (windowagg refuses it in batch);
               Spark: window(current_timestamp(), "10 seconds"), which in streaming needs the update
               (or complete) output mode: Spark's append mode wants an event-time watermark.
               Benchmark only: processing time cannot be compared across engines.

Columns:
  q5_counts, q5_sliding, cumulative   auction, window_start, window_end, num
  q5                                  auction, num, window_start, window_end   (Flink's q5 order)
  q7                                  window_start, window_end, max_price
  q11                                 bidder, window_start, window_end, num, flink_end
  q12                                 bidder, window_start, window_end, num

Conventions (checked by differential.py against Flink 2.3):
  * TUMBLE / HOP / CUMULATE windows are half-open [start, end) in all three engines; hops are
    aligned to multiples of the slide from epoch 0 (Spark, windowagg: offset 0; Flink: the same);
    CUMULATE periods start at UTC midnight (windowagg: multiples of 1 day from the epoch, which is
    UTC midnight for a TIMESTAMP; Flink: the session time zone, which flink_queries.py sets to UTC).
  * Sessions: windowagg's (KIP-94) are [first, last], end = the LAST bid's time (inclusive);
    Spark's session_window and Flink's SESSION end at last + gap.  ``flink_end`` is the end in
    Flink's convention: windowagg's end + 10 s, Spark's end as it is.  All three merge two bids
    exactly one gap (10 s) apart into one session (inclusive), and split at gap + 1 ms.
  * Cumulative windows: per key, windowagg has every window of a period from the first step
    holding a row to the period's end (``[day, day + k*10 s)`` for k up to 8640), later steps
    without new rows included (docs/semantics.md: "a window whose last step had no records still
    exists when earlier steps of its period had some"), which is what Flink's CUMULATE emits too.
    So the mapping is the identity.
"""
from __future__ import annotations

from typing import Callable

SIZE = "10 seconds"
SLIDE = "2 seconds"
GAP = "10 seconds"
GAP_MS = 10_000
STEP = "10 seconds"
PERIOD = "1 day"

BID_SCHEMA = ("auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, "
              "date_time BIGINT, extra STRING")

COLUMNS = {
    "q5_counts": ["auction", "window_start", "window_end", "num"],
    "q5": ["auction", "num", "window_start", "window_end"],
    "q5_sliding": ["auction", "window_start", "window_end", "num"],
    "q7": ["window_start", "window_end", "max_price"],
    "q11": ["bidder", "window_start", "window_end", "num", "flink_end"],
    "cumulative": ["auction", "window_start", "window_end", "num"],
    "q12": ["bidder", "window_start", "window_end", "num"],
}


# Flink's output columns (flink_queries.COLUMNS; that module is not imported here: it is run with
# the Flink virtualenv's python)
FLINK_COLUMNS = {
    "q5": ["auction", "num", "window_start", "window_end"],
    "q5_counts": ["auction", "window_start", "window_end", "num"],
    "q7": ["window_start", "window_end", "max_price"],
    "q11": ["bidder", "num", "window_start", "window_end"],
    "cumulative": ["auction", "window_start", "window_end", "num"],
}

MIDNIGHT_MS = 1_700_006_400_000  # 2023-11-15T00:00:00Z, the first UTC midnight after generator's default base
FLUSH_ID = -1  # the flush bid's auction and bidder
FLUSH_AFTER_MS = 3 * 86_400_000  # the flush bid's time after the last real bid: every real window is final


# ------------------------------------------------------------------------------ inputs

def with_ts(df):
    """The bids with ``ts`` TIMESTAMP from ``date_time`` (epoch ms)."""
    from pyspark.sql import functions as F
    return df.withColumn("ts", F.timestamp_millis("date_time"))


def read_bids(spark, path):
    """Batch bids from CSV file(s) with a header line (generator.write_bids), with ``ts``."""
    return with_ts(spark.read.schema(BID_SCHEMA).option("header", True).csv(str(path)))


def stream_bids(spark, folder, watermark: str | None = "0 seconds", files_per_trigger: int = 1):
    """The CSV files in ``folder`` as a stream, ``files_per_trigger`` file(s) per micro-batch (in
    order of modification time), with ``ts`` and ``withWatermark("ts", watermark)`` (None: none)."""
    df = with_ts(spark.readStream.schema(BID_SCHEMA).option("header", True)
                 .option("maxFilesPerTrigger", files_per_trigger).csv(str(folder)))
    return df.withWatermark("ts", watermark) if watermark is not None else df


def bids_from_kafka(records):
    """The bids among the records of a Kafka source (batch or streaming; ``value`` as written by
    generator.write_kafka), in the bid columns, with ``ts``."""
    from pyspark.sql import functions as F

    from generator import KAFKA_TIME

    bid = ("auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, "
           "dateTime TIMESTAMP, extra STRING")
    event = F.from_json(F.col("value").cast("string"), f"event_type INT, bid STRUCT<{bid}>", KAFKA_TIME)
    bids = records.select(event.alias("e")).where("e.event_type = 2").select("e.bid.*")
    return with_ts(bids.withColumn("dateTime", F.unix_millis("dateTime")).withColumnRenamed("dateTime", "date_time"))


def base_time_ms(events: int, rate: int, after_midnight_ms: int) -> int:
    """The base time that makes the last event fall `after_midnight_ms` after MIDNIGHT_MS (rounded down
    to the generator's time grid)."""
    last_offset = ((events - 1) * 1000) // rate if events else 0
    return MIDNIGHT_MS + after_midnight_ms - last_offset


def flush_bid(bids, at_ms: int):
    """One bid of the flush key at `at_ms` (a pandas frame in the bids' columns): its watermark closes
    every real window; the outputs leave its own rows out."""
    flush = bids.iloc[:1].copy()
    flush.loc[:, ["auction", "bidder", "price"]] = [FLUSH_ID, FLUSH_ID, 0]
    flush.loc[:, "date_time"] = at_ms
    flush.loc[:, ["channel", "url", "extra"]] = ["flush", "", ""]
    return flush


def read_flink(path: str, query: str):
    """flink_queries.py's output file of `query` as a pandas frame, its columns checked."""
    import pandas as pd
    df = pd.read_csv(path, dtype="int64")
    if list(df.columns) != FLINK_COLUMNS[query]:
        raise RuntimeError(f"flink {query}: columns {list(df.columns)}, expected {FLINK_COLUMNS[query]}")
    return df


def _bounds(col: str):
    """window_start, window_end as epoch ms from a window struct column."""
    from pyspark.sql import functions as F
    return [F.unix_millis(F.col(f"{col}.start")).alias("window_start"),
            F.unix_millis(F.col(f"{col}.end")).alias("window_end")]


# ------------------------------------------------------------------------------ q5: hot items

def q5_counts_windowagg(bids):
    """Bids per auction in hopping windows of 10 s every 2 s (windowagg)."""
    from pyspark.sql import functions as F
    from windowagg import TimeWindows, window
    return (bids.groupBy("auction", window("ts", TimeWindows.of(SIZE).advanceBy(SLIDE)))
            .agg(F.count(F.lit(1)).alias("num"))
            .select("auction", *_bounds("window"), "num"))


def q5_counts_spark(bids):
    """Bids per auction in hopping windows of 10 s every 2 s (Spark's window())."""
    from pyspark.sql import functions as F
    return (bids.groupBy("auction", F.window("ts", SIZE, SLIDE).alias("w"))
            .agg(F.count(F.lit(1)).alias("num"))
            .select("auction", *_bounds("w"), "num"))


def q5_top(counts):
    """Nexmark q5's second step over q5_counts' output (auction, window_start, window_end, num):
    per window, the auction(s) with the most bids, ties all kept. Batch only: apply it to a batch
    DataFrame, e.g. the complete output of a streamed q5_counts read back."""
    from pyspark.sql import functions as F
    top = counts.groupBy("window_start", "window_end").agg(F.max("num").alias("maxn"))
    return (counts.join(top, ["window_start", "window_end"])
            .where(F.col("num") >= F.col("maxn"))
            .select("auction", "num", "window_start", "window_end"))


def q5_windowagg(bids):
    """Nexmark q5 hot items with windowagg's hopping windows (batch only, see q5_top)."""
    return q5_top(q5_counts_windowagg(bids))


def q5_spark(bids):
    """Nexmark q5 hot items with Spark's window() (batch only, see q5_top)."""
    return q5_top(q5_counts_spark(bids))


def q5_sliding_windowagg(bids):
    """Bids per auction in KIP-450 sliding windows of 10 s (windowagg only: every distinct set of an
    auction's bids 10 s can hold, both ends included; no Flink or Spark counterpart)."""
    from pyspark.sql import functions as F
    from windowagg import SlidingWindows, window
    return (bids.groupBy("auction", window("ts", SlidingWindows.of(SIZE)))
            .agg(F.count(F.lit(1)).alias("num"))
            .select("auction", *_bounds("window"), "num"))


# ------------------------------------------------------------------------------ q7: highest bid

def q7_windowagg(bids):
    """The highest price per tumbling 10 s window, over all bids (no key; windowagg)."""
    from pyspark.sql import functions as F
    from windowagg import TimeWindows, window
    return (bids.groupBy(window("ts", TimeWindows.of(SIZE)))
            .agg(F.max("price").alias("max_price"))
            .select(*_bounds("window"), "max_price"))


def q7_spark(bids):
    """The highest price per tumbling 10 s window, over all bids (Spark's window())."""
    from pyspark.sql import functions as F
    return (bids.groupBy(F.window("ts", SIZE).alias("w"))
            .agg(F.max("price").alias("max_price"))
            .select(*_bounds("w"), "max_price"))


# ------------------------------------------------------------------------------ q11: user sessions

def q11_windowagg(bids):
    """Bids per bidder in sessions with a 10 s inactivity gap (windowagg, KIP-94): window_end is the
    session's last bid (inclusive); flink_end = window_end + gap."""
    from pyspark.sql import functions as F
    from windowagg import SessionWindows, window
    return (bids.groupBy("bidder", window("ts", SessionWindows.withInactivityGap(GAP)))
            .agg(F.count(F.lit(1)).alias("num"))
            .select("bidder", *_bounds("window"), "num")
            .withColumn("flink_end", F.col("window_end") + F.lit(GAP_MS)))


def q11_spark(bids):
    """Bids per bidder in sessions with a 10 s gap (Spark's session_window): window_end is the last
    bid + gap already, as Flink's, so flink_end = window_end."""
    from pyspark.sql import functions as F
    return (bids.groupBy("bidder", F.session_window("ts", GAP).alias("w"))
            .agg(F.count(F.lit(1)).alias("num"))
            .select("bidder", *_bounds("w"), "num")
            .withColumn("flink_end", F.col("window_end")))


# ------------------------------------------------------------------------------ cumulative

def cumulative_windowagg(bids):
    """Bids per auction per UTC day, refreshed every 10 s (windowagg's CumulativeWindows, Flink's
    CUMULATE): windows [day, day + k * 10 s) from the auction's first step to the day's end."""
    from pyspark.sql import functions as F
    from windowagg import CumulativeWindows, window
    return (bids.groupBy("auction", window("ts", CumulativeWindows.of(STEP, PERIOD)))
            .agg(F.count(F.lit(1)).alias("num"))
            .select("auction", *_bounds("window"), "num"))


# ------------------------------------------------------------------------------ q12: processing time

def q12_windowagg(bids):
    """Bids per bidder in tumbling 10 s windows of processing time (windowagg, streaming only:
    append mode, no watermark needed; give the query a processing-time trigger, since windows
    close on Spark's processing-time clock)."""
    from pyspark.sql import functions as F
    from windowagg import TimeWindows, window
    return (bids.groupBy("bidder", window(F.current_timestamp(), TimeWindows.of(SIZE), time="processing"))
            .agg(F.count(F.lit(1)).alias("num"))
            .select("bidder", *_bounds("window"), "num"))


def q12_spark(bids):
    """Bids per bidder in tumbling 10 s windows of processing time (Spark's window over
    current_timestamp(); batch, or streaming in the update/complete output mode)."""
    from pyspark.sql import functions as F
    return (bids.groupBy("bidder", F.window(F.current_timestamp(), SIZE).alias("w"))
            .agg(F.count(F.lit(1)).alias("num"))
            .select("bidder", *_bounds("w"), "num"))


# ------------------------------------------------------------------------------ registry

# name -> (windowagg, Spark built-in or None, flink_queries.py query or None, streaming in append mode)
QUERIES: dict[str, tuple[Callable, Callable | None, str | None, bool]] = {
    "q5_counts": (q5_counts_windowagg, q5_counts_spark, "q5_counts", True),
    "q5": (q5_windowagg, q5_spark, "q5", False),
    "q5_sliding": (q5_sliding_windowagg, None, None, True),
    "q7": (q7_windowagg, q7_spark, "q7", True),
    "q11": (q11_windowagg, q11_spark, "q11", True),
    "cumulative": (cumulative_windowagg, None, "cumulative", True),
    "q12": (q12_windowagg, q12_spark, None, True),
}
