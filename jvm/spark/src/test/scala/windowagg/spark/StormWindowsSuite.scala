package windowagg.spark

import java.sql.Timestamp
import java.time.LocalDateTime

import scala.util.Random

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.{CountWindows, DurationWindows, WindowDefinition}
import windowagg.core.ReferenceWindows
import windowagg.core.ReferenceWindows.Storm
import windowagg.core.ReferenceWindows.Storm.{Rows, Ticks}
import windowagg.functions.window

/**
 * Storm's windows on Spark: the worked example of Storm's document as a stream of two groups of
 * rows; per-row windows against Spark's OVER frames (ROWS for counts, RANGE for durations);
 * results that do not depend on arrival order without a tie-break column; rows in no window;
 * errors at analysis.
 */
class StormWindowsSuite extends AnyFunSuite with SparkSessionFixture {
  import spark.implicits._

  private def micros(t: Timestamp): Long = Math.addExact(Math.multiplyExact(Math.floorDiv(t.getTime, 1000L), 1000000L), t.getNanos / 1000L)

  test("Storm's worked example: length 20 s, slide 10 s, lag 5 s; two groups of rows give the six windows it lists") {
    def at(h: Int, m: Int, s: Int): Timestamp = Timestamp.valueOf(LocalDateTime.of(2026, 1, 1, h, m, s))
    val input = MemoryStream[(String, Timestamp)](spark)
    val windows = input.toDF().toDF("event", "ts")
      .groupBy(window(col("ts"), DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds")))
      .agg(array_sort(collect_list("event")).as("events"))
      .select(col("window.start"), col("window.end"), col("events"))
    val query = windows.writeStream.format("memory").queryName("storm_example").outputMode("append").start()
    def emitted(): Seq[(Timestamp, Timestamp, Seq[String])] =
      spark.table("storm_example").collect().map(r => (r.getTimestamp(0), r.getTimestamp(1), r.getSeq[String](2))).toSeq
        .sortBy(w => micros(w._2))
    try {
      input.addData(("e1", at(6, 0, 3)), ("e2", at(6, 0, 5)), ("e3", at(6, 0, 7)), ("e4", at(6, 0, 18)),
        ("e5", at(6, 0, 26)), ("e6", at(6, 0, 36)))
      query.processAllAvailable() // then the watermark is 6:00:31
      assert(emitted() == Seq(
        (at(5, 59, 50), at(6, 0, 10), Seq("e1", "e2", "e3")),
        (at(6, 0, 0), at(6, 0, 20), Seq("e1", "e2", "e3", "e4")),
        (at(6, 0, 10), at(6, 0, 30), Seq("e4", "e5"))))
      input.addData(("e7", at(8, 0, 25)), ("e8", at(8, 0, 26)), ("e9", at(8, 0, 27)), ("e10", at(8, 0, 39)))
      query.processAllAvailable() // then 8:00:34: e10 is not evaluated
      assert(emitted().drop(3) == Seq(
        (at(6, 0, 20), at(6, 0, 40), Seq("e5", "e6")),
        (at(6, 0, 30), at(6, 0, 50), Seq("e6")),
        (at(8, 0, 10), at(8, 0, 30), Seq("e7", "e8", "e9"))))
    } finally query.stop()
  }

  private def events(seed: Long, n: Int): DataFrame = {
    val rnd = new Random(seed)
    // few distinct times per key, so many rows share one; seq is unique
    (0 until n).map(i => (s"k${rnd.nextInt(3)}", rnd.nextInt(40) * 1000000L, rnd.nextInt(100).toLong, i.toLong))
      .toDF("k", "t", "v", "seq").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"), col("seq"))
  }

  private def perRow(df: DataFrame, definition: WindowDefinition): Seq[(String, Long, Long, Long)] =
    df.groupBy(col("k"), window(col("ts"), definition)).agg(sum("v").as("s"), count(lit(1)).as("n"))
      .collect().map(r => (r.getString(0), micros(r.getStruct(1).getTimestamp(1)), r.getLong(2), r.getLong(3))).toSeq.sorted

  test("a count window per row equals Spark's ROWS BETWEEN n - 1 PRECEDING AND CURRENT ROW, ordered by the tie-break") {
    val df = events(1, 400)
    for (n <- Seq(1, 3, 10)) {
      val frame = Window.partitionBy("k").orderBy("ts", "seq").rowsBetween(-(n - 1), Window.currentRow)
      val over = df.select(col("k"), col("ts"), sum("v").over(frame).as("s"), count(lit(1)).over(frame).as("n"))
        .collect().map(r => (r.getString(0), micros(r.getTimestamp(1)), r.getLong(2), r.getLong(3))).toSeq.sorted
      assert(perRow(df, CountWindows.of(n).tieBreak("seq")) == over, s"n = $n")
    }
  }

  test("a duration window per row equals Spark's RANGE frame over (t - length, t], rows sharing a time included") {
    val df = events(2, 400)
    for (seconds <- Seq(1, 5, 30)) {
      // RANGE is closed on the left: (t − L, t] is [t − (L − 1 µs), t], in microseconds
      val frame = Window.partitionBy("k").orderBy("t").rangeBetween(-(seconds * 1000000L - 1), Window.currentRow)
      val over = df.withColumn("t", unix_micros(col("ts")))
        .select(col("k"), col("ts"), sum("v").over(frame).as("s"), count(lit(1)).over(frame).as("n"))
        .collect().map(r => (r.getString(0), micros(r.getTimestamp(1)), r.getLong(2), r.getLong(3))).toSeq.sorted
      assert(perRow(df, DurationWindows.of(s"$seconds seconds")) == over, s"length $seconds s")
    }
  }

  test("without a tie-break column, results do not depend on the order rows arrive in or on partitioning") {
    val df = events(3, 300).drop("seq")
    val definitions = Seq(CountWindows.of(4), CountWindows.of(5).slide(2), DurationWindows.of("5 seconds").slide(3))
    for (definition <- definitions) {
      def run(input: DataFrame) = input.groupBy(col("k"), window(col("ts"), definition))
        .agg(sum("v").as("s"), array_sort(collect_list("v")).as("l")).collect().map(_.toString).sorted.toSeq
      val once = run(df)
      assert(run(df.orderBy(rand(7))) == once, definition.toString)
      assert(run(df.repartition(5).orderBy(rand(11)).coalesce(3)) == once, definition.toString)
    }
  }

  test("streaming without a tie-break column equals batch under random micro-batch splits") {
    val rnd = new Random(4)
    val rows = (0 until 200).map(_ => (s"k${rnd.nextInt(2)}", (100 + rnd.nextInt(30)) * 1000000L, rnd.nextInt(20).toLong))
    def query(df: DataFrame) = df.groupBy(col("k"), window(col("ts"), CountWindows.of(4).slide(3)))
      .agg(sum("v").as("s"), array_sort(collect_list("v")).as("l"))
    val toTs = (df: DataFrame) => df.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
    // the last rows wait for a third one to make a window: batch has them in none, and so is streaming once flushed
    val expected = query(toTs(rows.toDF())).collect().map(_.toString).sorted.toSeq
    val input = MemoryStream[(String, Long, Long)](spark)
    val out = startWithoutNoDataBatches {
      query(toTs(input.toDF()).withWatermark("ts", "1 minute")).writeStream.format("memory")
        .queryName("storm_splits").outputMode("append").start()
    }
    try {
      val shuffled = new Random(5).shuffle(rows)
      shuffled.grouped(37).foreach { part => input.addData(part); out.processAllAvailable() }
      input.addData(("flush", 10000L * 1000000L, 0L))
      out.processAllAvailable()
      input.addData(("flush", 20000L * 1000000L, 0L))
      out.processAllAvailable()
    } finally out.stop()
    val got = spark.table("storm_splits").where(col("k") =!= "flush").collect().map(_.toString).sorted.toSeq
    assert(got == expected)
  }

  test("rows in no window are counted in batch, and routed with reason 'no window' in streaming") {
    // duration 2 s every 3 rows: rows one minute apart, so each window holds its third row alone
    val rows = (0 until 7).map(i => ("a", i * 60L * 1000000L, 1L << i))
    val df = rows.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
    val batch = df.groupBy(col("k"), window(col("ts"), DurationWindows.of("2 seconds").slide(3))).agg(sum("v").as("s"))
    assert(batch.collect().map(_.getLong(2)).toSet == Set(4L, 32L))
    assert(windowagg.functions.metrics(batch).get("unwindowedRows") == 5L)
    val tumbling = df.groupBy(col("k"), window(col("ts"), CountWindows.tumbling(3))).agg(sum("v").as("s"))
    assert(tumbling.collect().map(_.getLong(2)).toSet == Set(7L, 56L))
    assert(windowagg.functions.metrics(tumbling).get("unwindowedRows") == 1L, "the 7th row waits for two more")

    val input = MemoryStream[(String, Long, Long)](spark)
    val stream = input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
    val query = stream.groupBy(col("k"), window(col("ts"), DurationWindows.of("2 seconds").slide(3).lag("1 second"),
      Map("lateRows" -> "emit"))).agg(sum("v").as("s"))
      .writeStream.format("memory").queryName("storm_no_window").outputMode("append").start()
    try {
      input.addData(rows)
      query.processAllAvailable()
      input.addData(("a", 3600L * 1000000L, 0L))
      query.processAllAvailable()
      val out = spark.table("storm_no_window")
      assert(out.where(col("late_reason").isNull).collect().map(_.getLong(2)).toSet == Set(4L, 32L))
      assert(out.where(col("late_reason") === "no window").count() == 5L)
      val metrics = query.recentProgress.flatMap(p => Option(p.observedMetrics.get("windowagg")))
      assert(metrics.map(_.getAs[Long]("unwindowed_rows")).sum == 5L)
    } finally query.stop()
  }

  test("processing time: windows of the rows of each micro-batch, closed by Spark's processing-time clock") {
    val input = MemoryStream[(String, Long)](spark)
    val query = input.toDF().toDF("k", "v")
      .groupBy(col("k"), window(current_timestamp(), DurationWindows.tumbling("2 seconds"), Map("time" -> "processing")))
      .agg(sum("v").as("s"), count(lit(1)).as("n"))
      .writeStream.format("memory").queryName("storm_processing").outputMode("append")
      .trigger(org.apache.spark.sql.streaming.Trigger.ProcessingTime("200 milliseconds")).start()
    try {
      val before = System.currentTimeMillis()
      input.addData(("a", 1L), ("a", 2L), ("b", 4L))
      // a processing-time query runs a micro-batch on every trigger, so processAllAvailable never
      // returns; wait for the windows instead
      val deadline = System.currentTimeMillis() + 20000
      while (spark.table("storm_processing").count() < 2 && System.currentTimeMillis() < deadline) Thread.sleep(100)
      val after = System.currentTimeMillis()
      val windows = spark.table("storm_processing").collect()
      assert(windows.map(r => (r.getString(0), r.getLong(2), r.getLong(3))).toSet == Set(("a", 3L, 2L), ("b", 4L, 1L)))
      windows.foreach { r =>
        val (start, end) = (r.getStruct(1).getTimestamp(0).getTime, r.getStruct(1).getTimestamp(1).getTime)
        assert(end - start == 2000L && end % 2000L == 0L)
        assert(start < after && end >= before, s"the window ($start, $end] holds the processing time")
      }
    } finally query.stop()
  }

  /**
   * Storm's view, from Storm's windows of the rows in (ts, seq) order (the reference's): (key, rows, new,
   * expired) per window.
   */
  private def views(df: DataFrame, storm: ReferenceWindows.Storm): Seq[(String, Seq[Long], Seq[Long], Seq[Long])] = {
    df.collect().map(r => (r.getString(0), micros(r.getTimestamp(1)), r.getLong(3))).groupBy(_._1).toSeq.flatMap { case (k, rows) =>
      val ordered = rows.sortBy(r => (r._2, r._3))
      val windows = storm.rowWindows(ordered.toIndexedSeq.map(_._2)).map(_._2.map(i => ordered(i)._3))
      windows.indices.map { i =>
        val previous = if (i == 0) Vector.empty[Long] else windows(i - 1)
        (k, windows(i).sorted, windows(i).filterNot(previous.contains).sorted, previous.filterNot(windows(i).contains).sorted)
      }
    }.sortBy(_.toString)
  }

  private def withViews(df: DataFrame, definition: WindowDefinition): DataFrame =
    df.groupBy(col("k"), window(col("ts"), definition)).agg(
      array_sort(collect_list("seq")).as("rows"),
      windowagg.functions.newRows(array_sort(collect_list("seq"))).as("new"),
      windowagg.functions.expiredRows(array_sort(collect_list("seq"))).as("expired"),
      windowagg.functions.newRows(count(lit(1))).as("new_count"),
      windowagg.functions.expiredRows(count(lit(1))).as("expired_count"))

  private def viewResult(df: DataFrame): Seq[(String, Seq[Long], Seq[Long], Seq[Long])] = df.collect().map { r =>
    assert(r.getAs[Long]("new_count") == r.getAs[Seq[Long]]("new").length)
    assert(r.getAs[Long]("expired_count") == r.getAs[Seq[Long]]("expired").length)
    (r.getString(0), r.getAs[Seq[Long]]("rows"), r.getAs[Seq[Long]]("new"), r.getAs[Seq[Long]]("expired"))
  }.toSeq.sortBy(_.toString)

  private val second = 1000000L
  /** Each definition with Storm's windows it names, in microseconds. */
  private val viewDefinitions = Seq(
    CountWindows.of(3).slide(2).tieBreak("seq") -> Storm(Rows(3), Rows(2)),
    CountWindows.of(2).every("3 seconds").tieBreak("seq") -> Storm(Rows(2), Ticks(3 * second)),
    DurationWindows.of("5 seconds").tieBreak("seq") -> Storm(Ticks(5 * second), Rows(1)),
    DurationWindows.of("5 seconds").slide(3).tieBreak("seq") -> Storm(Ticks(5 * second), Rows(3)),
    DurationWindows.of("6 seconds").every("2 seconds") -> Storm(Ticks(6 * second), Ticks(2 * second)),
    DurationWindows.of("2 seconds").every("3 seconds") -> Storm(Ticks(2 * second), Ticks(3 * second)))

  test("Storm's window view: new_rows(agg) and expired_rows(agg) are over the rows new in a window and gone from the previous one") {
    val df = events(9, 200)
    for ((definition, storm) <- viewDefinitions) assert(viewResult(withViews(df, definition)) == views(df, storm), definition.toString)
    df.createOrReplaceTempView("storm_view_events")
    val sql = spark.sql(
      """SELECT k, array_sort(collect_list(seq)) AS rows, new_rows(array_sort(collect_list(seq))) AS new,
        |  expired_rows(array_sort(collect_list(seq))) AS expired, new_rows(count(1)) AS new_count,
        |  expired_rows(count(1)) AS expired_count
        |FROM storm_view_events GROUP BY k, windows(ts, 'count 3 rows every 2 rows tie break seq')""".stripMargin)
    assert(viewResult(sql) == views(df, viewDefinitions.head._2))
  }

  test("Storm's window view in streaming equals batch under random micro-batch splits") {
    val rnd = new Random(10)
    val rows = (0 until 150).map(i => (s"k${rnd.nextInt(2)}", (100 + rnd.nextInt(40)) * 1000000L, rnd.nextInt(20).toLong, i.toLong))
    val toTs = (df: DataFrame) => df.toDF("k", "t", "v", "seq").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"), col("seq"))
    for (((definition, _), i) <- viewDefinitions.zipWithIndex) {
      val expected = viewResult(withViews(toTs(rows.toDF()), definition))
      val input = MemoryStream[(String, Long, Long, Long)](spark)
      val name = s"storm_view_$i"
      val query = startWithoutNoDataBatches {
        withViews(toTs(input.toDF()).withWatermark("ts", "1 minute"), definition)
          .writeStream.format("memory").queryName(name).outputMode("append").start()
      }
      try {
        new Random(i).shuffle(rows.grouped(50).toSeq).foreach { part => input.addData(part); query.processAllAvailable() }
        // the first flush row moves the watermark past every window, the second's micro-batch emits them
        input.addData(("flush", 10000L * 1000000L, 0L, -1L))
        query.processAllAvailable()
        input.addData(("flush", 20000L * 1000000L, 0L, -2L))
        query.processAllAvailable()
      } finally query.stop()
      assert(viewResult(spark.table(name).where(col("k") =!= "flush")) == expected, definition.toString)
    }
  }

  test("bad input is refused at analysis with a message naming the problem") {
    val df = events(5, 10)
    def error(f: => Any): String = intercept[AnalysisException](f).getMessage
    assert(error(df.groupBy(window(col("ts"), CountWindows.of(3).tieBreak("nope"))).count().collect())
      .contains("nope"))
    assert(error(df.withColumn("m", map(lit("a"), col("v")))
      .groupBy(window(col("ts"), CountWindows.of(3).tieBreak("m"))).count().collect())
      .contains("the tie-break column 'm' has type MAP<STRING, BIGINT>, which cannot be ordered"))
    val stream = MemoryStream[(String, Long)](spark).toDF().toDF("k", "t")
      .select(col("k"), timestamp_micros(col("t")).as("ts")).withWatermark("ts", "1 minute")
    assert(error(stream.groupBy(window(col("ts"), CountWindows.of(3), Map("emit" -> "updates"))).count())
      .contains("its windows come out final only"))
    assert(error(df.groupBy(window(current_timestamp(), DurationWindows.of("1 second"), Map("time" -> "processing"))).count())
      .contains("time 'processing' needs a streaming DataFrame"))
    assert(error(stream.groupBy(window(col("ts"), DurationWindows.of("1 second"), Map("time" -> "processing"))).count())
      .contains("the time column must be current_timestamp()"))
    assert(error(df.groupBy(window(col("ts"), windowagg.SlidingWindows.of("1 minute")))
      .agg(windowagg.functions.newRows(count(lit(1)))).collect()).contains("Storm's window view, for Storm's windows"))
    assert(error(df.groupBy(col("k")).agg(windowagg.functions.expiredRows(count(lit(1)))).collect())
      .contains("can only be used in an aggregation grouped by Storm's windows"))
    assert(error(df.groupBy(window(col("ts"), CountWindows.of(2))).agg(windowagg.functions.newRows(col("v") + 1)).collect())
      .contains("new_rows takes an expression of aggregates"))
    assert(error(stream.groupBy(window(col("ts"), DurationWindows.of("1 second").every("1 second"), Map("emit" -> "updates")))
      .count()).contains("its windows come out final only"))
    assert(error(spark.sql("SELECT count(1) FROM VALUES (timestamp'2026-01-01 00:00:00') AS t(ts) " +
      "GROUP BY windows(ts, 'count 0 rows')").collect()).contains("positive number of rows"))
  }

  test("SQL: windows(...) and window_agg(...) take Storm's specs") {
    events(6, 100).createOrReplaceTempView("storm_events")
    val grouped = spark.sql(
      "SELECT k, window.end AS e, sum(v) AS s FROM storm_events GROUP BY k, windows(ts, 'count 3 rows every 2 rows tie break seq')")
    val table = spark.sql(
      "SELECT k, window_end AS e, s FROM window_agg(TABLE(storm_events) PARTITION BY k ORDER BY (ts), " +
        "'count 3 rows every 2 rows tie break seq', 'sum(v) AS s')")
    val api = events(6, 100).groupBy(col("k"), window(col("ts"), CountWindows.of(3).slide(2).tieBreak("seq")))
      .agg(sum("v").as("s")).select(col("k"), col("window.end").as("e"), col("s"))
    def rows(df: DataFrame): Seq[String] = df.collect().map(_.toString).sorted.toSeq
    assert(rows(grouped) == rows(api))
    assert(rows(table) == rows(api))
    assert(rows(api).length == events(6, 100).groupBy("k").count().collect().map(r => r.getLong(1) / 2).sum)
  }
}
