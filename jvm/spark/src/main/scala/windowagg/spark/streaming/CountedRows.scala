package windowagg.spark.streaming

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.sql.Encoders
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, BindReferences, BoundReference, Expression, InterpretedOrdering, SortOrder, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.streaming.{ListState, MapState, StatefulProcessorHandle, TTLConfig, ValueState}

import windowagg.{ResolvedWindows, RowWindows, WindowDefinition}
import windowagg.core.{RowFinality, Timed}
import windowagg.spark.{AggregateBeforeShuffle, NotWindowed, WindowAggError, WindowAggException}

/**
 * Kinds cut at rows (Storm's count windows, windows evaluated every n rows or every row) in
 * streaming, emitted final only.
 *
 * State per key: the settled rows (behind the watermark, so their order is fixed), one partial
 * aggregate each under its position among the key's rows, only as many as a window not yet final
 * can hold (a count window's length, or a duration's worth of rows); the rows still ahead of the
 * watermark, each with its partial and its tie order, since rows sharing their time may still
 * come; the position of the first settled row kept, how far rows in no window are accounted for,
 * the watermark rows are settled up to, with Storm's window view the first row of the last window
 * (whose rows are kept for the next window's view), and one timer. As the watermark passes, waiting
 * rows settle in (time, tie order), and the kind's cursor runs over the settled rows as in batch.
 * Rows are never combined before the shuffle: a window counts them.
 */
private[spark] object CountedRows extends StreamingKind {
  override val layout: StateLayout = StateLayout("rows", 1)

  override def combine(spec: StreamingWindowSpec, mode: AggregateBeforeShuffle.Mode): Combine =
    Combine.none("Storm's windows are cut at rows")

  /** A key's rows wait for windows that later rows would make, which an idle key never sends. */
  override def keepsIdleKeys(windows: ResolvedWindows): Boolean = true

  override def check(definition: WindowDefinition, windows: ResolvedWindows, emission: Emission): Unit =
    if (emission != Emission.Final) {
      throw WindowAggException(WindowAggError.INVALID_OPTION,
        s"$definition cuts windows at rows, whose order is settled only once the watermark passes them: " +
          "its windows come out final only; use emit 'final' (and the append output mode)")
    }

  override def open(spec: StreamingWindowSpec, tools: TaskTools, handle: StatefulProcessorHandle, timers: Timers): KeyLogic =
    new Logic(spec, tools, handle, timers)

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

  private final class Logic(spec: StreamingWindowSpec, tools: TaskTools, handle: StatefulProcessorHandle, timers: Timers) extends KeyLogic {
    private val aggregates = tools.aggregates
    private val kind = spec.windows.asInstanceOf[RowWindows]
    private val settled: MapState[Long, Array[Byte]] =
      handle.getMapState[Long, Array[Byte]]("settled", Encoders.scalaLong, Encoders.BINARY, TTLConfig.NONE)
    private val waiting: ListState[Array[Byte]] = handle.getListState[Array[Byte]]("waiting", Encoders.BINARY, TTLConfig.NONE)
    private val firstPosition: ValueState[Long] = handle.getValueState[Long]("firstPosition", Encoders.scalaLong, TTLConfig.NONE)
    private val accountedBefore: ValueState[Long] = handle.getValueState[Long]("accountedBefore", Encoders.scalaLong, TTLConfig.NONE)
    private val settledUntil: ValueState[Long] = handle.getValueState[Long]("settledUntil", Encoders.scalaLong, TTLConfig.NONE)
    private val lastWindowHead: ValueState[Long] = handle.getValueState[Long]("lastWindowHead", Encoders.scalaLong, TTLConfig.NONE)
    private val timer: ValueState[Long] = handle.getValueState[Long]("timer", Encoders.scalaLong, TTLConfig.NONE)
    private val finality = new RowFinality(kind)
    private val order = spec.tieOrder.map(BindReferences.bindReference(_: Expression, spec.valueAttributes))
    private val tieOrder = UnsafeProjection.create(order)
    private val tieFields = order.length
    private val tieOrdering = new InterpretedOrdering(order.zipWithIndex.map { case (e, i) =>
      SortOrder(BoundReference(i, e.dataType, e.nullable), Ascending)
    })

    override def onRows(key: InternalRow, rows: Iterator[Input], watermark: Long, out: Emitter): Unit = {
      var deadline = settle(watermark, out)
      val arrived = mutable.ArrayBuffer.empty[Array[Byte]]
      rows.foreach { in =>
        if (finality.isLate(in.time, watermark)) out.notWindowed(in.whole, NotWindowed.Late, in.count)
        else {
          val partial = aggregates.newEmpty()
          aggregates.update(partial, in.whole)
          arrived += waitingEntry(in.time, tieOrder(in.whole), aggregates.toBytes(partial))
          deadline = Some(math.min(deadline.getOrElse(Long.MaxValue), in.time))
        }
      }
      if (arrived.nonEmpty) waiting.appendList(arrived.toArray)
      scheduleTimer(deadline)
    }

    override def onTimer(key: InternalRow, watermark: Long, out: Emitter): Unit = {
      timer.clear() // the fired timer is gone
      scheduleTimer(settle(watermark, out))
    }

    override def expire(key: InternalRow, watermark: Long, out: Emitter): Unit = {
      settle(watermark, out, again = true)
      // every row is behind the watermark now: those no window took yet never will be
      var position = unwindowedFrom
      while (position < keptUntil) {
        out.notWindowed(NotWindowed.Expired)
        position += 1
      }
      waiting.get().foreach(_ => out.notWindowed(NotWindowed.Expired))
      settled.clear()
      waiting.clear()
      Seq(firstPosition, accountedBefore, settledUntil, lastWindowHead, timer).foreach(_.clear())
    }

    /** Keeps the key's one timer (also kept in `timer`) at the expiry of `nextEnd`, or none. */
    private def scheduleTimer(nextEnd: Option[Long]): Unit = {
      val current = if (timer.exists()) Some(timer.get()) else None
      timers.move(current, nextEnd.map(timers.expiryMs)) match {
        case same if same == current =>
        case Some(ms) => timer.update(ms)
        case None => timer.clear()
      }
    }

    // after settle: the positions of the kept rows that no window has taken yet
    private var unwindowedFrom = 0L
    private var keptUntil = 0L

    /**
     * Settles the waiting rows behind the watermark, reports the windows that became final and the
     * rows in no window, drops settled rows no window still needs, and returns the next time the
     * key must be looked at: its earliest waiting row, or the end of a window its rows already make.
     * Done once per watermark, unless `again` (windows already reported are not reported twice).
     */
    private def settle(watermark: Long, out: Emitter, again: Boolean = false): Option[Long] = {
      val from = if (settledUntil.exists()) settledUntil.get() else Long.MinValue
      if (watermark <= from && !again) return if (timer.exists()) Some(timers.timerEnd(timer.get())) else None
      val (ready, still) = waiting.get().map(WaitingRow(_, tieFields)).toArray.partition(_.time < watermark)
      val first = if (firstPosition.exists()) firstPosition.get() else 0L
      val kept = settled.iterator().toArray.sortBy(_._1).map { case (_, bytes) =>
        val buffer = ByteBuffer.wrap(bytes)
        Timed(buffer.getLong, java.util.Arrays.copyOfRange(bytes, 8, bytes.length))
      }
      val arriving = ready.sortWith((a, b) => a.time < b.time || (a.time == b.time && tieOrdering.compare(a.order, b.order) < 0))
      arriving.iterator.zipWithIndex.foreach { case (row, i) =>
        settled.updateValue(first + kept.length + i, settledEntry(row.time, row.partial))
      }
      val rows = (kept.iterator ++ arriving.iterator.map(r => Timed(r.time, r.partial)))
        .map(r => Timed(r.time, aggregates.fromBytes(r.partial))).toIndexedSeq
      val accounted = if (accountedBefore.exists()) accountedBefore.get() else first
      val previousWindowHead = if (lastWindowHead.exists()) Some(lastWindowHead.get()) else None
      val result = finality.settle(rows, first, accounted, from, watermark, aggregates, spec.withViews, previousWindowHead) { w =>
        if (spec.withViews) out.finalWindow(w.start, w.end, w.aggregate, w.newRows, w.expiredRows)
        else out.finalWindow(w.start, w.end, w.aggregate)
      }(_ => out.notWindowed(NotWindowed.NoWindow))
      (first until first + result.drop).foreach(settled.removeKey)
      unwindowedFrom = result.unwindowedFrom
      keptUntil = first + rows.length
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
}
