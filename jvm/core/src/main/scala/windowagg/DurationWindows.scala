package windowagg

import java.time.Duration

import windowagg.StormWindows.{CutAtRows, EveryRows, EveryTime}
import windowagg.core.{RowWindowCursor, TimeSpan, WindowError}

/**
 * Storm's duration windows: each window holds a key's rows in `(end − length, end]`, and is
 * evaluated at every row (`DurationWindows.of("20 seconds")`, Storm's `withWindow(Duration)`: a
 * trailing window per row, as an OVER `RANGE` frame), at every n-th row (`.slide(5)`:
 * `withWindow(Duration, Count(5))`), or at every multiple of an interval
 * (`.every("10 seconds")`: `withWindow(Duration, Duration)`; `DurationWindows.tumbling("5
 * seconds")`: `withTumblingWindow(Duration)`), skipping windows that hold no rows. A slide longer
 * than the length leaves the rows between windows in none (counted).
 *
 * A window reports `start = end − length` (exclusive) and `end` (inclusive), as Storm does. With
 * a slide in rows, rows are counted in order of time, then of the tie-break column, then of the
 * values the aggregates read; a window holds every row at its end time. Rows in no window (when n
 * rows span more than the length) are counted, not aggregated.
 */
final class DurationWindows private (val length: TimeSpan, parts: StormWindows.Parts)
    extends StormWindows[DurationWindows](parts) {

  override protected def withParts(parts: StormWindows.Parts): DurationWindows = new DurationWindows(length, parts)
  override protected def lengthSpec: String = s"duration ${length.spec}"
  override protected def lengthString: String = s"DurationWindows.of($length)"

  override def resolve(timeline: Timeline): CutAtRows = {
    val lengthTicks = timeline.ticks(length, "window length")
    if (lengthTicks <= 0) throw WindowError(s"window length must be positive, got $length")
    val grace = lagPeriod.map(timeline.ticks(_, "lag"))
    val trigger = slide match {
      case EveryRows(n) => RowWindowCursor.EveryRows(n)
      case EveryTime(span) => RowWindowCursor.EveryTicks(StormWindows.slideTicks(span, timeline))
    }
    CutAtRows(RowWindowCursor.LastTicks(lengthTicks), trigger, grace)
  }
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
    new DurationWindows(TimeSpan.positive(length, "window length"), StormWindows.EveryRow)

  override val keywords: Seq[String] = Seq("duration")
  override val usage: String = "duration <length> [every <m> rows | every <interval>] [lag <length>] [tie break <column>]"
  override def clauseWords: Seq[String] = StormWindows.clauseWords
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    val (slide, lag, tieBreak) = StormWindows.readClauses(spec)
    new DurationWindows(checked(spec.length(spec.lead, "window length")).length, StormWindows.Parts(slide.getOrElse(EveryRows(1)), lag, tieBreak))
  }
}
