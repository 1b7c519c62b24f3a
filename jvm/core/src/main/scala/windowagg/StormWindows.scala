package windowagg

import windowagg.core.{PartialAggregation, Reaching, RowWindowCursor, TimeSpan, Timed, WindowCursor, WindowError}
import windowagg.core.RowWindowCursor.{LastRows, LastTicks, Length, Trigger}
import windowagg.core.Ticks.saturatingAdd

/**
 * What Storm's two kinds, [[CountWindows]] and [[DurationWindows]], share: the slide (a number of
 * rows or a length of time), the lag, the tie-break column, their spec clauses, and their
 * resolved forms.
 */
object StormWindows {
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
    val ticks = span.toTicks(timeline, "slide")
    if (ticks <= 0) throw WindowError(s"the slide must be positive, got $span")
    ticks
  }

  /**
   * Windows cut at rows: each holds the last n rows or the last length of time up to its end, and
   * is evaluated at every n-th row or at every multiple of a slide in time that has rows.
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
    override def rowCursor[P](firstPosition: Long, rows: Iterator[Timed[P]], agg: PartialAggregation[P], until: Option[Long])(
        leftOut: Long => Unit): RowWindowCursor[P] =
      new RowWindowCursor[P](length, trigger, firstPosition, rows, agg, until, leftOut)
  }

  /**
   * Storm's duration windows that slide in time: windows `(end − length, end]` whose ends fall on
   * multiples of the slide, only those holding rows. They are the hopping windows
   * `[end − length + 1, end + 1)` in ticks, swept by slicing as those are, and reported with
   * Storm's bounds; a row behind the watermark is late, as Storm has it.
   */
  final case class AlignedInTime(lengthTicks: Long, slideTicks: Long, graceTicks: Option[Long]) extends ResolvedWindows {
    /** The same windows as Kafka-style hopping windows, `[start, end)` one tick later. */
    val hopping: TimeWindows.Resolved =
      TimeWindows.Resolved(lengthTicks, slideTicks, Math.floorMod(1 - lengthTicks, slideTicks), graceTicks)

    override def endInclusive: Boolean = true
    override def maxSpan: Long = lengthTicks
    override def partialTime(time: Long): Long = hopping.partialTime(time)
    override def closesAt(time: Long): Long = time
    override def oldestNeeded(from: Long): Long = hopping.oldestNeeded(from)
    override def changedBy(start: Long, end: Long, times: Array[Long]): Boolean = hopping.changedBy(start + 1, end + 1, times)
    override def cursor[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P]): WindowCursor[P] = {
      val inner = hopping.cursor(partials, agg)
      new WindowCursor[P] {
        def advance(): Boolean = inner.advance()
        def start: Long = inner.start - 1
        def end: Long = inner.end - 1
        def aggregate: P = inner.aggregate
      }
    }
  }
}
