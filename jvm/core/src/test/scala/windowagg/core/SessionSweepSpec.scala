package windowagg.core

import scala.collection.mutable.ArrayBuffer

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.SessionCases.saturatingAdd
import windowagg.core.TestAggregations.{Collect, CollectImmutable, LongCell, Sum}

/**
 * The batch session sweep against the contract's brute force ([[BruteForceSessions]]), for fixed
 * and per-record gaps. Input is grouped as an operator groups it: one [[Reaching]] per distinct
 * time, its records merged in input order, its reach the largest t + gap of them (saturating at
 * the end of the Long range). Records carry their input position as value, so collected lists
 * show both which records a session holds and the order they were merged in.
 */
class SessionSweepSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {
  import SessionSweepSpec._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 400)

  /** One Reaching per distinct time, times increasing; records of one time merged in input order. */
  private def reaching[P](records: Seq[(Long, Long, Int)], agg: PartialAggregation[P])(one: Int => P): Vector[Reaching[P]] = {
    val sorted = records.sortBy(_._1).toVector // stable: ties keep input order
    val out = Vector.newBuilder[Reaching[P]]
    var i = 0
    while (i < sorted.length) {
      val t = sorted(i)._1
      var buffer = agg.newEmpty()
      var reach = Long.MinValue
      while (i < sorted.length && sorted(i)._1 == t) {
        buffer = agg.mergeInto(buffer, one(sorted(i)._3))
        reach = math.max(reach, saturatingAdd(t, sorted(i)._2))
        i += 1
      }
      out += Reaching(t, reach, buffer)
    }
    out.result()
  }

  private def drain[P, R](input: Iterator[Reaching[P]], agg: PartialAggregation[P])(snapshot: P => R): Vector[Out[R]] = {
    val sweep = new SessionSweep[P](input, agg)
    val out = Vector.newBuilder[Out[R]]
    while (sweep.advance()) {
      assert(sweep.start == sweep.first && sweep.end == sweep.last, "start/end are not first/last")
      out += Out(sweep.first, sweep.last, snapshot(sweep.aggregate))
    }
    sweep.advance() shouldBe false // stays exhausted
    out.result()
  }

  private def sweepCollect(records: Seq[(Long, Long, Int)]): Vector[Out[Vector[Int]]] = {
    val agg = new Collect[Int]
    drain(reaching(records, agg)(v => ArrayBuffer(v)).iterator, agg)(_.toVector)
  }

  private def sweepCollectImmutable(records: Seq[(Long, Long, Int)]): Vector[Out[Vector[Int]]] = {
    val agg = new CollectImmutable[Int]
    drain(reaching(records, agg)(v => Vector(v)).iterator, agg)(identity)
  }

  private def sweepSum(records: Seq[(Long, Long, Int)]): Vector[Out[Long]] =
    drain(reaching(records, Sum)(v => new LongCell(weight(v))).iterator, Sum)(_.value)

  private def withGap(records: Seq[(Long, Int)], gap: Long): Vector[(Long, Long, Int)] =
    records.map { case (t, id) => (t, gap, id) }.toVector

  private def fixed(records: Seq[(Long, Int)], gap: Long): Vector[Out[Vector[Int]]] = sweepCollect(withGap(records, gap))

  /** Every aggregation gives exactly the brute-force sessions, and the output obeys the contract. */
  private def checkAgainstBruteForce(records: Vector[(Long, Long, Int)]): Unit = {
    val expected = BruteForceSessions.sessionsWithGaps(records).map(s => Out(s.first, s.last, s.values))
    val got = sweepCollect(records)
    got shouldBe expected
    sweepCollectImmutable(records) shouldBe expected
    sweepSum(records) shouldBe expected.map(s => Out(s.first, s.last, s.result.map(weight).sum))
    checkContract(records, got)
  }

  /**
   * The contract on the sweep's own output, independently of the brute force: every record in
   * exactly one session, sessions in time order and disjoint, bounds the first and last record
   * times, records in time order (ties in input order), consecutive records of a session within
   * the reach so far, and the next session beyond the reach of every record before it.
   */
  private def checkContract(records: Vector[(Long, Long, Int)], got: Vector[Out[Vector[Int]]]): Unit = {
    val byId = records.map(r => r._3 -> r).toMap
    got.flatMap(_.result).sorted shouldBe records.map(_._3).sorted
    got.foreach { s =>
      val rs = s.result.map(byId)
      val order = rs.map(r => (r._1, r._3))
      assert(order == order.sorted, s"session $s: records not in time order (ties in input order)")
      rs.head._1 shouldBe s.first
      rs.last._1 shouldBe s.last
      (1 until rs.length).foreach { i =>
        val reachSoFar = rs.take(i).map(r => BigInt(r._1) + r._2).max
        assert(BigInt(rs(i)._1) <= reachSoFar, s"session $s: record ${rs(i)} is beyond the reach $reachSoFar")
      }
    }
    got.sliding(2).foreach {
      case Seq(a, b) =>
        val reach = a.result.map(byId).map(r => BigInt(r._1) + r._2).max
        assert(BigInt(b.first) > reach, s"session $b starts within the reach $reach of $a")
      case _ =>
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Examples

  test("fixed gap: records at most the gap apart (inclusive) form one session") {
    fixed(Seq(0L -> 0, 10L -> 1, 21L -> 2, 31L -> 3, 42L -> 4), 10) shouldBe Vector(
      Out(0L, 10L, Vector(0, 1)), Out(21L, 31L, Vector(2, 3)), Out(42L, 42L, Vector(4)))
    // transitively: each step within the gap, the whole run far wider than it
    fixed((0 until 20).map(i => (i * 5L, i)), 5).map(s => (s.first, s.last)) shouldBe Vector((0L, 95L))
    // gap - 1, gap, gap + 1
    fixed(Seq(0L -> 0, 9L -> 1), 10).map(_.result) shouldBe Vector(Vector(0, 1))
    fixed(Seq(0L -> 0, 10L -> 1), 10).map(_.result) shouldBe Vector(Vector(0, 1))
    fixed(Seq(0L -> 0, 11L -> 1), 10).map(_.result) shouldBe Vector(Vector(0), Vector(1))
  }

  test("gap 1: only adjacent ticks chain") {
    fixed(Seq(0L -> 0, 1L -> 1, 2L -> 2, 4L -> 3, 5L -> 4, 7L -> 5), 1) shouldBe Vector(
      Out(0L, 2L, Vector(0, 1, 2)), Out(4L, 5L, Vector(3, 4)), Out(7L, 7L, Vector(5)))
  }

  test("no input, no sessions; advance stays false") {
    val sweep = new SessionSweep[LongCell](Iterator.empty, Sum)
    sweep.advance() shouldBe false
    sweep.advance() shouldBe false
  }

  test("a single record is the session [t, t], negative times unclamped") {
    fixed(Seq(5L -> 0), 10) shouldBe Vector(Out(5L, 5L, Vector(0)))
    fixed(Seq(-7L -> 0), 3) shouldBe Vector(Out(-7L, -7L, Vector(0)))
    fixed(Seq(-25L -> 0, -15L -> 1, -4L -> 2, 6L -> 3), 10) shouldBe Vector(
      Out(-25L, -15L, Vector(0, 1)), Out(-4L, 6L, Vector(2, 3)))
  }

  test("records of one time form one partial, merged in input order; sessions list records in time order") {
    fixed(Seq(5L -> 0, 5L -> 1, 5L -> 2), 1) shouldBe Vector(Out(5L, 5L, Vector(0, 1, 2)))
    fixed(Seq(7L -> 0, 3L -> 1, 7L -> 2, 3L -> 3, 20L -> 4), 4) shouldBe Vector(
      Out(3L, 7L, Vector(1, 3, 0, 2)), Out(20L, 20L, Vector(4)))
  }

  test("per-record gaps: the session stays open until the largest t + g so far") {
    // 0 reaches 100: 50 and 52 join although their own gaps are 1
    sweepCollect(Vector((0L, 100L, 0), (5L, 1L, 1), (50L, 1L, 2), (52L, 1L, 3), (200L, 1L, 4))) shouldBe Vector(
      Out(0L, 52L, Vector(0, 1, 2, 3)), Out(200L, 200L, Vector(4)))
    // a later long gap extends the reach: 0 -> 1 (reach 11) -> 11 (reach 12); 13 is beyond
    sweepCollect(Vector((0L, 1L, 0), (1L, 10L, 1), (11L, 1L, 2), (13L, 1L, 3))) shouldBe Vector(
      Out(0L, 11L, Vector(0, 1, 2)), Out(13L, 13L, Vector(3)))
    // a later short gap does not shorten it: 10 joins through 0's reach
    sweepCollect(Vector((0L, 10L, 0), (1L, 1L, 1), (10L, 1L, 2), (12L, 1L, 3))) shouldBe Vector(
      Out(0L, 10L, Vector(0, 1, 2)), Out(12L, 12L, Vector(3)))
    // the gap does not reach backwards: 10 with gap 100 does not pull in 0 with gap 1
    sweepCollect(Vector((0L, 1L, 0), (10L, 100L, 1))) shouldBe Vector(
      Out(0L, 0L, Vector(0)), Out(10L, 10L, Vector(1)))
    // records sharing a time: the largest gap of them counts
    sweepCollect(Vector((0L, 1L, 0), (0L, 20L, 1), (15L, 1L, 2))) shouldBe Vector(Out(0L, 15L, Vector(0, 1, 2)))
  }

  test("huge gaps: one session over the whole range, reaches saturating at Long.MaxValue") {
    val records = Seq(-1000000000000L -> 0, 0L -> 1, 1000000000000L -> 2)
    fixed(records, Long.MaxValue) shouldBe Vector(Out(-1000000000000L, 1000000000000L, Vector(0, 1, 2)))
    fixed(Seq(Long.MaxValue - 1 -> 0, Long.MaxValue -> 1), 1) shouldBe Vector(
      Out(Long.MaxValue - 1, Long.MaxValue, Vector(0, 1)))
    fixed(Seq(0L -> 0, Long.MaxValue -> 1), Long.MaxValue) shouldBe Vector(Out(0L, Long.MaxValue, Vector(0, 1)))
    // Long.MinValue + Long.MaxValue = -1: Long.MaxValue is beyond it
    fixed(Seq(Long.MinValue -> 0, Long.MaxValue -> 1), Long.MaxValue) shouldBe Vector(
      Out(Long.MinValue, Long.MinValue, Vector(0)), Out(Long.MaxValue, Long.MaxValue, Vector(1)))
    fixed(Seq(Long.MinValue -> 0, -1L -> 1), Long.MaxValue) shouldBe Vector(Out(Long.MinValue, -1L, Vector(0, 1)))
  }

  test("a record's aggregate is merged once: sums match") {
    sweepSum(withGap(Seq(0L -> 0, 1L -> 1, 5L -> 2), 1)).map(_.result) shouldBe
      Vector(weight(0) + weight(1), weight(2))
  }

  // ---------------------------------------------------------------------------------------------
  // Properties against the brute force

  test("property: fixed gaps, same sessions as the brute force (mixed inputs)") {
    forAll(SessionCases.fixedCase) { c =>
      withClue(s"$c\n")(checkAgainstBruteForce(withGap(c.records, c.gap)))
    }
  }

  test("property: fixed gaps, distances around the gap (gap - 1, gap, gap + 1)") {
    forAll(SessionCases.stepCase) { c =>
      withClue(s"$c\n")(checkAgainstBruteForce(withGap(c.records, c.gap)))
    }
  }

  test("property: fixed gaps at the ends of the 64-bit range") {
    forAll(SessionCases.extremeCase) { c =>
      withClue(s"$c\n")(checkAgainstBruteForce(withGap(c.records, c.gap)))
    }
  }

  test("property: per-record gaps, same sessions as the brute force") {
    forAll(Gen.frequency(5 -> SessionCases.dynamicCase, 1 -> SessionCases.dynamicExtremeCase)) { c =>
      withClue(s"$c\n")(checkAgainstBruteForce(c.records))
    }
  }

  test("property: a fixed gap is a per-record gap that is the same for every record") {
    forAll(SessionCases.fixedCase) { c =>
      BruteForceSessions.sessions(c.records, c.gap) shouldBe
        BruteForceSessions.sessionsWithGaps(withGap(c.records, c.gap))
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Bad input

  private def drainTimes(times: Seq[Long], gap: Long = 10): Vector[Out[Long]] =
    drain(times.iterator.map(t => Reaching(t, saturatingAdd(t, gap), new LongCell(1))), Sum)(_.value)

  test("input times out of order or repeated raise") {
    intercept[IllegalStateException](drainTimes(Seq(0L, 5L, 3L))).getMessage should include("increasing")
    intercept[IllegalStateException](drainTimes(Seq(5L, 5L)))
    intercept[IllegalStateException](drainTimes(Seq(0L, 100L, 200L, 150L, 300L)))
    intercept[IllegalStateException](drainTimes(Seq(Long.MinValue, Long.MinValue)))
    drainTimes(Seq(Long.MinValue, Long.MaxValue)) shouldBe
      Vector(Out(Long.MinValue, Long.MinValue, 1L), Out(Long.MaxValue, Long.MaxValue, 1L))
  }

  test("property: any non-increasing step in the input raises") {
    val gen = for {
      c <- SessionCases.fixedCase
      times = c.records.map(_._1).distinct.sorted
      if times.length >= 2
      i <- Gen.choose(1, times.length - 1)
      back <- Gen.choose(0L, 30L) // 0: a repeated time
      if BigInt(times(i - 1)) - back >= BigInt(Long.MinValue)
    } yield (c.gap, times.updated(i, times(i - 1) - back))
    forAll(gen) { case (gap, times) =>
      intercept[IllegalStateException](drainTimes(times, gap))
    }
  }
}

object SessionSweepSpec {
  /** A session as produced: bounds and the aggregate copied out. */
  final case class Out[R](first: Long, last: Long, result: R)

  /** The value a record contributes to the sum: distinct per record, so a wrong set shows. */
  def weight(id: Int): Long = 1000L * id + 7
}
