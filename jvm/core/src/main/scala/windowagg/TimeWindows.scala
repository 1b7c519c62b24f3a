package windowagg

import java.time.Duration

import windowagg.core.{EnumeratedWindows, Ticks, TimeSpan, WindowError}

/**
 * Kafka Streams' time windows: tumbling windows of a fixed size, or hopping ones that advance by a
 * smaller step (`TimeWindows.of("1 hour").advanceBy("10 seconds")`), each half-open
 * `[start, start + size)`, aligned so that starts fall on `offset + k × advance` for whole k (Spark's
 * `window(ts, size, slide, startTime)`, with the same boundaries, pre-1970 times included). Only
 * windows that hold records exist.
 *
 * Swept by slicing: slices of gcd(size, advance), one partial per key and slice, each window
 * combining its slices, so no row is copied per window.
 */
final class TimeWindows private (
    val size: TimeSpan,
    val advance: Option[TimeSpan],
    val offset: Option[TimeSpan],
    val gracePeriod: Option[TimeSpan]) extends WindowDefinition {

  /** Hopping windows: a window starts every `advance` (at most the size). */
  def advanceBy(advance: String): TimeWindows = withAdvance(TimeSpan.parse(advance))
  def advanceBy(advance: Duration): TimeWindows = withAdvance(TimeSpan.of(advance, "window advance"))
  def advanceBy(advance: Long): TimeWindows = withAdvance(TimeSpan.ticks(advance))

  /** Window starts shifted by `offset` from the epoch (Spark's `startTime`): zero or more, less than the advance. */
  def withOffset(offset: String): TimeWindows = withOffsetSpan(TimeSpan.parse(offset))
  def withOffset(offset: Duration): TimeWindows = withOffsetSpan(TimeSpan.of(offset, "window offset"))
  def withOffset(offset: Long): TimeWindows = withOffsetSpan(TimeSpan.ticks(offset))

  /** How long after a window's end records may still arrive (streaming); see [[SlidingWindows.grace(afterWindowEnd:String)* SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): TimeWindows = new TimeWindows(size, advance, offset, Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): TimeWindows = new TimeWindows(size, advance, offset, Some(WindowSpec.grace(afterWindowEnd)))

  private def withAdvance(a: TimeSpan): TimeWindows =
    new TimeWindows(size, Some(TimeSpan.positive(a, "window advance")), offset, gracePeriod)
  private def withOffsetSpan(o: TimeSpan): TimeWindows =
    new TimeWindows(size, advance, Some(TimeSpan.nonNegative(o, "window offset")), gracePeriod)

  override def resolve(timeline: Timeline): TimeWindows.Resolved = {
    val sizeTicks = timeline.ticks(size, "window size")
    val advanceTicks = advance.map(timeline.ticks(_, "window advance")).getOrElse(sizeTicks)
    val offsetTicks = offset.map(timeline.ticks(_, "window offset")).getOrElse(0L)
    if (sizeTicks <= 0) throw WindowError(s"window size must be positive, got $size")
    if (advanceTicks <= 0) throw WindowError(s"window advance must be positive, got ${advance.get}")
    if (advanceTicks > sizeTicks) {
      throw WindowError(s"window advance ${advance.get} is larger than the window size $size: rows between windows would be lost")
    }
    if (offsetTicks >= advanceTicks) {
      throw WindowError(s"window offset ${offset.get} must be less than the ${if (advance.isDefined) "advance" else "size"} " +
        s"${advance.getOrElse(size)}")
    }
    WindowSpec.checkWindowsPerTime(this, (sizeTicks - 1) / advanceTicks + 1,
      "use a larger advance, or SlidingWindows.of(size) for a window ending at every row")
    TimeWindows.Resolved(sizeTicks, advanceTicks, offsetTicks, gracePeriod.map(timeline.ticks(_, "grace period")))
  }

  override def spec: String =
    (if (advance.isEmpty) s"tumbling ${size.spec}" else s"hopping ${size.spec} every ${advance.get.spec}") +
      offset.map(o => s" offset ${o.spec}").getOrElse("") + WindowSpec.graceSpec(gracePeriod)
  override def toString: String =
    s"TimeWindows.of($size)" + advance.map(a => s".advanceBy($a)").getOrElse("") +
      offset.map(o => s".withOffset($o)").getOrElse("") + gracePeriod.map(g => s".grace($g)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: TimeWindows => o.size == size && o.advance == advance && o.offset == offset && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (size, advance, offset, gracePeriod).hashCode
}

object TimeWindows extends WindowSpec.Reader {
  /** Tumbling windows of a size like "1 minute"; `advanceBy` makes them hopping. */
  def of(size: String): TimeWindows = checked(TimeSpan.parse(size))
  def of(size: Duration): TimeWindows = checked(TimeSpan.of(size, "window size"))
  /** A size in ticks of an integral time column's own unit. */
  def of(size: Long): TimeWindows = checked(TimeSpan.ticks(size))

  private def checked(size: TimeSpan): TimeWindows =
    new TimeWindows(TimeSpan.positive(size, "window size"), None, None, None)

  override val keywords: Seq[String] = Seq("tumbling", "hopping")
  override val usage: String =
    "tumbling <size> [offset <length>] [grace <length>] | hopping <size> every <advance> [offset <length>] [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    val tumbling = keyword == "tumbling"
    spec.only(if (tumbling) Seq("offset", "grace") else Seq("every", "offset", "grace"))
    var windows = checked(spec.length(spec.lead, "window size"))
    if (!tumbling) {
      val every = spec.clause("every").getOrElse(throw WindowError(s"'${spec.text}' says no advance: $usage"))
      windows = windows.withAdvance(spec.length(every, "window advance"))
    }
    spec.clause("offset").foreach(o => windows = windows.withOffsetSpan(spec.length(o, "window offset")))
    spec.grace.fold(windows)(g => new TimeWindows(windows.size, windows.advance, windows.offset, Some(g)))
  }

  /** Windows `[offset + k × advance, … + size)` in ticks; slices of gcd(size, advance) aligned the same way. */
  final case class Resolved(sizeTicks: Long, advanceTicks: Long, offsetTicks: Long, graceTicks: Option[Long] = None)
      extends EnumeratedWindows {
    require(sizeTicks > 0 && advanceTicks > 0 && advanceTicks <= sizeTicks && offsetTicks >= 0 && offsetTicks < advanceTicks)
    private val sliceTicks = gcd(sizeTicks, advanceTicks)

    override def maxSpan: Long = sizeTicks - 1
    override def sliceStart(time: Long): Long = alignedDown(time, sliceTicks)
    override def partialsSpanTimes: Boolean = sliceTicks > 1

    override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit = {
      var start = alignedDown(time, advanceTicks)
      // the windows holding time start at start, start − advance, …: counted first, so no bound wraps
      var count = (sizeTicks - (time - start) - 1) / advanceTicks + 1
      while (count > 0) {
        window(start, endOf(start))
        count -= 1
        if (count > 0) start = Ticks.earlier(start, advanceTicks, time)
      }
    }

    // Only the windows a slice opens, earliest first: listing all size/advance windows of each
    // slice and keeping the few new ones was most of a hopping window's cost.
    override def foreachWindowStartingAfter(after: Long, time: Long)(window: (Long, Long) => Unit): Unit = {
      val latest = alignedDown(time, advanceTicks)
      if (latest > after) {
        val holding = (sizeTicks - (time - latest) - 1) / advanceTicks + 1
        val distance = latest - after // wraps to negative only when farther than any window reaches
        val opened = if (distance < 0) holding else math.min(holding, (distance - 1) / advanceTicks + 1)
        var start = Ticks.earlier(latest, (opened - 1) * advanceTicks, time)
        var left = opened
        while (left > 0) {
          window(start, endOf(start))
          left -= 1
          if (left > 0) start += advanceTicks
        }
      }
    }

    override def closesAt(time: Long): Long = endOf(alignedDown(time, advanceTicks)) - 1

    /** The latest boundary offset + k × step at or before `time`. */
    private def alignedDown(time: Long, step: Long): Long = Ticks.alignedDown(time, offsetTicks, step)

    private def endOf(start: Long): Long =
      try Math.addExact(start, sizeTicks)
      catch { case _: ArithmeticException => throw WindowError(s"a window starting at $start ends beyond the range of a 64-bit time") }

    private def gcd(a: Long, b: Long): Long = if (b == 0) a else gcd(b, a % b)
  }
}
