package windowagg

import scala.collection.mutable.ArrayBuffer

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.{DeterministicPropertyChecks, WindowError}

/**
 * Bad input never crashes the core: garbage specs fail with a WindowError, and the windows of a time at
 * the ends of the 64-bit range are the exact ones (checked in BigInt) or a WindowError, never wrapped.
 */
class BadInputSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {

  private val edgeTimes: Gen[Long] = Gen.oneOf(
    Gen.oneOf(Long.MinValue, Long.MinValue + 1, -1L, 0L, 1L, Long.MaxValue - 1, Long.MaxValue),
    Gen.choose(Long.MinValue, Long.MinValue + 1000), Gen.choose(Long.MaxValue - 1000, Long.MaxValue), Gen.long)
  private val lengths: Gen[Long] =
    Gen.oneOf(Gen.choose(1L, 20L), Gen.choose(1L, Long.MaxValue), Gen.oneOf(Long.MaxValue, Long.MaxValue - 1, Long.MaxValue / 2 + 1))

  private def windowsOf(kind: EnumeratedWindows, time: Long): Either[WindowError, Seq[(BigInt, BigInt)]] = {
    val found = ArrayBuffer.empty[(BigInt, BigInt)]
    try {
      kind.foreachWindow(time)((s, e) => found += ((BigInt(s), BigInt(e))))
      Right(found.toSeq)
    } catch { case e: WindowError => Left(e) }
  }

  /** Whether every window lies in the 64-bit range (if not, an error is the right answer). */
  private def inRange(windows: Seq[(BigInt, BigInt)]): Boolean =
    windows.forall { case (s, e) => s >= Long.MinValue && e <= Long.MaxValue }

  test("tumbling and hopping windows of a time at the ends of the range are exact or an error") {
    forAll(edgeTimes, lengths, Gen.choose(1L, 40L), Gen.choose(0L, Long.MaxValue), minSuccessful(500)) { (time, a, k, o) =>
      // at most 40 windows per time, so the windows can be listed
      val (size, advance) = (a, math.max(1L, a / k))
      val offset = o % advance
      val t = BigInt(time)
      // every start offset + k × advance in (t − size, t]
      val latest = t - (t - offset).mod(BigInt(advance))
      val expected = Iterator.iterate(latest)(_ - advance).takeWhile(_ > t - size).map(s => (s, s + size)).toSeq
      windowsOf(TimeWindows.Resolved(size, advance, offset), time) match {
        case Right(windows) => windows.sortBy(_._1) shouldBe expected.sortBy(_._1)
        case Left(error) =>
          inRange(expected) shouldBe false
          error.getMessage should include("range of a 64-bit time")
      }
    }
  }

  test("cumulative windows of a time at the ends of the range are exact or an error") {
    forAll(edgeTimes, lengths, Gen.choose(1L, 40L), Gen.choose(0L, Long.MaxValue), minSuccessful(500)) { (time, s, k, o) =>
      val step = math.max(1L, s / k)
      val max = step * k
      val offset = o % max
      val t = BigInt(time)
      val period = t - (t - offset).mod(BigInt(max))
      val firstEnd = t - (t - offset).mod(BigInt(step)) + step
      val expected = Iterator.iterate(firstEnd)(_ + step).takeWhile(_ <= period + max).map(e => (period, e)).toSeq
      windowsOf(CumulativeWindows.Resolved(step, max, offset), time) match {
        case Right(windows) => windows shouldBe expected
        case Left(error) =>
          inRange(expected) shouldBe false
          error.getMessage should include("range of a 64-bit time")
      }
    }
  }

  private val words = Seq("sliding", "session", "tumbling", "hopping", "cumulative", "calendar", "unlimited", "count",
    "duration", "custom", "gap", "column", "every", "offset", "grace", "up", "to", "lag", "tie", "break", "from", "in",
    "starting", "rows", "days", "month", "s", "0", "-1", "1", "2147483648", "9223372036854775807", "9223372036854775808",
    "99999999999999999999", "1.5", "NaN", "'", "'Mars/Base'", "(", ")", "=", "funday", "+1000000000-01-01T00:00:00Z")

  test("garbage specs are read or refused with a WindowError") {
    forAll(Gen.choose(1, 7).flatMap(Gen.listOfN(_, Gen.oneOf(words))), minSuccessful(1000)) { tokens =>
      val spec = tokens.mkString(" ")
      try WindowSpec.parse(spec)
      catch { case _: WindowError => () }
    }
  }
}
