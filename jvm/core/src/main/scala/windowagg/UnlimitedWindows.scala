package windowagg

import java.time.{Duration, Instant}
import java.time.format.DateTimeParseException

import windowagg.core.{EnumeratedWindows, TimeSpan, WindowError}

/**
 * Kafka Streams' unlimited windows: one window per key from a start time on, never closing. Batch
 * gives one row per key; streaming emits its current value as records arrive (`emit=updates`: a
 * window that never closes is never final). The start is the epoch unless `startOn` says another;
 * rows before it are in no window: counted, never dropped silently.
 *
 * The window is `[start, end)`. For an integral column `end` is the largest value it can hold; for a
 * timestamp it is 9999-12-31T00:00:00Z, the last midnight every client (Python's datetime included)
 * can show in any zone; later rows are in no window, and counted. Swept by slicing with one slice
 * from the start on, so a key keeps one partial however long it lives.
 */
final class UnlimitedWindows private (val start: Option[Either[Instant, Long]], val gracePeriod: Option[TimeSpan])
    extends WindowDefinition {

  /** The window starts at `instant` (ISO-8601, e.g. "2024-01-01T00:00:00Z"). */
  def startOn(instant: String): UnlimitedWindows = new UnlimitedWindows(Some(Left(UnlimitedWindows.instantOf(instant))), gracePeriod)
  def startOn(instant: Instant): UnlimitedWindows = {
    if (instant == null) throw WindowError("the start of unlimited windows must not be null")
    new UnlimitedWindows(Some(Left(instant)), gracePeriod)
  }
  /** The window starts at `ticks` of an integral time column. */
  def startOn(ticks: Long): UnlimitedWindows = new UnlimitedWindows(Some(Right(ticks)), gracePeriod)

  /** How long after the newest record older records may still arrive (streaming): the watermark. */
  def grace(afterWindowEnd: String): UnlimitedWindows = new UnlimitedWindows(start, Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): UnlimitedWindows = new UnlimitedWindows(start, Some(WindowSpec.grace(afterWindowEnd)))

  override def resolve(timeline: Timeline): UnlimitedWindows.Resolved = {
    val startTicks = start match {
      case None => 0L
      case Some(Left(instant)) => timeline.fromInstant(instant)
      case Some(Right(ticks)) =>
        if (timeline.isTimestamp) {
          throw WindowError(s"the start $ticks of unlimited windows is a number of ticks, but the time column is a timestamp: give an instant")
        }
        ticks
    }
    val endTicks = if (timeline.isTimestamp) timeline.fromInstant(UnlimitedWindows.LastShownInstant) else Long.MaxValue
    if (startTicks >= endTicks) throw WindowError(s"the start of unlimited windows must be before ${timeline.format(endTicks)}")
    UnlimitedWindows.Resolved(startTicks, endTicks, gracePeriod.map(timeline.ticks(_, "grace period")))
  }

  override def spec: String =
    "unlimited" + start.map(s => s" starting ${s.fold(_.toString, _.toString)}").getOrElse("") + WindowSpec.graceSpec(gracePeriod)
  override def toString: String =
    "UnlimitedWindows.of()" + start.map(s => s".startOn(${s.fold(_.toString, _.toString)})").getOrElse("") +
      gracePeriod.map(g => s".grace($g)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: UnlimitedWindows => o.start == start && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (start, gracePeriod).hashCode
}

object UnlimitedWindows extends WindowSpec.Reader {
  private val LastShownInstant = Instant.parse("9999-12-31T00:00:00Z")

  /** One window per key from the epoch on. */
  def of(): UnlimitedWindows = new UnlimitedWindows(None, None)

  private def instantOf(text: String): Instant =
    try Instant.parse(Option(text).map(_.trim).getOrElse(""))
    catch { case _: DateTimeParseException => throw WindowError(s"cannot read '$text' as an instant; write it like 2024-01-01T00:00:00Z") }

  override val keywords: Seq[String] = Seq("unlimited")
  override val clauseWords: Seq[String] = Seq("starting")
  override val usage: String = "unlimited [starting <instant like 2024-01-01T00:00:00Z, or ticks>] [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("starting", "grace"))
    if (spec.lead.nonEmpty) throw WindowError(s"'${spec.text}': unlimited windows have no size: $usage")
    val windows = spec.clause("starting") match {
      case Some(t) if t.matches("[+-]?\\d+") =>
        of().startOn(t.toLongOption.getOrElse(throw WindowError(s"'${spec.text}': the start $t does not fit in a 64-bit number of ticks")))
      case Some(t) if t.trim.isEmpty => throw WindowError(s"'${spec.text}': 'starting' needs the start after it; write $usage")
      case Some(t) => of().startOn(t)
      case None => of()
    }
    spec.grace.fold(windows)(g => windows.grace(g.spec))
  }

  /** The window `[startTicks, endTicks)`; one slice for it. */
  final case class Resolved(startTicks: Long, endTicks: Long, graceTicks: Option[Long]) extends EnumeratedWindows {
    override def maxSpan: Long = Long.MaxValue
    override def everFinal: Boolean = false
    override def sliceStart(time: Long): Long = if (holds(time)) startTicks else time
    override def partialsSpanTimes: Boolean = true
    override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit =
      if (holds(time)) window(startTicks, endTicks)
    override def holds(time: Long): Boolean = startTicks <= time && time < endTicks
    override def closesAt(time: Long): Long = Long.MaxValue
  }
}
