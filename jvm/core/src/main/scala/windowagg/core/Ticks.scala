package windowagg.core

/** Arithmetic on times in ticks that saturates at the ends of the 64-bit range instead of wrapping. */
object Ticks {
  def saturatingAdd(a: Long, b: Long): Long = {
    val r = a + b
    if (((a ^ r) & (b ^ r)) < 0) { if (a < 0) Long.MinValue else Long.MaxValue } else r
  }

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
