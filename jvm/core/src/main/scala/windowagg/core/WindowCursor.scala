package windowagg.core

/**
 * The windows of one key, produced one at a time in start order: `advance()` moves to the next,
 * then `start`, `end` (inclusive bounds in ticks) and `aggregate` describe it until the next call.
 */
trait WindowCursor[P] {
  def advance(): Boolean
  def start: Long
  def end: Long
  def aggregate: P
}
