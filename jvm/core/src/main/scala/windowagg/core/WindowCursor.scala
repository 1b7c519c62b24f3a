package windowagg.core

/**
 * The windows of one key, produced one at a time in non-decreasing order of end: `advance()` moves
 * to the next, then `start`, `end` (in ticks, `end` inclusive or not as the kind says) and
 * `aggregate` describe it until the next call.
 */
trait WindowCursor[P] {
  def advance(): Boolean
  def start: Long
  def end: Long
  def aggregate: P

  /**
   * For a cursor told to leave out the windows whose last tick is at or after a bound
   * ([[ResolvedWindows.cursorEndingIn]]): the earliest last tick among those it left out, if any.
   */
  def leftOut: Option[Long] = None
}
