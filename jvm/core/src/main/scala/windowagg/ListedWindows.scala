package windowagg

import java.time.Duration

import windowagg.core.{EnumeratedWindows, TimeSpan, WindowError}

/**
 * Windows each row lists: a column of the query gives, per row, the windows `[start, end)` of the
 * row's time, computed by any expression (a vectorized Python function, windowagg's `PythonWindows`,
 * or SQL). It is a user-defined kind (KIP-645) whose listing is data rather than a JVM class, and
 * the same checks hold: each window holds its time, is non-empty and at most `maxSize` long; a
 * time lists the same windows wherever it occurs; and a window listed for one of its times is
 * listed for every time of it that has rows.
 *
 * The engine aggregates one partial per (key, time), each carrying its time's windows, and each
 * window combines the partials of its times. Windows declared non-overlapping (each time in at most
 * one) are their own slices: one partial per (key, window), combined before the shuffle.
 *
 * `column` names the listing column for specs (SQL's `window_agg`, which takes no expression);
 * elsewhere the column is given with the time column, as `windows(ts, spec, listing)`.
 */
final class ListedWindows private (
    val column: Option[String],
    val maxSize: TimeSpan,
    val disjoint: Boolean,
    val gracePeriod: Option[TimeSpan]) extends WindowDefinition {

  /** How long after a window's end records may still arrive (streaming); see [[SlidingWindows.grace(afterWindowEnd:String)* SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): ListedWindows = new ListedWindows(column, maxSize, disjoint, Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): ListedWindows = new ListedWindows(column, maxSize, disjoint, Some(WindowSpec.grace(afterWindowEnd)))

  /** Declares that no two windows overlap (each time lists at most one): each window is then aggregated whole before the shuffle. */
  def nonOverlapping(): ListedWindows = new ListedWindows(column, maxSize, true, gracePeriod)

  /** The windows listed by the column `name` of the aggregated rows. */
  def by(name: String): ListedWindows = {
    if (name == null || name.trim.isEmpty) throw WindowError("the column listing the windows must have a name")
    new ListedWindows(Some(name.trim), maxSize, disjoint, gracePeriod)
  }

  override def rowsListWindows: Boolean = true
  override def listingColumn: Option[String] = column

  override def resolve(timeline: Timeline): ListedWindows.Resolved = {
    val size = timeline.ticks(maxSize, "max size")
    if (size <= 0) throw WindowError(s"the max size of listed windows must be positive, got ${maxSize.spec}")
    ListedWindows.Resolved(size, maxSize.spec, disjoint, gracePeriod.map(timeline.ticks(_, "grace period")), timeline)
  }

  override def spec: String =
    s"listed${column.map(c => s" by $c").getOrElse("")} max size ${maxSize.spec}${if (disjoint) " non-overlapping" else ""}" +
      WindowSpec.graceSpec(gracePeriod)
  override def toString: String =
    s"ListedWindows.maxSize(${maxSize.spec})" + column.map(c => s".by($c)").getOrElse("") +
      (if (disjoint) ".nonOverlapping()" else "") + gracePeriod.map(g => s".grace($g)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: ListedWindows => o.column == column && o.maxSize == maxSize && o.disjoint == disjoint && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (column, maxSize, disjoint, gracePeriod).hashCode
}

object ListedWindows extends WindowSpec.Reader {
  /** Windows listed per row, none longer than `size` (a duration, or ticks of an integral time column): it bounds streaming state. */
  def maxSize(size: String): ListedWindows = maxSize(TimeSpan.parseLength(size))
  def maxSize(size: Duration): ListedWindows = maxSize(TimeSpan.of(size, "the max size of listed windows"))

  override val keywords: Seq[String] = Seq("listed")
  override val clauseWords: Seq[String] = Seq("by", "max size", "non-overlapping")
  override val usage: String = "listed [by <column>] max size <length> [non-overlapping] [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("by", "max size", "non-overlapping", "grace"))
    if (spec.lead.nonEmpty) throw WindowError(s"'${spec.text}': unexpected '${spec.lead}'; write $usage")
    val size = spec.clause("max size").getOrElse(throw WindowError(s"'${spec.text}' gives no max size; write $usage"))
    spec.clause("non-overlapping").filter(_.nonEmpty).foreach(extra => throw WindowError(s"'${spec.text}': unexpected '$extra' after non-overlapping"))
    val windows = maxSize(spec.length(size, "max size"))
    val named = spec.clause("by").fold(windows)(windows.by)
    val disjoint = if (spec.clause("non-overlapping").isDefined) named.nonOverlapping() else named
    spec.grace.fold(disjoint)(g => new ListedWindows(disjoint.column, disjoint.maxSize, disjoint.disjoint, Some(g)))
  }

  private def maxSize(size: TimeSpan): ListedWindows =
    new ListedWindows(None, TimeSpan.positive(size, "the max size of listed windows"), false, None)

  /**
   * Listed windows in ticks of `timeline`. The windows of a time come with its rows, as pairs
   * (start, end) in one array ([[checked]]); the engine hands each partial's to the cursor with it
   * ([[windowagg.core.Reaching.listed]]), so this kind answers no question about a time alone.
   */
  final case class Resolved(maxSize: Long, maxSizeSpec: String, disjoint: Boolean, graceTicks: Option[Long], timeline: Timeline) extends EnumeratedWindows {
    override def maxSpan: Long = maxSize - 1
    override def partialsSpanTimes: Boolean = disjoint

    override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit =
      throw new IllegalStateException("listed windows come with their rows: a time alone has none")

    override def firstClosesAt(time: Long): Long = time

    /**
     * A row's windows (pairs (start, end)) as listed for `time`, checked: each holds `time`, is
     * non-empty and at most `maxSize` long; none twice; at most one where they do not overlap.
     * The pairs come back sorted by (end, start), the order in which windows are output.
     */
    def checked(time: Long, windows: Array[Long]): Array[Long] = {
      var i = 0
      while (i < windows.length) {
        val (start, end) = (windows(i), windows(i + 1))
        def fail(why: String) = throw WindowError(s"the windows listed for ${timeline.format(time)} include ${shown(start, end)}, $why")
        if (end <= start) fail("which is empty or inverted")
        if (time < start || time >= end) fail("which does not contain the time")
        if (end - start > maxSize || end - start <= 0) fail(s"longer than the max size $maxSizeSpec")
        i += 2
      }
      if (disjoint && windows.length > 2) {
        throw WindowError(s"the windows listed for ${timeline.format(time)} are ${shownAll(windows)}: listed windows declared " +
          "non-overlapping give a time at most one")
      }
      val sorted = if (windows.length <= 2) windows else {
        val order = (0 until windows.length / 2).sortBy(j => (windows(2 * j + 1), windows(2 * j)))
        order.flatMap(j => Seq(windows(2 * j), windows(2 * j + 1))).toArray
      }
      var j = 2
      while (j < sorted.length) {
        if (sorted(j) == sorted(j - 2) && sorted(j + 1) == sorted(j - 1)) {
          throw WindowError(s"the windows listed for ${timeline.format(time)} include ${shown(sorted(j), sorted(j + 1))} twice")
        }
        j += 2
      }
      sorted
    }

    /** The partial time of a record at `time` listing `windows` (checked): its window's start where windows do not overlap. */
    def partialTime(time: Long, windows: Array[Long]): Long = if (disjoint && windows.length == 2) windows(0) else time

    /** Fails unless records aggregated under `partialTime` list the same windows (`a`, `b`, checked). */
    def checkSame(partialTime: Long, a: Array[Long], b: Array[Long]): Unit =
      if (!java.util.Arrays.equals(a, b)) {
        if (disjoint) {
          throw WindowError(s"the listed windows ${shownAll(a)} and ${shownAll(b)} overlap, but they were declared non-overlapping")
        }
        throw WindowError(s"${timeline.format(partialTime)} is listed with different windows by different rows: " +
          s"${shownAll(a)} and ${shownAll(b)}; a time's windows must not depend on anything but the time")
      }

    override def unlisted(start: Long, end: Long, listedAt: Long, notAt: Long): WindowError =
      WindowError(s"the window ${shown(start, end)} is listed for ${timeline.format(listedAt)} but not for " +
        s"${timeline.format(notAt)}, which it contains: a window must be listed for every time in it")

    private def shown(start: Long, end: Long): String = s"[${timeline.format(start)}, ${timeline.format(end)})"
    private def shownAll(windows: Array[Long]): String =
      windows.grouped(2).map(w => shown(w(0), w(1))).mkString("{", ", ", "}")
  }
}
