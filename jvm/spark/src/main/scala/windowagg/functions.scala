package windowagg

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{Column, DataFrame, Dataset, SparkSession}
import org.apache.spark.sql.functions.col

import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.spark.{WindowAggregateExec, streaming}
import windowagg.spark.common.{WindowGroupingExpression, WindowOptions, WindowView}

/**
 * The Scala (and py4j) API. Use a window as a grouping key, like Spark's own `window()`:
 * {{{
 *   import windowagg.functions.window
 *   df.groupBy(col("user"), window(col("ts"), SlidingWindows.of("10 minutes"))).agg(sum("amount"))
 * }}}
 * The result has the keys, a `window` struct (start, end) and the aggregates. The session needs
 * the extension `windowagg.spark.WindowAggExtensions`.
 */
object functions {
  /**
   * The windows of `definition` (e.g. `SlidingWindows.of("10 minutes")`,
   * `SessionWindows.withInactivityGap("5 minutes")`, `TimeWindows.of("1 hour").advanceBy("10 seconds")`,
   * `CumulativeWindows.of("1 hour", "1 day")`, or a user's own [[EnumerableWindowDefinition]]) over
   * the time column, as a grouping key named `window`.
   */
  def window(timeColumn: Column, definition: WindowDefinition): Column =
    windowColumn(timeColumn, definition, WindowOptions())

  /** As `window(timeColumn, definition)`, for an integral time column in `timeUnit` ('milliseconds', 'microseconds' or 'seconds'), which durations and dates need. */
  def window(timeColumn: Column, definition: WindowDefinition, timeUnit: String): Column =
    windowColumn(timeColumn, definition, WindowOptions(timeUnit = Option(timeUnit)))

  /**
   * As `window(timeColumn, definition)`, with options: "timeUnit" (of an integral time column),
   * and for streaming "emit" ("final": each window once when final, append output mode;
   * "updates": changed windows every micro-batch, update output mode; "every 10 seconds": open
   * windows' running values at most once per interval, then their final value, with `is_final`,
   * update output mode) and "lateRows" ("count":
   * counted in the query's observed metrics "windowagg"; "emit": also output as rows with
   * `late_reason` and `late_row`).
   */
  def window(timeColumn: Column, definition: WindowDefinition, options: java.util.Map[String, String]): Column =
    windowColumn(timeColumn, definition, WindowOptions.from(Option(options).map(_.asScala).getOrElse(Map.empty)))

  def window(timeColumn: Column, definition: WindowDefinition, options: Map[String, String]): Column =
    windowColumn(timeColumn, definition, WindowOptions.from(options))

  /**
   * Windows each row lists in `listing` ([[ListedWindows]]): an array of structs (start, end) of
   * the time column's type (BIGINT ticks for an integral time column), computed by any expression.
   * A null or empty array puts the row in no window.
   */
  def window(timeColumn: Column, definition: WindowDefinition, listing: Column): Column =
    windowColumn(timeColumn, definition, WindowOptions(), Some(listing))

  /** As `window(timeColumn, definition, listing)`, with the options of `window(timeColumn, definition, options)`. */
  def window(timeColumn: Column, definition: WindowDefinition, listing: Column, options: java.util.Map[String, String]): Column =
    windowColumn(timeColumn, definition, WindowOptions.from(Option(options).map(_.asScala).getOrElse(Map.empty)), Some(listing))

  def window(timeColumn: String, definition: WindowDefinition): Column = window(col(timeColumn), definition)

  def window(timeColumn: String, definition: WindowDefinition, timeUnit: String): Column =
    window(col(timeColumn), definition, timeUnit)

  /**
   * Storm's `TupleWindow.getNew()`: `aggregate` (e.g. `count(lit(1))`) over the rows of each window
   * that were not in the key's previous window. For Storm's windows (CountWindows, DurationWindows).
   */
  def newRows(aggregate: Column): Column = view(aggregate, WindowView.New)

  /** Storm's `TupleWindow.getExpired()`: `aggregate` over the previous window's rows that are not in this one. */
  def expiredRows(aggregate: Column): Column = view(aggregate, WindowView.Expired)

  private def view(aggregate: Column, view: WindowView.View): Column = {
    if (aggregate == null) throw new IllegalArgumentException(s"${view.name} needs an aggregate column")
    SparkInternals.column(WindowView(SparkInternals.expression(aggregate), view))
  }

  /**
   * Counters of the windowagg operators of `df`'s executed plan, after an action on it:
   * inputRows, nullTimeRows (rows with a null time, which are not windowed) and windows.
   */
  def metrics(df: Dataset[_]): java.util.Map[String, java.lang.Long] =
    WindowAggregateExec.metricNames.map { name =>
      val operators = SparkInternals.collectOperators(SparkInternals.executedPlan(df)) {
        case e: WindowAggregateExec => e
      }
      name -> java.lang.Long.valueOf(operators.map(_.metrics(name).value).sum)
    }.toMap.asJava

  /**
   * What the streaming windowed aggregation whose checkpoint is at `checkpoint` holds for each key,
   * as of its latest committed micro-batch: a batch DataFrame with the keys, each open window
   * (`window`) and its aggregates' current values (named and typed as the query's), the rows the key
   * holds back (`held_rows`), when the key is next looked at (`next_close`: the watermark must pass
   * it), and the state record (`state`). SQL: `windowagg_state('checkpoint')`.
   */
  def readState(spark: SparkSession, checkpoint: String): DataFrame =
    streaming.StateReader.read(spark, checkpoint, None, None)

  /**
   * As `readState(spark, checkpoint)`, as of the committed micro-batch `batchId`, for the windowed
   * aggregation `aggregation` of a query that has several (in the order of its plan, from 0).
   */
  def readState(spark: SparkSession, checkpoint: String, batchId: Long, aggregation: Int): DataFrame =
    streaming.StateReader.read(spark, checkpoint, Some(batchId), Some(aggregation))

  /** As `readState(spark, checkpoint)`, as of the committed micro-batch `batchId`. */
  def readState(spark: SparkSession, checkpoint: String, batchId: Long): DataFrame =
    streaming.StateReader.read(spark, checkpoint, Some(batchId), None)

  private def windowColumn(timeColumn: Column, definition: WindowDefinition, options: WindowOptions,
      listing: Option[Column] = None): Column = {
    if (definition == null) throw new IllegalArgumentException("the window definition must not be null")
    if (listing.exists(_ == null)) throw new IllegalArgumentException("the column listing the windows must not be null")
    val rowLength = definition.rowLengthColumn.map(name => SparkInternals.expression(col(name)))
    val tieBreak = definition.tieBreakColumn.map(name => SparkInternals.expression(col(name)))
    val listed = listing.orElse(definition.listingColumn.map(col)).map(SparkInternals.expression)
    SparkInternals.column(
      WindowGroupingExpression(SparkInternals.expression(timeColumn), definition, options, rowLength, tieBreak, listed),
      WindowGroupingExpression.ColumnName)
  }
}
