package windowagg.core

/**
 * Streaming rules for any kind swept from per-time partials, against a watermark in ticks: a
 * window is final once its last tick is behind the watermark, and a final window is never created
 * or changed afterwards.
 *
 * A streaming key keeps one partial per partial time and a point `finalBefore`: every window whose
 * last tick is before it has been dealt with (emitted, or never to exist). As the watermark passes
 * new window ends, those windows come from the partials through the kind's own cursor, the same as
 * in batch, so streaming and batch agree on on-time data.
 */
final class WindowFinality(kind: ResolvedWindows) {

  /**
   * The last tick of the latest window holding a partial at `time` whose records listed their
   * windows `listed` (pairs sorted by end, [[windowagg.ListedWindows]]), or the kind's own when null.
   */
  def closesAt(time: Long, listed: Array[Long]): Long = if (listed == null) kind.closesAt(time) else WindowFinality.lastListedTick(listed)

  /** A record is late once every window that could hold it (those it listed, if any) is final. */
  def isLate(time: Long, listed: Array[Long], watermark: Long): Boolean = closesAt(time, listed) < watermark

  /** [[WindowFinality.certainlyHeldUntil]] for this kind. */
  def certainlyHeldUntil(time: Long, listed: Array[Long]): Long = WindowFinality.certainlyHeldUntil(kind, time, listed)

  /** The earliest partial time to keep once windows whose last tick is before `finalBefore` are final. */
  def oldestNeeded(finalBefore: Long): Long = kind.oldestNeeded(finalBefore)

  /** The kind's [[ResolvedWindows.foldable]] span once windows whose last tick is before `finalBefore` are final. */
  def foldable(finalBefore: Long): Option[(Long, Long)] = kind.foldable(finalBefore)

  /**
   * Runs the kind's cursor over a key's partials and hands `emit(start, end, aggregate)` every
   * window whose last tick lies in [from, until). Returns the last tick of the first window at or
   * after `until` (when the watermark passes it, the next window becomes final), if any. The
   * aggregate buffer is valid only during `emit`.
   */
  def windowsEndingIn[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P], from: Long, until: Long)(
      emit: (Long, Long, P) => Unit): Option[Long] = {
    val cursor = kind.cursorEndingIn(partials, agg, from, until)
    while (cursor.advance()) {
      val last = kind.lastTick(cursor.end)
      if (last >= until) return Some(last)
      if (last >= from) emit(cursor.start, cursor.end, cursor.aggregate)
    }
    cursor.leftOut
  }

  /** Every window whose last tick is at or after `from` that new partials at `times` (sorted) changed, in cursor order. */
  def windowsChangedBy[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P], from: Long, times: Array[Long])(
      emit: (Long, Long, P) => Unit): Unit = {
    if (times.isEmpty) return
    val cursor = kind.cursorEndingIn(partials, agg, from, Long.MaxValue)
    while (cursor.advance()) {
      val start = cursor.start
      val end = cursor.end
      if (kind.lastTick(end) >= from && kind.changedBy(start, end, times)) emit(start, end, cursor.aggregate)
    }
  }
}

object WindowFinality {

  /**
   * The kind's [[ResolvedWindows.certainlyHeldUntil]] of a record at `time`; a record's
   * listed windows (when not null) exist by its listing, so it is held until the latest is final.
   */
  def certainlyHeldUntil(kind: ResolvedWindows, time: Long, listed: Array[Long]): Long =
    if (listed == null) kind.certainlyHeldUntil(time) else lastListedTick(listed)

  /**
   * The last tick of the latest of the windows a time's records listed (pairs sorted by end, at
   * least one): they hold the time's records until it is final.
   */
  def lastListedTick(listed: Array[Long]): Long = listed(listed.length - 1) - 1
}
