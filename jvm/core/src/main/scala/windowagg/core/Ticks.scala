package windowagg.core

/** Arithmetic on times in ticks that saturates at the ends of the 64-bit range instead of wrapping. */
object Ticks {
  def saturatingAdd(a: Long, b: Long): Long = {
    val r = a + b
    if (((a ^ r) & (b ^ r)) < 0) { if (a < 0) Long.MinValue else Long.MaxValue } else r
  }

  /**
   * The latest `offset + k × step` (k whole) at or before `time`. Computed without `time − offset`,
   * which wraps near the ends of the range; a boundary before the range is an error, not a wrap.
   */
  def alignedDown(time: Long, offset: Long, step: Long): Long =
    earlier(time, Math.floorMod(Math.floorMod(time, step) - Math.floorMod(offset, step), step), time)

  /** `start − step`, the start of an earlier window holding `time`; an error when it is before the range. */
  def earlier(start: Long, step: Long, time: Long): Long =
    try Math.subtractExact(start, step)
    catch { case _: ArithmeticException => throw WindowError(s"a window holding time $time starts before the range of a 64-bit time") }

  /**
   * `input` checked to be in strictly increasing time order, which every sweep relies on; a
   * violation is a bug upstream (the operator sorts), reported with both times.
   */
  def strictlyIncreasing[T](input: Iterator[T], what: String)(timeOf: T => Long): Iterator[T] = new Iterator[T] {
    private var last = Long.MinValue
    private var any = false
    override def hasNext: Boolean = input.hasNext
    override def next(): T = {
      val item = input.next()
      val t = timeOf(item)
      if (any && t <= last) {
        throw new IllegalStateException(s"$what input must be in strictly increasing time order: $t after $last")
      }
      any = true
      last = t
      item
    }
  }
}
