package windowagg

import java.time.Duration

import windowagg.StormWindows.{AlignedInTime, CutAtRows, EveryRows, EveryTime, Slide}
import windowagg.core.{RowWindowCursor, TimeSpan, WindowError}

/**
 * Storm's duration windows: each window holds a key's rows in `(end − length, end]`, and is
 * evaluated at every row (`DurationWindows.of("20 seconds")`, Storm's `withWindow(Duration)`: a
 * trailing window per row, as an OVER `RANGE` frame), at every n-th row (`.slide(5)`:
 * `withWindow(Duration, Count(5))`), or at every multiple of an interval
 * (`.every("10 seconds")`: `withWindow(Duration, Duration)`; `DurationWindows.tumbling("5
 * seconds")`: `withTumblingWindow(Duration)`), skipping windows that hold no rows.
 *
 * A window reports `start = end − length` (exclusive) and `end` (inclusive), as Storm does. With
 * a slide in rows, rows are counted in order of time, then of the tie-break column, then of the
 * values the aggregates read; a window holds every row at its end time. Rows in no window (when n
 * rows span more than the length) are counted, not aggregated.
 */
final class DurationWindows private (
    val length: TimeSpan,
    val slide: Slide,
    val lagPeriod: Option[TimeSpan],
    override val tieBreakColumn: Option[String]) extends WindowDefinition {

  /** Evaluates a window after every `rows` rows (Storm's `Count` sliding interval). */
  def slide(rows: Long): DurationWindows =
    new DurationWindows(length, EveryRows(StormWindows.rows(rows, "the slide")), lagPeriod, tieBreakColumn)

  /** Evaluates a window at every multiple of `interval` (Storm's `Duration` sliding interval), at most the length. */
  def every(interval: String): DurationWindows = everyTime(TimeSpan.parse(interval))
  def every(interval: Duration): DurationWindows = everyTime(TimeSpan.of(interval, "the slide"))
  /** An interval in ticks of an integral time column's own unit. */
  def every(interval: Long): DurationWindows = everyTime(TimeSpan.ticks(interval))

  /** How far behind the latest row time rows may still arrive (Storm's `withLag`); see [[CountWindows.lag]]. */
  def lag(lag: String): DurationWindows = withLag(TimeSpan.parse(lag))
  def lag(lag: Duration): DurationWindows = withLag(TimeSpan.of(lag, "the lag"))

  /** A column ordering rows that share a time; see [[CountWindows.tieBreak]]. */
  def tieBreak(column: String): DurationWindows =
    new DurationWindows(length, slide, lagPeriod, Some(StormWindows.tieBreak(column)))

  private def everyTime(span: TimeSpan): DurationWindows =
    new DurationWindows(length, EveryTime(TimeSpan.positive(span, "the slide")), lagPeriod, tieBreakColumn)
  private def withLag(span: TimeSpan): DurationWindows =
    new DurationWindows(length, slide, Some(StormWindows.lag(span)), tieBreakColumn)

  override def resolve(timeline: Timeline): ResolvedWindows = {
    val lengthTicks = length.toTicks(timeline, "window length")
    if (lengthTicks <= 0) throw WindowError(s"window length must be positive, got $length")
    val grace = lagPeriod.map(_.toTicks(timeline, "lag"))
    slide match {
      case EveryRows(n) => CutAtRows(RowWindowCursor.LastTicks(lengthTicks), RowWindowCursor.EveryRows(n), grace)
      case EveryTime(span) =>
        val slideTicks = StormWindows.slideTicks(span, timeline)
        if (slideTicks > lengthTicks) {
          throw WindowError(s"the slide $span is longer than the window length $length: rows between windows would be in none")
        }
        AlignedInTime(lengthTicks, slideTicks, grace)
    }
  }

  private def slideOption: Option[Slide] = if (slide == EveryRows(1)) None else Some(slide)
  override def spec: String = s"duration ${length.spec}${StormWindows.clausesSpec(slideOption, lagPeriod, tieBreakColumn)}"
  override def toString: String = s"DurationWindows.of($length)${StormWindows.clausesString(slideOption, lagPeriod, tieBreakColumn)}"
  override def equals(other: Any): Boolean = other match {
    case o: DurationWindows => o.length == length && o.slide == slide && o.lagPeriod == lagPeriod && o.tieBreakColumn == tieBreakColumn
    case _ => false
  }
  override def hashCode: Int = (length, slide, lagPeriod, tieBreakColumn).hashCode
}

object DurationWindows extends WindowSpec.Reader {
  /** A trailing window of `length` per row, `(t − length, t]`; `slide` or `every` evaluate less often. */
  def of(length: String): DurationWindows = checked(TimeSpan.parse(length))
  def of(length: Duration): DurationWindows = checked(TimeSpan.of(length, "window length"))
  /** A length in ticks of an integral time column's own unit. */
  def of(length: Long): DurationWindows = checked(TimeSpan.ticks(length))

  /** Windows of `length` that do not overlap, ending at multiples of it (Storm's `withTumblingWindow(Duration)`). */
  def tumbling(length: String): DurationWindows = of(length).every(length)
  def tumbling(length: Duration): DurationWindows = of(length).every(length)
  def tumbling(length: Long): DurationWindows = of(length).every(length)

  private def checked(length: TimeSpan): DurationWindows =
    new DurationWindows(TimeSpan.positive(length, "window length"), EveryRows(1), None, None)

  override val keywords: Seq[String] = Seq("duration")
  override val usage: String = "duration <length> [every <m> rows | every <interval>] [lag <length>] [tie break <column>]"
  override def clauseWords: Seq[String] = StormWindows.clauseWords
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    val (slide, lag, tieBreak) = StormWindows.readClauses(spec)
    new DurationWindows(checked(spec.length(spec.lead, "window length")).length, slide.getOrElse(EveryRows(1)), lag, tieBreak)
  }
}
