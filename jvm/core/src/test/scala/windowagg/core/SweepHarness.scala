package windowagg.core

/** Drives a [[SlidingWindowSweep]] the way an operator does. */
object SweepHarness {

  /**
   * One key's records (time, value) as the sweep's input: one partial per distinct time, times
   * increasing, the records of one time merged in input order.
   */
  def partials[V, P](records: Seq[(Long, V)], agg: PartialAggregation[P])(one: V => P): Vector[Timed[P]] = {
    val sorted = records.sortBy(_._1).toVector // stable: ties keep input order
    val out = Vector.newBuilder[Timed[P]]
    var i = 0
    while (i < sorted.length) {
      val t = sorted(i)._1
      var buffer = agg.newEmpty()
      while (i < sorted.length && sorted(i)._1 == t) {
        buffer = agg.mergeInto(buffer, one(sorted(i)._2))
        i += 1
      }
      out += Timed(t, buffer)
    }
    out.result()
  }

  /** A window the sweep produced, its aggregate copied out (the sweep's buffer is only lent). */
  final case class Out[R](start: Long, end: Long, result: R)

  /** All windows of the sweep, each aggregate turned into an immutable value by `snapshot`. */
  def drain[P, R](size: Long, input: Iterator[Timed[P]], agg: PartialAggregation[P])(
      snapshot: P => R): Vector[Out[R]] = {
    val out = Vector.newBuilder[Out[R]]
    drainInto(size, input, agg)(snapshot)(out += _)
    out.result()
  }

  /** As [[drain]], handing each window to `emit` as soon as it is produced. */
  def drainInto[P, R](size: Long, input: Iterator[Timed[P]], agg: PartialAggregation[P])(snapshot: P => R)(
      emit: Out[R] => Unit): Unit = {
    val sweep = new SlidingWindowSweep[P](size, input, agg)
    while (sweep.advance()) emit(Out(sweep.start, sweep.end, snapshot(sweep.aggregate)))
  }
}
