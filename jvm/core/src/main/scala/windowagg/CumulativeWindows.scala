package windowagg

import java.time.Duration

import windowagg.core.{EnumeratedWindows, Ticks, TimeSpan, WindowError}

/**
 * Cumulative windows (Flink's CUMULATE): time is cut into periods of `maxSize` (starting at
 * `offset + k × maxSize`), and each period s has the windows `[s, s + step)`, `[s, s + 2·step)`, …,
 * `[s, s + maxSize)`: a running total that restarts every period, e.g. a daily total refreshed
 * every hour. Half-open like Spark's `window()`; only windows that hold records exist.
 *
 * Swept by slicing: one partial per key and step, each window combining the steps of its period so
 * far, so no row is copied per window.
 */
final class CumulativeWindows private (
    val step: TimeSpan,
    val maxSize: TimeSpan,
    val offset: Option[TimeSpan],
    val gracePeriod: Option[TimeSpan]) extends WindowDefinition {

  /** Periods shifted by `offset` from the epoch: zero or more, less than the max size. */
  def withOffset(offset: String): CumulativeWindows = withOffsetSpan(TimeSpan.parse(offset))
  def withOffset(offset: Duration): CumulativeWindows = withOffsetSpan(TimeSpan.of(offset, "window offset"))
  def withOffset(offset: Long): CumulativeWindows = withOffsetSpan(TimeSpan.ticks(offset))

  /** How long after a window's end records may still arrive (streaming); see [[SlidingWindows.grace(afterWindowEnd:String)* SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): CumulativeWindows =
    new CumulativeWindows(step, maxSize, offset, Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): CumulativeWindows =
    new CumulativeWindows(step, maxSize, offset, Some(WindowSpec.grace(afterWindowEnd)))

  private def withOffsetSpan(o: TimeSpan): CumulativeWindows =
    new CumulativeWindows(step, maxSize, Some(TimeSpan.nonNegative(o, "window offset")), gracePeriod)

  override def resolve(timeline: Timeline): CumulativeWindows.Resolved = {
    val stepTicks = timeline.ticks(step, "cumulative window step")
    val maxTicks = timeline.ticks(maxSize, "cumulative window max size")
    val offsetTicks = offset.map(timeline.ticks(_, "window offset")).getOrElse(0L)
    if (stepTicks <= 0) throw WindowError(s"cumulative window step must be positive, got $step")
    if (maxTicks <= 0) throw WindowError(s"cumulative window max size must be positive, got $maxSize")
    if (maxTicks % stepTicks != 0) {
      throw WindowError(s"cumulative window max size $maxSize is not a whole multiple of the step $step")
    }
    if (offsetTicks >= maxTicks) throw WindowError(s"window offset ${offset.get} must be less than the max size $maxSize")
    WindowSpec.checkWindowsPerTime(this, maxTicks / stepTicks, "use a larger step")
    CumulativeWindows.Resolved(stepTicks, maxTicks, offsetTicks, gracePeriod.map(timeline.ticks(_, "grace period")))
  }

  override def spec: String =
    s"cumulative ${step.spec} up to ${maxSize.spec}" + offset.map(o => s" offset ${o.spec}").getOrElse("") +
      WindowSpec.graceSpec(gracePeriod)
  override def toString: String =
    s"CumulativeWindows.of($step, $maxSize)" + offset.map(o => s".withOffset($o)").getOrElse("") +
      gracePeriod.map(g => s".grace($g)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: CumulativeWindows => o.step == step && o.maxSize == maxSize && o.offset == offset && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (step, maxSize, offset, gracePeriod).hashCode
}

object CumulativeWindows extends WindowSpec.Reader {
  /** Windows growing by `step` ("1 hour") within periods of `maxSize` ("1 day"), a whole multiple of the step. */
  def of(step: String, maxSize: String): CumulativeWindows = checked(TimeSpan.parse(step), TimeSpan.parse(maxSize))
  def of(step: Duration, maxSize: Duration): CumulativeWindows =
    checked(TimeSpan.of(step, "cumulative window step"), TimeSpan.of(maxSize, "cumulative window max size"))
  /** Step and max size in ticks of an integral time column's own unit. */
  def of(step: Long, maxSize: Long): CumulativeWindows = checked(TimeSpan.ticks(step), TimeSpan.ticks(maxSize))

  private def checked(step: TimeSpan, maxSize: TimeSpan): CumulativeWindows =
    new CumulativeWindows(
      TimeSpan.positive(step, "cumulative window step"), TimeSpan.positive(maxSize, "cumulative window max size"), None, None)

  override val keywords: Seq[String] = Seq("cumulative")
  override val usage: String = "cumulative <step> up to <max size> [offset <length>] [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("up to", "offset", "grace"))
    val max = spec.clause("up to").getOrElse(throw WindowError(s"'${spec.text}' says no max size: $usage"))
    var windows = checked(spec.length(spec.lead, "cumulative window step"), spec.length(max, "cumulative window max size"))
    spec.clause("offset").foreach(o => windows = windows.withOffsetSpan(spec.length(o, "window offset")))
    spec.grace.fold(windows)(g => new CumulativeWindows(windows.step, windows.maxSize, windows.offset, Some(g)))
  }

  /** Periods `[offset + k × max, … + max)` in ticks, each with windows ending at every step; slices of one step. */
  final case class Resolved(stepTicks: Long, maxTicks: Long, offsetTicks: Long, graceTicks: Option[Long] = None)
      extends EnumeratedWindows {
    require(stepTicks > 0 && maxTicks > 0 && maxTicks % stepTicks == 0 && offsetTicks >= 0 && offsetTicks < maxTicks)

    override def maxSpan: Long = maxTicks - 1
    override def sliceStart(time: Long): Long = Ticks.alignedDown(time, offsetTicks, stepTicks)
    override def partialsSpanTimes: Boolean = stepTicks > 1

    // every last tick is below Long.MaxValue: all windows of the time
    override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit =
      foreachWindowEndingIn(time, Long.MinValue, Long.MaxValue)(window)

    // The windows of a time end at every step from its slice's end to its period's: only those from
    // the step holding `from` on are listed, and none past `until` (a day's 8,640 steps of 10 s).
    override def foreachWindowEndingIn(time: Long, from: Long, until: Long)(window: (Long, Long) => Unit): Long = {
      val period = periodOf(time)
      val last = endOf(period)
      // the first window whose last tick is at or after from ends a step after from's slice start
      val first = if (from > time) sliceStart(from) else sliceStart(time)
      if (first > last - stepTicks) return Long.MaxValue // every window of the period ends before from
      var end = first + stepTicks
      while (end - 1 < until) {
        window(period, end)
        if (end > last - stepTicks) return Long.MaxValue // not end + step > last, which wraps at the end of the range
        end += stepTicks
      }
      end - 1
    }

    // all of a time's windows start at its period's start
    override def foreachWindowStartingAfter(after: Long, time: Long)(window: (Long, Long) => Unit): Unit =
      if (periodOf(time) > after) foreachWindow(time)(window)

    // the first window of a time ends with its step
    override def firstClosesAt(time: Long): Long = {
      endOf(periodOf(time)) // fails, as listing the windows does, where the period ends beyond the range
      val first = sliceStart(time) + stepTicks - 1
      if (first >= Long.MaxValue - 1) time else first
    }

    override def closesAt(time: Long): Long = endOf(periodOf(time)) - 1

    // A window whose last tick is at or after `from` starts at its period's start, at or after that of
    // `from` (near the start of the range, the general bound: the period's start may be before the range).
    override def oldestNeeded(from: Long): Long =
      if (from < Long.MinValue + maxTicks) super.oldestNeeded(from) else periodOf(from)

    // Each window of the period of `from` whose last tick is at or after `from` holds the period up to
    // the slice of `from` whole, and later periods' windows none of it: the period's partials so far fold
    // into one, so a sweep reads one partial and the steps since, not every step since the period began.
    override def foldable(from: Long): Option[(Long, Long)] =
      if (from < Long.MinValue + maxTicks) None
      else Some((periodOf(from), sliceStart(from))).filter { case (start, until) => until > start }

    private def periodOf(time: Long): Long = Ticks.alignedDown(time, offsetTicks, maxTicks)

    private def endOf(period: Long): Long =
      try Math.addExact(period, maxTicks)
      catch { case _: ArithmeticException => throw WindowError(s"a window starting at $period ends beyond the range of a 64-bit time") }
  }
}
