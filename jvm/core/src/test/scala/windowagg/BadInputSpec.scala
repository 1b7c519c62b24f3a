package windowagg

import java.time.{DayOfWeek, ZoneId}
import java.time.temporal.{ChronoUnit, IsoFields, TemporalUnit}
import java.util.Locale
import java.util.concurrent.TimeUnit

import scala.collection.mutable.ArrayBuffer
import scala.util.Try

import org.scalacheck.{Gen, Shrink}
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.{DeterministicPropertyChecks, EnumeratedWindows, ReferenceWindows, WindowError}

/**
 * Bad input never crashes the core, and is never misread: the windows of a time at the ends of the
 * 64-bit range are the exact ones (checked in BigInt) or a WindowError; a spec with lengths and counts
 * at the edges gives the windows its words say (checked against [[ReferenceWindows]]) or a WindowError
 * naming a rule it breaks; garbage specs are refused naming the problem.
 */
class BadInputSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {
  // a failing case is shown as generated: shrunk, a spec would part from the outcome generated with it
  private implicit def noShrink[T]: Shrink[T] = Shrink.shrinkAny

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

  /** The kind's windows of `time` are the reference's, or, where those leave the 64-bit range, an error saying so. */
  private def checkWindows(kind: EnumeratedWindows, reference: ReferenceWindows.Aligned, time: Long): Unit = {
    val expected = reference.exactWindowsOf(time)
    windowsOf(kind, time) match {
      case Right(windows) => windows.sortBy(_._1) shouldBe expected.sortBy(_._1)
      case Left(error) =>
        inRange(expected) shouldBe false
        error.getMessage should include("range of a 64-bit time")
    }
  }

  test("tumbling and hopping windows of a time at the ends of the range are exact or an error") {
    forAll(edgeTimes, lengths, Gen.choose(1L, 40L), Gen.choose(0L, Long.MaxValue), minSuccessful(500)) { (time, a, k, o) =>
      // at most 40 windows per time, so the windows can be listed
      val (size, advance) = (a, math.max(1L, a / k))
      val offset = o % advance
      checkWindows(TimeWindows.Resolved(size, advance, offset), ReferenceWindows.Hopping(size, advance, offset), time)
    }
  }

  test("cumulative windows of a time at the ends of the range are exact or an error") {
    forAll(edgeTimes, lengths, Gen.choose(1L, 40L), Gen.choose(0L, Long.MaxValue), minSuccessful(500)) { (time, s, k, o) =>
      val step = math.max(1L, s / k)
      val max = step * k
      val offset = o % max
      checkWindows(CumulativeWindows.Resolved(step, max, offset), ReferenceWindows.Cumulative(step, max, offset), time)
    }
  }

  // Specs read against a millisecond epoch column: a bare integer counts milliseconds.
  private val millis = Timeline.epoch(TimeUnit.MILLISECONDS)

  /** Lengths that read (as ticks of a millisecond column), from one tick to the 64-bit limit: bare ticks and durations. */
  private val readableLengths: Gen[String] = Gen.oneOf("1", "7", "20", "60000", "4611686018427387904", "9223372036854775807",
    "1.5 s", "1 s", "20 seconds", "90 seconds", "1 days", "2147483648 days")
  /** Lengths at and beyond what a length may be. */
  private val edgeLengths: Gen[String] = Gen.oneOf("0", "-1", "-1 s", "9223372036854775808", "99999999999999999999",
    "99999999999999999999 ms", "99999999999999999999 days", "0.0001 ns", "20 us", "0.5 ms", "1 month", "2 years", "1 fortnights")
  /** Mostly readable, so that specs often break one rule or none. */
  private val lengthTexts: Gen[String] = Gen.frequency(4 -> readableLengths, 1 -> edgeLengths)

  private val nanosPerUnit: Map[String, BigDecimal] = Map("ns" -> 1, "us" -> 1000, "ms" -> 1000000, "s" -> 1000000000L,
    "seconds" -> 1000000000L, "minutes" -> 60000000000L, "hours" -> 3600000000000L, "days" -> 86400000000000L)

  /**
   * A length as the grammar reads it: its value in milliseconds (the column's ticks), or the words of
   * the error it must give. A bare integer counts ticks and must fit in 64 bits; a duration must be of
   * a fixed length (no months or years), a whole number of nanoseconds, and what a java.time.Duration
   * holds.
   */
  private def millisOf(text: String): Either[String, BigDecimal] = {
    val (amount, unit) = text.span(_ != ' ') match { case (a, u) => (a, u.trim) }
    if (unit.isEmpty) Either.cond(BigInt(amount).isValidLong, BigDecimal(amount), "does not fit in a 64-bit number of ticks")
    else if (unit == "month" || unit == "years") Left("months and years have no fixed length")
    else nanosPerUnit.get(unit).fold[Either[String, BigDecimal]](Left(s"unknown time unit '$unit'")) { perUnit =>
      val nanos = BigDecimal(amount) * perUnit
      if (!nanos.isWhole) Left("is not a whole number of nanoseconds")
      else if (!(nanos / 1000000000L).toBigInt.isValidLong) Left("too large a length of time")
      else Right(nanos / 1000000)
    }
  }

  /** A length's ticks, once the column's unit is known: a whole number of milliseconds that 64 bits hold. */
  private def ticksOf(millis: BigDecimal): Either[String, BigInt] =
    if (!millis.isWhole) Left("is not a whole number of milliseconds")
    else Either.cond(millis.toBigInt.isValidLong, millis.toBigInt, "is too large")

  /** The most windows one time may be in: each is computed and output. */
  private val mostWindowsPerTime = 1000000

  /**
   * The lengths `texts` read and checked by `rules` (each rule: whether the lengths break it, and its
   * error's words): their ticks, or the words of every error they must give, any of which may be the
   * one reported. A length that cannot be read, or has no whole number of ticks, breaks a rule of its own.
   */
  private def ruled(texts: String*)(rules: IndexedSeq[Option[BigDecimal]] => Seq[(Boolean, String)]): Either[Seq[String], IndexedSeq[Long]] = {
    val read = texts.map(millisOf)
    val ticks = read.map(_.flatMap(ticksOf))
    val broken = ticks.collect { case Left(error) => error } ++
      rules(read.map(_.toOption).toIndexedSeq).collect { case (true, error) => error }
    if (broken.nonEmpty) Left(broken) else Right(ticks.collect { case Right(t) => t.toLong }.toIndexedSeq)
  }

  /** Whether a rule on one length's sign is broken: the length was read and fails `test`. */
  private def breaks(length: Option[BigDecimal])(test: BigDecimal => Boolean): Boolean = length.exists(test)
  /** Whether a rule on two lengths' ticks is broken: both have ticks, which fail `test`. */
  private def breaks(x: Option[BigDecimal], y: Option[BigDecimal])(test: (BigInt, BigInt) => Boolean): Boolean =
    x.flatMap(ticksOf(_).toOption).zip(y.flatMap(ticksOf(_).toOption)).exists(test.tupled)

  private val offsets: Gen[Option[String]] = Gen.option(Gen.frequency(3 -> Gen.oneOf("0", "1", "7", "1 s", "20 seconds"), 1 -> lengthTexts))

  /** A tumbling, hopping or cumulative spec and what the rules make of it: its reference windows, or the words of its errors. */
  private val alignedSpecs: Gen[(String, Either[Seq[String], ReferenceWindows.Aligned])] = Gen.oneOf(
    for (size <- lengthTexts; offset <- offsets) yield {
      (s"tumbling $size" + offset.fold("")(t => s" offset $t"), ruled(size, offset.getOrElse("0")) { lengths =>
        val (sizeMs, offsetMs) = (lengths(0), lengths(1))
        Seq(breaks(sizeMs)(_ <= 0) -> "window size must be positive",
          breaks(offsetMs)(_ < 0) -> "window offset must not be negative",
          breaks(sizeMs, offsetMs)((s, o) => s > 0 && o >= s) -> "must be less than the size")
      }.map(ticks => ReferenceWindows.Hopping(ticks(0), ticks(0), ticks(1))))
    },
    for (size <- lengthTexts; advance <- lengthTexts; offset <- offsets) yield {
      (s"hopping $size every $advance" + offset.fold("")(t => s" offset $t"), ruled(size, advance, offset.getOrElse("0")) { lengths =>
        val (sizeMs, advanceMs, offsetMs) = (lengths(0), lengths(1), lengths(2))
        Seq(breaks(sizeMs)(_ <= 0) -> "window size must be positive",
          breaks(advanceMs)(_ <= 0) -> "window advance must be positive",
          breaks(sizeMs, advanceMs)((s, a) => s > 0 && a > s) -> "is larger than the window size",
          breaks(offsetMs)(_ < 0) -> "window offset must not be negative",
          breaks(advanceMs, offsetMs)((a, o) => a > 0 && o >= a) -> "must be less than the advance",
          breaks(sizeMs, advanceMs)((s, a) => s > 0 && a > 0 && (s - 1) / a + 1 > mostWindowsPerTime) ->
            s"at most $mostWindowsPerTime are allowed")
      }.map(ticks => ReferenceWindows.Hopping(ticks(0), ticks(1), ticks(2))))
    },
    for (step <- lengthTexts; max <- lengthTexts; offset <- offsets) yield {
      (s"cumulative $step up to $max" + offset.fold("")(t => s" offset $t"), ruled(step, max, offset.getOrElse("0")) { lengths =>
        val (stepMs, maxMs, offsetMs) = (lengths(0), lengths(1), lengths(2))
        Seq(breaks(stepMs)(_ <= 0) -> "cumulative window step must be positive",
          breaks(maxMs)(_ <= 0) -> "cumulative window max size must be positive",
          breaks(stepMs, maxMs)((p, m) => p > 0 && m % p != 0) -> "is not a whole multiple of the step",
          breaks(offsetMs)(_ < 0) -> "window offset must not be negative",
          breaks(maxMs, offsetMs)((m, o) => m > 0 && o >= m) -> "must be less than the max size",
          breaks(stepMs, maxMs)((p, m) => p > 0 && m / p > mostWindowsPerTime) -> s"at most $mostWindowsPerTime are allowed")
      }.map(ticks => ReferenceWindows.Cumulative(ticks(0), ticks(1), ticks(2))))
    })

  test("tumbling, hopping and cumulative specs with edge lengths give the windows their words say, or an error naming a rule they break") {
    // one time per spec: a valid one may put each time in up to a million windows
    forAll(alignedSpecs, edgeTimes, minSuccessful(1000)) { case ((spec, expected), time) =>
      withClue(s"'$spec': ") {
        expected match {
          case Left(words) =>
            val message = intercept[WindowError](WindowSpec.parse(spec).resolve(millis)).getMessage
            assert(words.exists(message.contains), s"the error '$message' names none of ${words.mkString("; ")}")
          case Right(reference) =>
            withClue(s"at $time: ")(checkWindows(WindowSpec.parse(spec).resolve(millis).asInstanceOf[EnumeratedWindows], reference, time))
        }
      }
    }
  }

  /** Calendar units as specs name them. */
  private val calendarUnits: Map[String, TemporalUnit] = Map("day" -> ChronoUnit.DAYS, "week" -> ChronoUnit.WEEKS,
    "month" -> ChronoUnit.MONTHS, "quarter" -> IsoFields.QUARTER_YEARS, "year" -> ChronoUnit.YEARS)
  private val zones = Seq("Europe/Berlin", "America/New_York", "+05:30", "Pacific/Apia")

  /** A calendar spec and what the rules make of it: the reference windows (times in microseconds), or the words of its errors. */
  private val calendarSpecs: Gen[(String, Either[Seq[String], ReferenceWindows.Calendar])] = for {
    count <- Gen.frequency(4 -> Gen.oneOf("1", "2", "3", "7", "12"), 1 -> Gen.oneOf("0", "100001", "2147483648", "-1", "1.5"))
    unitName <- Gen.frequency(6 -> Gen.oneOf(calendarUnits.keys.toSeq), 1 -> Gen.const("fortnight")).flatMap(u => Gen.oneOf(u, s"${u}s"))
    every <- Gen.option(Gen.frequency(3 -> Gen.oneOf("1", "2", "3"), 1 -> Gen.oneOf("0", "1.5", "2147483648")))
    firstDay <- Gen.option(Gen.frequency(3 -> Gen.oneOf("sunday", "MONDAY", "Saturday"), 1 -> Gen.const("Funday")))
    zone <- Gen.option(Gen.frequency(4 -> Gen.oneOf(zones), 1 -> Gen.const("Mars/Base")))
  } yield {
    val spec = s"calendar $count $unitName" + every.fold("")(k => s" every $k") + firstDay.fold("")(d => s" from $d") +
      zone.fold("")(z => s" in '$z'")
    val unit = calendarUnits.get(unitName.stripSuffix("s"))
    val n = if (count.matches("\\d+")) BigInt(count) else BigInt(-1)
    val k = every.map(text => if (text.matches("\\d+")) BigInt(text) else BigInt(-1)).getOrElse(n)
    val day = firstDay.flatMap(d => Try(DayOfWeek.valueOf(d.toUpperCase(Locale.ROOT))).toOption)
    val broken = Seq(
      !count.matches("\\d+") -> "write the size as a count and a unit",
      !n.isValidInt -> "units is too many",
      (n == 0) -> "must be a positive number of",
      (n > 100000 && n.isValidInt) -> "is too long",
      unit.isEmpty -> s"unknown calendar unit '$unitName'",
      every.exists(!_.matches("\\d+")) -> "the advance must be a whole number of",
      (!k.isValidInt && k > 0) -> "units is too many",
      (k == 0) -> "advance must be a positive number of",
      (k > n && n > 0) -> "is larger than the size",
      (firstDay.isDefined && day.isEmpty) -> s"unknown first day of the week '${firstDay.getOrElse("")}'",
      zone.contains("Mars/Base") -> "unknown time zone 'Mars/Base'").collect { case (true, error) => error }
    (spec, if (broken.nonEmpty) Left(broken) else Right(ReferenceWindows.Calendar(unit.get, n.toInt, k.toInt,
      ZoneId.of(zone.getOrElse("UTC")), day.getOrElse(DayOfWeek.MONDAY))))
  }

  test("calendar specs with edge counts, units, days and zones give the windows their words say, or an error naming a rule they break") {
    // a timestamp column in the session zone UTC; times across 1900–2100
    val timeline = Timeline.timestamp(ZoneId.of("UTC"))
    forAll(calendarSpecs, Gen.listOfN(3, Gen.choose(-2208988800L, 4102444800L).map(_ * 1000000L)), minSuccessful(1000)) {
        case ((spec, expected), times) =>
      withClue(s"'$spec': ") {
        expected match {
          case Left(words) =>
            val message = intercept[WindowError](WindowSpec.parse(spec).resolve(timeline)).getMessage
            assert(words.exists(message.contains), s"the error '$message' names none of ${words.mkString("; ")}")
          case Right(reference) =>
            val kind = WindowSpec.parse(spec).resolve(timeline).asInstanceOf[EnumeratedWindows]
            times.foreach { t =>
              val listed = ArrayBuffer.empty[(Long, Long)]
              kind.foreachWindow(t)((s, e) => listed += ((s, e)))
              withClue(s"at $t: ")(listed.toSet shouldBe reference.windowsOf(t).toSet)
            }
        }
      }
    }
  }

  private val kindWords = Seq("sliding", "session", "tumbling", "hopping", "cumulative", "calendar", "unlimited", "count",
    "duration", "custom", "table", "listed")
  private val garbageWords = kindWords ++ Seq("gap", "column", "every", "offset", "grace", "up", "to", "lag", "tie", "break", "from",
    "in", "starting", "rows", "days", "month", "s", "0", "-1", "1", "2147483648", "9223372036854775807", "9223372036854775808",
    "99999999999999999999", "1.5", "NaN", "'", "'Mars/Base'", "(", ")", "=", "funday", "+1000000000-01-01T00:00:00Z")

  /** Whether `message` quotes `token`, or has it as a word of its own. */
  private def names(message: String, token: String): Boolean = message.contains(s"'$token'") ||
    token.exists(_.isLetterOrDigit) && s"(?<![\\w.])${java.util.regex.Pattern.quote(token)}(?![\\w.])".r.findFirstIn(message).isDefined

  test("garbage specs are refused with a WindowError naming the problem, or read as a definition that reads back from its spec") {
    // half start with a kind's word, so that every kind's reader meets garbage
    val garbage = for {
      first <- Gen.oneOf(Gen.oneOf(kindWords), Gen.oneOf(garbageWords))
      rest <- Gen.choose(0, 6).flatMap(Gen.listOfN(_, Gen.oneOf(garbageWords)))
    } yield first +: rest
    forAll(garbage, minSuccessful(1000)) { tokens =>
      val spec = tokens.mkString(" ")
      withClue(s"'$spec': ") {
        if (!kindWords.contains(tokens.head)) {
          intercept[WindowError](WindowSpec.parse(spec)).getMessage should include(s"unknown window kind '${tokens.head.toLowerCase(Locale.ROOT)}'")
        } else {
          try {
            val definition = WindowSpec.parse(spec)
            WindowSpec.parse(definition.spec) shouldBe definition
          } catch {
            // the message quotes the spec, or a word of it at fault
            case e: WindowError => assert(tokens.tail.exists(names(e.getMessage, _)) || e.getMessage.contains(spec),
              s"the error '${e.getMessage}' quotes nothing of the spec")
          }
        }
      }
    }
  }
}
