package windowagg.spark

import scala.util.control.NonFatal

import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.{TableWindows, WindowDefinition}
import windowagg.core.WindowError

/**
 * Reads the windows of a [[TableWindows]] definition from its table or view, once, when the query
 * is analyzed: the start and end columns must have the time column's type (both TIMESTAMP, both
 * TIMESTAMP_NTZ, or integral epochs in the time column's unit), and every row must be a window,
 * neither bound null ([[windowagg.TableWindows.Listed]] checks `start < end`). An error names the
 * table and the row that breaks this.
 */
object WindowsTable {
  /** `definition` with its table read, when it is a table not read yet; any other definition as it is. */
  def read(session: SparkSession, definition: WindowDefinition, timeColumn: TimeColumn, describedAs: String): WindowDefinition =
    definition match {
      case t: TableWindows if t.listed.isEmpty => t.withWindows(windowsOf(session, t, timeColumn, describedAs))
      case other => other
    }

  private def windowsOf(session: SparkSession, t: TableWindows, time: TimeColumn, describedAs: String): TableWindows.Listed = {
    def fail(message: String, cause: Throwable = null): Nothing =
      throw WindowAggException(WindowAggError.INVALID_WINDOW, s"the windows table '${t.table}' $message", cause)
    val table =
      try session.table(t.table)
      catch { case e: AnalysisException => fail(s"cannot be read: ${e.getMessage}", e) }
    if (table.isStreaming) fail("is a stream: table windows are read once, from a static table or view")
    val resolver = SQLConf.get.resolver
    def column(name: String, what: String): StructField = {
      val field = table.schema.find(f => resolver(f.name, name)).getOrElse(
        fail(s"has no $what column '$name'; its columns are ${table.schema.fieldNames.mkString(", ")}"))
      val fits = (time.dataType, field.dataType) match {
        case (TimestampType, TimestampType) | (TimestampNTZType, TimestampNTZType) => true
        case (ByteType | ShortType | IntegerType | LongType, ByteType | ShortType | IntegerType | LongType) => true
        case _ => false
      }
      if (!fits) {
        fail(s"has a $what column '${field.name}' of type ${field.dataType.sql}; with the time column $describedAs of type " +
          s"${time.dataType.sql} it must be ${if (time.isTimestamp) time.dataType.sql else "an integral epoch in the same unit"}")
      }
      field
    }
    val start = column(t.startColumn, "start")
    val end = column(t.endColumn, "end")
    // timestamps as Spark holds them (microseconds, the time column's ticks); a cast would give seconds
    def ticks(field: StructField) = if (time.isTimestamp) col(field.name) else col(field.name).cast(LongType)
    val rows =
      try SparkInternals.collectInternal(table.select(ticks(start), ticks(end)).limit(TableWindows.MaxWindows + 1))
      catch { case NonFatal(e) => fail(s"cannot be read: ${e.getMessage}", e) }
    if (rows.length > TableWindows.MaxWindows) {
      fail(s"has more than ${TableWindows.MaxWindows} rows: table windows are held by every task; aggregate per period with a join instead")
    }
    val timeline = time.timeline(DateTimeUtils.getZoneId(SQLConf.get.sessionLocalTimeZone))
    def shown(ticks: Long): String = if (time.isTimestamp) timeline.format(ticks) else ticks.toString
    val starts = new Array[Long](rows.length)
    val ends = new Array[Long](rows.length)
    rows.indices.foreach { i =>
      val row = rows(i)
      if (row.isNullAt(0) || row.isNullAt(1)) {
        val known = if (row.isNullAt(0)) if (row.isNullAt(1)) "" else s" (${end.name} ${shown(row.getLong(1))})" else s" (${start.name} ${shown(row.getLong(0))})"
        fail(s"has a row with a null ${if (row.isNullAt(0)) start.name else end.name}$known: every row must be a window")
      }
      starts(i) = row.getLong(0)
      ends(i) = row.getLong(1)
    }
    try TableWindows.Listed(starts, ends, shown)
    catch { case e: WindowError => fail(s"has a row that is not a window: ${e.message}", e) }
  }
}
