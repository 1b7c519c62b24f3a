package windowagg

import java.time.Duration

import windowagg.core.{PartialAggregation, Reaching, ResolvedWindows, SlidingWindowSweep, TimeSpan, Timed, WindowCursor, WindowError}
import windowagg.core.Ticks.saturatingAdd

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
  def grace(afterWindowEnd: String): SlidingWindows = new SlidingWindows(size, Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): SlidingWindows = new SlidingWindows(size, Some(WindowSpec.grace(afterWindowEnd)))

  override def resolve(timeline: Timeline): SlidingWindows.Resolved = {
    val ticks = timeline.ticks(size, "sliding window size")
    if (ticks <= 0) throw WindowError(s"sliding window size must be positive, got $size")
    SlidingWindows.Resolved(ticks, gracePeriod.map(timeline.ticks(_, "grace period")))
  }
  override def spec: String = s"sliding ${size.spec}${WindowSpec.graceSpec(gracePeriod)}"
  override def toString: String = s"SlidingWindows.of($size)${gracePeriod.map(g => s".grace($g)").getOrElse("")}"
  override def equals(other: Any): Boolean = other match {
    case o: SlidingWindows => o.size == size && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (size, gracePeriod).hashCode
}

object SlidingWindows extends WindowSpec.Reader {
  /** A window size like "10 minutes" or "1 hour 30 minutes". */
  def of(size: String): SlidingWindows = checked(TimeSpan.parse(size))
  def of(size: Duration): SlidingWindows = checked(TimeSpan.of(size, "sliding window size"))
  /** A size in ticks of an integral time column's own unit (e.g. 10000 for 10 s of epoch millis). */
  def of(size: Long): SlidingWindows = checked(TimeSpan.ticks(size))

  private def checked(size: TimeSpan): SlidingWindows =
    new SlidingWindows(TimeSpan.positive(size, "sliding window size"), None)

  override val keywords: Seq[String] = Seq("sliding")
  override val usage: String = "sliding <size> [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("grace"))
    val windows = checked(spec.length(spec.lead, "sliding window size"))
    spec.grace.fold(windows)(g => new SlidingWindows(windows.size, Some(g)))
  }

  /**
   * Sliding windows of `sizeTicks`, as closed intervals `[start, start + size]`, swept by
   * [[windowagg.core.SlidingWindowSweep]] over per-time partials.
   */
  final case class Resolved(sizeTicks: Long, graceTicks: Option[Long] = None) extends ResolvedWindows {
    require(sizeTicks > 0)
    override def endInclusive: Boolean = true
    override def maxSpan: Long = sizeTicks
    override def cursor[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P]): WindowCursor[P] =
      new SlidingWindowSweep[P](sizeTicks, partials.map(p => Timed(p.time, p.partial)), agg)
    /** Even [t, t + size], the last window that can hold t, has ended. */
    override def closesAt(time: Long): Long = saturatingAdd(time, sizeTicks)
    /** A record's own left window [t − size, t] always exists; its other windows need later records. */
    override def certainlyHeldUntil(time: Long): Long = time
    /** A right window starting at from − size belongs to the time just before it. */
    override def oldestNeeded(from: Long): Long = saturatingAdd(saturatingAdd(from, -sizeTicks), -1)
    /** A new time also makes the right window starting just after it. */
    override def changedBy(start: Long, end: Long, times: Array[Long]): Boolean =
      super.changedBy(start, end, times) ||
        (start != Long.MinValue && java.util.Arrays.binarySearch(times, start - 1) >= 0)
  }
}
