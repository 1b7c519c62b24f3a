package windowagg.core

/**
 * An open session of one key: records from `first` to `last`, kept open until `reach` (the
 * largest t + gap of its records), with their partial aggregate.
 */
final case class OpenSession[P](first: Long, last: Long, reach: Long, partial: P)

/**
 * Streaming rules for KIP-94 sessions, against a watermark in ticks. Each record comes with its
 * reach, t + gap (a fixed gap, or the record's own).
 *
 * A session is final once the watermark passes its reach: no record that could still extend it
 * is on time. A record is late when every session that could hold it is final: it bridges no open
 * session, and a new session of its own would already be final (reach < watermark) or it would
 * join a session that was already closed (t ≤ `closedReach`, the largest reach of the key's closed
 * sessions). A record that bridges an open session joins it, however far behind the watermark.
 */
final class SessionMerging[P](agg: PartialAggregation[P]) {

  /** Whether a record that bridges no open session is late. */
  def isLate(time: Long, reach: Long, watermark: Long, closedReach: Option[Long]): Boolean =
    reach < watermark || closedReach.exists(time <= _)

  /** Whether records at `time` reaching `reach` would join one of `sessions`. */
  def bridgesAny(sessions: Seq[OpenSession[P]], time: Long, reach: Long): Boolean =
    sessions.exists(s => bridges(s, time, reach))

  private def bridges(s: OpenSession[P], time: Long, reach: Long): Boolean = s.first <= reach && time <= s.reach

  def isFinal(session: OpenSession[P], watermark: Long): Boolean = session.reach < watermark

  /**
   * Adds the partial of records at `time` (reaching `reach`) to a key's open sessions (disjoint,
   * sorted by first). Every session the records bridge ([time, reach] meets [first, reach]) merges
   * with them into one. Partials merge in time order, except that records inside a session's span
   * come after it.
   *
   * @return the new sessions (sorted), the sessions merged away (as they were), and the session
   *         now holding the records
   */
  def add(sessions: Vector[OpenSession[P]], time: Long, reach: Long, partial: P)
      : (Vector[OpenSession[P]], Seq[OpenSession[P]], OpenSession[P]) = addRun(sessions, time, time, reach, partial)

  /**
   * Adds a run of records from `first` to `last` (each within the reach of the ones before it, the
   * run reaching `reach`) in one step. With no open session starting in (first, last], the run
   * bridges exactly the sessions its records would one time at a time ([[add]]), so the sessions
   * come out the same, and its records merge in time order with them.
   */
  def addRun(sessions: Vector[OpenSession[P]], first: Long, last: Long, reach: Long, partial: P)
      : (Vector[OpenSession[P]], Seq[OpenSession[P]], OpenSession[P]) = {
    val run = OpenSession(first, last, reach, partial)
    val (bridged, others) = sessions.partition(s => s.first <= reach && first <= s.reach)
    if (bridged.isEmpty) return (insertByFirst(sessions, run), Nil, run)
    // pieces in start order; the run goes after every bridged session starting at or before it
    val (before, after) = bridged.partition(_.first <= first)
    val pieces = (before :+ run) ++ after
    var acc = pieces.head.partial
    pieces.tail.foreach(p => acc = agg.mergeInto(acc, p.partial))
    val merged = OpenSession(pieces.head.first, pieces.map(_.last).max, pieces.map(_.reach).max, acc)
    (insertByFirst(others, merged), bridged, merged)
  }

  private def insertByFirst(sessions: Vector[OpenSession[P]], session: OpenSession[P]): Vector[OpenSession[P]] = {
    val at = sessions.indexWhere(_.first > session.first)
    if (at < 0) sessions :+ session else sessions.patch(at, Seq(session), 0)
  }
}
