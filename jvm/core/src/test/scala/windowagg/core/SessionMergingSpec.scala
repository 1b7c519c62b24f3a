package windowagg.core

import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.SessionCases.saturatingAdd
import windowagg.core.TestAggregations.{Collect, CollectImmutable, LongCell, Sum}

/**
 * The streaming session rules against the contract's brute force ([[BruteForceSessions]]), for
 * fixed and per-record gaps: merging records one time at a time into open sessions, what is merged
 * away, lateness and finality at their exact boundaries, and a simulated stream (micro-batches, an
 * advancing watermark, final sessions closed, late records dropped) whose result is the batch
 * result on the records it kept.
 *
 * Records are (time, gap, id), the id their input position; a record's reach is t + gap,
 * saturating at Long.MaxValue as the operator computes it. A record inside an existing session's
 * span is merged after that session's records, so contents are compared in time order only where
 * the merge order documented by `add` makes them so, and as multisets otherwise.
 */
class SessionMergingSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {
  import SessionMergingSpec._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  private type S = OpenSession[Vector[Int]]

  private val merging = new SessionMerging[Vector[Int]](new CollectImmutable[Int])

  private def reachOf(t: Long, gap: Long): Long = saturatingAdd(t, gap)

  /** Sessions as (first, last, reach, record ids sorted): bounds exact, contents as a multiset. */
  private def asSets(sessions: Seq[S]): Vector[(Long, Long, Long, Vector[Int])] =
    sessions.map(s => (s.first, s.last, s.reach, s.partial.sorted)).toVector

  private def expectedSets(records: Seq[Rec]): Vector[(Long, Long, Long, Vector[Int])] =
    BruteForceSessions.sessionsWithGaps(records).map(toSet(records))

  /** A brute-force session as (first, last, reach, ids sorted); its reach the largest t + gap of its records. */
  private def toSet(records: Seq[Rec])(s: BruteForceSessions.Session[Int]): (Long, Long, Long, Vector[Int]) = {
    val ids = s.values.toSet
    (s.first, s.last, records.filter(r => ids(r._3)).map(r => reachOf(r._1, r._2)).max, s.values.sorted)
  }

  /**
   * Adds records sharing one time to `open` and checks the step against the brute force over the
   * records of the open sessions and the new ones: the new sessions, exactly the bridged sessions
   * merged away (as they were), the session now holding the records, and the documented merge
   * order. Returns the new sessions.
   */
  private def checkedAdd(open: Vector[S], before: Vector[Rec], fresh: Vector[Rec]): Vector[S] = {
    val t = fresh.head._1
    val ids = fresh.map(_._3)
    val reach = fresh.map(r => reachOf(r._1, r._2)).max
    val (next, away, merged) = merging.add(open, t, reach, ids)
    val all = before ++ fresh
    val expected = BruteForceSessions.sessionsWithGaps(all)
    val holding = expected.find(_.values.contains(ids.head)).get
    val bridged = open.filter(s => s.partial.forall(holding.values.contains))
    withClue(s"adding $fresh to ${open.mkString(", ")}:\n") {
      asSets(next) shouldBe expected.map(toSet(all))
      next.map(_.first) shouldBe next.map(_.first).sorted
      away.sortBy(_.first) shouldBe bridged
      (merged.first, merged.last, merged.reach, merged.partial.sorted) shouldBe toSet(all)(holding)
      next should contain(merged)
      // documented order: sessions in start order, the records after those starting at or before them
      val (earlier, later) = bridged.partition(_.first <= t)
      merged.partial shouldBe earlier.flatMap(_.partial) ++ ids ++ later.flatMap(_.partial)
      // open sessions stay apart: each starts beyond the reach of those before it
      next.sliding(2).foreach {
        case Seq(a, b) => assert(a.reach < b.first, s"$b starts within the reach of $a")
        case _ =>
      }
    }
    next
  }

  /** Feeds `records` one by one in their order, checking every step; returns the open sessions at the end. */
  private def feedChecked(records: Seq[Rec]): Vector[S] = {
    var open = Vector.empty[S]
    var seen = Vector.empty[Rec]
    records.foreach { r =>
      open = checkedAdd(open, seen, Vector(r))
      seen :+= r
    }
    open
  }

  private def fixedRecords(c: SessionCases.FixedCase): Vector[Rec] = c.records.map { case (t, id) => (t, c.gap, id) }

  // ---------------------------------------------------------------------------------------------
  // add: examples (gap 10 unless said otherwise)

  test("the first record of a key opens [t, t] with its reach; nothing is merged away") {
    val (next, away, merged) = merging.add(Vector.empty, 5, 15, Vector(0))
    next shouldBe Vector(OpenSession(5L, 5L, 15L, Vector(0)))
    away shouldBe empty
    merged shouldBe OpenSession(5L, 5L, 15L, Vector(0))
  }

  test("a record bridges sessions within the gap on either side, inclusively") {
    val a = OpenSession(0L, 5L, 15L, Vector(0))
    val b = OpenSession(20L, 30L, 40L, Vector(1, 2))
    // 15 = a's reach and b.first - gap: bridges both
    val (next, away, merged) = merging.add(Vector(a, b), 15, 25, Vector(9))
    next shouldBe Vector(OpenSession(0L, 30L, 40L, Vector(0, 9, 1, 2)))
    away should contain theSameElementsAs Seq(a, b)
    merged shouldBe next.head
    // 16: beyond a's reach, within the gap before b
    merging.add(Vector(a, b), 16, 26, Vector(9)) shouldBe
      ((Vector(a, OpenSession(16L, 30L, 40L, Vector(9, 1, 2))), Seq(b), OpenSession(16L, 30L, 40L, Vector(9, 1, 2))))
    // 9 = b.first - gap - 1: joins only a
    merging.add(Vector(a, b), 9, 19, Vector(9))._2 shouldBe Seq(a)
    // 41 = b's reach + 1: a new session
    merging.add(Vector(a, b), 41, 51, Vector(9)) shouldBe
      ((Vector(a, b, OpenSession(41L, 41L, 51L, Vector(9))), Seq(), OpenSession(41L, 41L, 51L, Vector(9))))
    // 40 = b's reach: joins b, which now reaches 50
    merging.add(Vector(a, b), 40, 50, Vector(9))._1 shouldBe Vector(a, OpenSession(20L, 40L, 50L, Vector(1, 2, 9)))
    // -10 = a.first - gap: joins a; -11 does not
    merging.add(Vector(a, b), -10, 0, Vector(9))._1 shouldBe Vector(OpenSession(-10L, 5L, 15L, Vector(9, 0)), b)
    merging.add(Vector(a, b), -11, -1, Vector(9))._2 shouldBe empty
  }

  test("per-record gaps: a record's own reach and the sessions' reaches decide, in both directions") {
    // a long gap reaches forward to a session: 10 reaching 60 joins [50, 50]
    merging.add(Vector(OpenSession(50L, 50L, 51L, Vector(0))), 10, 60, Vector(9))._1 shouldBe
      Vector(OpenSession(10L, 50L, 60L, Vector(9, 0)))
    // reaching only 49 it does not: 50's own gap reaches forward only
    merging.add(Vector(OpenSession(50L, 50L, 51L, Vector(0))), 10, 49, Vector(9))._1 shouldBe
      Vector(OpenSession(10L, 10L, 49L, Vector(9)), OpenSession(50L, 50L, 51L, Vector(0)))
    // a short gap within a session's long reach joins it; the reach stays the larger one
    merging.add(Vector(OpenSession(0L, 0L, 100L, Vector(0))), 50, 51, Vector(9))._1 shouldBe
      Vector(OpenSession(0L, 50L, 100L, Vector(0, 9)))
    merging.add(Vector(OpenSession(0L, 0L, 100L, Vector(0))), 101, 102, Vector(9))._2 shouldBe empty
    // a long gap bridges several sessions at once
    val open = Vector(OpenSession(0L, 0L, 1L, Vector(0)), OpenSession(5L, 5L, 6L, Vector(1)), OpenSession(9L, 9L, 10L, Vector(2)))
    merging.add(open, 1, 9, Vector(9)) shouldBe
      ((Vector(OpenSession(0L, 9L, 10L, Vector(0, 9, 1, 2))), open, OpenSession(0L, 9L, 10L, Vector(0, 9, 1, 2))))
  }

  test("records inside a session's span are merged after its records") {
    val a = OpenSession(0L, 10L, 20L, Vector(0, 1))
    merging.add(Vector(a), 5, 15, Vector(2))._3 shouldBe OpenSession(0L, 10L, 20L, Vector(0, 1, 2))
    merging.add(Vector(a), 0, 10, Vector(2))._3 shouldBe OpenSession(0L, 10L, 20L, Vector(0, 1, 2))
    merging.add(Vector(a), 10, 20, Vector(2))._3 shouldBe OpenSession(0L, 10L, 20L, Vector(0, 1, 2))
    merging.add(Vector(a), 5, 35, Vector(2))._3 shouldBe OpenSession(0L, 10L, 35L, Vector(0, 1, 2))
    merging.add(Vector(a), -1, 9, Vector(2))._3 shouldBe OpenSession(-1L, 10L, 20L, Vector(2, 0, 1))
  }

  test("the partial of several records at one time merges as one piece") {
    val (next, _, merged) =
      merging.add(Vector(OpenSession(0L, 0L, 10L, Vector(0)), OpenSession(20L, 20L, 30L, Vector(1))), 10, 20, Vector(2, 3))
    merged shouldBe OpenSession(0L, 20L, 30L, Vector(0, 2, 3, 1))
    next shouldBe Vector(merged)
  }

  test("reaches at the ends of the range: Long.MinValue + Long.MaxValue = -1 is the last time joining") {
    val a = OpenSession(Long.MinValue, Long.MinValue, -1L, Vector(0))
    merging.add(Vector(a), -1, Long.MaxValue - 1, Vector(1))._1 shouldBe
      Vector(OpenSession(Long.MinValue, -1L, Long.MaxValue - 1, Vector(0, 1)))
    merging.add(Vector(a), 0, Long.MaxValue, Vector(1))._1 shouldBe Vector(a, OpenSession(0L, 0L, Long.MaxValue, Vector(1)))
    val b = OpenSession(Long.MaxValue, Long.MaxValue, Long.MaxValue, Vector(0))
    merging.add(Vector(b), 0, Long.MaxValue, Vector(1))._1 shouldBe Vector(OpenSession(0L, Long.MaxValue, Long.MaxValue, Vector(1, 0)))
    merging.add(Vector(b), -1, Long.MaxValue - 1, Vector(1))._1 shouldBe
      Vector(OpenSession(-1L, -1L, Long.MaxValue - 1, Vector(1)), b)
  }

  // ---------------------------------------------------------------------------------------------
  // add: properties

  test("property: fixed gaps, records one by one in random order give the brute-force sessions; exactly the bridged ones merge away") {
    forAll(SessionCases.fixedCase) { c =>
      val records = fixedRecords(c)
      withClue(s"$c\n")(asSets(feedChecked(records)) shouldBe expectedSets(records))
    }
  }

  test("property: per-record gaps, records one by one in random order give the brute-force sessions") {
    forAll(Gen.frequency(5 -> SessionCases.dynamicCase, 1 -> SessionCases.dynamicExtremeCase)) { c =>
      withClue(s"$c\n")(asSets(feedChecked(c.records)) shouldBe expectedSets(c.records))
    }
  }

  test("property: records arriving in time order give the brute-force contents in time order") {
    val gen = Gen.oneOf(SessionCases.fixedCase.map(fixedRecords), SessionCases.dynamicCase.map(_.records))
    forAll(gen) { records =>
      val inTimeOrder = records.sortBy(_._1) // stable: ties in input order
      withClue(s"records (time, gap, id) in arrival order: ${inTimeOrder.mkString(", ")}\n") {
        feedChecked(inTimeOrder).map(s => (s.first, s.last, s.partial)) shouldBe
          BruteForceSessions.sessionsWithGaps(inTimeOrder).map(s => (s.first, s.last, s.values))
      }
    }
  }

  test("property: a micro-batch added in runs gives the brute-force sessions, each run's records in time order") {
    val gen = for {
      records <- Gen.oneOf(SessionCases.fixedCase.map(fixedRecords), SessionCases.dynamicCase.map(_.records))
      earlier <- Gen.listOfN(records.length, Gen.oneOf(true, false))
    } yield (records, earlier)
    forAll(gen) { case (records, earlierFlags) =>
      val (before, batch) = records.zip(earlierFlags).partition(_._2) match { case (b, n) => (b.map(_._1), n.map(_._1)) }
      var open = feedChecked(before)
      // the batch as the streaming processor adds it: one partial per time, in runs cut where an open session starts
      val times = batch.groupBy(_._1).toVector.sortBy(_._1)
      val openStarts = open.map(_.first)
      var i = 0
      while (i < times.length) {
        val (first, firstRecords) = times(i)
        var last = first
        var reach = firstRecords.map(r => reachOf(r._1, r._2)).max
        var ids = firstRecords.map(_._3)
        i += 1
        while (i < times.length && times(i)._1 <= reach && !openStarts.exists(s => s > last && s <= times(i)._1)) {
          last = times(i)._1
          reach = math.max(reach, times(i)._2.map(r => reachOf(r._1, r._2)).max)
          ids ++= times(i)._2.map(_._3)
          i += 1
        }
        val (next, _, merged) = merging.addRun(open, first, last, reach, ids)
        withClue(s"run [$first, $last] reaching $reach, ids $ids, into ${open.mkString(", ")}:\n") {
          merged.partial.containsSlice(ids) shouldBe true
        }
        open = next
      }
      withClue(s"before: ${before.mkString(", ")}; batch: ${batch.mkString(", ")}\n") {
        asSets(open) shouldBe expectedSets(records)
      }
    }
  }

  test("property: in-place buffers (mutable collect, sum) give the same sessions") {
    val gen = Gen.oneOf(SessionCases.fixedCase.map(fixedRecords), SessionCases.dynamicCase.map(_.records))
    forAll(gen) { records =>
      val m = new SessionMerging[ArrayBuffer[Int]](new Collect[Int])
      val sums = new SessionMerging[LongCell](Sum)
      var open = Vector.empty[OpenSession[ArrayBuffer[Int]]]
      var openSums = Vector.empty[OpenSession[LongCell]]
      records.foreach { case (t, g, id) =>
        open = m.add(open, t, reachOf(t, g), ArrayBuffer(id))._1
        openSums = sums.add(openSums, t, reachOf(t, g), new LongCell(weight(id)))._1
      }
      val expected = BruteForceSessions.sessionsWithGaps(records)
      withClue(s"records (time, gap, id): ${records.mkString(", ")}\n") {
        open.map(s => (s.first, s.last, s.partial.toVector.sorted)) shouldBe
          expected.map(s => (s.first, s.last, s.values.sorted))
        openSums.map(s => (s.first, s.last, s.partial.value)) shouldBe
          expected.map(s => (s.first, s.last, s.values.map(weight).sum))
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Lateness and finality

  test("isLate: reach behind the watermark, or t within the closed reach (as documented: reach < watermark, t <= closedReach)") {
    merging.isLate(90, 100, 100, None) shouldBe false // reach = watermark: on time
    merging.isLate(89, 99, 100, None) shouldBe true
    merging.isLate(10, 100, 100, None) shouldBe false // an early time with a long gap is on time
    merging.isLate(1000, 1010, 100, None) shouldBe false
    merging.isLate(50, 60, 0, Some(50L)) shouldBe true // t = closedReach: it would join a closed session
    merging.isLate(49, 59, 0, Some(50L)) shouldBe true
    merging.isLate(51, 61, 0, Some(50L)) shouldBe false
    merging.isLate(40, 1000, 0, Some(50L)) shouldBe true // however far it reaches
    merging.isLate(95, 105, 100, Some(95L)) shouldBe true
    merging.isLate(96, 106, 100, Some(95L)) shouldBe false
    merging.isLate(Long.MinValue, Long.MinValue, Long.MinValue, None) shouldBe false // no watermark yet
    merging.isLate(Long.MaxValue, Long.MaxValue, Long.MaxValue, None) shouldBe false
    merging.isLate(Long.MinValue, Long.MinValue, Long.MinValue, Some(Long.MinValue)) shouldBe true
  }

  test("isFinal: the session's reach behind the watermark (exclusive)") {
    merging.isFinal(OpenSession(0L, 89L, 99L, Vector(0)), 100) shouldBe true
    merging.isFinal(OpenSession(0L, 90L, 100L, Vector(0)), 100) shouldBe false // reach = watermark: open
    merging.isFinal(OpenSession(0L, 90L, 100L, Vector(0)), 101) shouldBe true
    merging.isFinal(OpenSession(0L, 95L, 100L, Vector(0)), 100) shouldBe false // last does not matter, the reach does
    merging.isFinal(OpenSession(0L, Long.MaxValue - 5, Long.MaxValue, Vector(0)), Long.MaxValue) shouldBe false
    merging.isFinal(OpenSession(Long.MinValue, Long.MinValue, Long.MinValue, Vector(0)), Long.MinValue) shouldBe false
    merging.isFinal(OpenSession(Long.MinValue, Long.MinValue, Long.MinValue, Vector(0)), Long.MinValue + 1) shouldBe true
  }

  test("property: isLate and isFinal match the documented rules") {
    val edge = Gen.oneOf(
      Gen.choose(-50L, 50L),
      Gen.choose(Long.MaxValue - 50, Long.MaxValue),
      Gen.choose(Long.MinValue, Long.MinValue + 50),
      Gen.const(Long.MaxValue), Gen.const(Long.MinValue))
    val gen = for {
      gap <- Gen.oneOf(Gen.choose(1L, 30L), Gen.oneOf(Long.MaxValue, Long.MaxValue / 2))
      t <- edge
      reach = saturatingAdd(t, gap)
      // watermarks and closed reaches around the boundaries so they are hit often
      wm <- Gen.oneOf(edge, Gen.choose(-2L, 2L).map(d => saturatingAdd(reach, d)))
      closed <- Gen.option(Gen.oneOf(edge, Gen.choose(-2L, 2L).map(d => saturatingAdd(t, d))))
    } yield (t, reach, wm, closed)
    forAll(gen) { case (t, reach, wm, closed) =>
      merging.isLate(t, reach, wm, closed) shouldBe (reach < wm || closed.exists(t <= _))
      merging.isFinal(OpenSession(saturatingAdd(t, -3), t, reach, Vector(0)), wm) shouldBe (reach < wm)
    }
  }

  // ---------------------------------------------------------------------------------------------
  // A simulated stream

  /**
   * One key's records in arrival order, cut into micro-batches; each batch sees the watermark
   * max time of earlier batches - delay (none before the first), the max taken over this key's
   * records and the times other keys brought (so the watermark can run ahead of this key, and all
   * its sessions can close). At the start of a batch, final
   * sessions are closed (emitted once, their reach kept as closedReach; forgotten once no session
   * is open and closedReach plus a bound on every gap still to come is behind the watermark); then
   * late records are dropped by the documented rule and the others added, one by one in arrival
   * order or grouped by time in time order as the operator does. At the end every open session is
   * flushed.
   */
  private def simulate(s: Sim, coverage: Coverage): SimResult = {
    var open = Vector.empty[S]
    var closedReach: Option[Long] = None
    var watermark = Long.MinValue
    var maxSeen: Option[Long] = None
    val emitted = ArrayBuffer.empty[S]
    val accepted = ArrayBuffer.empty[Rec]
    val late = ArrayBuffer.empty[Rec]
    val byId = s.records.map(r => r._3 -> r).toMap
    val gapBound = s.records.map(_._2).max
    s.batches.zipWithIndex.foreach { case (batch, i) =>
      val (done, remaining) = open.partition(merging.isFinal(_, watermark))
      done.foreach { d =>
        assert(d.reach < watermark, s"closed $d at watermark $watermark")
        emitted += d
        closedReach = Some(closedReach.fold(d.reach)(math.max(_, d.reach)))
      }
      open = remaining
      if (open.isEmpty && closedReach.exists(r => saturatingAdd(r, gapBound) < watermark)) {
        closedReach = None
        coverage.cleared += 1
      }
      val (dropped, kept) = batch.partition { case (t, g, _) => merging.isLate(t, reachOf(t, g), watermark, closedReach) }
      late ++= dropped
      val pieces = if (s.grouped) kept.groupBy(_._1).toVector.sortBy(_._1).map(_._2) else kept.map(Vector(_))
      pieces.foreach { fresh =>
        // closed sessions are gone: the step is checked against the records of the open ones
        open = checkedAdd(open, open.flatMap(_.partial).map(byId), fresh)
        accepted ++= fresh
        val holding = open.find(_.partial.contains(fresh.head._3)).get
        assert(!merging.isFinal(holding, watermark), s"an on-time record made the final session $holding")
      }
      val seen = batch.map(_._1) ++ s.others.lift(i).filter(_ != Long.MinValue)
      if (seen.nonEmpty) maxSeen = Some((maxSeen.toSeq ++ seen).max)
      maxSeen.foreach(mx => watermark = math.max(watermark, saturatingAdd(mx, -s.delay)))
    }
    if (late.nonEmpty) coverage.withLate += 1
    if (emitted.nonEmpty) coverage.closedEarly += 1
    emitted ++= open
    val sets = asSets(emitted.sortBy(_.first).toVector)
    sets shouldBe expectedSets(accepted.toVector)
    accepted.length + late.length shouldBe s.records.length
    if (s.delay >= s.span && s.others.forall(_ == Long.MinValue)) {
      late shouldBe empty
      // the batch sweep on all records gives the same sessions
      val partials = s.records.groupBy(_._1).toVector.sortBy(_._1).map { case (t, rs) =>
        Reaching(t, rs.map(r => reachOf(r._1, r._2)).max, rs.map(_._3))
      }
      val sweep = new SessionSweep[Vector[Int]](partials.iterator, new CollectImmutable[Int])
      val batch = ArrayBuffer.empty[(Long, Long, Vector[Int])]
      while (sweep.advance()) batch += ((sweep.first, sweep.last, sweep.aggregate.sorted))
      sets.map(s => (s._1, s._2, s._4)) shouldBe batch.toVector
    }
    SimResult(sets.map(s => (s._1, s._2, s._4)), late.toVector.map(r => (r._1, r._3)))
  }

  test("property: a simulated stream emits the batch sessions of the records it kept; with no late record, all of them") {
    val coverage = new Coverage
    forAll(simGen) { s =>
      withClue(s"$s\n")(simulate(s, coverage))
    }
    // the generator reaches the interesting cases
    info(s"runs that dropped late records: ${coverage.withLate}, that closed sessions before the end: " +
      s"${coverage.closedEarly}; times closedReach was forgotten: ${coverage.cleared}")
    assert(coverage.withLate >= 20, s"only ${coverage.withLate} runs dropped late records")
    assert(coverage.closedEarly >= 40, s"only ${coverage.closedEarly} runs closed sessions before the end")
    assert(coverage.cleared >= 20, s"closedReach forgotten only ${coverage.cleared} times")
  }

  test("property: with a delay covering the whole time span, nothing is late and the stream gives the batch sessions") {
    val gen = for {
      s <- simGen
      extra <- Gen.oneOf(0L, 1L, s.records.map(_._2).min)
    } yield s.copy(delay = saturatingAdd(s.span, extra), others = Vector.empty)
    forAll(gen) { s =>
      withClue(s"$s\n")(simulate(s, new Coverage))
    }
  }

  private def fixedSim(gap: Long, times: Seq[Long], batchSizes: Vector[Int], delay: Long): Sim =
    Sim(times.zipWithIndex.map { case (t, id) => (t, gap, id) }.toVector, batchSizes, delay, grouped = false, Vector.empty)

  test("a simulated stream, by hand: a session closes; records behind it or within its reach are late") {
    // gap 10, delay 0: batch 1 {0, 5} -> watermark 5; batch 2 {16} -> watermark 16; batch 3: [0, 5]
    // is final (5 + 10 < 16), closedReach 15; 8 is late only because it would join [0, 5]
    // (8 + 10 >= 16 but 8 <= 15); 3 is late as 3 + 10 < 16; 26 joins [16, 16]
    val s = fixedSim(10, Seq(0L, 5L, 16L, 8L, 26L, 3L), Vector(2, 1, 3), 0)
    simulate(s, new Coverage) shouldBe
      SimResult(Vector((0L, 5L, Vector(0, 1)), (16L, 26L, Vector(2, 4))), Vector(8L -> 3, 3L -> 5))
    // delay 20: nothing is final in batch 3 (watermark -4); 8 bridges [0, 5] and [16, 16]
    simulate(s.copy(delay = 20), new Coverage) shouldBe SimResult(Vector((0L, 26L, Vector(0, 1, 2, 3, 4, 5))), Vector())
    // the same with the batch's records grouped by time
    simulate(s.copy(delay = 20, grouped = true), new Coverage) shouldBe
      SimResult(Vector((0L, 26L, Vector(0, 1, 2, 3, 4, 5))), Vector())
  }

  test("a simulated stream, by hand, per-record gaps: a record with a long gap stays late once its time is within a closed reach") {
    // batch 1 {0 (gap 10)} -> watermark 0; batch 2 {30 (gap 1)} -> watermark 30; batch 3: [0, 0] is
    // final (10 < 30), closedReach 10; 5 with gap 100 reaches 105 >= 30 but would join [0, 0]: late
    val s = Sim(Vector((0L, 10L, 0), (30L, 1L, 1), (5L, 100L, 2), (31L, 1L, 3)), Vector(1, 1, 2), 0, grouped = false, Vector.empty)
    simulate(s, new Coverage) shouldBe
      SimResult(Vector((0L, 0L, Vector(0)), (30L, 31L, Vector(1, 3))), Vector(5L -> 2))
    // with a long delay, 5 bridges [0, 0] and [30, 30] by its own reach
    simulate(s.copy(delay = 100), new Coverage) shouldBe SimResult(Vector((0L, 31L, Vector(0, 1, 2, 3))), Vector())
  }

  test("a simulated stream, by hand, per-record gaps: closedReach is kept while a gap still to come could reach back into it") {
    // batch 1 {0 (gap 10)}; batch 2: other keys move the watermark to 30; batch 3: [0, 0] closes
    // (10 < 30) and no session of the key is open. The widest gap seen so far is 10 and 10 + 10 < 30,
    // yet 5 with gap 100 (reach 105, on time by its reach) would join the emitted [0, 0]: it must
    // still be late, so closedReach may be forgotten only with a bound on every gap to come (here 100).
    val s = Sim(Vector((0L, 10L, 0), (5L, 100L, 1)), Vector(1, 0, 1), 0, grouped = false, Vector(Long.MinValue, 30L))
    simulate(s, new Coverage) shouldBe SimResult(Vector((0L, 0L, Vector(0))), Vector(5L -> 1))
    merging.isLate(5, 105, 30, Some(10L)) shouldBe true
    merging.isLate(5, 105, 30, None) shouldBe false // what a key that forgot closedReach would decide
  }
}

object SessionMergingSpec {
  /** A record: time, gap, id. */
  type Rec = (Long, Long, Int)

  def weight(id: Int): Long = 1000L * id + 7

  /** Every session the stream emitted, (first, last, record ids sorted), and the records it dropped (time, id). */
  final case class SimResult(sessions: Vector[(Long, Long, Vector[Int])], late: Vector[(Long, Int)])

  final class Coverage {
    var withLate = 0
    var closedEarly = 0
    var cleared = 0
  }

  /**
   * Records (time, gap, id) in arrival order, cut into batches of the given sizes; `others(i)` is
   * the largest time other keys brought in batch i (Long.MinValue: none).
   */
  final case class Sim(records: Vector[Rec], batchSizes: Vector[Int], delay: Long, grouped: Boolean, others: Vector[Long]) {
    def batches: Vector[Vector[Rec]] = {
      val out = Vector.newBuilder[Vector[Rec]]
      var rest = records
      batchSizes.foreach { n => out += rest.take(n); rest = rest.drop(n) }
      if (rest.nonEmpty) out += rest
      out.result()
    }
    def span: Long = records.map(_._1).max - records.map(_._1).min
    override def toString: String =
      s"Sim(records (time, gap, id) = ${records.mkString(", ")}, batch sizes $batchSizes, delay $delay, grouped = $grouped, " +
        s"other keys' times ${others.map(t => if (t == Long.MinValue) "-" else t.toString).mkString(", ")})"
  }

  /** Fixed or per-record gaps, times within +-2^61 (so watermarks stay exact), delays from 0 to beyond the span. */
  val simGen: Gen[Sim] = for {
    records <- Gen.frequency(
        4 -> SessionCases.stepCase, 3 -> SessionCases.denseCase, 1 -> SessionCases.sparseCase)
      .map(c => c.records.map { case (t, id) => (t, c.gap, id) })
      .flatMap(fixed => Gen.frequency(2 -> Gen.const(fixed), 1 -> SessionCases.dynamicCase.map(_.records)))
      .map(_.filter { case (t, _, _) => math.abs(t) <= (1L << 61) })
      .suchThat(_.nonEmpty)
    sizes <- Gen.listOfN(records.length, Gen.frequency(3 -> Gen.choose(1, 3), 1 -> Gen.choose(0, 10)))
    span = records.map(_._1).max - records.map(_._1).min
    delay <- Gen.frequency(
      2 -> Gen.const(0L),
      1 -> Gen.const(1L),
      2 -> Gen.const(math.min(records.map(_._2).min, 1L << 62)),
      3 -> Gen.choose(0L, math.max(span, 1L)),
      1 -> Gen.const(span / 2),
      1 -> Gen.const(span))
    grouped <- Gen.oneOf(false, true)
    others <- othersGen(records.map(_._1), records.length + 1)
    seed <- Gen.long
  } yield {
    // arrival order: the case's shuffled order, or nearly in time order (a few swaps) as streams often are
    val arrival =
      if (seed % 3 == 0) {
        val r = new Random(seed)
        val sorted = records.sortBy(_._1).toArray
        (0 until sorted.length / 4).foreach { _ =>
          val i = r.nextInt(sorted.length)
          val j = math.min(sorted.length - 1, i + 1 + r.nextInt(3))
          val x = sorted(i); sorted(i) = sorted(j); sorted(j) = x
        }
        sorted.toVector
      } else records
    Sim(arrival, sizes.toVector, delay, grouped, others)
  }

  /** Other keys' times per batch: none, or some batches pushing the watermark up to well beyond `times`. */
  def othersGen(times: Seq[Long], batches: Int): Gen[Vector[Long]] = {
    val lo = times.min
    val hi = times.max
    val beyond = (BigInt(hi) + 2 * (BigInt(hi) - lo).max(10)).min(BigInt(1L << 62)).toLong
    Gen.frequency(
      2 -> Gen.const(Vector.empty[Long]),
      1 -> Gen.listOfN(batches, Gen.frequency(2 -> Gen.const(Long.MinValue), 1 -> Gen.choose(lo, beyond))).map(_.toVector))
  }
}
