package windowagg

import java.time.Duration

import windowagg.StormWindows.{CutAtRows, EveryRows, EveryTime, Slide}
import windowagg.core.{RowWindowCursor, TimeSpan, WindowError}

/**
 * Storm's count windows: each window holds the last `length` rows of a key, and is evaluated
 * every row (`CountWindows.of(30)`, Storm's `withWindow(Count(30))`), every n rows
 * (`.slide(10)`: `withWindow(Count(30), Count(10))`; `CountWindows.tumbling(30)`:
 * `withTumblingWindow(Count(30))`), or at every multiple of a length of time that brings new rows
 * (`.every("10 seconds")`: `withWindow(Count(30), Duration.seconds(10))`).
 *
 * Rows are counted in order of time, then of the tie-break column if one is given, then of the
 * values the aggregates read, so results never depend on arrival order or partitioning. A window
 * reports the time of its first row as `start` and its last time as `end` (inclusive). Rows that
 * end up in no window (after the last n-th row, or between windows when the slide exceeds the
 * length) are counted, not aggregated.
 */
final class CountWindows private (
    val length: Long,
    val slide: Slide,
    val lagPeriod: Option[TimeSpan],
    override val tieBreakColumn: Option[String]) extends WindowDefinition {

  /** Evaluates a window after every `rows` rows (Storm's `Count` sliding interval). */
  def slide(rows: Long): CountWindows =
    new CountWindows(length, EveryRows(StormWindows.rows(rows, "the slide")), lagPeriod, tieBreakColumn)

  /** Evaluates a window at every multiple of `interval` that brings new rows (Storm's `Duration` sliding interval). */
  def every(interval: String): CountWindows = everyTime(TimeSpan.parse(interval))
  def every(interval: Duration): CountWindows = everyTime(TimeSpan.of(interval, "the slide"))
  /** An interval in ticks of an integral time column's own unit. */
  def every(interval: Long): CountWindows = everyTime(TimeSpan.ticks(interval))

  /**
   * How far behind the latest row time rows may still arrive (Storm's `withLag`): the watermark
   * is the latest time seen minus the lag, where the streaming input has no watermark of its own.
   */
  def lag(lag: String): CountWindows = withLag(TimeSpan.parse(lag))
  def lag(lag: Duration): CountWindows = withLag(TimeSpan.of(lag, "the lag"))

  /** A column ordering rows that share a time, so that the rows a window cuts through are the ones the user expects. */
  def tieBreak(column: String): CountWindows =
    new CountWindows(length, slide, lagPeriod, Some(StormWindows.tieBreak(column)))

  private def everyTime(span: TimeSpan): CountWindows =
    new CountWindows(length, EveryTime(TimeSpan.positive(span, "the slide")), lagPeriod, tieBreakColumn)
  private def withLag(span: TimeSpan): CountWindows =
    new CountWindows(length, slide, Some(StormWindows.lag(span)), tieBreakColumn)

  override def resolve(timeline: Timeline): CutAtRows = {
    val trigger = slide match {
      case EveryRows(n) => RowWindowCursor.EveryRows(n)
      case EveryTime(span) => RowWindowCursor.EveryTicks(StormWindows.slideTicks(span, timeline))
    }
    CutAtRows(RowWindowCursor.LastRows(length), trigger, lagPeriod.map(_.toTicks(timeline, "lag")))
  }

  private def slideOption: Option[Slide] = if (slide == EveryRows(1)) None else Some(slide)
  override def spec: String = s"count ${EveryRows(length).spec}${StormWindows.clausesSpec(slideOption, lagPeriod, tieBreakColumn)}"
  override def toString: String = s"CountWindows.of($length)${StormWindows.clausesString(slideOption, lagPeriod, tieBreakColumn)}"
  override def equals(other: Any): Boolean = other match {
    case o: CountWindows => o.length == length && o.slide == slide && o.lagPeriod == lagPeriod && o.tieBreakColumn == tieBreakColumn
    case _ => false
  }
  override def hashCode: Int = (length, slide, lagPeriod, tieBreakColumn).hashCode
}

object CountWindows extends WindowSpec.Reader {
  /** Windows of the last `length` rows, one evaluated at every row; `slide` or `every` evaluate less often. */
  def of(length: Long): CountWindows = new CountWindows(StormWindows.rows(length, "a count window's length"), EveryRows(1), None, None)

  /** Windows of `length` rows that do not overlap: one every `length` rows. */
  def tumbling(length: Long): CountWindows = of(length).slide(length)

  override val keywords: Seq[String] = Seq("count")
  override val usage: String = "count <n> rows [every <m> rows | every <interval>] [lag <length>] [tie break <column>]"
  override def clauseWords: Seq[String] = StormWindows.clauseWords
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    val (slide, lag, tieBreak) = StormWindows.readClauses(spec)
    val n = StormWindows.rowCount(spec.lead, "a count window's length")
      .getOrElse(throw WindowError(s"'${spec.text}': a count window's length is a number of rows, like 'count 30 rows'"))
    new CountWindows(n, slide.getOrElse(EveryRows(1)), lag, tieBreak)
  }
}
