package windowagg.core


/**
 * Streaming rules for kinds cut at rows ([[RowWindows]]), against a watermark in ticks. A key keeps
 * its settled rows (behind the watermark, so their order is fixed), numbered from the position of
 * the first one kept, as many as a window not yet final can hold; rows ahead of the watermark wait
 * aside, since rows sharing their time may still come. As the watermark passes, settled rows join
 * the kept ones and the kind's cursor runs over them as in batch, evaluating only final windows.
 */
final class RowFinality(kind: RowWindows) {

  /** A row behind the watermark is late: its place among the key's rows is settled. */
  def isLate(time: Long, watermark: Long): Boolean = kind.closesAt(time) < watermark

  /**
   * Hands `emit` the cursor at every window whose end lies in [from, until) (its bounds, aggregate
   * and, with `views`, Storm's new and expired rows, valid during the call), from the
   * settled rows `rows` (at positions firstPosition, firstPosition + 1, …, all before `until`;
   * their buffers are handed over), and `leftOut(position)` every row from `accountedBefore` on
   * that is in no window and never will be. Returns how many rows to drop from the front (no
   * window still to come needs them), where the next call's `accountedBefore` is, the end of a
   * window the kept rows already make that is not final yet (a slide in time), if any, the
   * first row of the last window evaluated so far (the next call's `previousWindowHead`), and the
   * first kept row no window has taken yet.
   */
  def settle[P](rows: IndexedSeq[Timed[P]], firstPosition: Long, accountedBefore: Long, from: Long, until: Long,
      agg: PartialAggregation[P], views: Boolean = false, previousWindowHead: Option[Long] = None)(
      emit: RowWindowCursor[P] => Unit)(leftOut: Long => Unit): RowFinality.Settled = {
    var accounted = accountedBefore
    val cursor = kind.rowCursor(firstPosition, rows.iterator, agg, Some(until), views) { position =>
      if (position >= accounted) {
        leftOut(position)
        accounted = position + 1
      }
    }
    while (cursor.advance()) if (cursor.end >= from) emit(cursor)
    val oldest = kind.oldestNeeded(until)
    // with views, the last window evaluated (now or by an earlier call) stays whole: it is the next window's previous one
    val lastWindowHead = cursor.lastWindowHead.orElse(previousWindowHead)
    val keepFrom = if (views) lastWindowHead.fold(Long.MaxValue)(_ - firstPosition) else Long.MaxValue
    var drop = 0
    while (drop < rows.length && drop < keepFrom && (rows(drop).time < oldest || rows.length - drop > kind.rowsNeeded)) drop += 1
    // rows dropped before any window held them (nor will one) are in none
    val dropUntil = firstPosition + drop
    var position = math.max(accounted, cursor.coveredUntil)
    while (position < dropUntil) {
      leftOut(position)
      position += 1
    }
    RowFinality.Settled(drop, math.max(accounted, dropUntil), cursor.waitingFor, lastWindowHead, position)
  }
}

object RowFinality {
  /** What [[RowFinality.settle]] returns; `unwindowedFrom`: the first kept row no window has taken yet (a later window may). */
  final case class Settled(drop: Int, accountedBefore: Long, nextEnd: Option[Long], lastWindowHead: Option[Long], unwindowedFrom: Long)
}
