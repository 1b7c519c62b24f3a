package windowagg.spark

import java.nio.file.Files
import java.sql.Timestamp

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.TimeWindows
import windowagg.functions.{readState, window}

/** `windowagg.functions.readState`, the Scala side of `read_state` (tests/test_read_state.py checks every kind). */
class ReadStateSuite extends AnyFunSuite with SparkSessionFixture {

  private def ts(seconds: Long): Timestamp = new Timestamp(seconds * 1000)

  test("readState gives each key's open windows with their current values, after the latest or a given micro-batch") {
    import spark.implicits._
    val checkpoint = Files.createTempDirectory("windowagg-read-state")
    val input = MemoryStream[(String, Timestamp, Long)](spark)
    val query = input.toDF().toDF("k", "ts", "v").withWatermark("ts", "1 minute")
      .groupBy(col("k"), window(col("ts"), TimeWindows.of("1 minute"))).agg(sum("v").as("total"), count(lit(1)).as("n"))
      .writeStream.format("noop").outputMode("append").option("checkpointLocation", checkpoint.toString).start()
    try {
      input.addData(Seq(("a", ts(10), 1L), ("a", ts(20), 2L), ("b", ts(30), 4L)))
      query.processAllAvailable()
      // the watermark (30 s - 1 minute) closes no window yet; this micro-batch's 125 s moves it to 65 s
      input.addData(Seq(("a", ts(125), 8L)))
      query.processAllAvailable()
      // ... which closes [0, 60) when the next one runs, whose 200 s moves it to 140 s
      input.addData(Seq(("c", ts(200), 16L)))
      query.processAllAvailable()
    } finally query.stop()

    def windows(batch: Option[Long]) = {
      val state = batch.fold(readState(spark, checkpoint.toString))(b => readState(spark, checkpoint.toString, b))
      assert(state.columns.toSeq == Seq("k", "window", "total", "n", "held_rows", "next_close", "state"))
      state.select($"k", $"window.start".cast("long"), $"window.end".cast("long"), $"total", $"n", $"state.batch_id")
        .as[(String, Long, Long, Long, Long, Long)].collect().toSet
    }
    val last = windows(None).map(_._6).head
    // [0, 60) of a and b were final at watermark 65 s; a's [120, 180) and c's [180, 240) are open
    assert(windows(None) == Set(("a", 120L, 180L, 8L, 1L, last), ("c", 180L, 240L, 16L, 1L, last)))
    assert(windows(Some(0L)) == Set(("a", 0L, 60L, 3L, 2L, 0L), ("b", 0L, 60L, 4L, 1L, 0L)))

    val missing = intercept[AnalysisException](readState(spark, checkpoint.resolve("nowhere").toString))
    assert(missing.getMessage.contains("there is no checkpoint at"), missing.getMessage)
  }
}
