package windowagg.spark

import java.nio.file.Files

import scala.util.Random

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.{TableWindows, WindowSpec}
import windowagg.functions.window
import windowagg.spark.common.AggregateBeforeShuffle

/**
 * Windows given as a table ([[TableWindows]]) against what a user writes without them, the range
 * join `events JOIN periods ON ts >= start AND ts < end` and a GROUP BY; the table's checks; and a
 * streaming restart over a changed table.
 */
class TableWindowsSuite extends AnyFunSuite with SparkSessionFixture {

  /** `n` windows of 1 to 40 seconds, most of them overlapping, over [0, span) seconds; one listed twice. */
  private def periods(seed: Long, n: Int, spanSeconds: Int): Seq[(Long, Long)] = {
    val rnd = new Random(seed)
    val drawn = Seq.fill(n) {
      val start = rnd.nextInt(spanSeconds * 1000) * 1000L
      (start, start + (1 + rnd.nextInt(40)) * 1000000L)
    }
    drawn :+ drawn.head
  }

  private def events(seed: Long, n: Int, spanSeconds: Int): Seq[(String, Long, Long)] = {
    val rnd = new Random(seed)
    Seq.fill(n)((s"k${rnd.nextInt(4)}", rnd.nextInt(spanSeconds * 1000) * 1000L, rnd.nextInt(100).toLong))
  }

  private def register(name: String, windows: Seq[(Long, Long)]): Unit = {
    import spark.implicits._
    windows.toDF("s", "e").select(timestamp_micros(col("s")).as("opens"), timestamp_micros(col("e")).as("closes"))
      .createOrReplaceTempView(name)
  }

  private def eventFrame(rows: Seq[(String, Long, Long)]): DataFrame = {
    import spark.implicits._
    rows.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
  }

  private def sorted(df: DataFrame): Seq[Row] = df.collect().toSeq.sortBy(_.toString)

  test("batch equals the range join and GROUP BY over the table's distinct windows, in the DataFrame API and SQL") {
    for (seed <- 1 to 4) {
      register("periods", periods(seed, 60, 300))
      eventFrame(events(seed, 2000, 320)).createOrReplaceTempView("events")
      val expected = sorted(spark.sql(
        """SELECT k, p.opens, p.closes, sum(v), count(*), max(v) FROM events
          |JOIN (SELECT DISTINCT opens, closes FROM periods) p ON ts >= p.opens AND ts < p.closes
          |GROUP BY k, p.opens, p.closes""".stripMargin))
      assert(expected.length > 100, "the windows hold rows")
      val api = spark.table("events").groupBy(col("k"), window(col("ts"), TableWindows.of("periods", "opens", "closes")))
        .agg(sum("v"), count(lit(1)), max("v")).select("k", "window.start", "window.end", "sum(v)", "count(1)", "max(v)")
      assert(sorted(api) == expected, s"seed $seed")
      val sql = spark.sql(
        """SELECT k, window.start, window.end, sum(v), count(*), max(v) FROM events
          |GROUP BY k, windows(ts, 'table periods columns opens, closes')""".stripMargin)
      assert(sorted(sql) == expected, s"seed $seed")
      val table = spark.sql(
        """SELECT * FROM window_agg(TABLE(events) PARTITION BY k ORDER BY (ts), 'table periods columns opens, closes',
          |'sum(v) AS s, count(1) AS n, max(v) AS m')""".stripMargin)
      assert(sorted(table) == expected, s"seed $seed")
    }
  }

  test("an integral time column takes integral bounds in its own unit, and rows in no window are counted") {
    import spark.implicits._
    Seq((10L, 20L), (15L, 40L), (100L, 101L)).toDF("start", "end").createOrReplaceTempView("tick_periods")
    val rows = Seq(("a", 9L), ("a", 10L), ("a", 19L), ("a", 20L), ("a", 39L), ("a", 40L), ("a", 100L))
    val df = rows.toDF("k", "t").groupBy(col("k"), window(col("t"), TableWindows.of("tick_periods"), Map("timeUnit" -> "seconds")))
      .agg(collect_list("t").as("ts")).select("window.start", "window.end", "ts")
    val got = df.collect().map(r => (r.getLong(0), r.getLong(1), r.getSeq[Long](2).sorted)).toSet
    assert(got == Set((10L, 20L, Seq(10L, 19L)), (15L, 40L, Seq(19L, 20L, 39L)), (100L, 101L, Seq(100L))))
    assert(windowagg.functions.metrics(df).get("unwindowedRows") == 2L) // 9 and 40
  }

  test("the table is read at analysis: errors name the table, the column or the row") {
    import spark.implicits._
    val events = Seq(("a", new java.sql.Timestamp(0L))).toDF("k", "ts")
    def refused(spec: String): String =
      intercept[AnalysisException](events.groupBy(col("k"), window(col("ts"), WindowSpec.parse(spec))).count()).getMessage
    assert(refused("table no_such_periods").contains("the windows table 'no_such_periods' cannot be read"))
    register("named_periods", Seq((0L, 1000000L)))
    assert(refused("table named_periods").contains("has no start column 'start'; its columns are opens, closes"))
    Seq((1L, 2L)).toDF("start", "end").createOrReplaceTempView("long_periods")
    assert(refused("table long_periods").contains("has a start column 'start' of type BIGINT; with the time column"))
    spark.sql("SELECT TIMESTAMP'2024-01-01 00:00:00' AS start, CAST(NULL AS TIMESTAMP) AS end").createOrReplaceTempView("null_periods")
    assert(refused("table null_periods").contains("has a row with a null end (start 2024-01-01"))
    spark.sql("SELECT TIMESTAMP'2024-01-01 00:00:00' AS start, TIMESTAMP'2023-12-31 00:00:00' AS end").createOrReplaceTempView("inverted_periods")
    val inverted = refused("table inverted_periods")
    assert(inverted.contains("has a row that is not a window: the window [2024-01-01") &&
      inverted.contains("ends at or before its start"), inverted)
    spark.range(TableWindows.MaxWindows + 1L).select(timestamp_seconds(col("id")).as("start"), timestamp_seconds(col("id") + 1).as("end"))
      .createOrReplaceTempView("many_periods")
    assert(refused("table many_periods").contains(s"has more than ${TableWindows.MaxWindows} rows"))
    MemoryStream[(Long, Long)](spark).toDF().toDF("start", "end").createOrReplaceTempView("streamed_periods")
    assert(refused("table streamed_periods").contains("is a stream: table windows are read once, from a static table"))
    assert(intercept[windowagg.core.WindowError](WindowSpec.parse("table a b")).getMessage.contains("names no table"))
    assert(intercept[windowagg.core.WindowError](WindowSpec.parse("table a columns x")).getMessage.contains("columns <start column>, <end column>"))
  }

  test("streaming equals batch, and a restart over a changed table fails naming the windows, the same table restarts") {
    import spark.implicits._
    val rows = events(9, 600, 120).map { case (k, t, v) => (k, t + 1000000000L, v) }
    register("stream_periods", periods(5, 30, 120).map { case (s, e) => (s + 1000000000L, e + 1000000000L) })
    val definition = TableWindows.of("stream_periods", "opens", "closes")
    val expected = sorted(eventFrame(rows).groupBy(col("k"), window(col("ts"), definition)).agg(sum("v").as("s"))
      .select("k", "window.start", "window.end", "s"))
    val checkpoint = Files.createTempDirectory("windowagg-table-windows")
    def query(input: MemoryStream[(String, Long, Long)]): DataFrame =
      input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
        .withWatermark("ts", "10 minutes")
        .groupBy(col("k"), window(col("ts"), definition)).agg(sum("v").as("s"))
        .select("k", "window.start", "window.end", "s")
    val input = MemoryStream[(String, Long, Long)](spark)
    val running = query(input).writeStream.format("memory").queryName("table_windows_stream").outputMode("append").start()
    try {
      rows.grouped(150).foreach { batch =>
        input.addData(batch)
        running.processAllAvailable()
      }
      input.addData(Seq(("flush", 9000000000L, 0L)))
      running.processAllAvailable()
      input.addData(Seq(("flush", 9900000000L, 0L)))
      running.processAllAvailable()
    } finally running.stop()
    assert(sorted(spark.table("table_windows_stream")) == expected)

    // the memory sink keeps no checkpoint in the append mode: the restarts run into the no-op sink
    val first = MemoryStream[(String, Long, Long)](spark)
    val recorded = query(first).writeStream.format("noop").outputMode("append").option("checkpointLocation", checkpoint.toString).start()
    try {
      first.addData(rows.take(50))
      recorded.processAllAvailable()
    } finally recorded.stop()

    register("stream_periods", periods(6, 30, 120))
    val changed = intercept[AnalysisException](query(MemoryStream[(String, Long, Long)](spark)).writeStream.format("noop")
      .outputMode("append").option("checkpointLocation", checkpoint.toString).start()).getMessage
    assert(changed.contains("window was 'table windows columns opens, closes (30 windows, content "), changed)
    register("stream_periods", periods(5, 30, 120).map { case (s, e) => (s + 1000000000L, e + 1000000000L) })
    query(MemoryStream[(String, Long, Long)](spark)).writeStream.format("noop").outputMode("append")
      .option("checkpointLocation", checkpoint.toString).start().stop()
  }

  /** Per-key periods of `periods`: keys k0, k1 and k2 (k3 has none), each with its own windows. */
  private def registerPerKey(name: String, seed: Long): Unit = {
    import spark.implicits._
    Seq("k0", "k1", "k2").zipWithIndex.flatMap { case (k, i) => periods(seed * 10 + i, 15, 300).map { case (s, e) => (k, s, e) } }
      .toDF("customer", "s", "e").select(col("customer").as("k"), timestamp_micros(col("s")).as("opens"),
        timestamp_micros(col("e")).as("closes"))
      .createOrReplaceTempView(name)
  }

  test("per-key windows equal the range join on the key, in the DataFrame API and SQL, aggregated before the shuffle or not") {
    for (seed <- 1 to 3; mode <- Seq("auto", "never")) {
      spark.conf.set(AggregateBeforeShuffle.Conf, mode)
      try {
        registerPerKey("key_periods", seed)
        eventFrame(events(seed, 2000, 320)).createOrReplaceTempView("events")
        val expected = sorted(spark.sql(
          """SELECT e.k, p.opens, p.closes, sum(v), count(*) FROM events e
            |JOIN (SELECT DISTINCT k, opens, closes FROM key_periods) p ON e.k = p.k AND ts >= p.opens AND ts < p.closes
            |GROUP BY e.k, p.opens, p.closes""".stripMargin))
        assert(expected.length > 30 && expected.map(_.getString(0)).toSet == Set("k0", "k1", "k2"))
        val definition = TableWindows.of("key_periods", "opens", "closes").perKey("k")
        val api = spark.table("events").groupBy(col("k"), window(col("ts"), definition))
          .agg(sum("v"), count(lit(1))).select("k", "window.start", "window.end", "sum(v)", "count(1)")
        assert(sorted(api) == expected, s"seed $seed, $mode")
        val inNoWindow = spark.sql(
          """SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM key_periods p
            |WHERE e.k = p.k AND ts >= p.opens AND ts < p.closes)""".stripMargin).head().getLong(0)
        assert(windowagg.functions.metrics(api).get("unwindowedRows") == inNoWindow, "k3's rows and those between periods")
        val sql = spark.sql(
          """SELECT k, window.start, window.end, sum(v), count(*) FROM events
            |GROUP BY k, windows(ts, 'table key_periods columns opens, closes keys k')""".stripMargin)
        assert(sorted(sql) == expected, s"seed $seed, $mode")
        val table = spark.sql(
          """SELECT * FROM window_agg(TABLE(events) PARTITION BY k ORDER BY (ts), 'table key_periods columns opens, closes keys k',
            |'sum(v) AS s, count(1) AS n')""".stripMargin)
        assert(sorted(table) == expected, s"seed $seed, $mode")
      } finally spark.conf.unset(AggregateBeforeShuffle.Conf)
    }
  }

  test("per-key windows: the key columns must be grouping keys, of a type they read as, never null") {
    import spark.implicits._
    registerPerKey("checked_periods", 1)
    val events = Seq(("k0", 1, new java.sql.Timestamp(0L))).toDF("k", "n", "ts")
    def refused(df: => DataFrame): String = intercept[AnalysisException](df).getMessage
    val perK = TableWindows.of("checked_periods", "opens", "closes").perKey("k")
    assert(refused(events.groupBy(col("n"), window(col("ts"), perK)).count())
      .contains("gives windows per k: the aggregation must group by k too"))
    assert(refused(events.groupBy(col("k"), window(col("ts"), TableWindows.of("checked_periods", "opens", "closes").perKey("k, region")))
      .count()).contains("group by region too"))
    assert(refused(events.groupBy(col("k"), col("n"), window(col("ts"), TableWindows.of("checked_periods", "opens", "closes").perKey("n")))
      .count()).contains("has no key column 'n'"))
    spark.sql("SELECT map(1, 2) AS n, TIMESTAMP'2024-01-01 00:00:00' AS opens, TIMESTAMP'2024-01-02 00:00:00' AS closes")
      .createOrReplaceTempView("map_key_periods")
    assert(refused(events.groupBy(col("n"), window(col("ts"), TableWindows.of("map_key_periods", "opens", "closes").perKey("n"))).count())
      .contains("has a key column 'n' of type MAP<INT, INT>, which cannot be read as the grouping key's type INT"))
    spark.sql("SELECT CAST(NULL AS STRING) AS k, TIMESTAMP'2024-01-01 00:00:00' AS opens, TIMESTAMP'2024-01-02 00:00:00' AS closes")
      .createOrReplaceTempView("null_key_periods")
    assert(refused(events.groupBy(col("k"), window(col("ts"), TableWindows.of("null_key_periods", "opens", "closes").perKey("k"))).count())
      .contains("has a row with a null key k, or one that does not read as STRING (window starting 2024-01-01"))
    spark.sql("SELECT 'k0' AS k, TIMESTAMP'2024-01-02 00:00:00' AS opens, TIMESTAMP'2024-01-01 00:00:00' AS closes")
      .createOrReplaceTempView("inverted_key_periods")
    assert(refused(events.groupBy(col("k"), window(col("ts"), TableWindows.of("inverted_key_periods", "opens", "closes").perKey("k"))).count())
      .contains("has a row that is not a window for k k0: the window [2024-01-02"))
    spark.sql("SELECT * FROM VALUES ('k0', TIMESTAMP'2024-01-01 00:00:00', TIMESTAMP'2024-01-03 00:00:00'), " +
      "('k0', TIMESTAMP'2024-01-02 00:00:00', TIMESTAMP'2024-01-04 00:00:00'), " +
      "('k1', TIMESTAMP'2024-01-02 00:00:00', TIMESTAMP'2024-01-04 00:00:00') AS t(k, opens, closes)")
      .createOrReplaceTempView("overlapping_key_periods")
    val overlapping = TableWindows.of("overlapping_key_periods", "opens", "closes").perKey("k")
    assert(events.groupBy(col("k"), window(col("ts"), overlapping)).count().collect().isEmpty, "overlapping windows are fine unless asked")
    assert(refused(events.groupBy(col("k"), window(col("ts"), overlapping.nonOverlapping())).count())
      .contains("has overlapping windows for k k0, where they were asked to be non-overlapping: [2024-01-01T00:00 UTC, 2024-01-03T00:00 UTC) and [2024-01-02T00:00 UTC"))
    // a key read as the grouping key's type: integral keys of another width join
    Seq((1L, 0L, 10L)).toDF("n", "s", "e").select(col("n"), timestamp_seconds(col("s")).as("opens"), timestamp_seconds(col("e")).as("closes"))
      .createOrReplaceTempView("long_key_periods")
    val joined = events.groupBy(col("n"), window(col("ts"), TableWindows.of("long_key_periods", "opens", "closes").perKey("n"))).count()
    assert(joined.collect().map(_.getLong(2)).toSeq == Seq(1L))
  }

  test("per-key windows in streaming equal batch, with rows combined before the shuffle") {
    import spark.implicits._
    val rows = events(11, 600, 300).map { case (k, t, v) => (k, t + 1000000000L, v) }
    Seq("k0", "k1", "k2").zipWithIndex.flatMap { case (k, i) => periods(30 + i, 15, 300).map { case (s, e) => (k, s + 1000000000L, e + 1000000000L) } }
      .toDF("k", "s", "e").select(col("k"), timestamp_micros(col("s")).as("opens"), timestamp_micros(col("e")).as("closes"))
      .createOrReplaceTempView("stream_key_periods")
    val definition = TableWindows.of("stream_key_periods", "opens", "closes").perKey("k")
    val expected = sorted(eventFrame(rows).groupBy(col("k"), window(col("ts"), definition)).agg(sum("v").as("s"))
      .select("k", "window.start", "window.end", "s"))
    assert(expected.length > 20)
    val input = MemoryStream[(String, Long, Long)](spark)
    val stream = input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
      .withWatermark("ts", "10 minutes")
      .groupBy(col("k"), window(col("ts"), definition)).agg(sum("v").as("s"))
      .select("k", "window.start", "window.end", "s")
    val running = stream.writeStream.format("memory").queryName("table_key_windows_stream").outputMode("append").start()
    var combined = 0L
    try {
      rows.grouped(200).foreach { batch =>
        input.addData(batch)
        running.processAllAvailable()
        val execution = running.asInstanceOf[org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper].streamingQuery.lastExecution
        combined += execution.executedPlan.collect { case i: streaming.StreamingIntakeExec => i.metrics("combinedRows").value }.sum
      }
      input.addData(Seq(("k0", 9000000000L, 0L)))
      running.processAllAvailable()
      input.addData(Seq(("k0", 9900000000L, 0L)))
      running.processAllAvailable()
    } finally running.stop()
    assert(combined > 0, "rows were combined per key and slice before the shuffle")
    assert(sorted(spark.table("table_key_windows_stream")) == expected)
  }
}
