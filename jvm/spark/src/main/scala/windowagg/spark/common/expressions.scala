package windowagg.spark.common

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode, FalseLiteral, GenerateUnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._

import windowagg.WindowDefinition
import windowagg.core.{ResolvedWindows, WindowError}

/**
 * The grouping key `window(ts, definition)`: which windows a row of a windowed aggregation
 * belongs to, for any kind of window. It has no per-row value (a window depends on the other
 * rows), so it is never evaluated: the analyzer rules turn the aggregation that groups by it into a [[WindowAggregate]].
 * Its type is the `window` column's: struct<start, end>. `gap` is the per-row length column the
 * definition reads (sessions with a dynamic gap), `tieBreak` the column ordering rows that share a
 * time (count windows), `listing` the column in which each row lists its windows ([[ListedWindows]]).
 */
case class WindowGroupingExpression(
    timeColumn: Expression,
    definition: WindowDefinition,
    options: WindowOptions,
    gap: Option[Expression] = None,
    tieBreak: Option[Expression] = None,
    listing: Option[Expression] = None)
  extends Expression with Unevaluable with NonSQLExpression {

  override def children: Seq[Expression] = timeColumn +: (gap.toSeq ++ tieBreak.toSeq ++ listing.toSeq)
  override def nullable: Boolean = false
  // resolved once its columns are: the extension's rules then replace it during analysis
  override lazy val resolved: Boolean = childrenResolved
  // reached (by Spark's final analysis check) only when those rules did not run
  override def checkInputDataTypes(): TypeCheckResult = TypeCheckResult.TypeCheckFailure(WindowGroupingExpression.NoExtension)
  override def prettyName: String = "window"
  override def toString: String =
    s"window($timeColumn, $definition, $options${gap.map(g => s", gap=$g").getOrElse("")}${tieBreak.map(t => s", tieBreak=$t").getOrElse("")}" +
      s"${listing.map(l => s", listing=$l").getOrElse("")})"

  private def checkedTimeColumn: TimeColumn = TimeColumn.of(timeColumn.dataType, options.timeUnit, s"'${timeColumn.sql}'")

  /**
   * This window with its definition's table read, where the definition is windows given as a table
   * ([[WindowsTable]]); `groupingKeys` are the aggregation's other grouping keys, which per-key windows join.
   */
  def withTableRead(session: SparkSession, groupingKeys: Seq[Expression]): WindowGroupingExpression =
    copy(definition = WindowsTable.read(session, definition, checkedTimeColumn, s"'${timeColumn.sql}'", groupingKeys))

  /** Checks the time column and the definition, resolved against the column; errors name the problem. */
  def validated: (TimeColumn, ResolvedWindows) = {
    val time = checkedTimeColumn
    val windows =
      try definition.resolve(time.timeline(DateTimeUtils.getZoneId(SQLConf.get.sessionLocalTimeZone)))
      catch { case e: WindowError => throw WindowAggException(WindowAggError.INVALID_WINDOW, s"${e.message} (time column '${timeColumn.sql}')", e) }
    gap.foreach { g =>
      val ok = g.dataType match {
        case _: DayTimeIntervalType | CalendarIntervalType => time.isTimestamp
        case ByteType | ShortType | IntegerType | LongType => !time.isTimestamp
        case _ => false
      }
      if (!ok) {
        throw WindowAggException(WindowAggError.INVALID_TIME_COLUMN,
          s"the gap column '${g.sql}' has type ${g.dataType.sql}; with a ${timeColumn.dataType.sql} time column it must be " +
            (if (time.isTimestamp) "a day-time INTERVAL" else "an integral number of ticks"))
      }
    }
    tieBreak.foreach { t =>
      if (!RowOrdering.isOrderable(t.dataType)) {
        throw WindowAggException(WindowAggError.INVALID_TIME_COLUMN, s"the tie-break column '${t.sql}' has type ${t.dataType.sql}, which cannot be ordered")
      }
    }
    (definition.rowsListWindows, listing) match {
      case (true, None) =>
        throw WindowAggException(WindowAggError.INVALID_QUERY,
          s"$definition needs the column listing each row's windows: windows(ts, spec, listing), or 'listed by <column> ...'")
      case (true, Some(l)) if !isListing(l.dataType) =>
        val bound = if (windowType == LongType) "an integral type" else s"${windowType.sql} or DATE"
        throw WindowAggException(WindowAggError.INVALID_TIME_COLUMN,
          s"the column listing the windows, '${l.sql}', has type ${l.dataType.sql}; with a ${timeColumn.dataType.sql} time " +
            s"column it must be an ARRAY of STRUCT<start, end> of $bound (a null or empty array: the time is in no window)")
      case (true, _) =>
      case (false, Some(l)) =>
        throw WindowAggException(WindowAggError.INVALID_QUERY,
          s"$definition lists its own windows; only listed windows read them from a column ('${l.sql}')")
      case (false, None) =>
    }
    (time, windows)
  }

  private def windowType: DataType = timeColumn.dataType match {
    case t @ (TimestampType | TimestampNTZType) => t
    case _ => LongType
  }

  override def dataType: DataType = WindowGroupingExpression.structType(windowType)

  /**
   * An array of windows (start, end) of the time column's window type: integral bounds of an integral
   * time column widen to it, and dates of a timestamp column are their first instant.
   */
  private def isListing(t: DataType): Boolean = t match {
    case ArrayType(StructType(Array(start, end)), _) =>
      def bound(f: StructField) = f.dataType == windowType ||
        (windowType == LongType && Seq(ByteType, ShortType, IntegerType).contains(f.dataType)) ||
        (windowType != LongType && f.dataType == DateType)
      start.name.equalsIgnoreCase("start") && end.name.equalsIgnoreCase("end") && bound(start) && bound(end)
    case _ => false
  }

  /** The listing column with its bounds as the window type (longs: what the engine reads), once validated. */
  def listingAsWindows: Option[Expression] = listing.map(l => l.dataType match {
    case ArrayType(StructType(Array(start, end)), _) if start.dataType == windowType && end.dataType == windowType => l
    case _ =>
      val bounds = StructType(Seq(StructField("start", windowType), StructField("end", windowType)))
      Cast(l, ArrayType(bounds), Some(SQLConf.get.sessionLocalTimeZone))
  })

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): WindowGroupingExpression = {
    val rest = newChildren.iterator.drop(1)
    copy(
      timeColumn = newChildren.head,
      gap = gap.map(_ => rest.next()),
      tieBreak = tieBreak.map(_ => rest.next()),
      listing = listing.map(_ => rest.next()))
  }
}

object WindowGroupingExpression {
  val ColumnName = "window"

  /** Why a windowagg expression is left after analysis: the session lacks the extension that plans it. */
  val NoExtension: String =
    "windowagg's functions need its session extension, which this session does not have: start Spark with " +
      "--jars windowagg.jar --conf spark.sql.extensions=windowagg.spark.WindowAggExtensions (in Python, " +
      "windowagg.session() or windowagg.configure(builder) sets it)"
  def structType(windowType: DataType): StructType = StructType(Seq(
    StructField("start", windowType, nullable = false),
    StructField("end", windowType, nullable = false)))
}

/**
 * The row of `children` in Spark's binary form (an UnsafeRow's bytes, owned by the result): how the
 * streaming processors receive their input rows, so that no row is converted to a `Row` of boxed
 * values and back. Generated code writes the row straight from the children's values.
 */
case class PackedRow(children: Seq[Expression]) extends Expression {
  @transient private lazy val project = UnsafeProjection.create(children)

  override def nullable: Boolean = false
  override def dataType: DataType = BinaryType
  override def eval(input: InternalRow): Any = project(input).copy().getBytes

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val row = GenerateUnsafeProjection.createCode(ctx, children)
    // the projection's row is reused: the copy's bytes are the result's own
    ev.copy(code = code"""
      ${row.code}
      byte[] ${ev.value} = ${row.value}.copy().getBytes();""", isNull = FalseLiteral)
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): PackedRow = copy(children = newChildren)
}

/**
 * A row packed in binary form (an UnsafeRow's bytes, as [[PackedRow]] or a streaming processor
 * writes them) read back as a struct of `schema`, in place.
 */
case class UnpackedRow(child: Expression, schema: StructType) extends UnaryExpression {
  override def nullable: Boolean = child.nullable
  override def dataType: DataType = schema
  override protected def nullSafeEval(input: Any): Any = {
    val bytes = input.asInstanceOf[Array[Byte]]
    val row = new UnsafeRow(schema.length)
    row.pointTo(bytes, bytes.length)
    row
  }

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val rowClass = classOf[UnsafeRow].getName
    val row = ctx.freshName("unpacked")
    nullSafeCodeGen(ctx, ev, bytes => s"""
      $rowClass $row = new $rowClass(${schema.length});
      $row.pointTo($bytes, $bytes.length);
      ${ev.value} = $row;""")
  }

  override protected def withNewChildInternal(newChild: Expression): UnpackedRow = copy(child = newChild)
}

/**
 * Storm's window view around aggregates (`TupleWindow.getNew()` and `getExpired()`):
 * `new_rows(e)` is `e` with every aggregate in it over the rows of a window that were not in the
 * key's previous window, `expired_rows(e)` over the previous window's rows that are not in it.
 * Only inside an aggregation grouped by Storm's windows, whose rules replace it by the value;
 * never evaluated.
 */
case class WindowView(child: Expression, view: WindowView.View) extends UnaryExpression with Unevaluable {
  override def dataType: DataType = child.dataType
  override def nullable: Boolean = child.nullable
  override lazy val resolved: Boolean = childrenResolved
  override def checkInputDataTypes(): TypeCheckResult = TypeCheckResult.TypeCheckFailure(WindowGroupingExpression.NoExtension)
  override def prettyName: String = view.name
  override def sql: String = s"$prettyName(${child.sql})"
  override def toString: String = s"$prettyName($child)"
  override protected def withNewChildInternal(newChild: Expression): WindowView = copy(child = newChild)
}

object WindowView {
  /** Which rows of a window an aggregate is over. */
  sealed abstract class View(val name: String) extends Serializable
  /** All of the window's rows: a plain aggregate. */
  case object All extends View("all_rows")
  case object New extends View("new_rows")
  case object Expired extends View("expired_rows")
}
