package windowagg

import java.time.Duration

import windowagg.core.{MergingWindows, PartialAggregation, Reaching, SessionSweep, TimeSpan, WindowCursor, WindowError}
import windowagg.core.Ticks.saturatingAdd

/**
 * Kafka Streams' session windows (KIP-94): records of a key at most `gap` apart (inclusive),
 * transitively, form one session `[first record time, last record time]`. The gap is fixed, or
 * read per record from a column (as Spark's dynamic `session_window`): a record at t with gap g
 * keeps the session open until t + g.
 */
final class SessionWindows private (val gap: Option[TimeSpan], val gapColumn: Option[String], val gracePeriod: Option[TimeSpan])
  extends WindowDefinition {

  /** How long after a session's last record plus gap records may still arrive (streaming); see [[SlidingWindows.grace(afterWindowEnd:String)* SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): SessionWindows =
    new SessionWindows(gap, gapColumn, Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): SessionWindows =
    new SessionWindows(gap, gapColumn, Some(WindowSpec.grace(afterWindowEnd)))

  override def rowLengthColumn: Option[String] = gapColumn

  override def resolve(timeline: Timeline): SessionWindows.Resolved = {
    val ticks = gap.map { g =>
      val t = timeline.ticks(g, "session inactivity gap")
      if (t <= 0) throw WindowError(s"session inactivity gap must be positive, got $g")
      t
    }
    SessionWindows.Resolved(ticks, gracePeriod.map(timeline.ticks(_, "grace period")))
  }
  override def spec: String =
    gap.map(g => s"session gap ${g.spec}").getOrElse(s"session gap column ${gapColumn.get}") + WindowSpec.graceSpec(gracePeriod)
  override def toString: String =
    gap.map(g => s"SessionWindows.withInactivityGap($g)").getOrElse(s"SessionWindows.withDynamicGap(${gapColumn.get})") +
      gracePeriod.map(g => s".grace($g)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: SessionWindows => o.gap == gap && o.gapColumn == gapColumn && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (gap, gapColumn, gracePeriod).hashCode
}

object SessionWindows extends WindowSpec.Reader {
  /** Sessions closed by a fixed inactivity gap like "5 minutes". */
  def withInactivityGap(gap: String): SessionWindows = checked(TimeSpan.parse(gap))
  def withInactivityGap(gap: Duration): SessionWindows = checked(TimeSpan.of(gap, "session inactivity gap"))
  /** A gap in ticks of an integral time column's own unit. */
  def withInactivityGap(gap: Long): SessionWindows = checked(TimeSpan.ticks(gap))

  /**
   * Sessions whose gap is read per record from `gapColumn` (a day-time INTERVAL, or ticks for an
   * integral time column). Records whose gap is null or not positive are not windowed, and counted.
   */
  def withDynamicGap(gapColumn: String): SessionWindows = {
    if (gapColumn == null || gapColumn.trim.isEmpty) throw WindowError("the gap column name must not be empty")
    new SessionWindows(None, Some(gapColumn), None)
  }

  private def checked(gap: TimeSpan): SessionWindows =
    new SessionWindows(Some(TimeSpan.positive(gap, "session inactivity gap")), None, None)

  override val keywords: Seq[String] = Seq("session")
  override val usage: String = "session gap <length> | session gap column <column> [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("gap", "grace"))
    if (spec.lead.nonEmpty) throw WindowError(s"'${spec.text}': write the gap after the word gap: $usage")
    val gap = spec.clause("gap").getOrElse(throw WindowError(s"'${spec.text}' has no gap: $usage"))
    val sessions =
      if (gap.toLowerCase(java.util.Locale.ROOT).startsWith("column ")) withDynamicGap(gap.drop("column ".length).trim)
      else checked(spec.length(gap, "session inactivity gap"))
    spec.grace.fold(sessions)(g => new SessionWindows(sessions.gap, sessions.gapColumn, Some(g)))
  }

  /**
   * Session windows with a fixed gap in ticks, or a per-record gap when `gapTicks` is empty;
   * windows are `[first, last]`, swept by [[windowagg.core.SessionSweep]], merged live in streaming.
   */
  final case class Resolved(gapTicks: Option[Long], graceTicks: Option[Long] = None) extends MergingWindows {
    override def fixedGap: Option[Long] = gapTicks
    override def endInclusive: Boolean = true
    override def maxSpan: Long = Long.MaxValue // a session grows as long as records keep coming
    override def reach(time: Long, rowLength: Long): Long = saturatingAdd(time, gapTicks.getOrElse(rowLength))
    override def closesAt(time: Long): Long = reach(time, 0L)
    override def cursor[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P]): WindowCursor[P] =
      new SessionSweep[P](partials, agg)
  }
}
