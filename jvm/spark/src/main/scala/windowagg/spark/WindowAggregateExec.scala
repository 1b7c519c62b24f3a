package windowagg.spark

import org.apache.spark.internal.Logging
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.plans.physical.{AllTuples, Distribution, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{CalendarIntervalType, DataType, DayTimeIntervalType}
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.{ResolvedWindows, RowWindows}
import windowagg.core.{Reaching, RowWindowCursor, Timed, WindowCursor}

/**
 * Physical windowed aggregation for any kind of window: the child is clustered by the keys and
 * sorted by (keys, time), so each partition is streamed once; per key, the kind's cursor produces
 * every window from partial aggregates, one per partial time (a distinct time, or a slice), or
 * one per row for kinds cut at rows, whose rows are also sorted by the tie-break column and then
 * by the values the aggregates read, so that the rows a window cuts through never depend on
 * arrival order. Memory per task is bounded by the partials of one window, not by the rows of a key.
 */
case class WindowAggregateExec(
    keys: Seq[Attribute],
    time: Attribute,
    gap: Option[Attribute],
    tieBreak: Option[Attribute],
    timeColumn: TimeColumn,
    windows: ResolvedWindows,
    functions: Seq[AggregateFunction],
    filters: Seq[Expression],
    views: Seq[WindowView.View],
    windowStart: Attribute,
    windowEnd: Attribute,
    aggregateOutput: Seq[Attribute],
    child: SparkPlan)
  extends UnaryExecNode {

  override def output: Seq[Attribute] = keys ++ Seq(windowStart, windowEnd) ++ aggregateOutput

  override def producedAttributes: AttributeSet = AttributeSet(Seq(windowStart, windowEnd) ++ aggregateOutput)

  // Keys pass through unchanged, so the child's clustering by them still holds.
  override def outputPartitioning: Partitioning = child.outputPartitioning

  override def requiredChildDistribution: Seq[Distribution] =
    if (keys.isEmpty) AllTuples :: Nil else SparkInternals.clusteredDistribution(keys) :: Nil

  private def rowWindows: Option[RowWindows] = windows match {
    case r: RowWindows => Some(r)
    case _ => None
  }

  /** Rows sharing a time: by the tie-break column, then (kinds cut at rows) by the aggregates' inputs in binary form. */
  private def tieOrder: Seq[Expression] = {
    val inputs = AttributeSet((functions ++ filters).flatMap(_.references))
    tieBreak.toSeq ++ rowWindows.map(_ => PackedRow(child.output.filter(inputs.contains))).toSeq
  }

  override def requiredChildOrdering: Seq[Seq[SortOrder]] =
    Seq((keys ++ (time +: tieOrder)).map(SortOrder(_, Ascending)))

  override lazy val metrics: Map[String, SQLMetric] = Map( // names: WindowAggregateExec.metricNames
    "inputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows"),
    "nullTimeRows" -> SQLMetrics.createMetric(sparkContext, "rows with a null time (not windowed)"),
    "invalidGapRows" -> SQLMetrics.createMetric(sparkContext, "rows with a null or non-positive session gap (not windowed)"),
    "unwindowedRows" -> SQLMetrics.createMetric(sparkContext, "rows in no window of the definition (not windowed)"),
    "windows" -> SQLMetrics.createMetric(sparkContext, "number of output windows"))

  override protected def doExecute(): RDD[InternalRow] = {
    val counters = RowCounters(longMetric("inputRows"), longMetric("nullTimeRows"), longMetric("invalidGapRows"),
      longMetric("unwindowedRows"))
    val windowCount = longMetric("windows")
    val childOutput = child.output
    val timeOrdinal = childOutput.indexWhere(_.exprId == time.exprId)
    val gapOrdinal = gap.map(g => childOutput.indexWhere(_.exprId == g.exprId))
    val gapType = gap.map(_.dataType)
    val (keys_, functions_, filters_, timeColumn_, windows_, output_) = (keys, functions, filters, timeColumn, windows, output)
    val rowWindows_ = rowWindows
    val views_ = views.toArray
    val withViews = views.exists(_ != WindowView.All)
    assert(timeOrdinal >= 0 && gapOrdinal.forall(_ >= 0))

    child.execute().mapPartitionsWithIndex { (partition, rows) =>
      val aggregates = new SparkAggregates(functions_, filters_, childOutput, partition)
      val keyProjection = UnsafeProjection.create(keys_.map(BindReferences.bindReference(_: Expression, childOutput)))
      val reach = WindowAggregateExec.reachOf(windows_, gapOrdinal, gapType)
      val groups = new TimeGroups(rows, keyProjection, timeOrdinal, timeColumn_.reader(timeOrdinal), windows_, reach,
        aggregates, counters, perRow = rowWindows_.isDefined, readsGap = gapOrdinal.isDefined)
      val outputProjection = UnsafeProjection.create(output_.map(_.dataType).toArray)
      val outputRow = new SpecificInternalRow(output_.map(_.dataType))
      val keyTypes = keys_.map(_.dataType).toArray
      val resultStart = keyTypes.length + 2
      val resultTypes = functions_.map(_.dataType).toArray

      new Iterator[InternalRow] {
        private var cursor: WindowCursor[InternalRow] = _
        private var rowCursor: RowWindowCursor[InternalRow] = _ // the same cursor, for kinds cut at rows
        private var ready = false

        override def hasNext: Boolean = {
          while (!ready) {
            if (cursor != null && cursor.advance()) ready = true
            else if (groups.startNextKey()) {
              cursor = rowWindows_ match {
                case Some(kind) =>
                  rowCursor = kind.rowCursor(0L, groups.partialsOfKey.map(p => Timed(p.time, p.partial)), aggregates,
                    until = None, views = withViews)(_ => groups.countUnwindowed())
                  rowCursor
                case None => windows_.cursor(groups.partialsOfKey, aggregates)
              }
              var i = 0
              while (i < keyTypes.length) {
                outputRow.update(i, groups.key.get(i, keyTypes(i)))
                i += 1
              }
            } else {
              groups.finish()
              return false
            }
          }
          true
        }

        override def next(): InternalRow = {
          if (!hasNext) throw new NoSuchElementException
          ready = false
          // window bounds are longs internally for TIMESTAMP, TIMESTAMP_NTZ and BIGINT alike
          outputRow.setLong(keyTypes.length, cursor.start)
          outputRow.setLong(keyTypes.length + 1, cursor.end)
          results(WindowView.All, cursor.aggregate)
          if (withViews) {
            results(WindowView.New, rowCursor.newRows)
            results(WindowView.Expired, rowCursor.expiredRows)
          }
          windowCount += 1
          outputProjection(outputRow)
        }

        /** The values of the aggregates over `view`'s rows, from `buffer` (each evaluation reuses the result row). */
        private def results(view: WindowView.View, buffer: InternalRow): Unit = {
          val result = aggregates.result(buffer)
          var i = 0
          while (i < resultTypes.length) {
            if (views_(i) == view) outputRow.update(resultStart + i, result.get(i, resultTypes(i)))
            i += 1
          }
        }
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): WindowAggregateExec =
    copy(child = newChild)
}

object WindowAggregateExec {
  val metricNames: Seq[String] = Seq("inputRows", "nullTimeRows", "invalidGapRows", "unwindowedRows", "windows")

  /** The reach of a row whose own session gap is null or not positive: the row is not windowed. */
  val NoReach: Long = Long.MinValue

  /**
   * How far a row keeps its window open (the kind's reach: sessions' t + gap), or [[NoReach]] when
   * the row's own length (a per-row session gap) is null or not positive; without a per-row length,
   * NoReach is a real reach (a row at Long.MinValue). A plain method on longs:
   * it runs for every input row, so nothing is boxed.
   */
  trait RowReach extends Serializable {
    def apply(row: InternalRow, time: Long): Long
  }

  def reachOf(windows: ResolvedWindows, lengthOrdinal: Option[Int], lengthType: Option[DataType]): RowReach =
    (lengthOrdinal, lengthType) match {
      case (Some(ordinal), Some(dataType)) =>
        val readLength: InternalRow => Long = dataType match {
          case _: DayTimeIntervalType => _.getLong(ordinal) // microseconds, the ticks of a timestamp
          case CalendarIntervalType => row => {
            val i = row.getInterval(ordinal) // months have no fixed length: such a length counts as invalid
            if (i.months != 0) -1L
            else
              try Math.addExact(Math.multiplyExact(i.days.toLong, 86400000000L), i.microseconds)
              catch { case _: ArithmeticException => if (i.days > 0) Long.MaxValue else -1L } // beyond every time, not wrapped
          }
          case other => TimeColumn(other, None).reader(ordinal)
        }
        (row, t) =>
          if (row.isNullAt(ordinal)) NoReach
          else {
            val length = readLength(row)
            if (length <= 0) NoReach else windows.reach(t, length)
          }
      case _ => (_, t) => windows.reach(t, 0L)
    }
}

/** The operator's row counters: every input row, and those not windowed and why. */
private final case class RowCounters(input: SQLMetric, nullTime: SQLMetric, invalidGap: SQLMetric, unwindowed: SQLMetric)

/**
 * Turns a partition's rows, sorted by (key, time), into per-key runs of partial aggregates, one
 * per partial time of the kind (a distinct time, or a slice), or one per row when `perRow`, with
 * their reach. Each row is folded into its partial as soon as it is read, so no row is copied or
 * held; rows with a null time, or a null or non-positive session gap, are counted and skipped.
 */
private final class TimeGroups(
    rows: Iterator[InternalRow],
    keyProjection: UnsafeProjection,
    timeOrdinal: Int,
    readTime: InternalRow => Long,
    windows: ResolvedWindows,
    reachOf: WindowAggregateExec.RowReach,
    aggregates: SparkAggregates,
    counters: RowCounters,
    perRow: Boolean,
    readsGap: Boolean) extends Logging {

  // The partial being built, and the one completed before it (read ahead by one group).
  private var buildingKey: UnsafeRow = _
  private var buildingTime = 0L
  private var buildingReach = 0L
  private var buildingBuffer: InternalRow = _
  private var completed: Reaching[InternalRow] = _
  private var completedKey: UnsafeRow = _
  private var currentKey: UnsafeRow = _
  private var skippedNullTime = 0L
  private var skippedGap = 0L
  private var skippedUnwindowed = 0L
  // whether the definition has windows for the partial time last asked about (asked once per partial time)
  private var heldTime = 0L
  private var held = false
  private var heldKnown = false

  /** The key whose partials `partialsOfKey` yields. */
  def key: UnsafeRow = currentKey

  /** Moves to the next key with at least one row; false at the end of the partition. */
  def startNextKey(): Boolean = {
    // Drain what is left of the current key (a sweep stops early only on errors).
    while (fill() && (completedKey eq currentKey)) completed = null
    if (completed == null) false
    else {
      currentKey = completedKey
      true
    }
  }

  val partialsOfKey: Iterator[Reaching[InternalRow]] = new Iterator[Reaching[InternalRow]] {
    override def hasNext: Boolean = fill() && (completedKey eq currentKey)
    override def next(): Reaching[InternalRow] = {
      if (!hasNext) throw new NoSuchElementException
      val result = completed
      completed = null
      result
    }
  }

  /** Counts a row the kind's windows left out (kinds cut at rows know only after reading on). */
  def countUnwindowed(): Unit = {
    counters.unwindowed += 1
    skippedUnwindowed += 1
  }

  def finish(): Unit = {
    if (skippedNullTime > 0) {
      logWarning(s"windowagg: $skippedNullTime row(s) with a null time were not windowed (metric nullTimeRows)")
      skippedNullTime = 0
    }
    if (skippedGap > 0) {
      logWarning(s"windowagg: $skippedGap row(s) with a null or non-positive session gap were not windowed (metric invalidGapRows)")
      skippedGap = 0
    }
    // rows between Storm's windows, or times a kind leaves out, are the definition's own doing, not bad data
    if (skippedUnwindowed > 0) {
      logInfo(s"windowagg: $skippedUnwindowed row(s) fell in no window of the definition (metric unwindowedRows)")
      skippedUnwindowed = 0
    }
  }

  /** Ensures `completed` holds the next finished partial if there is one. */
  private def fill(): Boolean = {
    while (completed == null && (rows.hasNext || buildingBuffer != null)) {
      if (!rows.hasNext) complete()
      else {
        val row = rows.next()
        counters.input += 1
        if (row.isNullAt(timeOrdinal)) {
          counters.nullTime += 1
          skippedNullTime += 1
        } else {
          val t = readTime(row)
          val reach = reachOf(row, t)
          // only a row's own gap makes NoReach: otherwise it is the reach of a row at Long.MinValue
          if (readsGap && reach == WindowAggregateExec.NoReach) {
            counters.invalidGap += 1
            skippedGap += 1
          } else {
            val partialTime = windows.partialTime(t)
            if (holds(partialTime)) add(row, partialTime, reach)
            else countUnwindowed()
          }
        }
      }
    }
    completed != null
  }

  private def holds(partialTime: Long): Boolean = {
    if (!heldKnown || partialTime != heldTime) {
      held = windows.holds(partialTime)
      heldTime = partialTime
      heldKnown = true
    }
    held
  }

  private def add(row: InternalRow, t: Long, reach: Long): Unit = {
    val key = keyProjection(row)
    if (buildingBuffer != null && !perRow && t == buildingTime && key == buildingKey) {
      aggregates.update(buildingBuffer, row)
      buildingReach = math.max(buildingReach, reach)
    } else {
      val sameKey = buildingBuffer != null && key == buildingKey
      if (buildingBuffer != null) complete()
      buildingKey = if (sameKey) completedKey else key.copy()
      buildingTime = t
      buildingReach = reach
      buildingBuffer = aggregates.newEmpty()
      aggregates.update(buildingBuffer, row)
    }
  }

  private def complete(): Unit = {
    completed = Reaching(buildingTime, buildingReach, buildingBuffer)
    completedKey = buildingKey
    buildingBuffer = null
  }
}
