package windowagg

import java.time.Duration
import java.util.concurrent.TimeUnit

import windowagg.core.{TimeSpan, WindowError}

/**
 * What windows exist, independent of any engine: a value the user builds once and hands to a
 * windowed aggregation (`groupBy(window(ts, definition))`, the SQL functions). Sizes stay in the
 * user's terms until the time column, and with it the tick unit, is known.
 */
sealed trait WindowDefinition extends Serializable {
  /** Checks the definition against a time column whose ticks are `unit`, with sizes in ticks. */
  def resolve(unit: TimeUnit): ResolvedWindows
}

/** A definition with all sizes in ticks of the time column, validated. */
sealed trait ResolvedWindows extends Serializable

/**
 * Kafka Streams' sliding windows (KIP-450): a window of the given size, both ends inclusive, for
 * every distinct set of records of a key that fit in it: one ending at each record time and one
 * starting just after each record time when it holds records.
 */
final class SlidingWindows private (val size: TimeSpan, val gracePeriod: Option[TimeSpan]) extends WindowDefinition {

  /**
   * How long after a window's end records may still arrive (streaming): the watermark is the
   * largest time seen minus the grace. It applies where the streaming input has no watermark of
   * its own on the time column; batch queries see complete data and ignore it.
   */
  def grace(afterWindowEnd: String): SlidingWindows = withGrace(TimeSpan.parse(afterWindowEnd))
  def grace(afterWindowEnd: Duration): SlidingWindows = {
    if (afterWindowEnd == null) throw WindowError("the grace period must not be null")
    withGrace(TimeSpan(afterWindowEnd))
  }

  private def withGrace(g: TimeSpan): SlidingWindows = {
    val negative = g match {
      case TimeSpan.OfDuration(d) => d.isNegative
      case TimeSpan.OfTicks(n) => n < 0
    }
    if (negative) throw WindowError(s"the grace period must not be negative, got $g")
    new SlidingWindows(size, Some(g))
  }

  override def resolve(unit: TimeUnit): ResolvedWindows.Sliding = {
    val ticks = size.toTicks(unit, "sliding window size")
    if (ticks <= 0) throw WindowError(s"sliding window size must be positive, got $size")
    ResolvedWindows.Sliding(ticks, gracePeriod.map(_.toTicks(unit, "grace period")))
  }
  override def toString: String = s"SlidingWindows.of($size)${gracePeriod.map(g => s".grace($g)").getOrElse("")}"
  override def equals(other: Any): Boolean = other match {
    case o: SlidingWindows => o.size == size && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (size, gracePeriod).hashCode
}

object SlidingWindows {
  /** A window size like "10 minutes" or "1 hour 30 minutes". */
  def of(size: String): SlidingWindows = checked(TimeSpan.parse(size))
  def of(size: Duration): SlidingWindows = {
    if (size == null) throw WindowError("sliding window size must not be null")
    checked(TimeSpan(size))
  }
  /** A size in ticks of an integral time column's own unit (e.g. 10000 for 10 s of epoch millis). */
  def of(size: Long): SlidingWindows = checked(TimeSpan.ticks(size))

  private def checked(size: TimeSpan): SlidingWindows = {
    val positive = size match {
      case TimeSpan.OfDuration(d) => !d.isNegative && !d.isZero
      case TimeSpan.OfTicks(n) => n > 0
    }
    if (!positive) throw WindowError(s"sliding window size must be positive, got $size")
    new SlidingWindows(size, None)
  }
}

object ResolvedWindows {
  /** Sliding windows of `sizeTicks`, with the grace period in ticks when one was given. */
  final case class Sliding(sizeTicks: Long, graceTicks: Option[Long] = None) extends ResolvedWindows
}
