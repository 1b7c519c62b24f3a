package windowagg.core

import java.time.Duration
import java.util.Locale
import java.util.concurrent.TimeUnit

/**
 * A length of time as a user gives it: either a duration ("10 minutes", java.time.Duration) or a
 * bare count of ticks of the time column's own unit (for integral time columns). It is turned into
 * ticks only once the time column, and so its unit, is known.
 */
sealed trait TimeSpan {
  /** This span in ticks of `unit`; `what` names the span in error messages. */
  def toTicks(unit: TimeUnit, what: String): Long

  /** As the spec grammar writes it: a bare number of ticks, or a duration like "10 minutes". */
  def spec: String
}

object TimeSpan {
  final case class OfDuration(duration: Duration) extends TimeSpan {
    def toTicks(unit: TimeUnit, what: String): Long = {
      // exact in BigInteger: a Duration's nanoseconds overflow a long beyond about 292 years
      val nanos = java.math.BigInteger.valueOf(duration.getSeconds).multiply(java.math.BigInteger.valueOf(1000000000L))
        .add(java.math.BigInteger.valueOf(duration.getNano.toLong))
      val division = nanos.divideAndRemainder(java.math.BigInteger.valueOf(unit.toNanos(1)))
      val (ticks, rest) = (division(0), division(1))
      if (rest.signum != 0) {
        throw WindowError(
          s"$what $this is not a whole number of ${unit.name.toLowerCase(Locale.ROOT)}, " +
            "the resolution of the time column")
      }
      if (ticks.bitLength > 63) throw WindowError(s"$what $this is too large")
      ticks.longValue
    }
    override def toString: String = TimeSpan.format(duration)
    def spec: String = toString
  }

  final case class OfTicks(ticks: Long) extends TimeSpan {
    def toTicks(unit: TimeUnit, what: String): Long = ticks
    override def toString: String = s"$ticks ticks"
    def spec: String = ticks.toString
  }

  def apply(duration: Duration): TimeSpan = OfDuration(duration)

  def isPositive(span: TimeSpan): Boolean = span match {
    case OfDuration(d) => !d.isNegative && !d.isZero
    case OfTicks(n) => n > 0
  }

  def isNegative(span: TimeSpan): Boolean = span match {
    case OfDuration(d) => d.isNegative
    case OfTicks(n) => n < 0
  }
  def ticks(n: Long): TimeSpan = OfTicks(n)

  /** A duration given by a caller, checked for null; `what` names it in errors. */
  def of(duration: Duration, what: String): TimeSpan = {
    if (duration == null) throw WindowError(s"$what must not be null")
    OfDuration(duration)
  }

  /** `span` if it is positive; an error naming `what` otherwise. */
  def positive(span: TimeSpan, what: String): TimeSpan = {
    if (!isPositive(span)) throw WindowError(s"$what must be positive, got $span")
    span
  }

  /** `span` if it is not negative; an error naming `what` otherwise. */
  def nonNegative(span: TimeSpan, what: String): TimeSpan = {
    if (isNegative(span)) throw WindowError(s"$what must not be negative, got $span")
    span
  }

  /** A length as the spec grammar and SQL strings write it: a bare integer counts ticks, anything else is a duration. */
  def parseLength(text: String): TimeSpan = {
    if (text == null) throw WindowError("a length of time (size, gap or grace) must not be null")
    val trimmed = text.trim
    if (trimmed.matches("[+-]?\\d+")) {
      try OfTicks(trimmed.toLong)
      catch { case _: NumberFormatException => throw WindowError(s"'$text' does not fit in a 64-bit number of ticks") }
    } else parse(trimmed)
  }

  private val unitNanos: Seq[(Set[String], Long)] = Seq(
    Set("w", "week", "weeks") -> 7L * 86400L * 1000000000L,
    Set("d", "day", "days") -> 86400L * 1000000000L,
    Set("h", "hr", "hrs", "hour", "hours") -> 3600L * 1000000000L,
    Set("m", "min", "mins", "minute", "minutes") -> 60L * 1000000000L,
    Set("s", "sec", "secs", "second", "seconds") -> 1000000000L,
    Set("ms", "milli", "millis", "millisecond", "milliseconds") -> 1000000L,
    Set("us", "micro", "micros", "microsecond", "microseconds") -> 1000L,
    Set("ns", "nano", "nanos", "nanosecond", "nanoseconds") -> 1L)

  private val part = """([+-]?\d+(?:\.\d+)?)\s*([a-zA-Z]+)""".r

  /**
   * Parses "10 minutes", "1 hour 30 minutes", "1.5 s", "250ms", optionally prefixed by "interval".
   * Months and years are not fixed lengths of time and are rejected here.
   */
  def parse(text: String): TimeSpan.OfDuration = {
    if (text == null) throw WindowError("a length of time (size, gap or grace) must not be null")
    val trimmed = text.trim.replaceFirst("(?i)^interval\\s+", "")
    if (trimmed.isEmpty) throw WindowError(s"cannot parse '$text' as a length of time")
    val matches = part.findAllMatchIn(trimmed).toList
    val rebuilt = matches.map(_.matched).mkString
    if (matches.isEmpty || rebuilt.replaceAll("\\s", "") != trimmed.replaceAll("\\s", "")) {
      throw WindowError(
        s"cannot parse '$text' as a length of time; write it like '10 minutes' or '1 hour 30 minutes'")
    }
    var total = java.math.BigDecimal.ZERO
    matches.foreach { m =>
      val name = m.group(2).toLowerCase(Locale.ROOT)
      val nanos = unitNanos.collectFirst { case (names, n) if names.contains(name) => n }.getOrElse {
        if (Set("mon", "month", "months", "y", "year", "years").contains(name)) {
          throw WindowError(
            s"'$text': months and years have no fixed length; use calendar windows for them")
        }
        throw WindowError(s"'$text': unknown time unit '${m.group(2)}'")
      }
      total = total.add(new java.math.BigDecimal(m.group(1)).multiply(java.math.BigDecimal.valueOf(nanos)))
    }
    val nanos =
      try total.setScale(0, java.math.RoundingMode.UNNECESSARY).toBigInteger
      catch { case _: ArithmeticException => throw WindowError(s"'$text' is not a whole number of nanoseconds") }
    // beyond 64-bit nanoseconds (292 years) as a Duration does: whole seconds, then nanoseconds
    val billion = java.math.BigInteger.valueOf(1000000000L)
    try OfDuration(Duration.ofSeconds(nanos.divide(billion).longValueExact(), nanos.remainder(billion).longValue()))
    catch { case _: ArithmeticException => throw WindowError(s"'$text' is too large a length of time") }
  }

  /** As `parse`, for callers that need the duration itself. */
  def parseDuration(text: String): Duration = parse(text).duration

  private def format(d: Duration): String = {
    val nanos = try d.toNanos catch { case _: ArithmeticException => return s"${d.toDays} days" }
    if (nanos == 0) return "0 seconds"
    val units = Seq(86400L * 1000000000L -> "day", 3600L * 1000000000L -> "hour", 60L * 1000000000L -> "minute",
      1000000000L -> "second", 1000000L -> "millisecond", 1000L -> "microsecond", 1L -> "nanosecond")
    units.collectFirst { case (n, name) if nanos != 0 && nanos % n == 0 =>
      val k = nanos / n
      s"$k $name${if (math.abs(k) == 1) "" else "s"}"
    }.getOrElse(d.toString)
  }
}
