package windowagg.spark

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo

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

/**
 * The Spark lines this jar is tested on (dev/test, dev/test-spark-version; the README's Spark versions).
 * On another, the session does not start: windowagg would otherwise fail later, in the middle of a
 * query, on a Spark method that line lacks or declares differently.
 */
object SupportedSpark {
  val Lines: Seq[String] = Seq("4.1", "4.2", "4.3")

  /** The Spark line of a version string: "4.1" for "4.1.3" or a vendor's "4.1.0-amzn-0". */
  def line(sparkVersion: String): String = sparkVersion.split("[.-]").take(2).mkString(".")

  def check(sparkVersion: String): Unit =
    if (!Lines.contains(line(sparkVersion))) {
      throw new UnsupportedOperationException(
        s"windowagg ${WindowAggVersion.current} runs on Spark ${Lines.mkString(", ")} (Scala 2.13), and this is " +
          s"Spark $sparkVersion: run a supported Spark, or leave ${classOf[WindowAggExtensions].getName} out of " +
          "spark.sql.extensions")
    }
}

/** The running windowagg's version, from its jar's manifest. */
object WindowAggVersion {
  lazy val current: String =
    Option(classOf[WindowAggExtensions].getPackage.getImplementationVersion).getOrElse("development build")
}
