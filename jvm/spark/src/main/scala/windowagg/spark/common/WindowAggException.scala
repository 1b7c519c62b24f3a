package windowagg.spark.common

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.trees.Origin

/** windowagg's error conditions, each with its SQLSTATE, as Spark names its own. */
sealed abstract class WindowAggError(val sqlState: String) {
  def name: String = s"WINDOWAGG_$this"
}

object WindowAggError {
  /** A window definition or spec that cannot hold: sizes, offsets, grace, a spec that does not parse. */
  case object INVALID_WINDOW extends WindowAggError("22023")
  /** An unknown option, or a value it cannot take. */
  case object INVALID_OPTION extends WindowAggError("42K06")
  /** A time, gap or tie-break column of a type or unit windowagg cannot read. */
  case object INVALID_TIME_COLUMN extends WindowAggError("42K09")
  /** An aggregate that cannot be computed incrementally over windows (DISTINCT, pandas UDAFs, ...). */
  case object UNSUPPORTED_AGGREGATE extends WindowAggError("0A000")
  /** A query shape windowagg cannot plan (a column neither grouped nor aggregated, two windows, ...). */
  case object INVALID_QUERY extends WindowAggError("42000")
  /** A streaming query missing what windows need (a watermark, the RocksDB state store, a TIMESTAMP). */
  case object STREAMING_REQUIREMENT extends WindowAggError("42KDE")
  /** emit and the output mode disagree. */
  case object OUTPUT_MODE extends WindowAggError("42KDE")
  /** A checkpoint whose state was built by another query, or that this release cannot read. */
  case object CHECKPOINT_MISMATCH extends WindowAggError("42K03")
}

/**
 * A windowagg error found while analyzing a query or starting a streaming one, before any data is
 * read: an `org.apache.spark.sql.AnalysisException` (PySpark raises `pyspark.errors.AnalysisException`) with windowagg's
 * condition (`getCondition`) and SQLSTATE (`getSqlState`). Spark's registry of conditions is closed to
 * libraries, so the message travels whole (template `<message>`, parameter `message`), and the
 * exception keeps no query context: PySpark looks a condition up in that registry to log an error
 * with a context. A SQL position still shows in the message.
 */
final class WindowAggException private (
    message: String,
    val error: WindowAggError,
    cause: Option[Throwable],
    line: Option[Int],
    position: Option[Int])
  extends AnalysisException(
    message, line, position, cause, Some(error.name), Map(WindowAggException.MessageParameter -> message),
    Array.empty, Some(error.sqlState), Some(s"<${WindowAggException.MessageParameter}>")) {

  override def withPosition(origin: Origin): AnalysisException = {
    val positioned = new WindowAggException(message, error, cause, origin.line, origin.startPosition)
    positioned.setStackTrace(getStackTrace)
    positioned
  }
}

object WindowAggException {
  val MessageParameter = "message"

  def apply(error: WindowAggError, message: String): WindowAggException =
    new WindowAggException(message, error, None, None, None)

  def apply(error: WindowAggError, message: String, cause: Throwable): WindowAggException =
    new WindowAggException(message, error, Option(cause), None, None)
}
