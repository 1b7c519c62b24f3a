package windowagg.spark

import java.sql.Timestamp

import scala.util.Random

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.ProjectExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.windowagg.SparkInternals
import org.scalatest.funsuite.AnyFunSuite

import windowagg._
import windowagg.functions.window
import windowagg.spark.common.AggregateBeforeShuffle

/**
 * The planner's choice of aggregating before the shuffle in batch: when it does, why it says it
 * does or does not, what it ships, and that every kind's results and metrics are the same either way
 * over randomly partitioned input (one key's rows spread over many map tasks, duplicate times,
 * null times, times in no window); and that the projection over the aggregation is the operator's own.
 */
class AggregateBeforeShuffleSuite extends AnyFunSuite with SparkSessionFixture {

  private def withMode[T](mode: String)(body: => T): T = {
    spark.conf.set(AggregateBeforeShuffle.Conf, mode)
    try body finally spark.conf.unset(AggregateBeforeShuffle.Conf)
  }

  /** `rows` rows over 4 keys within `spanSeconds`, times repeating, every 15th time null, in 7 random partitions. */
  private def events(seed: Long, rows: Int, spanSeconds: Long): DataFrame = {
    import spark.implicits._
    val rnd = new Random(seed)
    val pool = Seq.fill(rows / 3)((rnd.nextDouble() * spanSeconds * 1000000L).toLong)
    val data = Seq.fill(rows)((s"k${rnd.nextInt(4)}", if (rnd.nextInt(15) == 0) None else Some(pool(rnd.nextInt(pool.length))),
      rnd.nextInt(100).toLong - 10))
    data.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v")).repartition(7)
  }

  private val orderFree = Seq(sum("v").as("s"), count(lit(1)).as("n"), min("v").as("lo"), max("v").as("hi"), avg("v").as("a"),
    count(when(col("v") > 50, 1)).as("big"))

  private def windowed(df: DataFrame, definition: WindowDefinition): DataFrame =
    df.groupBy(col("k"), window(col("ts"), definition)).agg(orderFree.head, orderFree.tail: _*)

  private def operator(df: DataFrame): WindowAggregateExec =
    SparkInternals.collectOperators(SparkInternals.executedPlan(df)) { case e: WindowAggregateExec => e }.head

  private def rows(df: DataFrame): Seq[String] = df.collect().map(_.toString).toSeq.sorted

  private val kinds: Seq[(String, WindowDefinition, Long)] = Seq(
    ("sliding", SlidingWindows.of("30 seconds"), 600L),
    ("session", SessionWindows.withInactivityGap("20 seconds"), 600L),
    ("tumbling", TimeWindows.of("1 minute"), 600L),
    ("hopping", TimeWindows.of("50 seconds").advanceBy("20 seconds").withOffset("7 seconds"), 600L),
    ("cumulative", CumulativeWindows.of("20 seconds", "2 minutes"), 600L),
    ("calendar days in New York", CalendarWindows.days(1).inZone("America/New_York"), 30 * 86400L),
    ("unlimited from a start", UnlimitedWindows.of().startOn("1970-01-01T00:02:00Z"), 600L),
    ("custom: fiscal quarters", CustomWindows.of(new windowagg.examples.FiscalQuarters(2)), 800 * 86400L),
    ("custom: odd minutes only", CustomWindows.of(new WindowKindConformanceSuite.OddMinutes), 600L))

  for ((name, definition, span) <- kinds) {
    test(s"$name: aggregated before the shuffle or not, the same windows and metrics over randomly partitioned rows") {
      for (seed <- 1 to 2) {
        val df = events(seed, 400, span)
        val (always, never) = (withMode("always")(windowed(df, definition)), withMode("never")(windowed(df, definition)))
        assert(withMode("always")(operator(always)).partials.isDefined)
        assert(withMode("never")(operator(never)).partials.isEmpty)
        val (a, n) = (withMode("always")(rows(always)), withMode("never")(rows(never)))
        assert(a == n, s"seed $seed")
        val (ma, mn) = (windowagg.functions.metrics(always), windowagg.functions.metrics(never))
        assert(ma == mn, s"seed $seed")
        assert(ma.get("inputRows") == 400L && ma.get("nullTimeRows") > 0L, s"$ma")
      }
    }
  }

  test("auto aggregates before the shuffle where the kind's partials span many times, and EXPLAIN says why") {
    val df = events(3, 200, 600L)
    def choice(definition: WindowDefinition, aggregates: Seq[org.apache.spark.sql.Column] = orderFree): String =
      operator(df.groupBy(col("k"), window(col("ts"), definition)).agg(aggregates.head, aggregates.tail: _*)).choice.toString
    assert(choice(TimeWindows.of("1 minute")) == "partials aggregated before the shuffle (per key and slice of the definition)")
    assert(choice(CalendarWindows.months(1)).startsWith("partials aggregated"))
    assert(choice(CumulativeWindows.of("20 seconds", "2 minutes")).startsWith("partials aggregated"))
    assert(choice(SlidingWindows.of("30 seconds")) ==
      s"rows (each time is its own partial, so little would merge; ${AggregateBeforeShuffle.Conf}=always forces it)")
    assert(choice(SessionWindows.withInactivityGap("20 seconds")).startsWith("rows (each time is its own partial"))
    assert(choice(TimeWindows.of("1 minute"), Seq(collect_list("v"))) == "rows (collect_list depends on the order its rows are merged in)")
    assert(choice(CountWindows.of(3)) == "rows (Storm's windows are cut at rows)")
    withMode("never")(assert(choice(TimeWindows.of("1 minute")) == s"rows (${AggregateBeforeShuffle.Conf}=never)"))
    val explained = df.groupBy(col("k"), window(col("ts"), TimeWindows.of("1 minute"))).count()
      .queryExecution.explainString(org.apache.spark.sql.execution.SimpleMode)
    assert(explained.contains("input=partials aggregated before the shuffle (per key and slice of the definition)"), explained)
    assert(explained.contains("HashAggregate") && explained.contains("partial_count"), explained)
  }

  test("a key's rows in one slice cross the shuffle as one partial per map task, FILTERs applied before") {
    import spark.implicits._
    val base = Timestamp.valueOf("2024-03-01 10:00:00").getTime * 1000L
    // 2,000 rows of 2 keys over 10 minutes, in 4 map tasks: at most 2 keys x 10 minutes x 4 tasks partials
    val df = spark.sparkContext.parallelize((0 until 2000).map(i => (s"k${i % 2}", base + i * 300000L, i.toLong)), 4)
      .toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
    val out = df.groupBy(col("k"), window(col("ts"), TimeWindows.of("1 minute")))
      .agg(count(lit(1)).as("n"), sum("v").as("s"), count(when(col("v") % 2 === 0, 1)).as("even"))
    val got = out.collect()
    val expected = (0 until 2000).groupBy(i => (s"k${i % 2}", (i * 300000L) / 60000000L)).map { case ((k, minute), is) =>
      (k, minute, is.length.toLong, is.map(_.toLong).sum, is.count(_ % 2 == 0).toLong)
    }
    assert(got.map(r => (r.getString(0), (r.getStruct(1).getTimestamp(0).getTime * 1000L - base) / 60000000L, r.getLong(2),
      r.getLong(3), r.getLong(4))).toSet == expected.toSet)
    val shuffled = SparkInternals.collectOperators(SparkInternals.executedPlan(out)) { case s: ShuffleExchangeExec => s }
      .map(_.metrics("shuffleRecordsWritten").value).sum
    assert(shuffled > 0 && shuffled <= 2 * 10 * 4, s"$shuffled partials shuffled")
    assert(windowagg.functions.metrics(out).get("inputRows") == 2000L)
  }

  test("the projection over the aggregation is the operator's output: keys, bounds and aggregates in expressions; declarative, imperative and typed aggregates") {
    val df = events(4, 300, 600L)
    val definition = SlidingWindows.of("30 seconds")
    val fused = df.groupBy(col("k"), window(col("ts"), definition))
      .agg((sum("v") * 2 + 1).as("x"), sort_array(collect_list("v")).as("vs"), max("v").as("hi"), approx_count_distinct("v").as("distinct"))
      .select(upper(col("k")).as("key"), col("window.start").as("start"), col("x"), col("vs"), col("hi"), col("distinct"))
    val got = fused.collect().map(r => (r.getString(0), r.getTimestamp(1), r.getLong(2), r.getSeq[Long](3), r.getLong(4), r.getLong(5))).toSet
    val plan = SparkInternals.executedPlan(fused)
    assert(SparkInternals.collectOperators(plan) { case p: ProjectExec => p }.isEmpty, plan.toString)
    val plain = df.groupBy(col("k"), window(col("ts"), definition))
      .agg(sum("v").as("s"), collect_list("v").as("vs"), max("v").as("hi"), approx_count_distinct("v").as("distinct")).collect()
    val expected = plain.map(r => (r.getString(0).toUpperCase, r.getStruct(1).getTimestamp(0), r.getLong(2) * 2 + 1,
      r.getSeq[Long](3).sorted, r.getLong(4), r.getLong(5))).toSet
    assert(got.nonEmpty && got == expected)
    // a nondeterministic projection stays Spark's own, over the operator's plain output
    val withRandom = df.groupBy(col("k"), window(col("ts"), definition)).agg(sum("v").as("s")).select(col("s"), rand(1).as("r"))
    assert(withRandom.collect().length == plain.length)
    assert(SparkInternals.collectOperators(SparkInternals.executedPlan(withRandom)) { case p: ProjectExec => p }.nonEmpty)
  }

  test("over a file source, under a stage of generated code that ships the operator to the executors, the same windows") {
    val df = events(5, 300, 600L)
    val dir = java.nio.file.Files.createTempDirectory("windowagg-file-source")
    try {
      df.write.mode("overwrite").parquet(dir.toString)
      val fromFiles = spark.read.parquet(dir.toString)
      for (mode <- Seq("always", "never")) withMode(mode) {
        // a sort over the operator is generated code holding the plan under it, which Spark serializes into each task
        def sorted(in: DataFrame): DataFrame = windowed(in, SlidingWindows.of("30 seconds")).sortWithinPartitions(col("k"))
        assert(rows(sorted(fromFiles)).nonEmpty && rows(sorted(fromFiles)) == rows(sorted(df)), mode)
      }
    } finally org.apache.commons.io.FileUtils.deleteDirectory(dir.toFile)
  }
}
