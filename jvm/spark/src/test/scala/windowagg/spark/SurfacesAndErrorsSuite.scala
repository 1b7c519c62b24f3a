package windowagg.spark

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.{CalendarWindows, DurationWindows, SessionWindows, SlidingWindows, TimeWindows}
import windowagg.core.WindowError
import windowagg.functions.{metrics, window}

class SurfacesAndErrorsSuite extends AnyFunSuite with SparkSessionFixture {

  private def events: DataFrame = {
    import spark.implicits._
    Seq(("a", "eu", 10L, 1L), ("a", "eu", 14L, 2L), ("a", "us", 15L, 3L), ("b", "eu", 100L, 5L))
      .toDF("user", "region", "t", "amount")
  }

  private def analysisError(f: => Any)(implicit pos: org.scalactic.source.Position): String = {
    val e = intercept[AnalysisException](f)
    e.getMessage
  }

  test("SQL GROUP BY sliding_window with window.start/end, HAVING and ORDER BY") {
    events.createOrReplaceTempView("events")
    val rows = spark.sql(
      """SELECT user, window.start AS s, window.end AS e, sum(amount) AS total
        |FROM events GROUP BY user, sliding_window(t, 10) HAVING sum(amount) > 1 ORDER BY user, s""".stripMargin)
      .collect().map(r => (r.getString(0), r.getLong(1), r.getLong(2), r.getLong(3))).toSeq
    assert(rows == Seq(("a", 4L, 14L, 3L), ("a", 5L, 15L, 6L), ("a", 11L, 21L, 5L), ("a", 15L, 25L, 3L), ("b", 90L, 100L, 5L)))
  }

  test("the sliding_window_agg table function: columns, several keys, single partition, sizes") {
    events.createOrReplaceTempView("events")
    val one = spark.sql(
      "SELECT * FROM sliding_window_agg(TABLE(events) PARTITION BY user ORDER BY (t), 10, 'sum(amount) AS total, count(1) AS n')")
    assert(one.columns.toSeq == Seq("user", "window_start", "window_end", "total", "n"))
    assert(one.count() == 6)
    val two = spark.sql(
      "SELECT * FROM sliding_window_agg(TABLE(events) PARTITION BY (user, region) ORDER BY (t), 10, 'max(amount) AS m')")
    assert(two.columns.toSeq == Seq("user", "region", "window_start", "window_end", "m"))
    assert(two.where("user = 'a' AND region = 'eu'").count() == 3) // 10 and 14: [0,10], [4,14], [11,21]
    val global = spark.sql(
      "SELECT * FROM sliding_window_agg(TABLE(events) WITH SINGLE PARTITION ORDER BY (t), 10, 'count(1) AS n')")
    assert(global.columns.toSeq == Seq("window_start", "window_end", "n"))
    assert(global.agg(max("n")).head().getLong(0) == 3)
    // an integral time column in seconds, a size as a string: 10 seconds = 10 ticks
    val secs = spark.sql(
      "SELECT * FROM sliding_window_agg(TABLE(events) PARTITION BY user ORDER BY (t), '10 seconds', 'count(1) AS n', 'seconds')")
    assert(secs.collect().toSet == one.select("user", "window_start", "window_end", "n").collect().toSet)
  }

  test("the table function and groupBy agree") {
    events.createOrReplaceTempView("events")
    val tvf = spark.sql(
      "SELECT * FROM sliding_window_agg(TABLE(events) PARTITION BY user ORDER BY (t), 10, 'sum(amount) AS total, avg(amount) AS mean')")
    val api = events.groupBy(col("user"), window(col("t"), SlidingWindows.of(10L)))
      .agg(sum("amount").as("total"), avg("amount").as("mean"))
      .select(col("user"), col("window.start").as("window_start"), col("window.end").as("window_end"), col("total"), col("mean"))
    assert(tvf.collect().toSet == api.collect().toSet)
  }

  test("TIMESTAMP_NTZ and intervals: the window has the column's type") {
    events.createOrReplaceTempView("events")
    val df = spark.sql(
      """SELECT user, window.start, window.end, count(*) AS n FROM
        |  (SELECT user, timestamp_seconds(t)::timestamp_ntz AS ts FROM events)
        |GROUP BY user, sliding_window(ts, INTERVAL '10' SECOND)""".stripMargin)
    assert(df.schema("start").dataType == TimestampNTZType)
    assert(df.count() == 6)
  }

  test("expressions as keys and time, and windows inside result expressions") {
    val out = events.groupBy(upper(col("user")).as("u"), window(col("t") * 1000, SlidingWindows.of("10 seconds"), "milliseconds"))
      .agg((sum("amount") * 10).as("x"), (col("window.end") - col("window.start")).as("len"))
    assert(out.columns.toSeq == Seq("u", "window", "x", "len"))
    val rows = out.collect()
    assert(rows.length == 6 && rows.forall(_.getLong(3) == 10000L))
    assert(rows.map(_.getString(0)).toSet == Set("A", "B"))
  }

  test("rows with a null time are not windowed, and are counted") {
    val data = Seq(Row("a", 1L, 1L), Row("a", null, 2L), Row("b", null, 3L), Row("a", 3L, 4L))
    val schema = StructType(Seq(StructField("k", StringType), StructField("t", LongType), StructField("v", LongType)))
    val df = spark.createDataFrame(spark.sparkContext.parallelize(data, 2), schema)
    val out = df.groupBy(col("k"), window(col("t"), SlidingWindows.of(5L))).agg(sum("v").as("s"))
    val rows = out.collect()
    assert(rows.map(_.getLong(2)).sorted.toSeq == Seq(1L, 4L, 5L)) // [-4,1]{1}, [-2,3]{1,3}, [2,7]{3}
    val m = metrics(out)
    assert(m.get("nullTimeRows") == 2L && m.get("inputRows") == 4L && m.get("windows") == 3L)
  }

  test("empty input gives no windows") {
    val out = events.where("false").groupBy(col("user"), window(col("t"), SlidingWindows.of(5L))).count()
    assert(out.count() == 0)
  }

  test("bad window definitions fail when they are built") {
    assert(intercept[WindowError](SlidingWindows.of(0L)).getMessage.contains("positive"))
    assert(intercept[WindowError](SlidingWindows.of(-5L)).getMessage.contains("positive"))
    assert(intercept[WindowError](SlidingWindows.of("ten minutes")).getMessage.contains("ten minutes"))
    assert(intercept[WindowError](SlidingWindows.of("1 month")).getMessage.contains("calendar"))
    assert(intercept[WindowError](SlidingWindows.of(null: String)).getMessage.contains("null"))
  }

  test("time column problems are analysis errors that name the column") {
    import spark.implicits._
    val df = Seq(("a", "2024-01-01", java.sql.Date.valueOf("2024-01-01"), 1L)).toDF("k", "s", "d", "v")
    assert(analysisError(df.groupBy(col("k"), window(col("s"), SlidingWindows.of("1 minute"))).count())
      .contains("time column 's' has type STRING"))
    assert(analysisError(df.groupBy(col("k"), window(col("d"), SlidingWindows.of("1 minute"))).count())
      .contains("cast a DATE to TIMESTAMP"))
    assert(analysisError(df.groupBy(col("k"), window(col("nope"), SlidingWindows.of("1 minute"))).count())
      .contains("nope"))
    val ts = df.select(col("k"), current_timestamp().as("ts"))
    assert(analysisError(ts.groupBy(col("k"), window(col("ts"), SlidingWindows.of(10L))).count())
      .contains("as a duration"))
    assert(analysisError(ts.groupBy(col("k"), window(col("ts"), SlidingWindows.of("1 minute"), "seconds")).count())
      .contains("only to integral time columns"))
    assert(analysisError(df.groupBy(col("k"), window(col("v"), SlidingWindows.of("1 minute"), "fortnights")).count())
      .contains("unknown time unit"))
    assert(analysisError(df.groupBy(col("k"), window(col("v"), SlidingWindows.of("1500 microseconds"), "milliseconds")).count())
      .contains("not a whole number of milliseconds"))
  }

  test("errors carry windowagg's own condition and SQLSTATE, and SQL errors their position") {
    import spark.implicits._
    Seq(("a", java.sql.Timestamp.valueOf("2024-01-01 00:00:00"))).toDF("k", "ts").createOrReplaceTempView("conditions")
    val e = intercept[AnalysisException](
      spark.sql("SELECT k, count(1) FROM conditions\nGROUP BY k, windows(ts, 'sliding banana')"))
    assert(e.getCondition == "WINDOWAGG_INVALID_WINDOW" && e.getSqlState == "22023")
    assert(e.getMessageParameters.get("message").contains("banana"))
    assert(e.getMessage.contains("line 2 pos"), e.getMessage)
    assert(e.getQueryContext.isEmpty) // PySpark would look the condition up in Spark's registry to log a context
    val option = intercept[AnalysisException](
      spark.table("conditions").groupBy(col("k"), window(col("ts"), SlidingWindows.of("1 minute"), Map("emit" -> "never"))).count())
    assert(option.getCondition == "WINDOWAGG_INVALID_OPTION" && option.getSqlState == "42K06")
  }

  test("an integral time column's unit is never assumed: durations and dates need it, bare ticks do not") {
    import spark.implicits._
    val df = Seq(("a", 1000L), ("a", 1500L)).toDF("k", "t")
    for (definition <- Seq(SlidingWindows.of("1 second"), SessionWindows.withInactivityGap("1 second"),
        TimeWindows.of("1 minute"), CalendarWindows.days(1), DurationWindows.of("1 second"))) {
      val message = analysisError(df.groupBy(col("k"), window(col("t"), definition)).count())
      assert(message.contains("give the column's unit as the option timeUnit"), s"$definition: $message")
      assert(message.contains("time column 't'"), s"$definition: $message")
    }
    // sizes in ticks mean the same in any unit
    val ticks = df.groupBy(col("k"), window(col("t"), SlidingWindows.of(600L))).count()
    assert(ticks.select(col("window.end")).as[Long].collect().sorted.toSeq == Seq(1000L, 1500L, 1601L))
    val seconds = df.groupBy(col("k"), window(col("t"), SlidingWindows.of("1 second"), "milliseconds")).count()
    assert(seconds.count() == 3)
  }

  test("aggregates that cannot be merged are rejected with a clear error") {
    val g = events.groupBy(col("user"), window(col("t"), SlidingWindows.of(10L)))
    assert(analysisError(g.agg(countDistinct("amount"))).contains("DISTINCT"))
    events.createOrReplaceTempView("events")
    assert(analysisError(spark.sql(
      "SELECT * FROM sliding_window_agg(TABLE(events) PARTITION BY user ORDER BY (t), 10, 'rank() AS r')").collect())
      .contains("rank"))
    assert(analysisError(g.agg(sum("amount"), col("region"))).contains("region"))
  }

  test("misuse of the window expression and of the table function is reported") {
    assert(analysisError(events.select(window(col("t"), SlidingWindows.of(10L)))).contains("grouping key"))
    assert(analysisError(events.groupBy(window(col("t"), SlidingWindows.of(10L)), window(col("t"), SlidingWindows.of(20L))).count())
      .contains("one windowagg window"))
    events.createOrReplaceTempView("events")
    def tvf(args: String)(implicit pos: org.scalactic.source.Position) = analysisError(spark.sql(s"SELECT * FROM sliding_window_agg($args)").collect())
    assert(tvf("TABLE(events) PARTITION BY user ORDER BY (t), 10, 'sum(amount'").contains("cannot parse the aggregate list"))
    assert(tvf("TABLE(events) PARTITION BY user ORDER BY (t), 10, 'sum(nope) AS x'").contains("nope"))
    assert(tvf("TABLE(events) PARTITION BY user ORDER BY (t), 10, 'sum(amount) total, count(1) AS'")
      .contains("has AS with no name after it (after count(1))"))
    assert(tvf("TABLE(events) PARTITION BY user ORDER BY (t), 10, 'count(1) AS n', 'emit=final, late_row=emit'")
      .contains("unknown window option 'late_row'"))
    assert(tvf("TABLE(events) PARTITION BY user ORDER BY (t DESC), 10, 'count(1) AS n'").contains("DESC"))
    assert(tvf("TABLE(events), 10, 'count(1) AS n'").contains("ORDER BY"))
    assert(tvf("TABLE(events) PARTITION BY user ORDER BY (t), 0, 'count(1) AS n'").contains("positive"))
    assert(tvf("TABLE(events) PARTITION BY user ORDER BY (t), CAST(NULL AS STRING), 'count(1) AS n'").contains("null"))
    assert(tvf("TABLE(events) PARTITION BY user ORDER BY (t), INTERVAL '1' MONTH, 'count(1) AS n'").contains("months"))
    assert(tvf("1, 10, 'count(1) AS n'").contains("TABLE"))
  }

  test("windows(...) and window_agg(...): every kind by spec, documented, bad specs named at analysis") {
    events.createOrReplaceTempView("spec_events")
    val usage = spark.sql("DESCRIBE FUNCTION EXTENDED windows").collect().map(_.getString(0)).mkString("\n")
    Seq("hopping", "cumulative", "calendar", "custom", "emit=").foreach(word => assert(usage.contains(word), word))
    assert(spark.sql("DESCRIBE FUNCTION window_agg").collect().map(_.getString(0)).mkString.contains("spec"))
    val hopping = spark.sql(
      "SELECT user, window.start, window.end, sum(amount) FROM spec_events GROUP BY user, windows(t, 'hopping 10 every 5')")
    assert(hopping.collect().map(r => (r.getString(0), r.getLong(1), r.getLong(2), r.getLong(3))).toSet == Set(
      ("a", 5L, 15L, 3L), ("a", 10L, 20L, 6L), ("a", 15L, 25L, 3L), ("b", 95L, 105L, 5L), ("b", 100L, 110L, 5L)))
    assert(analysisError(spark.sql("SELECT count(1) FROM spec_events GROUP BY windows(t, 'rolling 5')"))
      .contains("unknown window kind 'rolling'"))
    assert(analysisError(spark.sql("SELECT count(1) FROM spec_events GROUP BY windows(t, 'hopping 5 every 10')"))
      .contains("larger than the window size"))
    assert(analysisError(spark.sql("SELECT count(1) FROM spec_events GROUP BY windows(t, 'custom no.such.Windows')"))
      .contains("no.such.Windows is not on the classpath"))
    assert(analysisError(spark.sql("SELECT count(1) FROM spec_events GROUP BY windows(t, 'calendar 1 month')"))
      .contains("needs a time zone"))
    assert(analysisError(spark.sql("SELECT count(1) FROM spec_events GROUP BY windows(t, amount)"))
      .contains("must be a constant string"))
    assert(analysisError(spark.sql(
      "SELECT * FROM window_agg(TABLE(spec_events) PARTITION BY user ORDER BY (t), 'tumbling 10', 'sum(amount) AS s', 'emit=often')"))
      .contains("emit must be"))
  }

  test("a missing time column is reported as missing, not as a misplaced window") {
    val message = analysisError(events.groupBy(col("user"), window(col("no_such_time"), SlidingWindows.of(10L))).count())
    assert(message.contains("no_such_time"))
    assert(!message.contains("grouping key"))
  }
}
