package windowagg.spark

import java.sql.Timestamp
import java.time.{DayOfWeek, Instant, ZoneId, ZoneOffset}
import java.time.temporal.ChronoUnit

import scala.util.Random

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.OutputMode
import org.scalatest.funsuite.AnyFunSuite

import windowagg._
import windowagg.core.ReferenceWindows
import windowagg.core.ReferenceWindows._
import windowagg.core.ReferenceWindows.Storm.{Rows, Ticks}
import windowagg.examples.FiscalQuarters
import windowagg.functions.window

/**
 * One conformance suite for every kind of window the engine drives, built-in and user-defined:
 * batch equals the kind's windows written from the contract's rules ([[ReferenceWindows]], given the
 * definition's parameters as plain values, tables read by plain Spark), SQL (`windows(...)` and
 * `window_agg(...)`) equals the DataFrame API, streaming equals batch on on-time data under random
 * micro-batch splits, and late rows are counted and emitted. Adding a kind is one line in `kinds`:
 * its definition and its reference.
 */
class WindowKindConformanceSuite extends AnyFunSuite with SparkSessionFixture {
  import WindowKindConformanceSuite._

  private val minute = 60L
  private val day = 86400L
  /** Seconds in ticks of the events' time column (microseconds). */
  private def seconds(n: Long): Long = n * 1000000L

  private val newYork = ZoneId.of("America/New_York")
  private val sessionZone = ZoneOffset.UTC
  /** Where unlimited windows end on a timestamp column (the contract's last midnight every client can show). */
  private val lastShownMidnight = seconds(Instant.parse("9999-12-31T00:00:00Z").getEpochSecond)

  /** Each kind, with its reference and the span (in seconds, around the epoch) its test times are drawn from. */
  private val kinds: Seq[Kind] = Seq(
    Kind("sliding", SlidingWindows.of("30 seconds"), everyKey(Sliding(seconds(30))), 10 * minute),
    Kind("session", SessionWindows.withInactivityGap("20 seconds"), everyKey(Sessions(seconds(20))), 10 * minute),
    Kind("tumbling", TimeWindows.of("1 minute"), everyKey(Hopping(seconds(60), seconds(60), 0)), 10 * minute),
    Kind("tumbling with an offset", TimeWindows.of("1 minute").withOffset("15 seconds"), everyKey(Hopping(seconds(60), seconds(60), seconds(15))),
      10 * minute),
    Kind("hopping", TimeWindows.of("1 minute").advanceBy("20 seconds"), everyKey(Hopping(seconds(60), seconds(20), 0)), 10 * minute),
    Kind("hopping, size no multiple of the advance", TimeWindows.of("50 seconds").advanceBy("20 seconds").withOffset("7 seconds"),
      everyKey(Hopping(seconds(50), seconds(20), seconds(7))), 10 * minute),
    Kind("cumulative", CumulativeWindows.of("20 seconds", "2 minutes"), everyKey(Cumulative(seconds(20), seconds(120), 0)), 10 * minute),
    Kind("calendar days in New York", CalendarWindows.days(1).inZone("America/New_York"),
      everyKey(Calendar(ChronoUnit.DAYS, 1, 1, newYork)), 30 * day),
    // 1969 and 1970 each have two daylight-saving changes in New York: weeks of 167 and 169 hours
    Kind("calendar weeks from Sunday in New York, across daylight-saving changes", CalendarWindows.weeks(1, "SUNDAY").inZone("America/New_York"),
      everyKey(Calendar(ChronoUnit.WEEKS, 1, 1, newYork, DayOfWeek.SUNDAY)), 800 * day),
    Kind("calendar quarters every month", CalendarWindows.months(3).advanceBy(1), everyKey(Calendar(ChronoUnit.MONTHS, 3, 1, sessionZone)),
      800 * day),
    Kind("unlimited from the epoch", UnlimitedWindows.of(), everyKey(Unlimited(0, lastShownMidnight)), 10 * minute,
      finalInStreaming = false),
    Kind("unlimited from a start", UnlimitedWindows.of().startOn("1970-01-01T00:02:00Z"), everyKey(Unlimited(seconds(120), lastShownMidnight)),
      10 * minute, finalInStreaming = false),
    Kind("custom: fiscal quarters (Java)", CustomWindows.of(new FiscalQuarters(2)), everyKey(ReferenceWindows.FiscalQuarters(2, sessionZone)),
      800 * day),
    Kind("custom: business days (Scala, by class name)", CustomWindows.of("windowagg.examples.BusinessDays"),
      everyKey(BusinessDays(sessionZone)), 30 * day),
    Kind("custom: odd minutes only (times left out)", CustomWindows.of(new OddMinutes), everyKey(OddMinutesReference), 10 * minute),
    Kind("table: overlapping windows of many sizes, with gaps", TableWindows.of(WindowsTableName), _ => Listed(tableWindows),
      10 * minute),
    Kind("table per key: each key its own windows, k2 none", TableWindows.of(KeyWindowsTableName).perKey("k"),
      k => Listed(keyTableWindows.getOrElse(k, Nil)), 10 * minute),
    // Storm's windows; count windows break ties by v, as the reference orders rows
    Kind("count: every row (Storm's Count(5))", CountWindows.of(5).tieBreak("v"), everyKey(Storm(Rows(5), Rows(1))), 10 * minute),
    Kind("count: every 3 rows", CountWindows.of(7).slide(3).tieBreak("v"), everyKey(Storm(Rows(7), Rows(3))), 10 * minute,
      evaluatedEveryRows = 3),
    Kind("count: tumbling", CountWindows.tumbling(4).tieBreak("v"), everyKey(Storm(Rows(4), Rows(4))), 10 * minute,
      evaluatedEveryRows = 4),
    Kind("count: every 20 seconds", CountWindows.of(5).every("20 seconds").tieBreak("v"), everyKey(Storm(Rows(5), Ticks(seconds(20)))),
      10 * minute),
    Kind("duration: trailing per row", DurationWindows.of("30 seconds"), everyKey(Storm(Ticks(seconds(30)), Rows(1))), 10 * minute),
    Kind("duration: every 3 rows", DurationWindows.of("30 seconds").slide(3).tieBreak("v"), everyKey(Storm(Ticks(seconds(30)), Rows(3))),
      10 * minute, evaluatedEveryRows = 3),
    Kind("duration: every 20 seconds", DurationWindows.of("1 minute").every("20 seconds"), everyKey(Storm(Ticks(seconds(60)), Ticks(seconds(20)))),
      10 * minute),
    Kind("duration: tumbling", DurationWindows.tumbling("1 minute"), everyKey(Storm(Ticks(seconds(60)), Ticks(seconds(60)))), 10 * minute))

  private def everyKey(reference: ReferenceWindows): String => ReferenceWindows = _ => reference

  /** The windows table's rows as plain Spark reads them, in microseconds. */
  private lazy val tableWindows: Seq[(Long, Long)] =
    spark.table(WindowsTableName).select(unix_micros(col("start")), unix_micros(col("end"))).collect()
      .map(r => (r.getLong(0), r.getLong(1))).toSeq

  /** The per-key table's rows as plain Spark reads them, by key. */
  private lazy val keyTableWindows: Map[String, Seq[(Long, Long)]] =
    spark.table(KeyWindowsTableName).select(col("k"), unix_micros(col("start")), unix_micros(col("end"))).collect()
      .map(r => (r.getString(0), (r.getLong(1), r.getLong(2)))).toSeq.groupMap(_._1)(_._2)

  override def beforeAll(): Unit = {
    super.beforeAll()
    import spark.implicits._
    // windows of 5 seconds to 4 minutes starting in the `spans` spans from one before the epoch: over the
    // times every test draws (late rows come up to 12 spans after the epoch), and a third of them where
    // batch and streaming tests draw theirs (up to 2 spans), so that a window lost or misread holds rows
    val rnd = new Random(17)
    val span = 10 * minute * 1000000L
    def drawn(n: Int, spans: Int): Seq[(Long, Long)] = Seq.fill(n) {
      val start = -span + (rnd.nextDouble() * spans * span).toLong
      (start, start + 5000000L + rnd.nextInt(236) * 1000000L)
    }
    def windows(n: Int): Seq[(Long, Long)] = drawn(n, 13) ++ drawn(n / 2, 3)
    windows(120).toDF("s", "e").select(timestamp_micros(col("s")).as("start"), timestamp_micros(col("e")).as("end"))
      .createOrReplaceTempView(WindowsTableName)
    // per key: k0 and k1 (and the late-row test's key a) have windows of their own, k2 none
    Seq("k0", "k1", "a").flatMap(k => windows(60).map { case (s, e) => (k, s, e) }).toDF("k", "s", "e")
      .select(col("k"), timestamp_micros(col("s")).as("start"), timestamp_micros(col("e")).as("end"))
      .createOrReplaceTempView(KeyWindowsTableName)
  }

  private val keys = Seq("k0", "k1", "k2")

  private def events(kind: Kind, seed: Long, n: Int): Seq[(String, Long, Long)] = {
    val rnd = new Random(seed)
    val half = kind.spanSeconds * 1000000L / 2
    // a pool of times, so that times repeat; centred on the epoch, so that half are before 1970
    val drawn = Seq.fill(n / 4)(((rnd.nextDouble() * 2 - 1) * half).toLong)
    // as many on or beside the bounds of the windows the drawn times are in or make: where an off-by-one shows
    val edges = rnd.shuffle(drawn.flatMap(t => keys.flatMap(k => kind.reference(k).edges(t))).distinct.filter(math.abs(_) <= half))
    val pool = drawn ++ edges.take(n / 2 - drawn.length)
    Seq.fill(n)((keys(rnd.nextInt(keys.length)), pool(rnd.nextInt(pool.length)), rnd.nextInt(100).toLong))
  }

  private def frame(rows: Seq[(String, Long, Long)]): DataFrame = {
    import spark.implicits._
    rows.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
  }

  private val aggregates = Seq(sum("v").as("s"), count(lit(1)).as("n"), array_sort(collect_list("v")).as("l"))
  private val aggregatesSql = "sum(v) AS s, count(1) AS n, array_sort(collect_list(v)) AS l"

  private def dataFrameApi(df: DataFrame, definition: WindowDefinition, options: Map[String, String] = Map.empty): DataFrame =
    df.groupBy(col("k"), window(col("ts"), definition, options)).agg(aggregates.head, aggregates.tail: _*)
      .select(col("k"), col("window.start").as("start"), col("window.end").as("end"), col("s"), col("n"), col("l"))

  private def result(df: DataFrame): Seq[Out] = df.collect().map { r =>
    Out(r.getString(0), micros(r.getAs[Timestamp](1)), micros(r.getAs[Timestamp](2)), r.getLong(3), r.getLong(4),
      r.getSeq[Long](5).toVector)
  }.toSeq.sortBy(_.order)

  private def expected(kind: Kind, rows: Seq[(String, Long, Long)]): Seq[Out] = {
    rows.groupBy(_._1).toSeq.flatMap { case (k, ofKey) =>
      // rows sharing a time in the order of v: the tie-break the count kinds name
      kind.reference(k).windows(ofKey.map(r => (r._2, r._3)).sortBy(_._2)).map { case ((start, end), records) =>
        val values = records.map(_._2)
        Out(k, start, end, values.sum, values.length.toLong, values.sorted)
      }
    }.sortBy(_.order)
  }

  /**
   * The kind's windows streamed from `batches` (one micro-batch each) with the watermark `delay` behind,
   * then two far-future rows that make every window final: the final windows, or with updates each
   * window's last value (the one with the most rows).
   */
  private def streamed(kind: Kind, name: String, delay: String, batches: Seq[Seq[(String, Long, Long)]]): Seq[Out] = {
    import spark.implicits._
    val input = MemoryStream[(String, Long, Long)](spark)
    val stream = input.toDF().toDF("k", "t", "v")
      .select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
      .withWatermark("ts", delay)
    val (options, mode) =
      if (kind.finalInStreaming) (Map.empty[String, String], OutputMode.Append()) else (Map("emit" -> "updates"), OutputMode.Update())
    val query = startWithoutNoDataBatches {
      dataFrameApi(stream, kind.definition, options).where(col("k") =!= "flush")
        .writeStream.format("memory").queryName(name).outputMode(mode).start()
    }
    try {
      batches.foreach { part =>
        input.addData(part)
        query.processAllAvailable()
      }
      // far-future rows move the watermark past every window of the real rows
      val far = kind.spanSeconds * 1000000L * 20
      input.addData(Seq(("flush", far, 0L)))
      query.processAllAvailable()
      input.addData(Seq(("flush", far * 2, 0L)))
      query.processAllAvailable()
    } finally query.stop()
    if (kind.finalInStreaming) result(spark.table(name))
    else result(spark.table(name)).groupBy(o => (o.k, o.start, o.end)).values.map(_.maxBy(_.count)).toSeq.sortBy(_.order)
  }

  for (kind <- kinds) {
    test(s"${kind.name}: batch equals the windows of the contract's rules") {
      for (seed <- 1 to 3) {
        val rows = events(kind, seed, 200)
        assert(result(dataFrameApi(frame(rows), kind.definition)) == expected(kind, rows), s"seed $seed")
      }
    }

    test(s"${kind.name}: SQL windows(...) and window_agg(...) equal the DataFrame API") {
      val rows = events(kind, 7, 150)
      frame(rows).createOrReplaceTempView("conformance_events")
      val expected = result(dataFrameApi(frame(rows), kind.definition))
      val spec = kind.definition.spec.replace("'", "''")
      val grouped = spark.sql(
        s"""SELECT k, window.start, window.end, $aggregatesSql FROM conformance_events
           |GROUP BY k, windows(ts, '$spec')""".stripMargin)
      assert(result(grouped) == expected)
      val table = spark.sql(
        s"""SELECT * FROM window_agg(TABLE(conformance_events) PARTITION BY k ORDER BY (ts), '$spec', '$aggregatesSql')""")
      assert(table.columns.toSeq == Seq("k", "window_start", "window_end", "s", "n", "l"))
      assert(result(table) == expected)
      assert(WindowSpec.parse(kind.definition.spec) == kind.definition, "the spec parses back to the definition")
    }

    test(s"${kind.name}: streaming ${if (kind.finalInStreaming) "final windows" else "last updates"} equal batch under random micro-batch splits") {
      // Spark's watermark starts at the epoch: times before it would be late in the first micro-batch
      val rows = events(kind, 11, 150).map { case (k, t, v) => (k, t + kind.spanSeconds * 1000000L, v) }
      val shuffled = new Random(3).shuffle(rows)
      val cuts = (Seq(0, shuffled.length) ++ Seq.fill(3)(new Random(5).nextInt(shuffled.length))).distinct.sorted
      val got = streamed(kind, s"conformance_${kinds.indexOf(kind)}", s"${kind.spanSeconds * 4} seconds",
        cuts.zip(cuts.tail).map { case (a, b) => shuffled.slice(a, b) })
      assert(got == result(dataFrameApi(frame(rows), kind.definition)))
    }

    test(s"${kind.name}: streaming in time order, the watermark just behind, equals batch as windows close micro-batch by micro-batch") {
      // no row is late, and each micro-batch's watermark closes the windows the one before it ended
      val rows = events(kind, 13, 150).map { case (k, t, v) => (k, t + kind.spanSeconds * 1000000L, v) }.sortBy(_._2)
      val got = streamed(kind, s"conformance_ordered_${kinds.indexOf(kind)}", "0 seconds", rows.grouped(rows.length / 6 + 1).toSeq)
      assert(got == result(dataFrameApi(frame(rows), kind.definition)))
    }

    if (!kind.finalInStreaming) test(s"${kind.name}: streaming with emit=final is refused, since no window is ever final") {
      import spark.implicits._
      val stream = MemoryStream[(String, Long, Long)](spark).toDF().toDF("k", "t", "v")
        .select(col("k"), timestamp_micros(col("t")).as("ts"), col("v")).withWatermark("ts", "1 minute")
      val e = intercept[org.apache.spark.sql.AnalysisException](dataFrameApi(stream, kind.definition))
      assert(e.getMessage.contains("never closes") && e.getMessage.contains("updates"))
    }

    if (kind.finalInStreaming) test(s"${kind.name}: a late row is counted and emitted, on-time rows are windowed") {
      import spark.implicits._
      val input = MemoryStream[(String, Long, Long)](spark)
      val stream = input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
      val definition = kind.definition match {
        case d @ (_: CountWindows | _: DurationWindows) => WindowSpec.parse(s"${d.spec} lag 1 second")
        case d: WindowDefinition if d.spec.contains(" grace ") => d
        case d => WindowSpec.parse(s"${d.spec} grace 1 second")
      }
      val name = s"conformance_late_${kinds.indexOf(kind)}"
      val query = startWithoutNoDataBatches {
        stream.groupBy(col("k"), window(col("ts"), definition, Map("lateRows" -> "emit"))).agg(sum("v").as("s"))
          .writeStream.format("memory").queryName(name).outputMode("append").start()
      }
      val span = kind.spanSeconds * 1000000L
      def inAWindow(from: Long): Long = Iterator.iterate(from)(_ + 1000000L).find(kind.reference("a").holds).get
      try {
        input.addData(("a", inAWindow(span * 2), 1L))
        query.processAllAvailable()
        input.addData(("a", inAWindow(span * 10), 2L)) // the watermark moves far beyond every window holding the first row
        query.processAllAvailable()
        input.addData(("a", inAWindow(span * 3), 4L), ("a", inAWindow(span * 10), 8L)) // late; on time
        query.processAllAvailable()
        val out = spark.table(name)
        val late = out.where(col("late_reason") === "late").collect()
        assert(late.length == 1)
        assert(late.head.getAs[Row]("late_row").getAs[Long]("v") == 4L)
        val windowed = out.where(col("late_reason").isNull).select("s").collect().map(_.getLong(0)).toSet
        // the first row's windows are final and hold it alone (kinds evaluated every few rows have none yet);
        // the late row is in none
        assert(windowed == (if (kind.oneRowMakesAWindow) Set(1L) else Set.empty[Long]))
        val metrics = query.recentProgress.flatMap(p => Option(p.observedMetrics.get("windowagg")))
        assert(metrics.map(_.getAs[Long]("late_rows")).sum == 1L)
      } finally query.stop()
    }
  }

  /**
   * Rows with ids, some with a null time, for the accounting tests: `(id, key, time or null, value)`,
   * times drawn as in `events`.
   */
  private def identified(kind: Kind, seed: Long, n: Int): Seq[(Long, String, Option[Long], Long)] = {
    val rnd = new Random(seed)
    events(kind, seed, n).zipWithIndex.map { case ((k, t, v), i) =>
      (i.toLong, k, if (rnd.nextInt(20) == 0) None else Some(t + kind.spanSeconds * 1000000L), v)
    }
  }

  /** The ids of the rows in the windows of `windows` (any number of times each). */
  private def windowedIds(windows: Seq[Row]): Set[Long] =
    windows.flatMap(_.getAs[scala.collection.Seq[Long]]("ids")).toSet

  for (kind <- kinds) {
    test(s"${kind.name}: batch accounts for every row: in a window, or counted as null time or in no window") {
      import spark.implicits._
      for (seed <- 1 to 2) {
        val rows = identified(kind, seed, 200)
        val df = rows.toDF("id", "k", "t", "v").select(col("id"), col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
        val windows = df.groupBy(col("k"), window(col("ts"), kind.definition)).agg(collect_list("id").as("ids"))
        val inWindows = windowedIds(windows.collect().toSeq)
        val m = windowagg.functions.metrics(windows)
        val left = Seq("nullTimeRows", "invalidGapRows", "unwindowedRows").map(m.get(_).longValue).sum
        assert(m.get("inputRows") == rows.length.toLong, s"seed $seed")
        assert(m.get("nullTimeRows") == rows.count(_._3.isEmpty).toLong, s"seed $seed")
        assert(inWindows.size + left == rows.length, s"seed $seed: ${inWindows.size} rows in windows, $left left out: $m")
      }
    }

    test(s"${kind.name}: streaming accounts for every row under random arrival: in a window, or routed with its reason") {
      import spark.implicits._
      val mode = if (kind.finalInStreaming) OutputMode.Append() else OutputMode.Update()
      // one random arrival per kind (seeded by the kind), to keep the suite's time in bounds
      for (seed <- Seq(kinds.indexOf(kind) + 1)) {
        val rows = identified(kind, seed + 10, 150)
        val input = MemoryStream[(Long, String, Option[Long], Long)](spark)
        // a watermark a tenth of the times' span behind: arriving in random order, many rows are late
        // or arrive behind the watermark while some of their windows are open
        val stream = input.toDF().toDF("id", "k", "t", "v")
          .select(col("id"), col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
          .withWatermark("ts", s"${kind.spanSeconds / 10} seconds")
        val options = Map("lateRows" -> "emit") ++ (if (kind.finalInStreaming) Map.empty else Map("emit" -> "updates"))
        val name = s"accounting_${kinds.indexOf(kind)}_$seed"
        val query = startWithoutNoDataBatches {
          stream.groupBy(col("k"), window(col("ts"), kind.definition, options)).agg(collect_list("id").as("ids"))
            .writeStream.format("memory").queryName(name).outputMode(mode).start()
        }
        try {
          val rnd = new Random(seed)
          val shuffled = rnd.shuffle(rows)
          val cuts = (Seq(0, shuffled.length) ++ Seq.fill(3)(rnd.nextInt(shuffled.length))).distinct.sorted
          cuts.zip(cuts.tail).foreach { case (a, b) =>
            input.addData(shuffled.slice(a, b))
            query.processAllAvailable()
          }
          val far = kind.spanSeconds * 1000000L * 20
          input.addData(Seq((-1L, "flush", Some(far), 0L)))
          query.processAllAvailable()
          input.addData(Seq((-2L, "flush", Some(far * 2), 0L)))
          query.processAllAvailable()
          val (out, flush) = spark.table(name).collect().toSeq.partition(_.getAs[String]("k") != "flush")
          val (routed, windows) = out.partition(_.getAs[String]("late_reason") != null)
          val inWindows = windowedIds(windows)
          // count windows evaluated every n rows keep a key's rows since its last evaluation for the next
          // one (duration windows let them go once no later evaluation can reach back to them)
          val routedIds = routed.flatMap(r => Option(r.getAs[Row]("late_row")).map(_.getAs[Long]("id")))
          val waiting = if (!kind.definition.isInstanceOf[CountWindows]) 0 else {
            rows.filter(r => r._3.isDefined && !routedIds.contains(r._1)).groupBy(_._2).values
              .map(_.length % kind.evaluatedEveryRows).sum
          }
          assert(routedIds.toSet.intersect(inWindows).isEmpty, s"seed $seed: rows both in a window and routed")
          assert(routedIds.distinct.length == routedIds.length, s"seed $seed: a row routed twice")
          assert(inWindows.size + routed.length + waiting == rows.length,
            s"seed $seed: ${inWindows.size} rows in windows, $waiting waiting and ${routed.length} routed " +
              s"(${routed.groupBy(_.getAs[String]("late_reason")).map { case (r, rs) => s"$r: ${rs.length}" }.mkString(", ")}) " +
              s"of ${rows.length}")
          val observed = query.recentProgress.flatMap(p => Option(p.observedMetrics.get("windowagg")))
          def count(field: String) = observed.map(_.getAs[Long](field)).sum
          def reason(r: String) = (routed ++ flush).count(_.getAs[String]("late_reason") == r).toLong
          assert(count("late_rows") == reason("late") && count("null_time_rows") == reason("null time") &&
            count("invalid_gap_rows") == reason("invalid gap") && count("unwindowed_rows") == reason("no window"))
          assert(routed.count(_.getAs[String]("late_reason") == "null time") == rows.count(_._3.isEmpty))
        } finally query.stop()
      }
    }
  }

  test("rows in no window are counted in batch and routed with reason 'no window' in streaming") {
    import spark.implicits._
    val minuteMicros = 60000000L
    val rows = Seq(("a", 0L, 1L), ("a", minuteMicros + 5, 2L), ("a", 2 * minuteMicros, 4L), ("a", 3 * minuteMicros + 7, 8L))
    val batch = dataFrameApi(frame(rows), CustomWindows.of(new OddMinutes))
    assert(result(batch).map(o => (o.start, o.sum)) == Seq((minuteMicros, 2L), (3 * minuteMicros, 8L)))
    assert(windowagg.functions.metrics(batch).get("unwindowedRows") == 2L)
    val input = MemoryStream[(String, Long, Long)](spark)
    val stream = input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))
    val query = stream.groupBy(col("k"), window(col("ts"), CustomWindows.of(new OddMinutes).grace("1 minute"), Map("lateRows" -> "emit")))
      .agg(sum("v").as("s")).writeStream.format("memory").queryName("no_window").outputMode("append").start()
    try {
      input.addData(rows.map { case (k, t, v) => (k, t + 10 * minuteMicros, v) })
      query.processAllAvailable()
      val routed = spark.table("no_window").where(col("late_reason") === "no window").collect()
      assert(routed.map(_.getAs[Row]("late_row").getAs[Long]("v")).toSet == Set(1L, 4L))
      val metrics = query.recentProgress.flatMap(p => Option(p.observedMetrics.get("windowagg")))
      assert(metrics.map(_.getAs[Long]("unwindowed_rows")).sum == 2L)
    } finally query.stop()
  }

  private def micros(t: Timestamp): Long = Math.addExact(Math.multiplyExact(Math.floorDiv(t.getTime, 1000L), 1000000L), t.getNanos / 1000L)
}

object WindowKindConformanceSuite {
  val WindowsTableName = "conformance_windows"
  val KeyWindowsTableName = "conformance_key_windows"

  /** A user kind that leaves times out: one-minute windows for odd minutes only. */
  final class OddMinutes extends EnumerableWindowDefinition {
    private val minute = 60000000L
    override def windowsFor(time: Long, timeline: Timeline): java.util.List[Window] = {
      val start = Math.floorDiv(time, minute) * minute
      if (Math.floorMod(Math.floorDiv(time, minute), 2L) == 1) java.util.List.of(Window(start, start + minute))
      else java.util.List.of()
    }
    override def maxSize(timeline: Timeline): Long = minute
    override def equals(other: Any): Boolean = other.isInstanceOf[OddMinutes]
    override def hashCode: Int = 3
  }

  /** [[OddMinutes]]' rule: a time is in its minute's window when the minute's number since the epoch is odd. */
  object OddMinutesReference extends ReferenceWindows.ByTime {
    private val minute = 60000000L
    override def windowsOf(time: Long): Seq[(Long, Long)] = {
      val number = Math.floorDiv(time, minute)
      if (number % 2 == 0) Nil else Seq((number * minute, (number + 1) * minute))
    }
  }

  /**
   * A kind to check, with its reference for a key's records (the same for every key but per-key
   * tables'); `finalInStreaming` is false for windows that never close (checked with emit=updates),
   * `evaluatedEveryRows` the rows between evaluations for kinds evaluated every few rows.
   */
  final case class Kind(name: String, definition: WindowDefinition, reference: String => ReferenceWindows, spanSeconds: Long,
      finalInStreaming: Boolean = true, evaluatedEveryRows: Int = 1) {
    def oneRowMakesAWindow: Boolean = evaluatedEveryRows == 1
  }
  /** A window of the results; kinds cut at rows may give one window more than once. */
  final case class Out(k: String, start: Long, end: Long, sum: Long, count: Long, values: Vector[Long]) {
    def order: (String, Long, Long, Long, Long, String) = (k, start, end, sum, count, values.mkString(","))
  }
}
