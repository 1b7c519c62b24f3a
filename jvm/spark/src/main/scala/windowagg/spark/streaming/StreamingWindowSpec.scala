package windowagg.spark.streaming

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types._

import windowagg.core.ResolvedWindows
import windowagg.spark.common.{Emission, Engine, RowIntake, SparkAggregates, TimeColumn, WindowOptions, WindowView}

/**
 * What a streaming windowed aggregation computes; shipped to the executors with the processor: the
 * parts of the aggregation's node ([[windowagg.spark.common.WindowAggregate]]) the executors read,
 * its expressions bound to the processor's rows (`valueAttributes`, ordinals among them).
 * `listingColumn`: where rows list their windows, the listing's ordinal among the values and its type;
 * `combine` says how rows combined before the shuffle ([[CombineBeforeShuffle]]); `keying` how
 * transformWithState groups the rows and the state ([[StateKeying]]); `reading` what `read_state`
 * needs to decode that state, recorded in the checkpoint ([[StateReading]]).
 */
final case class StreamingWindowSpec(
    windows: ResolvedWindows,
    keySchema: StructType,
    valueAttributes: Seq[Attribute],
    timeOrdinal: Int,
    timeColumn: TimeColumn,
    functions: Seq[AggregateFunction],
    filters: Seq[Expression],
    options: WindowOptions,
    gapOrdinal: Option[Int] = None,
    gapType: Option[DataType] = None,
    tieOrder: Seq[Expression] = Nil,
    views: Seq[WindowView.View] = Nil,
    description: Seq[(String, String)] = Nil,
    listingColumn: Option[(Int, DataType)] = None,
    combine: Combine = Combine.none("rows one by one"),
    keying: StateKeying = StateKeying.ByPartition,
    reading: Option[StateReading] = None,
    queryPlanId: String = java.util.UUID.randomUUID().toString) {

  /** How windowagg runs these windows. */
  lazy val engine: Engine = Engine.of(windows)

  /** A streaming time column is a TIMESTAMP (the planner refuses others): its ticks are microseconds. */
  def ticksPerMilli: Long = 1000L

  def emission: Emission = options.emission

  /** Whether rows take their micro-batch's processing time, and windows close on that clock. */
  def processingTime: Boolean = options.processingTime

  /** The idle time (ticks) after which a key is forgotten (expireIdleKeys), if any. */
  val expireIdleAfter: Option[Long] = options.expireIdleKeysTicks

  /** The streaming side of the kind of window. */
  def kind: StreamingKind = StreamingKind.of(engine)

  /** Reads and classifies the input rows (one per task or partition: it keeps the row last read). */
  def intake: RowIntake = new RowIntake(windows, timeColumn, timeOrdinal, gapOrdinal, gapType, listingColumn)

  /**
   * Where rows list their windows, the type in which a piece carries them: the end of a window
   * that overlaps no other (it starts at the partial time), or the pairs (start, end).
   */
  def pieceWindowsType: Option[DataType] =
    engine.listed.map(l => if (l.disjoint) LongType else ArrayType(LongType, containsNull = false))

  /** The windows a piece's rows listed ([[pieceWindowsType]], its last field), as pairs (start, end); null unless rows list them. */
  def windowsOfPiece(piece: InternalRow): Array[Long] = engine.listed match {
    case Some(l) =>
      val at = partialAttributes.length - 1
      if (l.disjoint) Array(piece.getLong(0), piece.getLong(at)) else piece.getArray(at).toLongArray()
    case None => null
  }

  /** Whether some aggregate is over Storm's new or expired rows. */
  def withViews: Boolean = views.exists(_ != WindowView.All)

  def valueSchema: StructType = DataTypeUtils.fromAttributes(valueAttributes)

  /**
   * What the processor receives per input row: the keys packed ([[windowagg.spark.common.PackedRow]]); a
   * row's values whole (packed too) or null; what rows combined into before the shuffle (the kind's
   * piece, in its own codec) or null; then Spark's grouping key ([[groupSchema]]). A whole row with
   * a piece stands for `piece`'s count of equal rows, and the piece holds their partial aggregate.
   */
  def inputSchema: StructType = StructType(Seq(
    StructField(StreamingWindowSpec.KeyBytes, BinaryType, nullable = false),
    StructField(StreamingWindowSpec.Whole, BinaryType, nullable = true),
    StructField(StreamingWindowSpec.Piece, BinaryType, nullable = true)) ++ groupSchema.fields)

  /** transformWithState's grouping key: the keys' state partition, or the keys themselves ([[StateKeying]]). */
  def groupSchema: StructType = keying match {
    case StateKeying.ByPartition => StructType(Seq(StreamingWindowSpec.bucketField))
    case StateKeying.ByKey => keySchema
  }

  /**
   * The attributes of a partial made by Spark's partial aggregation before the shuffle
   * (`PartialsByTime.PartialsBeforeShuffle`): its partial time, its row count, the aggregates' buffers, then
   * where rows list their windows the partial's ([[pieceWindowsType]]).
   */
  lazy val partialAttributes: Seq[Attribute] =
    Seq(AttributeReference("partial_time", LongType)(), AttributeReference("rows", LongType, nullable = false)()) ++
      functions.flatMap(_.aggBufferAttributes).map(_.newInstance()) ++
      pieceWindowsType.map(AttributeReference("windows", _, nullable = false)())

  /**
   * Rows out of the processor (in binary form): windows (kind 0), late rows (kind 1) and
   * retractions (kind 2); `is_final` tells early values from final ones (emission every ...).
   */
  def outputSchema: StructType = StructType(
    StructField(StreamingWindowSpec.Kind, IntegerType, nullable = false) +:
      keySchema.fields.toSeq ++:
      Seq(
        StructField("window_start", timeColumn.windowType),
        StructField("window_end", timeColumn.windowType)) ++:
      functions.zipWithIndex.map { case (f, i) => StructField(s"agg_$i", f.dataType) } ++:
      Seq(
        StructField(StreamingWindowSpec.LateReason, StringType),
        StructField(StreamingWindowSpec.LateRow, valueSchema),
        StructField(StreamingWindowSpec.IsFinal, BooleanType)))

  // Where each part sits in outputSchema.
  def kindOrdinal: Int = 0
  def keyOrdinal(i: Int): Int = 1 + i
  def windowStartOrdinal: Int = 1 + keySchema.length
  def windowEndOrdinal: Int = windowStartOrdinal + 1
  def aggregateOrdinal(i: Int): Int = windowEndOrdinal + 1 + i
  def lateReasonOrdinal: Int = aggregateOrdinal(functions.length)
  def lateRowOrdinal: Int = lateReasonOrdinal + 1
  def isFinalOrdinal: Int = lateRowOrdinal + 1
  /** The columns of the batch node's output (keys, window bounds, aggregates), in its order. */
  def resultOrdinals: Seq[Int] = keySchema.indices.map(keyOrdinal) ++ Seq(windowStartOrdinal, windowEndOrdinal) ++
    functions.indices.map(aggregateOrdinal)
}

object StreamingWindowSpec {
  val Kind = "_windowagg_kind"
  val KeyBytes = "_windowagg_key"
  val Bucket = "_windowagg_bucket"
  val bucketField: StructField = StructField(Bucket, IntegerType, nullable = false)
  val Whole = "_windowagg_values"
  val Piece = "_windowagg_piece"
  val LateReason = "late_reason"
  val LateRow = "late_row"
  val IsFinal = "is_final"
  val WindowKind = 0
  val LateKind = 1
  val RetractionKind = 2
}

/**
 * What a task builds from a spec before it can process rows: the aggregates' projections and the
 * encoders, whose building generates and compiles code. An executor keeps them per query and
 * partition, and each task borrows them for its lifetime instead of building them again every
 * micro-batch.
 */
private[spark] final class TaskTools(spec: StreamingWindowSpec, val partition: Int) {
  val key: (String, Int) = (spec.queryPlanId, partition)
  val aggregates = new SparkAggregates(spec.functions, spec.filters, spec.valueAttributes, partition)
  /** Merges the partials Spark's partial aggregation made before the shuffle ([[StreamingWindowSpec.partialAttributes]]). */
  lazy val partials = new SparkAggregates(spec.functions, spec.filters, spec.partialAttributes, partition, partialsAt = Some(2))
  /** Output rows in binary form ([[windowagg.spark.common.UnpackedRow]] reads them back after the processor). */
  val toOutput: UnsafeProjection = UnsafeProjection.create(spec.outputSchema)
}

private[spark] object TaskTools {
  /** Queries × partitions kept per executor; past that the idle tools of ended queries are let go. */
  private val MaxKept = 1024
  private val idle = new java.util.concurrent.ConcurrentHashMap[(String, Int), java.util.concurrent.ConcurrentLinkedQueue[TaskTools]]()

  def borrow(spec: StreamingWindowSpec, partition: Int): TaskTools =
    Option(idle.get((spec.queryPlanId, partition))).flatMap(q => Option(q.poll())).getOrElse(new TaskTools(spec, partition))

  def giveBack(tools: TaskTools): Unit = {
    if (idle.size >= MaxKept && !idle.containsKey(tools.key)) idle.clear()
    idle.computeIfAbsent(tools.key, _ => new java.util.concurrent.ConcurrentLinkedQueue[TaskTools]()).offer(tools)
  }
}
