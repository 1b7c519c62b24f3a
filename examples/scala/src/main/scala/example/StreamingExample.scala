package example

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{col, count, lit}

import windowagg.SlidingWindows
import windowagg.functions.window

/** docs/streaming.md's Scala block, line for line (tests/test_docs.py checks it). */
object StreamingExample {
  /** Final sliding windows with late rows emitted, over a stream of clicks (user, ts). */
  def windows(clicks: DataFrame): DataFrame = {
    clicks.groupBy(col("user"),
        window(col("ts"), SlidingWindows.of("10 minutes").grace("1 minute"), Map("emit" -> "final", "lateRows" -> "emit")))
      .agg(count(lit(1)).as("clicks"))
  }
}
