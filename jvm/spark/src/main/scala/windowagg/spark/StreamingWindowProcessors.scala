package windowagg.spark

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.encoders.{encoderFor, ExpressionEncoder}
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

import windowagg.ResolvedWindows
import windowagg.core.WindowFinality

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
    description: Seq[(String, String)] = Nil,
    mergedBeforeShuffle: Boolean = false,
    queryPlanId: String = java.util.UUID.randomUUID().toString) {

  /** Whether some aggregate is over Storm's new or expired rows. */
  def withViews: Boolean = views.exists(_ != WindowView.All)

  def valueSchema: StructType = DataTypeUtils.fromAttributes(valueAttributes)

  /**
   * What the processors receive per row: the keys, then the row's values packed by [[PackedRow]];
   * with rows merged before the shuffle, then the merged rows, or null for a single row ([[MergeBeforeShuffle]]).
   */
  def packedSchema: StructType = {
    val packed = keySchema.fields :+ StructField(StreamingWindowSpec.PackedValues, BinaryType, nullable = false)
    StructType(if (mergedBeforeShuffle) packed :+ StructField(MergeBeforeShuffle.MergedColumn, BinaryType, nullable = true) else packed)
  }

  /** Rows out of the processor (in binary form): windows (kind 0), late rows (kind 1) and retractions (kind 2). */
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
  val ReasonLate: String = NotWindowed.Late.reason
  val ReasonNullTime: String = NotWindowed.NullTime.reason
  val ReasonInvalidGap: String = NotWindowed.InvalidGap.reason
  val ReasonNoWindow: String = NotWindowed.NoWindow.reason
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
  val keyToInternal: ExpressionEncoder.Serializer[Row] = encoderFor(Encoders.row(spec.keySchema)).createSerializer()
  /** Output rows in binary form ([[UnpackedRow]] reads them back after the processor). */
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

/**
 * What the streaming processors share: encoders between Rows and Spark's internal rows, the
 * aggregate adapter, the watermark in ticks, and the rows they emit (windows, late rows,
 * retractions), all in [[StreamingWindowSpec.outputSchema]].
 */
abstract class KeyedWindowProcessor(spec: StreamingWindowSpec) extends StatefulProcessor[Row, Row, Array[Byte]] {
  import StreamingWindowSpec._

  @transient private var tools: TaskTools = _
  @transient protected var aggregates: SparkAggregates = _
  @transient private var keyToInternal: ExpressionEncoder.Serializer[Row] = _
  @transient private var value: UnsafeRow = _
  @transient private var toOutput: UnsafeProjection = _
  @transient protected var readTime: InternalRow => Long = _
  // what emitted() needs, built once per task: the output row is reused, as toOutput copies it
  @transient private var outputRow: GenericInternalRow = _
  @transient private var keyTypes: Array[DataType] = _
  @transient private var resultTypes: Array[DataType] = _
  @transient private var viewOf: Array[WindowView.View] = _

  protected def initState(handle: StatefulProcessorHandle): Unit

  /** This processor's state layout: bump its version whenever the layout changes. */
  protected def stateLayout: StateLayout

  /** What the checkpoint records about this aggregation's state, checked on restart ([[StreamingStartCheck]]). */
  def stateRecord: StateRecord =
    StateRecord(stateLayout.name, stateLayout.version, spec.description, Some(stateLayout.readsFrom))

  def emitsUpdates: Boolean = spec.emitUpdates

  override final def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    val partition = Option(TaskContext.get()).map(_.partitionId()).getOrElse(0)
    tools = TaskTools.borrow(spec, partition)
    aggregates = tools.aggregates
    keyToInternal = tools.keyToInternal
    toOutput = tools.toOutput
    value = new UnsafeRow(spec.valueAttributes.length)
    readTime = spec.timeColumn.reader(spec.timeOrdinal)
    outputRow = new GenericInternalRow(spec.lateRowOrdinal + 1)
    keyTypes = spec.keySchema.fields.map(_.dataType)
    resultTypes = spec.functions.map(_.dataType).toArray
    viewOf = spec.functions.indices.map(i => spec.views.lift(i).getOrElse(WindowView.All)).toArray
    initState(getHandle)
  }

  override def close(): Unit = if (tools != null) {
    TaskTools.giveBack(tools)
    tools = null
  }

  protected def internalKey(key: Row): InternalRow = keyToInternal(key).copy()

  /** Where an input row holds what was merged before the shuffle, when [[StreamingWindowSpec.mergedBeforeShuffle]]. */
  protected val mergedOrdinal: Int = spec.keySchema.length + 1

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

  /**
   * Moves the key's one timer from `current` to `wanted` (milliseconds, or none), touching Spark's
   * timers only when it changes; returns `wanted`, for the caller to keep with the key's state.
   */
  protected def moveTimer(current: Option[Long], wanted: Option[Long]): Option[Long] = {
    if (wanted != current) {
      current.foreach(getHandle.deleteTimer)
      wanted.foreach(getHandle.registerTimer)
    }
    wanted
  }

  protected def windowRow(keyRow: InternalRow, start: Long, end: Long, buffer: InternalRow): Array[Byte] =
    emitted(WindowKind, keyRow, start, end, buffer, null, null, null, null)

  /** A window whose aggregates are over its rows, or (Storm's view) its new or its expired rows. */
  protected def windowRow(keyRow: InternalRow, start: Long, end: Long, buffer: InternalRow, newRows: InternalRow,
      expiredRows: InternalRow): Array[Byte] =
    emitted(WindowKind, keyRow, start, end, buffer, newRows, expiredRows, null, null)

  protected def retractionRow(keyRow: InternalRow, start: Long, end: Long): Array[Byte] =
    emitted(RetractionKind, keyRow, start, end, null, null, null, null, null)

  protected def lateRow(keyRow: InternalRow, value: InternalRow, reason: String): Array[Byte] =
    emitted(LateKind, keyRow, 0L, 0L, null, null, null, reason, value)

  /** A row in no window whose values are no longer kept (kinds cut at rows keep partials): reason only. */
  protected def unwindowedRow(keyRow: InternalRow): Array[Byte] =
    emitted(LateKind, keyRow, 0L, 0L, null, null, null, ReasonNoWindow, null)

  /**
   * One output row in binary form. `buffer` is null for rows without aggregates (late rows,
   * retractions), `newRows` and `expiredRows` null unless some aggregate is over Storm's view,
   * `lateReason` null unless the row is late.
   */
  private def emitted(kind: Int, keyRow: InternalRow, start: Long, end: Long, buffer: InternalRow, newRows: InternalRow,
      expiredRows: InternalRow, lateReason: String, lateValue: InternalRow): Array[Byte] = {
    val row = outputRow
    row.setInt(spec.kindOrdinal, kind)
    var i = 0
    while (i < keyTypes.length) { row.update(spec.keyOrdinal(i), keyRow.get(i, keyTypes(i))); i += 1 }
    if (lateReason != null) { row.setNullAt(spec.windowStartOrdinal); row.setNullAt(spec.windowEndOrdinal) }
    else { row.setLong(spec.windowStartOrdinal, start); row.setLong(spec.windowEndOrdinal, end) }
    if (buffer == null) {
      i = 0
      while (i < viewOf.length) { row.setNullAt(spec.aggregateOrdinal(i)); i += 1 }
    } else {
      setAggregates(row, WindowView.All, buffer)
      if (newRows != null) setAggregates(row, WindowView.New, newRows)
      if (expiredRows != null) setAggregates(row, WindowView.Expired, expiredRows)
    }
    if (lateReason != null) {
      row.update(spec.lateReasonOrdinal, UTF8String.fromString(lateReason))
      row.update(spec.lateRowOrdinal, if (lateValue == null) null else lateValue.copy())
    } else {
      row.setNullAt(spec.lateReasonOrdinal)
      row.setNullAt(spec.lateRowOrdinal)
    }
    val packed = toOutput(row)
    val bytes = new Array[Byte](packed.getSizeInBytes)
    packed.writeToMemory(bytes, Platform.BYTE_ARRAY_OFFSET)
    bytes
  }

  /** The aggregates over `view` in `row`, from the buffer of the rows that view is over. */
  private def setAggregates(row: GenericInternalRow, view: WindowView.View, buffer: InternalRow): Unit = {
    val result = aggregates.result(buffer) // reused per call: its values are taken before the next one
    var i = 0
    while (i < viewOf.length) {
      if (viewOf(i) == view) row.update(spec.aggregateOrdinal(i), result.get(i, resultTypes(i)))
      i += 1
    }
  }
}

/**
 * The windows of one key in Structured Streaming (transformWithState, event time), for every kind
 * swept from per-time partials (sliding, tumbling, hopping, cumulative, calendar, unlimited,
 * user-defined).
 *
 * State per key, two entries in steady state: `PartialBlocks` (one partial aggregate per partial
 * time, a distinct time or the kind's slice, in blocks of partials kept as UnsafeRow bytes), and the
 * key's [[WindowProcessor.Progress]]: the point `finalBefore` below which every window is final, the
 * one event-time timer (at the last tick of the next window to become final) and the blocks' keys.
 * Windows come from the kind's cursor over the partials, as in batch; blocks no open window can
 * need are dropped, so state stays within the kind's largest span + grace. A micro-batch reads a
 * key's blocks only when one of its windows has become final (or to emit updates), and otherwise
 * only the blocks its new rows fall in.
 */
final class WindowProcessor(spec: StreamingWindowSpec) extends KeyedWindowProcessor(spec) {
  import StreamingWindowSpec._
  import WindowProcessor.{PendingRow, Progress}

  @transient private var blockState: MapState[Long, Array[Byte]] = _
  @transient private var progressState: ValueState[Array[Byte]] = _
  @transient private var finality: WindowFinality = _

  override protected def stateLayout: StateLayout = WindowProcessor.Layout

  override protected def initState(handle: StatefulProcessorHandle): Unit = {
    blockState = handle.getMapState[Long, Array[Byte]]("blocks", Encoders.scalaLong, Encoders.BINARY, TTLConfig.NONE)
    progressState = handle.getValueState[Array[Byte]]("progress", Encoders.BINARY, TTLConfig.NONE)
    finality = new WindowFinality(spec.windows)
  }

  override def handleInputRows(key: Row, inputRows: Iterator[Row], timerValues: TimerValues): Iterator[Array[Byte]] = {
    val watermark = watermarkTicks(timerValues)
    val keyRow = internalKey(key)
    val out = mutable.ArrayBuffer.empty[Array[Byte]]
    val progress = readProgress()
    val blocks = new PartialBlocks(blockState, progress.blockStarts, aggregates)
    // Windows that became final before these rows arrived are closed first: rows behind the
    // watermark may only change windows that are still open.
    var nextEnd = finalizeUpTo(keyRow, watermark, progress, blocks, out)

    val fresh = mutable.LongMap.empty[InternalRow]
    def takeRow(value: InternalRow): Unit =
      if (value.isNullAt(spec.timeOrdinal)) out += lateRow(keyRow, value, ReasonNullTime)
      else {
        val t = readTime(value)
        val partialTime = spec.windows.partialTime(t)
        if (!spec.windows.holds(partialTime)) out += lateRow(keyRow, value, ReasonNoWindow)
        else if (finality.isLate(t, watermark)) out += lateRow(keyRow, value, ReasonLate)
        else {
          aggregates.update(fresh.getOrElseUpdate(partialTime, aggregates.newEmpty()), value)
          // only later rows can make a window hold it: kept until every window that could is final
          if (spec.windows.certainlyHeldUntil(t) < watermark) progress.pending :+= PendingRow(t, value.copy().asInstanceOf[UnsafeRow].getBytes)
        }
      }
    // partials merged before the shuffle ([[MergeBeforeShuffle]]) hold only rows certain to be in a window
    def takePartials(bytes: Array[Byte]): Unit = MergeBeforeShuffle.decodePartials(bytes, aggregates) { (time, partial) =>
      if (spec.windows.certainlyHeldUntil(time) < watermark) {
        throw new IllegalStateException(s"rows at $time were merged before the shuffle as certain to be in a window, " +
          s"but the watermark is $watermark")
      }
      fresh.getOrNull(time) match {
        case null => fresh.update(time, partial)
        case earlier => fresh.update(time, aggregates.mergeInto(earlier, partial))
      }
    }
    inputRows.foreach { row =>
      if (spec.mergedBeforeShuffle && !row.isNullAt(mergedOrdinal)) takePartials(row.getAs[Array[Byte]](mergedOrdinal))
      else takeRow(internalValue(row))
    }
    if (fresh.nonEmpty) {
      val times = fresh.keys.toArray
      java.util.Arrays.sort(times)
      blocks.add(times, times.map(fresh))
      // every window holding or created by a new time ends at or after it, and an open one at or
      // after the watermark; a timer fired early finds the real next end
      nextEnd = Some(math.min(nextEnd.getOrElse(Long.MaxValue), math.max(times(0), watermark)))
      if (spec.emitUpdates) {
        finality.windowsChangedBy(blocks.from(finality.oldestNeeded(progress.finalBefore)), aggregates, watermark, times) { (s, e, p) =>
          out += windowRow(keyRow, s, e, p)
        }
      }
    }
    save(progress, blocks, nextEnd)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo): Iterator[Array[Byte]] = {
    val progress = readProgress()
    val blocks = new PartialBlocks(blockState, progress.blockStarts, aggregates)
    val out = mutable.ArrayBuffer.empty[Array[Byte]]
    val nextEnd = finalizeUpTo(internalKey(key), watermarkTicks(timerValues), progress, blocks, out)
    progress.timerMs = Progress.NoTimer // the fired timer is gone
    save(progress, blocks, nextEnd)
    out.iterator
  }

  /**
   * Emits (in final mode) the windows ending in [finalBefore, watermark), routes the pending rows
   * that no window held once every window that could is final, drops blocks no open window needs,
   * and returns the end of the next window to become final (or the time a pending row is settled).
   * The key's timer says when that is, so the blocks are read only if a window is due.
   */
  private def finalizeUpTo(keyRow: InternalRow, watermark: Long, progress: Progress, blocks: PartialBlocks,
      out: mutable.ArrayBuffer[Array[Byte]]): Option[Long] = {
    val from = progress.finalBefore
    val pending = progress.timer.map(timerEnd)
    if (watermark <= from) return pending
    // the timer is at or before the next window's last tick: until the watermark passes it, no window is due
    if (pending.forall(_ >= watermark)) {
      progress.finalBefore = watermark
      return pending
    }
    val next = finality.windowsEndingIn(blocks.from(finality.oldestNeeded(from)), aggregates, from, watermark) { (s, e, p) =>
      if (!spec.emitUpdates) out += windowRow(keyRow, s, e, p)
      if (progress.pending.nonEmpty) {
        val last = spec.windows.lastTick(e)
        progress.pending = progress.pending.filterNot(r => s <= r.time && r.time <= last)
      }
    }
    progress.finalBefore = watermark
    val (settled, waiting) = progress.pending.partition(r => spec.windows.closesAt(r.time) < watermark)
    settled.foreach(r => out += lateRow(keyRow, r.value(spec.valueAttributes.length), ReasonNoWindow))
    progress.pending = waiting
    // With no window left to close, the partials wait only for rows that could still join them:
    // none once the latest one is late, so the key's state goes (its timer is set for then).
    val wakeUp = (next ++ waiting.map(r => spec.windows.closesAt(r.time))).minOption
      .orElse(blocks.lastTime.map(spec.windows.closesAt).filter(_ >= watermark))
    if (wakeUp.isEmpty) blocks.clear() else blocks.dropBefore(finality.oldestNeeded(watermark))
    wakeUp
  }

  /**
   * Writes the changed blocks and the key's progress with its one timer at the expiry of `nextEnd`.
   * A key with no partials left keeps no state: its next rows start from the watermark they meet.
   */
  private def save(progress: Progress, blocks: PartialBlocks, nextEnd: Option[Long]): Unit = {
    blocks.flush()
    val wanted = if (blocks.isEmpty) None else nextEnd.map(expiryMs)
    progress.timerMs = moveTimer(progress.timer, wanted).getOrElse(Progress.NoTimer)
    if (blocks.isEmpty) progressState.clear()
    else {
      progress.blockStarts = blocks.blockStarts
      progressState.update(progress.encode)
    }
  }

  // one read: get() is null for a key without state, where exists() and get() would read twice
  private def readProgress(): Progress = Option(progressState.get()).map(Progress.decode)
    .getOrElse(new Progress(Long.MinValue, Progress.NoTimer, Array.emptyLongArray, Vector.empty))
}

object WindowProcessor {
  /**
   * Per key: partials in blocks by their first time (UnsafeRow bytes), and the key's progress (the
   * point below which windows are final, its timer, the blocks' keys, its pending rows). Version 1
   * (0.1.0, 0.2.0) kept one state entry per partial time and separate `finalBefore` and timer
   * entries; version 2 (0.3.0) had no pending rows, so it reads as version 3 with none.
   */
  val Layout: StateLayout = StateLayout("partials by time", 3, readsFrom = 2)

  /** A row kept whole until it is known whether some window holds it (`certainlyHeldUntil`). */
  final case class PendingRow(time: Long, bytes: Array[Byte]) {
    def value(fields: Int): UnsafeRow = {
      val row = new UnsafeRow(fields)
      row.pointTo(bytes, bytes.length)
      row
    }
  }

  /**
   * A key's progress, kept as one state entry read and written once per micro-batch: `finalBefore`,
   * the timer and the block starts (8 bytes each); with pending rows, then each one's time, length
   * and bytes, padded to 8 bytes, and the number of block starts (4 bytes), so that its length is
   * never a multiple of 8, as it is without them (all of version 2).
   */
  final class Progress(var finalBefore: Long, var timerMs: Long, var blockStarts: Array[Long], var pending: Vector[PendingRow]) {
    def timer: Option[Long] = if (timerMs == Progress.NoTimer) None else Some(timerMs)

    def encode: Array[Byte] = if (pending.isEmpty) {
      val out = java.nio.ByteBuffer.allocate(16 + 8 * blockStarts.length)
      out.putLong(finalBefore).putLong(timerMs)
      blockStarts.foreach(out.putLong)
      out.array()
    } else {
      val pendingBytes = pending.map(12 + _.bytes.length).sum
      val out = java.nio.ByteBuffer.allocate(16 + 8 * blockStarts.length + ((pendingBytes + 7) & ~7) + 4)
      out.putLong(finalBefore).putLong(timerMs)
      blockStarts.foreach(out.putLong)
      pending.foreach(r => out.putLong(r.time).putInt(r.bytes.length).put(r.bytes))
      out.putInt(out.capacity() - 4, blockStarts.length)
      out.array()
    }
  }

  object Progress {
    val NoTimer: Long = Long.MinValue

    def decode(bytes: Array[Byte]): Progress = {
      val in = java.nio.ByteBuffer.wrap(bytes)
      val finalBefore = in.getLong()
      val timerMs = in.getLong()
      if (bytes.length % 8 == 0) { // version 2
        new Progress(finalBefore, timerMs, Array.fill((bytes.length - 16) / 8)(in.getLong()), Vector.empty)
      } else {
        val starts = Array.fill(in.getInt(bytes.length - 4))(in.getLong())
        val pending = Vector.newBuilder[PendingRow]
        // a pending row takes at least 12 bytes, more than the padding
        while (bytes.length - 4 - in.position() >= 12) {
          val time = in.getLong()
          val row = new Array[Byte](in.getInt())
          in.get(row)
          pending += PendingRow(time, row)
        }
        new Progress(finalBefore, timerMs, starts, pending.result())
      }
    }
  }
}
