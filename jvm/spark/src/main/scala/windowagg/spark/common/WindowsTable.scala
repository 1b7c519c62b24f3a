package windowagg.spark.common

import scala.util.control.NonFatal

import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Cast, Expression}
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
 * neither bound null ([[windowagg.TableWindows.Listed]] checks `start < end`). Per-key windows'
 * key columns must be grouping keys of the aggregation, named alike, and are read as the grouping
 * keys' types; a null key names no key, so it is an error too. Windows asked to be non-overlapping
 * must not overlap (per key). An error names the table and the row that breaks this.
 */
object WindowsTable {
  /** `definition` with its table read, when it is a table not read yet; any other definition as it is. */
  def read(session: SparkSession, definition: WindowDefinition, timeColumn: TimeColumn, describedAs: String,
      groupingKeys: Seq[Expression]): WindowDefinition =
    definition match {
      case t: TableWindows if t.listed.isEmpty => t.withWindows(windowsOf(session, t, timeColumn, describedAs, groupingKeys))
      case other => other
    }

  /**
   * Whether `definition`, read now, is a table whose windows differ from those a checkpoint recorded
   * (`recorded`, their state identity): its state holds the recorded windows' slices.
   */
  def changedSince(definition: WindowDefinition, recorded: Option[String]): Boolean = definition match {
    case t: TableWindows => !recorded.contains(t.stateIdentity)
    case _ => false
  }

  private def windowsOf(session: SparkSession, t: TableWindows, time: TimeColumn, describedAs: String,
      groupingKeys: Seq[Expression]): TableWindows.Read = {
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
    // each key column as the grouping key it joins: its values compare as the engine's keys do
    val keys = t.keyColumns.map { name =>
      val grouping = groupingKeys.collectFirst { case a: Attribute if resolver(a.name, name) => a }.getOrElse(
        fail(s"gives windows per ${t.keyColumns.mkString(", ")}: the aggregation must group by $name too " +
          (if (groupingKeys.isEmpty) "(it groups by the window alone)" else s"(its grouping keys are ${groupingKeys.map(_.sql).mkString(", ")})")))
      val field = table.schema.find(f => resolver(f.name, name)).getOrElse(
        fail(s"has no key column '$name'; its columns are ${table.schema.fieldNames.mkString(", ")}"))
      if (!Cast.canCast(field.dataType, grouping.dataType)) {
        fail(s"has a key column '${field.name}' of type ${field.dataType.sql}, which cannot be read as the grouping key's type ${grouping.dataType.sql}")
      }
      (field, grouping.dataType)
    }
    // timestamps as Spark holds them (microseconds, the time column's ticks); a cast would give seconds
    def ticks(field: StructField) = if (time.isTimestamp) col(field.name) else col(field.name).cast(LongType)
    val keyColumns = keys.map { case (field, dataType) => col(field.name).cast(dataType) }
    val rows =
      try SparkInternals.collectInternal(table.select(ticks(start) +: ticks(end) +: keyColumns: _*).limit(TableWindows.MaxWindows + 1))
      catch { case NonFatal(e) => fail(s"cannot be read: ${e.getMessage}", e) }
    if (rows.length > TableWindows.MaxWindows) {
      fail(s"has more than ${TableWindows.MaxWindows} rows: table windows are held by every task; aggregate per period with a join instead")
    }
    val timeline = time.timeline(DateTimeUtils.getZoneId(SQLConf.get.sessionLocalTimeZone))
    def shown(ticks: Long): String = if (time.isTimestamp) timeline.format(ticks) else ticks.toString
    val keyTypes = keys.map(_._2)
    def keyOf(row: InternalRow): Seq[Any] = keyTypes.indices.map(i => row.get(i + 2, keyTypes(i)))
    def shownKey(key: Seq[Any]): String =
      if (key.isEmpty) "" else s" for ${keys.map(_._1.name).zip(key).map { case (n, v) => s"$n $v" }.mkString(", ")}"
    rows.foreach { row =>
      if (row.isNullAt(0) || row.isNullAt(1)) {
        val known = if (row.isNullAt(0)) if (row.isNullAt(1)) "" else s" (${end.name} ${shown(row.getLong(1))})" else s" (${start.name} ${shown(row.getLong(0))})"
        fail(s"has a row with a null ${if (row.isNullAt(0)) start.name else end.name}$known: every row must be a window")
      }
      keyTypes.indices.find(i => row.isNullAt(i + 2)).foreach { i =>
        fail(s"has a row with a null key ${keys(i)._1.name}, or one that does not read as ${keyTypes(i).sql} " +
          s"(window starting ${shown(row.getLong(0))}): every row must name the key whose window it is")
      }
    }
    val byKey = rows.groupBy(keyOf).map { case (key, ofKey) =>
      val listed =
        try TableWindows.Listed(ofKey.map(_.getLong(0)), ofKey.map(_.getLong(1)), shown)
        catch { case e: WindowError => fail(s"has a row that is not a window${shownKey(key)}: ${e.message}", e) }
      if (t.disjoint) listed.firstOverlap.foreach { case ((s1, e1), (s2, e2)) =>
        fail(s"has overlapping windows${shownKey(key)}, where they were asked to be non-overlapping: " +
          s"[${shown(s1)}, ${shown(e1)}) and [${shown(s2)}, ${shown(e2)})")
      }
      key -> listed
    }
    TableWindows.Read(if (byKey.isEmpty && keys.isEmpty) Map(Seq.empty[Any] -> TableWindows.Listed(Array.emptyLongArray, Array.emptyLongArray)) else byKey)
  }
}
