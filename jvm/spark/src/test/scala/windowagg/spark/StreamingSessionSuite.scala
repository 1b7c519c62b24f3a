package windowagg.spark

import java.sql.Timestamp

import scala.util.Random

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.SessionWindows
import windowagg.functions.window

class StreamingSessionSuite extends AnyFunSuite with SparkSessionFixture {

  private def ts(seconds: Long): Timestamp = new Timestamp(seconds * 1000)

  private def sessionsOf(df: DataFrame, options: Map[String, String] = Map.empty): DataFrame =
    df.groupBy(col("k"), window(col("ts"), SessionWindows.withInactivityGap("10 seconds"), options))
      .agg(sum("v").as("s"), count(lit(1)).as("n"), array_sort(collect_list("v")).as("l"))

  private def flat(df: DataFrame): Seq[String] =
    df.select(col("k"), col("window.start"), col("window.end"), col("s"), col("n"), col("l")).collect().map(_.toString).toSeq.sorted

  test("final sessions equal the batch result, whatever the micro-batch boundaries and order") {
    import spark.implicits._
    val rnd = new Random(5)
    val events = (0 until 300).map(_ => (s"k${rnd.nextInt(3)}", ts(rnd.nextInt(900).toLong), rnd.nextInt(20).toLong))
    val expected = flat(sessionsOf(events.toDF("k", "ts", "v")))
    for (split <- 1 to 2) {
      val input = MemoryStream[(String, Timestamp, Long)](spark)
      val stream = input.toDF().toDF("k", "ts", "v").withWatermark("ts", "30 minutes")
      val query = startWithoutNoDataBatches {
        sessionsOf(stream).where(col("k") =!= "flush")
          .writeStream.format("memory").queryName(s"sessions_$split").outputMode("append").start()
      }
      try {
        val shuffled = new Random(split).shuffle(events)
        shuffled.grouped(60 + split * 17).foreach { part =>
          input.addData(part)
          query.processAllAvailable()
        }
        input.addData(Seq(("flush", ts(100000), 0L)))
        query.processAllAvailable()
        input.addData(Seq(("flush", ts(200000), 0L)))
        query.processAllAvailable()
      } finally query.stop()
      assert(flat(spark.table(s"sessions_$split")) == expected, s"split $split")
    }
  }

  test("sessions with a per-row gap: final streaming output equals batch; invalid gaps are routed aside") {
    import spark.implicits._
    val rnd = new Random(9)
    val events = (0 until 200).map(_ => (s"k${rnd.nextInt(3)}", ts(rnd.nextInt(600).toLong), rnd.nextInt(20).toLong,
      if (rnd.nextInt(25) == 0) -1L else 1L + rnd.nextInt(20)))
    def sessions(df: DataFrame, options: Map[String, String]) =
      df.withColumn("gap", make_dt_interval(lit(0), lit(0), lit(0), col("gap_s")))
        .groupBy(col("k"), window(col("ts"), SessionWindows.withDynamicGap("gap"), options))
        .agg(sum("v").as("s"), count(lit(1)).as("n"), array_sort(collect_list("v")).as("l"))
    val expected = flat(sessions(events.toDF("k", "ts", "v", "gap_s"), Map.empty))
    val input = MemoryStream[(String, Timestamp, Long, Long)](spark)
    val stream = input.toDF().toDF("k", "ts", "v", "gap_s").withWatermark("ts", "30 minutes")
    val query = sessions(stream, Map("lateRows" -> "emit")).where(col("k") =!= "flush")
      .writeStream.format("memory").queryName("dynamic_sessions").outputMode("append").start()
    try {
      new Random(3).shuffle(events).grouped(70).foreach { part =>
        input.addData(part)
        query.processAllAvailable()
      }
      input.addData(Seq(("flush", ts(100000), 0L, 1L)))
      query.processAllAvailable()
      input.addData(Seq(("flush", ts(200000), 0L, 1L)))
      query.processAllAvailable()
    } finally query.stop()
    val out = spark.table("dynamic_sessions")
    assert(flat(out.where(col("late_reason").isNull)) == expected)
    assert(out.where(col("late_reason") === "invalid gap").count() == events.count(_._4 <= 0))
  }

  test("update mode retracts merged-away sessions and emits the merged one") {
    import spark.implicits._
    val input = MemoryStream[(String, Timestamp, Long)](spark)
    val stream = input.toDF().toDF("k", "ts", "v").withWatermark("ts", "1 hour")
    val query = sessionsOf(stream, Map("emit" -> "updates"))
      .writeStream.format("memory").queryName("session_updates").outputMode("update").start()
    try {
      Seq(Seq(("a", ts(0), 1L)), Seq(("a", ts(18), 2L)), Seq(("a", ts(9), 3L))).foreach { batch =>
        input.addData(batch)
        query.processAllAvailable()
      }
    } finally query.stop()
    val rows = spark.table("session_updates")
      .select(col("window.start").cast("long"), col("window.end").cast("long"), col("retraction"), col("n"))
      .collect().map(r => (r.getLong(0), r.getLong(1), r.getBoolean(2), Option(r.get(3)))).toSeq
    // 0 and 18 are 18 apart; 9 bridges them (within 10 s of both)
    assert(rows.count(_ == ((0L, 0L, false, Some(1L)))) == 1)
    assert(rows.count(_ == ((18L, 18L, false, Some(1L)))) == 1)
    assert(rows.count(_ == ((0L, 0L, true, None))) == 1)
    assert(rows.count(_ == ((18L, 18L, true, None))) == 1)
    assert(rows.count(_ == ((0L, 18L, false, Some(3L)))) == 1)
    assert(rows.length == 5)
  }

  test("a record behind the watermark that bridges an open session joins it") {
    import spark.implicits._
    val input = MemoryStream[(String, Timestamp, Long)](spark)
    val stream = input.toDF().toDF("k", "ts", "v")
    val query = stream.groupBy(col("k"), window(col("ts"), SessionWindows.withInactivityGap("10 seconds").grace("0 seconds"),
        Map("lateRows" -> "emit")))
      .agg(count(lit(1)).as("n"))
      .writeStream.format("memory").queryName("session_behind").outputMode("append").start()
    try {
      input.addData(("a", ts(100), 1L), ("a", ts(130), 1L))
      query.processAllAvailable()
      input.addData(("a", ts(135), 1L)) // watermark 135 s: [100] closed (reach 110), [130,135] open (reach 145)
      query.processAllAvailable()
      input.addData(("a", ts(128), 1L)) // 128 + 10 < 135, but it bridges the open session: joins it
      query.processAllAvailable()
      input.addData(("a", ts(300), 1L))
      query.processAllAvailable()
      input.addData(("a", ts(400), 1L))
      query.processAllAvailable()
    } finally query.stop()
    val out = spark.table("session_behind")
    assert(out.where(col("late_reason").isNotNull).count() == 0)
    val closed = out.where(col("late_reason").isNull)
      .select(col("window.start").cast("long"), col("window.end").cast("long"), col("n"))
      .collect().map(r => (r.getLong(0), r.getLong(1), r.getLong(2))).toSeq.sorted
    assert(closed.take(2) == Seq((100L, 100L, 1L), (128L, 135L, 3L)))
  }

  test("rows behind the watermark that reach an open session through each other all join it, in one micro-batch") {
    import spark.implicits._
    // gap 10 ms, grace 0: a at 105 and b at 110 set the watermark to 110; then a at 97 bridges the
    // open session [105] and a at 89 reaches it only through 97
    def sessions(batches: Seq[Seq[(String, Long)]], name: String): (Seq[(Long, Long, Long)], Long) = {
      val input = MemoryStream[(String, Long)](spark)
      val stream = input.toDF().toDF("k", "t").select(col("k"), timestamp_millis(col("t")).as("ts"))
      val query = stream.groupBy(col("k"), window(col("ts"), SessionWindows.withInactivityGap("10 milliseconds").grace("0 seconds"),
          Map("lateRows" -> "emit")))
        .agg(count(lit(1)).as("n"))
        .writeStream.format("memory").queryName(name).outputMode("append").start()
      try {
        (batches :+ Seq(("a", 10000L)) :+ Seq(("a", 20000L))).foreach { rows =>
          input.addData(rows)
          query.processAllAvailable()
        }
      } finally query.stop()
      val out = spark.table(name)
      val windows = out.where(col("late_reason").isNull && col("k") === "a")
        .select((unix_micros(col("window.start")) / 1000).cast("long"), (unix_micros(col("window.end")) / 1000).cast("long"), col("n"))
        .collect().map(r => (r.getLong(0), r.getLong(1), r.getLong(2))).toSeq.sorted
      (windows.filter(_._1 < 10000L), out.where(col("late_reason").isNotNull).count())
    }
    val together = sessions(Seq(Seq(("a", 105L), ("b", 110L)), Seq(("a", 97L), ("a", 89L))), "behind_together")
    val apart = sessions(Seq(Seq(("a", 105L), ("b", 110L)), Seq(("a", 97L)), Seq(("a", 89L))), "behind_apart")
    assert(together == ((Seq((89L, 105L, 3L)), 0L)))
    assert(apart == together)
  }

  test("a record that would join a closed session is late") {
    import spark.implicits._
    val input = MemoryStream[(String, Timestamp, Long)](spark)
    val stream = input.toDF().toDF("k", "ts", "v")
    val query = stream.groupBy(col("k"), window(col("ts"), SessionWindows.withInactivityGap("5 seconds").grace("0 seconds"),
        Map("lateRows" -> "emit")))
      .agg(count(lit(1)).as("n"))
      .writeStream.format("memory").queryName("session_late").outputMode("append").start()
    try {
      input.addData(("a", ts(10), 1L), ("b", ts(0), 1L))
      query.processAllAvailable()
      input.addData(("b", ts(16), 1L)) // another key moves the watermark to 16 s
      query.processAllAvailable()
      // at watermark 16 s, a's [10,10] (reach 15) closes; 14 + 5 >= 16, but 14 is within 5 s of the
      // closed session and bridges no open one: late
      input.addData(("a", ts(14), 1L))
      query.processAllAvailable()
    } finally query.stop()
    val late = spark.table("session_late").where(col("late_reason").isNotNull).collect()
    assert(late.length == 1 && late.head.getAs[Row]("late_row").getAs[Timestamp]("ts") == ts(14))
    val closed = spark.table("session_late").where(col("late_reason").isNull && col("k") === "a")
      .select(col("window.start").cast("long"), col("n")).collect().map(r => (r.getLong(0), r.getLong(1))).toSeq
    assert(closed == Seq((10L, 1L)))
  }
}
