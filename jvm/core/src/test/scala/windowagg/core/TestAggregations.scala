package windowagg.core

import scala.collection.mutable.ArrayBuffer

/** Partial aggregations for tests of the core, each with a different buffer discipline. */
object TestAggregations {

  /**
   * collect_list with mutable buffers merged in place: not commutative, so any merge out of order
   * shows. `reset` clears the buffer in place, so a buffer reset while still in use shows too, and
   * merging a buffer into itself (two owners of one buffer) is refused.
   */
  final class Collect[V] extends PartialAggregation[ArrayBuffer[V]] {
    def newEmpty(): ArrayBuffer[V] = ArrayBuffer.empty[V]
    def mergeInto(earlier: ArrayBuffer[V], later: ArrayBuffer[V]): ArrayBuffer[V] = {
      if (earlier eq later) throw new AssertionError("mergeInto got one buffer as both operands")
      earlier ++= later
      earlier
    }
    override def reset(buffer: ArrayBuffer[V]): ArrayBuffer[V] = { buffer.clear(); buffer }
  }

  /** collect_list on immutable vectors: every merge returns a replacement of `earlier`. */
  final class CollectImmutable[V] extends PartialAggregation[Vector[V]] {
    def newEmpty(): Vector[V] = Vector.empty
    def mergeInto(earlier: Vector[V], later: Vector[V]): Vector[V] = earlier ++ later
  }

  final class LongCell(var value: Long) {
    override def toString: String = s"LongCell($value)"
  }

  /** sum into a mutable cell, reset in place. */
  object Sum extends PartialAggregation[LongCell] {
    def newEmpty(): LongCell = new LongCell(0L)
    def mergeInto(earlier: LongCell, later: LongCell): LongCell = {
      if (earlier eq later) throw new AssertionError("mergeInto got one cell as both operands")
      earlier.value += later.value
      earlier
    }
    override def reset(buffer: LongCell): LongCell = { buffer.value = 0L; buffer }
  }

  /** Counts the calls made to `underlying`. */
  final class Counting[P](underlying: PartialAggregation[P]) extends PartialAggregation[P] {
    var merges = 0L
    var resets = 0L
    var empties = 0L
    def newEmpty(): P = { empties += 1; underlying.newEmpty() }
    def mergeInto(earlier: P, later: P): P = { merges += 1; underlying.mergeInto(earlier, later) }
    override def reset(buffer: P): P = { resets += 1; underlying.reset(buffer) }
  }
}
