package windowagg.core

import scala.util.Random

import org.scalacheck.Gen

/** Generated inputs for the session suites: one key's records, in a shuffled input order. */
object SessionCases {

  /** Records (time, input position) with a fixed gap. */
  final case class FixedCase(gap: Long, records: Vector[(Long, Int)]) {
    def times: Vector[Long] = records.map(_._1)
    override def toString: String = s"FixedCase(gap = $gap, records (time, id) = ${records.mkString(", ")})"
  }

  /** Records (time, gap, input position) with a gap per record. */
  final case class DynamicCase(records: Vector[(Long, Long, Int)]) {
    override def toString: String = s"DynamicCase(records (time, gap, id) = ${records.mkString(", ")})"
  }

  private val LongMin = BigInt(Long.MinValue)
  private val LongMax = BigInt(Long.MaxValue)

  /** `times` in a shuffled input order, each record's id its input position. */
  def shuffled(times: Seq[Long]): Gen[Vector[(Long, Int)]] =
    Gen.long.map(seed => new Random(seed).shuffle(times.toVector).zipWithIndex)

  /** Times from `base` by the given steps, stopping before leaving `[-limit, limit]`. */
  def walk(base: Long, steps: Seq[Long], limit: BigInt = LongMax): Vector[Long] =
    steps.scanLeft(BigInt(base))(_ + _).takeWhile(t => t.abs <= limit && t >= LongMin && t <= LongMax)
      .map(_.toLong).toVector

  val gapGen: Gen[Long] = Gen.frequency(
    3 -> Gen.const(1L),
    6 -> Gen.choose(2L, 20L),
    2 -> Gen.choose(21L, 1000L),
    1 -> Gen.choose(1000000000000L, 1000000000000000L),
    1 -> Gen.const(1L << 62),
    1 -> Gen.const(Long.MaxValue))

  /** Distances between consecutive record times, around the gap (exactly it, one either side). */
  def distanceGen(gap: Long): Gen[Long] = Gen.frequency(
    4 -> Gen.const(0L), // a duplicate time
    3 -> Gen.const(1L),
    2 -> Gen.const(gap - 1),
    3 -> Gen.const(gap),
    3 -> Gen.const(if (gap == Long.MaxValue) gap else gap + 1),
    2 -> Gen.const(if (gap >= Long.MaxValue - 1) gap else gap + 2),
    3 -> Gen.choose(1L, math.min(2 * math.min(gap, 1L << 40), 1L << 40)),
    1 -> Gen.const(1000000000000L))

  /** Times walking by distances around the gap, from a small or a large (negative too) base. */
  val stepCase: Gen[FixedCase] = for {
    gap <- gapGen
    n <- Gen.choose(1, 50)
    base <- Gen.oneOf(Gen.choose(-30L, 30L), Gen.choose(-1000000000000L, 1000000000000L))
    steps <- Gen.listOfN(n - 1, distanceGen(gap))
    records <- shuffled(walk(base, steps))
  } yield FixedCase(gap, records)

  /** Few distinct times, many duplicates, small gaps. */
  val denseCase: Gen[FixedCase] = for {
    gap <- Gen.frequency(3 -> Gen.const(1L), 5 -> Gen.choose(2L, 15L), 1 -> Gen.choose(16L, 100L))
    n <- Gen.choose(1, 60)
    base <- Gen.choose(-50L, 50L)
    span <- Gen.oneOf(0L, 2L, 5L, 12L, 30L, 100L)
    times <- Gen.listOfN(n, Gen.choose(base, base + span))
    records <- shuffled(times)
  } yield FixedCase(gap, records)

  /** Times spread far apart: mostly single-record sessions, unless the gap is huge. */
  val sparseCase: Gen[FixedCase] = for {
    gap <- Gen.frequency(2 -> Gen.const(1L), 1 -> Gen.choose(2L, 100L), 1 -> Gen.const(1L << 60))
    n <- Gen.choose(1, 40)
    times <- Gen.listOfN(n, Gen.choose(-10000000000000L, 10000000000000L))
    records <- shuffled(times)
  } yield FixedCase(gap, records)

  /** Times at the ends of the 64-bit range and gaps up to Long.MaxValue: t + gap overflows. */
  val extremeCase: Gen[FixedCase] = for {
    gap <- Gen.oneOf(Gen.choose(1L, 40L), Gen.oneOf(Long.MaxValue, Long.MaxValue - 1, Long.MaxValue / 2))
    n <- Gen.choose(1, 12)
    near = Gen.oneOf(
      Gen.choose(Long.MaxValue - 60, Long.MaxValue),
      Gen.choose(Long.MinValue, Long.MinValue + 60),
      Gen.choose(-20L, 20L))
    times <- Gen.listOfN(n, near)
    records <- shuffled(times)
  } yield FixedCase(gap, records)

  val fixedCase: Gen[FixedCase] =
    Gen.frequency(4 -> stepCase, 3 -> denseCase, 1 -> sparseCase, 1 -> extremeCase)

  /**
   * Per-record gaps: times close together relative to the gaps, so a record with a long gap keeps
   * a session open across later records with short ones (the reach is the largest t + g so far).
   */
  val dynamicCase: Gen[DynamicCase] = for {
    n <- Gen.choose(1, 50)
    base <- Gen.oneOf(Gen.choose(-100L, 100L), Gen.choose(-1000000000000L, 1000000000000L))
    steps <- Gen.listOfN(n - 1, Gen.frequency(3 -> Gen.const(0L), 8 -> Gen.choose(1L, 30L), 1 -> Gen.choose(31L, 300L)))
    times = walk(base, steps)
    gaps <- Gen.listOfN(times.length, Gen.frequency(
      3 -> Gen.const(1L),
      6 -> Gen.choose(2L, 30L),
      2 -> Gen.choose(31L, 300L),
      1 -> Gen.const(1000000000000L),
      1 -> Gen.const(Long.MaxValue)))
    order <- shuffled(times.indices.map(_.toLong))
  } yield DynamicCase(order.map { case (i, id) => (times(i.toInt), gaps(i.toInt), id) })

  /** Per-record gaps at the ends of the 64-bit range. */
  val dynamicExtremeCase: Gen[DynamicCase] = for {
    n <- Gen.choose(1, 12)
    records <- Gen.listOfN(n, Gen.zip(
      Gen.oneOf(Gen.choose(Long.MaxValue - 60, Long.MaxValue), Gen.choose(Long.MinValue, Long.MinValue + 60),
        Gen.choose(-20L, 20L)),
      Gen.oneOf(Gen.choose(1L, 40L), Gen.oneOf(Long.MaxValue, Long.MaxValue / 2))))
    order <- shuffled(records.indices.map(_.toLong))
  } yield DynamicCase(order.map { case (i, id) => (records(i.toInt)._1, records(i.toInt)._2, id) })

  /** Overflow-free t + g: the Long range's end where the sum leaves it (as the operator computes a reach). */
  def saturatingAdd(a: Long, b: Long): Long = {
    val exact = BigInt(a) + BigInt(b)
    if (exact > LongMax) Long.MaxValue else if (exact < LongMin) Long.MinValue else exact.toLong
  }
}
