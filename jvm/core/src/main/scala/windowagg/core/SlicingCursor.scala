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
  private val pending = new java.util.TreeSet[SlicingCursor.Window](SlicingCursor.byEndThenStart)
  // the partials of aligned runs of slices: at level l, the run of slices [i << l, (i + 1) << l) by i
  private val runs = mutable.ArrayBuffer.empty[mutable.LongMap[P]]
  private var runsKept = 0
  private var sweepRunsAt = 64
  private var previousSlice = 0L
  private var anySlice = false
  private var next: Reaching[P] = read()

  private var current: SlicingCursor.Window = _
  // Long.MaxValue while none is left out: no window's last tick is, as its end is exclusive
  private var earliestLeftOut = Long.MaxValue

  def start: Long = current.start
  def end: Long = current.end
  /** Combined only when asked for: a caller passing over windows costs no merge. */
  def aggregate: P = combine(current.start, current.end)

  def advance(): Boolean = {
    while (true) {
      if (!pending.isEmpty && (next == null || pending.first.end - 1 < next.time)) {
        current = pending.pollFirst()
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
    else if (end - 1 >= lastTickFrom) pending.add(SlicingCursor.Window(start, end))

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
      val w = SlicingCursor.Window(listed(i), listed(i + 1))
      if (!anySlice || w.start > previousSlice) pending.add(w)
      else if (!pending.contains(w)) throw kind.unlisted(w.start, w.end, listedAt = t, notAt = previousSlice)
      i += 2
    }
    if (pending.size != listed.length / 2) {
      val w = pending.iterator.asScala.find(w => !(0 until listed.length by 2).exists(j => listed(j) == w.start && listed(j + 1) == w.end)).get
      throw kind.unlisted(w.start, w.end, listedAt = previousSlice, notAt = t)
    }
  }

  /** The aggregate of the kept slices in [start, end): the FIFO moved there, from the tree when going back. */
  private def combine(start: Long, end: Long): P = {
    val from = dropped + firstAtOrAfter(start)
    val until = dropped + firstAtOrAfter(end)
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

  private def firstAtOrAfter(time: Long): Int = {
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

  val byEndThenStart: java.util.Comparator[Window] = (a: Window, b: Window) => {
    val byEnd = java.lang.Long.compare(a.end, b.end)
    if (byEnd != 0) byEnd else java.lang.Long.compare(a.start, b.start)
  }
}
