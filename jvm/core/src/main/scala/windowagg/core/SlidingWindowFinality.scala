package windowagg.core

import Ticks.saturatingAdd

/**
 * Streaming rules for sliding windows of `size` ticks, against a watermark in ticks: a window is
 * final once its end is behind the watermark (end < watermark), and a final window is never
 * created or changed afterwards.
 *
 * A streaming key keeps one partial per distinct time and a point `finalBefore`: every window
 * ending before it has been dealt with (emitted, or never to exist). As the watermark passes new
 * window ends, the windows ending in [finalBefore, watermark) are produced from the partials by the
 * same sweep as in batch, so streaming and batch agree on on-time data.
 */
final class SlidingWindowFinality(size: Long) {
  require(size > 0)

  /** A record is late once every window that could hold it is final: even [t, t + size] has ended. */
  def isLate(time: Long, watermark: Long): Boolean = saturatingAdd(time, size) < watermark

  /**
   * The earliest time a partial must keep once windows ending before `finalBefore` are final:
   * any window ending at or after it starts at or after finalBefore − size, and a right window
   * starting there belongs to the time just before.
   */
  def oldestNeeded(finalBefore: Long): Long = saturatingAdd(saturatingAdd(finalBefore, -size), -1)

  /**
   * Runs the sweep over a key's partials and hands `emit(start, end, aggregate)` every window
   * whose end lies in [from, until), in start order. Returns the end of the first window ending at
   * or after `until` (when the watermark passes it, the next window becomes final), if any.
   * The aggregate buffer is valid only during `emit`.
   */
  def windowsEndingIn[P](partials: Iterator[Timed[P]], agg: PartialAggregation[P], from: Long, until: Long)(
      emit: (Long, Long, P) => Unit): Option[Long] = {
    val sweep = new SlidingWindowSweep[P](size, partials, agg)
    while (sweep.advance()) {
      val end = sweep.end
      if (end >= until) return Some(end)
      if (end >= from) emit(sweep.start, end, sweep.aggregate)
    }
    None
  }

  /**
   * Every window ending at or after `from` that a batch of new records at `times` (sorted)
   * changed, in start order: the windows holding one of them, and the right window of each (it
   * starts just after the time, so it holds later records only, and exists now that the time does).
   */
  def windowsChangedBy[P](partials: Iterator[Timed[P]], agg: PartialAggregation[P], from: Long, times: Array[Long])(
      emit: (Long, Long, P) => Unit): Unit = {
    if (times.isEmpty) return
    val sweep = new SlidingWindowSweep[P](size, partials, agg)
    while (sweep.advance()) {
      val start = sweep.start
      val end = sweep.end
      if (end >= from && (holdsAny(times, start, end) || startsRightAfterAny(times, start))) emit(start, end, sweep.aggregate)
    }
  }

  private def startsRightAfterAny(sorted: Array[Long], start: Long): Boolean =
    start != Long.MinValue && java.util.Arrays.binarySearch(sorted, start - 1) >= 0

  private def holdsAny(sorted: Array[Long], start: Long, end: Long): Boolean = {
    var lo = 0
    var hi = sorted.length
    while (lo < hi) { // first index with sorted(i) >= start
      val mid = (lo + hi) >>> 1
      if (sorted(mid) < start) lo = mid + 1 else hi = mid
    }
    lo < sorted.length && sorted(lo) <= end
  }
}
