package windowagg.spark

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.encoders.{encoderFor, ExpressionEncoder}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import windowagg.ResolvedWindows
import windowagg.core.{Reaching, WindowFinality}

/** What a streaming windowed aggregation computes; shipped to the executors with the processor. */
final case class StreamingWindowSpec(
    windows: ResolvedWindows,
    ticksPerMilli: Long,
    keySchema: StructType,
    valueAttributes: Seq[Attribute],
    timeOrdinal: Int,
    timeColumn: TimeColumn,
    functions: Seq[AggregateFunction],
    filters: Seq[Expression],
    emitUpdates: Boolean,
    gapOrdinal: Option[Int] = None,
    gapType: Option[DataType] = None,
    tieOrder: Seq[Expression] = Nil,
    processingTime: Boolean = false,
    views: Seq[WindowView.View] = Nil,
    description: Seq[(String, String)] = Nil) {

  /** Whether some aggregate is over Storm's new or expired rows. */
  def withViews: Boolean = views.exists(_ != WindowView.All)

  def valueSchema: StructType = DataTypeUtils.fromAttributes(valueAttributes)

  /** What the processors receive per row: the keys, then the row's values packed by [[PackedRow]]. */
  def packedSchema: StructType =
    StructType(keySchema.fields :+ StructField(StreamingWindowSpec.PackedValues, BinaryType, nullable = false))

  /** Rows out of the processor: windows (kind 0), late rows (kind 1) and retractions (kind 2). */
  def outputSchema: StructType = StructType(
    StructField(StreamingWindowSpec.Kind, IntegerType, nullable = false) +:
      keySchema.fields.toSeq ++:
      Seq(
        StructField("window_start", timeColumn.windowType),
        StructField("window_end", timeColumn.windowType)) ++:
      functions.zipWithIndex.map { case (f, i) => StructField(s"agg_$i", f.dataType) } ++:
      Seq(
        StructField(StreamingWindowSpec.LateReason, StringType),
        StructField(StreamingWindowSpec.LateRow, valueSchema)))

  // Where each part sits in outputSchema.
  def kindOrdinal: Int = 0
  def keyOrdinal(i: Int): Int = 1 + i
  def windowStartOrdinal: Int = 1 + keySchema.length
  def windowEndOrdinal: Int = windowStartOrdinal + 1
  def aggregateOrdinal(i: Int): Int = windowEndOrdinal + 1 + i
  def lateReasonOrdinal: Int = aggregateOrdinal(functions.length)
  def lateRowOrdinal: Int = lateReasonOrdinal + 1
  /** The columns of the batch node's output (keys, window bounds, aggregates), in its order. */
  def resultOrdinals: Seq[Int] = keySchema.indices.map(keyOrdinal) ++ Seq(windowStartOrdinal, windowEndOrdinal) ++
    functions.indices.map(aggregateOrdinal)
}

object StreamingWindowSpec {
  val Kind = "_windowagg_kind"
  val PackedValues = "_windowagg_values"
  val LateReason = "late_reason"
  val LateRow = "late_row"
  val WindowKind = 0
  val LateKind = 1
  val RetractionKind = 2
  val ReasonLate = "late"
  val ReasonNullTime = "null time"
  val ReasonInvalidGap = "invalid gap"
  val ReasonNoWindow = "no window"
}

/**
 * What the streaming processors share: encoders between Rows and Spark's internal rows, the
 * aggregate adapter, the watermark in ticks, and the rows they emit (windows, late rows,
 * retractions), all in [[StreamingWindowSpec.outputSchema]].
 */
abstract class KeyedWindowProcessor(spec: StreamingWindowSpec) extends StatefulProcessor[Row, Row, Row] {
  import StreamingWindowSpec._

  @transient protected var aggregates: SparkAggregates = _
  @transient private var keyToInternal: ExpressionEncoder.Serializer[Row] = _
  @transient private var value: UnsafeRow = _
  @transient private var outputToRow: ExpressionEncoder.Deserializer[Row] = _
  @transient protected var readTime: InternalRow => Long = _

  protected def initState(handle: StatefulProcessorHandle): Unit

  /** This processor's state layout: bump its version whenever the layout changes. */
  protected def stateLayout: StateLayout

  /** What the checkpoint records about this aggregation's state, checked on restart ([[StreamingStartCheck]]). */
  def stateRecord: StateRecord = StateRecord(stateLayout.name, stateLayout.version, spec.description)

  def emitsUpdates: Boolean = spec.emitUpdates

  override final def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    val partition = Option(TaskContext.get()).map(_.partitionId()).getOrElse(0)
    aggregates = new SparkAggregates(spec.functions, spec.filters, spec.valueAttributes, partition)
    keyToInternal = encoderFor(Encoders.row(spec.keySchema)).createSerializer()
    value = new UnsafeRow(spec.valueAttributes.length)
    outputToRow = encoderFor(Encoders.row(spec.outputSchema)).resolveAndBind().createDeserializer()
    readTime = spec.timeColumn.reader(spec.timeOrdinal)
    initState(getHandle)
  }

  protected def internalKey(key: Row): InternalRow = keyToInternal(key).copy()

  /** The row's values in internal form, read in place (reused: copy it to keep it past the next call). */
  protected def internalValue(row: Row): InternalRow = {
    val bytes = row.getAs[Array[Byte]](spec.keySchema.length)
    value.pointTo(bytes, bytes.length)
    value
  }

  /** The watermark, or in processing time the micro-batch's time (the time its rows carry), in ticks. */
  protected def watermarkTicks(timerValues: TimerValues): Long = Math.multiplyExact(
    if (spec.processingTime) timerValues.getCurrentProcessingTimeInMs() else timerValues.getCurrentWatermarkInMs(),
    spec.ticksPerMilli)

  // A window whose last tick is `last` is final once the watermark (in ms) is past it.
  protected def expiryMs(last: Long): Long = Math.floorDiv(last, spec.ticksPerMilli) + 1

  /** A tick no later than the end a timer at `ms` was set for (timers keep milliseconds). */
  protected def timerEnd(ms: Long): Long = (ms - 1) * spec.ticksPerMilli

  /** Keeps the key's one timer (kept in `timer`) at the expiry of `nextEnd`, or none. */
  protected def scheduleTimer(timer: ValueState[Long], nextEnd: Option[Long]): Unit = {
    val wanted = nextEnd.map(expiryMs)
    val current = if (timer.exists()) Some(timer.get()) else None
    if (wanted != current) {
      current.foreach(getHandle.deleteTimer)
      wanted match {
        case Some(ms) => getHandle.registerTimer(ms); timer.update(ms)
        case None => timer.clear()
      }
    }
  }

  protected def windowRow(keyRow: InternalRow, start: Long, end: Long, buffer: InternalRow): Row =
    emitted(WindowKind, keyRow, start, end, Some(buffer), None)

  /** A window whose aggregates are over its rows, or (Storm's view) its new or its expired rows. */
  protected def windowRow(keyRow: InternalRow, start: Long, end: Long, buffer: InternalRow, newRows: InternalRow,
      expiredRows: InternalRow): Row =
    emitted(WindowKind, keyRow, start, end, Some(buffer), None, Map(WindowView.New -> newRows, WindowView.Expired -> expiredRows))

  protected def retractionRow(keyRow: InternalRow, start: Long, end: Long): Row =
    emitted(RetractionKind, keyRow, start, end, None, None)

  protected def lateRow(keyRow: InternalRow, value: InternalRow, reason: String): Row =
    emitted(LateKind, keyRow, 0L, 0L, None, Some((reason, value)))

  /** A row in no window whose values are no longer kept (kinds cut at rows keep partials): reason only. */
  protected def unwindowedRow(keyRow: InternalRow): Row =
    emitted(LateKind, keyRow, 0L, 0L, None, Some((ReasonNoWindow, null)))

  private def emitted(kind: Int, keyRow: InternalRow, start: Long, end: Long, buffer: Option[InternalRow],
      late: Option[(String, InternalRow)], viewBuffers: Map[WindowView.View, InternalRow] = Map.empty): Row = {
    val keys = spec.keySchema.length
    val n = spec.functions.length
    val row = new GenericInternalRow(spec.lateRowOrdinal + 1)
    row.setInt(spec.kindOrdinal, kind)
    var i = 0
    while (i < keys) { row.update(spec.keyOrdinal(i), keyRow.get(i, spec.keySchema(i).dataType)); i += 1 }
    if (late.isDefined) { row.setNullAt(spec.windowStartOrdinal); row.setNullAt(spec.windowEndOrdinal) }
    else { row.setLong(spec.windowStartOrdinal, start); row.setLong(spec.windowEndOrdinal, end) }
    buffer match {
      case Some(b) =>
        // each aggregate from the buffer of the rows it is over (the result row is reused per buffer)
        (Map(WindowView.All -> b) ++ viewBuffers).foreach { case (view, viewBuffer) =>
          val result = aggregates.result(viewBuffer)
          i = 0
          while (i < n) {
            if (spec.views.lift(i).getOrElse(WindowView.All) == view) {
              row.update(spec.aggregateOrdinal(i), result.get(i, spec.functions(i).dataType))
            }
            i += 1
          }
        }
      case None =>
        i = 0
        while (i < n) { row.setNullAt(spec.aggregateOrdinal(i)); i += 1 }
    }
    late match {
      case Some((reason, lateValue)) =>
        row.update(spec.lateReasonOrdinal, UTF8String.fromString(reason))
        row.update(spec.lateRowOrdinal, if (lateValue == null) null else lateValue.copy())
      case None =>
        row.setNullAt(spec.lateReasonOrdinal)
        row.setNullAt(spec.lateRowOrdinal)
    }
    outputToRow(row)
  }
}

/**
 * The windows of one key in Structured Streaming (transformWithState, event time), for every kind
 * swept from per-time partials (sliding, tumbling, hopping, cumulative, user-defined).
 *
 * State per key: one partial aggregate per partial time (a distinct time, or the kind's slice;
 * Spark aggregation buffers, serialized), the point `finalBefore` below which every window is
 * final, and one event-time timer at the last tick of the next window to become final. Windows
 * come from the kind's cursor over the partials, as in batch; partials no open window can need
 * are dropped, so state stays within the kind's largest span + grace.
 */
final class WindowProcessor(spec: StreamingWindowSpec) extends KeyedWindowProcessor(spec) {
  import StreamingWindowSpec._

  @transient private var partials: MapState[Long, Array[Byte]] = _
  @transient private var finalBefore: ValueState[Long] = _
  @transient private var timer: ValueState[Long] = _
  @transient private var finality: WindowFinality = _

  override protected def stateLayout: StateLayout = WindowProcessor.Layout

  override protected def initState(handle: StatefulProcessorHandle): Unit = {
    partials = handle.getMapState[Long, Array[Byte]]("partials", Encoders.scalaLong, Encoders.BINARY, TTLConfig.NONE)
    finalBefore = handle.getValueState[Long]("finalBefore", Encoders.scalaLong, TTLConfig.NONE)
    timer = handle.getValueState[Long]("timer", Encoders.scalaLong, TTLConfig.NONE)
    finality = new WindowFinality(spec.windows)
  }

  override def handleInputRows(key: Row, inputRows: Iterator[Row], timerValues: TimerValues): Iterator[Row] = {
    val watermark = watermarkTicks(timerValues)
    val keyRow = internalKey(key)
    val out = mutable.ArrayBuffer.empty[Row]
    // Windows that became final before these rows arrived are closed first: rows behind the
    // watermark may only change windows that are still open. The key's partials are read once.
    val stored = mutable.HashMap.empty[Long, Array[Byte]] ++= partials.iterator()
    var nextEnd = finalizeUpTo(keyRow, watermark, stored, out)

    val fresh = mutable.HashMap.empty[Long, InternalRow]
    inputRows.foreach { row =>
      val value = internalValue(row)
      if (value.isNullAt(spec.timeOrdinal)) out += lateRow(keyRow, value, ReasonNullTime)
      else {
        val t = readTime(value)
        val partialTime = spec.windows.partialTime(t)
        if (!spec.windows.holds(partialTime)) out += lateRow(keyRow, value, ReasonNoWindow)
        else if (finality.isLate(t, watermark)) out += lateRow(keyRow, value, ReasonLate)
        else aggregates.update(fresh.getOrElseUpdate(partialTime, aggregates.newEmpty()), value)
      }
    }
    if (fresh.nonEmpty) {
      fresh.foreach { case (t, batch) =>
        val merged = stored.get(t).map(bytes => aggregates.mergeInto(aggregates.fromBytes(bytes), batch)).getOrElse(batch)
        val bytes = aggregates.toBytes(merged)
        partials.updateValue(t, bytes)
        stored.update(t, bytes)
        // every window holding or created by t ends at or after t, and an open one at or after the watermark;
        // a timer fired early finds the real next end
        nextEnd = Some(math.min(nextEnd.getOrElse(Long.MaxValue), math.max(t, watermark)))
      }
      if (spec.emitUpdates) {
        val times = fresh.keys.toArray.sorted
        finality.windowsChangedBy(sorted(stored, Long.MinValue), aggregates, watermark, times) { (s, e, p) =>
          out += windowRow(keyRow, s, e, p)
        }
      }
    }
    scheduleTimer(nextEnd)
    dropIfEmpty(stored)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo): Iterator[Row] = {
    timer.clear() // the fired timer is gone
    val out = mutable.ArrayBuffer.empty[Row]
    val stored = mutable.HashMap.empty[Long, Array[Byte]] ++= partials.iterator()
    scheduleTimer(finalizeUpTo(internalKey(key), watermarkTicks(timerValues), stored, out))
    dropIfEmpty(stored)
    out.iterator
  }

  /**
   * Emits (in final mode) the windows ending in [finalBefore, watermark), drops partials no open
   * window needs (from the state and from `stored`, the key's partials as read), and returns the
   * end of the next window to become final.
   */
  private def finalizeUpTo(keyRow: InternalRow, watermark: Long, stored: mutable.HashMap[Long, Array[Byte]],
      out: mutable.ArrayBuffer[Row]): Option[Long] = {
    val from = if (finalBefore.exists()) finalBefore.get() else Long.MinValue
    if (watermark <= from) return if (timer.exists()) Some(timerEnd(timer.get())) else None
    val keep = finality.oldestNeeded(watermark)
    val next = finality.windowsEndingIn(sorted(stored, finality.oldestNeeded(from)), aggregates, from, watermark) { (s, e, p) =>
      if (!spec.emitUpdates) out += windowRow(keyRow, s, e, p)
    }
    stored.keys.filter(_ < keep).toList.foreach { t =>
      partials.removeKey(t)
      stored.remove(t)
    }
    finalBefore.update(watermark)
    next
  }

  /** A key with no partials left keeps no state: its next rows start from the watermark they meet. */
  private def dropIfEmpty(stored: mutable.HashMap[Long, Array[Byte]]): Unit =
    if (stored.isEmpty) {
      finalBefore.clear()
      scheduleTimer(None)
    }

  /** The partials from `from` on, in time order, decoded only as the sweep reaches them. */
  private def sorted(stored: mutable.HashMap[Long, Array[Byte]], from: Long): Iterator[Reaching[InternalRow]] =
    stored.iterator.filter(_._1 >= from).toArray.sortBy(_._1).iterator
      .map { case (t, bytes) => Reaching(t, t, aggregates.fromBytes(bytes)) }

  private def scheduleTimer(nextEnd: Option[Long]): Unit = scheduleTimer(timer, nextEnd)
}

object WindowProcessor {
  /** Per key: partials by partial time, `finalBefore`, the timer (as in 0.1.0's sliding windows). */
  val Layout: StateLayout = StateLayout("partials by time", 1)
}
