package windowagg.core

import java.time.ZoneOffset

import scala.collection.mutable.ArrayBuffer

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.{CountWindows, DurationWindows, StormWindows, Timeline, WindowSpec}
import windowagg.StormWindows.CutAtRows
import windowagg.core.RowWindowCursor.{EveryRows, EveryTicks, LastRows, LastTicks}
import windowagg.core.TestAggregations.Collect

/**
 * Storm's windows (count and duration lengths, slides in rows or in time): the cursors against a
 * brute force straight from Storm's rules, rows in no window, the streaming rules (settled rows,
 * kept rows) against batch, the document's worked example, and the definitions' specs and errors.
 */
class StormWindowsSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {

  private val rowKinds: Gen[CutAtRows] = for {
    n <- Gen.choose(1L, 6L)
    s <- Gen.choose(1L, 7L)
    l <- Gen.choose(1L, 30L)
    d <- Gen.choose(1L, 15L)
    kind <- Gen.oneOf(
      CutAtRows(LastRows(n), EveryRows(s), None),
      CutAtRows(LastTicks(l), EveryRows(s), None),
      CutAtRows(LastRows(n), EveryTicks(d), None),
      CutAtRows(LastTicks(l), EveryTicks(d), None))
  } yield kind

  // times from a small range, so that many rows share a time; values number the rows
  private val records: Gen[Vector[(Long, Int)]] = for {
    n <- Gen.choose(0, 40)
    times <- Gen.listOfN(n, Gen.choose(-50L, 50L))
  } yield times.sorted.zipWithIndex.toVector

  private def cursorWindows(kind: ResolvedWindows, recs: Seq[(Long, Int)]): Vector[(Long, Long, Vector[Int])] = {
    val agg = new Collect[Int]
    val cursor = kind.cursor(recs.iterator.map { case (t, v) => Reaching(t, t, ArrayBuffer(v)) }, agg)
    val out = Vector.newBuilder[(Long, Long, Vector[Int])]
    while (cursor.advance()) out += ((cursor.start, cursor.end, cursor.aggregate.toVector))
    out.result()
  }

  /** Storm's rules for a kind the generator built, from the parameters it chose. */
  private def reference(kind: CutAtRows): ReferenceWindows.Storm = ReferenceWindows.Storm(
    kind.length match {
      case LastRows(n) => ReferenceWindows.Storm.Rows(n)
      case LastTicks(l) => ReferenceWindows.Storm.Ticks(l)
    },
    kind.trigger match {
      case EveryRows(m) => ReferenceWindows.Storm.Rows(m)
      case EveryTicks(d) => ReferenceWindows.Storm.Ticks(d)
    })

  private def brute(kind: CutAtRows, recs: Seq[(Long, Int)]): Vector[(Long, Long, Vector[Int])] =
    reference(kind).windows(recs).toVector.map { case ((s, e), rs) => (s, e, rs.map(_._2)) }.sortBy(w => (w._2, w._1))

  test("property: windows cut at rows are Storm's, in end order, rows in their counting order") {
    forAll(rowKinds, records) { (kind, recs) =>
      withClue(s"$kind, $recs\n") {
        val got = cursorWindows(kind, recs)
        got.sortBy(w => (w._2, w._1)) shouldBe brute(kind, recs)
        got.map(_._2) shouldBe sorted
      }
    }
  }

  test("property: the rows a cursor reports as in no window are exactly those in none") {
    forAll(rowKinds, records) { (kind, recs) =>
      val left = ArrayBuffer.empty[Long]
      val cursor = kind.rowCursor(0L, recs.iterator.map { case (t, v) => Timed(t, ArrayBuffer(v)) }, new Collect[Int], None, views = false)(left += _)
      while (cursor.advance()) {}
      withClue(s"$kind, $recs\n") { left.map(_.toInt).toSet shouldBe reference(kind).inNoWindow(recs) }
    }
  }

  test("property: Storm's window view: each window's new rows are those not in the previous window, its expired rows those of the previous window not in it") {
    forAll(rowKinds, records) { (kind, recs) =>
      val cursor = kind.rowCursor(0L, recs.iterator.map { case (t, v) => Timed(t, ArrayBuffer(v)) }, new Collect[Int], None,
        views = true)(_ => ())
      val got = ArrayBuffer.empty[(Vector[Int], Vector[Int], Vector[Int])]
      while (cursor.advance()) got += ((cursor.aggregate.toVector, cursor.newRows.toVector, cursor.expiredRows.toVector))
      val windows = reference(kind).rowWindows(recs.map(_._1)).map(_._2.map(recs(_)._2))
      val expected = windows.indices.map { i =>
        val previous = if (i == 0) Vector.empty[Int] else windows(i - 1)
        (windows(i), windows(i).filterNot(previous.contains), previous.filterNot(windows(i).contains))
      }
      withClue(s"$kind, $recs\n") { got.toVector shouldBe expected.toVector }
    }
  }

  test("property: streaming, settling rows as random watermarks pass, emits exactly the batch windows and rows in none") {
    forAll(rowKinds, records, Gen.listOfN(5, Gen.choose(-60L, 60L)), Gen.oneOf(false, true)) { (kind, recs, steps, views) =>
      val finality = new RowFinality(kind)
      val emitted = ArrayBuffer.empty[Seen]
      val left = ArrayBuffer.empty[Long]
      var kept = Vector.empty[(Long, Int)]
      var firstPosition = 0L
      var accounted = 0L
      var settledUntil = Long.MinValue
      var lastWindowHead = Option.empty[Long]
      val watermarks = (steps :+ 1000L).distinct.sorted
      withClue(s"$kind, $recs, watermarks $watermarks\n") {
        watermarks.foreach { until =>
          kept ++= recs.filter(r => r._1 >= settledUntil && r._1 < until)
          val settled = finality.settle(kept.map { case (t, v) => Timed(t, ArrayBuffer(v)) }, firstPosition, accounted,
            settledUntil, until, new Collect[Int], views, lastWindowHead)(w => emitted += seen(w, views))(left += _)
          lastWindowHead = settled.lastWindowHead
          kept = kept.drop(settled.drop)
          firstPosition += settled.drop
          accounted = settled.accountedBefore
          settledUntil = until
        }
        val batch = kind.rowCursor(0L, recs.iterator.map { case (t, v) => Timed(t, ArrayBuffer(v)) }, new Collect[Int], None,
          views)(_ => ())
        emitted.toVector shouldBe Iterator.continually(batch).takeWhile(_.advance()).map(seen(_, views)).toVector
        // each row in no window is reported once, except rows still kept at the end (they may yet be in one)
        val stillKept = (firstPosition until recs.length.toLong).map(_.toInt).toSet
        val inNone = reference(kind).inNoWindow(recs)
        left.map(_.toInt) shouldBe left.distinct.map(_.toInt)
        left.map(_.toInt).toSet should contain allElementsOf (inNone -- stillKept)
        inNone should contain allElementsOf left.map(_.toInt)
        // state stays bounded: with views, kept rows start no later than the last window's first row
        if (views) lastWindowHead.foreach(head => firstPosition should be <= head)
      }
    }
  }

  /** A window as the test compares it: bounds, rows, and with views its new and expired rows. */
  private type Seen = (Long, Long, Vector[Int], Vector[Int], Vector[Int])
  private def seen(w: RowWindowCursor[ArrayBuffer[Int]], views: Boolean): Seen =
    if (views) (w.start, w.end, w.aggregate.toVector, w.newRows.toVector, w.expiredRows.toVector)
    else (w.start, w.end, w.aggregate.toVector, Vector.empty, Vector.empty)

  test("property: where rows follow from their times, the windows holding a row's time are those the cursor puts it in") {
    forAll(rowKinds, records) { (kind, recs) =>
      val byTime = kind.length.isInstanceOf[LastTicks] && kind.trigger.isInstanceOf[EveryTicks]
      kind.spansOfTime shouldBe byTime
      val windows = cursorWindows(kind, recs)
      recs.foreach { case (t, v) =>
        val holding = kind.windowsHolding(t).toVector
        if (byTime) holding shouldBe windows.filter(_._3.contains(v)).map(w => (w._1, w._2))
        else holding shouldBe empty
      }
    }
  }

  test("Storm's worked example: length 20 s, slide 10 s; the windows and their rows") {
    val second = 1000000L
    def at(h: Int, m: Int, s: Int): Long = ((h * 60L + m) * 60L + s) * second
    val rows = Seq(
      "e1" -> at(6, 0, 3), "e2" -> at(6, 0, 5), "e3" -> at(6, 0, 7), "e4" -> at(6, 0, 18), "e5" -> at(6, 0, 26),
      "e6" -> at(6, 0, 36), "e7" -> at(8, 0, 25), "e8" -> at(8, 0, 26), "e9" -> at(8, 0, 27), "e10" -> at(8, 0, 39))
    val kind = DurationWindows.of("20 seconds").every("10 seconds").resolve(Timeline.timestamp(ZoneOffset.UTC))
    val agg = new Collect[String]
    val cursor = kind.cursor(rows.iterator.map { case (e, t) => Reaching(t, t, ArrayBuffer(e)) }, agg)
    val windows = ArrayBuffer.empty[(Long, Long, Seq[String])]
    while (cursor.advance()) windows += ((cursor.start, cursor.end, cursor.aggregate.toSeq))
    windows.take(6) shouldBe Seq(
      (at(5, 59, 50), at(6, 0, 10), Seq("e1", "e2", "e3")),
      (at(6, 0, 0), at(6, 0, 20), Seq("e1", "e2", "e3", "e4")),
      (at(6, 0, 10), at(6, 0, 30), Seq("e4", "e5")),
      (at(6, 0, 20), at(6, 0, 40), Seq("e5", "e6")),
      (at(6, 0, 30), at(6, 0, 50), Seq("e6")),
      (at(8, 0, 10), at(8, 0, 30), Seq("e7", "e8", "e9")))
  }

  test("a row at a window's end is in it, a row at its start is not: (end − length, end]") {
    val kind = CutAtRows(LastTicks(20L), EveryTicks(10L), None)
    brute(kind, Seq((10L, 1), (20L, 2))).map(w => (w._1, w._2, w._3)) shouldBe
      Vector((-10L, 10L, Vector(1)), (0L, 20L, Vector(1, 2)), (10L, 30L, Vector(2)))
    cursorWindows(kind, Seq((10L, 1), (20L, 2))) shouldBe brute(kind, Seq((10L, 1), (20L, 2)))
  }

  test("at the end of the 64-bit range, a duration window sliding in time fails only for a row a window past it would hold") {
    val kind = CutAtRows(LastTicks(10L), EveryTicks(4L), None)
    val last = Long.MaxValue - 3 // the last multiple of 4: the window after it would end beyond the range
    cursorWindows(kind, Seq((last - 8, 1))) shouldBe
      Vector((last - 18, last - 8, Vector(1)), (last - 14, last - 4, Vector(1)), (last - 10, last, Vector(1)))
    intercept[WindowError](cursorWindows(kind, Seq((last - 5, 1)))).getMessage should include("range of a 64-bit time")
  }

  test("specs round trip, tumbling is a slide of the length, and the spec names Storm's parts") {
    val defs = Seq(
      CountWindows.of(30), CountWindows.of(30).slide(10), CountWindows.tumbling(5), CountWindows.of(3).every("10 seconds"),
      CountWindows.of(30).slide(10).lag("5 seconds").tieBreak("seq"),
      DurationWindows.of("20 seconds"), DurationWindows.of("20 seconds").slide(5), DurationWindows.tumbling("5 seconds"),
      DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds"), DurationWindows.of(100L).every(10L).tieBreak("id"),
      CountWindows.of(3).tieBreak("offset"), CountWindows.of(3).slide(2).tieBreak("my col"), DurationWindows.of(5L).tieBreak("Tie"))
    defs.foreach(d => WindowSpec.parse(d.spec) shouldBe d)
    CountWindows.tumbling(5) shouldBe CountWindows.of(5).slide(5)
    CountWindows.of(30).slide(1) shouldBe CountWindows.of(30)
    CountWindows.of(30).slide(10).lag("5 seconds").tieBreak("seq").spec shouldBe "count 30 rows every 10 rows lag 5 seconds tie break seq"
    DurationWindows.tumbling("5 seconds").spec shouldBe "duration 5 seconds every 5 seconds"
    CountWindows.of(3).tieBreak("offset").spec shouldBe "count 3 rows tie break `offset`" // a clause word, quoted
    DurationWindows.of("20 seconds").slide(5).toString shouldBe "DurationWindows.of(20 seconds).slide(5)"
  }

  test("bad definitions are refused with a message naming the problem") {
    def error(f: => Any): String = intercept[WindowError](f).getMessage
    error(CountWindows.of(0)) should include("a count window's length must be a positive number of rows, got 0")
    error(CountWindows.of(10).slide(-1)) should include("the slide must be a positive number of rows")
    error(CountWindows.of(10).every("0 seconds")) should include("the slide must be positive")
    error(CountWindows.of(10).lag("-5 seconds")) should include("the lag must not be negative")
    error(CountWindows.of(10).tieBreak(" ")) should include("tie-break column")
    error(DurationWindows.of("-1 second")) should include("window length must be positive")
    error(WindowSpec.parse("count 30")) should include("a number of rows, like 'count 30 rows'")
    error(WindowSpec.parse("count 30 rows grace 1 minute")) should include("takes no 'grace'")
    error(WindowSpec.parse("duration 1 minute tie break a b")) should include("tie break takes one column name")
    error(DurationWindows.of("1 second").every(10L).resolve(Timeline.timestamp(ZoneOffset.UTC))) should include("number of ticks")
  }

  test("a count window's state needs at most its length in rows; a duration window's, its length in time") {
    val count = CountWindows.of(30).slide(10).resolve(Timeline.timestamp(ZoneOffset.UTC)).asInstanceOf[StormWindows.CutAtRows]
    count.rowsNeeded shouldBe 30L
    count.oldestNeeded(1000L) shouldBe Long.MinValue
    val duration = DurationWindows.of(20L).slide(3).resolve(Timeline.epoch(java.util.concurrent.TimeUnit.MILLISECONDS))
      .asInstanceOf[StormWindows.CutAtRows]
    duration.rowsNeeded shouldBe Long.MaxValue
    duration.oldestNeeded(1000L) shouldBe 981L
  }
}
