package windowagg.core

import scala.collection.mutable.ArrayBuffer

/**
 * First-in first-out sliding aggregation over partial aggregates ("two stacks"): push at the back,
 * pop at the front, and read the aggregate of everything held, each in amortized O(1) merges
 * however many partials are held.
 *
 * The back stack keeps the pushed partials and an aggregate of them. When the front runs out, the
 * back is flipped into the front, oldest on top, and the front's suffix aggregates are built in the
 * pushed buffers themselves (they are owned by this structure and never needed individually again),
 * so a flip allocates nothing. A partial is merged at most once into the back's aggregate and at
 * most once into a suffix, and reading the aggregate costs at most a copy and one more merge.
 *
 * Both merges are put off until the aggregate is read: a partial pushed and popped again before
 * any read (a cursor passing over windows nobody asks for) costs no merge at all.
 */
final class FifoAggregator[P](agg: PartialAggregation[P]) {
  private val back = ArrayBuffer.empty[P] // oldest first
  private var backAggregate: P = agg.newEmpty()
  private var backFolded = 0 // back(0 until backFolded) are in backAggregate
  private val front = ArrayBuffer.empty[P] // newest first; once built, front(i) holds front(i) ⊕ ... ⊕ front(0)
  private var frontBuilt = true // whether the front holds suffix aggregates or the flipped partials
  private var scratch: P = agg.newEmpty()
  // what `aggregate` gave while nothing was pushed or popped since: consecutive windows over the same
  // slices (a hopping window advancing less than the time between rows) read it again for free
  private var read: P = _
  private var readValid = false

  def size: Int = front.length + back.length
  def isEmpty: Boolean = size == 0

  /** Appends the partial of records later than all held ones; the buffer now belongs to this. */
  def push(partial: P): Unit = {
    back += partial
    readValid = false
  }

  /** Drops every partial. */
  def clear(): Unit = {
    readValid = false
    front.clear()
    frontBuilt = true
    back.clear()
    backFolded = 0
    backAggregate = agg.reset(backAggregate)
  }

  /** Drops the oldest partial. */
  def pop(): Unit = {
    readValid = false
    if (front.isEmpty) {
      if (back.isEmpty) throw new NoSuchElementException("pop from an empty FifoAggregator")
      flip()
    }
    front.remove(front.length - 1)
  }

  /**
   * The aggregate of all held partials, in push order. The buffer stays owned by this structure
   * and is valid until the next push or pop; callers read it and do not change it.
   */
  def aggregate: P = if (readValid) read else {
    buildFront()
    while (backFolded < back.length) {
      backAggregate = agg.mergeInto(backAggregate, back(backFolded))
      backFolded += 1
    }
    val result =
      if (front.isEmpty) backAggregate
      else if (back.isEmpty) front.last
      else {
        scratch = agg.copyInto(scratch, front.last)
        scratch = agg.mergeInto(scratch, backAggregate)
        scratch
      }
    read = result
    readValid = true
    result
  }

  /** back = v1 (oldest) .. vk becomes front = [vk, ..., v1], suffix aggregates built on the next read. */
  private def flip(): Unit = {
    var i = back.length - 1
    while (i >= 0) { front += back(i); i -= 1 }
    frontBuilt = false
    back.clear()
    backFolded = 0
    backAggregate = agg.reset(backAggregate)
  }

  /** The front's partials [vk, ..., vj] become [vk, v(k-1) ⊕ vk, ..., vj ⊕ ... ⊕ vk]. */
  private def buildFront(): Unit = if (!frontBuilt) {
    var i = 1
    while (i < front.length) {
      front(i) = agg.mergeInto(front(i), front(i - 1))
      i += 1
    }
    frontBuilt = true
  }
}
