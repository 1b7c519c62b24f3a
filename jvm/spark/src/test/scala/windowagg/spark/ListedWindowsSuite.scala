package windowagg.spark

import java.nio.file.{Files, Paths}

import scala.util.Random

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.{ListedWindows, WindowSpec}
import windowagg.functions.window
import windowagg.spark.common.AggregateBeforeShuffle

/**
 * Windows each row lists in a column ([[ListedWindows]], what Python's `PythonWindows` computes
 * with an Arrow UDF), here listed by SQL expressions, against the brute force a user writes
 * without them: explode each row's windows and GROUP BY them; in streaming, the batch result, and
 * across a restart from the checkpoint. Also the checks of listed windows.
 */
class ListedWindowsSuite extends AnyFunSuite with SparkSessionFixture {

  /** Rows (key, microseconds, value) over three days, minute resolution, some times shared. */
  private def eventRows(seed: Long, n: Int): Seq[(String, Long, Long)] = {
    val rnd = new Random(seed)
    Seq.fill(n)((s"k${rnd.nextInt(3)}", rnd.nextInt(3 * 24 * 60) * 60000000L, rnd.nextInt(100).toLong))
  }

  private def frame(rows: Seq[(String, Long, Long)]): DataFrame = {
    import spark.implicits._
    rows.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
  }

  private def events(seed: Long, n: Int): DataFrame = frame(eventRows(seed, n))

  private def bounds(start: String, end: String): String = s"named_struct('start', $start, 'end', $end)"
  /** Each time's hour and its day (overlapping, of two sizes), none on Sundays, in the session zone. */
  private val hourAndDay =
    s"""if(dayofweek(ts) = 1, array(), array(
       |  ${bounds("date_trunc('hour', ts)", "date_trunc('hour', ts) + interval 1 hour")},
       |  ${bounds("date_trunc('day', ts)", "date_trunc('day', ts) + interval 1 day")}))""".stripMargin
  /** Six-hour shifts starting at 02:00, one per time. */
  private val shifts =
    s"""array(${bounds("date_trunc('hour', ts - make_dt_interval(0, (hour(ts) + 22) % 6, 0, 0))",
       "date_trunc('hour', ts - make_dt_interval(0, (hour(ts) + 22) % 6, 0, 0)) + interval 6 hours")})"""

  private def bruteForce(df: DataFrame, listing: String): Seq[Row] =
    sorted(df.withColumn("w", explode(expr(listing))).groupBy(col("k"), col("w.start"), col("w.end"))
      .agg(sum("v"), count(lit(1)), max("v")))

  private def listed(df: DataFrame, definition: ListedWindows, listing: String): DataFrame =
    df.groupBy(col("k"), window(col("ts"), definition, expr(listing))).agg(sum("v"), count(lit(1)), max("v"))
      .select("k", "window.start", "window.end", "sum(v)", "count(1)", "max(v)")

  private def sorted(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)

  private def withAggregation[T](mode: String)(body: => T): T = {
    spark.conf.set(AggregateBeforeShuffle.Conf, mode)
    try body finally spark.conf.unset(AggregateBeforeShuffle.Conf)
  }

  test("windows listed by an expression equal exploding them and grouping, overlapping or not, aggregated before the shuffle or not") {
    for ((seed, listing, definition) <- Seq(
        (1, hourAndDay, ListedWindows.maxSize("1 day 1 hour")),
        (2, shifts, ListedWindows.maxSize("6 hours").nonOverlapping()))) {
      val df = events(seed, 3000)
      val expected = bruteForce(df, listing)
      assert(expected.length > 20)
      for (mode <- Seq("auto", "always", "never")) withAggregation(mode) {
        assert(sorted(listed(df, definition, listing)) == expected, s"seed $seed, $definition, $mode")
      }
    }
  }

  test("non-overlapping listed windows aggregate per window before the shuffle; rows in no window are counted") {
    val df = events(7, 2000).withColumn("ts", when(col("v") === 0, lit(null)).otherwise(col("ts")))
    val result = df.groupBy(col("k"), window(col("ts"), ListedWindows.maxSize("6 hours").nonOverlapping(),
      expr(s"if(hour(ts) between 8 and 9, array(), $shifts)"))).agg(count(lit(1)))
    val plan = result.queryExecution.executedPlan.toString
    assert(plan.contains("partials aggregated before the shuffle (per key and slice of the definition)"), plan)
    result.collect()
    val m = windowagg.functions.metrics(result)
    val nullTimes = df.filter(col("ts").isNull).count()
    val noWindow = df.filter(col("ts").isNotNull && hour(col("ts")).between(8, 9)).count()
    assert(m.get("nullTimeRows") == nullTimes && m.get("unwindowedRows") == noWindow && noWindow > 0, m)
  }

  test("SQL: windows(ts, spec, listing), and window_agg over a column named in the spec") {
    val df = events(3, 1500)
    df.withColumn("shift", expr(shifts)).createOrReplaceTempView("listed_events")
    val expected = bruteForce(df, shifts)
    val grouped = spark.sql(
      s"""SELECT k, window.start, window.end, sum(v), count(*), max(v) FROM listed_events
         |GROUP BY k, windows(ts, 'listed max size 6 hours non-overlapping', $shifts)""".stripMargin)
    assert(sorted(grouped) == expected)
    val withColumn = spark.sql(
      """SELECT k, window.start, window.end, sum(v), count(*), max(v) FROM listed_events
        |GROUP BY k, windows(ts, 'listed max size 6 hours', shift)""".stripMargin)
    assert(sorted(withColumn) == expected)
    val byName = spark.sql(
      """SELECT k, window.start, window.end, sum(v), count(*), max(v) FROM listed_events
        |GROUP BY k, windows(ts, 'listed by shift max size 6 hours')""".stripMargin)
    assert(sorted(byName) == expected)
    val table = spark.sql(
      """SELECT * FROM window_agg(TABLE(listed_events) PARTITION BY k ORDER BY (ts), 'listed by shift max size 6 hours',
        |'sum(v) AS s, count(1) AS n, max(v) AS m')""".stripMargin)
    assert(sorted(table) == expected)
  }

  test("dates bound the windows of a timestamp column from their first instant: quarters equal calendar quarters") {
    val df = events(5, 2000).withColumn("ts", expr("ts + make_dt_interval(rand(5) * 400)"))
    val quarters = "array(named_struct('start', trunc(ts, 'quarter'), 'end', add_months(trunc(ts, 'quarter'), 3)))"
    val listed = df.groupBy(col("k"), window(col("ts"), ListedWindows.maxSize("93 days").nonOverlapping(), expr(quarters)))
      .agg(sum("v"), count(lit(1)))
    val calendar = df.groupBy(col("k"), window(col("ts"), windowagg.CalendarWindows.months(3))).agg(sum("v"), count(lit(1)))
    assert(sorted(listed) == sorted(calendar) && sorted(calendar).length > 10)
  }

  test("an integral time column lists windows in its own ticks; SQL takes options before the listing") {
    import spark.implicits._
    Seq(("a", 9L), ("a", 10L), ("a", 19L), ("a", 25L), ("b", 31L)).toDF("k", "t").createOrReplaceTempView("tick_events")
    val decade = "array(named_struct('start', t - t % 10, 'end', t - t % 10 + 10))"
    val api = spark.table("tick_events").groupBy(col("k"), window(col("t"), ListedWindows.maxSize("10"), expr(decade)))
      .agg(collect_list("t").as("ts")).select("k", "window.start", "window.end", "ts")
    val sql = spark.sql(s"SELECT k, window.start, window.end, collect_list(t) AS ts FROM tick_events " +
      s"GROUP BY k, windows(t, 'listed max size 10 seconds', 'timeUnit=seconds', $decade)")
    for (df <- Seq(api, sql)) {
      val got = df.collect().map(r => (r.getString(0), r.getLong(1), r.getLong(2), r.getSeq[Long](3).sorted)).toSet
      assert(got == Set(("a", 0L, 10L, Seq(9L)), ("a", 10L, 20L, Seq(10L, 19L)), ("a", 20L, 30L, Seq(25L)), ("b", 30L, 40L, Seq(31L))))
    }
  }

  private def failure(df: => DataFrame): String = {
    val e = intercept[Exception](df.collect())
    Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString(" / ")
  }

  test("listed windows are checked: each holds its time, is non-empty and short enough, a time lists the same ones everywhere") {
    import spark.implicits._
    val df = Seq(("a", 5L, 1L), ("a", 5L, 2L), ("a", 12L, 1L)).toDF("k", "t", "v")
    def run(listing: String, definition: ListedWindows = ListedWindows.maxSize("10")): DataFrame =
      df.groupBy(col("k"), window(col("t"), definition, expr(listing), java.util.Map.of("timeUnit", "seconds"))).agg(count(lit(1)))
    def one(s: String, e: String) = s"array(named_struct('start', $s, 'end', $e))"
    assert(failure(run(one("t + 1", "t + 5"))).contains("does not contain the time"))
    assert(failure(run(one("t", "t"))).contains("empty or inverted"))
    assert(failure(run(one("t", "t + 11"))).contains("longer than the max size 10"))
    assert(failure(run("array(named_struct('start', t, 'end', t + 1), named_struct('start', t, 'end', t + 1))")).contains("twice"))
    assert(failure(run("array(cast(null as struct<start: bigint, end: bigint>))")).contains("null window"))
    // a time whose windows depend on something else than the time
    for (mode <- Seq("always", "never")) withAggregation(mode) {
      assert(failure(run(one("t", "t + v"))).contains("is listed with different windows by different rows"), mode)
    }
    // 5 lists [5, 15) but 12, which it contains, does not
    assert(failure(run(one("if(t = 5, 5, 10)", "if(t = 5, 15, 20)"))).contains("is listed for 5 seconds but not for 12 seconds"))
    val overlapping = ListedWindows.maxSize("10").nonOverlapping()
    assert(failure(run("array(named_struct('start', t, 'end', t + 1), named_struct('start', t - 1, 'end', t + 1))", overlapping))
      .contains("at most one"))
    for (mode <- Seq("always", "never")) withAggregation(mode) {
      assert(failure(run(one("t - 5 + if(v = 1, 0, 1)", "t + 3"), overlapping)).matches("(?s).*(overlap|listed for).*"), mode)
    }
  }

  test("analysis refuses a missing or mistyped listing, and a listing for another kind") {
    val df = events(1, 10)
    val noListing = intercept[AnalysisException](df.groupBy(window(col("ts"), ListedWindows.maxSize("1 hour"))).count().collect())
    assert(noListing.getMessage.contains("needs the column listing each row's windows"))
    val mistyped = intercept[AnalysisException](
      df.groupBy(window(col("ts"), ListedWindows.maxSize("1 hour"), expr("array(named_struct('start', 1L, 'end', 2L))"))).count())
    assert(mistyped.getMessage.contains("it must be an ARRAY of STRUCT<start, end> of TIMESTAMP or DATE"), mistyped.getMessage)
    val otherKind = intercept[AnalysisException](
      df.groupBy(window(col("ts"), windowagg.TimeWindows.of("1 hour"), expr(hourAndDay))).count())
    assert(otherKind.getMessage.contains("lists its own windows"))
    val sqlArity = intercept[AnalysisException](spark.sql("SELECT count(*) FROM VALUES (1L) AS t(t) GROUP BY windows(t, 'listed max size 5')"))
    assert(sqlArity.getMessage.contains("windows takes (time_column, spec [, options], listing)"))
  }

  test("streaming equals batch on on-time rows, overlapping or not, combined before the shuffle or not; late rows are routed") {
    import spark.implicits._
    val rnd = new Random(5)
    // time order between micro-batches; rows of the first twelve hours held back until the end, when
    // every window that could hold them is final
    val rows = eventRows(5, 900).sortBy(_._2)
    val (held, onTime) = rows.partition(r => r._2 < 12 * 3600000000L && rnd.nextInt(8) == 0)
    assert(held.nonEmpty)
    val flush = (days: Long) => Seq(("flush", days * 86400000000L, 0L))
    for ((listing, definition, mode) <- Seq(
        (hourAndDay, ListedWindows.maxSize("1 day 1 hour"), "always"),
        (shifts, ListedWindows.maxSize("6 hours").nonOverlapping(), "auto"))) {
      val expected = sorted(listed(frame(onTime), definition, listing))
      val input = MemoryStream[(String, Long, Long)](spark, 2)
      val name = s"listed_stream_$mode${if (definition.disjoint) "_disjoint" else ""}"
      // every execution holds rows, so the last one's plan counts them
      val running = startWithoutNoDataBatches(withAggregation(mode) {
        input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
          .withWatermark("ts", "10 minutes")
          .groupBy(col("k"), window(col("ts"), definition, expr(listing), java.util.Map.of("lateRows", "emit")))
          .agg(sum("v"), count(lit(1)), max("v"))
          .writeStream.format("memory").queryName(name).outputMode("append").start()
      })
      var combined = 0L
      try {
        (onTime.grouped(450).toSeq ++ Seq(held, flush(10), flush(20))).foreach { batch =>
          input.addData(batch)
          running.processAllAvailable()
          val execution = running.asInstanceOf[org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper].streamingQuery.lastExecution
          combined += execution.executedPlan.collect { case i: streaming.StreamingIntakeExec => i.metrics("combinedRows").value }.sum
        }
      } finally running.stop()
      val out = spark.table(name)
      val windows = out.where(col("late_reason").isNull && col("k") =!= "flush")
        .select("k", "window.start", "window.end", "sum(v)", "count(1)", "max(v)")
      assert(sorted(windows) == expected, s"$definition, $mode")
      assert(out.where(col("late_reason") === "late").count() == held.length, s"$definition, $mode")
      assert(combined > 0, s"$definition, $mode: rows combined before the shuffle")
    }
  }

  test("a streaming query restarts from its checkpoint with the listed windows kept in its state") {
    val dir = Files.createTempDirectory("windowagg-listed-restart")
    val (in, out, checkpoint) = (dir.resolve("in"), dir.resolve("out").toString, dir.resolve("checkpoint").toString)
    Files.createDirectories(in)
    val rows = eventRows(8, 600).sortBy(_._2)
    val parts = rows.grouped(300).toSeq :+ Seq(("flush", 10 * 86400000000L, 0L))
    def write(i: Int): Unit = {
      frame(parts(i)).coalesce(1).write.json(in.resolve(f"part-$i%02d").toString)
    }
    def run(): Unit = {
      val stream = spark.readStream.schema("k STRING, ts TIMESTAMP, v BIGINT").option("recursiveFileLookup", "true")
        .option("maxFilesPerTrigger", 1).json(in.toString)
        .withWatermark("ts", "10 minutes")
        .groupBy(col("k"), window(col("ts"), ListedWindows.maxSize("1 day 1 hour"), expr(hourAndDay))).agg(sum("v"), count(lit(1)), max("v"))
        .select(col("k"), col("window.start").as("start"), col("window.end").as("end"), col("sum(v)").as("s"), col("count(1)").as("n"),
          col("max(v)").as("m"))
      val running = stream.writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
        .outputMode("append").start()
      try running.processAllAvailable() finally running.stop()
    }
    write(0)
    run()
    val record = new String(Files.readAllBytes(Paths.get(checkpoint, "windowagg", "state.json")), "UTF-8")
    assert(record.contains("listed partials by time"), record)
    (1 until parts.length).foreach(write)
    run()
    val expected = sorted(listed(frame(rows), ListedWindows.maxSize("1 day 1 hour"), hourAndDay))
    assert(sorted(spark.read.parquet(out).where(col("k") =!= "flush")) == expected)
  }

  test("the spec reads back as the definition, and names what is wrong") {
    for (spec <- Seq("listed max size 92 days", "listed by quarters max size 92 days non-overlapping grace 1 day", "listed max size 20")) {
      assert(WindowSpec.parse(spec).spec == spec)
      assert(WindowSpec.parse(spec) == WindowSpec.parse(WindowSpec.parse(spec).spec))
    }
    assert(WindowSpec.parse("ListedWindows.maxSize('1 hour').nonOverlapping()").spec == "listed max size 1 hour non-overlapping")
    def error(spec: String) = intercept[IllegalArgumentException](WindowSpec.parse(spec)).getMessage
    assert(error("listed by w").contains("gives no max size"))
    assert(error("listed max size 0").contains("must be positive"))
    assert(error("listed 5 max size 1 hour").contains("unexpected '5'"))
  }
}
