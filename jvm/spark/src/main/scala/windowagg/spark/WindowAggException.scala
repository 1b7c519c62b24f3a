package windowagg.spark

import org.apache.spark.sql.AnalysisException

/**
 * A windowagg error found while analyzing a query, before any data is read. It is an
 * [[AnalysisException]], so PySpark raises it as `pyspark.errors.AnalysisException`.
 */
final class WindowAggException(message: String, cause: Option[Throwable])
  extends AnalysisException(message, None, None, cause, None, Map.empty[String, String], Array.empty)

object WindowAggException {
  def apply(message: String): WindowAggException = new WindowAggException(message, None)
  def apply(message: String, cause: Throwable): WindowAggException = new WindowAggException(message, Option(cause))
}
