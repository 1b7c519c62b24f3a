package windowagg.core

import scala.collection.immutable.SortedMap
import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite

import windowagg.SlidingWindows
import org.scalatest.matchers.should.Matchers

import windowagg.core.SlidingWindowSweepSpec.Case
import windowagg.core.SweepHarness.Out
import windowagg.core.TestAggregations.Collect

/**
 * The streaming rules for sliding windows against the contract's brute force
 * ([[BruteForceSliding]]): which windows are produced as the watermark passes their ends, which a
 * batch of new records changed, lateness, how far back partials must be kept, and a simulated
 * stream whose emitted windows are the batch windows on the records it kept.
 *
 * Partials are built afresh for every call (the sweep takes over their buffers), with collect_list
 * in place over record ids, so contents and their order show.
 */
class SlidingWindowFinalitySpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {
  import SlidingWindowFinalitySpec._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  private type W = Out[Vector[Int]]

  /** Fresh partials of `records` (time, id), one per distinct time at or after `keepFrom`. */
  private def partials(records: Seq[(Long, Int)], keepFrom: Long, agg: Collect[Int]): Iterator[Reaching[ArrayBuffer[Int]]] =
    SweepHarness.partials(records.filter(_._1 >= keepFrom), agg)(v => ArrayBuffer(v)).iterator.map(p => Reaching(p.time, p.time, p.partial))

  /** windowsEndingIn over the partials kept for `from` (at or after oldestNeeded(from)). */
  private def endingIn(f: WindowFinality, records: Seq[(Long, Int)], from: Long, until: Long): (Vector[W], Option[Long]) = {
    val agg = new Collect[Int]
    val out = Vector.newBuilder[W]
    val next = f.windowsEndingIn(partials(records, f.oldestNeeded(from), agg), agg, from, until) { (s, e, p) =>
      out += Out(s, e, p.toVector)
    }
    (out.result(), next)
  }

  private def changedBy(f: WindowFinality, records: Seq[(Long, Int)], keepFrom: Long, from: Long, times: Array[Long]): Vector[W] = {
    val agg = new Collect[Int]
    val out = Vector.newBuilder[W]
    f.windowsChangedBy(partials(records, keepFrom, agg), agg, from, times)((s, e, p) => out += Out(s, e, p.toVector))
    out.result()
  }

  private def brute(records: Seq[(Long, Int)], size: Long): Vector[W] =
    BruteForceSliding.windows(records, size).map(w => Out(w.start, w.end, w.values))

  private def firstEndFrom(windows: Vector[W], until: Long): Option[Long] = windows.map(_.end).filter(_ >= until).minOption

  // ---------------------------------------------------------------------------------------------
  // Lateness and the partials to keep

  test("isLate: t + size behind the watermark (t + size = watermark is on time); saturating") {
    val f = new WindowFinality(SlidingWindows.Resolved(10))
    f.isLate(90, null, 100) shouldBe false
    f.isLate(89, null, 100) shouldBe true
    f.isLate(100, null, 100) shouldBe false
    f.isLate(95, null, 100) shouldBe false // behind the watermark, but [95, 105] is open
    f.isLate(Long.MinValue, null, Long.MinValue) shouldBe false
    f.isLate(Long.MinValue, null, Long.MinValue + 10) shouldBe false
    f.isLate(Long.MinValue, null, Long.MinValue + 11) shouldBe true
    f.isLate(Long.MaxValue, null, Long.MaxValue) shouldBe false
    f.isLate(Long.MaxValue - 10, null, Long.MaxValue) shouldBe false
    f.isLate(Long.MaxValue - 11, null, Long.MaxValue) shouldBe true
    val huge = new WindowFinality(SlidingWindows.Resolved(Long.MaxValue))
    huge.isLate(0, null, Long.MaxValue) shouldBe false
    huge.isLate(-1, null, Long.MaxValue) shouldBe true
    huge.isLate(Long.MinValue, null, -1) shouldBe false
    huge.isLate(Long.MinValue, null, 0) shouldBe true
  }

  test("property: isLate is exactly t + size < watermark on exact integers") {
    val edge = Gen.oneOf(Gen.choose(-50L, 50L), Gen.choose(Long.MaxValue - 50, Long.MaxValue),
      Gen.choose(Long.MinValue, Long.MinValue + 50))
    val gen = for {
      size <- Gen.oneOf(Gen.choose(1L, 30L), Gen.oneOf(Long.MaxValue, Long.MaxValue / 2))
      t <- edge
      wm <- Gen.oneOf(edge, Gen.choose(-2L, 2L).map(d => SessionCases.saturatingAdd(SessionCases.saturatingAdd(t, size), d)))
    } yield (size, t, wm)
    forAll(gen) { case (size, t, wm) =>
      new WindowFinality(SlidingWindows.Resolved(size)).isLate(t, null, wm) shouldBe (BigInt(t) + size < BigInt(wm))
    }
  }

  test("oldestNeeded: finalBefore - size - 1, saturating at Long.MinValue") {
    new WindowFinality(SlidingWindows.Resolved(10)).oldestNeeded(100) shouldBe 89L
    new WindowFinality(SlidingWindows.Resolved(10)).oldestNeeded(-100) shouldBe -111L
    new WindowFinality(SlidingWindows.Resolved(1)).oldestNeeded(0) shouldBe -2L
    new WindowFinality(SlidingWindows.Resolved(10)).oldestNeeded(Long.MinValue) shouldBe Long.MinValue
    new WindowFinality(SlidingWindows.Resolved(10)).oldestNeeded(Long.MinValue + 5) shouldBe Long.MinValue
    new WindowFinality(SlidingWindows.Resolved(10)).oldestNeeded(Long.MinValue + 11) shouldBe Long.MinValue
    new WindowFinality(SlidingWindows.Resolved(10)).oldestNeeded(Long.MinValue + 12) shouldBe Long.MinValue + 1
    new WindowFinality(SlidingWindows.Resolved(10)).oldestNeeded(Long.MaxValue) shouldBe Long.MaxValue - 11
    new WindowFinality(SlidingWindows.Resolved(Long.MaxValue)).oldestNeeded(0) shouldBe Long.MinValue
    new WindowFinality(SlidingWindows.Resolved(Long.MaxValue)).oldestNeeded(-1) shouldBe Long.MinValue
    new WindowFinality(SlidingWindows.Resolved(Long.MaxValue)).oldestNeeded(Long.MaxValue) shouldBe -1L
  }

  test("oldestNeeded is tight: the right window of the time just before finalBefore - size ends at finalBefore") {
    // size 10, records at 89 and 95: the right window of 89 is [90, 100] and holds 95
    val f = new WindowFinality(SlidingWindows.Resolved(10))
    val records = Seq(89L -> 0, 95L -> 1)
    f.oldestNeeded(100) shouldBe 89L
    endingIn(f, records, 100, Long.MaxValue) shouldBe ((Vector(Out(90L, 100L, Vector(1))), None))
    // dropping 89 as well would lose that window
    val agg = new Collect[Int]
    val lost = ArrayBuffer.empty[(Long, Long)]
    f.windowsEndingIn(partials(records, 90, agg), agg, 100, Long.MaxValue)((s, e, _) => lost += ((s, e)))
    lost shouldBe empty
  }

  test("property: partials before oldestNeeded(from) change no window ending at or after from") {
    val gen = for {
      c <- SlidingWindowSweepSpec.anyCase
      from <- pointNear(c)
    } yield (c, from)
    forAll(gen) { case (c, from) =>
      val f = new WindowFinality(SlidingWindows.Resolved(c.size))
      withClue(s"$c, from $from\n") {
        endingIn(f, c.records, from, Long.MaxValue)._1 shouldBe brute(c.records, c.size).filter(w => w.end >= from && w.end < Long.MaxValue)
      }
    }
  }

  test("a size that is not positive is rejected") {
    an[IllegalArgumentException] should be thrownBy new WindowFinality(SlidingWindows.Resolved(0))
    an[IllegalArgumentException] should be thrownBy new WindowFinality(SlidingWindows.Resolved(-10))
  }

  // ---------------------------------------------------------------------------------------------
  // windowsEndingIn

  test("windowsEndingIn: the SEMANTICS.md example, step by step") {
    // S = 10, records at 10, 14, 15: windows [0,10], [4,14], [5,15], [11,21], [15,25]
    val f = new WindowFinality(SlidingWindows.Resolved(10))
    val records = Seq(10L -> 0, 14L -> 1, 15L -> 2)
    endingIn(f, records, Long.MinValue, 10) shouldBe ((Vector(), Some(10L)))
    endingIn(f, records, Long.MinValue, 11) shouldBe ((Vector(Out(0L, 10L, Vector(0))), Some(14L)))
    endingIn(f, records, 11, 15) shouldBe ((Vector(Out(4L, 14L, Vector(0, 1))), Some(15L)))
    endingIn(f, records, 15, 21) shouldBe ((Vector(Out(5L, 15L, Vector(0, 1, 2))), Some(21L)))
    endingIn(f, records, 21, 22) shouldBe ((Vector(Out(11L, 21L, Vector(1, 2))), Some(25L)))
    endingIn(f, records, 22, 26) shouldBe ((Vector(Out(15L, 25L, Vector(2))), None))
    endingIn(f, records, 26, 1000) shouldBe ((Vector(), None))
    endingIn(f, records, 10, 10) shouldBe ((Vector(), Some(10L))) // an empty range
    endingIn(f, Seq(), Long.MinValue, 100) shouldBe ((Vector(), None))
  }

  test("property: consecutive watermark steps emit every window once; each step returns the next window end") {
    val gen = for {
      c <- SlidingWindowSweepSpec.anyCase
      k <- Gen.choose(1, 8)
      points <- Gen.listOfN(k, pointNear(c))
      toTheEnd <- Gen.oneOf(false, true)
    } yield (c, (points ++ (if (toTheEnd) Seq(Long.MaxValue) else Nil)).distinct.sorted)
    forAll(gen) { case (c, untils) =>
      val f = new WindowFinality(SlidingWindows.Resolved(c.size))
      val all = brute(c.records, c.size)
      val emitted = ArrayBuffer.empty[W]
      withClue(s"$c, watermarks ${untils.mkString(", ")}\n") {
        untils.foldLeft(Long.MinValue) { (from, until) =>
          val (got, next) = endingIn(f, c.records, from, until)
          got shouldBe all.filter(w => from <= w.end && w.end < until)
          next shouldBe firstEndFrom(all, until)
          emitted ++= got
          until
        }
        emitted.toVector shouldBe all.filter(_.end < untils.last)
        emitted.map(_.start).distinct.length shouldBe emitted.length
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // windowsChangedBy

  test("windowsChangedBy: the windows holding a new time, and each new time's right window, ending at or after from") {
    // S = 10, records at 10, 14, 15: windows [0,10]{10}, [4,14]{10,14}, [5,15]{10,14,15}, [11,21]{14,15}, [15,25]{15}
    val f = new WindowFinality(SlidingWindows.Resolved(10))
    val records = Seq(10L -> 0, 14L -> 1, 15L -> 2)
    // 14 new: it is in [4,14], [5,15], [11,21]; its right window [15,25] did not exist before it
    changedBy(f, records, Long.MinValue, Long.MinValue, Array(14L)) shouldBe Vector(
      Out(4L, 14L, Vector(0, 1)), Out(5L, 15L, Vector(0, 1, 2)), Out(11L, 21L, Vector(1, 2)), Out(15L, 25L, Vector(2)))
    changedBy(f, records, Long.MinValue, 15, Array(14L)) shouldBe Vector(
      Out(5L, 15L, Vector(0, 1, 2)), Out(11L, 21L, Vector(1, 2)), Out(15L, 25L, Vector(2)))
    // 10 new: its right window [11,21] holds only 14 and 15, and is new
    changedBy(f, records, Long.MinValue, 16, Array(10L)) shouldBe Vector(Out(11L, 21L, Vector(1, 2)))
    changedBy(f, records, Long.MinValue, 15, Array(10L)) shouldBe
      Vector(Out(5L, 15L, Vector(0, 1, 2)), Out(11L, 21L, Vector(1, 2)))
    changedBy(f, records, Long.MinValue, 26, Array(10L, 14L, 15L)) shouldBe Vector()
    changedBy(f, records, Long.MinValue, Long.MinValue, Array(10L, 15L)) shouldBe brute(records, 10)
    changedBy(f, records, Long.MinValue, Long.MinValue, Array()) shouldBe Vector()
  }

  /**
   * The windows `windowsChangedBy` documents for new records at `times`: ending at or after
   * `from`, holding one of the times or starting right after one.
   */
  private def documentedChanged(all: Vector[W], from: Long, times: Set[Long]): Vector[W] =
    all.filter(w => w.end >= from && (times.exists(t => w.start <= t && t <= w.end) || times.contains(w.start - 1)))

  /**
   * Checks windowsChangedBy for the new records `fresh` (ids) among `records`: exactly the documented
   * windows, with their current contents, and among them every window ending at or after `from`
   * that the new records created or changed (the brute force with and without them).
   */
  private def checkChangedBy(f: WindowFinality, size: Long, state: Seq[(Long, Int)], records: Seq[(Long, Int)],
      fresh: Set[Int], from: Long, keepFrom: Long): Unit = {
    val times = records.filter(r => fresh(r._2)).map(_._1).distinct.sorted.toArray
    val after = brute(records, size)
    val before = brute(records.filterNot(r => fresh(r._2)), size).toSet
    val got = changedBy(f, state, keepFrom, from, times)
    got shouldBe documentedChanged(after, from, times.toSet)
    val changed = after.filter(w => w.end >= from && !before.contains(w))
    changed.foreach(w => assert(got.contains(w), s"the new records changed or created $w, but it was not emitted"))
  }

  test("property: windowsChangedBy emits the documented windows, including every window the new records changed or created") {
    val gen = for {
      c <- SlidingWindowSweepSpec.anyCase
      from <- Gen.frequency(1 -> Gen.const(Long.MinValue), 4 -> pointNear(c))
      pick <- Gen.oneOf(Gen.const(0.0), Gen.const(1.0), Gen.choose(0.0, 1.0))
      seed <- Gen.long
      pruned <- Gen.oneOf(false, true)
    } yield {
      val r = new Random(seed)
      (c, from, c.records.map(_._2).filter(_ => r.nextDouble() < pick).toSet, pruned)
    }
    forAll(gen) { case (c, from, fresh, pruned) =>
      val f = new WindowFinality(SlidingWindows.Resolved(c.size))
      val keepFrom = if (pruned) f.oldestNeeded(from) else Long.MinValue
      withClue(s"$c, from $from, new records ${fresh.toSeq.sorted.mkString(", ")}, pruned $pruned\n") {
        checkChangedBy(f, c.size, c.records, c.records, fresh, from, keepFrom)
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // A simulated stream

  /**
   * One key's records in arrival order, cut into micro-batches; each batch sees the watermark
   * max time of earlier batches - delay (none before the first), the max taken over this key's
   * records and the times other keys brought (so the watermark can run ahead of this key and prune
   * all its partials). Per batch, as the operator does:
   * the windows ending in [finalBefore, watermark) are emitted from the kept partials and checked
   * against the brute force over every record kept so far (so pruning shows if it loses anything;
   * a key that forgot finalBefore must not emit again what was dealt with before),
   * partials before oldestNeeded(watermark) are dropped, late records dropped by the documented
   * rule, the others merged into their time's partial, and the windows they changed
   * (windowsChangedBy from the watermark) checked too; a key left with no partials forgets finalBefore.
   */
  private def simulate(s: Sim, coverage: Coverage): SimResult = {
    val f = new WindowFinality(SlidingWindows.Resolved(s.size))
    var kept = SortedMap.empty[Long, Vector[Int]] // the key's state: ids per time, in arrival order
    var finalBefore: Option[Long] = None // the operator's, forgotten when a key has no partials left
    var frontier = Long.MinValue // windows ending before it were dealt with, never forgotten
    var watermark = Long.MinValue
    var maxSeen: Option[Long] = None
    val accepted = ArrayBuffer.empty[(Long, Int)] // every record ever kept, in arrival order
    val late = ArrayBuffer.empty[(Long, Int)]
    val emitted = ArrayBuffer.empty[W]
    def state: Vector[(Long, Int)] = kept.toVector.flatMap { case (t, ids) => ids.map(t -> _) }

    def finalizeUpTo(wm: Long): Unit = {
      val from = finalBefore.getOrElse(Long.MinValue)
      if (wm > from) {
        val (got, next) = endingIn(f, state, from, wm)
        val expected = brute(accepted.toVector, s.size)
        got shouldBe expected.filter(w => math.max(from, frontier) <= w.end && w.end < wm)
        next shouldBe firstEndFrom(expected, wm)
        emitted ++= got
        val before = kept.size
        kept = kept.filter(_._1 >= f.oldestNeeded(wm))
        if (kept.size < before) coverage.pruned += 1
        finalBefore = Some(wm)
        frontier = math.max(frontier, wm)
      }
    }

    s.batches.zipWithIndex.foreach { case (batch, i) =>
      finalizeUpTo(watermark)
      val (dropped, fresh) = batch.partition { case (t, _) => f.isLate(t, null, watermark) }
      late ++= dropped
      fresh.foreach { case (t, id) => kept = kept.updated(t, kept.getOrElse(t, Vector.empty) :+ id) }
      accepted ++= fresh
      if (fresh.nonEmpty) {
        // update mode: the windows this batch changed, from the kept partials
        checkChangedBy(f, s.size, state, accepted.toVector, fresh.map(_._2).toSet, watermark, Long.MinValue)
      }
      if (kept.isEmpty && finalBefore.nonEmpty) {
        finalBefore = None
        coverage.emptied += 1
      }
      val seen = batch.map(_._1) ++ s.others.lift(i).filter(_ != Long.MinValue)
      if (seen.nonEmpty) maxSeen = Some((maxSeen.toSeq ++ seen).max)
      maxSeen.foreach(mx => watermark = math.max(watermark, SessionCases.saturatingAdd(mx, -s.delay)))
    }
    finalizeUpTo(Long.MaxValue)
    if (late.nonEmpty) coverage.withLate += 1
    emitted.map(_.start).distinct.length shouldBe emitted.length // each window once
    accepted.length + late.length shouldBe s.records.length
    if (s.delay >= s.span && s.others.forall(_ == Long.MinValue)) {
      late shouldBe empty
      emitted.toVector shouldBe brute(s.records, s.size) // the batch windows exactly
    }
    SimResult(emitted.toVector, late.toVector)
  }

  test("property: a simulated stream emits each final window once, as the batch sweep over the records kept so far") {
    val coverage = new Coverage
    forAll(simGen) { s =>
      withClue(s"$s\n")(simulate(s, coverage))
    }
    info(s"runs that dropped late records: ${coverage.withLate}, steps that pruned partials: ${coverage.pruned}, " +
      s"times a key was left with no partials: ${coverage.emptied}")
    assert(coverage.withLate >= 20, s"only ${coverage.withLate} runs dropped late records")
    assert(coverage.pruned >= 40, s"only ${coverage.pruned} steps pruned partials")
    assert(coverage.emptied >= 20, s"a key was left with no partials only ${coverage.emptied} times")
  }

  test("property: with a delay covering the whole time span, the stream emits exactly the batch windows") {
    val gen = for {
      s <- simGen
      extra <- Gen.oneOf(0L, 1L, s.size)
    } yield s.copy(delay = SessionCases.saturatingAdd(s.span, extra), others = Vector.empty)
    forAll(gen) { s =>
      withClue(s"$s\n")(simulate(s, new Coverage))
    }
  }

  test("a simulated stream, by hand: a record behind the watermark updates only the open windows") {
    // S = 10, delay 0: batch 1 {10, 14} -> watermark 14; batch 2 {15, 3}: [0, 10] is final; 3 is
    // late (3 + 10 < 14); batch 3 {6}: watermark 15, [4, 14] is final; 6 is on time (6 + 10 >= 15)
    // but its left window [-4, 6] and [4, 14] are final: it joins [5, 15] and makes [7, 17]
    val s = Sim(10, Vector(10L -> 0, 14L -> 1, 15L -> 2, 3L -> 3, 6L -> 4), Vector(2, 2, 1), 0, Vector.empty)
    val result = simulate(s, new Coverage)
    result.late shouldBe Vector(3L -> 3)
    result.windows shouldBe Vector(
      Out(0L, 10L, Vector(0)),
      Out(4L, 14L, Vector(0, 1)),
      Out(5L, 15L, Vector(4, 0, 1, 2)),
      Out(7L, 17L, Vector(0, 1, 2)),
      Out(11L, 21L, Vector(1, 2)),
      Out(15L, 25L, Vector(2)))
  }
}

object SlidingWindowFinalitySpec {
  /** A watermark near the case's window ends (exactly at one, one either side) or anywhere around them. */
  def pointNear(c: Case): Gen[Long] = {
    val times = c.records.map(_._1)
    val ends = times.flatMap(t => Seq(t, t + 1 + c.size)) // left and right window ends
    val lo = times.min - c.size - 3
    val hi = times.max + c.size + 3
    Gen.frequency(
      3 -> Gen.oneOf(ends).flatMap(e => Gen.choose(-1L, 1L).map(e + _)),
      1 -> Gen.choose(lo, hi))
  }

  final case class SimResult(windows: Vector[Out[Vector[Int]]], late: Vector[(Long, Int)])

  final class Coverage {
    var withLate = 0
    var pruned = 0
    var emptied = 0
  }

  /**
   * Records in arrival order, cut into batches of the given sizes; `others(i)` is the largest time
   * other keys brought in batch i (Long.MinValue: none).
   */
  final case class Sim(size: Long, records: Vector[(Long, Int)], batchSizes: Vector[Int], delay: Long, others: Vector[Long]) {
    def batches: Vector[Vector[(Long, Int)]] = {
      val out = Vector.newBuilder[Vector[(Long, Int)]]
      var rest = records
      batchSizes.foreach { n => out += rest.take(n); rest = rest.drop(n) }
      if (rest.nonEmpty) out += rest
      out.result()
    }
    def span: Long = records.map(_._1).max - records.map(_._1).min
    override def toString: String =
      s"Sim(size = $size, records (time, id) = ${records.mkString(", ")}, batch sizes $batchSizes, delay $delay, " +
        s"other keys' times ${others.map(t => if (t == Long.MinValue) "-" else t.toString).mkString(", ")})"
  }

  /** The sweep suite's cases (times within +-2^61), in shuffled or nearly time order, delays up to beyond the span. */
  val simGen: Gen[Sim] = for {
    c <- SlidingWindowSweepSpec.anyCase
    sizes <- Gen.listOfN(c.records.length, Gen.frequency(3 -> Gen.choose(1, 3), 1 -> Gen.choose(0, 10)))
    span = c.records.map(_._1).max - c.records.map(_._1).min
    delay <- Gen.frequency(
      2 -> Gen.const(0L),
      1 -> Gen.const(1L),
      2 -> Gen.const(c.size),
      3 -> Gen.choose(0L, math.max(span, 1L)),
      1 -> Gen.const(span / 2),
      1 -> Gen.const(span))
    others <- SessionMergingSpec.othersGen(c.records.map(_._1), c.records.length + 1)
    seed <- Gen.long
  } yield {
    val records =
      if (seed % 3 == 0) {
        val r = new Random(seed)
        val sorted = c.records.sortBy(_._1).toArray
        (0 until sorted.length / 4).foreach { _ =>
          val i = r.nextInt(sorted.length)
          val j = math.min(sorted.length - 1, i + 1 + r.nextInt(3))
          val x = sorted(i); sorted(i) = sorted(j); sorted(j) = x
        }
        sorted.toVector
      } else c.records
    Sim(c.size, records, sizes.toVector, delay, others)
  }
}
