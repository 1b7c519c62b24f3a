package windowagg.spark

import java.nio.ByteBuffer

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{BinaryType, DataType}
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.MergingWindows

/**
 * Sessions' rows joined before the shuffle: in each partition of a micro-batch, a key's rows ahead
 * of the watermark join in runs (rows each within the gap of the run so far), and one row per run
 * (its first and last time, its reach and its partial aggregate) is shuffled to
 * [[SessionWindowProcessor]] instead of every row. Rows at or behind the watermark, and rows with a
 * null time, pass through packed: only the processor's state can tell whether they are late, and a
 * late row is emitted whole.
 *
 * The child's output is the row's values (the spec's value attributes, in order), then the grouping
 * keys. Output: the keys, `packed` (a passed row's values, packed by [[PackedRow]]; empty for a
 * run) and `run` (null for a passed row, else the run, [[SessionRuns.encode]]).
 */
case class SessionRuns(spec: StreamingWindowSpec, keys: Seq[Attribute], packed: Attribute, run: Attribute, child: LogicalPlan)
  extends UnaryNode {
  override def output: Seq[Attribute] = keys ++ Seq(packed, run)
  override def producedAttributes: AttributeSet = AttributeSet(Seq(packed, run))
  override protected def withNewChildInternal(newChild: LogicalPlan): SessionRuns = copy(child = newChild)
}

object SessionRuns {
  val RunColumn = "_windowagg_run"
  /** Set to false to shuffle every row of a session aggregation (read when a query starts). */
  val EnabledConf = "spark.windowagg.streaming.sessionRunsBeforeShuffle"

  def enabled(session: SparkSession): Boolean = session.conf.getOption(EnabledConf).map(_.trim.toLowerCase) match {
    case None | Some("true") => true
    case Some("false") => false
    case Some(other) =>
      throw WindowAggException(WindowAggError.INVALID_OPTION, s"$EnabledConf must be true or false, not '$other'")
  }

  /** Bytes of a run before its partial: first, last and reach (ticks). */
  private val Header = 24

  /**
   * Whether a streaming aggregation's rows may join before the shuffle: sessions with a fixed gap in
   * event time (a row's reach is then known before the state is read), over aggregates whose result
   * does not depend on the order partials merge in (runs of one key from different partitions may
   * interleave in time; floating-point sums may differ in their last bits, as Spark's own partial
   * aggregation does).
   */
  def applies(spec: StreamingWindowSpec): Boolean = spec.windows match {
    case m: MergingWindows =>
      m.fixedGap.isDefined && spec.gapOrdinal.isEmpty && !spec.processingTime && !spec.withViews &&
        spec.functions.forall(mergesInAnyOrder)
    case _ => false
  }

  private def mergesInAnyOrder(f: AggregateFunction): Boolean = f match {
    case _: Sum | _: Count | _: Min | _: Max | _: Average | _: HyperLogLogPlusPlus => true
    case _: CentralMomentAgg | _: Covariance | _: PearsonCorrelation | _: BitAggregate => true
    case _ => false
  }

  def encode(first: Long, last: Long, reach: Long, partial: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(Header + partial.length).putLong(first).putLong(last).putLong(reach).put(partial).array()

  /** A run's first time, last time, reach and partial, decoded. */
  def decode(bytes: Array[Byte], aggregates: SparkAggregates): (Long, Long, Long, InternalRow) = {
    val in = ByteBuffer.wrap(bytes)
    (in.getLong(), in.getLong(), in.getLong(), aggregates.fromBytes(bytes, Header, bytes.length - Header))
  }
}

/** [[SessionRuns]] planned: see there. */
case class SessionRunsExec(spec: StreamingWindowSpec, keys: Seq[Attribute], output: Seq[Attribute], child: SparkPlan)
  extends UnaryExecNode {

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "inputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows"),
    "runs" -> SQLMetrics.createMetric(sparkContext, "number of runs out"),
    "passedRows" -> SQLMetrics.createMetric(sparkContext, "rows passed through (at or behind the watermark)"))

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def withNewChildInternal(newChild: SparkPlan): SessionRunsExec = copy(child = newChild)

  override protected def doExecute(): RDD[InternalRow] = {
    // Rows after this tick are on time in the processor: its watermark is at most the micro-batch's,
    // and a key's closed sessions all reach below it. Outside a micro-batch, every row passes.
    val onTimeAfter = SparkInternals.runningBatchWatermarkMs(sparkContext)
      .map(ms => Math.multiplyExact(ms, spec.ticksPerMilli)).getOrElse(Long.MaxValue)
    val counters = RunCounters(longMetric("inputRows"), longMetric("runs"), longMetric("passedRows"))
    val (spec_, keys_, childOutput, outputTypes) = (spec, keys, child.output, output.map(_.dataType).toArray)
    child.execute().mapPartitionsWithIndex({ (partition, rows) =>
      new RunsIterator(spec_, keys_, childOutput, outputTypes, rows, partition, onTimeAfter, counters)
    }, preservesPartitioning = true)
  }
}

object SessionRunsExec {
  /** Runs a partition holds before sending them on (each a partial aggregate and three times). */
  private[spark] val MaxRunsHeld = 200000
}

private final case class RunCounters(input: SQLMetric, runs: SQLMetric, passed: SQLMetric)

/** A partition of [[SessionRunsExec]]: rows passed through as they come, then the runs. */
private final class RunsIterator(spec: StreamingWindowSpec, keys: Seq[Attribute], childOutput: Seq[Attribute],
    outputTypes: Array[DataType], input: Iterator[InternalRow], partition: Int, onTimeAfter: Long,
    counters: RunCounters) extends Iterator[InternalRow] {
  private val tools = TaskTools.borrow(spec, partition)
  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => TaskTools.giveBack(tools)))
  private val aggregates = tools.aggregates
  private val readTime = spec.timeColumn.reader(spec.timeOrdinal)
  private val keyOf = UnsafeProjection.create(keys, childOutput)
  private val values = childOutput.take(spec.valueAttributes.length)
  private val passThrough = UnsafeProjection.create(keys ++ Seq(PackedRow(values), Literal(null, BinaryType)), childOutput)
  private val toOutput = UnsafeProjection.create(outputTypes)
  private val noValues = new Array[Byte](0)

  private var byKey = new java.util.HashMap[UnsafeRow, KeyRuns]()
  private var runCount = 0
  private var draining: Iterator[InternalRow] = null
  private var inputDone = false
  private var nextRow: InternalRow = null

  override def hasNext: Boolean = {
    while (nextRow == null) {
      if (draining != null) {
        if (draining.hasNext) nextRow = draining.next() else draining = null
      } else if (input.hasNext) {
        nextRow = consume(input.next())
        // a bound on the memory held: the runs so far go out, and later rows start new ones
        if (runCount >= SessionRunsExec.MaxRunsHeld) draining = takeRuns()
      } else if (!inputDone) {
        inputDone = true
        draining = takeRuns()
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

  /** The row to pass on, or null when it joined a run. The values lead the row, as the aggregates read them. */
  private def consume(row: InternalRow): InternalRow = {
    counters.input += 1
    val t = if (row.isNullAt(spec.timeOrdinal)) Long.MinValue else readTime(row)
    if (t == Long.MinValue || t <= onTimeAfter) {
      counters.passed += 1
      passThrough(row)
    } else {
      val key = keyOf(row)
      var runs = byKey.get(key)
      if (runs == null) {
        runs = new KeyRuns
        byKey.put(key.copy(), runs)
      }
      runCount += runs.add(t, spec.windows.reach(t, 0L), row, aggregates)
      null
    }
  }

  private def takeRuns(): Iterator[InternalRow] = {
    val taken = byKey
    byKey = new java.util.HashMap[UnsafeRow, KeyRuns]()
    runCount = 0
    val extra = new GenericInternalRow(2)
    val joined = new JoinedRow()
    taken.entrySet().iterator().asScala.flatMap { entry =>
      entry.getValue.runs.iterator.map { r =>
        counters.runs += 1
        extra.update(0, noValues)
        extra.update(1, SessionRuns.encode(r.first, r.last, r.reach, aggregates.toBytes(r.partial)))
        toOutput(joined(entry.getKey, extra))
      }
    }
  }
}

/** A run of one key's rows: its first and last time, its reach, and the rows' partial aggregate. */
private final class Run(var first: Long, var last: Long, var reach: Long, var partial: InternalRow)

/** One key's runs in a partition, disjoint (no run reaches another) and sorted by first time. */
private final class KeyRuns {
  val runs = mutable.ArrayBuffer.empty[Run]

  /** Adds a row at `time` reaching `reach`; returns the change in the number of runs. */
  def add(time: Long, reach: Long, row: InternalRow, aggregates: SparkAggregates): Int = {
    if (runs.nonEmpty) {
      val latest = runs.last
      if (time >= latest.first) { // the common case: rows come roughly in time order
        if (time <= latest.reach) {
          aggregates.update(latest.partial, row)
          if (time > latest.last) latest.last = time
          if (reach > latest.reach) latest.reach = reach
          return 0
        }
        runs += fresh(time, reach, row, aggregates)
        return 1
      }
    }
    // the row joins every run it bridges ([time, reach] meets [first, reach]) into one
    val bridged = runs.indices.filter(i => runs(i).first <= reach && time <= runs(i).reach)
    if (bridged.isEmpty) {
      val at = runs.indexWhere(_.first > time)
      runs.insert(if (at < 0) runs.length else at, fresh(time, reach, row, aggregates))
      1
    } else {
      val into = runs(bridged.head)
      aggregates.update(into.partial, row)
      into.first = math.min(into.first, time)
      into.last = math.max(into.last, time)
      into.reach = math.max(into.reach, reach)
      bridged.tail.foreach { i =>
        val other = runs(i)
        into.partial = aggregates.mergeInto(into.partial, other.partial)
        into.last = math.max(into.last, other.last)
        into.reach = math.max(into.reach, other.reach)
      }
      runs.remove(bridged.head + 1, bridged.length - 1) // bridged runs are consecutive
      1 - bridged.length
    }
  }

  private def fresh(time: Long, reach: Long, row: InternalRow, aggregates: SparkAggregates): Run = {
    val partial = aggregates.newEmpty()
    aggregates.update(partial, row)
    new Run(time, time, reach, partial)
  }
}
