package windowagg.core

/**
 * KIP-450 sliding windows enumerated straight from the contract (SEMANTICS.md, "Sliding windows"),
 * with no cleverness, as the oracle for the sweep and for any other suite that needs expected
 * sliding windows.
 *
 * Per key, windows are closed intervals `[start, start + size]`. Every distinct record time t gives
 * a candidate left window starting at `t - size` and a candidate right window starting at `t + 1`
 * (ε = 1 tick); a candidate is a window iff at least one record lies in it; each distinct start is
 * one window. Quadratic, for small inputs only.
 *
 * Bounds are computed on unbounded integers, so the oracle itself can never overflow:
 * [[exactWindows]] gives them as `BigInt`, [[windows]] as `Long` and fails loudly when a window
 * bound is not a 64-bit value.
 */
object BruteForceSliding {

  /** One window: its bounds (both inclusive) and its records in time order, ties in input order. */
  final case class Window[V](start: Long, end: Long, records: Vector[(Long, V)]) {
    def times: Vector[Long] = records.map(_._1)
    def values: Vector[V] = records.map(_._2)
  }

  /** A window whose bounds need not fit in a Long. */
  final case class ExactWindow[V](start: BigInt, end: BigInt, records: Vector[(Long, V)]) {
    def fitsInLong: Boolean =
      start >= BigInt(Long.MinValue) && end <= BigInt(Long.MaxValue)
  }

  /** All windows of one key's `records` (time, value), in increasing start order. */
  def exactWindows[V](records: Seq[(Long, V)], size: Long): Vector[ExactWindow[V]] = {
    require(size > 0, s"size must be positive, got $size")
    val inTimeOrder = records.sortBy(_._1).toVector // sortBy is stable: ties keep input order
    val s = BigInt(size)
    val candidateStarts = records.flatMap { case (t, _) => Seq(BigInt(t) - s, BigInt(t) + 1) }.distinct.sorted
    candidateStarts.toVector.flatMap { start =>
      val end = start + s
      val inside = inTimeOrder.filter { case (t, _) => start <= BigInt(t) && BigInt(t) <= end }
      if (inside.isEmpty) None else Some(ExactWindow(start, end, inside))
    }
  }

  /** True when every window of `records` has bounds that are 64-bit values. */
  def fitsInLong[V](records: Seq[(Long, V)], size: Long): Boolean =
    exactWindows(records, size).forall(_.fitsInLong)

  /**
   * All windows of one key's `records` (time, value), in increasing start order.
   * @throws ArithmeticException if some window's start or end is not a 64-bit value
   */
  def windows[V](records: Seq[(Long, V)], size: Long): Vector[Window[V]] =
    exactWindows(records, size).map { w =>
      if (!w.fitsInLong) throw new ArithmeticException(s"window [${w.start}, ${w.end}] is out of the Long range")
      Window(w.start.toLong, w.end.toLong, w.records)
    }
}
