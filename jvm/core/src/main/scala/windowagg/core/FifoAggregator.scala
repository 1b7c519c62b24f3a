package windowagg.core

import scala.collection.mutable.ArrayBuffer

/**
 * First-in first-out sliding aggregation over partial aggregates ("two stacks"): push at the back,
 * pop at the front, and read the aggregate of everything held, each in amortized O(1) merges
 * however many partials are held.
 *
 * The back stack keeps the pushed partials and a running aggregate of them. When the front runs
 * out, the back is flipped into the front as suffix aggregates, oldest on top, reusing the pushed
 * buffers themselves (they are owned by this structure and never needed individually again), so a
 * flip allocates nothing. A push costs one merge (into the running back aggregate), a pop at
 * most one merge per partial it moves to the front (each partial moves once), and reading the
 * aggregate at most two (front and back into a scratch buffer).
 */
final class FifoAggregator[P](agg: PartialAggregation[P]) {
  private val back = ArrayBuffer.empty[P] // oldest first
  private var backAggregate: P = agg.newEmpty()
  private val front = ArrayBuffer.empty[P] // suffix aggregates; the last one covers the whole front
  private var scratch: P = agg.newEmpty()

  def size: Int = front.length + back.length
  def isEmpty: Boolean = size == 0

  /** Appends the partial of records later than all held ones; the buffer now belongs to this. */
  def push(partial: P): Unit = {
    back += partial
    backAggregate = agg.mergeInto(backAggregate, partial)
  }

  /** Drops the oldest partial. */
  def pop(): Unit = {
    if (front.isEmpty) {
      if (back.isEmpty) throw new NoSuchElementException("pop from an empty FifoAggregator")
      flip()
    }
    front.remove(front.length - 1)
  }

  /**
   * The aggregate of all held partials, in push order. The buffer stays owned by this structure
   * and is valid until the next push, pop or query.
   */
  def aggregate: P = {
    if (front.isEmpty) backAggregate
    else if (back.isEmpty) front.last
    else {
      scratch = agg.reset(scratch)
      scratch = agg.mergeInto(scratch, front.last)
      scratch = agg.mergeInto(scratch, backAggregate)
      scratch
    }
  }

  private def flip(): Unit = {
    // back = v1 (oldest) .. vk; front becomes [vk, v(k-1)⊕vk, ..., v1⊕..⊕vk] with the oldest on top.
    var i = back.length - 1
    var suffix = back(i)
    front += suffix
    i -= 1
    while (i >= 0) {
      suffix = agg.mergeInto(back(i), suffix)
      front += suffix
      i -= 1
    }
    back.clear()
    backAggregate = agg.reset(backAggregate)
  }
}
