package windowagg.spark.streaming

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.encoders.encoderFor
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.streaming._
import org.apache.spark.sql.types.DataType
import org.apache.spark.sql.windowagg.SparkInternals
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.types.UTF8String

import windowagg.spark.common.{Emission, EmissionTrigger, KeyValue, NotWindowed, OpenWindows, PackedRow, SparkAggregates,
  WindowOutput, WindowView, WindowsOfKey}


/**
 * The one streaming processor of windowed aggregations (transformWithState, event or processing
 * time), for every kind: it reads each input row once ([[windowagg.spark.common.RowIntake]] routes the rows the definition
 * does not window), hands the kind's `KeyLogic` the rest, and emits what the kind reports through
 * the query's [[windowagg.spark.common.Emission]] policy, as rows of [[StreamingWindowSpec.outputSchema]] in binary form.
 *
 * Spark groups the rows by state partition ([[KeyBucket]]), not by key: a call takes a partition's
 * rows, each key's together (sorted by key before; in real-time mode, runs of a key as they come),
 * and the kinds keep their state per key in `KeyStates`, each key's timer in it, filed by `Timers`,
 * so that Spark keeps one timer per partition instead of one per key. A checkpoint of the previous
 * release stays grouped by key ([[StateKeying.ByKey]]): a call then takes one key's rows, and a key's
 * state in the previous layout is converted before the key is read (`PreviousLayouts`).
 */
final class KeyedWindowProcessor(val spec: StreamingWindowSpec) extends StatefulProcessor[Row, Row, Array[Byte]] {
  @transient private var tools: TaskTools = _
  @transient private var logic: KeyLogic = _
  @transient private var input: Input = _
  @transient private var keyWindows: WindowsOfKey = _
  @transient private var emitter: Emitter = _
  @transient private var whole: UnsafeRow = _
  @transient private var states: HandleKeyStates = _
  @transient private var timers: Timers = _
  // with expireIdleKeys: the latest time among the key's rows
  @transient private var latestRow: KeyValue[Array[Byte]] = _
  @transient private var latestSeen: Option[Long] = None
  // grouped by key: the group's key bytes, and its state in the previous release's layout
  @transient private var groupKeyBytes: Row => Array[Byte] = _
  @transient private var previous: Option[PreviousLayout.Converter] = None

  private val kind: StreamingKind = spec.kind

  /** What the checkpoint records about this aggregation's state, checked on restart ([[StreamingStartCheck]]). */
  def stateRecord: StateRecord =
    StateRecord(kind.layout.name, kind.layout.version, spec.keying, spec.description, kind.previousLayout.map(_.version), spec.reading)

  def emission: Emission = spec.emission

  def retracts: Boolean = kind.retracts(spec.windows)

  override def init(outputMode: OutputMode, timeMode: TimeMode): Unit = {
    val partition = Option(TaskContext.get()).map(_.partitionId()).getOrElse(0)
    tools = TaskTools.borrow(spec, partition)
    input = new Input(spec.intake)
    keyWindows = new WindowsOfKey(spec.windows, spec.keySchema.map(_.dataType))
    whole = new UnsafeRow(spec.valueAttributes.length)
    states = new HandleKeyStates(new StateEntries(getHandle))
    emitter = new Emitter(spec, tools.aggregates, tools.toOutput, spec.emission.trigger(states.value, retracts))
    timers = new Timers(spec.ticksPerMilli, spec.keying == StateKeying.ByPartition, getHandle, states)
    if (spec.expireIdleAfter.isDefined) latestRow = states.value(KeyedWindowProcessor.LatestRowVariable)
    logic = kind.open(spec, tools, states, timers)
    if (spec.keying == StateKeying.ByKey) {
      groupKeyBytes = KeyedWindowProcessor.keyBytes(spec)
      previous = kind.previousLayout.map(_.open(getHandle, states))
    }
  }

  override def close(): Unit = if (tools != null) {
    TaskTools.giveBack(tools)
    tools = null
  }

  /** The watermark, or in processing time the micro-batch's time (the time its rows carry), in ticks. */
  private def watermarkTicks(timerValues: TimerValues): Long = Math.multiplyExact(
    if (spec.processingTime) timerValues.getCurrentProcessingTimeInMs() else timerValues.getCurrentWatermarkInMs(),
    spec.ticksPerMilli)

  override def handleInputRows(group: Row, inputRows: Iterator[Row], timerValues: TimerValues): Iterator[Array[Byte]] = {
    val watermark = watermarkTicks(timerValues)
    if (spec.keying == StateKeying.ByKey) {
      // one key per group
      val keyBytes = converted(group)
      timers.start()
      timers.finishing(onRows(keyBytes, inputRows, watermark))
    } else {
      timers.start()
      val rows = inputRows.buffered
      // each key's rows come together: one key at a time, its output taken before the next key is read
      timers.finishing(Iterator.continually(rows).takeWhile(_.hasNext).flatMap { _ =>
        val keyBytes = rows.head.getAs[Array[Byte]](KeyBytesOrdinal)
        val ofKey = new Iterator[Row] {
          override def hasNext: Boolean = rows.hasNext && java.util.Arrays.equals(rows.head.getAs[Array[Byte]](KeyBytesOrdinal), keyBytes)
          override def next(): Row = rows.next()
        }
        val out = onRows(keyBytes, ofKey, watermark)
        ofKey.foreach(_ => ()) // a kind reads every row; none may be left for the next key
        out
      })
    }
  }

  /**
   * Grouped by key: the group's key bytes, with the key's state moved from the previous release's
   * layout if it is still there, its timer (Spark's, registered by that release) taken over.
   */
  private def converted(group: Row): Array[Byte] = {
    val keyBytes = groupKeyBytes(group)
    previous.foreach { converter =>
      states.use(keyBytes)
      converter.convert().foreach(c => timers.adopt(c.timerMs))
    }
    keyBytes
  }

  /** One key's rows of a micro-batch. */
  private def onRows(keyBytes: Array[Byte], inputRows: Iterator[Row], watermark: Long): Iterator[Array[Byte]] = {
    val keyRow = useKey(keyBytes)
    input.intake.use(keyWindows(keyRow))
    // a key idle for long enough is forgotten before its new rows start it afresh
    expireIfIdle(keyRow, watermark)
    var latest = latestSeen
    val before = latest
    // rows the definition does not window go out here; the kind sees the others
    val windowed = inputRows.flatMap { row =>
      input.piece = if (row.isNullAt(PieceOrdinal)) null else row.getAs[Array[Byte]](PieceOrdinal)
      if (row.isNullAt(WholeOrdinal)) {
        input.whole = null
        input.count = 1L
        emitter.rowsIn += logic.countOf(input.piece)
        Some(input)
      } else {
        val bytes = row.getAs[Array[Byte]](WholeOrdinal)
        whole.pointTo(bytes, bytes.length)
        // in processing time a row's time is when the processor reads it: current_timestamp() is the
        // micro-batch's time, as this clock is, except in real-time mode, where this clock is live
        if (spec.processingTime) whole.setLong(spec.timeOrdinal, watermark)
        input.whole = whole
        input.count = if (input.piece == null) 1L else logic.countOf(input.piece)
        val why = input.intake.classify(whole)
        if (why == null) {
          emitter.rowsIn += input.count
          // the kind moves its timer after reading every row, so the time the key idles at is the batch's by then
          if (latestRow != null && latest.forall(_ < input.time)) {
            latest = Some(input.time)
            timers.idleAt = latest.map(idleAtMs)
          }
          Some(input)
        } else {
          emitter.notWindowed(whole, why, input.count)
          None
        }
      }
    }
    logic.onRows(keyRow, windowed, watermark, emitter)
    if (latest != before) latest.foreach(t => latestRow.update(StateEntries.longBytes(t)))
    emitter.finish()
  }

  /** The partition's timer: every key that may be due (`Timers.sweep`), its kind looking whether it is. */
  override def handleExpiredTimer(group: Row, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo): Iterator[Array[Byte]] = {
    val watermark = watermarkTicks(timerValues)
    if (spec.keying == StateKeying.ByKey) converted(group)
    timers.start()
    timers.finishing(timers.sweep(Math.floorDiv(watermark, spec.ticksPerMilli)).flatMap { keyBytes =>
      val keyRow = useKey(keyBytes)
      if (!expireIfIdle(keyRow, watermark)) logic.onTimer(keyRow, watermark, emitter)
      emitter.finish()
    })
  }

  /** The key whose state, timer and output come next. */
  private def useKey(keyBytes: Array[Byte]): UnsafeRow = {
    val keyRow = new UnsafeRow(spec.keySchema.length)
    keyRow.pointTo(keyBytes, keyBytes.length)
    states.use(keyBytes)
    emitter.start(keyRow)
    keyRow
  }

  /**
   * With expireIdleKeys: forgets the key if the watermark is that long past its latest row (the kind
   * settles it and routes the rows no window took) and says so; otherwise keeps the latest row's
   * time in `latestSeen`, and the key's timer no later than when the key would become idle
   * (`Timers.idleAt`).
   */
  private def expireIfIdle(keyRow: InternalRow, watermark: Long): Boolean = {
    latestSeen = if (latestRow == null) None else Option(latestRow.get()).map(StateEntries.longOf)
    if (latestSeen.exists(t => watermark >= idleFrom(t))) {
      logic.expire(keyRow, watermark, emitter)
      emitter.forget()
      latestRow.clear()
      latestSeen = None
      timers.idleAt = None
      true
    } else {
      timers.idleAt = latestSeen.map(idleAtMs)
      false
    }
  }

  /** The first tick at which a key whose latest row is at `latest` is idle. */
  private def idleFrom(latest: Long): Long = {
    val after = spec.expireIdleAfter.get
    if (latest > Long.MaxValue - after) Long.MaxValue else latest + after
  }

  /** The timer (ms) that fires once a key whose latest row is at `latest` is idle. */
  private def idleAtMs(latest: Long): Long = timers.expiryMs(idleFrom(latest) - 1)

  // where each part of an input row is (StreamingWindowSpec.inputSchema)
  private val KeyBytesOrdinal = 0
  private val WholeOrdinal = 1
  private val PieceOrdinal = 2
}

private[spark] object KeyedWindowProcessor {
  /** With expireIdleKeys: the key's variable of the latest time among its rows. */
  val LatestRowVariable = "latestRow"

  /** A group's keys (grouped by key) packed as the plan packs each row's ([[CombineBeforeShuffle.plan]]). */
  def keyBytes(spec: StreamingWindowSpec): Row => Array[Byte] = {
    val toInternal = encoderFor(Encoders.row(spec.keySchema)).createSerializer()
    val pack = internalKeyBytes(spec.keySchema.map(_.dataType))()
    group => pack(toInternal(group))
  }

  /** Keys of `types` in Spark's internal form packed as the plan packs them: a packer per task (it reuses its row). */
  def internalKeyBytes(types: Seq[DataType]): () => InternalRow => Array[Byte] = () => {
    val keys = types.zipWithIndex.map { case (t, i) => SparkInternals.normalizedKey(BoundReference(i, t, nullable = true)) }
    val pack = UnsafeProjection.create(Seq(PackedRow(keys)))
    key => pack(key).getBinary(0)
  }
}

/**
 * Where a key's kind logic reports windows, and the processor rows it could not window; the query's
 * [[windowagg.spark.common.Emission]] policy (its `trigger`) decides which become output rows, and
 * fires on its own when a kind calls [[fire]]. One per task, reused key after key.
 */
private[spark] final class Emitter(spec: StreamingWindowSpec, aggregates: SparkAggregates, toOutput: UnsafeProjection,
    trigger: EmissionTrigger) extends WindowOutput {
  import StreamingWindowSpec._

  private val emission = spec.emission
  private var rows = mutable.ArrayBuffer.empty[Array[Byte]]
  private var keyRow: InternalRow = _
  // what emitted() needs, built once per task: the output row is reused, as toOutput copies it
  private val outputRow = new GenericInternalRow(spec.isFinalOrdinal + 1)
  private val keyTypes: Array[DataType] = spec.keySchema.fields.map(_.dataType)
  private val resultTypes: Array[DataType] = spec.functions.map(_.dataType).toArray
  private val viewOf: Array[WindowView.View] = spec.functions.indices.map(i => spec.views.lift(i).getOrElse(WindowView.All)).toArray

  /**
   * The rows the processor handed the kind in the key's call so far (a policy may fire by rows); a
   * piece combined before the shuffle counts the rows its kind knows it holds (a session run: one).
   */
  var rowsIn: Long = 0L

  def start(key: InternalRow): Unit = {
    keyRow = key
    rowsIn = 0L
    trigger.start()
  }

  def finish(): Iterator[Array[Byte]] = {
    val out = rows
    rows = mutable.ArrayBuffer.empty[Array[Byte]]
    out.iterator
  }

  /** Whether the emission wants every change of an open window ([[changed]]), so the kinds compute them. */
  def wantsChanges: Boolean = emission.emitsChanges

  /** A window that became final, emitted if the policy says so. */
  def finalWindow(start: Long, end: Long, buffer: InternalRow): Unit =
    if (trigger.onFinal(start, end, this)) rows += emitted(WindowKind, start, end, buffer, null, null, null, null, isFinal = true)

  /** A final window whose aggregates are over its rows, or (Storm's view) its new or its expired rows. */
  def finalWindow(start: Long, end: Long, buffer: InternalRow, newRows: InternalRow, expiredRows: InternalRow): Unit =
    if (trigger.onFinal(start, end, this)) {
      rows += emitted(WindowKind, start, end, buffer, newRows, expiredRows, null, null, isFinal = true)
    }

  /** An open window a micro-batch changed, with its current value. */
  def changed(start: Long, end: Long, buffer: InternalRow): Unit =
    if (trigger.onChange(start, end)) rows += emitted(WindowKind, start, end, buffer, null, null, null, null, isFinal = false)

  /** A window merged into another (sessions). */
  def retracted(start: Long, end: Long): Unit = if (trigger.onMerged(start, end)) retract(start, end)

  /** Every window of the key ending before `before` is final now (windows cut at rows, their rows settled). */
  def settled(before: Long): Unit = trigger.settled(before, this)

  /**
   * The policy's own firing, once per key and call after the kind has read the key's rows or timer:
   * `marks` are the times the call changed (sorted), `open` the key's open windows. Returns the tick
   * the key's timer must be no later than for the policy.
   */
  def fire(watermark: Long, marks: Array[Long], open: OpenWindows): Option[Long] =
    trigger.fire(watermark, rowsIn, marks, open, this)

  /** The key's state is gone: so is the policy's. */
  def forget(): Unit = trigger.forget()

  override def early(start: Long, end: Long, buffer: InternalRow): Unit =
    rows += emitted(WindowKind, start, end, buffer, null, null, null, null, isFinal = false)

  override def retract(start: Long, end: Long): Unit =
    rows += emitted(RetractionKind, start, end, null, null, null, null, null, isFinal = false)

  /** `count` equal rows that are in no window, with their values. */
  def notWindowed(value: InternalRow, why: NotWindowed, count: Long): Unit = {
    var i = 0L
    while (i < count) {
      rows += emitted(LateKind, 0L, 0L, null, null, null, why.reason, value, isFinal = false)
      i += 1
    }
  }

  /** A row in no window whose values are no longer kept (kinds cut at rows keep partials): its reason only. */
  def notWindowed(why: NotWindowed): Unit =
    rows += emitted(LateKind, 0L, 0L, null, null, null, why.reason, null, isFinal = false)

  /**
   * One output row in binary form. `buffer` is null for rows without aggregates (late rows,
   * retractions), `newRows` and `expiredRows` null unless some aggregate is over Storm's view,
   * `lateReason` null unless the row is in no window.
   */
  private def emitted(kind: Int, start: Long, end: Long, buffer: InternalRow, newRows: InternalRow,
      expiredRows: InternalRow, lateReason: String, lateValue: InternalRow, isFinal: Boolean): Array[Byte] = {
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
    row.setBoolean(spec.isFinalOrdinal, isFinal)
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
