package windowagg.spark

import java.time.Duration
import java.time.temporal.ChronoUnit

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.analysis.UnresolvedAlias
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan, OneRowRelation, Project}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.{CalendarInterval, UTF8String}

import windowagg.{SlidingWindows, WindowDefinition}
import windowagg.core.WindowError

/** The SQL surface: `sliding_window(...)` for GROUP BY and the `sliding_window_agg` table function. */
object SqlFunctions {

  /**
   * `sliding_window(ts, size [, options])`: the grouping key, as `window(...)` in the DataFrame API.
   * The last argument is a time unit ('seconds') or options ('emit=updates, lateRows=emit').
   */
  def slidingWindow(args: Seq[Expression]): Expression = {
    if (args.length < 2 || args.length > 3) {
      throw WindowAggException(
        s"sliding_window takes (time_column, size [, time_unit or options]), got ${args.length} argument(s)")
    }
    WindowGroupingExpression(args.head, slidingWindows(args(1), "sliding_window"), options(args.lift(2)))
  }

  /**
   * `sliding_window_agg(TABLE(t) PARTITION BY keys ORDER BY (ts), size, 'agg AS name, ...' [, time_unit])`:
   * the aggregation as a table, with columns keys, window_start, window_end, then the aggregates.
   * It is built as the same grouped aggregation the DataFrame API builds.
   */
  def slidingWindowAgg(args: Seq[Expression]): LogicalPlan = {
    val usage = "sliding_window_agg(TABLE(t) PARTITION BY key ORDER BY (time), size, 'sum(x) AS total, ...' [, time_unit])"
    if (args.length < 3 || args.length > 4) {
      throw WindowAggException(s"sliding_window_agg takes 3 or 4 arguments, got ${args.length}: $usage")
    }
    val table = args.head match {
      case t: FunctionTableSubqueryArgumentExpression => t
      case other => throw WindowAggException(s"the first argument of sliding_window_agg must be a TABLE(...) argument, got ${other.sql}: $usage")
    }
    val time = table.orderByExpressions match {
      case Seq(SortOrder(child, Ascending, _, _)) => child
      case Seq(SortOrder(_, Descending, _, _)) =>
        throw WindowAggException("sliding_window_agg orders rows by time ascending; remove DESC from ORDER BY")
      case Seq() => throw WindowAggException(s"sliding_window_agg needs the time column in ORDER BY: $usage")
      case more => throw WindowAggException(s"sliding_window_agg needs exactly one time column in ORDER BY, got ${more.length}")
    }
    val window = WindowGroupingExpression(time, slidingWindows(args(1), "sliding_window_agg"), options(args.lift(3)))
    val aggregates = parseAggregates(string(args(2), "aggregates"))
    val keys = table.partitionByExpressions
    val keyColumns: Seq[NamedExpression] = keys.map {
      case n: NamedExpression => n
      case e => UnresolvedAlias(e)
    }
    val bounds = Seq(
      Alias(GetStructField(window, 0, Some("start")), "window_start")(),
      Alias(GetStructField(window, 1, Some("end")), "window_end")())
    Aggregate(keys :+ window, keyColumns ++ bounds ++ aggregates, table.plan)
  }

  private def parseAggregates(text: String): Seq[NamedExpression] = {
    val hint = "write aggregates like 'sum(amount) AS total, count(1) AS n'"
    val plan =
      try CatalystSqlParser.parsePlan(s"SELECT $text")
      catch {
        case NonFatal(e) =>
          val reason = Option(e.getMessage).flatMap(_.linesIterator.map(_.trim).find(_.nonEmpty)).getOrElse(e.toString)
          throw WindowAggException(s"cannot parse the aggregate list '$text': $reason; $hint", e)
      }
    plan match {
      case Project(list, _: OneRowRelation) if list.nonEmpty => list
      case _ => throw WindowAggException(s"the aggregate list '$text' must be a plain list of expressions; $hint")
    }
  }

  private def slidingWindows(size: Expression, function: String): WindowDefinition = {
    if (!size.foldable) throw WindowAggException(s"the window size of $function must be a constant, got ${size.sql}")
    val value = size.eval()
    try {
      (value, size.dataType) match {
        case (null, _) => throw WindowAggException(s"the window size of $function must not be null")
        case (micros: java.lang.Long, _: DayTimeIntervalType) => SlidingWindows.of(Duration.of(micros, ChronoUnit.MICROS))
        case (i: CalendarInterval, CalendarIntervalType) =>
          if (i.months != 0) throw WindowAggException(s"the window size of $function is ${size.sql}: months have no fixed length")
          SlidingWindows.of(Duration.of(i.days * 86400000000L + i.microseconds, ChronoUnit.MICROS))
        case (s: UTF8String, _: StringType) => SlidingWindows.of(s.toString)
        case (n: Number, ByteType | ShortType | IntegerType | LongType) => SlidingWindows.of(n.longValue)
        case (_, YearMonthIntervalType(_, _)) =>
          throw WindowAggException(s"the window size of $function is ${size.sql}: months and years have no fixed length")
        case (_, other) =>
          throw WindowAggException(s"the window size of $function must be an INTERVAL, a string like '10 minutes' or an integer number of ticks, got ${other.sql}")
      }
    } catch {
      case e: WindowError => throw WindowAggException(s"$function: ${e.message}", e)
    }
  }

  private def options(arg: Option[Expression]): WindowOptions =
    arg.map(e => WindowOptions.parse(string(e, "the time unit or options argument"))).getOrElse(WindowOptions())

  private def string(e: Expression, what: String): String = {
    if (!e.foldable || !e.dataType.isInstanceOf[StringType]) throw WindowAggException(s"$what must be a constant string, got ${e.sql}")
    Option(e.eval()).map(_.toString).getOrElse(throw WindowAggException(s"$what must not be null"))
  }
}
