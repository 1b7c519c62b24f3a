package windowagg

import java.nio.ByteBuffer
import java.security.MessageDigest
import java.time.Duration

import windowagg.core.{TimeSpan, WindowError}

/**
 * Windows given as data: each row of a table or view is a window `[start, end)`, in the time
 * column's own type and ticks. Windows may overlap, nest and differ in size; a time in none of them
 * is in no window (counted, never dropped silently). This is what a range join
 * `events JOIN periods ON ts >= start AND ts < end` followed by a `GROUP BY` computes, without the join:
 * the windows' bounds cut the time line into slices, each key aggregates one partial per slice,
 * and each window combines the partials of its slices.
 *
 * The definition names the table; windowagg's Spark layer reads it when a query is analyzed (a
 * streaming query: once, when it starts) and ships the windows with the plan. A checkpoint records
 * the windows it was written with, so a streaming query restarted over a changed table fails,
 * naming the change, rather than mixing slices of two tables.
 */
final class TableWindows private (
    val table: String,
    val startColumn: String,
    val endColumn: String,
    val gracePeriod: Option[TimeSpan],
    val listed: Option[TableWindows.Listed]) extends WindowDefinition {

  /** How long after a window's end records may still arrive (streaming); see [[SlidingWindows.grace(afterWindowEnd:String)* SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): TableWindows = copy(gracePeriod = Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): TableWindows = copy(gracePeriod = Some(WindowSpec.grace(afterWindowEnd)))

  /** This definition with the windows read from its table (what windowagg's Spark layer does at analysis). */
  def withWindows(windows: TableWindows.Listed): TableWindows = copy(listed = Some(windows))

  private def copy(gracePeriod: Option[TimeSpan] = gracePeriod, listed: Option[TableWindows.Listed] = listed): TableWindows =
    new TableWindows(table, startColumn, endColumn, gracePeriod, listed)

  override def resolve(timeline: Timeline): TableWindows.Resolved = {
    val windows = listed.getOrElse(throw WindowError(
      s"the windows of table $table are read by windowagg's Spark session extension when a query is analyzed; " +
        "this definition has not been read"))
    TableWindows.Resolved(windows.starts, windows.ends, gracePeriod.map(_.toTicks(timeline, "grace period")))
  }

  override def spec: String = {
    val columns = if (startColumn == TableWindows.DefaultStart && endColumn == TableWindows.DefaultEnd) "" else s" columns $startColumn, $endColumn"
    s"table $table$columns${WindowSpec.graceSpec(gracePeriod)}"
  }

  /** The windows themselves, once read: state kept by slices of one table cannot serve another. */
  override def stateIdentity: String = spec + listed.map(l => s" (${l.size} windows, content ${l.fingerprint})").getOrElse("")

  override def toString: String =
    s"TableWindows.of($table, $startColumn, $endColumn)" + gracePeriod.map(g => s".grace($g)").getOrElse("") +
      listed.map(l => s" (${l.size} windows)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: TableWindows =>
      o.table == table && o.startColumn == startColumn && o.endColumn == endColumn && o.gracePeriod == gracePeriod && o.listed == listed
    case _ => false
  }
  override def hashCode: Int = (table, startColumn, endColumn, gracePeriod, listed).hashCode
}

object TableWindows extends WindowSpec.Reader {
  val DefaultStart = "start"
  val DefaultEnd = "end"

  /** The most windows a table may give: they are held by every task, and a streaming checkpoint records them. */
  val MaxWindows: Int = 100000

  /** The windows of the table or view `table`, one per row, from its columns `start` and `end`. */
  def of(table: String): TableWindows = of(table, DefaultStart, DefaultEnd)

  def of(table: String, startColumn: String, endColumn: String): TableWindows = {
    def named(value: String, what: String): String = {
      if (value == null || value.trim.isEmpty) throw WindowError(s"the $what of table windows must not be empty")
      value.trim
    }
    new TableWindows(named(table, "table name"), named(startColumn, "start column"), named(endColumn, "end column"), None, None)
  }

  /**
   * Windows as read from a table, in ticks of the time column: sorted by start, then end, each
   * once. `starts(i) < ends(i)` for every i: the reader refuses a table that breaks this.
   */
  final class Listed private (val starts: Array[Long], val ends: Array[Long]) extends Serializable {
    require(starts.length == ends.length)
    def size: Int = starts.length

    /** A digest of the windows: equal tables give equal fingerprints, and a changed window changes it. */
    def fingerprint: String = {
      val digest = MessageDigest.getInstance("SHA-256")
      val buffer = ByteBuffer.allocate(16)
      var i = 0
      while (i < size) {
        buffer.clear()
        buffer.putLong(starts(i)).putLong(ends(i))
        digest.update(buffer.array())
        i += 1
      }
      digest.digest().take(8).map(b => f"${b & 0xff}%02x").mkString
    }

    override def equals(other: Any): Boolean = other match {
      case o: Listed => java.util.Arrays.equals(o.starts, starts) && java.util.Arrays.equals(o.ends, ends)
      case _ => false
    }
    // plans compare and hash their expressions often; the windows are hashed once
    @transient private lazy val hash = 31 * java.util.Arrays.hashCode(starts) + java.util.Arrays.hashCode(ends)
    override def hashCode: Int = hash
  }

  object Listed {
    /**
     * The windows `[starts(i), ends(i))`, sorted and with duplicates removed; an error names the
     * first that is empty or inverted, its bounds written by `shown`.
     */
    def apply(starts: Array[Long], ends: Array[Long], shown: Long => String = _.toString): Listed = {
      if (starts.length != ends.length) throw WindowError("table windows need as many ends as starts")
      if (starts.length > MaxWindows) throw WindowError(s"a windows table may give at most $MaxWindows windows, got ${starts.length}")
      starts.indices.find(i => ends(i) <= starts(i)).foreach { i =>
        throw WindowError(s"the window [${shown(starts(i))}, ${shown(ends(i))}) ends at or before its start")
      }
      starts.indices.find(i => ends(i) - starts(i) <= 0).foreach { i => // the length overflows a 64-bit number of ticks
        throw WindowError(s"the window [${shown(starts(i))}, ${shown(ends(i))}) is longer than a 64-bit number of ticks")
      }
      val order = starts.indices.sortWith((a, b) => starts(a) < starts(b) || (starts(a) == starts(b) && ends(a) < ends(b)))
      val unique = order.indices.filter(i => i == 0 || starts(order(i)) != starts(order(i - 1)) || ends(order(i)) != ends(order(i - 1))).map(order)
      new Listed(unique.map(starts).toArray, unique.map(ends).toArray)
    }
  }

  override val keywords: Seq[String] = Seq("table")
  override val clauseWords: Seq[String] = Seq("columns")
  override val usage: String = "table <table or view> [columns <start column>, <end column>] [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("columns", "grace"))
    if (spec.lead.isEmpty || spec.lead.exists(_.isWhitespace)) throw WindowError(s"'${spec.text}' names no table: $usage")
    val windows = spec.clause("columns") match {
      case None => of(spec.lead)
      case Some(columns) => columns.split(",").map(_.trim) match {
        case Array(start, end) if start.nonEmpty && end.nonEmpty => of(spec.lead, start, end)
        case _ => throw WindowError(s"'${spec.text}': write the columns as 'columns <start column>, <end column>'")
      }
    }
    spec.grace.fold(windows)(g => windows.grace(g.spec))
  }

  /**
   * Table windows in ticks. The windows' bounds, sorted, cut the time line into slices that every
   * window holds whole or not at all; a time's slice starts at the last bound at or before it.
   */
  final case class Resolved(starts: Array[Long], ends: Array[Long], graceTicks: Option[Long]) extends EnumeratedWindows {
    private val bounds: Array[Long] = (starts ++ ends).distinct.sorted
    private val maxSize: Long = if (starts.isEmpty) 1L else starts.indices.map(i => ends(i) - starts(i)).max

    override def maxSpan: Long = maxSize - 1
    override def partialsSpanTimes: Boolean = true

    /** Times before the first bound are in no window, each its own slice. */
    override def sliceStart(time: Long): Long = {
      val i = lastAtOrBefore(bounds, time)
      if (i < 0) time else bounds(i)
    }

    // built where the windows are used (each task), not shipped with them
    @transient private lazy val index = new SliceIndex(bounds, starts, ends)

    override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit = {
      val slice = lastAtOrBefore(bounds, time)
      if (slice >= 0) index.foreachWindow(slice)(i => window(starts(i), ends(i)))
    }

    /** Windows are sorted by start: those starting in (after, time] are one run of them. */
    override def foreachWindowStartingAfter(after: Long, time: Long)(window: (Long, Long) => Unit): Unit = {
      var i = lastAtOrBefore(starts, after) + 1
      while (i < starts.length && starts(i) <= time) {
        if (ends(i) > time) window(starts(i), ends(i))
        i += 1
      }
    }

    override def holds(time: Long): Boolean = {
      val slice = lastAtOrBefore(bounds, time)
      slice >= 0 && index.latestEnd(slice) != Long.MinValue
    }

    override def closesAt(time: Long): Long = {
      val slice = lastAtOrBefore(bounds, time)
      if (slice < 0) Long.MinValue else index.latestEnd(slice) match {
        case Long.MinValue => Long.MinValue
        case end => end - 1
      }
    }

    override def equals(other: Any): Boolean = other match {
      case o: Resolved => java.util.Arrays.equals(o.starts, starts) && java.util.Arrays.equals(o.ends, ends) && o.graceTicks == graceTicks
      case _ => false
    }
    override def hashCode: Int = (java.util.Arrays.hashCode(starts), java.util.Arrays.hashCode(ends), graceTicks).hashCode
  }

  /**
   * Which windows hold each slice `[bounds(k), bounds(k + 1))`: a segment tree over the slices, each
   * window kept in the O(log n) nodes whose slices together are exactly its own, so that a slice's
   * windows are those of the nodes from its leaf up to the root. A query costs O(log n + its
   * windows) however the windows overlap or differ in size, and memory is O(windows × log n).
   */
  private final class SliceIndex(bounds: Array[Long], starts: Array[Long], ends: Array[Long]) {
    private val leaves: Int = Integer.highestOneBit(math.max(1, bounds.length - 1)) << 1
    /** The windows of node n are entries(offsets(n) until offsets(n + 1)). */
    private val offsets = new Array[Int](2 * leaves + 1)
    private val entries: Array[Int] = {
      starts.indices.foreach(i => foreachNode(i)(n => offsets(n + 1) += 1))
      var n = 1
      while (n < offsets.length) { offsets(n) += offsets(n - 1); n += 1 }
      val filled = offsets.clone()
      val out = new Array[Int](offsets.last)
      starts.indices.foreach(i => foreachNode(i) { n => out(filled(n)) = i; filled(n) += 1 })
      out
    }
    /** The latest end of a window kept in each node (Long.MinValue where none is). */
    private val nodeLatestEnd: Array[Long] = {
      val latest = Array.fill(2 * leaves)(Long.MinValue)
      starts.indices.foreach(i => foreachNode(i)(n => latest(n) = math.max(latest(n), ends(i))))
      latest
    }

    /** The nodes covering exactly the slices of window i, from the slice of its start to that of its end. */
    private def foreachNode(i: Int)(f: Int => Unit): Unit = {
      var l = lastAtOrBefore(bounds, starts(i)) + leaves
      var r = lastAtOrBefore(bounds, ends(i)) + leaves
      while (l < r) {
        if ((l & 1) == 1) { f(l); l += 1 }
        if ((r & 1) == 1) { r -= 1; f(r) }
        l >>>= 1
        r >>>= 1
      }
    }

    def foreachWindow(slice: Int)(window: Int => Unit): Unit = {
      var n = slice + leaves
      while (n >= 1) {
        var j = offsets(n)
        while (j < offsets(n + 1)) { window(entries(j)); j += 1 }
        n >>>= 1
      }
    }

    /** The latest end of the windows holding the slice, or Long.MinValue when none does. */
    def latestEnd(slice: Int): Long = {
      var latest = Long.MinValue
      var n = slice + leaves
      while (n >= 1) { latest = math.max(latest, nodeLatestEnd(n)); n >>>= 1 }
      latest
    }
  }

  /** The index of the last value at or before `time` in sorted `values`, or −1. */
  private def lastAtOrBefore(values: Array[Long], time: Long): Int = {
    var lo = 0
    var hi = values.length
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (values(mid) <= time) lo = mid + 1 else hi = mid
    }
    lo - 1
  }
}
