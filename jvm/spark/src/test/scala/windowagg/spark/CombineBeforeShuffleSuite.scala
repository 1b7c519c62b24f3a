package windowagg.spark

import scala.util.Random

import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.streaming.runtime.{MemoryStream, StreamingQueryWrapper}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.Trigger
import org.scalatest.funsuite.AnyFunSuite

import windowagg.{CumulativeWindows, SessionWindows, SlidingWindows, TimeWindows, WindowDefinition}
import windowagg.functions.window
import windowagg.spark.streaming.{Combine, CombineBeforeShuffle, SessionRunsExec, StreamingIntakeExec}
import windowagg.spark.common.{AggregateBeforeShuffle, WindowAggException}

/**
 * Streaming rows combined before the shuffle (per key and partial time through Spark's partial
 * aggregation, or in session runs) give exactly what shuffling every row gives, late rows included.
 */
class CombineBeforeShuffleSuite extends AnyFunSuite with SparkSessionFixture {

  private val rnd = new Random(11)
  // time order between micro-batches, shuffled within each, with a tenth of the rows held back two
  // micro-batches so that some fall behind the watermark; three input partitions, so that merged
  // rows of one key interleave
  private val events = (0 until 600).map(_ => (s"k${rnd.nextInt(4)}", rnd.nextInt(3000).toLong, rnd.nextInt(100).toLong)).sortBy(_._2)
  private val (held, onTime) = events.partition(_ => rnd.nextInt(10) == 0)
  private val chunks = onTime.grouped(135).toSeq
  private val batches = chunks.indices.map(i =>
    rnd.shuffle(chunks(i) ++ held.filter(e => math.min(e._2 / 500 + 2, chunks.length - 1) == i)))

  /** The query's output (sorted, as text), the rows its combining operators read and the rows its last shuffle shipped, over all micro-batches. */
  private def run(name: String, definition: WindowDefinition, merge: Boolean): (Seq[String], Long, Long) = {
    import spark.implicits._
    spark.conf.set(AggregateBeforeShuffle.Conf, if (merge) "always" else "never")
    val input = MemoryStream[(String, Long, Long)](spark, 3)
    val stream = input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_millis(col("t")).as("ts"), col("v"))
    // every execution holds rows, so each one's plan counts them
    val query = try startWithoutNoDataBatches {
      stream.groupBy(col("k"), window(col("ts"), definition, Map("lateRows" -> "emit")))
        .agg(sum("v").as("s"), count(lit(1)).as("n"), max("v").as("m"), min(col("ts")).as("first"))
        .writeStream.format("memory").queryName(name).outputMode("append").start()
    } finally spark.conf.unset(AggregateBeforeShuffle.Conf)
    var (rows, merged) = (0L, 0L)
    try {
      (batches :+ Seq(("flush", 100000L, 0L)) :+ Seq(("flush", 200000L, 0L))).foreach { part =>
        input.addData(part)
        query.processAllAvailable()
        val plan = query.asInstanceOf[StreamingQueryWrapper].streamingQuery.lastExecution.executedPlan
        plan.foreach {
          case e: StreamingIntakeExec => rows += e.metrics("combinedRows").value + e.metrics("wholeRows").value
          case e: SessionRunsExec => rows += e.metrics("inputRows").value
          case _ =>
        }
        // the shuffle into the stateful operator (every micro-batch has rows)
        merged += plan.collect { case s: ShuffleExchangeExec => s.metrics("shuffleRecordsWritten").value }.sum
      }
    } finally query.stop()
    (spark.table(name).where(col("k") =!= "flush").collect().map(_.toString).toSeq.sorted, rows, merged)
  }

  /**
   * The most rows combining may ship, given the partial time of a row's slice: one per key and
   * slice in each input partition of a micro-batch, plus the held-back rows (shipped whole when
   * late) and the two flushing rows.
   */
  private def shippedAtMost(sliceOf: Long => Long): Long =
    batches.map(b => math.min(b.size.toLong, 3L * b.map { case (k, t, _) => (k, sliceOf(t)) }.distinct.size)).sum +
      held.size + 2

  Seq(
    // a session run holds the rows of one key that a gap of 100 ms joins
    ("sessions", SessionWindows.withInactivityGap("100 milliseconds").grace("0 seconds"), events.length / 3L),
    // sliding windows' partial times are their rows' own: only rows of one key and time combine
    ("sliding windows", SlidingWindows.of("200 milliseconds").grace("0 seconds"), shippedAtMost(t => t)),
    ("hopping windows", TimeWindows.of("300 milliseconds").advanceBy("100 milliseconds").grace("0 seconds"),
      shippedAtMost(_ / 100)),
    ("cumulative windows", CumulativeWindows.of("100 milliseconds", "500 milliseconds").grace("0 seconds"),
      shippedAtMost(_ / 100))
  ).zipWithIndex.foreach { case ((kind, definition, most), i) =>
    test(s"$kind: rows combined before the shuffle give the same windows and late rows as shuffling each row") {
      val (merged, rows, shipped) = run(s"merged_$i", definition, merge = true)
      val (each, rowsEach, _) = run(s"each_$i", definition, merge = false)
      assert(merged == each)
      assert(merged.exists(_.contains("late")), "some rows are late")
      assert(rowsEach == 0 && rows == events.length + 2, "every row went through the combining operator")
      assert(shipped > 0 && shipped <= most, s"$shipped rows shipped for $rows rows (at most $most)")
    }
  }

  test("an order-sensitive aggregate, a per-row gap or processing time shuffles every row") {
    import spark.implicits._
    val stream = MemoryStream[(String, Long, Long)](spark).toDF().toDF("k", "t", "v")
      .select(col("k"), timestamp_millis(col("t")).as("ts"), col("v"), expr("INTERVAL 1 SECOND").as("gap"))
    def merges(definition: WindowDefinition, options: Map[String, String], aggregate: org.apache.spark.sql.Column,
        time: org.apache.spark.sql.Column = col("ts")): Boolean =
      stream.groupBy(col("k"), window(time, definition, options)).agg(aggregate)
        .queryExecution.analyzed.collectFirst { case c: CombineBeforeShuffle => c }.exists(!_.spec.combine.isInstanceOf[Combine.Rows])
    val sessions = SessionWindows.withInactivityGap("1 second").grace("0 seconds")
    assert(merges(sessions, Map.empty, sum("v")))
    assert(!merges(sessions, Map.empty, collect_list("v")))
    assert(!merges(sessions, Map.empty, first("v")))
    assert(!merges(SessionWindows.withDynamicGap("gap").grace("0 seconds"), Map.empty, sum("v")))
    assert(merges(TimeWindows.of("1 second").grace("0 seconds"), Map.empty, sum("v")))
    assert(!merges(TimeWindows.of("1 second"), Map("time" -> "processing"), sum("v"), current_timestamp()))
  }

  test("a query counting its late rows reads only the columns its windows read; one emitting them reads all") {
    val dir = java.nio.file.Files.createTempDirectory("windowagg-pruning").toString
    spark.range(0, 20).selectExpr("concat('k', id % 2) AS k", "timestamp_millis(id * 100) AS ts", "id AS v", "repeat('x', 100) AS note")
      .write.json(s"$dir/in")
    /** The columns the file source's scan reads, and the windows. */
    def scanned(lateRows: String): (Seq[String], Seq[String]) = {
      val stream = spark.readStream.schema("k STRING, ts TIMESTAMP, v BIGINT, note STRING").json(s"$dir/in")
      val query = startWithoutNoDataBatches {
        stream.groupBy(col("k"), window(col("ts"), TimeWindows.of("1 second").grace("0 seconds"), Map("lateRows" -> lateRows, "emit" -> "updates")))
          .agg(sum("v").as("s")).writeStream.format("memory").queryName(s"scanned_$lateRows").outputMode("update")
          .option("checkpointLocation", s"$dir/checkpoint-$lateRows").trigger(Trigger.AvailableNow()).start()
      }
      try query.awaitTermination() finally query.stop()
      val plan = query.asInstanceOf[StreamingQueryWrapper].streamingQuery.lastExecution.executedPlan
      (plan.collectFirst { case scan: FileSourceScanExec => scan.requiredSchema.fieldNames.toSeq }.get,
        spark.table(s"scanned_$lateRows").select("k", "s").collect().map(_.toString).toSeq.sorted)
    }
    val (counting, windows) = scanned("count")
    val (emitting, sameWindows) = scanned("emit")
    assert(counting == Seq("k", "ts", "v"))
    assert(emitting == Seq("k", "ts", "v", "note"))
    assert(windows == sameWindows && windows.nonEmpty)
  }

  test("the setting must be auto, always or never, and the one it replaced names it") {
    import spark.implicits._
    val stream = MemoryStream[(String, Long)](spark).toDF().toDF("k", "t").select(col("k"), timestamp_millis(col("t")).as("ts"))
    def refused(key: String, value: String): String = {
      spark.conf.set(key, value)
      try intercept[WindowAggException](
        stream.groupBy(col("k"), window(col("ts"), TimeWindows.of("1 second").grace("0 seconds"))).count()).getMessage
      finally spark.conf.unset(key)
    }
    val bad = refused(AggregateBeforeShuffle.Conf, "sometimes")
    assert(bad.contains(AggregateBeforeShuffle.Conf) && bad.contains("sometimes"), bad)
    val old = refused("spark.windowagg.streaming.mergeBeforeShuffle", "false")
    assert(old.contains("was replaced by " + AggregateBeforeShuffle.Conf), old)
  }

  test("real-time mode runs windowagg from Spark 4.3 on: on 4.1 and 4.2 the query stops naming that") {
    for (older <- Seq("4.1.3", "4.2.0")) {
      val e = intercept[WindowAggException](CombineBeforeShuffle.checkRealTimeMode(older))
      assert(e.getMessage.contains("from Spark 4.3 on") && e.getMessage.contains(s"this is Spark $older"), e.getMessage)
    }
    CombineBeforeShuffle.checkRealTimeMode("4.3.0")
  }
}
