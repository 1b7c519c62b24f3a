package windowagg

import java.time.{Instant, LocalDateTime, ZoneId, ZoneOffset}
import java.util.Locale
import java.util.concurrent.TimeUnit

import windowagg.core.{TimeSpan, WindowError}

/**
 * How a time column's values map to instants: ticks of `unit` since the epoch. An integral column
 * has a unit only when the query declares one (`declaredUnit`): a guess would be off by 1000
 * without a sign, so a definition that needs the unit (durations, dates) fails without it, while
 * one given in bare ticks does not need it. `zone` is where
 * local calendar times are read: the session time zone for TIMESTAMP (`hasZone`); UTC for
 * TIMESTAMP_NTZ, whose values are local times already, and for integral epochs, which carry no zone.
 * `isTimestamp` tells a TIMESTAMP or TIMESTAMP_NTZ column from an integral one, whose lengths may
 * also be given as bare counts of ticks.
 */
final case class Timeline(declaredUnit: Option[TimeUnit], zone: ZoneId, isTimestamp: Boolean, hasZone: Boolean) {
  def unit: TimeUnit = declaredUnit.getOrElse(throw WindowError(Timeline.UnitNeeded))
  private lazy val ticksPerSecond = unit.convert(1, TimeUnit.SECONDS)
  private lazy val nanosPerTick = unit.toNanos(1)

  def toInstant(ticks: Long): Instant =
    Instant.ofEpochSecond(Math.floorDiv(ticks, ticksPerSecond), Math.floorMod(ticks, ticksPerSecond) * nanosPerTick)

  /** The instant in ticks, rounded down to a whole tick. */
  def fromInstant(instant: Instant): Long =
    try Math.addExact(Math.multiplyExact(instant.getEpochSecond, ticksPerSecond), instant.getNano / nanosPerTick)
    catch { case _: ArithmeticException => throw WindowError(s"$instant is out of the range of the time column") }

  def toLocal(ticks: Long): LocalDateTime = LocalDateTime.ofInstant(toInstant(ticks), zone)

  /** A local date-time in `zone` in ticks; in a gap or overlap of the zone's offset, as `java.time` resolves it. */
  def fromLocal(local: LocalDateTime): Long = fromInstant(local.atZone(zone).toInstant)

  /**
   * A length of time given for this column in its ticks; `what` names it in error messages. A bare
   * count of ticks is only meaningful for an integral column.
   */
  def ticks(span: TimeSpan, what: String): Long = span match {
    case TimeSpan.OfTicks(n) if isTimestamp =>
      throw WindowError(
        s"$what $n is a number of ticks, but the time column is a timestamp: give it as a duration such as '10 minutes'")
    case TimeSpan.OfTicks(n) => n
    case _ => span.toTicks(unit, what)
  }

  /** The same column read in another zone (calendar windows with their own zone). */
  def inZone(other: ZoneId): Timeline = copy(zone = other)

  /** `ticks` as a readable time, for messages. */
  def format(ticks: Long): String =
    if (isTimestamp) s"${toLocal(ticks)}${if (!hasZone) "" else if (zone == ZoneOffset.UTC) "Z" else s" $zone"}"
    else s"$ticks ${declaredUnit.fold("ticks")(_.name.toLowerCase(Locale.ROOT))}"
}

object Timeline {
  val UnitNeeded: String =
    "the time column is an integral epoch, and the definition has durations or dates to turn into its ticks: " +
      "give the column's unit as the option timeUnit ('milliseconds', 'microseconds' or 'seconds'; time_unit= in " +
      "Python, the last argument in SQL), or give sizes as bare numbers of ticks"

  /** An integral epoch column in `unit`. */
  def epoch(unit: TimeUnit): Timeline = epoch(Some(unit))

  /** An integral epoch column, in `unit` when the query declares one. */
  def epoch(unit: Option[TimeUnit]): Timeline = Timeline(unit, ZoneOffset.UTC, isTimestamp = false, hasZone = false)

  /** A TIMESTAMP (microseconds) read in `zone`. */
  def timestamp(zone: ZoneId): Timeline = Timeline(Some(TimeUnit.MICROSECONDS), zone, isTimestamp = true, hasZone = true)

  /** A TIMESTAMP_NTZ (microseconds): local date-times, kept as if in UTC. */
  def local: Timeline = Timeline(Some(TimeUnit.MICROSECONDS), ZoneOffset.UTC, isTimestamp = true, hasZone = false)
}
