package windowagg.spark

import java.sql.Timestamp

import scala.util.Random

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.SessionWindows
import windowagg.functions.{metrics, window}

class SessionWindowSuite extends AnyFunSuite with SparkSessionFixture {

  private def events(seed: Long, rows: Int): DataFrame = {
    val rnd = new Random(seed)
    val data = (0 until rows).map { _ =>
      // bursts with gaps: sessions of varying length, equal times, and exact-gap distances
      Row(s"k${rnd.nextInt(4)}", new Timestamp(rnd.nextInt(400).toLong * 5000L), Long.box(rnd.nextInt(50).toLong),
        Long.box((1L + rnd.nextInt(4)) * 5000000L))
    }
    val schema = StructType(Seq(StructField("k", StringType), StructField("ts", TimestampType),
      StructField("v", LongType), StructField("gap_us", LongType)))
    spark.createDataFrame(spark.sparkContext.parallelize(data, 3), schema)
      .withColumn("gap", make_dt_interval(lit(0), lit(0), lit(0), col("gap_us") / 1000000))
  }

  private def aggs = Seq(sum("v").as("s"), count(lit(1)).as("n"), max("v").as("m"), array_sort(collect_list("v")).as("l"))

  private def sorted(df: DataFrame): Seq[String] = df.collect().map(_.toString).toSeq.sorted

  test("sessions equal Spark's session_window, mapped from [start, last + gap) to [first, last]") {
    for ((seed, gapSeconds) <- Seq((1L, 10L), (2L, 5L), (3L, 60L))) {
      val df = events(seed, 500)
      val ours = df.groupBy(col("k"), window(col("ts"), SessionWindows.withInactivityGap(s"$gapSeconds seconds")))
        .agg(aggs.head, aggs.tail: _*)
        .select(col("k"), col("window.start"), col("window.end"), col("s"), col("n"), col("m"), col("l"))
      // both merge records at most the gap apart: times are multiples of 5 s, so many pairs are exactly a gap apart
      val spark_ = df.groupBy(col("k"), session_window(col("ts"), s"$gapSeconds seconds").as("w"))
        .agg((aggs :+ max("ts").as("last")).head, (aggs :+ max("ts").as("last")).tail: _*)
        .select(col("k"), col("w.start"), col("last").as("end"), col("s"), col("n"), col("m"), col("l"))
      assert(sorted(ours) == sorted(spark_), s"seed $seed")
    }
  }

  test("a dynamic gap per row matches Spark's dynamic session_window") {
    val df = events(4, 500)
    val ours = df.groupBy(col("k"), window(col("ts"), SessionWindows.withDynamicGap("gap")))
      .agg(aggs.head, aggs.tail: _*)
      .select(col("k"), col("window.start"), col("window.end"), col("s"), col("n"), col("m"), col("l"))
    // Spark's dynamic gap is a CalendarInterval of the same length
    val theirs = df.groupBy(col("k"), session_window(col("ts"), expr("make_interval(0, 0, 0, 0, 0, 0, gap_us / 1000000)")).as("w"))
      .agg((aggs :+ max("ts").as("last")).head, (aggs :+ max("ts").as("last")).tail: _*)
      .select(col("k"), col("w.start"), col("last").as("end"), col("s"), col("n"), col("m"), col("l"))
    assert(sorted(ours) == sorted(theirs))
  }

  test("the KIP-94 example: records at most the gap apart belong together, inclusively and transitively") {
    import spark.implicits._
    val df = Seq(("a", 0L), ("a", 5L), ("a", 10L), ("a", 16L), ("a", 30L), ("b", 3L)).toDF("k", "t")
    val got = df.groupBy(col("k"), window(col("t"), SessionWindows.withInactivityGap(5L))).agg(count(lit(1)).as("n"))
      .select(col("k"), col("window.start"), col("window.end"), col("n")).collect().map(_.toString).toSeq.sorted
    assert(got == Seq("[a,0,10,3]", "[a,16,16,1]", "[a,30,30,1]", "[b,3,3,1]"))
  }

  test("session_window_agg in SQL") {
    import spark.implicits._
    Seq(("a", 0L, 1L), ("a", 5L, 2L), ("a", 20L, 3L)).toDF("user", "t", "amount").createOrReplaceTempView("clicks")
    val df = spark.sql(
      "SELECT * FROM session_window_agg(TABLE(clicks) PARTITION BY user ORDER BY (t), 5, 'sum(amount) AS total, count(1) AS n')")
    assert(df.columns.toSeq == Seq("user", "window_start", "window_end", "total", "n"))
    assert(df.collect().map(_.toString).toSeq.sorted == Seq("[a,0,5,3,2]", "[a,20,20,3,1]"))
  }

  test("rows with a null or non-positive dynamic gap are not windowed and are counted") {
    val data = Seq(Row("a", 0L, 5L), Row("a", 3L, null), Row("a", 4L, -1L), Row("a", 8L, 5L))
    val schema = StructType(Seq(StructField("k", StringType), StructField("t", LongType), StructField("g", LongType)))
    val df = spark.createDataFrame(spark.sparkContext.parallelize(data, 1), schema)
    val out = df.groupBy(col("k"), window(col("t"), SessionWindows.withDynamicGap("g"))).agg(count(lit(1)).as("n"))
      .select("window.start", "window.end", "n")
    assert(out.collect().map(_.toString).toSeq.sorted == Seq("[0,0,1]", "[8,8,1]"))
    assert(metrics(out).get("invalidGapRows") == 2L)
  }

  test("bad session definitions are rejected with clear errors") {
    assert(intercept[windowagg.core.WindowError](SessionWindows.withInactivityGap(0L)).getMessage.contains("positive"))
    assert(intercept[windowagg.core.WindowError](SessionWindows.withInactivityGap("-5 seconds")).getMessage.contains("positive"))
    import spark.implicits._
    val df = Seq(("a", new Timestamp(0L), "x")).toDF("k", "ts", "g")
    val e = intercept[AnalysisException](df.groupBy(col("k"), window(col("ts"), SessionWindows.withDynamicGap("g"))).count())
    assert(e.getMessage.contains("gap column"))
    val e2 = intercept[AnalysisException](df.groupBy(col("k"), window(col("ts"), SessionWindows.withInactivityGap(5L))).count())
    assert(e2.getMessage.contains("as a duration"))
  }
}
