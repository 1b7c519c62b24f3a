package windowagg.spark

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.types._

import windowagg.{ResolvedWindows, WindowDefinition}
import windowagg.core.WindowError

/**
 * The grouping key `window(ts, definition)`: which windows a row of a windowed aggregation
 * belongs to. It has no per-row value (a sliding window depends on the other rows), so it is
 * never evaluated: the analyzer rules turn the aggregation that groups by it into a
 * [[SlidingWindowAggregate]]. Its type is the `window` column's: struct<start, end>.
 */
case class WindowGroupingExpression(
    timeColumn: Expression,
    definition: WindowDefinition,
    options: WindowOptions)
  extends UnaryExpression with Unevaluable with NonSQLExpression {

  override def child: Expression = timeColumn
  override def nullable: Boolean = false
  override def prettyName: String = "sliding_window"
  override def toString: String = s"sliding_window($timeColumn, $definition, $options)"

  /** Checks the time column and the definition; errors name the problem. */
  def validated: (TimeColumn, ResolvedWindows) = {
    val time = TimeColumn.of(timeColumn.dataType, options.timeUnit, s"'${timeColumn.sql}'")
    val windows =
      try definition.resolve(time.unit)
      catch { case e: WindowError => throw WindowAggException(s"${e.message} (time column '${timeColumn.sql}')", e) }
    if (time.isTimestamp) definition match {
      case s: windowagg.SlidingWindows if s.size.isInstanceOf[windowagg.core.TimeSpan.OfTicks] =>
        throw WindowAggException(
          s"time column '${timeColumn.sql}' is ${timeColumn.dataType.sql}: give the window size as a duration " +
            "such as '10 minutes', not a number of ticks")
      case _ =>
    }
    (time, windows)
  }

  override def dataType: DataType = {
    val windowType = timeColumn.dataType match {
      case t @ (TimestampType | TimestampNTZType) => t
      case _ => LongType
    }
    WindowGroupingExpression.structType(windowType)
  }

  override protected def withNewChildInternal(newChild: Expression): WindowGroupingExpression =
    copy(timeColumn = newChild)
}

object WindowGroupingExpression {
  val ColumnName = "window"
  def structType(windowType: DataType): StructType = StructType(Seq(
    StructField("start", windowType, nullable = false),
    StructField("end", windowType, nullable = false)))
}
