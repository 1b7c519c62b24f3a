package example

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions.{avg, col, sum}

import windowagg.{CountWindows, CumulativeWindows, CustomWindows, DurationWindows, SessionWindows, SlidingWindows, TimeWindows}
import windowagg.functions.window

/** README.md's Scala block, line for line (tests/test_docs.py checks it). */
object ReadmeExample {
  /** A query per kind over `df` (user, ts, amount, seq), each analysed as it is built. */
  def queries(df: DataFrame): Unit = {
    df.groupBy(col("user"), window(col("ts"), SlidingWindows.of("10 minutes"))).agg(sum("amount"))
    df.groupBy(col("user"), window(col("ts"), SessionWindows.withInactivityGap("5 minutes"))).count()
    df.groupBy(col("user"), window(col("ts"), TimeWindows.of("1 hour").advanceBy("10 seconds"))).agg(avg("amount"))
    df.groupBy(col("user"), window(col("ts"), CumulativeWindows.of("1 hour", "1 day"))).agg(sum("amount"))
    df.groupBy(col("user"), window(col("ts"), CountWindows.of(30).slide(10).tieBreak("seq"))).agg(sum("amount")) // Storm
    df.groupBy(col("user"), window(col("ts"), DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds"))).count()
    df.groupBy(col("user"), window(col("ts"), new windowagg.examples.FiscalQuarters(2))).count()   // your own kind
    df.groupBy(col("user"), window(col("ts"), CustomWindows.of("windowagg.examples.FiscalQuarters", Map("firstMonth" -> "2")))).count()
  }
}
