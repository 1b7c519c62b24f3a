package windowagg.spark

import java.nio.ByteBuffer

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery}
import org.scalatest.funsuite.AnyFunSuite

import windowagg._
import windowagg.functions.window
import windowagg.spark.common.{Emission, EmissionTrigger, KeyValue, OpenWindows, WindowAggException, WindowOutput}

/**
 * The emission policies: early firing (`emit = "every <interval>"`) gives an open window's running
 * value at most once per interval while it changes, then its final value once, marked `is_final`;
 * over sessions, a value fired for bounds that later grow or merge away is retracted, and over
 * Storm's windows one fired for bounds that late rows shift. A policy is one case: a test's own runs
 * with nothing else changed.
 */
class EmissionSuite extends AnyFunSuite with SparkSessionFixture {
  private val second = 1000000L

  private def stream(input: MemoryStream[(String, Long, Long)]): DataFrame =
    input.toDF().toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v"))

  private def run(df: DataFrame, name: String)(feed: StreamingQuery => Unit): Seq[(Long, Long, Long, Boolean)] = {
    val query = df.writeStream.format("memory").queryName(name).outputMode("update").start()
    try feed(query) finally query.stop()
    spark.table(name).where(col("k") === "a")
      .select(unix_micros(col("window.start")) / second, unix_micros(col("window.end")) / second, col("s"), col("is_final"))
      .collect().map(r => (r.getDouble(0).toLong, r.getDouble(1).toLong, r.getLong(2), r.getBoolean(3))).toSeq
  }

  test("every 10 seconds: running values at most once per interval while they change, then the final value once") {
    import spark.implicits._
    val input = MemoryStream[(String, Long, Long)](spark)
    val windows = stream(input).groupBy(col("k"), window(col("ts"), TimeWindows.of("1 minute").grace("0 seconds"),
      Map("emit" -> "every 10 seconds"))).agg(sum("v").as("s"))
    assert(windows.columns.toSeq == Seq("k", "window", "s", "is_final"))
    val rows = run(windows, "every_10_seconds") { q =>
      def add(rows: (String, Long, Long)*): Unit = { input.addData(rows); q.processAllAvailable() }
      add(("a", 5 * second, 1L), ("a", 6 * second, 2L)) // the key's first changes fire at once
      add(("a", 8 * second, 4L)) // the watermark (6 s) is in the interval the key fired in: it waits
      add(("b", 31 * second, 0L)) // the watermark passes 10 s (to 31 s): a's waiting change fires
      add(("a", 33 * second, 8L), ("a", 34 * second, 16L)) // in the interval a fired in: they wait
      add(("b", 95 * second, 0L)) // the watermark passes 40 s, and 60 s: [0 s, 60 s) is final instead
      add(("b", 200 * second, 0L))
    }
    val early = rows.filter(!_._4)
    val last = rows.filter(_._4)
    assert(last == Seq((0L, 60L, 31L, true)), rows)
    assert(early.map(_._3) == Seq(3L, 7L), rows)
    assert(early.forall(r => r._1 == 0L && r._2 == 60L))
  }

  test("every: the interval is a duration; Storm's views and the append mode refuse it, and Storm's windows updates") {
    import spark.implicits._
    val input = MemoryStream[(String, Long, Long)](spark)
    def analyse(definition: WindowDefinition, emit: String): DataFrame =
      stream(input).groupBy(col("k"), window(col("ts"), definition, Map("emit" -> emit))).agg(sum("v").as("s"))
    val bad = intercept[WindowAggException](analyse(TimeWindows.of("1 minute").grace("0 seconds"), "every now and then"))
    assert(bad.getMessage.contains("now and then"), bad.getMessage)
    val zero = intercept[WindowAggException](analyse(TimeWindows.of("1 minute").grace("0 seconds"), "every 0 seconds"))
    assert(zero.getMessage.contains("must be positive"), zero.getMessage)
    // windows whose bounds follow their rows retract values fired for bounds that shift; a duration evaluated every slide of time keeps them
    assert(analyse(CountWindows.of(3).lag("0 seconds"), "every 10 seconds").columns.toSeq == Seq("k", "window", "s", "retraction", "is_final"))
    assert(analyse(DurationWindows.of("30 seconds").lag("0 seconds"), "every 10 seconds").columns.contains("retraction"))
    assert(analyse(DurationWindows.of("30 seconds").every("10 seconds").lag("0 seconds"), "every 10 seconds").columns.toSeq ==
      Seq("k", "window", "s", "is_final"))
    val updates = intercept[AnalysisException](analyse(DurationWindows.of("30 seconds").every("10 seconds").lag("0 seconds"), "updates"))
    assert(updates.getMessage.contains("final only") && updates.getMessage.contains("emit 'every <interval>'"), updates.getMessage)
    val views = intercept[AnalysisException](stream(input).groupBy(col("k"), window(col("ts"),
      DurationWindows.of("30 seconds").every("10 seconds").lag("0 seconds"), Map("emit" -> "every 10 seconds")))
      .agg(sum("v").as("s"), windowagg.functions.newRows(sum("v")).as("fresh")))
    assert(views.getMessage.contains("no early value"), views.getMessage)
    analyse(DurationWindows.of("30 seconds").every("10 seconds").lag("0 seconds"), "every 10 seconds")
    val append = intercept[Exception](analyse(TimeWindows.of("1 minute").grace("0 seconds"), "every 10 seconds")
      .writeStream.format("memory").queryName("every_append").outputMode("append").start())
    assert(append.getMessage.contains("early values of a window") && append.getMessage.contains("outputMode('update')"),
      append.getMessage)
  }

  test("every over duration windows evaluated every slide of time: running values of the windows not evaluated yet") {
    import spark.implicits._
    val input = MemoryStream[(String, Long, Long)](spark)
    val windows = stream(input).groupBy(col("k"), window(col("ts"),
      DurationWindows.of("30 seconds").every("10 seconds").lag("0 seconds"), Map("emit" -> "every 10 seconds"))).agg(sum("v").as("s"))
    val rows = run(windows, "every_duration") { q =>
      def add(rows: (String, Long, Long)*): Unit = { input.addData(rows); q.processAllAvailable() }
      add(("a", 5 * second, 1L)) // fires at once: the three windows (end - 30 s, end] holding 5 s
      add(("a", 6 * second, 2L)) // the watermark (5 s) is in the interval a fired in: it waits
      add(("b", 25 * second, 0L)) // the watermark reaches 25 s: the windows ending at 10 s and 20 s are final,
      // and the one ending at 30 s, still open, fires with the row waiting
      add(("b", 100 * second, 0L)) // the watermark passes 30 s
    }
    assert(rows == Seq((-20L, 10L, 1L, false), (-10L, 20L, 1L, false), (0L, 30L, 1L, false),
      (-20L, 10L, 3L, true), (-10L, 20L, 3L, true), (0L, 30L, 3L, false), (0L, 30L, 3L, true)), rows)
  }

  test("every over random duration windows: early values are the rows so far, final values equal batch") {
    import spark.implicits._
    val rnd = new scala.util.Random(23)
    val events = (0 until 240).map(_ => (s"k${rnd.nextInt(3)}", rnd.nextInt(600).toLong * second, 1L + rnd.nextInt(9)))
    val definition = DurationWindows.of("40 seconds").every("15 seconds").lag("30 seconds")
    def windowsOf(df: DataFrame, emit: String): DataFrame =
      df.groupBy(col("k"), window(col("ts"), definition, Map("emit" -> emit))).agg(sum("v").as("s"))
    def bounds(df: DataFrame): DataFrame =
      df.select(col("k") +: unix_micros(col("window.start")).as("start") +: unix_micros(col("window.end")).as("end") +:
        df.columns.filter(Set("s", "is_final")).toSeq.map(col): _*)
    val expected = bounds(windowsOf(events.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v")), "final"))
      .collect().map(r => (r.getString(0), r.getLong(1), r.getLong(2), r.getLong(3))).toSeq.sorted
    val chunks = events.sortBy(_._2).grouped(24).map(c => new scala.util.Random(c.length).shuffle(c)).toSeq
    @volatile var added = 0
    val written = scala.collection.mutable.ArrayBuffer.empty[(Int, String, Long, Long, Long, Boolean)]
    val input = MemoryStream[(String, Long, Long)](spark)
    val query = windowsOf(stream(input), "every 20 seconds").where(col("k") =!= "flush").writeStream.outputMode("update")
      .foreachBatch { (batch: DataFrame, _: Long) =>
        val seen = added
        written ++= bounds(batch).collect()
          .map(r => (seen, r.getString(0), r.getLong(1), r.getLong(2), r.getLong(3), r.getBoolean(4)))
        ()
      }.start()
    try {
      // in time order by chunks, shuffled within each: every row is within the 30 s lag of the watermark
      chunks.foreach { chunk =>
        added += 1
        input.addData(chunk)
        query.processAllAvailable()
      }
      input.addData(Seq(("flush", 5000 * second, 0L)))
      query.processAllAvailable()
    } finally query.stop()
    assert(written.filter(_._6).map(w => (w._2, w._3, w._4, w._5)).sorted == expected)
    val early = written.filterNot(_._6)
    early.foreach { case (seen, k, start, end, value, _) =>
      val sofar = chunks.take(seen).flatten.filter(e => e._1 == k && e._2 > start && e._2 <= end).map(_._3).sum
      assert(value == sofar, s"$k ($start, $end] fired $value after $seen chunks, whose rows sum to $sofar")
    }
    assert(early.length > expected.length / 2, s"${early.length} early values for ${expected.length} windows")
  }

  /** Rows of `name` for key a: start and end (s), sum, is_final, retraction. */
  private def sessionRows(name: String): Seq[(Long, Long, Option[Long], Boolean, Boolean)] =
    spark.table(name).where(col("k") === "a")
      .select(unix_micros(col("window.start")) / second, unix_micros(col("window.end")) / second, col("s"), col("is_final"),
        col("retraction"))
      .collect().map(r => (r.getDouble(0).toLong, r.getDouble(1).toLong, Option(r.get(2)).map(_.asInstanceOf[Long]),
        r.getBoolean(3), r.getBoolean(4))).toSeq

  test("every over sessions: running values while open; a value fired for bounds that grew or merged is retracted") {
    import spark.implicits._
    val input = MemoryStream[(String, Long, Long)](spark)
    // a gap of 15 s; the watermark trails the latest row by 100 s, so sessions stay open while rows bridge them
    val sessions = stream(input).groupBy(col("k"), window(col("ts"), SessionWindows.withInactivityGap("15 seconds")
      .grace("100 seconds"), Map("emit" -> "every 10 seconds"))).agg(sum("v").as("s"))
    assert(sessions.columns.toSeq == Seq("k", "window", "s", "retraction", "is_final"))
    val query = sessions.writeStream.format("memory").queryName("every_sessions").outputMode("update").start()
    try {
      def add(rows: (String, Long, Long)*): Unit = { input.addData(rows); query.processAllAvailable() }
      add(("a", 1 * second, 1L)) // a's first change fires at once: [1 s, 1 s]
      add(("a", 25 * second, 2L)) // the watermark is still in the interval a fired in: [25 s, 25 s] waits
      add(("a", 13 * second, 4L)) // within 15 s of both: one session [1 s, 25 s], still waiting
      add(("b", 115 * second, 0L)) // the watermark reaches 15 s, a later interval: [1 s, 25 s] fires, [1 s, 1 s] retracted
      add(("b", 300 * second, 0L)) // the watermark passes 40 s: [1 s, 25 s] is final, under the bounds it fired with
    } finally query.stop()
    assert(sessionRows("every_sessions") == Seq(
      (1L, 1L, Some(1L), false, false),
      (1L, 1L, None, false, true),
      (1L, 25L, Some(7L), false, false),
      (1L, 25L, Some(7L), true, false)))
  }

  test("every over random sessions: final values equal batch, and every early value is replaced or retracted") {
    import spark.implicits._
    val rnd = new scala.util.Random(11)
    val events = (0 until 300).map(_ => (s"k${rnd.nextInt(3)}", rnd.nextInt(900).toLong * second, 1L + rnd.nextInt(9)))
    def sessionsOf(df: DataFrame, emit: String): DataFrame =
      df.groupBy(col("k"), window(col("ts"), SessionWindows.withInactivityGap("10 seconds").grace("60 seconds"),
        Map("emit" -> emit))).agg(sum("v").as("s"))
    def flat(df: DataFrame): Seq[(String, Long, Long, Long)] =
      df.select(col("k"), unix_micros(col("window.start")), unix_micros(col("window.end")), col("s")).collect()
        .map(r => (r.getString(0), r.getLong(1), r.getLong(2), r.getLong(3))).toSeq.sorted
    val expected = flat(sessionsOf(events.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v")), "final"))
    val input = MemoryStream[(String, Long, Long)](spark)
    val query = sessionsOf(stream(input), "every 20 seconds").where(col("k") =!= "flush")
      .writeStream.format("memory").queryName("every_random_sessions").outputMode("update").start()
    try {
      // in time order by chunks, shuffled within each: every row is within the 60 s grace of the watermark
      events.sortBy(_._2).grouped(30).foreach { chunk =>
        input.addData(new scala.util.Random(chunk.length).shuffle(chunk))
        query.processAllAvailable()
      }
      input.addData(Seq(("flush", 5000 * second, 0L)))
      query.processAllAvailable()
    } finally query.stop()
    val out = spark.table("every_random_sessions")
      .select(col("k"), unix_micros(col("window.start")), unix_micros(col("window.end")), col("s"), col("is_final"), col("retraction"))
      .collect().toSeq
    assert(flat(spark.table("every_random_sessions").where(col("is_final"))) == expected)
    // the rows as an upserting sink applies them: early and final values put, retractions remove a value put before
    val standing = scala.collection.mutable.Map.empty[(String, Long, Long), Long]
    out.foreach { r =>
      val bounds = (r.getString(0), r.getLong(1), r.getLong(2))
      if (r.getBoolean(5)) assert(standing.remove(bounds).isDefined, s"$bounds retracted but never emitted")
      else standing(bounds) = r.getLong(3)
    }
    assert(standing.toSeq.map { case ((k, s, e), v) => (k, s, e, v) }.sorted == expected)
    val early = out.count(r => !r.getBoolean(4) && !r.getBoolean(5))
    val retracted = out.count(_.getBoolean(5))
    assert(early > expected.length / 2 && retracted > 0, s"$early early values, $retracted retractions")
  }

  test("every over count windows: values before the rows settle; a value fired for bounds that late rows shift is retracted") {
    import spark.implicits._
    val input = MemoryStream[(String, Long, Long)](spark)
    // two rows a window; the watermark trails the latest row by 25 s, so rows wait that long to settle
    val windows = stream(input).groupBy(col("k"), window(col("ts"), CountWindows.tumbling(2).lag("25 seconds"),
      Map("emit" -> "every 10 seconds"))).agg(sum("v").as("s"))
    val query = windows.writeStream.format("memory").queryName("every_counts").outputMode("update").start()
    try {
      def add(rows: (String, Long, Long)*): Unit = { input.addData(rows); query.processAllAvailable() }
      add(("a", 100 * second, 1L), ("a", 110 * second, 2L)) // fires at once: [100 s, 110 s], its rows not settled
      add(("a", 120 * second, 4L)) // a later interval, but 120 s is in no window yet: nothing to fire
      add(("a", 105 * second, 8L)) // on time: the rows so far make [100 s, 105 s] and [110 s, 120 s], fired
      add(("b", 300 * second, 0L)) // the watermark passes 120 s: both are final, and [100 s, 110 s] is no window
    } finally query.stop()
    assert(sessionRows("every_counts") == Seq(
      (100L, 110L, Some(3L), false, false),
      (100L, 105L, Some(9L), false, false),
      (110L, 120L, Some(6L), false, false),
      (100L, 105L, Some(9L), true, false),
      (110L, 120L, Some(6L), true, false),
      (100L, 110L, None, false, true)))
  }

  test("every over random windows cut at rows: final values equal batch, and every early value is replaced or retracted") {
    import spark.implicits._
    val rnd = new scala.util.Random(31)
    // distinct times (bounds name one window), arriving up to 40 s out of order, within the 60 s lag
    val events = rnd.shuffle((0 until 900).toVector).take(300).map(t => (s"k${rnd.nextInt(3)}", t.toLong * second, 1L + rnd.nextInt(9)))
    val arrival = events.sortBy(e => e._2 + rnd.nextInt(40) * second).grouped(30).toSeq
    def flat(df: DataFrame): Seq[(String, Long, Long, Long)] =
      df.select(col("k"), unix_micros(col("window.start")), unix_micros(col("window.end")), col("s")).collect()
        .map(r => (r.getString(0), r.getLong(1), r.getLong(2), r.getLong(3))).toSeq.sorted
    for ((definition, i) <- Seq(CountWindows.tumbling(3), CountWindows.of(4).slide(2), DurationWindows.of("30 seconds").slide(2))
        .map(_.lag("60 seconds")).zipWithIndex) {
      def windowsOf(df: DataFrame, emit: String): DataFrame =
        df.groupBy(col("k"), window(col("ts"), definition, Map("emit" -> emit))).agg(sum("v").as("s"))
      val expected = flat(windowsOf(events.toDF("k", "t", "v").select(col("k"), timestamp_micros(col("t")).as("ts"), col("v")), "final"))
      val input = MemoryStream[(String, Long, Long)](spark)
      val name = s"every_random_rows_$i"
      val query = windowsOf(stream(input), "every 20 seconds").where(col("k") =!= "flush")
        .writeStream.format("memory").queryName(name).outputMode("update").start()
      try {
        arrival.foreach { chunk =>
          input.addData(chunk)
          query.processAllAvailable()
        }
        input.addData(Seq(("flush", 5000 * second, 0L)))
        query.processAllAvailable()
      } finally query.stop()
      val out = spark.table(name)
        .select(col("k"), unix_micros(col("window.start")), unix_micros(col("window.end")), col("s"), col("is_final"), col("retraction"))
        .collect().toSeq
      assert(flat(spark.table(name).where(col("is_final"))) == expected, definition)
      // the rows as an upserting sink applies them: early and final values put, retractions remove a value put before
      val standing = scala.collection.mutable.Map.empty[(String, Long, Long), Long]
      out.foreach { r =>
        val bounds = (r.getString(0), r.getLong(1), r.getLong(2))
        if (r.getBoolean(5)) assert(standing.remove(bounds).isDefined, s"$definition: $bounds retracted but never emitted")
        else standing(bounds) = r.getLong(3)
      }
      assert(standing.toSeq.map { case ((k, s, e), v) => (k, s, e, v) }.sorted == expected, definition)
      val early = out.count(r => !r.getBoolean(4) && !r.getBoolean(5))
      val retracted = out.count(_.getBoolean(5))
      assert(early > expected.length / 2 && retracted > 0, s"$definition: $early early values, $retracted retractions")
    }
  }

  test("a policy of a test's own (every n rows) runs as one case: the kinds and the processor do not change") {
    import spark.implicits._
    Emission.register { case EveryRows.Spelled(n) => EveryRows(n.toLong) }
    val input = MemoryStream[(String, Long, Long)](spark)
    val windows = stream(input).groupBy(col("k"), window(col("ts"), TimeWindows.of("1 minute").grace("0 seconds"),
      Map("emit" -> "every 2 rows"))).agg(sum("v").as("s"))
    val rows = run(windows, "every_2_rows") { q =>
      def add(rows: (String, Long, Long)*): Unit = { input.addData(rows); q.processAllAvailable() }
      add(("a", 5 * second, 1L)) // one row: it waits
      add(("a", 6 * second, 2L)) // two: the running value fires
      add(("a", 7 * second, 4L), ("a", 8 * second, 8L), ("a", 9 * second, 16L)) // three: fires, one counted towards the next
      add(("b", 200 * second, 0L)) // the watermark passes 60 s: [0 s, 60 s) is final
      add(("b", 300 * second, 0L))
    }
    assert(rows == Seq((0L, 60L, 3L, false), (0L, 60L, 31L, false), (0L, 60L, 31L, true)), rows)
  }
}

/**
 * A policy a test defines: a key's changed windows' running values after every `n` of its rows.
 * State: the rows counted since the key last fired, then the changed marks (8 bytes each).
 */
final case class EveryRows(n: Long) extends Emission(s"every $n rows") {
  override def outputMode: OutputMode = OutputMode.Update()
  override def emitsFinal: Boolean = true
  override def emitsChanges: Boolean = false
  override def marksFinal: Boolean = true
  override private[spark] def trigger(state: String => KeyValue[Array[Byte]], merging: Boolean): EmissionTrigger =
    new EmissionTrigger {
      private val counted = state("rowsSinceFired")
      override def fire(watermark: Long, rows: Long, marks: Array[Long], open: OpenWindows, out: WindowOutput): Option[Long] = {
        val stored = Option(counted.get()).map(ByteBuffer.wrap)
        val seen = stored.map(_.getLong()).getOrElse(0L) + rows
        val pending = (stored.map(b => Array.fill(b.remaining() / 8)(b.getLong())).getOrElse(Array.emptyLongArray) ++ marks).distinct.sorted
        if (open.isEmpty) counted.clear()
        else if (seen >= n) {
          open.holding(pending)(out.early)
          val rest = seen % n
          if (rest == 0) counted.clear() else counted.update(ByteBuffer.allocate(8).putLong(rest).array())
        } else {
          val bytes = ByteBuffer.allocate(8 + 8 * pending.length).putLong(seen)
          pending.foreach(bytes.putLong)
          counted.update(bytes.array())
        }
        None
      }
    }
}

object EveryRows {
  val Spelled = """every (\d+) rows""".r
}
