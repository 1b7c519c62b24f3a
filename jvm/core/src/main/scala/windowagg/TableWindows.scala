package windowagg

import java.nio.ByteBuffer
import java.security.MessageDigest
import java.time.Duration

import windowagg.core.{EnumeratedWindows, ResolvedWindows, TimeSpan, WindowError}

/**
 * Windows given as data: each row of a table or view is a window `[start, end)`, in the time
 * column's own type and ticks. Windows may overlap, nest and differ in size; a time in none of them
 * is in no window (counted, never dropped silently). This is what a range join
 * `events JOIN periods ON ts >= start AND ts < end` followed by a `GROUP BY` computes, without the join:
 * the windows' bounds cut the time line into slices, each key aggregates one partial per slice,
 * and each window combines the partials of its slices.
 *
 * With key columns ([[perKey]]) each row is a window of the keys it names: each key has its own
 * windows, as when the range join also joins on the key, and a key the table does not name has none.
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
    val keyColumns: Seq[String],
    val disjoint: Boolean,
    val gracePeriod: Option[TimeSpan],
    val listed: Option[TableWindows.Read]) extends WindowDefinition {

  /** How long after a window's end records may still arrive (streaming); see [[SlidingWindows.grace(afterWindowEnd:String)* SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): TableWindows = copy(gracePeriod = Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): TableWindows = copy(gracePeriod = Some(WindowSpec.grace(afterWindowEnd)))

  /**
   * Each key's own windows: a row is a window of the key named by its columns `columns` (comma
   * separated), joined with the aggregation's grouping keys of the same names.
   */
  def perKey(columns: String): TableWindows = {
    val named = Option(columns).toSeq.flatMap(_.split(",")).map(_.trim)
    if (named.isEmpty || named.exists(_.isEmpty)) throw WindowError(s"'$columns' names no key columns; write them as 'customer, region'")
    named.groupBy(_.toLowerCase(java.util.Locale.ROOT)).collectFirst { case (_, same) if same.length > 1 =>
      throw WindowError(s"the key column ${same.head} of table windows is named twice")
    }
    new TableWindows(table, startColumn, endColumn, named, disjoint, gracePeriod, None)
  }

  /**
   * Asks that no two windows (of one key, for per-key windows) overlap, as subscription periods or
   * shifts must not: a table where two do fails the query when it is read, naming them.
   */
  def nonOverlapping(): TableWindows = new TableWindows(table, startColumn, endColumn, keyColumns, true, gracePeriod, None)

  /** This definition with the windows read from its table (what windowagg's Spark layer does at analysis). */
  def withWindows(windows: TableWindows.Listed): TableWindows = {
    if (keyColumns.nonEmpty) throw WindowError(s"the windows of table $table are per key: give each key's windows")
    withWindows(TableWindows.Read(Map(Seq.empty[Any] -> windows)))
  }

  /** This definition with each key's windows, keyed by the values of its key columns, as the reader holds them. */
  def withWindows(windows: TableWindows.Read): TableWindows = copy(listed = Some(windows))

  private def copy(gracePeriod: Option[TimeSpan] = gracePeriod, listed: Option[TableWindows.Read] = listed): TableWindows =
    new TableWindows(table, startColumn, endColumn, keyColumns, disjoint, gracePeriod, listed)

  override def resolve(timeline: Timeline): EnumeratedWindows = {
    val windows = listed.getOrElse(throw WindowError(
      s"the windows of table $table are read by windowagg's Spark session extension when a query is analyzed; " +
        "this definition has not been read"))
    val grace = gracePeriod.map(timeline.ticks(_, "grace period"))
    def resolved(l: TableWindows.Listed) = TableWindows.Resolved(l.starts, l.ends, grace)
    if (keyColumns.isEmpty) resolved(windows.byKey.getOrElse(Seq.empty, TableWindows.Listed(Array.emptyLongArray, Array.emptyLongArray)))
    else TableWindows.ResolvedByKey(keyColumns, windows.byKey.map { case (k, l) => k -> resolved(l) }, grace, Array.emptyIntArray)
  }

  override def spec: String = named(table)

  private def named(name: String): String = {
    val columns = if (startColumn == TableWindows.DefaultStart && endColumn == TableWindows.DefaultEnd) "" else s" columns $startColumn, $endColumn"
    val keys = if (keyColumns.isEmpty) "" else s" keys ${keyColumns.mkString(", ")}"
    s"table $name$columns$keys${if (disjoint) " non-overlapping" else ""}${WindowSpec.graceSpec(gracePeriod)}"
  }

  /**
   * The windows themselves, once read, whatever the table is named: state kept by slices of one
   * table's windows cannot serve other windows, and serves the same windows under another name (a
   * DataFrame's view is named anew each time it is registered, as when its query restarts).
   */
  override def stateIdentity: String =
    named("windows") + listed.map(l => s" (${l.size} windows, content ${l.fingerprint})").getOrElse("")

  override def toString: String =
    s"TableWindows.of($table, $startColumn, $endColumn)" + (if (keyColumns.isEmpty) "" else s".perKey(${keyColumns.mkString(", ")})") +
      (if (disjoint) ".nonOverlapping()" else "") +
      gracePeriod.map(g => s".grace($g)").getOrElse("") + listed.map(l => s" (${l.size} windows)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: TableWindows =>
      o.table == table && o.startColumn == startColumn && o.endColumn == endColumn && o.keyColumns == keyColumns &&
        o.disjoint == disjoint && o.gracePeriod == gracePeriod && o.listed == listed
    case _ => false
  }
  override def hashCode: Int = (table, startColumn, endColumn, keyColumns, disjoint, gracePeriod, listed).hashCode
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
    new TableWindows(named(table, "table name"), named(startColumn, "start column"), named(endColumn, "end column"), Nil, false, None, None)
  }

  /**
   * A table's windows as read: each key's, by the values of the key columns (Spark's internal values,
   * which the reader and the engine share), or with no key columns every key's under the empty key.
   */
  final case class Read(byKey: Map[Seq[Any], Listed]) {
    def size: Int = byKey.valuesIterator.map(_.size).sum

    /** A digest of the keys and their windows: equal tables give equal fingerprints. */
    def fingerprint: String =
      if (byKey.keySet == Set(Seq.empty)) byKey(Seq.empty).fingerprint
      else {
        val digest = MessageDigest.getInstance("SHA-256")
        byKey.toSeq.map { case (k, l) => (k.mkString("\u0000"), l.fingerprint) }.sorted.foreach { case (k, f) =>
          digest.update(s"$k\u0001$f\u0002".getBytes(java.nio.charset.StandardCharsets.UTF_8))
        }
        digest.digest().take(8).map(b => f"${b & 0xff}%02x").mkString
      }
  }

  /**
   * Windows as read from a table, in ticks of the time column: sorted by start, then end, each
   * once. `starts(i) < ends(i)` for every i: the reader refuses a table that breaks this.
   */
  final class Listed private (val starts: Array[Long], val ends: Array[Long]) extends Serializable {
    require(starts.length == ends.length)
    def size: Int = starts.length

    /**
     * The first two windows, in order of start, that overlap, if any. Sorted by start, windows overlap
     * somewhere only if two neighbours do: where none do, each ends before the next starts.
     */
    def firstOverlap: Option[((Long, Long), (Long, Long))] =
      (1 until size).find(i => starts(i) < ends(i - 1)).map(i => ((starts(i - 1), ends(i - 1)), (starts(i), ends(i))))

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
  override val clauseWords: Seq[String] = Seq("columns", "keys", "non-overlapping")
  override val usage: String =
    "table <table or view> [columns <start column>, <end column>] [keys <column>, ...] [non-overlapping] [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("columns", "keys", "non-overlapping", "grace"))
    if (spec.lead.isEmpty || spec.lead.exists(_.isWhitespace)) throw WindowError(s"'${spec.text}' names no table: $usage")
    val windows = spec.clause("columns") match {
      case None => of(spec.lead)
      case Some(columns) => columns.split(",").map(_.trim) match {
        case Array(start, end) if start.nonEmpty && end.nonEmpty => of(spec.lead, start, end)
        case _ => throw WindowError(s"'${spec.text}': write the columns as 'columns <start column>, <end column>'")
      }
    }
    val keyed = spec.clause("keys").fold(windows)(windows.perKey)
    val disjoint = spec.clause("non-overlapping") match {
      case None => keyed
      case Some("") => keyed.nonOverlapping()
      case Some(other) => throw WindowError(s"'${spec.text}': 'non-overlapping' takes nothing after it, got '$other'")
    }
    spec.grace.fold(disjoint)(g => disjoint.grace(g.spec))
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

    // built where the windows are used (each task), not shipped with them
    @transient private lazy val index = new SliceIndex(bounds, starts, ends)
    /** Whether some window holds slice k, `[bounds(k), bounds(k + 1))`. */
    @transient private lazy val heldSlices: Array[Boolean] = Array.tabulate(bounds.length)(k => index.latestEnd(k) != Long.MinValue)

    /**
     * Times in no window (before the first window, in gaps, after the last) are one slice,
     * Long.MinValue: a key's rows there fold into one partial before the shuffle, whatever their times.
     */
    override def sliceStart(time: Long): Long = {
      val i = lastAtOrBefore(bounds, time)
      if (i < 0 || !heldSlices(i)) Long.MinValue else bounds(i)
    }

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
      slice >= 0 && heldSlices(slice)
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
   * Table windows per key: each key's own [[Resolved]] windows, by the values of the key columns, and
   * none for a key the table does not name. `keyOrdinals` says where those values are among the
   * aggregation's grouping keys; the planner binds them ([[boundToKeys]]). The engine asks `ofKey` for each
   * key's windows wherever it holds the key: these windows hold no time themselves.
   */
  final case class ResolvedByKey(override val keyColumns: Seq[String], byKey: Map[Seq[Any], Resolved], graceTicks: Option[Long],
      keyOrdinals: Array[Int]) extends EnumeratedWindows {
    require(keyColumns.nonEmpty)
    private val none = Resolved(Array.emptyLongArray, Array.emptyLongArray, graceTicks)

    override val maxSpan: Long = byKey.valuesIterator.map(_.maxSpan).maxOption.getOrElse(none.maxSpan)
    override def partialsSpanTimes: Boolean = true

    override def boundToKeys(ordinals: Array[Int]): ResolvedByKey = {
      require(ordinals.length == keyColumns.length)
      copy(keyOrdinals = ordinals)
    }

    override def ofKey(key: IndexedSeq[Any]): ResolvedWindows = {
      if (keyOrdinals.length != keyColumns.length) throw new IllegalStateException("per-key table windows used before their key columns were bound")
      byKey.getOrElse(keyOrdinals.toSeq.map(key), none)
    }

    private def unkeyed: Nothing = throw new IllegalStateException("per-key table windows are used through ofKey")
    override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit = unkeyed
    override def sliceStart(time: Long): Long = unkeyed
    override def holds(time: Long): Boolean = unkeyed
    override def closesAt(time: Long): Long = unkeyed

    override def equals(other: Any): Boolean = other match {
      case o: ResolvedByKey =>
        o.keyColumns == keyColumns && o.byKey == byKey && o.graceTicks == graceTicks && o.keyOrdinals.sameElements(keyOrdinals)
      case _ => false
    }
    // plans hash their expressions often; every key's windows are hashed once
    @transient private lazy val hash = (keyColumns, byKey, graceTicks, keyOrdinals.toSeq).hashCode
    override def hashCode: Int = hash
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
