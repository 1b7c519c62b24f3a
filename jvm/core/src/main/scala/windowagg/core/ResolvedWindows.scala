package windowagg.core

import windowagg.core.Ticks.saturatingAdd

/**
 * A window definition resolved against a time column, all in ticks: what the one batch operator
 * and the one streaming processor drive, whatever the kind. A kind says how its windows come out
 * of one key's time-ordered partials (its cursor) and when they are final; the engine does the rest.
 *
 * Windows are reported as (start, end). `endInclusive` tells whether `end` is a time of the window
 * (`[start, end]`, as KIP-450 and KIP-94) or the first time after it (`[start, end)`, as Spark's
 * `window()` and Kafka's `TimeWindows`).
 */
trait ResolvedWindows extends Serializable {
  /** How long after a window's end rows may still arrive (streaming), in ticks, where the definition gives it. */
  def graceTicks: Option[Long]

  def endInclusive: Boolean

  /** The last time a window ending at `end` holds; it is final once the watermark passes this. */
  final def lastTick(end: Long): Long = if (endInclusive) end else end - 1

  /** The largest `lastTick(end) − start` of any window: partials older than that behind every open window are dropped. */
  def maxSpan: Long

  /**
   * The time under which a record at `time` is aggregated: the time itself, or for kinds swept by
   * slicing the start of its slice (all its windows hold the whole slice). A partial time is its
   * own partial time.
   */
  def partialTime(time: Long): Long = time

  /**
   * Whether `partialTime` gathers many times under one (the kind's slices are longer than a tick),
   * so that a key's rows fold into fewer partials than it has distinct times whatever the data: where
   * aggregating before the shuffle pays.
   */
  def partialsSpanTimes: Boolean = false

  /**
   * How far a record at `time` keeps its window open (sessions: t + gap); `rowLength` is the
   * record's own length in ticks where the definition reads one per row, 0 otherwise.
   */
  def reach(time: Long, rowLength: Long): Long = time

  /**
   * Every window of one key, from its partials in strictly increasing time (each keyed by
   * `partialTime`), in non-decreasing order of end. The cursor owns the partials handed to it.
   */
  def cursor[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P]): WindowCursor[P]

  /**
   * A [[cursor]] for a caller that wants only the windows whose last tick is in [`from`, `until`)
   * and the earliest last tick at or after `until`: a kind may leave the others out (then
   * [[windowagg.core.WindowCursor.leftOut]] says that earliest one) instead of listing every window of
   * its partials, earlier ones included. The whole cursor unless a kind does so.
   */
  def cursorEndingIn[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P], from: Long, until: Long): WindowCursor[P] =
    cursor(partials, agg)

  /**
   * Whether any window holds a record at `time` (this partial time). A record in no window is not
   * aggregated; the engine counts it (and routes it in streaming), never drops it silently.
   */
  def holds(time: Long): Boolean = true

  /**
   * The columns that choose a key's windows, where each key has windows of its own (a table of
   * windows per key): then the engine works with `ofKey` of each key it holds, never with these
   * windows themselves. Empty for every other kind.
   */
  def keyColumns: Seq[String] = Nil

  final def perKey: Boolean = keyColumns.nonEmpty

  /** These windows with `keyColumns` found at `ordinals` of the grouping keys: the planner binds them. */
  def boundToKeys(ordinals: Array[Int]): ResolvedWindows = this

  /** The windows of the key whose grouping values (Spark's internal values, in the grouping keys' order) are `key`. */
  def ofKey(key: IndexedSeq[Any]): ResolvedWindows = this

  /** Whether windows ever become final; a kind whose windows never close (unlimited) can only emit updates. */
  def everFinal: Boolean = true

  /** The last tick of the latest window that can hold a record at `time` (one it `holds`): once the watermark passes it, the record is late. */
  def closesAt(time: Long): Long

  /**
   * The last tick of a window that holds a record at `time` whatever other records come. A record
   * arriving behind it but not late joins only windows still open, and only other records can make
   * those exist (a sliding window's right windows): streaming keeps such a record until every window
   * that could hold it is final, and routes it as in no window if none did. Kinds whose windows exist
   * by their definition alone hold every record in its latest window.
   */
  def certainlyHeldUntil(time: Long): Long = closesAt(time)

  /**
   * A tick no later than the last tick of the first window to close among those holding a partial
   * at `time`: when streaming first needs to look at that partial's windows. The time itself,
   * unless the kind lists a time's windows.
   */
  def firstClosesAt(time: Long): Long = time

  /** The oldest partial time that a window whose last tick is at or after `from` can hold. */
  def oldestNeeded(from: Long): Long = saturatingAdd(from, -maxSpan)

  /**
   * Partial times whose partials may be folded into one, at the earliest of them, once every window
   * whose last tick is before `from` is final: a span [start, until) that each window with a last
   * tick at or after `from` holds whole or not at all; None for most kinds. Where windows that grow
   * keep holding the same old partials, folding them keeps each sweep from reading them one by one.
   */
  def foldable(from: Long): Option[(Long, Long)] = None

  /** Whether new partials at `times` (sorted) change the window (start, end). */
  def changedBy(start: Long, end: Long, times: Array[Long]): Boolean = {
    var lo = 0
    var hi = times.length
    while (lo < hi) { // the first index with times(i) >= start
      val mid = (lo + hi) >>> 1
      if (times(mid) < start) lo = mid + 1 else hi = mid
    }
    lo < times.length && times(lo) <= lastTick(end)
  }
}

/**
 * Kinds whose windows grow and merge as records arrive (sessions): streaming keeps one partial per
 * open window and merges them, instead of sweeping per-time partials.
 */
trait MergingWindows extends ResolvedWindows {
  /** A fixed gap in ticks, or None when each record carries its own. */
  def fixedGap: Option[Long]
}

/**
 * Kinds whose windows can be listed for a time (KIP-645), each `[start, end)`, swept by slicing:
 * records of one slice are aggregated together, and each window combines its slices.
 */
trait EnumeratedWindows extends ResolvedWindows {
  /** Hands `window(start, end)` every window that holds `time`. */
  def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit

  /**
   * Hands `window(start, end)` the windows holding `time` whose last tick is in [`from`, `until`),
   * and returns the earliest last tick at or after `until` among the others (Long.MaxValue if none).
   * A kind with many windows per time (a cumulative period's) overrides it to list only those.
   */
  def foreachWindowEndingIn(time: Long, from: Long, until: Long)(window: (Long, Long) => Unit): Long = {
    var later = Long.MaxValue
    foreachWindow(time) { (start, end) =>
      val last = end - 1
      if (last >= until) later = math.min(later, last)
      else if (last >= from) window(start, end)
    }
    later
  }

  /**
   * The windows holding `time` that start after `after` (< `time`): those a slice at `time` opens
   * when the slice before it was at `after`. A kind that finds them without listing all of a time's
   * windows overrides this.
   */
  def foreachWindowStartingAfter(after: Long, time: Long)(window: (Long, Long) => Unit): Unit =
    foreachWindow(time)((s, e) => if (s > after) window(s, e))

  /**
   * The start of the slice holding `time`: a run of times that every window either holds whole or
   * not at all. Each distinct time is its own slice unless a kind knows coarser ones.
   */
  def sliceStart(time: Long): Long = time

  /**
   * The error for a window listed for the slice at `listedAt` but not for the one at `notAt`, which
   * it contains: met only where records list their windows ([[windowagg.core.Reaching.listed]]); such a kind
   * overrides it to show times as its time column does.
   */
  def unlisted(start: Long, end: Long, listedAt: Long, notAt: Long): WindowError =
    WindowError(s"the window [$start, $end) is listed for $listedAt but not for $notAt, which it contains: " +
      "a window must be listed for every time in it")

  override final def endInclusive: Boolean = false
  override final def partialTime(time: Long): Long = sliceStart(time)

  override def cursor[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P]): WindowCursor[P] =
    new SlicingCursor[P](this, partials, agg)

  // a slice may be in many windows (every one of a cumulative period): a sweep from the last
  // watermark up to this one keeps only the windows it hands out, not those
  override def cursorEndingIn[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P], from: Long, until: Long): WindowCursor[P] =
    new SlicingCursor[P](this, partials, agg, from, until)

  override def closesAt(time: Long): Long = {
    var latest = Long.MinValue
    foreachWindow(time)((_, end) => latest = math.max(latest, end - 1))
    latest
  }

  override def firstClosesAt(time: Long): Long = {
    var first = Long.MaxValue
    foreachWindow(time)((_, end) => first = math.min(first, end - 1))
    // in no window, or only in one that never closes: the time itself, as a lower bound
    if (first >= Long.MaxValue - 1) time else first
  }
}

/**
 * Kinds whose windows are cut at rows rather than at times (Storm's count windows, and windows
 * evaluated at every row or every n rows): the engine hands the cursor one partial per row, the
 * key's rows in order of (time, tie-break), and a window holds whole rows. A row's place among
 * the key's rows is fixed once the watermark passes its time, so in streaming a row behind the
 * watermark is late, and windows come out final only.
 */
trait RowWindows extends ResolvedWindows {
  override final def endInclusive: Boolean = true

  /** A row behind the watermark is late: its place among the counted rows is settled. */
  override def closesAt(time: Long): Long = time

  /** The most rows behind the watermark that a window not yet final can hold (Long.MaxValue: no bound by count). */
  def rowsNeeded: Long

  /**
   * Whether the windows a row is in follow from its time alone, before its place among the key's
   * rows settles (a length of time evaluated at multiples of a slide of time), so that a window
   * not evaluated yet has a running value ([[windowsHolding]]). Windows cut at rows (a count of
   * rows, a slide in rows) are known only as the watermark settles their rows.
   */
  def spansOfTime: Boolean = false

  /** With [[spansOfTime]]: the windows holding `time`, each (start exclusive, end inclusive), earliest first. */
  def windowsHolding(time: Long): Iterator[(Long, Long)] = Iterator.empty

  /**
   * The windows of one key's rows, in order, the first at `firstPosition` among the key's rows
   * (streaming resumes from the rows it kept); see [[windowagg.core.RowWindowCursor]] for `until`, `views` (Storm's
   * new and expired rows) and `leftOut`.
   */
  def rowCursor[P](firstPosition: Long, rows: Iterator[Timed[P]], agg: PartialAggregation[P], until: Option[Long],
      views: Boolean)(leftOut: Long => Unit): RowWindowCursor[P]

  override def cursor[P](partials: Iterator[Reaching[P]], agg: PartialAggregation[P]): WindowCursor[P] =
    rowCursor(0L, partials.map(p => Timed(p.time, p.partial)), agg, until = None, views = false)(_ => ())
}
