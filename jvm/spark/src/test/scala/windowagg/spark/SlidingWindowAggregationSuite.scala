package windowagg.spark

import scala.util.Random

import org.apache.spark.sql.{DataFrame, Encoder, Encoders, Row}
import org.apache.spark.sql.expressions.Aggregator
import org.apache.spark.sql.functions._
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import windowagg.SlidingWindows
import windowagg.functions.window
import windowagg.spark.common.WindowGroupingExpression

/** A typed Scala Aggregator (through `udaf`): sum of squares, to drive typed imperative buffers. */
object SumOfSquares extends Aggregator[Long, Long, Long] {
  def zero: Long = 0L
  def reduce(b: Long, a: Long): Long = b + a * a
  def merge(b1: Long, b2: Long): Long = b1 + b2
  def finish(r: Long): Long = r
  def bufferEncoder: Encoder[Long] = Encoders.scalaLong
  def outputEncoder: Encoder[Long] = Encoders.scalaLong
}

class SlidingWindowAggregationSuite extends AnyFunSuite with SparkSessionFixture {

  private def randomEvents(seed: Long, rows: Int, keys: Int, timeRange: Int, withNullKeys: Boolean): DataFrame = {
    val rnd = new Random(seed)
    val data = (0 until rows).map { _ =>
      val k = if (withNullKeys && rnd.nextInt(10) == 0) null else s"k${rnd.nextInt(keys)}"
      val t = rnd.nextInt(timeRange).toLong - timeRange / 3 // negative times too
      val v = if (rnd.nextInt(12) == 0) null else Long.box(rnd.nextInt(100).toLong - 20)
      Row(k, t, v)
    }
    val schema = StructType(Seq(
      StructField("k", StringType), StructField("t", LongType), StructField("v", LongType)))
    spark.createDataFrame(spark.sparkContext.parallelize(data, 3), schema)
  }

  /**
   * The contract computed by brute force with plain Spark: candidate starts t - S and t + 1 for
   * every record time of a key, each window [start, start + S] joined with the records inside it
   * (so empty ones vanish), then the same aggregates in an ordinary groupBy.
   */
  private def reference(events: DataFrame, size: Long, aggs: Seq[org.apache.spark.sql.Column]): DataFrame = {
    val times = events.where(col("t").isNotNull).select(col("k"), col("t")).distinct()
    val starts = times.select(col("k"), (col("t") - size).as("start"))
      .union(times.select(col("k"), (col("t") + 1).as("start"))).distinct()
    val windows = starts.withColumn("end", col("start") + size)
    val joined = windows.as("w").join(events.as("e"),
      col("w.k") <=> col("e.k") && col("e.t").between(col("w.start"), col("w.end")))
    joined.groupBy(col("w.k").as("k"), col("w.start").as("start"), col("w.end").as("end")).agg(aggs.head, aggs.tail: _*)
  }

  private def windowed(events: DataFrame, size: Long, aggs: Seq[org.apache.spark.sql.Column]): DataFrame =
    events.groupBy(col("k"), window(col("t"), SlidingWindows.of(size))).agg(aggs.head, aggs.tail: _*)
      .select(col("k") +: col("window.start").as("start") +: col("window.end").as("end") +:
        aggs.indices.map(i => col(s"a$i")): _*)

  private def assertSameRows(actual: DataFrame, expected: DataFrame): Unit = {
    val a = actual.collect().map(_.toSeq.map(normalize)).sortBy(_.mkString("|")).toSeq
    val e = expected.collect().map(_.toSeq.map(normalize)).sortBy(_.mkString("|")).toSeq
    assert(a.length == e.length, s"row counts differ: ${a.length} vs ${e.length}")
    a.zip(e).foreach { case (x, y) => assert(x == y, s"\nactual   $x\nexpected $y") }
  }

  private def normalize(v: Any): Any = v match {
    case d: Double => BigDecimal(d).setScale(6, BigDecimal.RoundingMode.HALF_UP)
    case s: scala.collection.Seq[_] => s.map(normalize).toList
    case other => other
  }

  private def numbered(aggs: org.apache.spark.sql.Column*): Seq[org.apache.spark.sql.Column] =
    aggs.zipWithIndex.map { case (c, i) => c.as(s"a$i") }

  private val sumOfSquares = udaf(SumOfSquares)

  private def manyAggregates: Seq[org.apache.spark.sql.Column] = numbered(
    sum("v"), count(lit(1)), count("v"), avg("v"), min("v"), max("v"), stddev_samp("v"),
    array_sort(collect_list("v")), array_sort(collect_set("v")), count_if(col("v") > 10),
    bool_and(col("v") > -100), percentile_approx(col("v"), lit(0.5), lit(100000)),
    sumOfSquares(col("v")), sum(col("v") * 2) + 1, max_by(col("v"), col("v")),
    expr("sum(v) FILTER (WHERE v % 2 = 0)"), approx_count_distinct("v"))

  for ((seed, size) <- Seq((1L, 10L), (2L, 1L), (3L, 37L), (4L, 500L), (5L, 3L))) {
    test(s"matches the brute-force contract on random data (seed $seed, size $size)") {
      val events = randomEvents(seed, rows = 400, keys = 5, timeRange = 300, withNullKeys = true)
      val aggs = manyAggregates
      assertSameRows(windowed(events, size, aggs), reference(events, size, aggs))
    }
  }

  test("the SEMANTICS.md example, with collect_list in time order") {
    import spark.implicits._
    val events = Seq(("a", 10L, 1L), ("a", 14L, 2L), ("a", 15L, 3L)).toDF("k", "t", "v")
    val out = events.groupBy(col("k"), window(col("t"), SlidingWindows.of(10L)))
      .agg(collect_list("v").as("l"), first("v").as("f"), last("v").as("z"))
      .select(col("window.start"), col("window.end"), col("l"), col("f"), col("z"))
      .orderBy("start").collect().map(r => (r.getLong(0), r.getLong(1), r.getSeq[Long](2), r.getLong(3), r.getLong(4)))
    assert(out.toSeq == Seq(
      (0L, 10L, Seq(1L), 1L, 1L), (4L, 14L, Seq(1L, 2L), 1L, 2L), (5L, 15L, Seq(1L, 2L, 3L), 1L, 3L),
      (11L, 21L, Seq(2L, 3L), 2L, 3L), (15L, 25L, Seq(3L), 3L, 3L)))
  }

  test("order-sensitive aggregates see rows in time order, across many partials") {
    val rnd = new Random(7)
    val times = rnd.shuffle((0 until 300).map(_.toLong * 3)) // distinct, arriving shuffled
    import spark.implicits._
    val events = times.map(t => ("x", t, t * 10)).toDF("k", "t", "v").repartition(3)
    val out = events.groupBy(col("k"), window(col("t"), SlidingWindows.of(40L)))
      .agg(collect_list("v").as("l"), first("v").as("f"), last("v").as("z"), min("v").as("lo"), max("v").as("hi"))
      .collect()
    assert(out.length > 300)
    out.foreach { r =>
      val l = r.getSeq[Long](2)
      assert(l == l.sorted, s"not in time order: $l")
      assert(r.getLong(3) == r.getLong(5) && r.getLong(4) == r.getLong(6))
    }
  }

  test("left windows equal Spark's OVER (RANGE BETWEEN S PRECEDING AND CURRENT ROW) frames") {
    val events = randomEvents(11, rows = 600, keys = 4, timeRange = 500, withNullKeys = false)
    events.createOrReplaceTempView("over_events")
    val over = spark.sql(
      """SELECT DISTINCT k, t AS end,
        |  sum(v) OVER w AS s, count(v) OVER w AS c, max(v) OVER w AS m, min(v) OVER w AS lo
        |FROM over_events WINDOW w AS (PARTITION BY k ORDER BY t RANGE BETWEEN 25 PRECEDING AND CURRENT ROW)""".stripMargin)
    val ours = events.groupBy(col("k"), window(col("t"), SlidingWindows.of(25L)))
      .agg(sum("v").as("s"), count("v").as("c"), max("v").as("m"), min("v").as("lo"))
      .select(col("k"), col("window.end").as("end"), col("s"), col("c"), col("m"), col("lo"))
      .join(events.select(col("k"), col("t").as("end")).distinct(), Seq("k", "end")) // left windows only
    assertSameRows(ours.select("k", "end", "s", "c", "m", "lo"), over.select("k", "end", "s", "c", "m", "lo"))
  }

  test("timestamps: durations as sizes, windows of the column's type, times before the epoch") {
    val rows = Seq(
      Row("u", java.sql.Timestamp.valueOf("1969-12-31 23:59:50"), 1L),
      Row("u", java.sql.Timestamp.valueOf("1970-01-01 00:00:05"), 2L),
      Row("u", java.sql.Timestamp.valueOf("1970-01-01 00:00:20.5"), 4L))
    val schema = StructType(Seq(StructField("k", StringType), StructField("ts", TimestampType), StructField("v", LongType)))
    val events = spark.createDataFrame(spark.sparkContext.parallelize(rows), schema)
    val out = events.groupBy(col("k"), window(col("ts"), SlidingWindows.of("15 seconds"))).agg(sum("v").as("s"))
    assert(out.schema("window").dataType == WindowGroupingExpression.structType(TimestampType))
    val got = out.select(col("window.start").cast("string").as("start"), col("window.end").cast("string").as("end"), col("s"))
      .orderBy("start").collect().map(r => (r.getString(0), r.getString(1), r.getLong(2))).toSeq
    // -10 s, +5 s, +20.5 s with S = 15 s: the right window of +5 s ends at 20.000001 s and is empty
    assert(got == Seq(
      ("1969-12-31 23:59:35", "1969-12-31 23:59:50", 1L),
      ("1969-12-31 23:59:50", "1970-01-01 00:00:05", 3L),
      ("1969-12-31 23:59:50.000001", "1970-01-01 00:00:05.000001", 2L),
      ("1970-01-01 00:00:05.5", "1970-01-01 00:00:20.5", 4L)))
    // exact expectation from the contract, via the brute-force reference on microsecond ticks:
    val micros = events.select(col("k"), unix_micros(col("ts")).as("t"), col("v"))
    val expected = reference(micros, 15000000L, Seq(sum("v").as("s")))
      .select(timestamp_micros(col("start")).cast("string").as("start"), timestamp_micros(col("end")).cast("string").as("end"), col("s"))
      .orderBy("start").collect().map(r => (r.getString(0), r.getString(1), r.getLong(2))).toSeq
    assert(got == expected)
  }
}
