package windowagg.spark

import java.sql.Timestamp

import scala.jdk.CollectionConverters._
import scala.util.Random

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery}
import org.scalatest.funsuite.AnyFunSuite

import windowagg.SlidingWindows
import windowagg.functions.window
import windowagg.spark.streaming.StreamingWindowPlanner

class StreamingSlidingSuite extends AnyFunSuite with SparkSessionFixture {

  private def ts(seconds: Long): Timestamp = new Timestamp(seconds * 1000)

  // rows with equal times may come in any order, so the list is compared sorted
  private def aggregates = Seq(sum("v").as("s"), count(lit(1)).as("n"), max("v").as("m"), array_sort(collect_list("v")).as("l"))

  private def windowsOf(df: DataFrame, definition: SlidingWindows, options: Map[String, String] = Map.empty): DataFrame =
    df.groupBy(col("k"), window(col("ts"), definition, options)).agg(aggregates.head, aggregates.tail: _*)
      .select(col("k"), col("window.start").as("start"), col("window.end").as("end"), col("s"), col("n"), col("m"), col("l"))

  private def rows(df: DataFrame): Seq[String] = df.collect().map(_.toString).toSeq.sorted

  private def run(stream: DataFrame, mode: OutputMode, name: String)(feed: StreamingQuery => Unit): DataFrame = {
    val query = startWithoutNoDataBatches(stream.writeStream.format("memory").queryName(name).outputMode(mode).start())
    try feed(query) finally query.stop()
    spark.table(name)
  }

  test("a restart under another spark.sql.shuffle.partitions keeps the checkpoint's: every key finds its state") {
    import spark.implicits._
    val rnd = new Random(7)
    val events = (0 until 200).map(_ => (s"k${rnd.nextInt(20)}", ts(rnd.nextInt(300).toLong), rnd.nextInt(50).toLong))
    val definition = SlidingWindows.of("30 seconds")
    val expected = rows(windowsOf(events.toDF("k", "ts", "v"), definition))
    val checkpoint = java.nio.file.Files.createTempDirectory("windowagg-partitions").toString
    val emitted = new java.util.concurrent.ConcurrentLinkedQueue[String]()
    val collect: (DataFrame, Long) => Unit = (batch, _) => batch.collect().foreach(r => emitted.add(r.toString))
    val input = MemoryStream[(String, Timestamp, Long)](spark)
    def start(): StreamingQuery =
      windowsOf(input.toDF().toDF("k", "ts", "v").withWatermark("ts", "20 minutes"), definition).where(col("k") =!= "flush")
        .writeStream.outputMode("append").option("checkpointLocation", checkpoint).foreachBatch(collect).start()
    val (before, after) = events.splitAt(100)
    val first = start()
    try {
      input.addData(before)
      first.processAllAvailable()
    } finally first.stop()
    // Spark runs a stateful query on its checkpoint's partitions whatever the setting says at restart
    val partitions = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", (partitions.toInt + 1).toString)
    try {
      val second = start()
      try {
        Seq(after, Seq(("flush", ts(100000), 0L)), Seq(("flush", ts(200000), 0L))).foreach { batch =>
          input.addData(batch)
          second.processAllAvailable()
        }
      } finally second.stop()
    } finally spark.conf.set("spark.sql.shuffle.partitions", partitions)
    assert(emitted.asScala.toSeq.sorted == expected)
  }

  test("final windows equal the batch result, whatever the micro-batch boundaries and order") {
    import spark.implicits._
    val rnd = new Random(42)
    val events = (0 until 300).map(_ => (s"k${rnd.nextInt(4)}", ts(rnd.nextInt(600).toLong), rnd.nextInt(50).toLong))
    val definition = SlidingWindows.of("30 seconds")
    val expected = rows(windowsOf(events.toDF("k", "ts", "v"), definition))
    for (split <- 1 to 3) {
      val input = MemoryStream[(String, Timestamp, Long)](spark)
      val stream = input.toDF().toDF("k", "ts", "v").withWatermark("ts", "20 minutes")
      val shuffled = new Random(split).shuffle(events)
      val cuts = (Seq(0, shuffled.length) ++ Seq.fill(4)(new Random(split * 7).nextInt(shuffled.length))).distinct.sorted
      val got = run(windowsOf(stream, definition).where(col("k") =!= "flush"), OutputMode.Append(), s"final_$split") { q =>
        cuts.zip(cuts.tail).foreach { case (a, b) =>
          input.addData(shuffled.slice(a, b))
          q.processAllAvailable()
        }
        // far-future rows move the watermark past every window of the real events
        input.addData(Seq(("flush", ts(100000), 0L)))
        q.processAllAvailable()
        input.addData(Seq(("flush", ts(200000), 0L)))
        q.processAllAvailable()
      }
      assert(rows(got) == expected, s"split $split")
    }
  }

  test("late rows are routed to the side output with their columns and reason, and counted") {
    import spark.implicits._
    val input = MemoryStream[(String, Timestamp, Long)](spark)
    val stream = input.toDF().toDF("k", "ts", "v")
    val windows = stream.groupBy(col("k"), window(col("ts"), SlidingWindows.of("10 seconds").grace("5 seconds"), Map("lateRows" -> "emit")))
      .agg(sum("v").as("s"))
    val query = windows.writeStream.format("memory").queryName("late_rows").outputMode("append").start()
    try {
      input.addData(("a", ts(100), 1L), ("a", ts(105), 2L))
      query.processAllAvailable()
      input.addData(("a", ts(200), 3L)) // watermark -> 195 s
      query.processAllAvailable()
      input.addData(("a", ts(150), 4L), ("a", ts(190), 5L)) // 150 + 10 < 195: late; 190 + 10 >= 195: on time
      query.processAllAvailable()
      val late = spark.table("late_rows").where(col("late_reason").isNotNull).collect()
      assert(late.length == 1)
      assert(late.head.getAs[String]("late_reason") == "late")
      assert(late.head.getAs[Row]("late_row").getAs[Long]("v") == 4L)
      val metrics = query.recentProgress.flatMap(p => Option(p.observedMetrics.get("windowagg")))
      assert(metrics.map(_.getAs[Long]("late_rows")).sum == 1L)
    } finally query.stop()
  }

  test("a row behind the watermark that no later row joins in a window is routed as in no window") {
    import spark.implicits._
    for (emit <- Seq("final", "updates")) {
      val input = MemoryStream[(String, Timestamp, Long)](spark)
      val stream = input.toDF().toDF("k", "ts", "v").withWatermark("ts", "5 minutes")
      val windows = stream.groupBy(col("k"), window(col("ts"), SlidingWindows.of("10 minutes"), Map("lateRows" -> "emit", "emit" -> emit)))
        .agg(sum("v").as("s"))
      val name = s"lone_row_$emit"
      val query = windows.writeStream.format("memory").queryName(name).outputMode(if (emit == "final") "append" else "update").start()
      try {
        input.addData(("b", ts(1000), 1L)) // watermark -> 700 s
        query.processAllAvailable()
        // behind the watermark, not late (its right window could still form): it waits
        input.addData(("a", ts(690), 2L), ("c", ts(680), 4L), ("c", ts(1000), 8L))
        query.processAllAvailable()
        input.addData(("b", ts(3000), 16L)) // every window of a's row is final: none holds it
        query.processAllAvailable()
        input.addData(("b", ts(4000), 32L))
        query.processAllAvailable()
        val out = spark.table(name)
        val routed = out.where(col("late_reason").isNotNull).collect()
        assert(routed.map(r => (r.getAs[String]("k"), r.getAs[String]("late_reason"), r.getAs[Row]("late_row").getAs[Long]("v"))).toSeq ==
          Seq(("a", "no window", 2L)), emit)
        // c's row at 680 s is in [400 s, 1000 s], the left window of its later row
        assert(out.where(col("k") === "c" && col("late_reason").isNull).collect().exists(_.getAs[Long]("s") == 12L), emit)
        val metrics = query.recentProgress.flatMap(p => Option(p.observedMetrics.get("windowagg")))
        assert(metrics.map(_.getAs[Long]("unwindowed_rows")).sum == 1L && metrics.map(_.getAs[Long]("late_rows")).sum == 0L, emit)
      } finally query.stop()
    }
  }

  test("update mode emits the current value of every window a micro-batch changed") {
    import spark.implicits._
    val input = MemoryStream[(String, Timestamp, Long)](spark)
    val stream = input.toDF().toDF("k", "ts", "v").withWatermark("ts", "1 hour")
    val got = run(windowsOf(stream, SlidingWindows.of("10 seconds"), Map("emit" -> "updates")), OutputMode.Update(), "updates") { q =>
      input.addData(("a", ts(10), 1L))
      q.processAllAvailable()
      input.addData(("a", ts(14), 2L), ("a", ts(15), 3L))
      q.processAllAvailable()
    }
    val all = got.collect().map(r => (r.getAs[Timestamp]("start").getTime / 1000, r.getAs[Long]("s"))).toSeq
    // batch 1: [0,10]=1; batch 2 changes [4,14]=3, [5,15]=6, [10+ε..] right windows, and not [0,10]
    assert(all.count(_ == ((0L, 1L))) == 1)
    assert(all.contains((4L, 3L)) && all.contains((5L, 6L)))
  }

  test("streaming needs a watermark or a grace, a TIMESTAMP time column and the RocksDB store") {
    import spark.implicits._
    val input = MemoryStream[(String, Timestamp, Long)](spark)
    val stream = input.toDF().toDF("k", "ts", "v")
    val e1 = intercept[AnalysisException](stream.groupBy(col("k"), window(col("ts"), SlidingWindows.of("10 seconds"))).count())
    assert(e1.getMessage.contains("needs a watermark"))
    val longs = stream.select(col("k"), unix_millis(col("ts")).as("t"))
    val e2 = intercept[AnalysisException](longs.groupBy(col("k"), window(col("t"), SlidingWindows.of(10L))).count())
    assert(e2.getMessage.contains("TIMESTAMP"))
    spark.conf.set(StreamingWindowPlanner.ProviderConf, "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider")
    try {
      val e3 = intercept[AnalysisException](
        stream.groupBy(col("k"), window(col("ts"), SlidingWindows.of("10 seconds").grace("1 second"))).count())
      assert(e3.getMessage.contains("RocksDB"))
    } finally spark.conf.set(StreamingWindowPlanner.ProviderConf, StreamingWindowPlanner.RocksDbProvider)
  }
}
