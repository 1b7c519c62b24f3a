package windowagg.core

import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.BruteForceSliding.ExactWindow
import windowagg.core.SweepHarness.Out
import windowagg.core.TestAggregations.{Collect, CollectImmutable, LongCell, Sum}

/**
 * The sweep against the contract's brute-force enumeration ([[BruteForceSliding]]), with
 * order-sensitive and plain aggregates. Records carry their input position as value, so the
 * collected lists show both which records a window holds and the order they were merged in.
 */
class SlidingWindowSweepSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {
  import SlidingWindowSweepSpec._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 400)

  // ---------------------------------------------------------------------------------------------
  // Running the sweep with each aggregation

  /** collect_list in place: (start, end, record ids in merge order). */
  private def sweepCollect(records: Seq[(Long, Int)], size: Long): Vector[Out[Vector[Int]]] = {
    val agg = new Collect[Int]
    SweepHarness.drain(size, SweepHarness.partials(records, agg)(v => ArrayBuffer(v)).iterator, agg)(_.toVector)
  }

  /** collect_list on immutable vectors (every merge returns a replacement). */
  private def sweepCollectImmutable(records: Seq[(Long, Int)], size: Long): Vector[Out[Vector[Int]]] = {
    val agg = new CollectImmutable[Int]
    SweepHarness.drain(size, SweepHarness.partials(records, agg)(v => Vector(v)).iterator, agg)(identity)
  }

  private def sweepSum(records: Seq[(Long, Int)], size: Long): Vector[Out[Long]] =
    SweepHarness.drain(size, SweepHarness.partials(records, Sum)(v => new LongCell(weight(v))).iterator, Sum)(_.value)

  private def expectedCollect(records: Seq[(Long, Int)], size: Long): Vector[Out[Vector[Int]]] =
    BruteForceSliding.windows(records, size).map(w => Out(w.start, w.end, w.values))

  private def expectedSum(records: Seq[(Long, Int)], size: Long): Vector[Out[Long]] =
    BruteForceSliding.windows(records, size).map(w => Out(w.start, w.end, w.values.map(weight).sum))

  /** Every aggregation gives exactly the brute-force windows, and the output obeys the contract. */
  private def checkAgainstBruteForce(c: Case): Unit = {
    val expected = expectedCollect(c.records, c.size)
    val got = sweepCollect(c.records, c.size)
    withClue(s"$c\n") {
      got shouldBe expected
      sweepCollectImmutable(c.records, c.size) shouldBe expected
      sweepSum(c.records, c.size) shouldBe expectedSum(c.records, c.size)
      checkContract(c, got)
    }
  }

  /**
   * The contract checked on the sweep's own output, independently of the brute force: increasing
   * distinct starts, `end = start + size`, every window nonempty and holding exactly the records
   * in it, in time order with ties in input order, every start a left or right window start of a
   * record time, and every record time's left window present.
   */
  private def checkContract(c: Case, got: Vector[Out[Vector[Int]]]): Unit = {
    val timeOf = c.records.map(_._1)
    val recordTimes = timeOf.toSet
    got.map(_.start).sliding(2).foreach {
      case Seq(a, b) => assert(a < b, s"starts not strictly increasing: $a then $b")
      case _ =>
    }
    got.foreach { w =>
      assert(w.end == w.start + c.size, s"window $w: end is not start + size")
      assert(w.result.nonEmpty, s"empty window $w")
      val inside = c.records.indices.filter(i => w.start <= timeOf(i) && timeOf(i) <= w.end)
      w.result.sorted shouldBe inside.sorted
      val order = w.result.map(i => (timeOf(i), i))
      assert(order == order.sorted, s"window $w: records not in time order (ties in input order)")
      assert(recordTimes.contains(w.start + c.size) || recordTimes.contains(w.start - 1),
        s"window $w starts neither at t - size nor at t + 1 for a record time t")
    }
    val starts = got.map(_.start).toSet
    recordTimes.foreach(t => assert(starts.contains(t - c.size), s"no left window for time $t"))
  }

  // ---------------------------------------------------------------------------------------------
  // Examples

  test("the SEMANTICS.md example: S = 10, records at 10, 14, 15") {
    val records = Seq(10L -> 0, 14L -> 1, 15L -> 2)
    val expected = Vector(
      Out(0L, 10L, Vector(0)),
      Out(4L, 14L, Vector(0, 1)),
      Out(5L, 15L, Vector(0, 1, 2)),
      Out(11L, 21L, Vector(1, 2)),
      Out(15L, 25L, Vector(2)))
    sweepCollect(records, 10) shouldBe expected
    sweepCollectImmutable(records, 10) shouldBe expected
    sweepSum(records, 10).map(_.result) shouldBe expected.map(_.result.map(weight).sum)
    BruteForceSliding.windows(records, 10).map(w => Out(w.start, w.end, w.values)) shouldBe expected
  }

  test("no input, no windows; advance stays false") {
    val sweep = new SlidingWindowSweep[LongCell](10, Iterator.empty, Sum)
    sweep.advance() shouldBe false
    sweep.advance() shouldBe false
  }

  test("a single record has only its left window, negative times unclamped") {
    sweepCollect(Seq(5L -> 0), 10) shouldBe Vector(Out(-5L, 5L, Vector(0)))
    sweepCollect(Seq(-7L -> 0), 3) shouldBe Vector(Out(-10L, -7L, Vector(0)))
    sweepCollect(Seq(0L -> 0), 1) shouldBe Vector(Out(-1L, 0L, Vector(0)))
  }

  test("records of one time form one partial, merged in input order") {
    sweepCollect(Seq(5L -> 0, 5L -> 1, 5L -> 2), 10) shouldBe Vector(Out(-5L, 5L, Vector(0, 1, 2)))
    // input order of equal times is kept; time order wins across times
    val records = Seq(7L -> 0, 3L -> 1, 7L -> 2, 3L -> 3)
    sweepCollect(records, 10) shouldBe Vector(
      Out(-7L, 3L, Vector(1, 3)),
      Out(-3L, 7L, Vector(1, 3, 0, 2)),
      Out(4L, 14L, Vector(0, 2)))
  }

  test("window edges are inclusive: gaps of S - 1, S, S + 1 and S + 2") {
    // gap S: the right window of 0 holds 10, the left window of 10 holds both
    sweepCollect(Seq(0L -> 0, 10L -> 1), 10) shouldBe
      Vector(Out(-10L, 0L, Vector(0)), Out(0L, 10L, Vector(0, 1)), Out(1L, 11L, Vector(1)))
    // gap S - 1
    sweepCollect(Seq(0L -> 0, 9L -> 1), 10) shouldBe
      Vector(Out(-10L, 0L, Vector(0)), Out(-1L, 9L, Vector(0, 1)), Out(1L, 11L, Vector(1)))
    // gap S + 1: the right window of 0 is the left window of 11, one window
    sweepCollect(Seq(0L -> 0, 11L -> 1), 10) shouldBe
      Vector(Out(-10L, 0L, Vector(0)), Out(1L, 11L, Vector(1)))
    // gap S + 2: the right window of 0 would be [1, 11], empty, so it does not exist
    sweepCollect(Seq(0L -> 0, 12L -> 1), 10) shouldBe
      Vector(Out(-10L, 0L, Vector(0)), Out(2L, 12L, Vector(1)))
  }

  test("S = 1: left and right windows coincide and are deduplicated") {
    sweepCollect(Seq(0L -> 0, 1L -> 1, 2L -> 2), 1) shouldBe Vector(
      Out(-1L, 0L, Vector(0)),
      Out(0L, 1L, Vector(0, 1)),
      Out(1L, 2L, Vector(1, 2)),
      Out(2L, 3L, Vector(2)))
  }

  test("huge gaps: isolated records each get only their own left window") {
    val records = Seq(-1000000000000L -> 0, 0L -> 1, 1000000000000L -> 2, 2000000000000L -> 3)
    sweepCollect(records, 10) shouldBe records.map { case (t, i) => Out(t - 10, t, Vector(i)) }.toVector
  }

  test("a huge S puts every record in one window; the right windows drop records one by one") {
    val size = 1L << 60
    sweepCollect(Seq(-3L -> 0, 0L -> 1, 4L -> 2), size) shouldBe Vector(
      Out(-3L - size, -3L, Vector(0)),
      Out(-size, 0L, Vector(0, 1)),
      Out(4L - size, 4L, Vector(0, 1, 2)),
      Out(-2L, size - 2, Vector(1, 2)),
      Out(1L, size + 1, Vector(2)))
  }

  test("the sweep rejects a size that is not positive") {
    an[IllegalArgumentException] should be thrownBy new SlidingWindowSweep[LongCell](0, Iterator.empty, Sum)
    an[IllegalArgumentException] should be thrownBy new SlidingWindowSweep[LongCell](-1, Iterator.empty, Sum)
  }

  // ---------------------------------------------------------------------------------------------
  // Properties against the brute force

  test("property: same windows as the brute force (mixed inputs)") {
    forAll(anyCase)(checkAgainstBruteForce)
  }

  test("property: same windows as the brute force (many duplicate times, dense)") {
    forAll(denseCase)(checkAgainstBruteForce)
  }

  test("property: same windows as the brute force (gaps around S, and 1e12)") {
    forAll(gapCase)(checkAgainstBruteForce)
  }

  test("property: same windows as the brute force (sparse, S = 1 and huge S)") {
    forAll(sparseCase)(checkAgainstBruteForce)
  }

  // ---------------------------------------------------------------------------------------------
  // Bad input

  private def drainSum(size: Long, times: Seq[Long]): Vector[Out[Long]] =
    SweepHarness.drain(size, times.iterator.map(t => Timed(t, new LongCell(1))), Sum)(_.value)

  test("input times out of order or repeated raise") {
    val decreasing = intercept[IllegalStateException](drainSum(10, Seq(0L, 5L, 3L)))
    decreasing.getMessage should include("increasing")
    intercept[IllegalStateException](drainSum(10, Seq(5L, 5L)))
    intercept[IllegalStateException](drainSum(10, Seq(0L, 100L, 200L, 150L, 300L)))
  }

  test("property: any non-increasing step in the input raises") {
    val gen = for {
      c <- anyCase
      times = c.records.map(_._1).distinct.sorted
      if times.length >= 2
      i <- Gen.choose(1, times.length - 1)
      back <- Gen.choose(0L, 3L * c.size) // 0: a repeated time
    } yield (c.size, times.updated(i, times(i - 1) - back))
    forAll(gen) { case (size, times) =>
      intercept[IllegalStateException](drainSum(size, times))
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The ends of the 64-bit range

  test("windows touching Long.MinValue and Long.MaxValue exactly are fine") {
    drainSum(10, Seq(Long.MaxValue)) shouldBe Vector(Out(Long.MaxValue - 10, Long.MaxValue, 1L))
    drainSum(10, Seq(Long.MinValue + 10)) shouldBe Vector(Out(Long.MinValue, Long.MinValue + 10, 1L))
    drainSum(Long.MaxValue, Seq(-1L)) shouldBe Vector(Out(Long.MinValue, -1L, 1L))
    drainSum(Long.MaxValue, Seq(0L)) shouldBe Vector(Out(-Long.MaxValue, 0L, 1L))
    drainSum(1, Seq(Long.MaxValue - 2, Long.MaxValue)) shouldBe Vector(
      Out(Long.MaxValue - 3, Long.MaxValue - 2, 1L),
      Out(Long.MaxValue - 1, Long.MaxValue, 1L))
  }

  test("a window start below Long.MinValue raises WindowError") {
    val e = intercept[WindowError](drainSum(10, Seq(Long.MinValue + 5)))
    e.getMessage should include("range")
    intercept[WindowError](drainSum(Long.MaxValue, Seq(-2L)))
    intercept[WindowError](drainSum(Long.MaxValue, Seq(Long.MinValue)))
  }

  test("a window end above Long.MaxValue raises WindowError") {
    // right window of MaxValue - 5 is [MaxValue - 4, MaxValue + 6] and holds MaxValue - 2
    intercept[WindowError](drainSum(10, Seq(Long.MaxValue - 5, Long.MaxValue - 2)))
    // right window of 0 is [1, MaxValue + 1] and holds 5
    intercept[WindowError](drainSum(Long.MaxValue, Seq(0L, 5L)))
    // right window of MaxValue - 1 is [MaxValue, MaxValue + 1]
    intercept[WindowError](drainSum(1, Seq(Long.MaxValue - 1, Long.MaxValue)))
  }

  test("property: near the ends of the range, the exact windows or a WindowError, never a wrong window") {
    forAll(extremeCase) { c =>
      val exact = BruteForceSliding.exactWindows(c.records, c.size)
      val expected = exact.map(w => (w.start, w.end, w.values))
      val got = ArrayBuffer.empty[(BigInt, BigInt, Vector[Int])]
      val agg = new Collect[Int]
      val input = SweepHarness.partials(c.records, agg)(v => ArrayBuffer(v)).iterator
      val outcome =
        try Right(SweepHarness.drainInto(c.size, input, agg)(_.toVector)(w =>
          got += ((BigInt(w.start), BigInt(w.end), w.result))))
        catch { case e: WindowError => Left(e) }
      withClue(s"$c\n") {
        if (exact.forall(_.fitsInLong)) {
          outcome shouldBe Right(())
          got.toVector shouldBe expected
        } else {
          assert(outcome.isLeft, "windows out of the 64-bit range but no WindowError")
          got.toVector shouldBe expected.take(got.length) // what came out before the error is right
        }
      }
    }
  }
}

object SlidingWindowSweepSpec {
  /** One key's records (time, input position) and a window size. */
  final case class Case(size: Long, records: Vector[(Long, Int)]) {
    override def toString: String =
      s"Case(size = $size, records (time, id) = ${records.mkString(", ")})"
  }

  private implicit class ExactValues(val w: ExactWindow[Int]) extends AnyVal {
    def values: Vector[Int] = w.records.map(_._2)
  }

  /** The value a record contributes to the sum: distinct per record, so a wrong set shows. */
  def weight(id: Int): Long = 1000L * id + 7

  /** Times kept within ±2^61 and sizes up to 2^60, so no window bound leaves the Long range. */
  private val TimeLimit = 1L << 61

  val sizeGen: Gen[Long] = Gen.frequency(
    3 -> Gen.const(1L),
    6 -> Gen.choose(2L, 20L),
    2 -> Gen.choose(21L, 1000L),
    1 -> Gen.choose(1000000000000L, 1000000000000000L),
    1 -> Gen.const(1L << 60))

  /** Records at `times`, presented in a shuffled input order; the id is the input position. */
  private def shuffled(size: Long, times: Seq[Long]): Gen[Case] =
    Gen.long.map { seed =>
      val order = new Random(seed).shuffle(times.toVector)
      Case(size, order.zipWithIndex)
    }

  private def gapGen(size: Long): Gen[Long] = Gen.frequency(
    4 -> Gen.const(0L), // a duplicate time
    3 -> Gen.const(1L),
    2 -> Gen.const(size - 1),
    2 -> Gen.const(size),
    2 -> Gen.const(size + 1),
    2 -> Gen.const(size + 2),
    3 -> Gen.choose(1L, math.min(2 * size, 1L << 40)),
    1 -> Gen.const(1000000000000L))

  val gapCase: Gen[Case] = for {
    size <- sizeGen
    n <- Gen.choose(1, 50)
    base <- Gen.oneOf(Gen.choose(-30L, 30L), Gen.choose(-1000000000000L, 1000000000000L))
    gaps <- Gen.listOfN(n - 1, gapGen(size))
    times = gaps.scanLeft(base)(_ + _).takeWhile(t => math.abs(t) <= TimeLimit)
    c <- shuffled(size, times)
  } yield c

  val denseCase: Gen[Case] = for {
    size <- Gen.frequency(3 -> Gen.const(1L), 5 -> Gen.choose(2L, 15L), 1 -> Gen.choose(16L, 100L))
    n <- Gen.choose(1, 60)
    base <- Gen.choose(-50L, 50L)
    span <- Gen.oneOf(0L, 2L, 5L, 12L, 30L, 100L)
    times <- Gen.listOfN(n, Gen.choose(base, base + span))
    c <- shuffled(size, times)
  } yield c

  val sparseCase: Gen[Case] = for {
    size <- Gen.frequency(2 -> Gen.const(1L), 1 -> Gen.choose(2L, 100L), 1 -> Gen.const(1L << 60))
    n <- Gen.choose(1, 40)
    times <- Gen.listOfN(n, Gen.choose(-10000000000000L, 10000000000000L))
    c <- shuffled(size, times)
  } yield c

  val anyCase: Gen[Case] = Gen.frequency(3 -> gapCase, 2 -> denseCase, 1 -> sparseCase)

  /** Times near Long.MinValue or Long.MaxValue, sizes up to Long.MaxValue: some overflow. */
  val extremeCase: Gen[Case] = for {
    size <- Gen.oneOf(Gen.choose(1L, 40L), Gen.oneOf(Long.MaxValue, Long.MaxValue - 1, Long.MaxValue / 2))
    n <- Gen.choose(1, 12)
    near = Gen.oneOf(
      Gen.choose(Long.MaxValue - 60, Long.MaxValue),
      Gen.choose(Long.MinValue, Long.MinValue + 60),
      Gen.choose(-20L, 20L))
    times <- Gen.listOfN(n, near)
    c <- shuffled(size, times)
  } yield c
}
