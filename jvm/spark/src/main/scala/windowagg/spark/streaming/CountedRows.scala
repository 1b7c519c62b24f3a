package windowagg.spark.streaming

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, BindReferences, BoundReference, Expression, InterpretedOrdering, SortOrder, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.DataType

import windowagg.WindowDefinition
import windowagg.core.{ResolvedWindows, RowFinality, Timed}
import windowagg.spark.common.{AggregateBeforeShuffle, Emission, Engine, NotWindowed, OpenWindows, SparkAggregates,
  WindowAggError, WindowAggException}

/**
 * Kinds cut at rows (Storm's count and duration windows) in streaming, emitted final, and early
 * under a policy that fires early (the changes reported to it are the on-time rows' times): duration
 * windows evaluated every slide of time under the bounds their rows' times give them; other windows
 * as the rows so far in their order so far cut them, their bounds following their rows, so that a
 * value fired for bounds that late rows then shift is retracted once the rows settle.
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
  /**
   * Version 1 (0.2.0, 0.3.0) kept a key's rows and positions in variables of the key's own group,
   * with a timer of Spark's per key, and converts to this one ([[PreviousLayouts.Rows1]]); version 4
   * keeps them in entries of the key's in the processor's one state map ([[StateEntries]]), the
   * waiting rows as one entry and the positions, times and the key's timer as another (`Timers`
   * files the key by it); versions 2 and 3 were builds of 0.4.0 never released.
   */
  override val layout: StateLayout = StateLayout("rows", 4)

  override def combine(spec: StreamingWindowSpec, mode: AggregateBeforeShuffle.Mode): Combine =
    Combine.none("Storm's windows are cut at rows")

  /**
   * Early values of windows whose bounds follow their rows (counts, slides in rows) can go stale as
   * late rows shift them; a length of time evaluated every slide of time keeps its bounds.
   */
  override def retracts(windows: ResolvedWindows): Boolean = !spansOfTime(windows)

  private def spansOfTime(windows: ResolvedWindows): Boolean = Engine.of(windows).cutAtRows.exists(_.spansOfTime)

  /** A key's rows wait for windows that later rows would make, which an idle key never sends. */
  override def keepsIdleKeys(windows: ResolvedWindows): Boolean = true

  /**
   * Windows come out final, or early too (emit 'every ...'), but not every change (updates): a
   * window's rows are settled only as the watermark passes them. Not early with Storm's views,
   * known only as a window is evaluated.
   */
  override def check(definition: WindowDefinition, windows: ResolvedWindows, emission: Emission, withViews: Boolean): Unit = {
    if (emission.emitsChanges) {
      throw WindowAggException(WindowAggError.INVALID_OPTION,
        s"$definition cuts windows at rows, whose order is settled only once the watermark passes them, so emit " +
          s"'${emission.name}' has no change of a window to report before then: its windows come out final only (emit " +
          "'final', and the append output mode), or also early (emit 'every <interval>', and the update output mode: " +
          "a window's value before its rows settle, retracted if they shift)")
    }
    if (emission.marksFinal && withViews) {
      throw WindowAggException(WindowAggError.INVALID_OPTION,
        s"$definition: Storm's new_rows and expired_rows views of a window are known only once it is evaluated, " +
          "so they have no early value: use emit 'final' with them")
    }
  }

  override def previousLayout: Option[PreviousLayout] = Some(PreviousLayouts.Rows1)

  override def open(spec: StreamingWindowSpec, tools: TaskTools, states: KeyStates, timers: Timers): KeyLogic =
    new Logic(spec, tools, states, timers)

  val SettledVariable = "settled"
  val WaitingVariable = "waiting"
  val ProgressVariable = "progress"

  /**
   * No window is open between evaluations: the key holds its settled rows that windows still to
   * come may need, and the rows waiting for the watermark.
   */
  override def inspect(windows: ResolvedWindows, keyTypes: Seq[DataType], aggregates: SparkAggregates, states: KeyStates,
      key: InternalRow, out: KeyHolding): Unit = {
    val stored = states.value(ProgressVariable).get()
    val waiting = Option(states.value(WaitingVariable).get()).map(decodeWaiting).getOrElse(Vector.empty)
    if (stored != null || waiting.nonEmpty) {
      val progress = Option(stored).map(Progress.decode).getOrElse(Progress.empty)
      out.heldRows(progress.next - progress.first + waiting.length)
      out.timer(progress.timer)
    }
  }

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

  /** The waiting rows as stored: one entry, each row's length then its bytes. */
  def encodeWaiting(rows: Seq[Array[Byte]]): Array[Byte] = {
    val buffer = ByteBuffer.allocate(rows.map(4 + _.length).sum)
    rows.foreach(r => buffer.putInt(r.length).put(r))
    buffer.array()
  }

  def decodeWaiting(bytes: Array[Byte]): Vector[Array[Byte]] = {
    val buffer = ByteBuffer.wrap(bytes)
    val rows = Vector.newBuilder[Array[Byte]]
    while (buffer.hasRemaining) {
      val row = new Array[Byte](buffer.getInt)
      buffer.get(row)
      rows += row
    }
    rows.result()
  }

  private val NoValue = Long.MinValue

  /**
   * A key's positions and times, one state entry: its settled rows are at positions [`first`,
   * `next`); rows in no window are accounted for before `accountedBefore`; rows are settled up to
   * the watermark `settledUntil`; with Storm's window view, the first row of the last window; and
   * the key's timer (the last two [[NoValue]] when there is none).
   */
  /** A key's positions and times as stored ([[Progress]]), built by a conversion from an earlier layout. */
  def progress(first: Long, next: Long, accountedBefore: Long, settledUntil: Long, lastWindowHead: Option[Long],
      timerMs: Option[Long]): Array[Byte] =
    new Progress(first, next, accountedBefore, settledUntil, lastWindowHead.getOrElse(NoValue), timerMs.getOrElse(NoValue)).encode

  private final class Progress(var first: Long, var next: Long, var accountedBefore: Long, var settledUntil: Long,
      var lastWindowHead: Long, var timerMs: Long) {
    def timer: Option[Long] = Option.when(timerMs != NoValue)(timerMs)

    def encode: Array[Byte] =
      ByteBuffer.allocate(48).putLong(first).putLong(next).putLong(accountedBefore).putLong(settledUntil)
        .putLong(lastWindowHead).putLong(timerMs).array()
  }

  private object Progress {
    def empty: Progress = new Progress(0L, 0L, 0L, Long.MinValue, NoValue, NoValue)

    def decode(bytes: Array[Byte]): Progress = {
      val in = ByteBuffer.wrap(bytes)
      new Progress(in.getLong, in.getLong, in.getLong, in.getLong, in.getLong, in.getLong)
    }
  }

  private final class Logic(spec: StreamingWindowSpec, tools: TaskTools, states: KeyStates, timers: Timers) extends KeyLogic {
    private val aggregates = tools.aggregates
    private val kind = spec.engine.cutAtRows.get
    private val settled: Entries[Long, Array[Byte]] = states.map(SettledVariable)
    private val waiting = states.value(WaitingVariable)
    private val progressState = states.value(ProgressVariable)
    private val finality = new RowFinality(kind)
    private val order = spec.tieOrder.map(BindReferences.bindReference(_: Expression, spec.valueAttributes))
    private val tieOrder = UnsafeProjection.create(order)
    private val tieFields = order.length
    private val tieOrdering = new InterpretedOrdering(order.zipWithIndex.map { case (e, i) =>
      SortOrder(BoundReference(i, e.dataType, e.nullable), Ascending)
    })

    override def onRows(key: InternalRow, rows: Iterator[Input], watermark: Long, out: Emitter): Unit = {
      val progress = readProgress()
      var deadline = settle(progress, watermark, out)
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
      if (arrived.nonEmpty) waiting.update(encodeWaiting(readWaiting() ++ arrived))
      val marks = arrived.iterator.map(ByteBuffer.wrap(_).getLong).toArray.distinct.sorted
      val fireAt = out.fire(watermark, marks, openWindows(progress, watermark))
      scheduleTimer(progress, (deadline ++ fireAt).minOption)
      progressState.update(progress.encode)
    }

    override def onTimer(key: InternalRow, watermark: Long, out: Emitter): Unit = {
      val progress = readProgress()
      if (!timers.due(progress.timer)) return
      progress.timerMs = NoValue // the fired timer is gone
      val nextEnd = settle(progress, watermark, out)
      val fireAt = out.fire(watermark, Array.emptyLongArray, openWindows(progress, watermark))
      scheduleTimer(progress, (nextEnd ++ fireAt).minOption)
      progressState.update(progress.encode)
    }

    override def expire(key: InternalRow, watermark: Long, out: Emitter): Unit = {
      val progress = readProgress()
      settle(progress, watermark, out, again = true)
      out.settled(Long.MaxValue) // no window of the key comes out any more: values fired early go
      // every row is behind the watermark now: those no window took yet never will be
      var position = unwindowedFrom
      while (position < keptUntil) {
        out.notWindowed(NotWindowed.Expired)
        position += 1
      }
      readWaiting().foreach(_ => out.notWindowed(NotWindowed.Expired))
      (progress.first until progress.next).foreach(settled.remove)
      waiting.clear()
      progressState.clear()
    }

    /**
     * The key's windows not evaluated yet, for the emission policy, over the settled rows kept and
     * the rows waiting. Where rows follow from their times ([[windowagg.core.RowWindows.spansOfTime]]),
     * those ending at or after the watermark that hold a changed time, under their final bounds;
     * otherwise the windows the kind's cursor makes of those rows in their order so far that end at
     * or after the watermark and the first changed time (a window before it has the same rows).
     */
    private def openWindows(progress: Progress, watermark: Long): OpenWindows = new OpenWindows {
      override def isEmpty: Boolean = progress.next == progress.first && waiting.get() == null

      override def holding(marks: Array[Long])(f: (Long, Long, InternalRow) => Unit): Unit =
        if (kind.spansOfTime) spansHolding(marks)(f)
        else if (marks.nonEmpty) {
          val rows = keptRows(progress) ++ inOrder(readWaiting().map(WaitingRow(_, tieFields)).toArray).iterator
            .map(r => Timed(r.time, aggregates.fromBytes(r.partial)))
          val cursor = kind.rowCursor(progress.first, rows, aggregates, until = None, views = false)(_ => ())
          val from = math.max(watermark, marks.head)
          var lastStart = 0L
          var lastEnd = Long.MinValue
          while (cursor.advance()) {
            // a window evaluated again at its time (several triggers at one time) is one early value
            if (cursor.end >= from && (cursor.start != lastStart || cursor.end != lastEnd)) {
              f(cursor.start, cursor.end, cursor.aggregate)
              lastStart = cursor.start
              lastEnd = cursor.end
            }
          }
        }

      private def spansHolding(marks: Array[Long])(f: (Long, Long, InternalRow) => Unit): Unit = {
        val open = marks.iterator.flatMap(kind.windowsHolding).filter(_._2 >= watermark).toArray.distinct.sortBy(_._2)
        if (open.nonEmpty) {
          val rows = (keptRows(progress) ++ readWaiting().iterator.map { bytes =>
            val row = WaitingRow(bytes, tieFields)
            Timed(row.time, aggregates.fromBytes(row.partial))
          }).toArray
          open.foreach { case (start, end) =>
            val held = rows.filter(r => r.time > start && r.time <= end)
            if (held.nonEmpty) f(start, end, held.foldLeft(aggregates.newEmpty())((sum, r) => aggregates.mergeInto(sum, r.partial)))
          }
        }
      }
    }

    /** The settled rows kept, in order, each with its partial aggregate (a buffer of its own). */
    private def keptRows(progress: Progress): Iterator[Timed[InternalRow]] =
      (progress.first until progress.next).iterator.map { position =>
        val bytes = settled.get(position)
        Timed(ByteBuffer.wrap(bytes).getLong, aggregates.fromBytes(bytes, 8, bytes.length - 8))
      }

    /** Rows in the order windows cut them: time, then the tie order. */
    private def inOrder(rows: Array[WaitingRow]): Array[WaitingRow] =
      rows.sortWith((a, b) => a.time < b.time || (a.time == b.time && tieOrdering.compare(a.order, b.order) < 0))

    /** Keeps the key's one timer (also kept in its progress) at the expiry of `nextEnd`, or none. */
    private def scheduleTimer(progress: Progress, nextEnd: Option[Long]): Unit =
      progress.timerMs = timers.move(progress.timer, nextEnd.map(timers.expiryMs)).getOrElse(NoValue)

    // one read: get() is null for a key without state
    private def readProgress(): Progress = Option(progressState.get()).map(Progress.decode).getOrElse(Progress.empty)

    private def readWaiting(): Vector[Array[Byte]] = Option(waiting.get()).map(decodeWaiting).getOrElse(Vector.empty)

    // after settle: the positions of the kept rows that no window has taken yet
    private var unwindowedFrom = 0L
    private var keptUntil = 0L

    /**
     * Settles the waiting rows behind the watermark, reports the windows that became final and the
     * rows in no window, drops settled rows no window still needs, and returns the next time the
     * key must be looked at: its earliest waiting row, or the end of a window its rows already make.
     * Done once per watermark, unless `again` (windows already reported are not reported twice).
     */
    private def settle(progress: Progress, watermark: Long, out: Emitter, again: Boolean = false): Option[Long] = {
      val from = progress.settledUntil
      if (watermark <= from && !again) return progress.timer.map(timers.timerEnd)
      val (ready, still) = readWaiting().map(WaitingRow(_, tieFields)).toArray.partition(_.time < watermark)
      val first = progress.first
      val kept = keptRows(progress).toVector // read before the arriving rows join them
      val arriving = inOrder(ready)
      arriving.iterator.zipWithIndex.foreach { case (row, i) =>
        settled.update(progress.next + i, settledEntry(row.time, row.partial))
      }
      progress.next += arriving.length
      val rows = kept ++ arriving.iterator.map(r => Timed(r.time, aggregates.fromBytes(r.partial)))
      val previousWindowHead = Option.when(progress.lastWindowHead != NoValue)(progress.lastWindowHead)
      val result = finality.settle(rows, first, progress.accountedBefore, from, watermark, aggregates, spec.withViews,
          previousWindowHead) { w =>
        if (spec.withViews) out.finalWindow(w.start, w.end, w.aggregate, w.newRows, w.expiredRows)
        else out.finalWindow(w.start, w.end, w.aggregate)
      }(_ => out.notWindowed(NotWindowed.NoWindow))
      (first until first + result.drop).foreach(settled.remove)
      unwindowedFrom = result.unwindowedFrom
      keptUntil = first + rows.length
      progress.first = first + result.drop
      progress.accountedBefore = result.accountedBefore
      progress.settledUntil = watermark
      out.settled(watermark)
      if (spec.withViews) result.lastWindowHead.foreach(progress.lastWindowHead = _)
      if (ready.nonEmpty) {
        if (still.isEmpty) waiting.clear() else waiting.update(encodeWaiting(still.map(_.bytes).toSeq))
      }
      val nextWaiting = if (still.isEmpty) None else Some(still.map(_.time).min)
      (nextWaiting ++ result.nextEnd).minOption
    }
  }
}
