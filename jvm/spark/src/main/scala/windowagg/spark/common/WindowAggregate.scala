package windowagg.spark.common

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan, SupportsNonDeterministicExpression, UnaryNode}

import windowagg.WindowDefinition
import windowagg.core.ResolvedWindows

/**
 * Windowed aggregation of `child`: per key, every window of `windows` (any kind: sliding, session,
 * tumbling, hopping, cumulative, calendar, unlimited, user-defined) over `time`, with the aggregate
 * functions computed over the rows of each window. Output: the keys, `windowStart`, `windowEnd`,
 * then one column per aggregate function.
 *
 * This node is the one description of the aggregation, built once by the analyzer rule
 * ([[windowagg.spark.PlanWindowAggregation]]): the batch operator holds it (`WindowAggregateExec`)
 * and the streaming planner reads it, each adding only its own parts. Its expressions are its own
 * fields, not a nested value's, because Catalyst resolves, prunes and rewrites only the expressions
 * a plan node holds itself.
 *
 * `definition` is the window definition as the query gave it and `windows` its resolved form;
 * `options` how the time column is read and, in streaming, what is emitted, on which clock and where
 * late rows go. `gap` is the per-row length column the definition reads (sessions with a dynamic
 * gap); `tieBreak` orders rows that share a time (count windows); `listing` holds each row's windows
 * ([[windowagg.ListedWindows]]).
 *
 * The aggregate functions are held bare (not as AggregateExpressions, whose place is an
 * Aggregate), each with the rows it is over (`views`: the window's, or Storm's new or expired
 * rows), its FILTER predicate (`true` when it has none; a plain expression, so that
 * plan rules such as column pruning see what it references) and the name the query gives its value
 * (`names`, under which `read_state` shows it).
 */
case class WindowAggregate(
    keys: Seq[Attribute],
    time: Attribute,
    gap: Option[Attribute],
    tieBreak: Option[Attribute],
    listing: Option[Attribute],
    timeColumn: TimeColumn,
    definition: WindowDefinition,
    windows: ResolvedWindows,
    options: WindowOptions,
    aggregateFunctions: Seq[Expression],
    filters: Seq[Expression],
    views: Seq[WindowView.View],
    names: Seq[String],
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

  /** Whether some aggregate is over Storm's new or expired rows. */
  def withViews: Boolean = views.exists(_ != WindowView.All)

  /**
   * The order of a key's rows sharing a time, among `columns` (the rows an operator reads), for an
   * operator that reads this node's expressions as `rebound`: the engine's ([[Engine.tieOrder]]).
   */
  def tieOrder(columns: Seq[Attribute], rebound: Expression => Expression = identity): Seq[Expression] = {
    val inputs = AttributeSet((aggregateFunctions ++ filters).map(rebound).flatMap(_.references))
    engine.tieOrder(tieBreak.map(rebound), columns.filter(inputs.contains))
  }

  /**
   * This node over an empty relation of its input's columns: what a physical operator keeps of it.
   * The input's plan is the operator's child, and a physical plan travels to the executors, where a
   * logical input (a file source's index, a catalog table) cannot.
   */
  def overInputColumns: WindowAggregate = copy(child = LocalRelation(child.output))

  override protected def withNewChildInternal(newChild: LogicalPlan): WindowAggregate =
    copy(child = newChild)
}
