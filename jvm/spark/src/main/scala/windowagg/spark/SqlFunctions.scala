package windowagg.spark

import java.time.Duration
import java.time.temporal.ChronoUnit

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.{UnresolvedAlias, UnresolvedAttribute, UnresolvedExtractValue}
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan, OneRowRelation, Project}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.{CalendarInterval, UTF8String}

import windowagg.{SessionWindows, SlidingWindows, WindowDefinition, WindowSpec}
import windowagg.core.{TimeSpan, WindowError}
import windowagg.spark.common.{WindowAggError, WindowAggException, WindowGroupingExpression, WindowOptions, WindowView}

/**
 * The SQL surface, one registry: the extension registers every function listed in `grouping`,
 * `views` and `tables`, with its usage text.
 *  - `windows(ts, 'spec' [, options])`: the grouping key for any kind, spec in [[WindowSpec]]'s grammar;
 *  - `window_agg(TABLE(t) PARTITION BY k ORDER BY (ts), 'spec', 'aggregates' [, options])`: the same as a table;
 *  - `sliding_window`, `sliding_window_agg` and `session_window_agg`: the first functions, with a size or gap argument;
 *  - `new_rows(agg)` and `expired_rows(agg)`: Storm's window view, in an aggregation over Storm's windows;
 *  - `windowagg_state('checkpoint')`: what a streaming query's windowed aggregation holds per key (`read_state`).
 */
object SqlFunctions {

  /** A SQL function: its name, its usage text (DESCRIBE FUNCTION), and how it is built from its arguments. */
  final case class Entry[T](name: String, usage: String, build: Seq[Expression] => T)

  val grouping: Seq[Entry[Expression]] = Seq(
    Entry("windows",
      "windows(time, spec [, options]) - the windows of any kind as a GROUP BY key (select window.start, window.end); " +
        s"spec is one of: ${WindowSpec.grammar.replace("\n", "; ")}; options: 'emit=final|updates, lateRows=count|emit, timeUnit=milliseconds|microseconds|seconds, time=event|processing' (lateRows and timeUnit may also be written late_rows and time_unit, as in Python)",
      windowsOfSpec),
    Entry("sliding_window",
      "sliding_window(time, size [, time_unit or options]) - KIP-450 sliding windows as a GROUP BY key; " +
        "select window.start and window.end",
      slidingWindow))

  /** Storm's window view around an aggregate: `new_rows(count(1))`, `expired_rows(sum(x))`. */
  val views: Seq[Entry[Expression]] = Seq(WindowView.New, WindowView.Expired).map { view =>
    Entry(view.name,
      s"${view.name}(aggregate) - the aggregate over the rows of each window " +
        (if (view == WindowView.New) "that were not in the key's previous window" else "of the key's previous window that are not in it") +
        " (Storm's window view); in an aggregation grouped by windows(ts, 'count ...' or 'duration ...')",
      (args: Seq[Expression]) => args match {
        case Seq(aggregate) => WindowView(aggregate, view)
        case _ => throw WindowAggException(WindowAggError.INVALID_QUERY, s"${view.name} takes one aggregate, e.g. ${view.name}(count(1)); got ${args.length} arguments")
      })
  }

  val tables: Seq[Entry[LogicalPlan]] = Seq(
    Entry("window_agg",
      "window_agg(TABLE(t) PARTITION BY key ORDER BY (time), spec, 'agg AS name, ...' [, options]) - windowed " +
        "aggregates of any kind as a table: key, window_start, window_end, then the aggregates",
      args => windowAgg("window_agg", "'spec'", args, definitionOfSpec(_, "window_agg"))),
    Entry("sliding_window_agg",
      "sliding_window_agg(TABLE(t) PARTITION BY key ORDER BY (time), size, 'agg AS name, ...' [, time_unit or options]) - " +
        "KIP-450 sliding-window aggregates as a table",
      args => windowAgg("sliding_window_agg", "size", args, slidingWindows(_, "sliding_window_agg"))),
    Entry("session_window_agg",
      "session_window_agg(TABLE(t) PARTITION BY key ORDER BY (time), gap, 'agg AS name, ...' [, time_unit or options]) - " +
        "KIP-94 session windows [first, last] as a table",
      args => windowAgg("session_window_agg", "gap", args, sessionWindows)),
    Entry(streaming.StateReader.FunctionName,
      s"${streaming.StateReader.FunctionName}('checkpoint' [, batch_id [, aggregation]]) - what a streaming windowed " +
        "aggregation's checkpoint holds per key after a committed micro-batch (the latest by default): the keys, each " +
        "open window and its aggregates' current values, the rows held back, the key's next close, and the state record",
      stateOf))

  /** `windowagg_state('checkpoint' [, batch_id [, aggregation]])`. */
  private def stateOf(args: Seq[Expression]): LogicalPlan = {
    val name = streaming.StateReader.FunctionName
    def number(e: Expression, what: String): Long = e.dataType match {
      case ByteType | ShortType | IntegerType | LongType if e.foldable && e.eval() != null => e.eval().asInstanceOf[Number].longValue
      case _ => throw WindowAggException(WindowAggError.INVALID_QUERY, s"$name: $what must be a constant integer, got ${e.sql}")
    }
    if (args.isEmpty || args.length > 3) {
      throw WindowAggException(WindowAggError.INVALID_QUERY,
        s"$name takes a checkpoint location, then optionally a micro-batch id and which windowed aggregation; got ${args.length} arguments")
    }
    val checkpoint = string(args.head, s"$name's checkpoint location")
    // a NULL micro-batch id: the latest committed
    val batch = args.lift(1).filterNot(e => e.foldable && e.eval() == null).map(number(_, "the micro-batch id"))
    val aggregation = args.lift(2).map(number(_, "the windowed aggregation").toInt)
    streaming.StateReader.read(SparkSession.active, checkpoint, batch, aggregation).queryExecution.analyzed
  }

  /** `windows(ts, 'spec' [, options])`, and for listed windows not naming their column `windows(ts, 'spec' [, options], listing)`. */
  private def windowsOfSpec(args: Seq[Expression]): Expression = {
    val definition = if (args.length >= 2) Some(definitionOfSpec(args(1), "windows")) else None
    val listed = definition.exists(d => d.rowsListWindows && d.listingColumn.isEmpty)
    val (usage, most) = if (listed) ("(time_column, spec [, options], listing)", 4) else ("(time_column, spec [, options])", 3)
    if (args.length < (if (listed) 3 else 2) || args.length > most) {
      throw WindowAggException(WindowAggError.INVALID_QUERY, s"windows takes $usage, got ${args.length} argument(s)")
    }
    val window = grouping(args.head, definition.get, options(if (listed) args.slice(2, args.length - 1).headOption else args.lift(2)))
    if (listed) window.copy(listing = Some(args.last)) else window
  }

  /** `sliding_window(ts, size [, options])`; the last argument is a time unit ('seconds') or options ('emit=updates, lateRows=emit'). */
  private def slidingWindow(args: Seq[Expression]): Expression = {
    if (args.length < 2 || args.length > 3) {
      throw WindowAggException(WindowAggError.INVALID_QUERY,
        s"sliding_window takes (time_column, size [, time_unit or options]), got ${args.length} argument(s)")
    }
    grouping(args.head, slidingWindows(args(1), "sliding_window"), options(args.lift(2)))
  }

  /** The grouping key over `time`, reading the definition's per-row length and tie-break columns by name where it has them. */
  private def grouping(time: Expression, definition: WindowDefinition, options: WindowOptions): WindowGroupingExpression =
    WindowGroupingExpression(time, definition, options, definition.rowLengthColumn.map(UnresolvedAttribute.quotedString),
      definition.tieBreakColumn.map(UnresolvedAttribute.quotedString), definition.listingColumn.map(UnresolvedAttribute.quotedString))

  private def definitionOfSpec(spec: Expression, function: String): WindowDefinition =
    attempt(function)(WindowSpec.parse(string(spec, s"the window spec of $function")))

  private def windowAgg(function: String, sizeName: String, args: Seq[Expression], definition: Expression => WindowDefinition): LogicalPlan = {
    val usage = s"$function(TABLE(t) PARTITION BY key ORDER BY (time), $sizeName, 'sum(x) AS total, ...' [, time_unit or options])"
    if (args.length < 3 || args.length > 4) {
      throw WindowAggException(WindowAggError.INVALID_QUERY, s"$function takes 3 or 4 arguments, got ${args.length}: $usage")
    }
    val table = args.head match {
      case t: FunctionTableSubqueryArgumentExpression => t
      case other => throw WindowAggException(WindowAggError.INVALID_QUERY, s"the first argument of $function must be a TABLE(...) argument, got ${other.sql}: $usage")
    }
    val time = table.orderByExpressions match {
      case Seq(SortOrder(child, Ascending, _, _)) => child
      case Seq(SortOrder(_, Descending, _, _)) =>
        throw WindowAggException(WindowAggError.INVALID_QUERY, s"$function orders rows by time ascending; remove DESC from ORDER BY")
      case Seq() => throw WindowAggException(WindowAggError.INVALID_QUERY, s"$function needs the time column in ORDER BY: $usage")
      case more => throw WindowAggException(WindowAggError.INVALID_QUERY, s"$function needs exactly one time column in ORDER BY, got ${more.length}")
    }
    val window = grouping(time, definition(args(1)), options(args.lift(3)))
    val aggregates = parseAggregates(string(args(2), "aggregates"))
    val keys = table.partitionByExpressions
    val keyColumns: Seq[NamedExpression] = keys.map {
      case n: NamedExpression => n
      case e => UnresolvedAlias(e)
    }
    // UnresolvedExtractValue, not GetStructField: the analyzer makes the field access once the time
    // column resolves, and the plan's text (in the AnalysisException of an unknown time column) does
    // not ask the unresolved window for its type
    val bounds = Seq(
      Alias(UnresolvedExtractValue(window, Literal("start")), "window_start")(),
      Alias(UnresolvedExtractValue(window, Literal("end")), "window_end")())
    Aggregate(keys :+ window, keyColumns ++ bounds ++ aggregates, table.plan)
  }

  private def parseAggregates(text: String): Seq[NamedExpression] = {
    val hint = "write aggregates like 'sum(amount) AS total, count(1) AS n'"
    val plan =
      try CatalystSqlParser.parsePlan(s"SELECT $text")
      catch {
        case NonFatal(e) =>
          val reason = Option(e.getMessage).flatMap(_.linesIterator.map(_.trim).find(_.nonEmpty)).getOrElse(e.toString)
          throw WindowAggException(WindowAggError.INVALID_QUERY, s"cannot parse the aggregate list '$text': $reason; $hint", e)
      }
    val list = plan match {
      case Project(list, _: OneRowRelation) if list.nonEmpty => list
      case _ => throw WindowAggException(WindowAggError.INVALID_QUERY, s"the aggregate list '$text' must be a plain list of expressions; $hint")
    }
    // SQL reads `count(1) AS` as count(1) named "AS": a name left out, never a name meant
    list.collectFirst { case a: Alias if a.name.equalsIgnoreCase("as") =>
      throw WindowAggException(WindowAggError.INVALID_QUERY,
        s"the aggregate list '$text' has AS with no name after it (after ${a.child.sql}); $hint")
    }
    list
  }

  private def slidingWindows(size: Expression, function: String): WindowDefinition =
    span(size, function, "window size") match {
      case scala.util.Left(d) => attempt(function)(SlidingWindows.of(d))
      case scala.util.Right(ticks) => attempt(function)(SlidingWindows.of(ticks))
    }

  private def sessionWindows(gap: Expression): WindowDefinition =
    span(gap, "session_window_agg", "inactivity gap") match {
      case scala.util.Left(d) => attempt("session_window_agg")(SessionWindows.withInactivityGap(d))
      case scala.util.Right(ticks) => attempt("session_window_agg")(SessionWindows.withInactivityGap(ticks))
    }

  private def attempt[T](function: String)(build: => T): T =
    try build
    catch { case e: WindowError => throw WindowAggException(WindowAggError.INVALID_WINDOW, s"$function: ${e.message}", e) }

  /** A constant length of time: a duration (Left), or a number of ticks (Right). */
  private def span(e: Expression, function: String, what: String): Either[Duration, Long] = {
    if (!e.foldable) throw WindowAggException(WindowAggError.INVALID_QUERY, s"the $what of $function must be a constant, got ${e.sql}")
    (e.eval(), e.dataType) match {
      case (null, _) => throw WindowAggException(WindowAggError.INVALID_QUERY, s"the $what of $function must not be null")
      case (micros: java.lang.Long, _: DayTimeIntervalType) => scala.util.Left(Duration.of(micros, ChronoUnit.MICROS))
      case (i: CalendarInterval, CalendarIntervalType) =>
        if (i.months != 0) throw WindowAggException(WindowAggError.INVALID_WINDOW, s"the $what of $function is ${e.sql}: months have no fixed length")
        scala.util.Left(Duration.ofDays(i.days).plus(i.microseconds, ChronoUnit.MICROS)) // exact: days in micros can overflow a long
      case (s: UTF8String, _: StringType) => scala.util.Left(attempt(function)(TimeSpan.parseDuration(s.toString)))
      case (n: Number, ByteType | ShortType | IntegerType | LongType) => scala.util.Right(n.longValue)
      case (_, YearMonthIntervalType(_, _)) =>
        throw WindowAggException(WindowAggError.INVALID_WINDOW, s"the $what of $function is ${e.sql}: months and years have no fixed length")
      case (_, other) =>
        throw WindowAggException(WindowAggError.INVALID_WINDOW, s"the $what of $function must be an INTERVAL, a string like '10 minutes' or an integer number of ticks, got ${other.sql}")
    }
  }

  private def options(arg: Option[Expression]): WindowOptions =
    arg.map(e => WindowOptions.parse(string(e, "the time unit or options argument"))).getOrElse(WindowOptions())

  private def string(e: Expression, what: String): String = {
    if (!e.foldable || !e.dataType.isInstanceOf[StringType]) throw WindowAggException(WindowAggError.INVALID_QUERY, s"$what must be a constant string, got ${e.sql}")
    Option(e.eval()).map(_.toString).getOrElse(throw WindowAggException(WindowAggError.INVALID_QUERY, s"$what must not be null"))
  }
}
