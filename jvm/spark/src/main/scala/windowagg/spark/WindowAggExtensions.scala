package windowagg.spark

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo

import windowagg.spark.common.SupportedSpark

/**
 * The session extension: `spark.sql.extensions=windowagg.spark.WindowAggExtensions`.
 * Registers the SQL functions, the analyzer rules (one of them checks streaming queries as they
 * start) and the planner strategy.
 */
class WindowAggExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    SupportedSpark.check(org.apache.spark.SPARK_VERSION)
    extensions.injectResolutionRule(session => PlaceWindowColumn(session))
    extensions.injectHintResolutionRule(session => streaming.StreamingStartCheck(session))
    extensions.injectPostHocResolutionRule(session => PlanWindowAggregation(session))
    extensions.injectPlannerStrategy(session => WindowAggStrategy(session))
    (SqlFunctions.grouping ++ SqlFunctions.views).foreach { f =>
      extensions.injectFunction((FunctionIdentifier(f.name), info(f.name, f.usage), f.build))
    }
    SqlFunctions.tables.foreach { f =>
      extensions.injectTableFunction((FunctionIdentifier(f.name), info(f.name, f.usage), f.build))
    }
  }

  private def info(name: String, usage: String): ExpressionInfo =
    new ExpressionInfo(classOf[WindowAggExtensions].getName, null, name, usage, "", "", "", "", "", "", "")
}
