package example

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.{col, count, lit, sum, to_timestamp}

import windowagg.{SessionWindows, SlidingWindows}
import windowagg.functions.window

/** Per user: 10-minute sliding windows and sessions with a 5-minute gap over a few clicks. */
object ClickWindows {
  def main(args: Array[String]): Unit = {
    val spark = SparkSession.builder()
      .master("local[2]")
      .appName("windowagg Scala example")
      .config("spark.sql.extensions", "windowagg.spark.WindowAggExtensions")
      .config("spark.sql.session.timeZone", "UTC")
      .config("spark.ui.enabled", "false")
      // a few rows on two cores: two shuffle partitions, not Spark's 200 (in streaming, each is a state store)
      .config("spark.sql.shuffle.partitions", "2")
      // streaming windows keep their state in RocksDB
      .config("spark.sql.streaming.stateStore.providerClass",
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
      .getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    import spark.implicits._

    val clicks = Seq(
      ("ann", "2024-01-01 10:00:00", 5L),
      ("ann", "2024-01-01 10:04:00", 3L),
      ("ann", "2024-01-01 10:20:00", 2L),
      ("bob", "2024-01-01 10:01:00", 7L)
    ).toDF("user", "at", "amount").select(col("user"), to_timestamp(col("at")).as("ts"), col("amount"))

    val sliding = clicks.groupBy(col("user"), window(col("ts"), SlidingWindows.of("10 minutes")))
      .agg(sum("amount").as("total"), count(lit(1)).as("n"))
      .select(col("user"), col("window.start").cast("string").as("start"), col("window.end").cast("string").as("end"), col("total"), col("n"))
      .orderBy("user", "start")
    val sessions = clicks.groupBy(col("user"), window(col("ts"), SessionWindows.withInactivityGap("5 minutes")))
      .agg(sum("amount").as("total"), count(lit(1)).as("n"))
      .select(col("user"), col("window.start").cast("string").as("start"), col("window.end").cast("string").as("end"), col("total"), col("n"))
      .orderBy("user", "start")
    sliding.show(truncate = false)
    sessions.show(truncate = false)

    // KIP-450: per distinct time, the window ending there, and the one starting just after it if not empty
    val expectedSliding = Seq(
      ("ann", "2024-01-01 09:50:00", "2024-01-01 10:00:00", 5L, 1L),
      ("ann", "2024-01-01 09:54:00", "2024-01-01 10:04:00", 8L, 2L),
      ("ann", "2024-01-01 10:00:00.000001", "2024-01-01 10:10:00.000001", 3L, 1L),
      ("ann", "2024-01-01 10:10:00", "2024-01-01 10:20:00", 2L, 1L),
      ("bob", "2024-01-01 09:51:00", "2024-01-01 10:01:00", 7L, 1L))
    val expectedSessions = Seq(
      ("ann", "2024-01-01 10:00:00", "2024-01-01 10:04:00", 8L, 2L),
      ("ann", "2024-01-01 10:20:00", "2024-01-01 10:20:00", 2L, 1L),
      ("bob", "2024-01-01 10:01:00", "2024-01-01 10:01:00", 7L, 1L))
    val gotSliding = sliding.as[(String, String, String, Long, Long)].collect().toSeq
    val gotSessions = sessions.as[(String, String, String, Long, Long)].collect().toSeq
    val manualProblems = ManualExamples.run(spark, clicks)
    spark.stop()
    if (gotSliding != expectedSliding || gotSessions != expectedSessions) {
      System.err.println(s"unexpected windows:\n$gotSliding\n$gotSessions")
      sys.exit(1)
    }
    if (manualProblems.nonEmpty) {
      System.err.println(s"the manual's Scala examples:\n${manualProblems.mkString("\n")}")
      sys.exit(1)
    }
    println("windowagg Scala example: sliding windows and sessions as expected; the manual's Scala examples ran")
  }
}
