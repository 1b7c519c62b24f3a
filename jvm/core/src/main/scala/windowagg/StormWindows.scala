package windowagg

import java.time.Duration

import windowagg.core.{PartialAggregation, RowWindowCursor, RowWindows, TimeSpan, Timed, WindowError}
import windowagg.core.RowWindowCursor.{LastRows, LastTicks, Length, Trigger}
import windowagg.core.Ticks.saturatingAdd

/**
 * What Storm's two kinds, [[CountWindows]] and [[DurationWindows]], share as definitions: the
 * slide (a number of rows or a length of time), the lag and the tie-break column, with their
 * builders, spec and equality. A kind adds its length.
 */
abstract class StormWindows[Self <: StormWindows[Self]] private[windowagg] (parts: StormWindows.Parts)
    extends WindowDefinition {
  import StormWindows._

  /** How often a window is evaluated: every n rows (1: every row), or at multiples of a length of time. */
  def slide: Slide = parts.slide
  def lagPeriod: Option[TimeSpan] = parts.lag
  override def tieBreakColumn: Option[String] = parts.tieBreak

  /** This kind's windows with other parts. */
  protected def withParts(parts: Parts): Self

  /** The spec's keyword and length ("count 30 rows"), and the factory call it stands for ("CountWindows.of(30)"). */
  protected def lengthSpec: String
  protected def lengthString: String

  /** Evaluates a window after every `rows` rows (Storm's `Count` sliding interval). */
  def slide(rows: Long): Self = withParts(parts.copy(slide = EveryRows(StormWindows.rows(rows, "the slide"))))

  /** Evaluates a window at every multiple of `interval` from the epoch (Storm's `Duration` sliding interval). */
  def every(interval: String): Self = everyTime(TimeSpan.parse(interval))
  def every(interval: Duration): Self = everyTime(TimeSpan.of(interval, "the slide"))
  /** An interval in ticks of an integral time column's own unit. */
  def every(interval: Long): Self = everyTime(TimeSpan.ticks(interval))

  /**
   * How far behind the latest row time rows may still arrive (Storm's `withLag`): the watermark
   * is the latest time seen minus the lag, where the streaming input has no watermark of its own.
   */
  def lag(lag: String): Self = withLag(TimeSpan.parse(lag))
  def lag(lag: Duration): Self = withLag(TimeSpan.of(lag, "the lag"))

  /**
   * A column ordering rows that share a time, so that the rows a window cuts through are the
   * ones the user expects (a sequence number, an offset). Rows still tied after it are ordered by
   * the values the aggregates read.
   */
  def tieBreak(column: String): Self = withParts(parts.copy(tieBreak = Some(StormWindows.tieBreak(column))))

  private def everyTime(span: TimeSpan): Self = withParts(parts.copy(slide = EveryTime(TimeSpan.positive(span, "the slide"))))
  private def withLag(span: TimeSpan): Self = withParts(parts.copy(lag = Some(StormWindows.lag(span))))

  private def slideOption: Option[Slide] = if (slide == EveryRows(1)) None else Some(slide)
  override def spec: String = lengthSpec + clausesSpec(slideOption, lagPeriod, tieBreakColumn)
  override def toString: String = lengthString + clausesString(slideOption, lagPeriod, tieBreakColumn)
  // the length is in the spec, which reads back to an equal definition
  override def equals(other: Any): Boolean = other match {
    case o: StormWindows[_] => o.getClass == getClass && o.spec == spec
    case _ => false
  }
  override def hashCode: Int = spec.hashCode
}

object StormWindows {
  /** The slide, lag and tie-break column of a definition. */
  final case class Parts(slide: Slide, lag: Option[TimeSpan], tieBreak: Option[String])

  /** Evaluated at every row, no lag, no tie-break column. */
  val EveryRow: Parts = Parts(EveryRows(1), None, None)

  /** How often a window is evaluated: every n rows, or at every multiple of a length of time. */
  sealed trait Slide { def spec: String }
  final case class EveryRows(n: Long) extends Slide {
    def spec: String = s"$n ${if (n == 1) "row" else "rows"}"
  }
  final case class EveryTime(span: TimeSpan) extends Slide {
    def spec: String = span.spec
  }

  def rows(n: Long, what: String): Long = {
    if (n <= 0) throw WindowError(s"$what must be a positive number of rows, got $n")
    n
  }

  def lag(span: TimeSpan): TimeSpan = TimeSpan.nonNegative(span, "the lag")

  def tieBreak(column: String): String = {
    if (column == null || column.trim.isEmpty) throw WindowError("the tie-break column name must not be empty")
    column.trim
  }

  /** " every … lag … tie break …" as the spec writes the optional parts. */
  def clausesSpec(slide: Option[Slide], lag: Option[TimeSpan], tieBreak: Option[String]): String =
    slide.map(s => s" every ${s.spec}").getOrElse("") + lag.map(l => s" lag ${l.spec}").getOrElse("") +
      tieBreak.map(c => s" tie break ${columnSpec(c)}").getOrElse("")

  /** A column name as the spec writes it: in backquotes when it holds a space or could read as a clause word. */
  def columnSpec(column: String): String =
    if (column.exists(_.isWhitespace) || WindowSpec.isClauseWord(column)) s"`$column`" else column

  def clausesString(slide: Option[Slide], lag: Option[TimeSpan], tieBreak: Option[String]): String =
    slide.map {
      case EveryRows(n) => s".slide($n)"
      case EveryTime(span) => s".every($span)"
    }.getOrElse("") + lag.map(l => s".lag($l)").getOrElse("") + tieBreak.map(c => s".tieBreak($c)").getOrElse("")

  val clauseWords: Seq[String] = Seq("lag", "tie break")

  private val RowCount = """(?i)([+-]?\d+)\s+rows?""".r

  /** "30 rows" as a count, or None for anything else. */
  def rowCount(text: String, what: String): Option[Long] = text.trim match {
    case RowCount(n) =>
      try Some(rows(n.toLong, what))
      catch { case _: NumberFormatException => throw WindowError(s"'$text' is too many rows") }
    case _ => None
  }

  /** The spec's `every` clause, `lag` and `tie break`, after checking it says nothing else. */
  def readClauses(spec: WindowSpec.Clauses): (Option[Slide], Option[TimeSpan], Option[String]) = {
    spec.only(Seq("every") ++ clauseWords)
    val slide = spec.clause("every").map { text =>
      rowCount(text, "the slide").map(EveryRows).getOrElse(EveryTime(TimeSpan.positive(spec.length(text, "slide"), "the slide")))
    }
    val lagSpan = spec.clause("lag").map(l => lag(spec.length(l, "lag")))
    val column = spec.clause("tie break").map { c =>
      val quoted = c.length > 2 && c.startsWith("`") && c.endsWith("`") && !c.drop(1).dropRight(1).contains("`")
      if (c.isEmpty || (c.contains(" ") && !quoted)) {
        throw WindowError(s"'${spec.text}': tie break takes one column name (in backquotes if it holds a space), got '$c'")
      }
      tieBreak(if (quoted) c.drop(1).dropRight(1) else c)
    }
    (slide, lagSpan, column)
  }

  def slideTicks(span: TimeSpan, timeline: Timeline): Long = {
    val ticks = timeline.ticks(span, "slide")
    if (ticks <= 0) throw WindowError(s"the slide must be positive, got $span")
    ticks
  }

  /**
   * Storm's windows, all cut at rows (as Storm keeps tuples): each holds the last n rows or the
   * last length of time up to its end, and is evaluated at every n-th row or at multiples of a
   * slide in time (a count window when it has new rows, a duration window when it holds rows).
   */
  final case class CutAtRows(length: Length, trigger: Trigger, graceTicks: Option[Long]) extends RowWindows {
    override def maxSpan: Long = length match {
      case LastTicks(ticks) => ticks
      case LastRows(_) => Long.MaxValue
    }
    override def rowsNeeded: Long = length match {
      case LastRows(n) => n
      case LastTicks(_) => Long.MaxValue
    }
    /** A window ending at `from` or later holds times after from − length. */
    override def oldestNeeded(from: Long): Long = length match {
      case LastTicks(ticks) => saturatingAdd(saturatingAdd(from, -ticks), 1)
      case LastRows(_) => Long.MinValue
    }
    override def rowCursor[P](firstPosition: Long, rows: Iterator[Timed[P]], agg: PartialAggregation[P], until: Option[Long],
        views: Boolean)(leftOut: Long => Unit): RowWindowCursor[P] =
      new RowWindowCursor[P](length, trigger, firstPosition, rows, agg, until, views, leftOut)

    override def spansOfTime: Boolean = (length, trigger) match {
      case (LastTicks(_), RowWindowCursor.EveryTicks(_)) => true
      case _ => false
    }

    /** The multiples of the slide from the first at or after `time` while a window ending there reaches back past it. */
    override def windowsHolding(time: Long): Iterator[(Long, Long)] = (length, trigger) match {
      case (LastTicks(ticks), RowWindowCursor.EveryTicks(slide)) =>
        val rest = Math.floorMod(time, slide)
        val reach = saturatingAdd(time, ticks) // a window ending before it starts before `time`
        val ends = Vector.newBuilder[Long]
        var end = if (rest == 0) time else saturatingAdd(time, slide - rest)
        while (end >= time && end < reach) {
          ends += end
          end = if (end > Long.MaxValue - slide) Long.MinValue else end + slide
        }
        ends.result().iterator.map(e => (saturatingAdd(e, -ticks), e))
      case _ => Iterator.empty
    }
  }
}
