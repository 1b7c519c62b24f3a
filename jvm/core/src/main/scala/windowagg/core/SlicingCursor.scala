package windowagg.core

import scala.collection.mutable
import scala.jdk.CollectionConverters._

/**
 * The windows of an enumerable kind over one key's slice partials, by slicing: each slice's
 * partial is made once, and each window combines the slices it holds through a [[FifoAggregator]],
 * so a window costs amortized O(1) merges however many slices it spans when windows come in
 * non-decreasing start as well as end (tumbling, hopping, cumulative, calendar windows). A window
 * whose start goes back behind the previous one's (overlapping windows of different sizes: table
 * windows, some user kinds) is combined from a tree over the kept slices instead: O(log n) merges
 * of partials of aligned runs of slices, each run's partial made once and kept while its slices are.
 *
 * Windows are produced in order of (end, start), each once a slice beyond its end is read (or the
 * input ends), and only windows holding at least one slice exist. Slices older than the kind's
 * largest span behind the newest one are let go, so memory is bounded by one window's slices.
 *
 * @param partials one partial per slice, keyed by its slice start, strictly increasing
 * @param lastTickFrom windows whose last tick is before it are left out: a streaming sweep has
 *        emitted them already
 * @param lastTickBefore windows whose last tick is at or after it are left out, all but the
 *        earliest last tick among them ([[leftOut]]): a streaming sweep up to the watermark needs no
 *        more (slices that list their windows keep all of them, before either bound too)
 */
final class SlicingCursor[P](kind: EnumeratedWindows, partials: Iterator[Reaching[P]], agg: PartialAggregation[P],
    lastTickFrom: Long = Long.MinValue, lastTickBefore: Long = Long.MaxValue) extends WindowCursor[P] {

  private val input = Ticks.strictlyIncreasing(partials, "window")(_.time)
  private val sliceTimes = new LongQueue()
  private val slicePartials = new mutable.ArrayDeque[P]()
  private var dropped = 0L // slices let go from the front: absolute index of sliceTimes(0)
  // the FIFO holds copies of the slices with absolute indexes [held, heldUntil)
  private val fifo = new FifoAggregator[P](agg)
  private var held = 0L
  private var heldUntil = 0L
  private val pending = new SlicingCursor.Pending
  // the partials of aligned runs of slices: at level l, the run of slices [i << l, (i + 1) << l) by i
  private val runs = mutable.ArrayBuffer.empty[mutable.LongMap[P]]
  private var runsKept = 0
  private var sweepRunsAt = 64
  private var previousSlice = 0L
  private var anySlice = false
  private var next: Reaching[P] = read()

  private var currentStart = 0L
  private var currentEnd = 0L
  // Long.MaxValue while none is left out: no window's last tick is, as its end is exclusive
  private var earliestLeftOut = Long.MaxValue

  def start: Long = currentStart
  def end: Long = currentEnd
  /** Combined only when asked for: a caller passing over windows costs no merge. */
  def aggregate: P = combine(currentStart, currentEnd)

  def advance(): Boolean = {
    while (true) {
      if (!pending.isEmpty && (next == null || pending.firstEnd - 1 < next.time)) {
        pending.pollFirst()
        currentStart = pending.polledStart
        currentEnd = pending.polledEnd
        return true
      }
      if (next == null) return false
      // the windows of slices after the earliest one left out all end after it: none is wanted
      if (next.time > earliestLeftOut) return false
      addSlice(next)
      next = read()
    }
    false
  }

  private def addSlice(slice: Reaching[P]): Unit = {
    val t = slice.time
    // a window holding t that starts at or before the previous slice holds that slice too: it is
    // pending already, so only windows starting after it are new (one per slice for hopping windows)
    if (slice.listed != null) addListed(t, slice.listed)
    else if (anySlice) kind.foreachWindowStartingAfter(previousSlice, t)(addWindow)
    else leaveOut(kind.foreachWindowEndingIn(t, lastTickFrom, lastTickBefore)(addWindow))
    previousSlice = t
    anySlice = true
    sliceTimes += t
    slicePartials += slice.partial
    // no window still to come starts before t − maxSpan: they all end after t
    val oldest = Ticks.saturatingAdd(t, -kind.maxSpan)
    while (dropped < held && sliceTimes.head < oldest) {
      sliceTimes.removeHead()
      slicePartials.removeHead()
      dropped += 1
    }
    dropRuns()
  }

  private def addWindow(start: Long, end: Long): Unit =
    if (end - 1 >= lastTickBefore) leaveOut(end - 1)
    else if (end - 1 >= lastTickFrom) pending.add(start, end)

  /** Notes a window left out for ending at or after the bound (none if `lastTick` is Long.MaxValue). */
  private def leaveOut(lastTick: Long): Unit = earliestLeftOut = math.min(earliestLeftOut, lastTick)

  override def leftOut: Option[Long] = Option.when(earliestLeftOut != Long.MaxValue)(earliestLeftOut)

  /**
   * The windows a slice's records listed themselves ([[windowagg.core.Reaching.listed]]). Every window pending holds
   * `t` (those ending at or before it are out), so `t` must list them all: more pending than listed
   * is a window some earlier time listed and `t` does not.
   */
  private def addListed(t: Long, listed: Array[Long]): Unit = {
    var i = 0
    while (i < listed.length) {
      val (start, end) = (listed(i), listed(i + 1))
      if (!anySlice || start > previousSlice) pending.add(start, end)
      else if (!pending.contains(start, end)) throw kind.unlisted(start, end, listedAt = t, notAt = previousSlice)
      i += 2
    }
    if (pending.size != listed.length / 2) {
      val (start, end) = pending.all.find { case (s, e) => !(0 until listed.length by 2).exists(j => listed(j) == s && listed(j + 1) == e) }.get
      throw kind.unlisted(start, end, listedAt = previousSlice, notAt = t)
    }
  }

  /** The aggregate of the kept slices in [start, end): the FIFO moved there, from the tree when going back. */
  private def combine(start: Long, end: Long): P = {
    val from = dropped + firstAtOrAfter(start, held)
    val until = dropped + firstAtOrAfter(end, heldUntil)
    if (from < held || until < heldUntil) return fromRuns(from, until)
    // past everything held: start over
    if (from >= heldUntil) {
      fifo.clear()
      held = from
      heldUntil = from
    }
    while (heldUntil < until) {
      // the FIFO reuses what it is given, and a slice may serve a later rebuild: it gets a copy
      fifo.push(agg.mergeInto(agg.newEmpty(), slicePartials((heldUntil - dropped).toInt)))
      heldUntil += 1
    }
    while (held < from) {
      fifo.pop()
      held += 1
    }
    fifo.aggregate
  }

  private var combined: P = _
  private val laterRuns = mutable.ArrayBuffer.empty[P] // fromRuns' runs at the right end, latest first

  /** The slices [from, until) (absolute indexes) as the fewest aligned runs, merged in time order. */
  private def fromRuns(from: Long, until: Long): P = {
    combined = if (combined == null) agg.newEmpty() else agg.reset(combined)
    laterRuns.clear()
    var l = from
    var r = until
    var level = 0
    while (l < r) {
      if ((l & 1) == 1) { combined = agg.mergeInto(combined, run(level, l)); l += 1 }
      if ((r & 1) == 1) { r -= 1; laterRuns += run(level, r) }
      l >>= 1
      r >>= 1
      level += 1
    }
    var i = laterRuns.length - 1
    while (i >= 0) { combined = agg.mergeInto(combined, laterRuns(i)); i -= 1 }
    combined
  }

  /** The partial of slices [index << level, (index + 1) << level), all kept: made once, from its two halves. */
  private def run(level: Int, index: Long): P =
    if (level == 0) slicePartials((index - dropped).toInt)
    else {
      while (runs.length < level) runs += mutable.LongMap.empty[P]
      val ofLevel = runs(level - 1)
      ofLevel.getOrElse(index, {
        val made = agg.mergeInto(agg.mergeInto(agg.newEmpty(), run(level - 1, 2 * index)), run(level - 1, 2 * index + 1))
        ofLevel.update(index, made)
        runsKept += 1
        made
      })
    }

  /** Lets go of runs holding dropped slices, each time the runs kept have doubled. */
  private def dropRuns(): Unit = if (runsKept > sweepRunsAt) {
    runsKept = 0
    runs.indices.foreach { i =>
      val level = i + 1
      runs(i) = runs(i).filter { case (index, _) => (index << level) >= dropped }
      runsKept += runs(i).size
    }
    sweepRunsAt = 2 * runsKept + 64
  }

  /**
   * The first kept slice at or after `time`, looked for first a few slices on from `hint` (an
   * absolute index): windows coming in order move the FIFO's ends by a slice or none at a time.
   */
  private def firstAtOrAfter(time: Long, hint: Long): Int = {
    var i = hint - dropped
    if (i >= 0 && i <= sliceTimes.length && (i == 0 || sliceTimes((i - 1).toInt) < time)) {
      val near = math.min(i + 4, sliceTimes.length.toLong)
      while (i < near && sliceTimes(i.toInt) < time) i += 1
      if (i == sliceTimes.length || sliceTimes(i.toInt) >= time) return i.toInt
    }
    var lo = 0
    var hi = sliceTimes.length
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (sliceTimes(mid) < time) lo = mid + 1 else hi = mid
    }
    lo
  }

  private def read(): Reaching[P] = if (input.hasNext) input.next() else null
}

private object SlicingCursor {
  final case class Window(start: Long, end: Long)

  /** Whether window (start, end) comes before (otherStart, otherEnd) in (end, start) order. */
  def before(start: Long, end: Long, otherStart: Long, otherEnd: Long): Boolean =
    end < otherEnd || (end == otherEnd && start < otherStart)

  val byEndThenStart: java.util.Comparator[Window] = (a: Window, b: Window) =>
    if (before(a.start, a.end, b.start, b.end)) -1 else if (before(b.start, b.end, a.start, a.end)) 1 else 0

  /**
   * The windows waiting for their end, a set in (end, start) order. Windows added in that order
   * (each aligned kind opens its windows so) go to a queue of longs, in O(1) and unboxed; any other
   * goes to a tree beside it, and the first of the two is polled.
   */
  final class Pending {
    private val starts = new LongQueue()
    private val ends = new LongQueue()
    private val unordered = new java.util.TreeSet[Window](byEndThenStart)
    var polledStart = 0L
    var polledEnd = 0L

    def isEmpty: Boolean = starts.isEmpty && unordered.isEmpty
    def size: Int = starts.length + unordered.size

    // Every window in the tree comes before the queue's last (it went there for that, and polls take
    // it before that last), so the tree is empty when the queue is, and a window after the queue's
    // last is in neither.
    def add(start: Long, end: Long): Unit =
      if (starts.isEmpty || before(starts.last, ends.last, start, end)) { starts += start; ends += end }
      else if (!queued(start, end)) unordered.add(Window(start, end))

    private def fromQueue: Boolean =
      unordered.isEmpty || starts.nonEmpty && before(starts.head, ends.head, unordered.first.start, unordered.first.end)

    def firstEnd: Long = if (fromQueue) ends.head else unordered.first.end

    /** Removes the first window, whose bounds are then `polledStart` and `polledEnd`. */
    def pollFirst(): Unit =
      if (fromQueue) {
        polledStart = starts.removeHead()
        polledEnd = ends.removeHead()
      } else {
        val w = unordered.pollFirst()
        polledStart = w.start
        polledEnd = w.end
      }

    def contains(start: Long, end: Long): Boolean = queued(start, end) || unordered.contains(Window(start, end))

    def all: Iterator[(Long, Long)] =
      Iterator.range(0, starts.length).map(i => (starts(i), ends(i))) ++ unordered.iterator.asScala.map(w => (w.start, w.end))

    /** Whether the queue, sorted, holds the window: a binary search. */
    private def queued(start: Long, end: Long): Boolean = {
      var lo = 0
      var hi = starts.length
      while (lo < hi) {
        val mid = (lo + hi) >>> 1
        if (before(starts(mid), ends(mid), start, end)) lo = mid + 1 else hi = mid
      }
      lo < starts.length && starts(lo) == start && ends(lo) == end
    }
  }
}
