package windowagg.spark

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.windowagg.SparkInternals

/**
 * A windowagg error found while analyzing a query, before any data is read. It is an
 * [[AnalysisException]], so PySpark raises it as `pyspark.errors.AnalysisException`; it carries
 * Spark's free-text error condition, which PySpark needs to render any SparkThrowable.
 */
final class WindowAggException(message: String, cause: Option[Throwable])
  extends AnalysisException(
    message, None, None, cause, Some(SparkInternals.FreeTextErrorCondition),
    Map(SparkInternals.FreeTextErrorParameter -> message), Array.empty)

object WindowAggException {
  def apply(message: String): WindowAggException = new WindowAggException(message, None)
  def apply(message: String, cause: Throwable): WindowAggException = new WindowAggException(message, Option(cause))
}
