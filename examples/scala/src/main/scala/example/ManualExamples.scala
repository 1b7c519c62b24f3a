package example

import java.nio.file.Files

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.functions.{col, count, expr, lit}

import windowagg.SlidingWindows
import windowagg.functions.window

/**
 * Runs the manual's Scala examples ([[ReadmeExample]], [[StreamingExample]]) over the clicks: the
 * README's queries are analysed against data with the columns they name, and the streaming one is
 * run and compared with the same windows in batch.
 */
object ManualExamples {
  /** The problems found: none when every example ran as the manual says. */
  def run(spark: SparkSession, clicks: DataFrame): Seq[String] = {
    import spark.implicits._
    ReadmeExample.queries(clicks.withColumn("seq", $"amount"))

    // the streaming example over the same clicks, then one click a day later whose micro-batch
    // moves the watermark past them all
    val folder = Files.createTempDirectory("windowagg-manual").toFile
    val events = clicks.select("user", "ts")
    events.write.parquet(s"$folder/clicks")
    val query = StreamingExample.windows(spark.readStream.schema(events.schema).parquet(s"$folder/clicks"))
      .writeStream.format("memory").queryName("manual_streaming").outputMode("append")
      .option("checkpointLocation", s"$folder/checkpoint").start()
    query.processAllAvailable()
    events.select(lit("later").as("user"), (col("ts") + expr("INTERVAL 1 DAY")).as("ts")).limit(1)
      .write.mode("append").parquet(s"$folder/clicks")
    def asText(windows: DataFrame) = windows.where($"user" =!= "later")
      .select($"user", $"window.start".cast("string"), $"window.end".cast("string"), $"clicks").collect().toSet
    val batch = asText(events.groupBy(col("user"), window(col("ts"), SlidingWindows.of("10 minutes"))).agg(count(lit(1)).as("clicks")))
    // the windows come out in the micro-batch after the one that moved the watermark
    val deadline = System.nanoTime() + 120L * 1000 * 1000 * 1000
    var streamed = Set.empty[org.apache.spark.sql.Row]
    while (streamed != batch && System.nanoTime() < deadline) {
      query.processAllAvailable()
      streamed = asText(spark.table("manual_streaming").where($"late_reason".isNull))
      if (streamed != batch) Thread.sleep(200)
    }
    val late = spark.table("manual_streaming").where($"late_reason".isNotNull).count()
    query.stop()
    (if (streamed == batch) Nil else Seq(s"the streaming example gave $streamed, batch gives $batch")) ++
      (if (late == 0) Nil else Seq(s"the streaming example found $late late rows among on-time clicks"))
  }
}
