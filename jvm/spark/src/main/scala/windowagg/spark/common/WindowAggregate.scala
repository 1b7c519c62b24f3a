package windowagg.spark.common

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, SupportsNonDeterministicExpression, UnaryNode}

import windowagg.core.ResolvedWindows

/**
 * Windowed aggregation of `child`: per key, every window of `windows` (any kind: sliding, session,
 * tumbling, hopping, cumulative, calendar, unlimited, user-defined) over `time`, with the aggregate
 * functions computed over the rows of each window. Output: the keys, `windowStart`, `windowEnd`,
 * then one column per aggregate function.
 * `spec` is the definition's text form (for EXPLAIN). `gap` is the per-row length column the
 * definition reads (sessions with a dynamic gap);
 * `tieBreak` orders rows that share a time (count windows); `listing` holds each row's windows ([[windowagg.ListedWindows]]).
 *
 * The aggregate functions are held bare (not as AggregateExpressions, whose place is an
 * Aggregate), each with the rows it is over (`views`: the window's, or Storm's new or expired
 * rows) and its FILTER predicate (`true` when it has none; a plain expression, so that
 * plan rules such as column pruning see what it references).
 */
case class WindowAggregate(
    keys: Seq[Attribute],
    time: Attribute,
    gap: Option[Attribute],
    tieBreak: Option[Attribute],
    listing: Option[Attribute],
    timeColumn: TimeColumn,
    windows: ResolvedWindows,
    spec: String,
    aggregateFunctions: Seq[Expression],
    filters: Seq[Expression],
    views: Seq[WindowView.View],
    windowStart: Attribute,
    windowEnd: Attribute,
    aggregateOutput: Seq[Attribute],
    child: LogicalPlan)
  extends UnaryNode with SupportsNonDeterministicExpression {

  override def allowNonDeterministicExpression: Boolean = true

  override def output: Seq[Attribute] = keys ++ Seq(windowStart, windowEnd) ++ aggregateOutput

  override def producedAttributes: AttributeSet = AttributeSet(Seq(windowStart, windowEnd) ++ aggregateOutput)

  /** How windowagg runs these windows. */
  lazy val engine: Engine = Engine.of(windows)

  def functions: Seq[AggregateFunction] = aggregateFunctions.map {
    case f: AggregateFunction => f
    case other => throw new IllegalStateException(s"not an aggregate function: $other")
  }

  override protected def withNewChildInternal(newChild: LogicalPlan): WindowAggregate =
    copy(child = newChild)
}
