package windowagg.core

/**
 * A first-in first-out queue of times, unboxed: the sweeps append and drop a time per partial they
 * read, which a queue of boxed `Long`s pays for with an allocation each.
 */
final class LongQueue {
  private var items = new Array[Long](16) // a ring; capacity stays a power of two
  private var first = 0
  private var count = 0

  def length: Int = count
  def isEmpty: Boolean = count == 0
  def nonEmpty: Boolean = count != 0

  /** The i-th oldest time. */
  def apply(i: Int): Long = {
    if (i < 0 || i >= count) throw new IndexOutOfBoundsException(s"$i of $count")
    items((first + i) & (items.length - 1))
  }

  def head: Long = apply(0)
  def last: Long = apply(count - 1)

  def +=(time: Long): this.type = {
    if (count == items.length) grow()
    items((first + count) & (items.length - 1)) = time
    count += 1
    this
  }

  def removeHead(): Long = {
    val time = head
    first = (first + 1) & (items.length - 1)
    count -= 1
    time
  }

  def clear(): Unit = { first = 0; count = 0 }

  private def grow(): Unit = {
    val larger = new Array[Long](items.length * 2)
    var i = 0
    while (i < count) { larger(i) = items((first + i) & (items.length - 1)); i += 1 }
    items = larger
    first = 0
  }
}
