package windowagg.spark

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.StreamingQuery
import org.scalatest.funsuite.AnyFunSuite

import windowagg.{CountWindows, DurationWindows, SlidingWindows, UnlimitedWindows, WindowDefinition}
import windowagg.functions.window

/**
 * expireIdleKeys: a key the watermark has left that far behind is forgotten; its rows no window
 * took are routed as expired and counted; its next rows start afresh; keys that keep sending rows
 * are untouched; kinds that forget keys by themselves, and batch queries, refuse the option.
 */
class IdleKeyExpirySuite extends AnyFunSuite with SparkSessionFixture {
  import spark.implicits._

  private val second = 1000000L
  private val minute = 60 * second

  private def stream(input: MemoryStream[(String, Long, Long)]): DataFrame =
    input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))

  /** Runs `batches` through the aggregation, each followed by one from the key "clock" that moves the watermark. */
  private def run(name: String, definition: WindowDefinition, options: Map[String, String], mode: String,
      batches: Seq[Seq[(String, Long, Long)]]): (DataFrame, StreamingQuery) = {
    val input = MemoryStream[(String, Long, Long)](spark)
    val query = stream(input).withWatermark("ts", "1 second")
      .groupBy(col("k"), window(col("ts"), definition, options + ("lateRows" -> "emit")))
      .agg(sum("v").as("s"))
      .writeStream.format("memory").queryName(name).outputMode(mode).start()
    try {
      batches.foreach { rows =>
        input.addData(rows)
        query.processAllAvailable()
        // a micro-batch that moves the watermark past these rows (settling them) and fires the timers due by then
        input.addData(("clock", rows.map(_._2).max + 2 * second, 0L))
        query.processAllAvailable()
      }
    } finally query.stop()
    (spark.table(name).where(col("k") =!= "clock"), query)
  }

  private def observed(query: StreamingQuery, name: String): Long =
    query.recentProgress.flatMap(p => Option(p.observedMetrics.get("windowagg"))).map(_.getAs[Long](name)).sum

  test("count windows firing early: an expired key's value fired for a window that never comes out is retracted") {
    // the last 3 rows at every hour: the window ending at 1 hour fires early at once; the key idles
    // past a minute long before the watermark reaches that hour, so the window never comes out
    val (out, _) = run("expire_count_early", CountWindows.of(3).every("1 hour"),
      Map("emit" -> "every 10 seconds", "expireIdleKeys" -> "1 minute"), "update",
      Seq(Seq(("a", second, 1L)), Seq(("c", 5 * minute, 2L))))
    val a = out.where(col("k") === "a" && col("late_reason").isNull)
      .select(unix_micros(col("window.start")) / second, unix_micros(col("window.end")) / second, col("s"), col("is_final"),
        col("retraction"))
      .collect().map(r => (r.getDouble(0).toLong, r.getDouble(1).toLong, Option(r.get(2)), r.getBoolean(3), r.getBoolean(4))).toSeq
    assert(a == Seq((1L, 3600L, Some(1L), false, false), (1L, 3600L, None, false, true)), a)
    assert(out.where(col("k") === "a" && col("late_reason") === "expired").count() == 1)
  }

  test("count windows: an idle key's rows that no window took are routed as expired; its next rows start afresh") {
    val (out, query) = run("expire_count", CountWindows.tumbling(3), Map("expireIdleKeys" -> "10 minutes"), "append", Seq(
      Seq(("a", 0L, 1L), ("a", second, 2L), ("b", 0L, 10L), ("b", second, 20L), ("b", 2 * second, 30L),
        ("c", 0L, 100L)),
      // c keeps sending rows, a and b send none: 11 minutes later a and b are idle, c is not
      Seq(("c", 5 * minute, 200L)),
      Seq(("c", 11 * minute, 300L)),
      // a comes back: its earlier two rows are gone, so its first window is of these three
      Seq(("a", 20 * minute, 4L), ("a", 20 * minute + second, 8L), ("a", 20 * minute + 2 * second, 16L),
        ("b", 20 * minute, 40L))))
    val windows = out.where(col("late_reason").isNull).select("k", "s").collect().map(r => (r.getString(0), r.getLong(1))).toSet
    assert(windows == Set(("a", 28L), ("b", 60L), ("c", 600L)))
    val expired = out.where(col("late_reason") === "expired").groupBy("k").count().collect().map(r => (r.getString(0), r.getLong(1))).toMap
    assert(expired == Map("a" -> 2L), "a's first two rows; b's window took all of its rows; c was never idle")
    assert(observed(query, "expired_rows") == 2L)
  }

  test("without expireIdleKeys the same rows wait for their window: a's first window joins old and new rows") {
    val (out, _) = run("keep_count", CountWindows.tumbling(3), Map.empty, "append", Seq(
      Seq(("a", 0L, 1L), ("a", second, 2L)),
      Seq(("c", 11 * minute, 300L)),
      Seq(("a", 20 * minute, 4L), ("a", 20 * minute + second, 8L), ("a", 20 * minute + 2 * second, 16L))))
    val windows = out.where(col("late_reason").isNull).select("k", "s").collect().map(r => (r.getString(0), r.getLong(1))).toSet
    assert(windows == Set(("a", 7L)), "rows 1, 2 and 4 make a's first window; 8 and 16 wait")
  }

  test("duration windows every n rows: an idle key counts its rows afresh") {
    val (out, query) = run("expire_duration", DurationWindows.of("1 minute").slide(2), Map("expireIdleKeys" -> "1 minute"), "append",
      Seq(Seq(("a", 0L, 1L), ("a", second, 2L), ("a", 2 * second, 4L)), Seq(("c", 10 * minute, 0L)),
        Seq(("a", 20 * minute, 8L), ("a", 20 * minute + second, 16L))))
    // forgotten, a's next two rows make a window; kept, a's fourth row would have, alone
    val windows = out.where(col("late_reason").isNull).select("k", "s").collect().map(r => (r.getString(0), r.getLong(1))).toSet
    assert(windows == Set(("a", 3L), ("a", 24L)))
    // a's third row, and c's only row, are older than any window still to come can reach: in no window
    assert(out.where(col("late_reason") === "no window").select("k").collect().map(_.getString(0)).sorted.toSeq == Seq("a", "c"))
    assert(observed(query, "expired_rows") == 0L)
  }

  test("unlimited windows: an idle key's running total starts again from its next rows") {
    val (out, query) = run("expire_unlimited", UnlimitedWindows.of(), Map("emit" -> "updates", "expireIdleKeys" -> "1 hour"), "update",
      Seq(Seq(("a", 0L, 1L), ("b", 0L, 10L)), Seq(("a", 30 * minute, 2L)), Seq(("c", 120 * minute, 0L)),
        Seq(("b", 121 * minute, 20L), ("a", 121 * minute, 4L))))
    val values = out.where(col("late_reason").isNull && col("k") =!= "c").select("k", "s").collect()
      .map(r => (r.getString(0), r.getLong(1)))
    // a: 1, 3 (half an hour later), then 4 alone after 90 idle minutes; b: 10, then 20 alone after two hours
    assert(values.groupBy(_._1).map { case (k, vs) => k -> vs.map(_._2).toSet } == Map("a" -> Set(1L, 3L, 4L), "b" -> Set(10L, 20L)))
    assert(observed(query, "expired_rows") == 0L, "every row was in the window it emitted")
  }

  test("kinds that forget keys themselves, batch queries and bad durations refuse the option, naming it") {
    val input = MemoryStream[(String, Long, Long)](spark)
    val sliding = intercept[AnalysisException] {
      stream(input).withWatermark("ts", "1 second")
        .groupBy(col("k"), window(col("ts"), SlidingWindows.of("1 minute"), Map("expireIdleKeys" -> "1 hour"))).count()
    }
    assert(sliding.getMessage.contains("drop expireIdleKeys"), sliding.getMessage)
    val batch = intercept[AnalysisException] {
      Seq(("a", 0L, 1L)).toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"))
        .groupBy(col("k"), window(col("ts"), CountWindows.of(3), Map("expireIdleKeys" -> "1 hour"))).count().collect()
    }
    assert(batch.getMessage.contains("expireIdleKeys is for streaming"), batch.getMessage)
    val bad = intercept[Exception] {
      stream(input).withWatermark("ts", "1 second")
        .groupBy(col("k"), window(col("ts"), CountWindows.of(3), Map("expireIdleKeys" -> "soon"))).count()
    }
    assert(bad.getMessage.contains("soon"), bad.getMessage)
    val zero = intercept[Exception] {
      stream(input).withWatermark("ts", "1 second")
        .groupBy(col("k"), window(col("ts"), CountWindows.of(3), Map("expireIdleKeys" -> "0 seconds"))).count()
    }
    assert(zero.getMessage.contains("expireIdleKeys must be positive"), zero.getMessage)
  }

  test("a restart with expireIdleKeys added to a checkpoint written without it fails, naming the change") {
    val checkpoint = java.nio.file.Files.createTempDirectory("expire-restart").toString
    val input = MemoryStream[(String, Long, Long)](spark)
    def start(options: Map[String, String]): StreamingQuery = stream(input).withWatermark("ts", "1 second")
      .groupBy(col("k"), window(col("ts"), CountWindows.of(3), options)).agg(sum("v").as("s"))
      .writeStream.format("noop").option("checkpointLocation", checkpoint).outputMode("append").start()
    val first = start(Map.empty)
    try {
      input.addData(("a", 0L, 1L))
      first.processAllAvailable()
    } finally first.stop()
    val error = intercept[Exception](start(Map("expireIdleKeys" -> "1 hour")))
    assert(error.getMessage.contains("expire idle keys was absent, now '1 hour'"), error.getMessage)
  }
}
