package windowagg.spark.streaming

import org.apache.spark.SPARK_VERSION
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan}
import org.apache.spark.sql.types.BinaryType
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.spark.common.{PackedRow, SupportedSpark, WindowAggError, WindowAggException}

/**
 * How a streaming aggregation's rows combine before the shuffle, and why: the kind's choice
 * (`StreamingKind.combine`), which plans its own stage ([[plan]]). Rows crossing whole are the
 * one way every kind shares; a kind that combines defines its own case in its file.
 */
abstract class Combine(val why: String) extends Serializable {
  override def toString: String = s"$name ($why)"
  def name: String

  /**
   * The stage over the query's planned rows (`child`: the spec's value attributes, then the
   * grouping keys) whose output is `node`'s keys, then its `whole` row or null, then its `piece`
   * or null.
   */
  def plan(node: CombineBeforeShuffle, child: SparkPlan): SparkPlan
}

object Combine {
  /** Every row crosses the shuffle whole. */
  final case class Rows(override val why: String) extends Combine(why) {
    override def name: String = "rows"

    override def plan(node: CombineBeforeShuffle, child: SparkPlan): SparkPlan =
      ProjectExec(node.keys ++ Seq(
        Alias(PackedRow(child.output.take(node.spec.valueAttributes.length)), node.whole.name)(exprId = node.whole.exprId),
        Alias(Literal(null, BinaryType), node.piece.name)(exprId = node.piece.exprId)), child)
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
  private def combine(node: CombineBeforeShuffle, child: SparkPlan, realTime: Boolean): SparkPlan =
    (if (realTime) Combine.none("real-time mode: each row is processed as it arrives") else node.spec.combine).plan(node, child)
}
