package windowagg.core

import scala.collection.mutable.ArrayBuffer

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.{CumulativeWindows, TimeWindows}
import windowagg.core.TestAggregations.Collect

/**
 * Tumbling, hopping and cumulative windows: each kind's listing of windows against the contract's
 * rules in exact arithmetic ([[ReferenceWindows]]); the slicing cursor (over slices, as the batch
 * operator feeds it) against the same rules over single records; streaming finality against batch.
 */
class AlignedWindowsSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {

  /** The rules of a kind the generators below built, from the parameters they chose. */
  private def reference(kind: EnumeratedWindows): ReferenceWindows.ByTime = kind match {
    case TimeWindows.Resolved(sizeTicks, advanceTicks, offsetTicks, _) => ReferenceWindows.Hopping(sizeTicks, advanceTicks, offsetTicks)
    case CumulativeWindows.Resolved(stepTicks, maxTicks, offsetTicks, _) => ReferenceWindows.Cumulative(stepTicks, maxTicks, offsetTicks)
    case other => fail(s"the generators build no $other")
  }

  private def listed(kind: EnumeratedWindows, t: Long): Set[(Long, Long)] = {
    val out = ArrayBuffer.empty[(Long, Long)]
    kind.foreachWindow(t)((s, e) => out += ((s, e)))
    out.toSet
  }

  private val hopping: Gen[TimeWindows.Resolved] = for {
    advance <- Gen.choose(1L, 12L)
    multiple <- Gen.choose(1L, 5L)
    extra <- Gen.oneOf(0L, 0L, 1L, advance / 2)
    offset <- Gen.choose(0L, advance - 1)
  } yield TimeWindows.Resolved(advance * multiple + extra, advance, offset)

  private val cumulative: Gen[CumulativeWindows.Resolved] = for {
    step <- Gen.choose(1L, 10L)
    steps <- Gen.choose(1L, 6L)
    offset <- Gen.choose(0L, step * steps - 1)
  } yield CumulativeWindows.Resolved(step, step * steps, offset)

  private val records: Gen[Vector[(Long, Int)]] = for {
    n <- Gen.choose(0, 40)
    times <- Gen.listOfN(n, Gen.choose(-60L, 60L))
  } yield times.zipWithIndex.toVector

  test("property: hopping and tumbling windows are those of the independent formula, pre-epoch times included, and close first and last as listed") {
    forAll(hopping, Gen.choose(-1000L, 1000L)) { (kind, t) =>
      listed(kind, t) shouldBe reference(kind).windowsOf(t).toSet
      kind.closesAt(t) shouldBe listed(kind, t).map(_._2 - 1).max
      kind.firstClosesAt(t) shouldBe listed(kind, t).map(_._2 - 1).min
      val slice = kind.sliceStart(t)
      listed(kind, slice) shouldBe listed(kind, t) // a slice lies whole in each of its windows
    }
  }

  test("property: cumulative windows are those of the independent formula") {
    forAll(cumulative, Gen.choose(-1000L, 1000L)) { (kind, t) =>
      listed(kind, t) shouldBe reference(kind).windowsOf(t).toSet
      kind.closesAt(t) shouldBe listed(kind, t).map(_._2 - 1).max
      kind.firstClosesAt(t) shouldBe listed(kind, t).map(_._2 - 1).min
      listed(kind, kind.sliceStart(t)) shouldBe listed(kind, t)
    }
  }

  test("property: a time's windows ending in a span, and those starting after a time, are the formula's, for hopping and cumulative windows") {
    forAll(Gen.oneOf(hopping, cumulative), Gen.choose(-200L, 200L), Gen.choose(-250L, 250L), Gen.choose(-250L, 250L),
        Gen.choose(-250L, 250L)) { (kind, t, a, b, after) =>
      val (from, until) = (math.min(a, b), math.max(a, b))
      val all = reference(kind).windowsOf(t).toSet
      val inSpan = ArrayBuffer.empty[(Long, Long)]
      val later = kind.foreachWindowEndingIn(t, from, until)((s, e) => inSpan += ((s, e)))
      withClue(s"$kind, t $t, [$from, $until)\n") {
        inSpan.toSet shouldBe all.filter { case (_, e) => e - 1 >= from && e - 1 < until }
        inSpan.size shouldBe inSpan.toSet.size
        later shouldBe all.map(_._2 - 1).filter(_ >= until).minOption.getOrElse(Long.MaxValue)
        val startingAfter = ArrayBuffer.empty[(Long, Long)]
        if (after < t) kind.foreachWindowStartingAfter(after, t)((s, e) => startingAfter += ((s, e)))
        startingAfter.toSet shouldBe (if (after < t) all.filter(_._1 > after) else Set.empty)
      }
    }
  }

  test("Spark's window() boundaries: 10-minute windows every 5 minutes starting 2 minutes past, before and after 1970") {
    val minute = 60000000L
    val kind = TimeWindows.Resolved(10 * minute, 5 * minute, 2 * minute)
    listed(kind, 0L) shouldBe Set((-8 * minute, 2 * minute), (-3 * minute, 7 * minute))
    listed(kind, -minute) shouldBe Set((-8 * minute, 2 * minute), (-3 * minute, 7 * minute))
    listed(kind, -4 * minute) shouldBe Set((-8 * minute, 2 * minute), (-13 * minute, -3 * minute))
    listed(kind, 2 * minute) shouldBe Set((2 * minute, 12 * minute), (-3 * minute, 7 * minute))
  }

  /** The slicing cursor's windows over slice partials, as the operator feeds it. */
  private def swept(kind: EnumeratedWindows, recs: Seq[(Long, Int)]): Vector[(Long, Long, Vector[Int])] = {
    val agg = new Collect[Int]
    // rows come sorted by time (ties in input order) and are folded into their slice in that order
    val slices = SweepHarness.partials(recs.sortBy(_._1).map { case (t, v) => (kind.partialTime(t), v) }, agg)(v => ArrayBuffer(v))
    val cursor = kind.cursor(slices.iterator.map(p => Reaching(p.time, p.time, p.partial)), agg)
    val out = Vector.newBuilder[(Long, Long, Vector[Int])]
    while (cursor.advance()) out += ((cursor.start, cursor.end, cursor.aggregate.toVector))
    out.result()
  }

  /** The reference's windows, in end order as the cursor gives them. */
  private def brute(reference: ReferenceWindows, recs: Seq[(Long, Int)]): Vector[(Long, Long, Vector[Int])] =
    reference.windows(recs).toVector.map { case ((s, e), rs) => (s, e, rs.map(_._2)) }.sortBy(w => (w._2, w._1))

  test("property: the slicing cursor gives every window holding records once, in end order, records in time order") {
    forAll(Gen.oneOf(hopping, cumulative), records) { (kind, recs) =>
      withClue(s"$kind, $recs\n") {
        val got = swept(kind, recs)
        got shouldBe brute(reference(kind), recs)
        got.map(_._2) shouldBe sorted
      }
    }
  }

  test("property: a kind whose window starts go back is still right (combined from runs of slices)") {
    // windows [t/10*10 - 20, …+30) and [t/10*10, …+10): ordered by end, the starts go back and forth
    val rule = new ReferenceWindows.ByTime {
      override def windowsOf(time: Long): Seq[(Long, Long)] = {
        val base = Math.floorDiv(time, 10L) * 10
        (base, base + 10) +: (base - 20 to base by 10).map(s => (s, s + 30))
      }
    }
    val nested = new EnumeratedWindows {
      override def graceTicks: Option[Long] = None
      override def maxSpan: Long = 29
      override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit =
        rule.windowsOf(time).foreach { case (s, e) => window(s, e) }
    }
    forAll(records) { recs =>
      withClue(s"$recs\n") { swept(nested, recs) shouldBe brute(rule, recs) }
    }
  }

  test("property: streaming finality over random watermark steps emits exactly the batch windows") {
    forAll(Gen.oneOf(hopping, cumulative), records, Gen.listOfN(5, Gen.choose(-80L, 80L))) { (kind, recs, steps) =>
      val finality = new WindowFinality(kind)
      val all = brute(reference(kind), recs)
      val emitted = ArrayBuffer.empty[(Long, Long, Vector[Int])]
      val untils = (steps :+ Long.MaxValue).distinct.sorted
      withClue(s"$kind, $recs, watermarks $untils\n") {
        untils.foldLeft(Long.MinValue) { (from, until) =>
          val agg = new Collect[Int]
          val kept = recs.sortBy(_._1).filter(r => kind.partialTime(r._1) >= finality.oldestNeeded(from))
          val slices = SweepHarness.partials(kept.map { case (t, v) => (kind.partialTime(t), v) }, agg)(v => ArrayBuffer(v))
          finality.windowsEndingIn(slices.iterator.map(p => Reaching(p.time, p.time, p.partial)), agg, from, until) {
            (s, e, p) => emitted += ((s, e, p.toVector))
          }
          until
        }
        emitted.toVector shouldBe all.filter(_._2 - 1 < Long.MaxValue)
      }
    }
  }

  test("property: cumulative partials folded as the watermark moves (foldable) give exactly the batch windows") {
    var folds = 0 // over all cases: the property is about folded partials, so some must be
    forAll(cumulative, records, Gen.listOfN(5, Gen.choose(-80L, 80L)), minSuccessful(300)) { (kind, recs, steps) =>
      val finality = new WindowFinality(kind)
      val all = brute(reference(kind), recs)
      val emitted = ArrayBuffer.empty[(Long, Long, Vector[Int])]
      val untils = (steps :+ Long.MaxValue).distinct.sorted
      // each record at its partial time; a fold moves the records of the folded times to the earliest of them
      var kept = recs.sortBy(_._1).map { case (t, v) => (kind.partialTime(t), v) }
      withClue(s"$kind, $recs, watermarks $untils\n") {
        untils.foldLeft(Long.MinValue) { (from, until) =>
          val agg = new Collect[Int]
          kept = kept.filter(_._1 >= finality.oldestNeeded(from))
          val slices = SweepHarness.partials(kept, agg)(v => ArrayBuffer(v))
          finality.windowsEndingIn(slices.iterator.map(p => Reaching(p.time, p.time, p.partial)), agg, from, until) {
            (s, e, p) => emitted += ((s, e, p.toVector))
          }
          finality.foldable(until).foreach { case (start, end) =>
            val times = kept.map(_._1).filter(t => start <= t && t < end).distinct
            if (times.size > 1) {
              folds += 1
              kept = kept.map { case (t, v) => (if (start <= t && t < end) times.min else t, v) }
            }
          }
          until
        }
        emitted.toVector shouldBe all.filter(_._2 - 1 < Long.MaxValue)
      }
    }
    folds should be > 50
  }

  test("property: a sweep up to a bound hands out the windows before it and returns the next one's last tick, as the whole cursor") {
    forAll(Gen.oneOf(hopping, cumulative), records, Gen.choose(-80L, 80L), Gen.choose(-80L, 80L), minSuccessful(300)) {
        (kind, recs, a, b) =>
      val (from, until) = (math.min(a, b), math.max(a, b))
      val finality = new WindowFinality(kind)
      val all = swept(kind, recs)
      val emitted = ArrayBuffer.empty[(Long, Long, Vector[Int])]
      val agg = new Collect[Int]
      val slices = SweepHarness.partials(recs.sortBy(_._1).map { case (t, v) => (kind.partialTime(t), v) }, agg)(v => ArrayBuffer(v))
      val next = finality.windowsEndingIn(slices.iterator.map(p => Reaching(p.time, p.time, p.partial)), agg, from, until) {
        (s, e, p) => emitted += ((s, e, p.toVector))
      }
      withClue(s"$kind, $recs, [$from, $until)\n") {
        emitted.toVector shouldBe all.filter(w => w._2 - 1 >= from && w._2 - 1 < until)
        next shouldBe all.map(_._2 - 1).find(_ >= until)
      }
    }
  }

  test("cumulative windows keep only their period's partials, and fold all but the current step's") {
    val kind = CumulativeWindows.Resolved(10L, 60L, 0L)
    kind.oldestNeeded(125L) shouldBe 120L // the period [120, 180)
    kind.oldestNeeded(60L) shouldBe 60L
    kind.foldable(125L) shouldBe None // nothing of the period before the step holding 125
    kind.foldable(155L) shouldBe Some((120L, 150L))
    kind.foldable(150L) shouldBe Some((120L, 150L))
    kind.oldestNeeded(Long.MinValue) shouldBe Long.MinValue
    kind.foldable(Long.MinValue) shouldBe None
    CumulativeWindows.Resolved(10L, 60L, 5L).foldable(40L) shouldBe Some((5L, 35L))
  }
}
