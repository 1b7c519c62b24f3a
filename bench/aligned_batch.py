#!/usr/bin/env python3
"""Batch benchmark: windowagg's aligned window kinds (hopping, tumbling, cumulative, calendar) against
what a Spark user would otherwise write, plus a regression check of the sliding and session kinds.
windowagg is called through SQL only (`windows(ts, 'spec')` or the `window_agg` table function), so
the benchmark needs no Python classes for these kinds.

Its sections, inputs, cells, checks and method are its page's: bench/aligned_batch_notes.md, rendered
into docs/benchmarks-aligned.md.
"""
from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
import data  # noqa: E402
import harness  # noqa: E402
import protocol  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402

DOC = report.DOCS / "benchmarks-aligned.md"
IMG = report.DOCS / "img" / "aligned_batch.png"
NOTES = BENCH_DIR / "aligned_batch_notes.md"  # the page's prose, a template render() fills
SECTIONS = ["hopping", "hopping_dense", "hopping_write", "tumbling", "cumulative", "calendar", "sliding", "sessions"]
# 2023-11-14 00:00:00 UTC plus 20 min 34.567 s, so no window boundary coincides with the first event
BASE_MS = 1_699_920_000_000 + 1_234_567

HOP_SPEC = "hopping 1 hour every 10 seconds"
TUMBLE_SPEC = "tumbling 1 minute"
CUM_SPEC = "cumulative 1 hour up to 1 day"
CAL_SPEC = "calendar 1 month"
CAL_ZONE = "America/New_York"
CAL_ZONE_SPEC = f"calendar 1 month in ''{CAL_ZONE}''"  # inside the SQL string literal of windows(ts, '...')
AGG_SQL = "sum(v) AS s, count(1) AS n, avg(v) AS a"


def parse_args(argv=None):
    p = harness.parser(__doc__, "smoke run: 200k rows / 10 keys (same rows per key as the full run), sliding and "
                                "session regression on 200k rows, 2 reps, 120 s timeout, no docs")
    p.add_argument("--rows", type=int, help="rows of the hopping/tumbling input (default 2,000,000; quick 200,000)")
    p.add_argument("--keys", type=int, help="keys of the hopping/tumbling input (default 100; quick 10)")
    p.add_argument("--hours", type=float, default=4.0, help="time span of each key in the hopping/tumbling input (4)")
    p.add_argument("--dense-rows", type=int,
                   help="rows of the dense hopping input, 100 per key and 10-second slice (default: --rows)")
    p.add_argument("--write-rows", type=int,
                   help="rows of the hopping_write input, a row every 100 s per key (default 1,000,000; quick 100,000)")
    p.add_argument("--write-keys", type=int, help="keys of the hopping_write input (default 1000; quick 100)")
    p.add_argument("--cum-rows", type=int, help="rows of the cumulative input (default: --rows)")
    p.add_argument("--cum-keys", type=int, help="keys of the cumulative input (default: --keys)")
    p.add_argument("--cum-days", type=float, default=4.0, help="time span of each key in the cumulative input (4)")
    p.add_argument("--cal-rows", type=int, help="rows of the calendar input (default 4,000,000; quick 200,000)")
    p.add_argument("--cal-keys", type=int,
                   help="keys of the calendar input (default 100; quick 5: the same 40,000 rows per key)")
    p.add_argument("--cal-years", type=float, default=10.0, help="time span of each key in the calendar input (10)")
    p.add_argument("--sliding-rows", type=int, help="sliding regression rows (default 4,000,000; quick 200,000)")
    p.add_argument("--sliding-keys", type=int, help="sliding regression keys (default 1000; quick 50)")
    p.add_argument("--sliding-target", type=int, default=500, help="rows per window of the sliding cell (500)")
    p.add_argument("--session-rows", type=int, help="sessions regression rows (default 4,000,000; quick 200,000)")
    p.add_argument("--session-keys", type=int, help="sessions regression keys (default 1000; quick 100)")
    p.add_argument("--sections", default=",".join(SECTIONS), help=f"comma separated subset of {','.join(SECTIONS)}")
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the correctness joins")
    p.add_argument("--hop-timeout", type=float,
                   help="timeout of Spark's hopping cells, which copy every row 360 times (default 900; quick 120)")
    p.add_argument("--hop-check-keys", type=int, default=1,
                   help="keys (k < N) of the hopping correctness join, whose Spark side is slow (default 1)")
    p.add_argument("--hop-sub-keys", type=int,
                   help="keys (k < N) of the hopping subset cells, where Spark finishes (default: a tenth of --keys)")
    batch = harness.add_batch_args(p, DOC.name, reps=(3, 2), timeout=(300.0, 120.0), several_reports=True)
    a = p.parse_args(argv)
    harness.defaults(a, rows=(2_000_000, 200_000), keys=(100, 10), cal_rows=(4_000_000, 200_000),
                     cal_keys=(100, 5), write_rows=(1_000_000, 100_000), write_keys=(1000, 100), sliding_rows=(4_000_000, 200_000), sliding_keys=(1000, 50),
                     session_rows=(4_000_000, 200_000), session_keys=(1000, 100),
                     hop_timeout=(900.0, 120.0), **batch)
    a.dense_rows = a.dense_rows or a.rows
    a.cum_rows = a.cum_rows or a.rows
    a.cum_keys = a.cum_keys or a.keys
    a.hop_sub_keys = a.hop_sub_keys or max(1, a.keys // 10)
    a.sections = harness.subset(p, a.sections, SECTIONS, "section")
    return a


# ------------------------------------------------------------------------------ inputs

def aligned_input(spark, rows: int, keys: int, span_s: float, seed: int, partitions: int):
    """rows rows over `keys` keys, each key's events spread evenly over span_s seconds from BASE_MS:
    key k's i-th event at BASE + (i + u) * step, u uniform in [0, 1), whole milliseconds; v in
    [0, 1000) with 3 decimals. Rows are shuffled randomly (no competitor gets sorted input)."""
    from pyspark.sql import functions as F
    per_key = rows // keys
    step_ms = span_s * 1000.0 / per_key
    return (spark.range(rows)
            .select((F.col("id") % keys).cast("int").alias("k"), (F.col("id") / keys).cast("long").alias("i"))
            .withColumn("ts_ms", F.lit(BASE_MS) + F.floor((F.col("i") + F.rand(seed)) * step_ms).cast("long"))
            .select("k", F.timestamp_millis("ts_ms").alias("ts"), F.round(F.rand(seed + 1) * 1000.0, 3).alias("v"))
            .orderBy(F.rand(seed + 2))
            .repartition(partitions))


# ------------------------------------------------------------------------------ queries

def flat(df, window_col="window"):
    """(k, start, end, s, n, a) from a groupBy result with a window struct column."""
    from pyspark.sql import functions as F
    return df.select("k", F.col(f"{window_col}.start").alias("start"), F.col(f"{window_col}.end").alias("end"),
                     "s", "n", "a")


def q_windows(df, spec: str):
    from pyspark.sql import functions as F
    return df.groupBy("k", F.expr(f"windows(ts, '{spec}')").alias("window")).agg(*harness.sum_count_avg())


def q_window_agg(spark, df, spec: str, view: str):
    df.createOrReplaceTempView(view)
    return spark.sql(f"SELECT * FROM window_agg(TABLE({view}) PARTITION BY k ORDER BY (ts), '{spec}', '{AGG_SQL}')")


def q_spark_window(df, size: str, slide: str | None = None):
    from pyspark.sql import functions as F
    w = F.window("ts", size, slide) if slide else F.window("ts", size)
    return df.groupBy("k", w.alias("window")).agg(*harness.sum_count_avg())


def q_date_trunc(df):
    """The nearest built-in to calendar months (a batch hash aggregation; not usable in streaming)."""
    from pyspark.sql import functions as F
    return df.groupBy("k", F.date_trunc("month", "ts").alias("month")).agg(*harness.sum_count_avg())


def flat_date_trunc(df, zone: str | None = None):
    """(k, start, end, s, n, a) months from date_trunc: in the session zone (UTC) start = month,
    end = month + 1 month; with `zone`, date_trunc of the local time, converted back to an instant
    (local midnight of the 1st is never in a daylight-saving gap for America/New_York)."""
    from pyspark.sql import functions as F
    if zone is None:
        return q_date_trunc(df).select("k", F.col("month").alias("start"),
                                       (F.col("month") + F.expr("INTERVAL 1 MONTH")).alias("end"), "s", "n", "a")
    local = F.date_trunc("month", F.from_utc_timestamp("ts", zone))
    return (df.groupBy("k", local.alias("lm")).agg(*harness.sum_count_avg())
            .select("k", F.to_utc_timestamp("lm", zone).alias("start"),
                    F.to_utc_timestamp(F.col("lm") + F.expr("INTERVAL 1 MONTH"), zone).alias("end"), "s", "n", "a"))


def q_floor(df, partitions: int):
    return df.repartition(partitions, "k").sortWithinPartitions("k", "ts")


def q_write_floor(spark, rows: int, keys: int, partitions: int):
    """As many rows as a result has, of its shape (k, window struct, s, n, a), made and written by Spark:
    what writing the windows costs, whoever computes them."""
    from pyspark.sql import functions as F
    def at(ms):  # plain arithmetic on longs: adding an INTERVAL would cost more than the writing
        return F.timestamp_millis(F.lit(ms) + F.col("id") * 10_000)
    return spark.range(0, rows, 1, partitions).select(
        (F.col("id") % keys).cast("int").alias("k"),
        F.struct(at(BASE_MS).alias("start"), at(BASE_MS + 3_600_000).alias("end")).alias("window"),
        (F.col("id") * 0.5).alias("s"), F.col("id").alias("n"), (F.col("id") * 0.25).alias("a"))


def q_union24(df):
    """What a Spark user writes for a daily total refreshed hourly without cumulative windows: one
    query per step h = 1..24 over the rows of the first h hours of each day, unioned."""
    from pyspark.sql import functions as F
    parts = []
    for h in range(1, 25):
        parts.append(df.where(F.hour("ts") < h)
                     .groupBy("k", F.window("ts", "1 day").alias("window")).agg(*harness.sum_count_avg())
                     .select("k", F.col("window.start").alias("start"),
                             (F.col("window.start") + F.expr(f"INTERVAL {h} HOURS")).alias("end"), "s", "n", "a"))
    return functools.reduce(lambda x, y: x.unionAll(y), parts)


def q_hourly_running(df):
    """Hourly tumbling partials, then a running total per (k, day): the same windows as the
    cumulative kind when every hour of a day that has rows before its end has rows itself."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    hourly = (df.groupBy("k", F.window("ts", "1 hour").alias("w"))
              .agg(F.sum("v").alias("hs"), F.count(F.lit(1)).alias("hn"))
              .select("k", F.col("w.end").alias("end"), F.date_trunc("day", F.col("w.start")).alias("start"), "hs", "hn"))
    run = Window.partitionBy("k", "start").orderBy("end").rowsBetween(Window.unboundedPreceding, 0)
    return (hourly.select("k", "start", "end", F.sum("hs").over(run).alias("s"), F.sum("hn").over(run).alias("n"))
            .withColumn("a", F.col("s") / F.col("n")))


def compare(left, right) -> dict:
    """windowagg's windows against Spark's: harness.compare_windows, sums and averages within 1e-9 relative (`v`
    has 3 decimals: sums in another order may differ in their last bits)."""
    return harness.compare_windows(left, right, "spark", sum_tolerance=1e-9, avg_tolerance=1e-9)


# ------------------------------------------------------------------------------ main

def run(b: protocol.Run) -> None:
    a, res, spark = b.a, b.res, b.spark

    def cell(sec: dict, name: str, make_df, timeout: float | None = None):
        b.cell(f"{sec['name']}/{name}", make_df, sec["cells"], name, timeout=timeout, section=sec["name"],
               competitor=name)

    def section_checks(sec: dict, **checks) -> None:
        """The section's untimed checks (its key in the section: a function giving compare()'s findings), their
        seconds together in check_s; logged and saved."""
        t0 = time.perf_counter()
        for key, compute in checks.items():
            sec[key] = compute()
            log(f"{sec['name']} {key}: {sec[key]}")
        sec["check_s"] = round(time.perf_counter() - t0, 1)
        b.save()

    def check_key_subset(sec: dict, df) -> None:
        """windowagg's hopping windows against Spark window()'s on the keys k < --hop-check-keys (Spark's side is slow)."""
        from pyspark.sql import functions as F
        sub = df.where(F.col("k") < a.hop_check_keys)
        sec["check_keys"] = a.hop_check_keys
        section_checks(sec, check=lambda: compare(flat(q_windows(sub, HOP_SPEC)),
                                                  flat(q_spark_window(sub, "1 hour", "10 seconds"))))

    def section(name: str, title: str, **kw) -> dict:
        sec = {"name": name, "title": title, "cells": {}, **kw}
        res["sections"][name] = sec
        b.save()
        return sec

    aligned = None
    if {"hopping", "tumbling"} & set(a.sections):
        span = a.hours * 3600
        aligned, info = harness.cache_input(aligned_input(spark, a.rows, a.keys, span, a.seed, a.shuffle_partitions), "aligned")
        res["aligned_input"] = {**info, "span_s_per_key": span, "rows_per_key": a.rows // a.keys,
                                "rows_per_second_per_key": (a.rows // a.keys) / span}

    if "hopping" in a.sections:
        from pyspark.sql import functions as F
        sec = section("hopping", f"Hopping 1 hour every 10 seconds ({a.rows:,} rows, {a.keys} keys, {a.hours:g} h)",
                      spec=HOP_SPEC, input="aligned")
        sec["plan_windowagg"] = harness.plan_of(q_windows(aligned, HOP_SPEC))
        sec["plan_spark"] = harness.plan_of(q_spark_window(aligned, "1 hour", "10 seconds"))
        if a.check:
            sub = aligned.where(F.col("k") < a.hop_check_keys)
            sec["check_keys"] = a.hop_check_keys
            sp = flat(q_spark_window(sub, "1 hour", "10 seconds")).cache()  # Spark's side once: it is slow
            tvf = q_window_agg(spark, sub, HOP_SPEC, "src_check").withColumnRenamed(
                "window_start", "start").withColumnRenamed("window_end", "end")
            section_checks(sec, check=lambda: compare(flat(q_windows(sub, HOP_SPEC)), sp),
                           check_tvf=lambda: compare(tvf, sp))
            sp.unpersist()
        cell(sec, "windowagg", lambda: q_windows(aligned, HOP_SPEC))
        cell(sec, "windowagg_tvf", lambda: q_window_agg(spark, aligned, HOP_SPEC, "src_aligned"))
        # Spark copies every row 360 times: on a subset of the keys it finishes, on the whole input it
        # may hit the timeout, so both are measured (the subset first)
        hsub, info = harness.cache_input(aligned.where(F.col("k") < a.hop_sub_keys), "hopping key subset")
        sec["subset"] = {**info, "keys_below": a.hop_sub_keys}
        cell(sec, "windowagg_sub", lambda: q_windows(hsub, HOP_SPEC))
        cell(sec, "spark_sub", lambda: q_spark_window(hsub, "1 hour", "10 seconds"), timeout=a.hop_timeout)
        hsub.unpersist()
        cell(sec, "spark", lambda: q_spark_window(aligned, "1 hour", "10 seconds"), timeout=a.hop_timeout)

    if "hopping_dense" in a.sections:
        # 100 rows per key in every 10-second slice: 10 per second, spread over as many slices as that takes
        span = a.dense_rows / a.keys / 10.0
        dense, info = harness.cache_input(aligned_input(spark, a.dense_rows, a.keys, span, a.seed + 30, a.shuffle_partitions),
                                          "dense hopping")
        res["dense_input"] = {**info, "span_s_per_key": span, "rows_per_key": a.dense_rows // a.keys,
                              "rows_per_slice_per_key": 100}
        sec = section("hopping_dense", f"Hopping 1 hour every 10 seconds, 100 rows per key and slice ({a.dense_rows:,} rows, "
                                       f"{a.keys} keys, {span / 60:g} minutes)", spec=HOP_SPEC, input="dense")
        sec["plan_windowagg"] = harness.plan_of(q_windows(dense, HOP_SPEC))
        if a.check:
            check_key_subset(sec, dense)
        cell(sec, "windowagg", lambda: q_windows(dense, HOP_SPEC))
        cell(sec, "spark", lambda: q_spark_window(dense, "1 hour", "10 seconds"), timeout=a.hop_timeout)
        dense.unpersist()

    if "hopping_write" in a.sections:
        span = a.write_rows / a.write_keys * 100.0
        sparse, info = harness.cache_input(aligned_input(spark, a.write_rows, a.write_keys, span, a.seed + 40,
                                                         a.shuffle_partitions), "hopping_write")
        res["write_input"] = {**info, "span_s_per_key": span, "rows_per_key": a.write_rows // a.write_keys}
        sec = section("hopping_write", f"Hopping 1 hour every 10 seconds, a row every 100 s per key ({a.write_rows:,} rows, "
                                       f"{a.write_keys} keys, {span / 3600:g} h)", spec=HOP_SPEC, input="write")
        sec["plan_windowagg"] = harness.plan_of(q_windows(sparse, HOP_SPEC))
        sec["windows"] = q_windows(sparse, HOP_SPEC).count()
        res["write_input"]["windows"] = sec["windows"]
        if a.check:
            check_key_subset(sec, sparse)
        cell(sec, "windowagg", lambda: q_windows(sparse, HOP_SPEC))
        spark.conf.set("spark.windowagg.aggregateBeforeShuffle", "never")
        cell(sec, "windowagg_rows", lambda: q_windows(sparse, HOP_SPEC))
        spark.conf.unset("spark.windowagg.aggregateBeforeShuffle")
        cell(sec, "write_floor", lambda: q_write_floor(spark, sec["windows"], a.write_keys, a.shuffle_partitions))
        cell(sec, "sort_floor", lambda: q_floor(sparse, a.shuffle_partitions))
        cell(sec, "spark", lambda: q_spark_window(sparse, "1 hour", "10 seconds"), timeout=a.hop_timeout)
        sparse.unpersist()

    if "tumbling" in a.sections:
        sec = section("tumbling", f"Tumbling 1 minute ({a.rows:,} rows, {a.keys} keys, {a.hours:g} h)",
                      spec=TUMBLE_SPEC, input="aligned")
        sec["plan_windowagg"] = harness.plan_of(q_windows(aligned, TUMBLE_SPEC))
        sec["plan_spark"] = harness.plan_of(q_spark_window(aligned, "1 minute"))
        if a.check:
            section_checks(sec, check=lambda: compare(flat(q_windows(aligned, TUMBLE_SPEC)),
                                                      flat(q_spark_window(aligned, "1 minute"))))
        cell(sec, "windowagg", lambda: q_windows(aligned, TUMBLE_SPEC))
        cell(sec, "spark", lambda: q_spark_window(aligned, "1 minute"))
        cell(sec, "sort_floor", lambda: q_floor(aligned, a.shuffle_partitions))
    if aligned is not None:
        aligned.unpersist()

    if "cumulative" in a.sections:
        span = a.cum_days * 86400
        cum, info = harness.cache_input(aligned_input(spark, a.cum_rows, a.cum_keys, span, a.seed + 10, a.shuffle_partitions),
                                "cumulative")
        res["cumulative_input"] = {**info, "span_s_per_key": span, "rows_per_key": a.cum_rows // a.cum_keys}
        sec = section("cumulative", f"Cumulative 1 hour up to 1 day ({a.cum_rows:,} rows, {a.cum_keys} keys, "
                                    f"{a.cum_days:g} days)", spec=CUM_SPEC, input="cumulative")
        if a.check:
            section_checks(sec, check=lambda: compare(flat(q_windows(cum, CUM_SPEC)), q_union24(cum)),
                           check_hourly_running=lambda: compare(q_hourly_running(cum), q_union24(cum)))
        cell(sec, "windowagg", lambda: q_windows(cum, CUM_SPEC))
        cell(sec, "spark_union24", lambda: q_union24(cum))
        cell(sec, "spark_hourly_running", lambda: q_hourly_running(cum))
        cum.unpersist()

    if "calendar" in a.sections:
        span = a.cal_years * 365.25 * 86400
        cal, info = harness.cache_input(aligned_input(spark, a.cal_rows, a.cal_keys, span, a.seed + 20, a.shuffle_partitions),
                                "calendar")
        res["calendar_input"] = {**info, "span_s_per_key": span, "rows_per_key": a.cal_rows // a.cal_keys,
                                 "years": a.cal_years, "zone": CAL_ZONE}
        sec = section("calendar", f"Calendar 1 month ({a.cal_rows:,} rows, {a.cal_keys} keys, {a.cal_years:g} years)",
                      spec=CAL_SPEC, zone_spec=CAL_ZONE_SPEC, input="calendar")
        sec["plan_windowagg"] = harness.plan_of(q_windows(cal, CAL_SPEC))
        sec["plan_spark"] = harness.plan_of(q_date_trunc(cal))
        if a.check:
            section_checks(sec, check=lambda: compare(flat(q_windows(cal, CAL_SPEC)), flat_date_trunc(cal)),
                           check_zone=lambda: compare(flat(q_windows(cal, CAL_ZONE_SPEC)), flat_date_trunc(cal, CAL_ZONE)))
        cell(sec, "windowagg", lambda: q_windows(cal, CAL_SPEC))
        cell(sec, "windowagg_zone", lambda: q_windows(cal, CAL_ZONE_SPEC))
        cell(sec, "spark_date_trunc", lambda: q_date_trunc(cal))
        cell(sec, "sort_floor", lambda: q_floor(cal, a.shuffle_partitions))
        cal.unpersist()

    if "sliding" in a.sections:
        density = 10.0
        span = a.sliding_rows / a.sliding_keys / density
        s = data.sliding_window_seconds(a.sliding_target, density, span)
        sl, info = harness.cache_input(data.sliding_batch_input(spark, a.sliding_rows, a.sliding_keys, density, 42, a.shuffle_partitions),
                               "sliding")
        res["sliding_input"] = {**info, "window_seconds": s, "target_rows_per_window": a.sliding_target,
                                "generator": "bench/data.py sliding_batch_input(density=10, seed=42)"}
        sec = section("sliding", f"Sliding (KIP-450) regression, S = {s} s (~{a.sliding_target} rows/window, "
                                 f"{a.sliding_rows:,} rows, {a.sliding_keys} keys)", input="sliding",
                      published={"windowagg_wall_s": [3.6, 4.0], "sort_floor_wall_s": [2.2, 2.5],
                                 "source": "docs/benchmarks.md (4M rows, 1000 keys; 3.77-4.00 s in the table, "
                                           "3.60-3.85 s in the quiet re-check; floor 2.16-2.51 s)"}
                      if a.sliding_rows == 4_000_000 and a.sliding_keys == 1000 else None)
        wa = data.WindowAgg(spark)
        sec["windowagg_via"] = wa.via
        cell(sec, "windowagg", lambda: data.sliding_query("windowagg", sl, s, wa, a.shuffle_partitions))
        cell(sec, "sort_floor", lambda: data.sliding_query("sort_floor", sl, s, wa, a.shuffle_partitions))
        sl.unpersist()

    if "sessions" in a.sections:
        from pyspark.sql import functions as F
        se_seed = 7
        src = (data.session_events(spark, a.session_rows, a.session_keys, 50.0, se_seed).drop("i")
               .orderBy(F.rand(se_seed + 9)).repartition(a.shuffle_partitions))
        ses, info = harness.cache_input(src, "sessions")
        res["sessions_input"] = {**info, "generator": "bench/sessions.py events(mean_session=50, seed=7), gap 30 s"}
        sec = section("sessions", f"Session windows regression, gap 30 s ({a.session_rows:,} rows, {a.session_keys} keys)",
                      input="sessions",
                      published={"windowagg_s": 23.20, "spark_s": 33.87, "ratio": 0.68,
                                 "source": "docs/benchmarks-sessions.md (4M rows, 1000 keys, contended: "
                                           "other processes 1.65-1.69 cores)"}
                      if a.session_rows == 4_000_000 and a.session_keys == 1000 else None)
        if a.check:
            cnt = {}
            for c in ("windowagg", "spark"):
                cnt[c] = data.session_query(c, ses).count()
            sec["check"] = {"windowagg_sessions": cnt["windowagg"], "spark_sessions": cnt["spark"],
                            "same_count": cnt["windowagg"] == cnt["spark"]}
            log(f"sessions check: {sec['check']}")
        cell(sec, "windowagg", lambda: data.session_query("windowagg", ses))
        cell(sec, "spark", lambda: data.session_query("spark", ses))
        ses.unpersist()


# ------------------------------------------------------------------------------ summary + report

# (section, numerator competitor, denominator competitor, label) -- the ratios the report shows
RATIOS = [
    ("hopping", "spark", "windowagg", "Spark window() ÷ windowagg, whole input (target ≥ 50×)"),
    ("hopping", "spark_sub", "windowagg_sub", "Spark window() ÷ windowagg, key subset"),
    ("hopping", "windowagg_tvf", "windowagg", "window_agg table ÷ windows() groupBy"),
    ("hopping_dense", "spark", "windowagg", "Spark window() ÷ windowagg, 100 rows per key and slice (target ≥ 50×)"),
    ("hopping_write", "windowagg", "write_floor", "windowagg ÷ writing as many rows (target ≤ 3×)"),
    ("hopping_write", "windowagg_rows", "write_floor", "windowagg, rows across the shuffle ÷ writing as many rows"),
    ("hopping_write", "sort_floor", "write_floor", "shuffle+sort floor ÷ writing as many rows"),
    ("hopping_write", "windowagg", "sort_floor", "windowagg ÷ shuffle+sort floor"),
    ("hopping_write", "spark", "windowagg", "Spark window() ÷ windowagg, a row every 100 s per key (target ≥ 50×)"),
    ("tumbling", "windowagg", "spark", "windowagg ÷ Spark window() (target ≤ 1.0×)"),
    ("tumbling", "sort_floor", "spark", "shuffle+sort floor ÷ Spark window()"),
    ("tumbling", "windowagg", "sort_floor", "windowagg ÷ shuffle+sort floor"),
    ("cumulative", "spark_union24", "windowagg", "union of 24 ÷ windowagg"),
    ("cumulative", "windowagg", "spark_hourly_running", "windowagg ÷ hourly + running sum (target ≤ 1.0×)"),
    ("calendar", "windowagg", "spark_date_trunc", "windowagg ÷ Spark date_trunc('month')"),
    ("calendar", "windowagg_zone", "spark_date_trunc", "windowagg America/New_York months ÷ Spark date_trunc('month') "
                                                      "(target ≤ 1.1×)"),
    ("calendar", "sort_floor", "spark_date_trunc", "shuffle+sort floor ÷ Spark date_trunc('month')"),
    ("calendar", "windowagg", "sort_floor", "windowagg ÷ shuffle+sort floor"),
    ("calendar", "windowagg_zone", "windowagg", "America/New_York months ÷ UTC months (zone arithmetic)"),
    ("sliding", "windowagg", "sort_floor", "windowagg ÷ shuffle+sort floor (target ≤ 1.3×)"),
    ("sessions", "windowagg", "spark", "windowagg ÷ Spark session_window (published 0.68×)"),
]

LABELS = {
    ("hopping", "windowagg"): "windowagg windows() groupBy",
    ("hopping", "windowagg_tvf"): "windowagg window_agg table",
    ("hopping", "spark"): "Spark window(ts, '1 hour', '10 seconds')",
    ("hopping", "windowagg_sub"): "windowagg windows() groupBy, key subset",
    ("hopping", "spark_sub"): "Spark window(ts, '1 hour', '10 seconds'), key subset",
    ("hopping_dense", "windowagg"): "windowagg windows() groupBy",
    ("hopping_dense", "spark"): "Spark window(ts, '1 hour', '10 seconds')",
    ("hopping_write", "windowagg"): "windowagg windows() groupBy",
    ("hopping_write", "windowagg_rows"): "windowagg windows() groupBy, aggregateBeforeShuffle=never",
    ("hopping_write", "write_floor"): "Spark writing as many rows",
    ("hopping_write", "sort_floor"): "shuffle + sort floor",
    ("hopping_write", "spark"): "Spark window(ts, '1 hour', '10 seconds')",
    ("tumbling", "windowagg"): "windowagg windows() groupBy",
    ("tumbling", "spark"): "Spark window(ts, '1 minute')",
    ("tumbling", "sort_floor"): "shuffle + sort floor",
    ("cumulative", "windowagg"): "windowagg windows() groupBy",
    ("cumulative", "spark_union24"): "Spark: union of 24 window(ts, '1 day') queries",
    ("cumulative", "spark_hourly_running"): "Spark: hourly window() + running SUM OVER",
    ("calendar", "windowagg"): "windowagg windows() groupBy, UTC months",
    ("calendar", "windowagg_zone"): "windowagg windows() groupBy, America/New_York months",
    ("calendar", "spark_date_trunc"): "Spark date_trunc('month', ts)",
    ("calendar", "sort_floor"): "shuffle + sort floor",
    ("sliding", "windowagg"): "windowagg SlidingWindows (KIP-450 set)",
    ("sliding", "sort_floor"): "shuffle + sort floor",
    ("sessions", "windowagg"): "windowagg SessionWindows",
    ("sessions", "spark"): "Spark session_window",
}


def _c(res, sec, comp):
    return res["sections"].get(sec, {}).get("cells", {}).get(comp)


def ratio_text(res, sec, num, den) -> tuple[str, str]:
    """Cell num ÷ cell den of a section: (wall text, CPU text)."""
    return report.wall_and_cpu_ratios(_c(res, sec, num), _c(res, sec, den))


def summary(res) -> None:
    for name, sec in res["sections"].items():
        for comp, c in sec["cells"].items():
            report.log_cell(f"{name:10s} {comp:22s}", c, 18)
        for k in ("check", "check_tvf", "check_hourly_running", "check_zone"):
            if k in sec:
                log(f"SUMMARY {name:10s} {k}: {sec[k]}")
    for sec, num, den, label in RATIOS:
        tw, tc = ratio_text(res, sec, num, den)
        if tw != "–":
            log(f"SUMMARY ratio {sec}: {label}: wall {tw}, CPU {tc}")


def plot(res, path: Path) -> None:
    plt = report.pyplot()
    from matplotlib.ticker import FuncFormatter

    secs = [s for s in SECTIONS if s in res["sections"] and res["sections"][s]["cells"]]
    fig, axes = plt.subplots(len(secs), 1, figsize=(10.5, 1.25 + 0.62 * sum(len(res["sections"][s]["cells"]) for s in secs)),
                             gridspec_kw={"height_ratios": [len(res["sections"][s]["cells"]) for s in secs]})
    if len(secs) == 1:
        axes = [axes]
    colors = {"windowagg": "#1f77b4", "windowagg_tvf": "#6baed6"}
    for ax, s in zip(axes, secs):
        sec = res["sections"][s]
        comps = list(sec["cells"])
        walls, cpus, texts = [], [], []
        for comp in comps:
            c = sec["cells"][comp]
            if c["status"] == "timeout":
                walls.append(c["timeout_s"]); cpus.append(0); texts.append(f"> {c['timeout_s']:.0f} s (timeout)")
            elif c["status"] == "ok":
                walls.append(c["median_s"]); cpus.append(c.get("median_cpu_s") or 0)
                texts.append(f"{c['median_s']:.2f} s wall{' †' if c['contended_runs'] else ''}, "
                             f"{(c.get('median_cpu_s') or 0):.1f} s CPU")
            else:
                walls.append(0); cpus.append(0); texts.append("error")
        y = list(range(len(comps)))[::-1]
        cols = [colors.get(comp, "#1f77b4" if comp.startswith("windowagg") else
                           "#999999" if "floor" in comp else "#ff7f0e") for comp in comps]
        ax.barh(y, walls, color=cols, height=0.62, hatch=None)
        ax.barh(y, cpus, color="none", edgecolor="black", height=0.62, linestyle=":", linewidth=1.0)
        for yi, w, cp, t, comp in zip(y, walls, cpus, texts, comps):
            if sec["cells"][comp]["status"] == "timeout":
                ax.barh([yi], [w], color="none", edgecolor="#d62728", height=0.62, hatch="//")
            ax.text(max(w, cp) * 1.08 if w else 0.1, yi, t, va="center", fontsize=8.5)
        ax.set_yticks(y)
        ax.set_yticklabels([LABELS.get((s, comp), comp) for comp in comps], fontsize=8.5)
        ax.set_xscale("log")
        xmax = max(max(walls), max(cpus)) * 20
        xmin = min([v for v in walls + cpus if v] or [1]) / 2
        ax.set_xlim(xmin, xmax)
        run = sec.get("run") or {}
        other = res.get("files") and run.get("file") != res["files"][0]["file"]
        ax.set_title(sec["title"] + (f"; separate run {run['started'][:16].replace('T', ' ')} UTC" if other else ""),
                     fontsize=9.5, loc="left")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.grid(axis="x", which="both", alpha=0.25)
    axes[-1].set_xlabel("seconds (log scale): bar = median wall time, dotted outline = median own CPU time;\n"
                        "blue = windowagg, orange = Spark, grey = floors (shuffle + sort, writing); † = contended run(s)")
    fig.suptitle("windowagg aligned windows vs Spark (local[2], batch)", fontsize=11)
    fig.tight_layout()
    report.save(fig, path)


def load_results(paths: list[Path]) -> dict:
    """The first file's results, with each later file's sections replacing or adding to them (and
    their input descriptions); every section records the run it comes from in sec["run"]."""
    res = None
    for p in paths:
        r = report.load(p)
        run = {"file": report.repo_rel(p), "started": r["started"], "finished": r.get("finished"),
               "git_rev": r["git_rev"], "jar_sha256": ((r["config"].get("windowagg_jar") or {}).get("sha256") or "")[:12]}
        for sec in r["sections"].values():
            sec.setdefault("run", run)
        if res is None:
            res = r
            res["files"] = [run]
            continue
        res["files"].append(run)
        res["sections"].update(r["sections"])
        for k, v in r.items():
            if k.endswith("_input"):
                res[k] = v
    return res


def input_values(res: dict) -> dict:
    """The values of the page's input lines: `{{#<block>}}` keeps an input's line only when its sections
    ran (the results have the input), and its numbers are "" when not (fill wants every value)."""
    def line(block, key, **fields):
        i = res.get(key)
        return {block: bool(i), **{name: f(i) if i else "" for name, f in fields.items()}}

    def num(field, spec=","):  # an input's field as the page shows it (spec "": as str())
        return lambda i: format(i[field], spec)
    return {
        **line("hopping_input", "aligned_input", hop_rows=num("rows"), hop_keys=num("keys", ""),
               hop_rows_per_key=num("rows_per_key"), hop_hours=lambda i: f"{i['span_s_per_key'] / 3600:g}",
               hop_rows_per_second=num("rows_per_second_per_key", ".2f"), hop_ts_min=num("ts_min", ""),
               hop_ts_max=num("ts_max", "")),
        **line("dense_input", "dense_input", dense_rows=num("rows"), dense_keys=num("keys", ""),
               dense_rows_per_key=num("rows_per_key"), dense_minutes=lambda i: f"{i['span_s_per_key'] / 60:g}"),
        **line("write_input", "write_input", write_rows=num("rows"), write_keys=num("keys", ""),
               write_rows_per_key=num("rows_per_key"), write_hours=lambda i: f"{i['span_s_per_key'] / 3600:g}",
               write_windows=num("windows")),
        **line("cumulative_input", "cumulative_input", cum_rows=num("rows"), cum_keys=num("keys", ""),
               cum_rows_per_key=num("rows_per_key"), cum_days=lambda i: f"{i['span_s_per_key'] / 86400:g}",
               cum_ts_min=num("ts_min", ""), cum_ts_max=num("ts_max", "")),
        **line("calendar_input", "calendar_input", cal_rows=num("rows"), cal_keys=num("keys", ""),
               cal_rows_per_key=num("rows_per_key"), cal_years=num("years", "g"),
               cal_rows_per_month=lambda i: f"{i['rows_per_key'] / (i['years'] * 12):.0f}",
               cal_ts_min=num("ts_min", ""), cal_ts_max=num("ts_max", "")),
        **line("sliding_input", "sliding_input", sliding_rows=num("rows"), sliding_keys=num("keys", ""),
               sliding_window_s=num("window_seconds", ""), sliding_target=num("target_rows_per_window", "")),
        **line("sessions_input", "sessions_input", session_rows=num("rows"), session_keys=num("keys", "")),
    }


def render(res: dict, json_paths: list[Path], doc: Path, img: Path) -> None:
    """The page: its prose is NOTES, filled with the values computed here from the results."""
    plot(res, img)
    args = res["args"]
    separate_runs = []
    for run, p in zip(res["files"][1:], json_paths[1:]):
        secs = [n for n, sec in res["sections"].items() if sec.get("run", {}).get("file") == run["file"]]
        separate_runs += [f"Section{'s' if len(secs) > 1 else ''} {', '.join(f'`{x}`' for x in secs)}: a separate run "
                          f"{run['started']} (git `{run['git_rev']}`, jar sha256 `{run['jar_sha256']}…`, same machine, "
                          f"session settings and method), results in [`{Path(p).name}`]({report.link(p, doc)}).", ""]
    results = report.table(["section", "competitor", "wall (s)", "CPU (s)", "CPU ÷ wall", "shuffled (MB)",
                            "others (cores)", "contended runs"], "llrrrrrr", [
        [s, LABELS.get((s, comp), comp), report.fmt_seconds(c), report.fmt_seconds(c, "median_cpu_s"),
         report.cpu_per_wall(c), report.shuffled_mb(c), *report.contention(c)]
        for s in SECTIONS if s in res["sections"] for comp, c in res["sections"][s]["cells"].items()])
    ratios = report.table(["section", "ratio", "wall time", "CPU time"], "llrr",
                          [[s, label, *ratio_text(res, s, num, den)] for s, num, den, label in RATIOS
                           if ratio_text(res, s, num, den)[0] != "–"])
    # the inverse of each section's main ratio, so both directions are in the table
    both = []
    for s, wa, sp in [("hopping", "windowagg", "spark"), ("hopping", "windowagg_sub", "spark_sub"),
                      ("hopping_dense", "windowagg", "spark"), ("hopping_write", "windowagg", "spark"),
                      ("tumbling", "windowagg", "spark"), ("cumulative", "windowagg", "spark_union24"),
                      ("cumulative", "windowagg", "spark_hourly_running"), ("calendar", "windowagg", "spark_date_trunc"),
                      ("sessions", "windowagg", "spark")]:
        tw1, tc1 = ratio_text(res, s, wa, sp)
        tw2, tc2 = ratio_text(res, s, sp, wa)
        if tw1 != "–" or tw2 != "–":
            both.append([f"{s} ({LABELS.get((s, sp), sp)})", tw1, tw2, tc1, tc2])
    both = report.table(["section", "windowagg ÷ Spark (wall)", "Spark ÷ windowagg (wall)", "windowagg ÷ Spark (CPU)",
                         "Spark ÷ windowagg (CPU)"], "lrrrr", both)
    checks = []
    names = {"check": "windowagg `windows()` vs Spark", "check_tvf": "windowagg `window_agg` table vs Spark",
             "check_hourly_running": "Spark hourly + running SUM (in the windowagg column) vs the union of 24: "
                                     "not the same window set, it lacks the windows after a period's last event",
             "check_zone": "windowagg America/New_York months vs Spark `date_trunc` of the local time, back to UTC"}
    for s in ("hopping", "hopping_dense", "hopping_write", "tumbling", "cumulative", "calendar"):
        sec = res["sections"].get(s)
        for k in ("check", "check_tvf", "check_hourly_running", "check_zone"):
            if sec and k in sec:
                ck = sec[k]
                what = names[k] + (f" (keys k < {sec['check_keys']}: Spark's side is slow)"
                                   if s.startswith("hopping") and sec.get("check_keys") else "")
                if s == "calendar" and k == "check":
                    what = "windowagg UTC months vs Spark `date_trunc('month', ts)` (end = start + 1 month)"
                checks.append([s, what, f"{ck['windowagg_rows']:,}", f"{ck['spark_rows']:,}",
                               f"{ck['mean_rows_per_window'] or 0:.1f}", f"**{ck['mismatches']}**"])
    sec = res["sections"].get("sessions")
    if sec and "check" in sec:
        ck = sec["check"]
        checks.append(["sessions", "session count, windowagg vs Spark", f"{ck['windowagg_sessions']:,}",
                       f"{ck['spark_sessions']:,}", "",
                       "**0** (same count)" if ck["same_count"] else "**counts differ**"])
    checks = report.table(["section", "comparison", "windowagg rows", "Spark rows", "mean rows per window",
                           "mismatches"], "llrrrr", checks)
    report.render_page(doc, img, NOTES, {
        "separate_runs": "\n".join(separate_runs),
        "hop_timeout": f"{args.get('hop_timeout', args['timeout']):.0f}",
        **input_values(res),
        "cal_zone_spec": CAL_ZONE_SPEC,  # the calendar line quotes the spec the zone cell runs
        "results_table": "\n".join(results),
        "ratios_table": "\n".join(ratios),
        "both_directions_table": "\n".join(both),
        "checks_table": "\n".join(checks),
        "srcs": " ".join(report.repo_rel(p) for p in json_paths),
    }, report.run_values("aligned_batch.py", res, json_paths, doc, img, NOTES))


BENCHMARK = protocol.Benchmark(
    "aligned_batch", "windowagg-bench-aligned", parse_args, run, render, DOC, IMG, results={"sections": {}},
    summary=summary, load=load_results)
main, rerender = BENCHMARK.main, BENCHMARK.rerender


if __name__ == "__main__":
    sys.exit(main())
