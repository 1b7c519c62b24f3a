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

object WindowDefinition {
  /** A grace period as given, checked. */
  private[windowagg] def grace(afterWindowEnd: String): TimeSpan = checkedGrace(TimeSpan.parse(afterWindowEnd))
  private[windowagg] def grace(afterWindowEnd: Duration): TimeSpan = {
    if (afterWindowEnd == null) throw WindowError("the grace period must not be null")
    checkedGrace(TimeSpan(afterWindowEnd))
  }
  private def checkedGrace(g: TimeSpan): TimeSpan = {
    if (TimeSpan.isNegative(g)) throw WindowError(s"the grace period must not be negative, got $g")
    g
  }
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
  def grace(afterWindowEnd: String): SlidingWindows = new SlidingWindows(size, Some(WindowDefinition.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): SlidingWindows = new SlidingWindows(size, Some(WindowDefinition.grace(afterWindowEnd)))

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
    if (!TimeSpan.isPositive(size)) throw WindowError(s"sliding window size must be positive, got $size")
    new SlidingWindows(size, None)
  }
}

/**
 * Kafka Streams' session windows (KIP-94): records of a key at most `gap` apart (inclusive),
 * transitively, form one session `[first record time, last record time]`. The gap is fixed, or
 * read per record from a column (as Spark's dynamic `session_window`): a record at t with gap g
 * keeps the session open until t + g.
 */
final class SessionWindows private (val gap: Option[TimeSpan], val gapColumn: Option[String], val gracePeriod: Option[TimeSpan])
  extends WindowDefinition {

  /** How long after a session's last record plus gap records may still arrive (streaming); see [[SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): SessionWindows =
    new SessionWindows(gap, gapColumn, Some(WindowDefinition.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): SessionWindows =
    new SessionWindows(gap, gapColumn, Some(WindowDefinition.grace(afterWindowEnd)))

  override def resolve(unit: TimeUnit): ResolvedWindows.Session = {
    val ticks = gap.map { g =>
      val t = g.toTicks(unit, "session inactivity gap")
      if (t <= 0) throw WindowError(s"session inactivity gap must be positive, got $g")
      t
    }
    ResolvedWindows.Session(ticks, gracePeriod.map(_.toTicks(unit, "grace period")))
  }
  override def toString: String =
    gap.map(g => s"SessionWindows.withInactivityGap($g)").getOrElse(s"SessionWindows.withDynamicGap(${gapColumn.get})") +
      gracePeriod.map(g => s".grace($g)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: SessionWindows => o.gap == gap && o.gapColumn == gapColumn && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (gap, gapColumn, gracePeriod).hashCode
}

object SessionWindows {
  /** Sessions closed by a fixed inactivity gap like "5 minutes". */
  def withInactivityGap(gap: String): SessionWindows = checked(TimeSpan.parse(gap))
  def withInactivityGap(gap: Duration): SessionWindows = {
    if (gap == null) throw WindowError("session inactivity gap must not be null")
    checked(TimeSpan(gap))
  }
  /** A gap in ticks of an integral time column's own unit. */
  def withInactivityGap(gap: Long): SessionWindows = checked(TimeSpan.ticks(gap))

  /**
   * Sessions whose gap is read per record from `gapColumn` (a day-time INTERVAL, or ticks for an
   * integral time column). Records whose gap is null or not positive are not windowed, and counted.
   */
  def withDynamicGap(gapColumn: String): SessionWindows = {
    if (gapColumn == null || gapColumn.trim.isEmpty) throw WindowError("the gap column name must not be empty")
    new SessionWindows(None, Some(gapColumn), None)
  }

  private def checked(gap: TimeSpan): SessionWindows = {
    if (!TimeSpan.isPositive(gap)) throw WindowError(s"session inactivity gap must be positive, got $gap")
    new SessionWindows(Some(gap), None, None)
  }
}

object ResolvedWindows {
  /** Session windows with a fixed gap in ticks, or a per-record gap when `gapTicks` is empty. */
  final case class Session(gapTicks: Option[Long], graceTicks: Option[Long] = None) extends ResolvedWindows

  /** Sliding windows of `sizeTicks`, with the grace period in ticks when one was given. */
  final case class Sliding(sizeTicks: Long, graceTicks: Option[Long] = None) extends ResolvedWindows
}
