package windowagg.spark

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, BindReferences, BoundReference, Expression, InterpretedOrdering, SortOrder, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.streaming._

import windowagg.RowWindows
import windowagg.core.{RowFinality, Timed}

/**
 * The windows of one key in Structured Streaming for kinds cut at rows (count windows, windows
 * evaluated every n rows or every row), emitted final.
 *
 * State per key: the settled rows (behind the watermark, so their order is fixed), one partial
 * aggregate each under its position among the key's rows, only as many as a window not yet final
 * can hold (a count window's length, or a duration's worth of rows); the rows still ahead of the
 * watermark, each with its partial and its tie order, since rows sharing their time may still
 * come; the position of the first settled row kept, how far rows in no window are accounted for,
 * the watermark rows are settled up to, with Storm's window view the first row of the last window
 * (whose rows are kept for the next window's view), and one event-time timer. As the watermark passes, waiting
 * rows settle in (time, tie order), and the kind's cursor runs over the settled rows as in batch.
 */
final class RowWindowProcessor(spec: StreamingWindowSpec, kind: RowWindows) extends KeyedWindowProcessor(spec) {
  import StreamingWindowSpec._

  @transient private var settled: MapState[Long, Array[Byte]] = _
  @transient private var waiting: ListState[Array[Byte]] = _
  @transient private var firstPosition: ValueState[Long] = _
  @transient private var accountedBefore: ValueState[Long] = _
  @transient private var settledUntil: ValueState[Long] = _
  @transient private var lastWindowHead: ValueState[Long] = _
  @transient private var timer: ValueState[Long] = _
  @transient private var finality: RowFinality = _
  @transient private var tieOrder: UnsafeProjection = _
  @transient private var tieOrdering: InterpretedOrdering = _
  @transient private var tieFields: Int = _

  override protected def stateLayout: StateLayout = RowWindowProcessor.Layout

  override protected def initState(handle: StatefulProcessorHandle): Unit = {
    settled = handle.getMapState[Long, Array[Byte]]("settled", Encoders.scalaLong, Encoders.BINARY, TTLConfig.NONE)
    waiting = handle.getListState[Array[Byte]]("waiting", Encoders.BINARY, TTLConfig.NONE)
    firstPosition = handle.getValueState[Long]("firstPosition", Encoders.scalaLong, TTLConfig.NONE)
    accountedBefore = handle.getValueState[Long]("accountedBefore", Encoders.scalaLong, TTLConfig.NONE)
    settledUntil = handle.getValueState[Long]("settledUntil", Encoders.scalaLong, TTLConfig.NONE)
    lastWindowHead = handle.getValueState[Long]("lastWindowHead", Encoders.scalaLong, TTLConfig.NONE)
    timer = handle.getValueState[Long]("timer", Encoders.scalaLong, TTLConfig.NONE)
    finality = new RowFinality(kind)
    val order = spec.tieOrder.map(BindReferences.bindReference(_: Expression, spec.valueAttributes))
    tieOrder = UnsafeProjection.create(order)
    tieFields = order.length
    tieOrdering = new InterpretedOrdering(order.zipWithIndex.map { case (e, i) =>
      SortOrder(BoundReference(i, e.dataType, e.nullable), Ascending)
    })
  }

  override def handleInputRows(key: Row, inputRows: Iterator[Row], timerValues: TimerValues): Iterator[Array[Byte]] = {
    val watermark = watermarkTicks(timerValues)
    val keyRow = internalKey(key)
    val out = mutable.ArrayBuffer.empty[Array[Byte]]
    var deadline = settle(keyRow, watermark, out)
    val arrived = mutable.ArrayBuffer.empty[Array[Byte]]
    inputRows.foreach { row =>
      val value = internalValue(row)
      if (value.isNullAt(spec.timeOrdinal)) out += lateRow(keyRow, value, ReasonNullTime)
      else {
        val t = readTime(value)
        if (finality.isLate(t, watermark)) out += lateRow(keyRow, value, ReasonLate)
        else {
          val partial = aggregates.newEmpty()
          aggregates.update(partial, value)
          arrived += RowWindowProcessor.waitingEntry(t, tieOrder(value), aggregates.toBytes(partial))
          deadline = Some(math.min(deadline.getOrElse(Long.MaxValue), t))
        }
      }
    }
    if (arrived.nonEmpty) waiting.appendList(arrived.toArray)
    scheduleTimer(deadline)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo): Iterator[Array[Byte]] = {
    timer.clear() // the fired timer is gone
    val out = mutable.ArrayBuffer.empty[Array[Byte]]
    scheduleTimer(settle(internalKey(key), watermarkTicks(timerValues), out))
    out.iterator
  }

  /** Keeps the key's one timer (also kept in `timer`) at the expiry of `nextEnd`, or none. */
  private def scheduleTimer(nextEnd: Option[Long]): Unit = {
    val current = if (timer.exists()) Some(timer.get()) else None
    moveTimer(current, nextEnd.map(expiryMs)) match {
      case same if same == current =>
      case Some(ms) => timer.update(ms)
      case None => timer.clear()
    }
  }

  /**
   * Settles the waiting rows behind the watermark, emits the windows that became final and the
   * rows in no window, drops settled rows no window still needs, and returns the next time the
   * key must be looked at: its earliest waiting row, or the end of a window its rows already make.
   */
  private def settle(keyRow: InternalRow, watermark: Long, out: mutable.ArrayBuffer[Array[Byte]]): Option[Long] = {
    val from = if (settledUntil.exists()) settledUntil.get() else Long.MinValue
    if (watermark <= from) return if (timer.exists()) Some(timerEnd(timer.get())) else None
    val (ready, still) = waiting.get().map(RowWindowProcessor.WaitingRow(_, tieFields)).toArray.partition(_.time < watermark)
    val first = if (firstPosition.exists()) firstPosition.get() else 0L
    val kept = settled.iterator().toArray.sortBy(_._1).map { case (_, bytes) =>
      val buffer = ByteBuffer.wrap(bytes)
      Timed(buffer.getLong, java.util.Arrays.copyOfRange(bytes, 8, bytes.length))
    }
    val arriving = ready.sortWith((a, b) => a.time < b.time || (a.time == b.time && tieOrdering.compare(a.order, b.order) < 0))
    arriving.iterator.zipWithIndex.foreach { case (row, i) =>
      settled.updateValue(first + kept.length + i, RowWindowProcessor.settledEntry(row.time, row.partial))
    }
    val rows = (kept.iterator ++ arriving.iterator.map(r => Timed(r.time, r.partial)))
      .map(r => Timed(r.time, aggregates.fromBytes(r.partial))).toIndexedSeq
    val accounted = if (accountedBefore.exists()) accountedBefore.get() else first
    val previousWindowHead = if (lastWindowHead.exists()) Some(lastWindowHead.get()) else None
    val result = finality.settle(rows, first, accounted, from, watermark, aggregates, spec.withViews, previousWindowHead) { w =>
      out += (if (spec.withViews) windowRow(keyRow, w.start, w.end, w.aggregate, w.newRows, w.expiredRows)
              else windowRow(keyRow, w.start, w.end, w.aggregate))
    }(_ => out += unwindowedRow(keyRow))
    (first until first + result.drop).foreach(settled.removeKey)
    firstPosition.update(first + result.drop)
    accountedBefore.update(result.accountedBefore)
    settledUntil.update(watermark)
    if (spec.withViews) result.lastWindowHead.foreach(lastWindowHead.update)
    if (ready.nonEmpty) {
      if (still.isEmpty) waiting.clear() else waiting.put(still.map(_.bytes))
    }
    val nextWaiting = if (still.isEmpty) None else Some(still.map(_.time).min)
    (nextWaiting ++ result.nextEnd).minOption
  }
}

object RowWindowProcessor {
  /** Per key: settled partials by position, waiting rows, positions and counters, the timer. */
  val Layout: StateLayout = StateLayout("rows", 1)

  /** A waiting row as stored: time, tie-order row (its length first), partial aggregate. */
  def waitingEntry(time: Long, order: UnsafeRow, partial: Array[Byte]): Array[Byte] = {
    val orderSize = order.getSizeInBytes
    val buffer = ByteBuffer.allocate(8 + 4 + orderSize + partial.length)
    buffer.putLong(time).putInt(orderSize)
    buffer.put(order.getBytes).put(partial)
    buffer.array()
  }

  final case class WaitingRow(bytes: Array[Byte], time: Long, order: UnsafeRow, partial: Array[Byte])

  object WaitingRow {
    def apply(bytes: Array[Byte], orderFields: Int): WaitingRow = {
      val buffer = ByteBuffer.wrap(bytes)
      val time = buffer.getLong
      val orderSize = buffer.getInt
      val order = new UnsafeRow(orderFields)
      order.pointTo(java.util.Arrays.copyOfRange(bytes, 12, 12 + orderSize), orderSize)
      WaitingRow(bytes, time, order, java.util.Arrays.copyOfRange(bytes, 12 + orderSize, bytes.length))
    }
  }

  /** A settled row as stored: time, partial aggregate. */
  def settledEntry(time: Long, partial: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(8 + partial.length).putLong(time).put(partial).array()
}
