package windowagg.spark

import java.nio.ByteBuffer

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{BinaryType, DataType}
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.{MergingWindows, RowWindows}
import windowagg.core.{OpenSession, SessionMerging}

/**
 * A streaming aggregation's rows merged before the shuffle, in each partition of a micro-batch, so
 * that the processor's stage shuffles, sorts and reads far fewer rows:
 *  - sessions ([[SessionWindowProcessor]]): a key's rows join in runs (rows each within the gap of
 *    the run so far), shuffled as one row per run: its first and last time, reach and partial;
 *  - kinds swept over partials ([[WindowProcessor]]): a key's rows merge into one partial per
 *    partial time (a slice, or each distinct time for sliding windows), shuffled as one row per key.
 * Only rows that cannot be late and are certain to be in a window merge: a window holding them
 * stays open past the micro-batch's watermark. Other rows (and rows with a null time, or in no
 * window) pass through packed, since only the processor's state can tell whether they are late or
 * end in no window, and such a row is emitted whole.
 *
 * The child's output is the row's values (the spec's value attributes, in order), then the grouping
 * keys. Output: the keys, `packed` (a passed row's values, packed by [[PackedRow]]; empty for a
 * merged row) and `merged` (null for a passed row, else [[MergeBeforeShuffle.encodeRun]] or
 * [[MergeBeforeShuffle.encodePartials]]).
 */
case class MergeBeforeShuffle(spec: StreamingWindowSpec, keys: Seq[Attribute], packed: Attribute, merged: Attribute,
    child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = keys ++ Seq(packed, merged)
  override def producedAttributes: AttributeSet = AttributeSet(Seq(packed, merged))
  override protected def withNewChildInternal(newChild: LogicalPlan): MergeBeforeShuffle = copy(child = newChild)
}

object MergeBeforeShuffle {
  val MergedColumn = "_windowagg_merged"

  def enabled(session: SparkSession): Boolean =
    AggregateBeforeShuffle.mode(session.sessionState.conf) != AggregateBeforeShuffle.Never

  /**
   * Whether a streaming aggregation's rows may merge before the shuffle: in event time (what is
   * late is known from a row's time and the watermark), for sessions only with a fixed gap (a row's
   * reach is then known before the state is read), not for kinds cut at rows (they count rows), and
   * over aggregates whose result does not depend on the order partials merge in.
   */
  def applies(spec: StreamingWindowSpec): Boolean = {
    val kindMerges = spec.windows match {
      case m: MergingWindows => m.fixedGap.isDefined && spec.gapOrdinal.isEmpty
      case _: RowWindows => false
      case _ => true
    }
    kindMerges && !spec.processingTime && !spec.withViews && spec.functions.forall(AggregateBeforeShuffle.mergesInAnyOrder)
  }

  /** Bytes of a run before its partial: first, last and reach (ticks). */
  private val RunHeader = 24

  def encodeRun(first: Long, last: Long, reach: Long, partial: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(RunHeader + partial.length).putLong(first).putLong(last).putLong(reach).put(partial).array()

  /** A run's first time, last time, reach and partial, decoded. */
  def decodeRun(bytes: Array[Byte], aggregates: SparkAggregates): (Long, Long, Long, InternalRow) = {
    val in = ByteBuffer.wrap(bytes)
    (in.getLong(), in.getLong(), in.getLong(), aggregates.fromBytes(bytes, RunHeader, bytes.length - RunHeader))
  }

  /** A key's partials by partial time: their count, then each one's time, length and bytes. */
  def encodePartials(times: Array[Long], partials: Array[Array[Byte]]): Array[Byte] = {
    val out = ByteBuffer.allocate(4 + times.length * 12 + partials.map(_.length).sum).putInt(times.length)
    var i = 0
    while (i < times.length) { out.putLong(times(i)).putInt(partials(i).length).put(partials(i)); i += 1 }
    out.array()
  }

  /** Hands `partial(time, buffer)` each of a key's partials, decoded. */
  def decodePartials(bytes: Array[Byte], aggregates: SparkAggregates)(partial: (Long, InternalRow) => Unit): Unit = {
    val in = ByteBuffer.wrap(bytes)
    var n = in.getInt()
    while (n > 0) {
      val time = in.getLong()
      val length = in.getInt()
      partial(time, aggregates.fromBytes(bytes, in.position(), length))
      in.position(in.position() + length)
      n -= 1
    }
  }
}

/** [[MergeBeforeShuffle]] planned: see there. */
case class MergeBeforeShuffleExec(spec: StreamingWindowSpec, keys: Seq[Attribute], output: Seq[Attribute], child: SparkPlan)
  extends UnaryExecNode {

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "inputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows"),
    "mergedRows" -> SQLMetrics.createMetric(sparkContext, "number of merged rows out"),
    "passedRows" -> SQLMetrics.createMetric(sparkContext, "rows passed through (may be late)"))

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def withNewChildInternal(newChild: SparkPlan): MergeBeforeShuffleExec = copy(child = newChild)

  override protected def doExecute(): RDD[InternalRow] = {
    // The processor's watermark is at most the micro-batch's: a row whose windows close after the
    // micro-batch's watermark is not late. Outside a micro-batch, every row passes.
    val watermark = SparkInternals.runningBatchWatermarkMs(sparkContext)
      .map(ms => Math.multiplyExact(ms, spec.ticksPerMilli)).getOrElse(Long.MaxValue)
    val counters = MergeCounters(longMetric("inputRows"), longMetric("mergedRows"), longMetric("passedRows"))
    val (spec_, keys_, childOutput, outputTypes) = (spec, keys, child.output, output.map(_.dataType).toArray)
    child.execute().mapPartitionsWithIndex({ (partition, rows) =>
      new MergingIterator(spec_, keys_, childOutput, outputTypes, rows, partition, watermark, counters)
    }, preservesPartitioning = true)
  }
}

private final case class MergeCounters(input: SQLMetric, merged: SQLMetric, passed: SQLMetric)

/** A partition of [[MergeBeforeShuffleExec]]: rows passed through as they come, then the merged rows. */
private final class MergingIterator(spec: StreamingWindowSpec, keys: Seq[Attribute], childOutput: Seq[Attribute],
    outputTypes: Array[DataType], input: Iterator[InternalRow], partition: Int, watermark: Long,
    counters: MergeCounters) extends Iterator[InternalRow] {
  private val tools = TaskTools.borrow(spec, partition)
  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => TaskTools.giveBack(tools)))
  private val aggregates = tools.aggregates
  private val windows = spec.windows
  private val sessions = windows.isInstanceOf[MergingWindows]
  private lazy val merging = new SessionMerging[InternalRow](aggregates)
  private val readTime = spec.timeColumn.reader(spec.timeOrdinal)
  private val keyOf = UnsafeProjection.create(keys, childOutput)
  private val values = childOutput.take(spec.valueAttributes.length)
  private val passThrough = UnsafeProjection.create(keys ++ Seq(PackedRow(values), Literal(null, BinaryType)), childOutput)
  private val toOutput = UnsafeProjection.create(outputTypes)
  private val noValues = new Array[Byte](0)

  private var byKey = new java.util.HashMap[UnsafeRow, KeyMerge]()
  private var held = 0 // partials held, over all keys
  private var draining: Iterator[InternalRow] = null
  private var inputDone = false
  private var nextRow: InternalRow = null

  override def hasNext: Boolean = {
    while (nextRow == null) {
      if (draining != null) {
        if (draining.hasNext) nextRow = draining.next() else draining = null
      } else if (input.hasNext) {
        nextRow = consume(input.next())
        // a bound on the memory held: what is merged so far goes out, and later rows start anew
        if (held >= MergingIterator.MaxHeld) draining = takeMerged()
      } else if (!inputDone) {
        inputDone = true
        draining = takeMerged()
      } else return false
    }
    true
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException
    val row = nextRow
    nextRow = null
    row
  }

  /** The row to pass on, or null when it merged. The values lead the row, as the aggregates read them. */
  private def consume(row: InternalRow): InternalRow = {
    counters.input += 1
    val timed = !row.isNullAt(spec.timeOrdinal)
    val time = if (timed) readTime(row) else 0L
    if (!timed || !onTime(time)) {
      counters.passed += 1
      passThrough(row)
    } else {
      val key = keyOf(row)
      var merge = byKey.get(key)
      if (merge == null) {
        merge = if (sessions) new KeyRuns(merging) else new KeyPartials
        byKey.put(key.copy(), merge)
      }
      held += merge.add(time, row, windows, aggregates)
      null
    }
  }

  // sessions: a row after the watermark bridges no closed session (each reached below the watermark
  // when it closed); other kinds: the row is certainly in a window that is open at the watermark
  private def onTime(t: Long): Boolean =
    if (sessions) t > watermark
    else windows.holds(windows.partialTime(t)) && windows.certainlyHeldUntil(t) >= watermark

  private def takeMerged(): Iterator[InternalRow] = {
    val taken = byKey
    byKey = new java.util.HashMap[UnsafeRow, KeyMerge]()
    held = 0
    val extra = new GenericInternalRow(2)
    extra.update(0, noValues)
    val joined = new JoinedRow()
    taken.entrySet().iterator().asScala.flatMap { entry =>
      entry.getValue.encoded(aggregates).map { bytes =>
        counters.merged += 1
        extra.update(1, bytes)
        toOutput(joined(entry.getKey, extra))
      }
    }
  }
}

private object MergingIterator {
  /** Partials a partition holds before sending them on. */
  val MaxHeld = 200000
}

/** What one key's rows in a partition merged into. */
private sealed trait KeyMerge {
  /** Adds a row at `time`; returns the change in the number of partials held. */
  def add(time: Long, row: InternalRow, windows: windowagg.ResolvedWindows, aggregates: SparkAggregates): Int
  /** The merged rows to shuffle. */
  def encoded(aggregates: SparkAggregates): Iterator[Array[Byte]]
}

/** A key's partials by partial time. */
private final class KeyPartials extends KeyMerge {
  private val byTime = mutable.LongMap.empty[InternalRow]

  override def add(time: Long, row: InternalRow, windows: windowagg.ResolvedWindows, aggregates: SparkAggregates): Int = {
    val at = windows.partialTime(time)
    val partial = byTime.getOrNull(at)
    if (partial != null) { aggregates.update(partial, row); 0 }
    else {
      val fresh = aggregates.newEmpty()
      aggregates.update(fresh, row)
      byTime.update(at, fresh)
      1
    }
  }

  override def encoded(aggregates: SparkAggregates): Iterator[Array[Byte]] = {
    val times = byTime.keys.toArray
    java.util.Arrays.sort(times)
    Iterator.single(MergeBeforeShuffle.encodePartials(times, times.map(t => aggregates.toBytes(byTime(t)))))
  }
}

/** A run of one key's rows: its first and last time, its reach, and the rows' partial aggregate. */
private final class Run(var first: Long, var last: Long, var reach: Long, val partial: InternalRow)

/**
 * One key's session runs, disjoint (no run reaches another) and sorted by first time. A row within
 * the latest run extends it in place, with no allocation; any other joins the runs it bridges by the
 * core's rule ([[SessionMerging.addRun]]).
 */
private final class KeyRuns(merging: SessionMerging[InternalRow]) extends KeyMerge {
  private val runs = mutable.ArrayBuffer.empty[Run]

  override def add(time: Long, row: InternalRow, windows: windowagg.ResolvedWindows, aggregates: SparkAggregates): Int = {
    val reach = windows.reach(time, 0L)
    val latest = if (runs.nonEmpty) runs.last else null
    if (latest != null && time >= latest.first && time <= latest.reach) { // rows come roughly in time order
      aggregates.update(latest.partial, row)
      if (time > latest.last) latest.last = time
      if (reach > latest.reach) latest.reach = reach
      0
    } else {
      val partial = aggregates.newEmpty()
      aggregates.update(partial, row)
      val open = runs.iterator.map(r => OpenSession(r.first, r.last, r.reach, r.partial)).toVector
      val next = merging.addRun(open, time, time, reach, partial)._1
      runs.clear()
      next.foreach(s => runs += new Run(s.first, s.last, s.reach, s.partial))
      next.length - open.length
    }
  }

  override def encoded(aggregates: SparkAggregates): Iterator[Array[Byte]] =
    runs.iterator.map(r => MergeBeforeShuffle.encodeRun(r.first, r.last, r.reach, aggregates.toBytes(r.partial)))
}
