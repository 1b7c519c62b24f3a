package windowagg.core

import scala.collection.mutable

/**
 * All KIP-450 sliding windows of one key, in one pass over its records in time order.
 *
 * Windows are closed intervals `[start, start + size]` in ticks (ε = 1 tick). For each distinct
 * time t there is a left window `[t - size, t]`, and a right window `[t + 1, t + 1 + size]` when
 * some record lies in it; each distinct start is one window. Windows come out in increasing start
 * order. Both window ends only move forward, so the records of the current window are a FIFO
 * queue: partials enter at the back as the end passes them and leave at the front as the start
 * passes them, through a [[FifoAggregator]], for amortized O(1) merges per distinct time however
 * many records a window holds. Held state is bounded by the distinct times of about one window.
 *
 * Use: `while (sweep.advance()) { use sweep.start, sweep.end, sweep.aggregate }`. The aggregate
 * buffer is owned by the sweep and valid until the next `advance()` or `aggregate`.
 *
 * @param input the key's partials, one per distinct time, times strictly increasing; each
 *              partial's buffer is handed over to the sweep
 */
final class SlidingWindowSweep[P](size: Long, partials: Iterator[Timed[P]], agg: PartialAggregation[P])
    extends WindowCursor[P] {
  require(size > 0, s"sliding window size must be positive, got $size")

  private val input = Ticks.strictlyIncreasing(partials, "sliding window")(_.time)
  private val window = new FifoAggregator[P](agg)
  private val timesInWindow = new LongQueue() // mirrors `window`, oldest first
  private val unpushed = new mutable.ArrayDeque[Timed[P]]() // read but not yet in the window
  private val awaitingLeft = new LongQueue() // times whose left window is not out yet
  private val awaitingRight = new LongQueue() // times whose right window is undecided

  private var currentStart = 0L

  def start: Long = currentStart
  def end: Long = currentStart + size
  /** Read from the window only when asked for: a caller passing over windows costs no merge. */
  def aggregate: P = window.aggregate

  /** Moves to the next window; false once all windows of the input were produced. */
  def advance(): Boolean = {
    if (awaitingLeft.isEmpty) readOne()
    val leftStart = if (awaitingLeft.isEmpty) Long.MaxValue else offset(awaitingLeft.head, -size)
    val rightStart = nextRightStart(leftStart)
    if (awaitingLeft.isEmpty && rightStart == Long.MaxValue) return false
    // Long.MaxValue marks "none"; a real start equal to it cannot occur since t + 1 overflows first.
    val s = math.min(leftStart, rightStart)
    if (leftStart == s) awaitingLeft.removeHead()
    if (rightStart == s) awaitingRight.removeHead()
    val e = offset(s, size)
    while ({ if (unpushed.isEmpty) readOne(); unpushed.nonEmpty && unpushed.head.time <= e }) {
      val next = unpushed.removeHead()
      if (next.time >= s) { // an earlier one would be popped at once
        window.push(next.partial)
        timesInWindow += next.time
      }
    }
    while (timesInWindow.nonEmpty && timesInWindow.head < s) {
      timesInWindow.removeHead()
      window.pop()
    }
    currentStart = s
    true
  }

  /**
   * The start of the earliest right window still to come if it is not after `leftStart`, the next
   * left window's; Long.MaxValue otherwise. Right windows starting after the next left window are
   * left undecided: deciding them needs the next record, and over records whose right windows are
   * all empty that would read arbitrarily far beyond the current window.
   */
  private def nextRightStart(leftStart: Long): Long = {
    while (awaitingRight.nonEmpty) {
      val t = awaitingRight.head
      if (awaitingLeft.nonEmpty && t >= leftStart) return Long.MaxValue // t + 1 > leftStart
      if (awaitingRight.length < 2) readOne()
      if (awaitingRight.length < 2) {
        awaitingRight.removeHead() // the last time: nothing after it, so no right window
      } else {
        val windowStart = offset(t, 1)
        if (awaitingRight(1) <= offset(windowStart, size)) return windowStart
        awaitingRight.removeHead() // the next record is beyond reach: the right window is empty
      }
    }
    Long.MaxValue
  }

  private def readOne(): Unit = {
    if (input.hasNext) {
      val next = input.next()
      unpushed += next
      awaitingLeft += next.time
      awaitingRight += next.time
    }
  }

  private def offset(time: Long, by: Long): Long =
    try Math.addExact(time, by)
    catch {
      case _: ArithmeticException =>
        throw WindowError(s"time $time with a sliding window of $size ticks is out of the range of a 64-bit time")
    }
}
