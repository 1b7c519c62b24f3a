"""windowagg's Python API and SQL functions on a Spark Connect session, run as a child process by
test_connect.py (a process whose PySpark has connected to a server stays in Connect mode).

    python tests/connect_job.py sc://localhost:PORT OUT.json STREAM_INPUT_DIR

Writes the rows of every query of `queries`, the windowagg metrics of `metric_counts` (and the
errors of `metrics_errors`, whose write goes to STREAM_INPUT_DIR-written), the conditions of
`errors` and the output of the streaming query of `streamed` to OUT.json; the test runs the same
on its classic session and compares.
"""

import json
import sys

FISCAL = "windowagg.examples.FiscalQuarters"


def events(spark):
    from pyspark.sql import functions as F

    rows = [(f"k{i % 3}", (i * 7919) % 5000, i % 11, i) for i in range(120)]
    df = spark.createDataFrame(rows, "k string, t long, v long, seq long")
    return df.select("k", F.timestamp_seconds("t").alias("ts"), "v", "seq")


def queries(spark):
    """name -> DataFrame, the same on a classic and a Connect session."""
    from pyspark.sql import functions as F

    import windowagg as w

    df = events(spark)
    df.createOrReplaceTempView("connect_events")
    periods = spark.createDataFrame([(0, 1800), (600, 4000), (3000, 3300)], "s long, e long").select(
        F.timestamp_seconds("s").alias("start"), F.timestamp_seconds("e").alias("end")
    )
    definitions = {
        "sliding": w.SlidingWindows.of("10 minutes"),
        "session": w.SessionWindows.withInactivityGap("5 minutes"),
        "tumbling": w.TimeWindows.of("15 minutes"),
        "hopping": w.TimeWindows.of("30 minutes").advanceBy("10 minutes"),
        "cumulative": w.CumulativeWindows.of("10 minutes", "1 hour"),
        "calendar": w.CalendarWindows.days(1).inZone("America/New_York"),
        "unlimited": w.UnlimitedWindows.of(),
        "count": w.CountWindows.of(5).slide(2).tieBreak("seq"),
        "duration": w.DurationWindows.of("20 minutes").every("10 minutes"),
        "custom": w.CustomWindows.of(FISCAL, firstMonth=2),
        "table": w.TableWindows.of(periods),
    }
    bounds = [F.unix_micros("window.start").alias("start"), F.unix_micros("window.end").alias("end")]
    out = {}
    for name, definition in definitions.items():
        spec = "'" + definition.spec.replace("'", "''") + "'"  # as a SQL string literal
        out[f"dataframe {name}"] = df.groupBy("k", w.window("ts", definition)).agg(
            F.count(F.lit(1)).alias("n"), F.sum("v").alias("s")
        ).select("k", *bounds, "n", "s")
        out[f"sql {name}"] = spark.sql(
            "SELECT k, unix_micros(window.start) AS start, unix_micros(window.end) AS end, count(1) AS n, "
            f"sum(v) AS s FROM connect_events GROUP BY k, windows(ts, {spec})"
        )
        out[f"table function {name}"] = spark.sql(
            "SELECT k, unix_micros(window_start) AS start, unix_micros(window_end) AS end, n, s FROM window_agg("
            f"TABLE(connect_events) PARTITION BY k ORDER BY (ts), {spec}, 'count(1) AS n, sum(v) AS s')"
        )
    out["window view"] = df.groupBy("k", w.window("ts", definitions["count"])).agg(
        w.new_rows(F.sum("v")).alias("new"), w.expired_rows(F.sum("v")).alias("expired")
    ).select("k", *bounds, "new", "expired")
    def quarter_hours(times):
        """Windows a Python function lists (nested: pickled by value): each quarter of an hour, none in its last 5 minutes."""
        import pandas as pd

        start = times.dt.floor("15min")
        listed = times - start < pd.Timedelta("10min")
        return pd.DataFrame({"start": start.where(listed), "end": (start + pd.Timedelta("15min")).where(listed)})

    listed = w.PythonWindows.of(quarter_hours, "15 minutes", overlapping=False)
    out["dataframe python"] = df.groupBy("k", w.window("ts", listed)).agg(
        F.count(F.lit(1)).alias("n"), F.sum("v").alias("s")
    ).select("k", *bounds, "n", "s")
    import pandas as pd

    @F.pandas_udf("double")
    def median_udf(values: pd.Series) -> float:
        """A grouped-aggregate pandas UDF (nested: pickled by value)."""
        return float(values.median())

    out["dataframe pandas udf"] = df.groupBy("k", w.window("ts", definitions["sliding"])).agg(
        median_udf("v").alias("m"), F.sum("v").alias("s")
    ).select("k", *bounds, "m", "s")
    spark.udf.register("connect_median", median_udf)
    out["sql pandas udf"] = spark.sql(
        "SELECT k, unix_micros(window.start) AS start, unix_micros(window.end) AS end, connect_median(v) AS m "
        "FROM connect_events GROUP BY k, windows(ts, 'session gap 5 minutes')"
    )
    out["epoch seconds"] = df.select("k", F.unix_seconds("ts").alias("t"), "v").groupBy(
        "k", w.window("t", w.SlidingWindows.of("10 minutes"), time_unit="seconds")
    ).agg(F.sum("v").alias("s")).select("k", "window.start", "window.end", "s")
    return out


def metric_queries(spark):
    """name -> (DataFrame, action) whose windowagg.metrics are compared: rows with a null time, rows
    a definition leaves in no window, session rows with an invalid gap, and two operators in one plan."""
    from pyspark.sql import functions as F

    import windowagg as w

    rows = [
        (f"k{i % 3}", None if i % 10 == 0 else (i * 7919) % 5000, i % 11, i,
         None if i % 14 == 0 else -60 if i % 7 == 0 else 300)
        for i in range(100)
    ]
    df = spark.createDataFrame(rows, "k string, t long, v long, seq long, g long")
    # a key's first row of every 4, and its rows after its last 4th, are in no window
    storm = df.groupBy("k", w.window("t", w.CountWindows.of(3).slide(4).tieBreak("seq"))).agg(F.sum("v").alias("s"))
    unlimited = df.groupBy("k", w.window("t", w.UnlimitedWindows.of().startOn(1000))).agg(F.sum("v").alias("s"))
    sessions = df.groupBy("k", w.window("t", w.SessionWindows.withDynamicGap("g"))).agg(F.sum("v").alias("s"))
    return {
        "count windows": (storm, lambda d: d.collect()),
        "unlimited and sessions": (unlimited.unionByName(sessions), lambda d: d.toPandas()),
    }


def metric_counts(spark):
    """name -> [windowagg.metrics after the query's action, its number of output rows]."""
    import windowagg as w

    counts = {}
    for name, (df, action) in metric_queries(spark).items():
        output_rows = len(action(df))
        counts[name] = [w.metrics(df), output_rows]
    return counts


def metrics_errors(spark, folder):
    """The errors of windowagg.metrics on a Connect DataFrame before any action, and after a write
    (whose command returns no plan metrics)."""
    import windowagg as w

    def error(df):
        try:
            w.metrics(df)
        except RuntimeError as e:
            return str(e)
        return None

    df, _ = metric_queries(spark)["count windows"]
    before = error(df)
    df.write.parquet(folder)
    return {"before an action": before, "after a write": error(df)}


def streamed(spark, folder):
    """A streaming sliding-window query over two files (the second with a late row and a row far
    ahead), late rows emitted: its rows and its observed late-row count."""
    import os

    from pyspark.sql import functions as F

    import windowagg as w

    os.makedirs(folder, exist_ok=True)
    batches = [
        [{"k": f"k{i % 2}", "ts": f"2024-01-01T00:{i:02d}:00Z", "v": i} for i in range(30)],
        [{"k": "k0", "ts": "2024-01-01T00:01:30Z", "v": 100}, {"k": "k1", "ts": "2024-01-02T00:00:00Z", "v": 0}],
    ]
    for i, batch in enumerate(batches):
        with open(os.path.join(folder, f"part-{i}.json"), "w") as f:
            f.write("\n".join(json.dumps(r) for r in batch))
        os.utime(os.path.join(folder, f"part-{i}.json"), (1_700_000_000 + i, 1_700_000_000 + i))
    stream = spark.readStream.schema("k string, ts timestamp, v long").option("maxFilesPerTrigger", 1).json(folder)
    windowed = stream.withWatermark("ts", "1 minute").groupBy(
        "k", w.window("ts", w.SlidingWindows.of("5 minutes"), late_rows="emit")
    ).agg(F.sum("v").alias("s"))
    name = f"connect_stream_{abs(hash(folder))}"
    query = windowed.writeStream.format("memory").queryName(name).outputMode("append").start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    metrics = [(p.get("observedMetrics") or {}).get("windowagg") for p in query.recentProgress]
    late = sum(observed(m, "late_rows") for m in metrics if m is not None)
    out = spark.table(name).select("k", "window", "s", "late_reason", "late_row")
    return rows(out), late


def observed(metrics, name):
    """One observed metric of a micro-batch's progress: a dict on a classic session; on Connect a
    Row of the values and their schema."""
    if "values" in metrics and "schema" in metrics:
        names = [f["name"] for f in metrics["schema"]["fields"]]
        return int(metrics["values"][names.index(name)] or 0)
    return int(metrics[name] or 0)


def rows(df):
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in df.collect())


def errors(spark):
    """The condition and SQLSTATE of a few bad inputs, as the session raises them."""
    from pyspark.sql import functions as F

    import windowagg as w

    df = events(spark)
    bad = {
        "spec": lambda: spark.sql("SELECT count(1) FROM connect_events GROUP BY k, windows(ts, 'sliding banana')"),
        "option": lambda: df.groupBy("k", w.window("ts", w.SlidingWindows.of("1 minute"), emit="never")).count(),
        "aggregate": lambda: df.groupBy("k", w.window("ts", w.SlidingWindows.of("1 minute"))).agg(F.countDistinct("v")),
    }
    seen = {}
    for name, build in bad.items():
        try:
            build().collect()
            seen[name] = None
        except Exception as e:  # the session's own AnalysisException class
            seen[name] = [e.getCondition(), e.getSqlState()]
    return seen


def main(url, path, folder):
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(url).getOrCreate()
    result = {
        "queries": {name: rows(df) for name, df in queries(spark).items()},
        "metrics": metric_counts(spark),
        "metrics errors": metrics_errors(spark, folder + "-written"),
        "errors": errors(spark),
        "streamed": streamed(spark, folder),
    }
    with open(path, "w") as f:
        json.dump(result, f)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
