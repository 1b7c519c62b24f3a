package windowagg.core

import scala.collection.mutable

/**
 * The windows of one key for a kind cut at rows (Storm's windows), in one pass over its rows in
 * order of (time, tie-break), one partial per row. A window is evaluated at trigger points, every
 * `n` rows or at every multiple of a slide in time, and holds the last `n` rows or the rows of the
 * last `length` of time up to its end. The rows of the current window are a FIFO through a
 * [[FifoAggregator]], so a window costs amortized O(1) merges however many rows it holds.
 *
 * Reported bounds: `end` is the window's last time (inclusive); `start` is `end − length`
 * (exclusive, as Storm's `(end − length, end]`) for a length of time, and the time of the window's
 * first row for a length in rows.
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
    leftOut: Long => Unit) extends WindowCursor[P] {
  import RowWindowCursor._

  private val input = rows.buffered
  private val window = new FifoAggregator[P](agg)
  private val times = new mutable.ArrayDeque[Long]() // mirrors `window`, oldest first
  private var headPosition = firstPosition // position of times(0)
  private var nextPosition = firstPosition
  private var lastTime = Long.MinValue
  private var covered = firstPosition
  private val evaluateBefore = until.getOrElse(Long.MaxValue)
  private var repeats = 0 // further evaluations of the current window (several triggers at one time)
  private var finished = false
  private var waiting: Option[Long] = None

  private var currentStart = 0L
  private var currentEnd = 0L
  private var currentAggregate: P = _

  def start: Long = currentStart
  def end: Long = currentEnd
  def aggregate: P = currentAggregate

  /** Rows before this position have been in a window or left (and were reported) by now. */
  def coveredUntil: Long = covered

  /** The end of the window the cursor stopped before, not yet final at `until`, if any. */
  def waitingFor: Option[Long] = waiting

  def advance(): Boolean = {
    if (repeats > 0) {
      repeats -= 1
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
    while (input.hasNext && (until.isEmpty || input.head.time < evaluateBefore)) {
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

  /** Reads the rows up to the next multiple of the slide that has rows; evaluates the window ending there. */
  private def nextSlideEnd(slide: Long): Boolean = {
    if (!input.hasNext) return false
    val end = ceiling(input.head.time, slide)
    if (until.isDefined && end >= evaluateBefore) {
      waiting = Some(end)
      return false
    }
    while (input.hasNext && input.head.time <= end) push()
    evaluate(end)
    true
  }

  private def push(): Long = {
    val row = input.next()
    if (row.time < lastTime) {
      throw new IllegalStateException(s"row window input must be in time order: ${row.time} after $lastTime")
    }
    lastTime = row.time
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

  private def evaluate(end: Long): Unit = {
    length match {
      case LastTicks(ticks) =>
        val after = Ticks.saturatingAdd(end, -ticks)
        while (times.nonEmpty && times.head <= after) pop()
        currentStart = after
      case LastRows(_) =>
        currentStart = times.head
    }
    currentEnd = end
    currentAggregate = window.aggregate
    covered = nextPosition
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
  /** At every multiple of `ticks` from the epoch that ends a slide holding rows. */
  final case class EveryTicks(ticks: Long) extends Trigger { require(ticks > 0) }
}
