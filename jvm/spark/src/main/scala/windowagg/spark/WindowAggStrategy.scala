package windowagg.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{NamedExpression, SubqueryExpression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.spark.common.{AggregateBeforeShuffle, WindowAggregate}

/**
 * Plans [[windowagg.spark.common.WindowAggregate]] (with the projection over it) as [[WindowAggregateExec]], over Spark's partial aggregation where
 * [[windowagg.spark.common.AggregateBeforeShuffle]] chooses it, and a streaming aggregation's [[streaming.CombineBeforeShuffle]]
 * as its kind combines rows before the shuffle.
 */
case class WindowAggStrategy(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    // The projection over the aggregation (the window struct, aliases, expressions of the aggregates)
    // is the operator's own output projection, as Spark's aggregation operators evaluate their result
    // expressions: each output row is written once.
    case Project(result, a: WindowAggregate) if result.forall(e => e.deterministic && !SubqueryExpression.hasSubquery(e)) =>
      windowAggregate(a, result) :: Nil
    case a: WindowAggregate => windowAggregate(a, a.output) :: Nil
    // a streaming query's session holds the partitions of its state as each micro-batch is planned
    case c: streaming.CombineBeforeShuffle =>
      streaming.CombineBeforeShuffle.plan(c, planLater(c.child), SparkInternals.statePartitions(session.sessionState.conf)) :: Nil
    case _ => Nil
  }

  private def windowAggregate(a: WindowAggregate, result: Seq[NamedExpression]): WindowAggregateExec = {
    val choice = AggregateBeforeShuffle.choose(AggregateBeforeShuffle.mode(SQLConf.get), a.engine, a.functions, a.gap.isDefined)
    val child = planLater(a.child)
    val (input, partials) =
      if (!choice.aggregated) (child, None)
      else {
        val (aggregated, partials) = AggregateBeforeShuffle.plan(a.keys, a.time, a.listing, a.engine, a.functions, a.filters, child)
        (aggregated, Some(partials))
      }
    WindowAggregateExec(a.overInputColumns, result, partials, choice, input)
  }
}
