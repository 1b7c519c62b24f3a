package windowagg.core

import scala.collection.mutable

/**
 * The windows of one key for a kind cut at rows (Storm's windows), in one pass over its rows in
 * order of (time, tie-break), one partial per row. A window is evaluated at trigger points, every
 * `n` rows or at multiples of a slide in time, and holds the last `n` rows or the rows of the last
 * `length` of time up to its end. The rows of the current window are a FIFO through a
 * [[FifoAggregator]], so a window costs amortized O(1) merges however many rows it holds.
 *
 * Reported bounds: `end` is the window's last time (inclusive); `start` is `end − length`
 * (exclusive, as Storm's `(end − length, end]`) for a length of time, and the time of the window's
 * first row for a length in rows.
 *
 * With `views`, each window also has Storm's window view (`TupleWindow.getNew()` and
 * `getExpired()`): the aggregate of its rows that were not in the key's previous window, and of the
 * previous window's rows that are not in it. Windows move forward through the rows, so both are
 * runs of rows; each row is merged into them at most once (a copy of every row is kept from the
 * previous window's first row on).
 *
 * @param firstPosition the place of the first row among the key's rows (row triggers count from 0)
 * @param until None when the rows are all there are (batch): rows still waiting at the end are in
 *              no window. Some(w) in streaming: windows ending at or after w are not evaluated yet.
 * @param leftOut hears the position of every row that leaves without having been in a window
 */
final class RowWindowCursor[P](
    length: RowWindowCursor.Length,
    trigger: RowWindowCursor.Trigger,
    firstPosition: Long,
    rows: Iterator[Timed[P]],
    agg: PartialAggregation[P],
    until: Option[Long],
    views: Boolean,
    leftOut: Long => Unit) extends WindowCursor[P] {
  import RowWindowCursor._

  private val input = rows.buffered
  private val window = new FifoAggregator[P](agg)
  private val times = new LongQueue() // mirrors `window`, oldest first
  private var headPosition = firstPosition // position of times(0)
  private var nextPosition = firstPosition
  private var lastTime = Long.MinValue
  private var covered = firstPosition
  private var repeats = 0 // further evaluations of the current window (several triggers at one time)
  private var finished = false
  private var waiting: Option[Long] = None
  private var evaluatedAny = false

  // the window view: copies of the rows from `copiesFrom` on, and the previous window's rows
  private val copies = new mutable.ArrayDeque[P]()
  private var copiesFrom = firstPosition
  private var previousHead = 0L
  private var previousUntil = 0L // one past the previous window's last row
  private var newAggregate: P = _
  private var expiredAggregate: P = _
  private lazy val nothing: P = agg.newEmpty()

  private var currentStart = 0L
  private var currentEnd = 0L
  private var currentAggregate: P = _

  def start: Long = currentStart
  def end: Long = currentEnd
  def aggregate: P = currentAggregate

  /** With `views`: the aggregate of this window's rows that were not in the key's previous window. */
  def newRows: P = newAggregate

  /** With `views`: the aggregate of the previous window's rows that are not in this window. */
  def expiredRows: P = expiredAggregate

  /** Rows before this position have been in a window or left (and were reported) by now. */
  def coveredUntil: Long = covered

  /** The end of the window the cursor stopped before, not yet final at `until`, if any. */
  def waitingFor: Option[Long] = waiting

  /** The position of the last evaluated window's first row, if a window was evaluated. */
  def lastWindowHead: Option[Long] = if (evaluatedAny) Some(previousHead) else None

  def advance(): Boolean = {
    if (repeats > 0) {
      repeats -= 1
      if (views) { // the same window again: nothing new, nothing expired
        newAggregate = nothing
        expiredAggregate = nothing
      }
      return true
    }
    val evaluated = trigger match {
      case EveryRows(n) => nextRowTrigger(n)
      case EveryTicks(slide) => nextSlideEnd(slide)
    }
    if (!evaluated && !finished) {
      finished = true
      if (until.isEmpty) while (times.nonEmpty) pop()
    }
    evaluated
  }

  /** Reads rows up to the next n-th row; evaluates the window there. */
  private def nextRowTrigger(n: Long): Boolean = {
    while (input.hasNext && evaluable(input.head.time)) {
      val position = push()
      if ((position + 1) % n == 0) {
        val end = lastTime
        var triggers = 1
        length match {
          case LastTicks(_) => // a length of time holds every row at the end time, also those after the trigger
            while (input.hasNext && input.head.time == end) {
              if ((push() + 1) % n == 0) triggers += 1
            }
          case LastRows(_) =>
        }
        evaluate(end)
        repeats = triggers - 1
        return true
      }
    }
    false
  }

  /**
   * Evaluates the window at the next multiple of the slide: for a length of time, the next one
   * that holds rows; for a count, the next one that brings new rows (otherwise it would repeat
   * the previous window).
   */
  private def nextSlideEnd(slide: Long): Boolean = {
    var end = length match {
      case LastTicks(ticks) if evaluatedAny =>
        try Math.addExact(currentEnd, slide)
        catch {
          case _: ArithmeticException =>
            // no window ends after this one: done, unless a row is left that a later window would hold
            // (the next one starts at currentEnd + slide - ticks, after every row it does not hold)
            if (!input.hasNext && (times.isEmpty || lastTime - currentEnd <= slide - ticks)) return false
            throw WindowError(s"a window after time $currentEnd ends beyond the range of a 64-bit time")
        }
      case _ =>
        if (!input.hasNext) return false
        ceiling(input.head.time, slide)
    }
    while (true) {
      if (!evaluable(end)) {
        waiting = Some(end)
        return false
      }
      while (input.hasNext && input.head.time <= end) push()
      length match {
        case LastTicks(ticks) => expireUpTo(startOf(end, ticks))
        case LastRows(_) =>
      }
      if (times.nonEmpty) {
        evaluate(end)
        return true
      }
      if (!input.hasNext) return false
      end = ceiling(input.head.time, slide)
    }
    false
  }

  private def push(): Long = {
    val row = input.next()
    if (row.time < lastTime) {
      throw new IllegalStateException(s"row window input must be in time order: ${row.time} after $lastTime")
    }
    lastTime = row.time
    if (views) copies += agg.mergeInto(agg.newEmpty(), row.partial) // the FIFO takes the buffer itself
    window.push(row.partial)
    times += row.time
    val position = nextPosition
    nextPosition += 1
    length match {
      case LastRows(n) => while (times.length > n) pop()
      case LastTicks(_) =>
    }
    position
  }

  private def pop(): Unit = {
    if (headPosition >= covered) leftOut(headPosition)
    window.pop()
    times.removeHead()
    headPosition += 1
  }

  // read per row: plain fields, no closure over `until`
  private val bounded = until.isDefined
  private val evaluateBefore = until.getOrElse(0L)

  /** Whether a window ending at `time` may be evaluated now: in batch every one, the last time included. */
  private def evaluable(time: Long): Boolean = !bounded || time < evaluateBefore

  /** `end − ticks`, the exclusive start of a window of a length of time; not clamped, which would drop its rows. */
  private def startOf(end: Long, ticks: Long): Long =
    try Math.subtractExact(end, ticks)
    catch { case _: ArithmeticException => throw WindowError(s"a window ending at time $end starts before the range of a 64-bit time") }

  private def expireUpTo(time: Long): Unit = while (times.nonEmpty && times.head <= time) pop()

  private def evaluate(end: Long): Unit = {
    length match {
      case LastTicks(ticks) =>
        val after = startOf(end, ticks)
        expireUpTo(after)
        currentStart = after
      case LastRows(_) =>
        currentStart = times.head
    }
    currentEnd = end
    currentAggregate = window.aggregate
    covered = nextPosition
    if (views) view()
    previousHead = headPosition
    evaluatedAny = true
  }

  /** The rows new in this window, those of the previous one gone from it; then keeps copies from this window on. */
  private def view(): Unit = {
    if (evaluatedAny) {
      newAggregate = combined(math.max(previousUntil, headPosition), nextPosition)
      expiredAggregate = combined(previousHead, math.min(previousUntil, headPosition))
    } else { // the key's first window: all its rows are new
      newAggregate = combined(headPosition, nextPosition)
      expiredAggregate = nothing
    }
    previousUntil = nextPosition
    while (copiesFrom < headPosition) {
      copies.removeHead()
      copiesFrom += 1
    }
  }

  private def combined(from: Long, until: Long): P = {
    var result = agg.newEmpty()
    var position = math.max(from, copiesFrom)
    while (position < until) {
      result = agg.mergeInto(result, copies((position - copiesFrom).toInt))
      position += 1
    }
    result
  }

  private def ceiling(time: Long, slide: Long): Long = {
    val rest = Math.floorMod(time, slide)
    if (rest == 0) time
    else
      try Math.addExact(time, slide - rest)
      catch { case _: ArithmeticException => throw WindowError(s"a window holding time $time ends beyond the range of a 64-bit time") }
  }
}

object RowWindowCursor {
  /** How much a window holds back from its end. */
  sealed trait Length
  /** The last n rows up to the end. */
  final case class LastRows(n: Long) extends Length { require(n > 0) }
  /** The rows with times in (end − ticks, end]. */
  final case class LastTicks(ticks: Long) extends Length { require(ticks > 0) }

  /** When a window is evaluated. */
  sealed trait Trigger
  /** At every n-th row (a window per row for n = 1). */
  final case class EveryRows(n: Long) extends Trigger { require(n > 0) }
  /** At multiples of `ticks` from the epoch (which ones: see [[RowWindowCursor]]'s `nextSlideEnd`). */
  final case class EveryTicks(ticks: Long) extends Trigger { require(ticks > 0) }
}
