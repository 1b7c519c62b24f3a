package windowagg.spark

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.StreamingQuery
import org.scalatest.funsuite.AnyFunSuite

import windowagg._
import windowagg.functions.window
import windowagg.spark.common.WindowAggException

/**
 * The emission policies: early firing (`emit = "every <interval>"`) gives an open window's running
 * value at most once per interval while it changes, then its final value once, marked `is_final`;
 * kinds whose windows change bounds or come out final only refuse it, at analysis or at start.
 */
class EmissionSuite extends AnyFunSuite with SparkSessionFixture {
  private val second = 1000000L

  private def stream(input: MemoryStream[(String, Long, Long)]): DataFrame =
    input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))

  private def run(df: DataFrame, name: String)(feed: StreamingQuery => Unit): Seq[(Long, Long, Long, Boolean)] = {
    val query = df.writeStream.format("memory").queryName(name).outputMode("update").start()
    try feed(query) finally query.stop()
    spark.table(name).where(col("k") === "a")
      .select(unix_micros(col("window.start")) / second, unix_micros(col("window.end")) / second, col("s"), col("is_final"))
      .collect().map(r => (r.getDouble(0).toLong, r.getDouble(1).toLong, r.getLong(2), r.getBoolean(3))).toSeq
  }

  test("every 10 seconds: running values at most once per interval while they change, then the final value once") {
    import spark.implicits._
    val input = MemoryStream[(String, Long, Long)](spark)
    val windows = stream(input).groupBy(col("k"), window(col("ts"), TimeWindows.of("1 minute").grace("0 seconds"),
      Map("emit" -> "every 10 seconds"))).agg(sum("v").as("s"))
    assert(windows.columns.toSeq == Seq("k", "window", "s", "is_final"))
    val rows = run(windows, "every_10_seconds") { q =>
      def add(rows: (String, Long, Long)*): Unit = { input.addData(rows); q.processAllAvailable() }
      add(("a", 5 * second, 1L), ("a", 6 * second, 2L)) // the key's first changes fire at once
      add(("a", 8 * second, 4L)) // the watermark (6 s) is in the interval the key fired in: it waits
      add(("b", 31 * second, 0L)) // the watermark passes 10 s (to 31 s): a's waiting change fires
      add(("a", 33 * second, 8L), ("a", 34 * second, 16L)) // in the interval a fired in: they wait
      add(("b", 95 * second, 0L)) // the watermark passes 40 s, and 60 s: [0 s, 60 s) is final instead
      add(("b", 200 * second, 0L))
    }
    val early = rows.filter(!_._4)
    val last = rows.filter(_._4)
    assert(last == Seq((0L, 60L, 31L, true)), rows)
    assert(early.map(_._3) == Seq(3L, 7L), rows)
    assert(early.forall(r => r._1 == 0L && r._2 == 60L))
  }

  test("every: the interval is a duration; sessions and Storm's windows refuse it, and the append mode too") {
    import spark.implicits._
    val input = MemoryStream[(String, Long, Long)](spark)
    def analyse(definition: WindowDefinition, emit: String): DataFrame =
      stream(input).groupBy(col("k"), window(col("ts"), definition, Map("emit" -> emit))).agg(sum("v").as("s"))
    val bad = intercept[WindowAggException](analyse(TimeWindows.of("1 minute").grace("0 seconds"), "every now and then"))
    assert(bad.getMessage.contains("now and then"), bad.getMessage)
    val zero = intercept[WindowAggException](analyse(TimeWindows.of("1 minute").grace("0 seconds"), "every 0 seconds"))
    assert(zero.getMessage.contains("must be positive"), zero.getMessage)
    val sessions = intercept[AnalysisException](analyse(SessionWindows.withInactivityGap("5 seconds").grace("0 seconds"), "every 10 seconds"))
    assert(sessions.getMessage.contains("a session's bounds grow") && sessions.getMessage.contains("emit 'updates'"), sessions.getMessage)
    val counts = intercept[AnalysisException](analyse(CountWindows.of(3).lag("0 seconds"), "every 10 seconds"))
    assert(counts.getMessage.contains("final only"), counts.getMessage)
    val append = intercept[Exception](analyse(TimeWindows.of("1 minute").grace("0 seconds"), "every 10 seconds")
      .writeStream.format("memory").queryName("every_append").outputMode("append").start())
    assert(append.getMessage.contains("early values of a window") && append.getMessage.contains("outputMode('update')"),
      append.getMessage)
  }
}
