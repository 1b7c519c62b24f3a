package windowagg.spark

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo

/**
 * The session extension: `spark.sql.extensions=windowagg.spark.WindowAggExtensions`.
 * Registers the SQL functions, the analyzer rules and the planner strategy.
 */
class WindowAggExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectResolutionRule(_ => PlaceWindowColumn)
    extensions.injectPostHocResolutionRule(session => PlanWindowAggregation(session))
    extensions.injectPlannerStrategy(_ => WindowAggStrategy)
    extensions.injectFunction((
      FunctionIdentifier("sliding_window"),
      info("sliding_window", "sliding_window(time, size [, time_unit]) - KIP-450 sliding windows as a GROUP BY key; " +
        "select window.start and window.end"),
      SqlFunctions.slidingWindow _))
    extensions.injectTableFunction((
      FunctionIdentifier("sliding_window_agg"),
      info("sliding_window_agg", "sliding_window_agg(TABLE(t) PARTITION BY key ORDER BY (time), size, " +
        "'agg AS name, ...' [, time_unit]) - KIP-450 sliding-window aggregates as a table"),
      SqlFunctions.slidingWindowAgg _))
    extensions.injectTableFunction((
      FunctionIdentifier("session_window_agg"),
      info("session_window_agg", "session_window_agg(TABLE(t) PARTITION BY key ORDER BY (time), gap, " +
        "'agg AS name, ...' [, time_unit or options]) - KIP-94 session windows [first, last] as a table"),
      SqlFunctions.sessionWindowAgg _))
  }

  private def info(name: String, usage: String): ExpressionInfo =
    new ExpressionInfo(classOf[WindowAggExtensions].getName, null, name, usage, "", "", "", "", "", "", "")
}
