package windowagg.spark.streaming

import scala.jdk.CollectionConverters._

import org.apache.spark.{SPARK_VERSION, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, AggregateFunction, Count, Partial}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{BinaryType, DataType, LongType}
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.core.{SessionMerging, WindowFinality}
import windowagg.spark.common.{PackedRow, SupportedSpark, WindowAggError, WindowAggException, WindowsOfKey}

/** How a streaming aggregation's rows combine before the shuffle (the kind's choice), and why. */
sealed abstract class Combine(val why: String) extends Serializable {
  override def toString: String = s"$name ($why)"
  def name: String
}

object Combine {
  /** Every row crosses the shuffle whole. */
  final case class Rows(override val why: String) extends Combine(why) {
    override def name: String = "rows"
  }

  /** Spark's partial aggregation per (key, partial time) of the rows certain to be in a window. */
  final case class PartialsByTime(override val why: String) extends Combine(why) {
    override def name: String = "partials aggregated before the shuffle"
  }

  /** A key's rows after the watermark join in session runs (`Sessions.KeyRuns`). */
  final case class SessionRuns(override val why: String) extends Combine(why) {
    override def name: String = "session runs merged before the shuffle"
  }

  def none(why: String): Combine = Rows(why)
}

/**
 * A streaming aggregation's rows on their way to the processor ([[StreamingWindowSpec.inputSchema]]):
 * per row the keys packed ([[StreamingWindowSpec.KeyBytes]]), the row's values whole
 * ([[StreamingWindowSpec.Whole]]) or null, a piece of combined rows ([[StreamingWindowSpec.Piece]])
 * or null, as `spec.combine` says, and the keys' state partition ([[KeyBucket]]), by which Spark
 * groups them. The child's output is the row's values (the spec's value attributes, in order), then
 * the grouping keys. Only rows that cannot be late and are certain to be in a window combine; a
 * window holding them stays open past the micro-batch's watermark. Others (and rows with a null
 * time, or in no window) cross whole, since only the processor's state can tell whether they are
 * late or end in no window, and such a row is emitted whole.
 */
case class CombineBeforeShuffle(spec: StreamingWindowSpec, keys: Seq[Attribute], keyBytes: Attribute, whole: Attribute,
    piece: Attribute, bucket: Attribute, child: LogicalPlan) extends UnaryNode {
  /** Grouped by key ([[StateKeying.ByKey]]), the keys themselves instead of their partition, for Spark to group by. */
  override def output: Seq[Attribute] = spec.keying match {
    case StateKeying.ByPartition => Seq(keyBytes, whole, piece, bucket)
    case StateKeying.ByKey => Seq(keyBytes, whole, piece) ++ keys
  }
  override def producedAttributes: AttributeSet = AttributeSet(Seq(keyBytes, whole, piece, bucket))
  override protected def withNewChildInternal(newChild: LogicalPlan): CombineBeforeShuffle = copy(child = newChild)
}

object CombineBeforeShuffle {
  /**
   * The event-time watermark, in ticks, of the micro-batch whose execution asks (on the driver); the
   * processor's own watermark is never above it. Outside a micro-batch no row counts as certain.
   */
  def batchWatermark(context: org.apache.spark.SparkContext, spec: StreamingWindowSpec): Long =
    SparkInternals.runningBatchWatermarkMs(context).map(ms => Math.multiplyExact(ms, spec.ticksPerMilli)).getOrElse(Long.MaxValue)

  /**
   * Whether the micro-batch reads its stream in real-time mode (Spark's real-time trigger). That
   * mode runs only the operators on Spark's allowlist (no partial aggregation, nor windowagg's own
   * combining before the shuffle); a query it cannot run stops here with windowagg's message.
   */
  private def inRealTimeMode(node: CombineBeforeShuffle): Boolean = {
    val realTime = SparkInternals.readsInRealTime(node.child)
    if (realTime) {
      checkRealTimeMode(SPARK_VERSION)
      if (SparkInternals.evaluatesPython(node.child)) throw pythonInRealTimeMode
    }
    realTime
  }

  /** Real-time mode runs transformWithState from Spark 4.3 on: on 4.1 and 4.2 such a query stops here. */
  def checkRealTimeMode(sparkVersion: String): Unit =
    if (Seq("4.1", "4.2").contains(SupportedSpark.line(sparkVersion))) {
      throw WindowAggException(WindowAggError.STREAMING_REQUIREMENT,
        "real-time mode (Trigger.RealTime, or trigger(realTime=...) in Python) runs stateful operators such as " +
          s"windowagg's streaming windows from Spark 4.3 on, and this is Spark $sparkVersion: use Spark 4.3, or a " +
          "micro-batch trigger (e.g. a processing-time trigger of 100 milliseconds)")
    }

  /**
   * Real-time mode runs no Python function (Spark's allowlist has none of its operators), and would
   * stop the query naming Spark's operator; a PythonWindows user reads what to do instead.
   */
  private def pythonInRealTimeMode: WindowAggException = WindowAggException(WindowAggError.STREAMING_REQUIREMENT,
    "real-time mode runs no Python function, and this query evaluates one before windowagg's streaming windows " +
      "(PythonWindows runs its function so, as does a Python UDF on the input): in real-time mode list the windows " +
      "with TableWindows or a user-defined JVM kind (CustomWindows) and compute the input in the JVM, or use a " +
      "micro-batch trigger")

  /**
   * The physical plan of `node` over its planned child, for a query whose state has `partitions`
   * partitions: rows packed whole; Spark's partial aggregation per (key, partial time) after
   * [[StreamingIntakeExec]] sends the uncertain rows whole; or the sessions' runs
   * ([[SessionRunsExec]]). In real-time mode rows always cross whole. Then each row's keys are
   * packed and given their partition's group, and rows are shuffled to their partition and sorted by
   * key there, so the processor takes each key's rows together (Spark's own sort, which spills,
   * instead of holding a partition's rows). In real-time mode, which sorts nothing, rows come as they
   * arrive, and the processor takes each run of one key's rows as it comes. Grouped by key
   * ([[StateKeying.ByKey]]), rows keep their keys, and Spark's own shuffle and sort by key follow.
   */
  def plan(node: CombineBeforeShuffle, child: SparkPlan, partitions: Int): SparkPlan = {
    val realTime = inRealTimeMode(node)
    val combined = combine(node, child, realTime)
    val keys = combined.output.take(node.keys.length)
    val keyBytes = Alias(PackedRow(keys.map(SparkInternals.normalizedKey)), node.keyBytes.name)(exprId = node.keyBytes.exprId)
    node.spec.keying match {
      case StateKeying.ByKey => ProjectExec(Seq(keyBytes, node.whole, node.piece) ++ keys, combined)
      case StateKeying.ByPartition =>
        val bucket = Alias(KeyBucket(keys.map(SparkInternals.normalizedKey), partitions), node.bucket.name)(exprId = node.bucket.exprId)
        val shipped = ProjectExec(Seq(keyBytes, node.whole, node.piece, bucket), combined)
        if (realTime) shipped
        else SparkInternals.shuffledAndSorted(Seq(node.bucket), partitions, Seq(node.bucket, node.keyBytes).map(SortOrder(_, Ascending)), shipped)
    }
  }

  /** The rows as `spec.combine` (or real-time mode) combines them: the keys, then the row whole or null, then the piece or null. */
  private def combine(node: CombineBeforeShuffle, child: SparkPlan, realTime: Boolean): SparkPlan = {
    val spec = node.spec
    val values = child.output.take(spec.valueAttributes.length)
    val combine = if (realTime) Combine.none("real-time mode: each row is processed as it arrives") else spec.combine
    combine match {
      case _: Combine.Rows =>
        ProjectExec(node.keys ++ Seq(
          Alias(PackedRow(values), node.whole.name)(exprId = node.whole.exprId),
          Alias(Literal(null, BinaryType), node.piece.name)(exprId = node.piece.exprId)), child)
      case _: Combine.SessionRuns => SessionRunsExec(spec, node.keys, node.keys ++ Seq(node.whole, node.piece), child)
      case _: Combine.PartialsByTime =>
        val partialTime = AttributeReference("_partial_time", LongType)()
        val uncertain = AttributeReference("_uncertain_row", BinaryType)()
        // where rows list their windows, the certain rows' windows: a partial time's must be the same
        val listed = spec.pieceWindowsType.map(AttributeReference("_listed_windows", _)())
        // the spec's aggregates read its value attributes: here, the child's (the optimizer may have
        // renamed them, e.g. removing an alias of a file source's columns)
        val asChild = AttributeMap(spec.valueAttributes.zip(values))
        def onChild(e: Expression): Expression = e.transform { case a: Attribute => asChild.getOrElse(a, a) }
        val aggregates = (Count(Literal(1)) +: spec.functions).zip(Literal.TrueLiteral +: spec.filters).map { case (f, filter) =>
          AggregateExpression(onChild(f).asInstanceOf[AggregateFunction], Partial, isDistinct = false,
            Option(filter).filterNot(_ == Literal.TrueLiteral).map(onChild))
        }
        // the intake passes on only the columns the aggregation reads: an uncertain row's values go packed
        val read = AttributeSet(node.keys ++ aggregates.flatMap(_.references))
        val intake = StreamingIntakeExec(spec, node.keys, child.output.filter(read.contains), partialTime, uncertain, listed, child)
        val groups = node.keys ++ Seq(partialTime, uncertain) ++ listed
        val aggregated = SparkInternals.partialAggregate(groups, aggregates, intake)
        val out = aggregated.output
        val at = node.keys.length
        // the piece: partial time, row count, buffers, windows ([[StreamingWindowSpec.partialAttributes]])
        ProjectExec(out.take(at) ++ Seq(
          Alias(out(at + 1), node.whole.name)(exprId = node.whole.exprId),
          Alias(PackedRow(out(at) +: out.drop(groups.length) ++: out.slice(at + 2, groups.length)), node.piece.name)(
            exprId = node.piece.exprId)), aggregated)
    }
  }
}

/**
 * Before Spark's partial aggregation in streaming: for each row, its partial time when it cannot be
 * late and is certain to be in a window at the micro-batch's watermark (and where rows list their
 * windows, those in `listed`, [[StreamingWindowSpec.pieceWindowsType]]), else its values packed
 * whole (rows with a null time or in no window too), so that the aggregation combines the former
 * and carries the latter through as they are. Of the child's columns it passes on only `carried`,
 * those the keys and the partial aggregates read.
 */
case class StreamingIntakeExec(spec: StreamingWindowSpec, keys: Seq[Attribute], carried: Seq[Attribute], partialTime: Attribute,
    uncertain: Attribute, listed: Option[Attribute], child: SparkPlan) extends UnaryExecNode {

  override def output: Seq[Attribute] = carried ++ Seq(partialTime, uncertain) ++ listed
  override def producedAttributes: AttributeSet = AttributeSet(Seq(partialTime, uncertain) ++ listed)
  override def outputPartitioning: Partitioning = child.outputPartitioning match {
    case p: Expression if !p.references.subsetOf(outputSet) => UnknownPartitioning(child.outputPartitioning.numPartitions)
    case p => p
  }

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "combinedRows" -> SQLMetrics.createMetric(sparkContext, "rows combined by partial time"),
    "wholeRows" -> SQLMetrics.createMetric(sparkContext, "rows sent whole (may be late, or in no window)"))

  override protected def withNewChildInternal(newChild: SparkPlan): StreamingIntakeExec = copy(child = newChild)

  override protected def doExecute(): RDD[InternalRow] = {
    val watermark = CombineBeforeShuffle.batchWatermark(sparkContext, spec)
    val (spec_, keys_, childOutput, carried_) = (spec, keys, child.output, carried)
    val added = Seq(partialTime, uncertain) ++ listed
    val (combined, sentWhole) = (longMetric("combinedRows"), longMetric("wholeRows"))
    val windowsType = listed.map(_.dataType)
    child.execute().mapPartitions { rows =>
      val intake = spec_.intake
      // per-key windows: each row's key picks them
      val keyWindows = new WindowsOfKey(spec_.windows, keys_.map(_.dataType))
      val keyOf = if (spec_.windows.perKey) Some(UnsafeProjection.create(keys_, childOutput)) else None
      val pack = UnsafeProjection.create(childOutput.take(spec_.valueAttributes.length), childOutput)
      val extra = new GenericInternalRow(2 + windowsType.size)
      val joined = new JoinedRow()
      val toOutput = UnsafeProjection.create(carried_ ++ added, childOutput ++ added)
      rows.map { row =>
        val windows = keyOf.fold(spec_.windows)(project => keyWindows(project(row)))
        intake.use(windows)
        val certain = intake.classify(row) == null &&
          WindowFinality.certainlyHeldUntil(windows, intake.time, intake.listedWindows) >= watermark
        if (certain) {
          combined += 1
          extra.setLong(0, intake.partialTime)
          extra.setNullAt(1)
          windowsType.foreach {
            case LongType => extra.setLong(2, intake.listedWindows(1))
            case _ => extra.update(2, UnsafeArrayData.fromPrimitiveArray(intake.listedWindows))
          }
        } else {
          sentWhole += 1
          extra.setNullAt(0)
          extra.update(1, pack(row).copy().getBytes)
          if (windowsType.isDefined) extra.setNullAt(2)
        }
        toOutput(joined(row, extra))
      }
    }
  }
}

/**
 * The sessions' combine before the shuffle: per partition, a key's rows after the micro-batch's
 * watermark join in runs (`Sessions.KeyRuns`), shipped as one piece per run; every other row
 * passes through whole as it comes. Memory is bounded: after [[SessionRunsExec.MaxHeld]] runs a
 * partition sends on what it holds and starts again.
 */
case class SessionRunsExec(spec: StreamingWindowSpec, keys: Seq[Attribute], output: Seq[Attribute], child: SparkPlan)
  extends UnaryExecNode {

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "inputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows"),
    "runs" -> SQLMetrics.createMetric(sparkContext, "number of runs out"),
    "wholeRows" -> SQLMetrics.createMetric(sparkContext, "rows passed through whole (may be late)"))

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def withNewChildInternal(newChild: SparkPlan): SessionRunsExec = copy(child = newChild)

  override protected def doExecute(): RDD[InternalRow] = {
    val watermark = CombineBeforeShuffle.batchWatermark(sparkContext, spec)
    val counters = (longMetric("inputRows"), longMetric("runs"), longMetric("wholeRows"))
    val (spec_, keys_, childOutput, outputTypes) = (spec, keys, child.output, output.map(_.dataType).toArray)
    child.execute().mapPartitionsWithIndex({ (partition, rows) =>
      new SessionRunsIterator(spec_, keys_, childOutput, outputTypes, rows, partition, watermark, counters)
    }, preservesPartitioning = true)
  }
}

object SessionRunsExec {
  /** Runs a partition holds before sending them on. */
  val MaxHeld = 200000
}

/** A partition of [[SessionRunsExec]]: rows passed whole as they come, then the runs. */
private final class SessionRunsIterator(spec: StreamingWindowSpec, keys: Seq[Attribute], childOutput: Seq[Attribute],
    outputTypes: Array[DataType], input: Iterator[InternalRow], partition: Int, watermark: Long,
    counters: (SQLMetric, SQLMetric, SQLMetric)) extends Iterator[InternalRow] {
  private val tools = TaskTools.borrow(spec, partition)
  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => TaskTools.giveBack(tools)))
  private val aggregates = tools.aggregates
  private val merging = new SessionMerging[InternalRow](aggregates)
  private val intake = spec.intake
  private val keyOf = UnsafeProjection.create(keys, childOutput)
  private val values = childOutput.take(spec.valueAttributes.length)
  private val passThrough = UnsafeProjection.create(keys ++ Seq(PackedRow(values), Literal(null, BinaryType)), childOutput)
  private val toOutput = UnsafeProjection.create(outputTypes)
  private val (inputRows, runsOut, wholeRows) = counters

  private var byKey = new java.util.HashMap[UnsafeRow, Sessions.KeyRuns]()
  private var held = 0
  private var draining: Iterator[InternalRow] = null
  private var inputDone = false
  private var nextRow: InternalRow = null

  override def hasNext: Boolean = {
    while (nextRow == null) {
      if (draining != null) {
        if (draining.hasNext) nextRow = draining.next() else draining = null
      } else if (input.hasNext) {
        nextRow = consume(input.next())
        if (held >= SessionRunsExec.MaxHeld) draining = takeRuns()
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

  // A row after the watermark bridges no closed session (each reached below the watermark when it
  // closed), so it cannot be late; every other row passes whole, for the state to judge.
  private def consume(row: InternalRow): InternalRow = {
    inputRows += 1
    if (intake.classify(row) != null || intake.time <= watermark) {
      wholeRows += 1
      passThrough(row)
    } else {
      val key = keyOf(row)
      var runs = byKey.get(key)
      if (runs == null) {
        runs = new Sessions.KeyRuns(merging)
        byKey.put(key.copy(), runs)
      }
      held += runs.add(intake.time, intake.reach, row, aggregates)
      null
    }
  }

  private def takeRuns(): Iterator[InternalRow] = {
    val taken = byKey
    byKey = new java.util.HashMap[UnsafeRow, Sessions.KeyRuns]()
    held = 0
    val extra = new GenericInternalRow(2)
    extra.setNullAt(0)
    val joined = new JoinedRow()
    taken.entrySet().iterator().asScala.flatMap { entry =>
      entry.getValue.encoded(aggregates).map { bytes =>
        runsOut += 1
        extra.update(1, bytes)
        toOutput(joined(entry.getKey, extra))
      }
    }
  }
}
