package windowagg.core

/** An open session of one key: records from `first` to `last`, their partial aggregate. */
final case class OpenSession[P](first: Long, last: Long, partial: P)

/**
 * Streaming rules for KIP-94 sessions with a fixed `gap` (ticks), against a watermark in ticks.
 *
 * A session is final once the watermark passes last + gap: no record that could still extend it
 * is on time. A record at t is late when every session that could hold it is final: a new session
 * [t, t] would already be final (t + gap < watermark), or it would join a session that was
 * already closed (t ≤ `closedReach`, the largest last + gap of the key's closed sessions).
 */
final class SessionMerging[P](gap: Long, agg: PartialAggregation[P]) {
  require(gap > 0)

  def reach(session: OpenSession[P]): Long = saturatingAdd(session.last, gap)

  def isLate(time: Long, watermark: Long, closedReach: Option[Long]): Boolean =
    saturatingAdd(time, gap) < watermark || closedReach.exists(time <= _)

  def isFinal(session: OpenSession[P], watermark: Long): Boolean = reach(session) < watermark

  /**
   * Adds the partial of records at `time` to a key's open sessions (disjoint, sorted by first).
   * Every session the records bridge (first − gap ≤ time ≤ last + gap) merges with them into one.
   * Partials merge in time order, except that records inside a session's span come after it.
   *
   * @return the new sessions (sorted), the sessions merged away (as they were), and the session
   *         now holding the records
   */
  def add(sessions: Vector[OpenSession[P]], time: Long, partial: P): (Vector[OpenSession[P]], Seq[OpenSession[P]], OpenSession[P]) = {
    val (bridged, others) = sessions.partition(s => saturatingAdd(s.first, -gap) <= time && time <= reach(s))
    val record = OpenSession(time, time, partial)
    // pieces in start order; the record goes after every bridged session starting at or before it
    val (before, after) = bridged.partition(_.first <= time)
    val pieces = (before :+ record) ++ after
    var acc = pieces.head.partial
    pieces.tail.foreach(p => acc = agg.mergeInto(acc, p.partial))
    val merged = OpenSession(pieces.map(_.first).min, pieces.map(_.last).max, acc)
    ((others :+ merged).sortBy(_.first), bridged, merged)
  }

  private def saturatingAdd(a: Long, b: Long): Long = {
    val r = a + b
    if (((a ^ r) & (b ^ r)) < 0) { if (a < 0) Long.MinValue else Long.MaxValue } else r
  }
}
