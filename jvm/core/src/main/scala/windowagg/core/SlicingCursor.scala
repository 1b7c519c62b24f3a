package windowagg.core

import scala.collection.mutable

import windowagg.{EnumeratedWindows, Window}

/**
 * The windows of an enumerable kind over one key's slice partials, by slicing: each slice's
 * partial is made once, and each window combines the slices it holds through a [[FifoAggregator]],
 * so a window costs amortized O(1) merges however many slices it spans when windows come in
 * non-decreasing start as well as end (tumbling, hopping, cumulative, calendar windows). A kind
 * whose windows' starts go back (some user kinds) still comes out right: the combination is then
 * rebuilt from the kept slices.
 *
 * Windows are produced in order of (end, start), each once a slice beyond its end is read (or the
 * input ends), and only windows holding at least one slice exist. Slices older than the kind's
 * largest span behind the newest one are let go, so memory is bounded by one window's slices.
 *
 * @param partials one partial per slice, keyed by its slice start, strictly increasing
 */
final class SlicingCursor[P](kind: EnumeratedWindows, partials: Iterator[Reaching[P]], agg: PartialAggregation[P])
    extends WindowCursor[P] {

  private val input = Ticks.strictlyIncreasing(partials, "window")(_.time)
  private val sliceTimes = new LongQueue()
  private val slicePartials = new mutable.ArrayDeque[P]()
  private var dropped = 0L // slices let go from the front: absolute index of sliceTimes(0)
  // the FIFO holds copies of the slices with absolute indexes [held, heldUntil)
  private val fifo = new FifoAggregator[P](agg)
  private var held = 0L
  private var heldUntil = 0L
  private val pending = new java.util.TreeSet[Window](SlicingCursor.byEndThenStart)
  private var previousSlice = 0L
  private var anySlice = false
  private var next: Reaching[P] = read()

  private var current: Window = _

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
      addSlice(next)
      next = read()
    }
    false
  }

  private def addSlice(slice: Reaching[P]): Unit = {
    val t = slice.time
    // a window holding t that starts at or before the previous slice holds that slice too: it is
    // pending already, so only windows starting after it are new (one per slice for hopping windows)
    kind.foreachWindow(t) { (s, e) => if (!anySlice || s > previousSlice) pending.add(Window(s, e)) }
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
  }

  /** The aggregate of the kept slices in [start, end): the FIFO moved there, or rebuilt when that is cheaper. */
  private def combine(start: Long, end: Long): P = {
    val from = dropped + firstAtOrAfter(start)
    val until = dropped + firstAtOrAfter(end)
    // going back, or past everything held: start over from the kept slices
    if (from < held || until < heldUntil || from >= heldUntil) {
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
  val byEndThenStart: java.util.Comparator[Window] = (a: Window, b: Window) => {
    val byEnd = java.lang.Long.compare(a.end, b.end)
    if (byEnd != 0) byEnd else java.lang.Long.compare(a.start, b.start)
  }
}
