package windowagg

import windowagg.StormWindows.{CutAtRows, EveryRows, EveryTime}
import windowagg.core.{RowWindowCursor, WindowError}

/**
 * Storm's count windows: each window holds the last `length` rows of a key, and is evaluated
 * every row (`CountWindows.of(30)`, Storm's `withWindow(Count(30))`), every n rows
 * (`.slide(10)`: `withWindow(Count(30), Count(10))`; `CountWindows.tumbling(30)`:
 * `withTumblingWindow(Count(30))`), or at every multiple of a length of time that brings new rows
 * (`.every("10 seconds")`: `withWindow(Count(30), Duration.seconds(10))`); `.lag` and `.tieBreak` as
 * [[StormWindows]] has them.
 *
 * Rows are counted in order of time, then of the tie-break column if one is given, then of the
 * values the aggregates read, so results never depend on arrival order or partitioning. A window
 * reports the time of its first row as `start` and its last time as `end` (inclusive). Rows that
 * end up in no window (after the last n-th row, or between windows when the slide exceeds the
 * length) are counted, not aggregated.
 */
final class CountWindows private (val length: Long, parts: StormWindows.Parts)
    extends StormWindows[CountWindows](parts) {

  override protected def withParts(parts: StormWindows.Parts): CountWindows = new CountWindows(length, parts)
  override protected def lengthSpec: String = s"count ${EveryRows(length).spec}"
  override protected def lengthString: String = s"CountWindows.of($length)"

  override def resolve(timeline: Timeline): CutAtRows = {
    val trigger = slide match {
      case EveryRows(n) => RowWindowCursor.EveryRows(n)
      case EveryTime(span) => RowWindowCursor.EveryTicks(StormWindows.slideTicks(span, timeline))
    }
    CutAtRows(RowWindowCursor.LastRows(length), trigger, lagPeriod.map(timeline.ticks(_, "lag")))
  }
}

object CountWindows extends WindowSpec.Reader {
  /** Windows of the last `length` rows, one evaluated at every row; `slide` or `every` evaluate less often. */
  def of(length: Long): CountWindows = new CountWindows(StormWindows.rows(length, "a count window's length"), StormWindows.EveryRow)

  /** Windows of `length` rows that do not overlap: one every `length` rows. */
  def tumbling(length: Long): CountWindows = of(length).slide(length)

  override val keywords: Seq[String] = Seq("count")
  override val usage: String = "count <n> rows [every <m> rows | every <interval>] [lag <length>] [tie break <column>]"
  override def clauseWords: Seq[String] = StormWindows.clauseWords
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    val (slide, lag, tieBreak) = StormWindows.readClauses(spec)
    val n = StormWindows.rowCount(spec.lead, "a count window's length")
      .getOrElse(throw WindowError(s"'${spec.text}': a count window's length is a number of rows, like 'count 30 rows'"))
    new CountWindows(n, StormWindows.Parts(slide.getOrElse(EveryRows(1)), lag, tieBreak))
  }
}
