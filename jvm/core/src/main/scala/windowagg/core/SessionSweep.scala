package windowagg.core

/**
 * The per-time partial of a key's records sharing one time, with how far that time keeps a
 * session open: `reach` = t + gap (the largest t + gap of its records for a per-record gap), and
 * for windows the records list themselves ([[windowagg.ListedWindows]]) the time's windows, as
 * pairs (start, end); null for every other kind, whose definition lists them.
 */
final case class Reaching[P](time: Long, reach: Long, partial: P, listed: Array[Long] = null)

/**
 * All KIP-94 sessions of one key, in one pass over its per-time partials in time order: a record
 * joins the current session when its time is at most the session's reach (the largest t + gap so
 * far, so records at most `gap` apart belong together, inclusively and transitively); otherwise
 * the session ends and a new one starts. Holds one partial aggregate, whatever a session's size.
 *
 * Use: `while (sweep.advance()) { use first, last, aggregate }`; the aggregate is owned by the
 * sweep and valid until the next `advance()`.
 */
final class SessionSweep[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P]) extends WindowCursor[P] {
  private val input = Ticks.strictlyIncreasing(partials, "session")(_.time)
  private var pending: Reaching[P] = _
  private var currentFirst = 0L
  private var currentLast = 0L
  private var currentAggregate: P = _

  def first: Long = currentFirst
  def last: Long = currentLast
  def start: Long = currentFirst
  def end: Long = currentLast
  def aggregate: P = currentAggregate

  def advance(): Boolean = {
    val head = if (pending != null) pending else read()
    pending = null
    if (head == null) return false
    var acc = head.partial
    var reach = head.reach
    var last = head.time
    var next = read()
    while (next != null && next.time <= reach) {
      acc = agg.mergeInto(acc, next.partial)
      reach = math.max(reach, next.reach)
      last = next.time
      next = read()
    }
    pending = next
    currentFirst = head.time
    currentLast = last
    currentAggregate = acc
    true
  }

  private def read(): Reaching[P] = if (input.hasNext) input.next() else null
}
