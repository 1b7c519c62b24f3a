package windowagg.spark

import org.apache.spark.internal.Logging
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.plans.physical.{AllTuples, ClusteredDistribution, Distribution, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import windowagg.ResolvedWindows
import windowagg.core.{SlidingWindowSweep, Timed}

/**
 * Physical sliding-window aggregation: the child is clustered by the keys and sorted by
 * (keys, time), so each partition is streamed once; per key, the core's sweep produces every
 * window from per-time partial aggregates. Memory per task is bounded by the distinct times of one
 * window, not by the rows of a key.
 */
case class SlidingWindowAggregateExec(
    keys: Seq[Attribute],
    time: Attribute,
    timeColumn: TimeColumn,
    windows: ResolvedWindows,
    functions: Seq[AggregateFunction],
    filters: Seq[Expression],
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
    if (keys.isEmpty) AllTuples :: Nil else ClusteredDistribution(keys) :: Nil

  override def requiredChildOrdering: Seq[Seq[SortOrder]] =
    Seq(keys.map(SortOrder(_, Ascending)) :+ SortOrder(time, Ascending))

  override lazy val metrics: Map[String, SQLMetric] = Map( // names: SlidingWindowAggregateExec.metricNames
    "inputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows"),
    "nullTimeRows" -> SQLMetrics.createMetric(sparkContext, "rows with a null time (not windowed)"),
    "windows" -> SQLMetrics.createMetric(sparkContext, "number of output windows"))

  override protected def doExecute(): RDD[InternalRow] = {
    val windowSize = windows match {
      case s: ResolvedWindows.Sliding => s.sizeTicks
    }
    val inputRows = longMetric("inputRows")
    val nullTimeRows = longMetric("nullTimeRows")
    val windowCount = longMetric("windows")
    val childOutput = child.output
    val keyOrdinals = keys.map(k => childOutput.indexWhere(_.exprId == k.exprId))
    val timeOrdinal = childOutput.indexWhere(_.exprId == time.exprId)
    val (keys_, functions_, filters_, timeColumn_, output_) = (keys, functions, filters, timeColumn, output)

    child.execute().mapPartitionsWithIndex { (partition, rows) =>
      val aggregates = new SparkAggregates(
        functions_,
        filters_, childOutput, partition)
      val keyProjection = UnsafeProjection.create(keys_.map(BindReferences.bindReference(_: Expression, childOutput)))
      val readTime = timeColumn_.reader(timeOrdinal)
      val groups = new TimeGroups(rows, keyProjection, timeOrdinal, readTime, aggregates, inputRows, nullTimeRows)
      val outputProjection = UnsafeProjection.create(output_.map(_.dataType).toArray)
      val outputRow = new SpecificInternalRow(output_.map(_.dataType))
      val keyTypes = keys_.map(_.dataType).toArray
      val resultStart = keyTypes.length + 2
      val resultTypes = functions_.map(_.dataType).toArray
      assert(keyOrdinals.forall(_ >= 0) && timeOrdinal >= 0)

      new Iterator[InternalRow] {
        private var sweep: SlidingWindowSweep[InternalRow] = _
        private var ready = false

        override def hasNext: Boolean = {
          while (!ready) {
            if (sweep != null && sweep.advance()) ready = true
            else if (groups.startNextKey()) {
              sweep = new SlidingWindowSweep[InternalRow](windowSize, groups.partialsOfKey, aggregates)
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
          outputRow.setLong(keyTypes.length, sweep.start)
          outputRow.setLong(keyTypes.length + 1, sweep.end)
          val result = aggregates.result(sweep.aggregate)
          var i = 0
          while (i < resultTypes.length) {
            outputRow.update(resultStart + i, result.get(i, resultTypes(i)))
            i += 1
          }
          windowCount += 1
          outputProjection(outputRow)
        }
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SlidingWindowAggregateExec =
    copy(child = newChild)
}

object SlidingWindowAggregateExec {
  val metricNames: Seq[String] = Seq("inputRows", "nullTimeRows", "windows")
}

/**
 * Turns a partition's rows, sorted by (key, time), into per-key runs of per-time partial
 * aggregates. Each row is folded into its partial as soon as it is read, so no row is copied or
 * held; rows with a null time are counted and skipped.
 */
private final class TimeGroups(
    rows: Iterator[InternalRow],
    keyProjection: UnsafeProjection,
    timeOrdinal: Int,
    readTime: InternalRow => Long,
    aggregates: SparkAggregates,
    inputRows: SQLMetric,
    nullTimeRows: SQLMetric) extends Logging {

  // The partial being built, and the one completed before it (read ahead by one group).
  private var buildingKey: UnsafeRow = _
  private var buildingTime = 0L
  private var buildingBuffer: InternalRow = _
  private var completed: Timed[InternalRow] = _
  private var completedKey: UnsafeRow = _
  private var currentKey: UnsafeRow = _
  private var skipped = 0L

  /** The key whose partials `partialsOfKey` yields. */
  def key: UnsafeRow = currentKey

  /** Moves to the next key with at least one row; false at the end of the partition. */
  def startNextKey(): Boolean = {
    // Drain what is left of the current key (the sweep stops early only on errors).
    while (fill() && (completedKey eq currentKey)) completed = null
    if (completed == null) false
    else {
      currentKey = completedKey
      true
    }
  }

  val partialsOfKey: Iterator[Timed[InternalRow]] = new Iterator[Timed[InternalRow]] {
    override def hasNext: Boolean = fill() && (completedKey eq currentKey)
    override def next(): Timed[InternalRow] = {
      if (!hasNext) throw new NoSuchElementException
      val result = completed
      completed = null
      result
    }
  }

  def finish(): Unit = {
    if (skipped > 0) {
      logWarning(s"windowagg: $skipped row(s) with a null time were not windowed (metric nullTimeRows)")
      skipped = 0
    }
  }

  /** Ensures `completed` holds the next finished partial if there is one. */
  private def fill(): Boolean = {
    while (completed == null && (rows.hasNext || buildingBuffer != null)) {
      if (!rows.hasNext) complete()
      else {
        val row = rows.next()
        inputRows += 1
        if (row.isNullAt(timeOrdinal)) {
          nullTimeRows += 1
          skipped += 1
        } else {
          val key = keyProjection(row)
          val t = readTime(row)
          if (buildingBuffer != null && t == buildingTime && key == buildingKey) {
            aggregates.update(buildingBuffer, row)
          } else {
            val sameKey = buildingBuffer != null && key == buildingKey
            if (buildingBuffer != null) complete()
            buildingKey = if (sameKey) completedKey else key.copy()
            buildingTime = t
            buildingBuffer = aggregates.newEmpty()
            aggregates.update(buildingBuffer, row)
          }
        }
      }
    }
    completed != null
  }

  private def complete(): Unit = {
    completed = Timed(buildingTime, buildingBuffer)
    completedKey = buildingKey
    buildingBuffer = null
  }
}
