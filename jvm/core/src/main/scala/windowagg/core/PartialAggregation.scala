package windowagg.core

/**
 * The only thing the core knows about an aggregate: how to make, merge and reuse partial
 * aggregates ("buffers"). Merging is associative but not necessarily commutative; the core always
 * merges the partial of later records into the partial of earlier ones, so order-sensitive
 * aggregates (first, last, collect_list) see records in time order.
 *
 * Buffers are mutable and owned by whoever holds them; `mergeInto` may mutate and return its
 * target (or return a replacement), and must never mutate `later` nor return it: a buffer is
 * never shared by two owners.
 */
trait PartialAggregation[P] {
  /** A new buffer holding no records. */
  def newEmpty(): P

  /** `earlier ⊕ later`, written into `earlier` (or a replacement of it, which is returned). */
  def mergeInto(earlier: P, later: P): P

  /** `buffer` emptied for reuse, or a new empty buffer. The old value must no longer be needed. */
  def reset(buffer: P): P = newEmpty()

  /** `target` overwritten with `source`'s value (or a replacement of it, which is returned); `source` is untouched. */
  def copyInto(target: P, source: P): P = mergeInto(reset(target), source)
}
