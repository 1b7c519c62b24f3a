package windowagg.spark

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}

/** Plans [[WindowAggregate]] as [[WindowAggregateExec]], and [[MergeBeforeShuffle]] as [[MergeBeforeShuffleExec]]. */
object WindowAggStrategy extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case a: WindowAggregate =>
      WindowAggregateExec(
        a.keys, a.time, a.gap, a.tieBreak, a.timeColumn, a.windows, a.functions, a.filters, a.views,
        a.windowStart, a.windowEnd, a.aggregateOutput, planLater(a.child)) :: Nil
    case m: MergeBeforeShuffle => MergeBeforeShuffleExec(m.spec, m.keys, m.output, planLater(m.child)) :: Nil
    case _ => Nil
  }
}
