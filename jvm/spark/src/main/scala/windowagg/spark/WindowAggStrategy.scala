package windowagg.spark

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.internal.SQLConf

/**
 * Plans [[WindowAggregate]] as [[WindowAggregateExec]], over Spark's partial aggregation where
 * [[AggregateBeforeShuffle]] chooses it, and a streaming aggregation's [[streaming.CombineBeforeShuffle]]
 * as its kind combines rows before the shuffle.
 */
object WindowAggStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case a: WindowAggregate =>
      val choice = AggregateBeforeShuffle.choose(AggregateBeforeShuffle.mode(SQLConf.get), a.windows, a.functions, a.gap.isDefined)
      val child = planLater(a.child)
      val (input, partials) =
        if (!choice.aggregated) (child, None)
        else {
          val (aggregated, partials) = AggregateBeforeShuffle.plan(a.keys, a.time, a.windows, a.functions, a.filters, child)
          (aggregated, Some(partials))
        }
      WindowAggregateExec(
        a.keys, a.time, a.gap, a.tieBreak, a.timeColumn, a.windows, a.spec, a.functions, a.filters, a.views,
        a.windowStart, a.windowEnd, a.aggregateOutput, partials, choice, input) :: Nil
    case c: streaming.CombineBeforeShuffle => streaming.CombineBeforeShuffle.plan(c, planLater(c.child)) :: Nil
    case _ => Nil
  }
}
