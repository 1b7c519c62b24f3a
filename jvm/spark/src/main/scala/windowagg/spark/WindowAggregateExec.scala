package windowagg.spark

import org.apache.spark.internal.Logging
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.physical.{AllTuples, Distribution, Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.LongType
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.ListedWindows
import windowagg.core.{Reaching, RowWindowCursor, Timed, WindowCursor}
import windowagg.spark.common.{AggregateBeforeShuffle, NotWindowed, RowIntake, SparkAggregates, TimeColumn, WindowAggregate,
  WindowView, WindowsOfKey}

/**
 * Physical windowed aggregation for any kind of window: the child is clustered by the keys and
 * sorted by (keys, time), so each partition is streamed once; per key, the kind's cursor produces
 * every window from partial aggregates, one per partial time (a distinct time, or a slice), or
 * one per row for kinds cut at rows, whose rows are also sorted by the tie-break column and then
 * by the values the aggregates read, so that the rows a window cuts through never depend on
 * arrival order. Memory per task is bounded by the partials of one window, not by the rows of a key.
 *
 * The child gives rows, or with `partials` the partials aggregated before the shuffle
 * ([[windowagg.spark.common.AggregateBeforeShuffle]]): per (keys, partial time) a row count and the aggregates' buffers,
 * sorted by (keys, partial time), merged here as rows would be folded. `choice` says which, and why.
 *
 * `aggregation` is what to compute, the logical node as the analyzer built it (over its input's
 * columns: [[windowagg.spark.common.WindowAggregate.overInputColumns]]). Each window's output
 * row is `result`: expressions of its output (the keys, the window bounds and the aggregates'
 * values), by default those columns themselves.
 */
case class WindowAggregateExec(
    aggregation: WindowAggregate,
    result: Seq[NamedExpression],
    partials: Option[AggregateBeforeShuffle.Partials],
    choice: AggregateBeforeShuffle.Choice,
    child: SparkPlan)
  extends UnaryExecNode {
  import aggregation.{keys, time, gap, listing, timeColumn, windows, functions, filters, views, windowStart, windowEnd, aggregateOutput}

  override def output: Seq[Attribute] = result.map(_.toAttribute)

  override def producedAttributes: AttributeSet = AttributeSet(Seq(windowStart, windowEnd) ++ aggregateOutput)

  // Partials carry the aggregates' buffers, not the columns the aggregates read. (The aggregation's
  // expressions are not among this node's own, which are only `result`.)
  override lazy val references: AttributeSet = partials match {
    case Some(p) => AttributeSet(keys ++ Seq(p.partialTime, p.rowCount) ++ p.listing ++ result.flatMap(_.references))
    case None => aggregation.references ++ (AttributeSet(result.flatMap(_.references)) -- aggregation.outputSet)
  }

  // Two operators of the same aggregation over the same input are the same whatever their expression ids.
  override protected def doCanonicalize(): SparkPlan =
    super.doCanonicalize().asInstanceOf[WindowAggregateExec].copy(aggregation = aggregation.canonicalized.asInstanceOf[WindowAggregate])

  // Keys pass through unchanged, so the child's clustering by them holds while the result keeps them.
  override def outputPartitioning: Partitioning =
    if (keys.forall(outputSet.contains)) child.outputPartitioning else UnknownPartitioning(child.outputPartitioning.numPartitions)

  override def requiredChildDistribution: Seq[Distribution] =
    if (keys.isEmpty) AllTuples :: Nil else SparkInternals.clusteredDistribution(keys) :: Nil

  override def requiredChildOrdering: Seq[Seq[SortOrder]] = {
    val order = partials match {
      case Some(p) => keys :+ p.partialTime
      case None => keys ++ (time +: aggregation.tieOrder(child.output))
    }
    Seq(order.map(SortOrder(_, Ascending)))
  }

  override def simpleString(maxFields: Int): String =
    s"WindowAggregate '${aggregation.definition.spec}' keys=${keys.mkString("[", ", ", "]")} " +
      s"aggregates=${functions.map(_.sql).mkString("[", ", ", "]")} output=${result.mkString("[", ", ", "]")} input=$choice"

  override lazy val metrics: Map[String, SQLMetric] = // names: WindowAggregateExec.metricNames
    Map("inputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows")) ++
      NotWindowed.inBatch.map(n => n.metric -> SQLMetrics.createMetric(sparkContext, n.description)) +
      ("windows" -> SQLMetrics.createMetric(sparkContext, "number of output windows"))

  override protected def doExecute(): RDD[InternalRow] = {
    val counters = new RowCounters(longMetric("inputRows"), NotWindowed.inBatch.map(n => n -> longMetric(n.metric)).toMap)
    val windowCount = longMetric("windows")
    val childOutput = child.output
    def ordinal(a: Attribute): Int = {
      val i = childOutput.indexWhere(_.exprId == a.exprId)
      assert(i >= 0, s"$a is not in ${childOutput.mkString(", ")}")
      i
    }
    // partials: their partial time stands for the time (a partial time is its own), then their count and buffers
    val timeOrdinal = ordinal(partials.fold(time)(_.partialTime))
    val countOrdinal = partials.map(p => ordinal(p.rowCount))
    val gapOrdinal = if (partials.isDefined) None else gap.map(ordinal)
    val listingColumn = partials.fold(listing)(_.listing).map(l => (ordinal(l), l.dataType))
    val gapType = gap.map(_.dataType)
    val intakeTime = if (partials.isDefined) TimeColumn(LongType, None) else timeColumn
    val (keys_, functions_, filters_, windows_) = (keys, functions, filters, windows)
    val (rowWindows_, listed_) = (aggregation.engine.cutAtRows, aggregation.engine.listed)
    val withViews = aggregation.withViews
    val keysAndBounds = keys ++ Seq(windowStart, windowEnd)
    val (aggregateOutput_, views_, result_) = (aggregateOutput, views, result)

    child.execute().mapPartitionsWithIndex { (partition, rows) =>
      val aggregates = new SparkAggregates(functions_, filters_, childOutput, partition, countOrdinal.map(_ + 1))
      val keyProjection = UnsafeProjection.create(keys_.map(BindReferences.bindReference(_: Expression, childOutput)))
      val intake = new RowIntake(windows_, intakeTime, timeOrdinal, gapOrdinal, gapType, listingColumn)
      val rowCount: InternalRow => Long = countOrdinal match {
        case Some(i) => _.getLong(i)
        case None => _ => 1L
      }
      val keyWindows = new WindowsOfKey(windows_, keys_.map(_.dataType))
      val groups = new TimeGroups(rows, keyProjection, intake, keyWindows, rowCount, aggregates, counters, perRow = rowWindows_.isDefined,
        listed = listed_)
      // One projection writes each output row, `result`, from (key, bounds, the buffer of each view in use).
      val bufferViews: Seq[WindowView.View] = if (withViews) Seq(WindowView.All, WindowView.New, WindowView.Expired) else Seq(WindowView.All)
      val buffers = bufferViews.map(_ => aggregates.newBufferAttributes())
      val resultsOf = bufferViews.zip(buffers).zipWithIndex.map { case ((view, buffer), i) =>
        view -> aggregates.resultExpressions(buffer, keysAndBounds.length + i * buffer.length)
      }.toMap
      val valueOf: Map[ExprId, Expression] = aggregateOutput_.zip(views_).zipWithIndex.map { case ((attribute, view), i) =>
        attribute.exprId -> resultsOf(view)(i)
      }.toMap
      val outputProjection = UnsafeProjection.create(
        result_.map(_.transform { case a: Attribute if valueOf.contains(a.exprId) => valueOf(a.exprId) }),
        keysAndBounds ++ buffers.flatten)
      // per key: its key and the window bounds in one row, the bounds set in place per window
      val prefixOf = UnsafeProjection.create(
        keys_.zipWithIndex.map { case (k, i) => BoundReference(i, k.dataType, k.nullable) } ++ Seq(Literal(0L), Literal(0L)))
      val startOrdinal = keys_.length
      var prefix: UnsafeRow = null
      // a single join of two rows (the buffers of several views joined among themselves)
      val allAndNew = new JoinedRow
      val viewBuffers = new JoinedRow(allAndNew, null)
      val input = new JoinedRow(null, if (withViews) viewBuffers else null)

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
                case None => keyWindows(groups.key).cursor(groups.partialsOfKey, aggregates)
              }
              prefix = prefixOf(groups.key)
              input.withLeft(prefix)
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
          prefix.setLong(startOrdinal, cursor.start)
          prefix.setLong(startOrdinal + 1, cursor.end)
          if (withViews) {
            allAndNew(cursor.aggregate, rowCursor.newRows)
            viewBuffers.withRight(rowCursor.expiredRows)
          } else input.withRight(cursor.aggregate)
          windowCount += 1
          outputProjection(input)
        }
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): WindowAggregateExec =
    copy(child = newChild)
}

object WindowAggregateExec {
  val metricNames: Seq[String] = "inputRows" +: NotWindowed.inBatch.map(_.metric) :+ "windows"
}

/** The operator's row counters: every input row, and those not windowed, by why. */
private final class RowCounters(input: SQLMetric, notWindowed: Map[NotWindowed, SQLMetric]) extends Serializable {
  def read(rows: Long): Unit = input += rows
  def left(why: NotWindowed, rows: Long): Unit = notWindowed(why) += rows
}

/**
 * Turns a partition's rows (or partials), sorted by (key, time), into per-key runs of partial
 * aggregates, one per partial time of the kind (a distinct time, or a slice), or one per row when
 * `perRow`, with their reach. Each row is folded into its partial as soon as it is read, so no row
 * is copied or held; rows the definition does not window are counted and skipped.
 */
private final class TimeGroups(
    rows: Iterator[InternalRow],
    keyProjection: UnsafeProjection,
    intake: RowIntake,
    keyWindows: WindowsOfKey,
    rowCount: InternalRow => Long,
    aggregates: SparkAggregates,
    counters: RowCounters,
    perRow: Boolean,
    listed: Option[ListedWindows.Resolved]) extends Logging {

  // The partial being built, and the one completed before it (read ahead by one group).
  private var buildingKey: UnsafeRow = _
  private var buildingTime = 0L
  private var buildingReach = 0L
  private var buildingBuffer: InternalRow = _
  private var buildingListed: Array[Long] = _
  private var completed: Reaching[InternalRow] = _
  private var completedKey: UnsafeRow = _
  private var currentKey: UnsafeRow = _
  private val skipped = scala.collection.mutable.LinkedHashMap.empty[NotWindowed, Long]

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
  def countUnwindowed(): Unit = skip(NotWindowed.NoWindow, 1L)

  private def skip(why: NotWindowed, rows: Long): Unit = {
    counters.left(why, rows)
    skipped(why) = skipped.getOrElse(why, 0L) + rows
  }

  def finish(): Unit = {
    skipped.foreach { case (why, rows) =>
      // rows between Storm's windows, or times a kind leaves out, are the definition's own doing, not bad data
      val message = s"windowagg: $rows ${why.description} (metric ${why.metric})"
      if (why == NotWindowed.NoWindow) logInfo(message) else logWarning(message)
    }
    skipped.clear()
  }

  /** Ensures `completed` holds the next finished partial if there is one. */
  private def fill(): Boolean = {
    while (completed == null && (rows.hasNext || buildingBuffer != null)) {
      if (!rows.hasNext) complete()
      else {
        val row = rows.next()
        val n = rowCount(row)
        counters.read(n)
        val key = keyProjection(row)
        intake.use(keyWindows(key))
        val why = intake.classify(row)
        if (why != null) skip(why, n) else add(row, key, intake.partialTime, intake.reach, intake.listedWindows)
      }
    }
    completed != null
  }

  private def add(row: InternalRow, key: UnsafeRow, t: Long, reach: Long, listedWindows: Array[Long]): Unit = {
    if (buildingBuffer != null && !perRow && t == buildingTime && key == buildingKey) {
      listed.foreach(_.checkSame(t, buildingListed, listedWindows))
      aggregates.update(buildingBuffer, row)
      buildingReach = math.max(buildingReach, reach)
    } else {
      val sameKey = buildingBuffer != null && key == buildingKey
      if (buildingBuffer != null) complete()
      buildingKey = if (sameKey) completedKey else key.copy()
      buildingTime = t
      buildingReach = reach
      buildingListed = listedWindows
      buildingBuffer = aggregates.newEmpty()
      aggregates.update(buildingBuffer, row)
    }
  }

  private def complete(): Unit = {
    completed = Reaching(buildingTime, buildingReach, buildingBuffer, buildingListed)
    completedKey = buildingKey
    buildingBuffer = null
  }
}
