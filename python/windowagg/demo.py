"""A demo job: per-user 10-minute sliding windows over a generated clickstream.

Run it with ``python -m windowagg.demo [--users N] [--events N] [--out DIR]``. It

1. generates a deterministic (seeded) clickstream in local Spark: users visit in sessions of a few
   clicks each, busy users visit more often, every click has a page and a dwell time, and clicks
   arrive out of order (a few seconds of delay, now and then minutes);
2. computes, per user, KIP-450 sliding windows of 10 minutes: clicks, total and maximum dwell, and
   distinct pages;
3. prints the busiest windows and writes all windows to Parquet under ``--out``.
"""

import argparse
import os
import time
from typing import List, Optional

PAGES = [
    "/",
    "/search",
    "/category/shoes",
    "/category/books",
    "/item/1042",
    "/item/2203",
    "/item/3117",
    "/item/4821",
    "/cart",
    "/checkout",
    "/account",
    "/help",
]
SESSION_CLICKS = 12  # average clicks per visit
SESSION_MINUTES = 20  # the longest visit
SPAN_HOURS = 8  # the day the clicks span
START = "2024-03-01 08:00:00"


def generate_clicks(spark, users: int, events: int, seed: int = 7):
    """The clickstream as a DataFrame ``(user_id, page, dwell_ms, event_time, arrival_time)``,
    in arrival order; the same arguments give the same rows on any machine."""
    from pyspark.sql import functions as F

    prime = 2_147_483_647

    def uniform(*cols):
        """A deterministic uniform number in (0, 1) from the hash of the given columns and seed."""
        return (F.pmod(F.xxhash64(F.lit(seed), *cols), F.lit(prime - 1)) + 1) / float(prime)

    salt = [F.lit(i) for i in range(10)]
    sessions = max(1, events // SESSION_CLICKS)
    span_ms = SPAN_HOURS * 3600 * 1000
    start_ms = F.unix_millis(F.to_timestamp(F.lit(START)))

    clicks = (
        spark.range(0, events, 1, numPartitions=4)
        .withColumn("session", F.floor(uniform(F.col("id"), salt[0]) * sessions))
        # busy users have more visits: a skewed draw per visit
        .withColumn("user", F.floor(F.pow(uniform(F.col("session"), salt[1]), 1.5) * users))
        .withColumn("session_start_ms", F.floor(uniform(F.col("session"), salt[2]) * span_ms))
        .withColumn("offset_ms", F.floor(uniform(F.col("id"), salt[3]) * SESSION_MINUTES * 60_000))
        .withColumn("page_index", F.floor(F.pow(uniform(F.col("id"), salt[4]), 1.6) * len(PAGES)))
        # dwell time: log-normal around 8 s (Box-Muller from two uniforms)
        .withColumn(
            "dwell_ms",
            F.round(
                F.exp(
                    F.log(F.lit(8000.0))
                    + 0.9
                    * F.sqrt(-2.0 * F.log(uniform(F.col("id"), salt[5])))
                    * F.cos(2.0 * 3.141592653589793 * uniform(F.col("id"), salt[6]))
                )
            ).cast("long"),
        )
        # arrival delay: ~2 s on average, and 1% of clicks up to 10 minutes late
        .withColumn(
            "delay_ms",
            F.floor(-F.log(uniform(F.col("id"), salt[7])) * 2000)
            + F.when(uniform(F.col("id"), salt[8]) < 0.01, F.floor(uniform(F.col("id"), salt[9]) * 600_000)).otherwise(0),
        )
        .withColumn("event_ms", start_ms + F.col("session_start_ms") + F.col("offset_ms"))
    )
    page_names = F.array(*[F.lit(p) for p in PAGES])
    return (
        clicks.select(
            F.format_string("user%05d", F.col("user").cast("int")).alias("user_id"),
            F.element_at(page_names, (F.col("page_index") + 1).cast("int")).alias("page"),
            F.col("dwell_ms"),
            F.timestamp_millis(F.col("event_ms")).alias("event_time"),
            F.timestamp_millis(F.col("event_ms") + F.col("delay_ms")).alias("arrival_time"),
        )
        .orderBy("arrival_time", "user_id", "event_time", "page", "dwell_ms")
    )


def sliding_activity(clicks, size: str = "10 minutes"):
    """Per-user sliding windows of ``size`` with clicks, total and maximum dwell, and distinct pages."""
    from pyspark.sql import functions as F

    from windowagg import SlidingWindows, window

    return clicks.groupBy("user_id", window("event_time", SlidingWindows.of(size))).agg(
        F.count(F.lit(1)).alias("clicks"),
        F.sum("dwell_ms").alias("total_dwell_ms"),
        F.max("dwell_ms").alias("max_dwell_ms"),
        F.size(F.collect_set("page")).alias("distinct_pages"),
    ).select(
        "user_id",
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "clicks",
        "total_dwell_ms",
        "max_dwell_ms",
        "distinct_pages",
    )


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the demo; see ``python -m windowagg.demo --help``."""
    parser = argparse.ArgumentParser(prog="python -m windowagg.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=2_000, help="number of users (default 2000)")
    parser.add_argument("--events", type=int, default=300_000, help="number of clicks (default 300000)")
    parser.add_argument("--out", default=os.path.join("out", "demo"), help="output folder (default out/demo)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated data (default 7)")
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    args = parser.parse_args(argv)
    if args.users < 1 or args.events < 1:
        parser.error("--users and --events must be positive")

    import windowagg
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    began = time.time()
    spark = windowagg.session(
        app_name="windowagg-demo",
        master=args.master,
        config={
            "spark.sql.shuffle.partitions": "8",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
        },
    )
    spark.sparkContext.setLogLevel("WARN")
    try:
        clicks = generate_clicks(spark, args.users, args.events, args.seed)
        windows = sliding_activity(clicks)
        out = os.path.abspath(args.out)
        windows.write.mode("overwrite").parquet(out)

        written = spark.read.parquet(out)
        count = written.count()
        print(f"{args.events} clicks of {args.users} users -> {count} sliding windows of 10 minutes per user")
        print("The busiest window of each of the 10 busiest users (windows include both ends; a start")
        print("1 µs after a click is the window that begins right after that click):")
        busiest_first = [F.desc("clicks"), F.desc("total_dwell_ms"), F.asc("window_start")]
        rank = F.row_number().over(Window.partitionBy("user_id").orderBy(*busiest_first))
        (
            written.withColumn("rank", rank)
            .where("rank = 1")
            .drop("rank")
            .orderBy(*busiest_first, "user_id")
            .show(10, truncate=False)
        )
        print(f"Wrote the windows as Parquet to {out} ({time.time() - began:.1f} s)")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
