package windowagg


import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.{Reaching, SweepHarness, WindowError}
import windowagg.core.TestAggregations.Collect

/** Windows listed with their records: the slicing cursor over partials that carry them, and the checks of a listing. */
class ListedWindowsSpec extends AnyFunSuite with Matchers {
  private val timeline = Timeline.epoch(None)
  private def kind(disjoint: Boolean = false): ListedWindows.Resolved = {
    val definition = ListedWindows.maxSize("1000")
    (if (disjoint) definition.nonOverlapping() else definition).resolve(timeline)
  }

  /** Each time's windows: those of `windows` holding it, pairs sorted by (end, start) as a checked listing is. */
  private def listing(windows: Seq[(Long, Long)], t: Long): Array[Long] =
    windows.distinct.filter { case (s, e) => s <= t && t < e }.sortBy(w => (w._2, w._1)).flatMap(w => Seq(w._1, w._2)).toArray

  test("the cursor over listed partials gives each window the records of the times listing it, and windows in order of (end, start)") {
    for (seed <- 1 to 40; disjoint <- Seq(false, true)) {
      val rnd = new Random(seed)
      val drawn = Seq.fill(1 + rnd.nextInt(30)) {
        val start = rnd.nextInt(400).toLong - 200
        (start, start + 1 + rnd.nextInt(if (rnd.nextBoolean()) 15 else 150))
      }
      // non-overlapping: each window ends before the next (by start) begins
      val windows = if (!disjoint) drawn else drawn.sortBy(_._1).foldLeft(Vector.empty[(Long, Long)]) { (kept, w) =>
        if (kept.nonEmpty && w._1 < kept.last._2) kept else kept :+ w
      }
      val listed = kind(disjoint)
      val records = Seq.fill(rnd.nextInt(300))((rnd.nextInt(500).toLong - 250, rnd.nextInt(1000))).sortBy(_._1)
        .filter { case (t, _) => listing(windows, t).nonEmpty }
      val agg = new Collect[Int]
      val byPartialTime = records.map { case (t, v) => (listed.partialTime(t, listed.checked(t, listing(windows, t))), (t, v)) }
      val slices = SweepHarness.partials(byPartialTime.map { case (p, (_, v)) => (p, v) }, agg)(v => ArrayBuffer(v))
      // a slice's windows: those of any of its times (all the same)
      val windowsOf = byPartialTime.map { case (p, (t, _)) => p -> listing(windows, t) }.toMap
      val cursor = listed.cursor(slices.iterator.map(p => Reaching(p.time, p.time, p.partial, windowsOf(p.time))), agg)
      val got = Vector.newBuilder[(Long, Long, Vector[Int])]
      while (cursor.advance()) got += ((cursor.start, cursor.end, cursor.aggregate.toVector))
      val expected = windows.distinct.map { case (s, e) => (s, e, records.filter { case (t, _) => s <= t && t < e }.map(_._2).toVector) }
        .filter(_._3.nonEmpty).sortBy(w => (w._2, w._1))
      withClue(s"seed $seed, disjoint $disjoint") {
        got.result().map(w => (w._1, w._2, w._3.sorted)) shouldBe expected.map(w => (w._1, w._2, w._3.sorted))
      }
      if (disjoint) withClue(s"seed $seed: one partial per window") { slices.size should be <= windows.size }
    }
  }

  test("a listing is checked: windows hold their time, are non-empty and short enough, listed once, one where they do not overlap") {
    val k = kind()
    k.checked(5, Array(0L, 10L, 5L, 6L)).toSeq shouldBe Seq(5L, 6L, 0L, 10L) // by (end, start)
    def error(body: => Any) = intercept[WindowError](body).getMessage
    error(k.checked(5, Array(6L, 10L))) should include("which does not contain the time")
    error(k.checked(5, Array(0L, 5L))) should include("which does not contain the time")
    error(k.checked(5, Array(5L, 5L))) should include("empty or inverted")
    error(k.checked(5, Array(0L, 1001L))) should include("longer than the max size 1000")
    error(k.checked(5, Array(0L, 10L, 0L, 10L))) should include("twice")
    error(kind(disjoint = true).checked(5, Array(0L, 10L, 5L, 6L))) should include("at most one")
    error(k.checkSame(5, Array(0L, 10L), Array(0L, 11L))) should include("listed with different windows")
    error(kind(disjoint = true).checkSame(0, Array(0L, 10L), Array(0L, 11L))) should include("declared non-overlapping")
  }

  test("a window listed for some of its times but not others fails the cursor, naming both times") {
    val agg = new Collect[Int]
    def run(slices: (Long, Array[Long])*): String = intercept[WindowError] {
      val cursor = kind().cursor(slices.iterator.map { case (t, l) => Reaching(t, t, ArrayBuffer(1), l) }, agg)
      while (cursor.advance()) ()
    }.getMessage
    // [0, 10) listed at 2, not at 5
    run(2L -> Array(0L, 10L), 5L -> Array(5L, 8L)) should include("the window [0 ticks, 10 ticks) is listed for 2 ticks but not for 5 ticks")
    // [0, 10) listed at 5, not at 2
    run(2L -> Array(2L, 3L), 5L -> Array(0L, 10L)) should include("the window [0 ticks, 10 ticks) is listed for 5 ticks but not for 2 ticks")
  }

  test("specs and calls read back as the definition") {
    val d = ListedWindows.maxSize("92 days").by("quarters").nonOverlapping().grace("1 day")
    d.spec shouldBe "listed by quarters max size 92 days non-overlapping grace 1 day"
    WindowSpec.parse(d.spec) shouldBe d
    WindowSpec.parse("ListedWindows.maxSize('92 days').nonOverlapping()").spec shouldBe "listed max size 92 days non-overlapping"
    intercept[WindowError](ListedWindows.maxSize("-1")).getMessage should include("must be positive")
    intercept[WindowError](d.by(" ")).getMessage should include("must have a name")
  }
}
