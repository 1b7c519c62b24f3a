package windowagg.core

/**
 * KIP-94 session windows enumerated straight from the contract (SEMANTICS.md, "Session windows"),
 * with no cleverness, as the oracle for the session sweep and the streaming session rules.
 *
 * A session is `[first record time, last record time]`. Two records are linked when the later one
 * lies within the earlier one's gap: `t_i <= t_j <= t_i + g_i` (for a fixed gap G that is just
 * `|t_i - t_j| <= G`, inclusive); a session is a connected component of that relation (union-find
 * over all pairs). Arithmetic is on unbounded integers, so huge gaps and times at the ends of the
 * 64-bit range cannot overflow here. Quadratic, for small inputs only.
 */
object BruteForceSessions {

  /** One session: its bounds (both inclusive) and its records in time order, ties in input order. */
  final case class Session[V](first: Long, last: Long, records: Vector[(Long, V)]) {
    def times: Vector[Long] = records.map(_._1)
    def values: Vector[V] = records.map(_._2)
  }

  /** All sessions of one key's `records` (time, value) with a fixed `gap`, in time order. */
  def sessions[V](records: Seq[(Long, V)], gap: Long): Vector[Session[V]] = {
    require(gap > 0, s"gap must be positive, got $gap")
    sessionsWithGaps(records.map { case (t, v) => (t, gap, v) })
  }

  /**
   * All sessions of one key's `records` (time, gap of that record, value), in time order: a record
   * at t with gap g keeps its session open until t + g.
   */
  def sessionsWithGaps[V](records: Seq[(Long, Long, V)]): Vector[Session[V]] = {
    records.foreach { case (_, g, _) => require(g > 0, s"gaps must be positive, got $g") }
    val rs = records.toVector
    val n = rs.length
    val parent = Array.tabulate(n)(identity)
    def find(i: Int): Int = if (parent(i) == i) i else { val root = find(parent(i)); parent(i) = root; root }
    def union(i: Int, j: Int): Unit = parent(find(i)) = find(j)
    for (i <- 0 until n; j <- 0 until n if i != j) {
      val (ti, gi, _) = rs(i)
      val tj = rs(j)._1
      if (BigInt(ti) <= BigInt(tj) && BigInt(tj) <= BigInt(ti) + BigInt(gi)) union(i, j)
    }
    val components = (0 until n).groupBy(find).values.toVector
    components.map { members =>
      val inTimeOrder = members.sorted.map(i => (rs(i)._1, rs(i)._3)).sortBy(_._1).toVector // stable
      Session(inTimeOrder.head._1, inTimeOrder.last._1, inTimeOrder)
    }.sortBy(_.first)
  }
}
