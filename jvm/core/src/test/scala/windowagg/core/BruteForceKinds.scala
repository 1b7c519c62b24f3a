package windowagg.core

import windowagg.{EnumeratedWindows, ResolvedWindows, SessionWindows, SlidingWindows, StormWindows, TableWindows}
import windowagg.core.RowWindowCursor.{EveryRows, EveryTicks, LastRows, LastTicks}

/**
 * Every window of one key with its records, straight from a resolved definition: sliding windows
 * and sessions from their own brute-force enumerators, table windows by checking every listed
 * window against every record, other enumerable kinds by listing each record's windows one record
 * at a time (no slices, no sweep). Windows are (start, end) as the kind reports them; records
 * keep their input order within a time, which for kinds cut at rows is the order they are counted
 * in. Kinds cut at rows may evaluate one window more than once (several triggers at one time), so
 * windows are a sequence.
 */
object BruteForceKinds {
  def windows[V](kind: ResolvedWindows, records: Seq[(Long, V)]): Seq[((Long, Long), Vector[(Long, V)])] = kind match {
    case s: SlidingWindows.Resolved =>
      BruteForceSliding.windows(records, s.sizeTicks).map(w => (w.start, w.end) -> w.records)
    case s: SessionWindows.Resolved =>
      BruteForceSessions.sessions(records, s.gapTicks.get).map(w => (w.first, w.last) -> w.records)
    case t: TableWindows.Resolved => // every listed window, checked against every record
      t.starts.indices.map(i => (t.starts(i), t.ends(i)))
        .map(w => w -> records.sortBy(_._1).filter(r => w._1 <= r._1 && r._1 < w._2).toVector)
        .filter(_._2.nonEmpty)
    case e: EnumeratedWindows =>
      val sorted = records.sortBy(_._1)
      val out = scala.collection.mutable.LinkedHashMap.empty[(Long, Long), Vector[(Long, V)]]
      sorted.foreach { r =>
        e.foreachWindow(r._1)((s, end) => out((s, end)) = out.getOrElse((s, end), Vector.empty) :+ r)
      }
      out.toSeq
    case r: StormWindows.CutAtRows => rowWindows(r, records.sortBy(_._1)).map { case (w, in) => w -> in.map(records.sortBy(_._1)) }
    case other => throw new IllegalArgumentException(s"no brute force for $other")
  }

  /** For a kind cut at rows, the indexes of the sorted records in no window. */
  def inNoWindow[V](kind: StormWindows.CutAtRows, records: Seq[(Long, V)]): Set[Int] = {
    val sorted = records.sortBy(_._1)
    sorted.indices.toSet -- rowWindows(kind, sorted).flatMap(_._2)
  }

  /** Windows of rows in their counting order, each with the indexes of the rows it holds, straight from Storm's rules. */
  def rowWindows[V](kind: StormWindows.CutAtRows, rows: Seq[(Long, V)]): Seq[((Long, Long), Vector[Int])] = {
    val times = rows.map(_._1)
    (kind.length, kind.trigger) match {
      case (LastRows(n), EveryRows(s)) =>
        times.indices.filter(p => (p + 1) % s == 0).map { p =>
          val in = (math.max(0L, p - n + 1).toInt to p).toVector
          (times(in.head), times(p)) -> in
        }
      case (LastTicks(l), EveryRows(s)) =>
        times.indices.filter(p => (p + 1) % s == 0).map { p =>
          val t = times(p)
          (t - l, t) -> times.indices.filter(i => times(i) > t - l && times(i) <= t).toVector
        }
      case (LastRows(n), EveryTicks(d)) =>
        times.map(t => ceiling(t, d)).distinct.sorted.map { e =>
          val in = times.indices.filter(i => times(i) <= e).takeRight(n.toInt).toVector
          (times(in.head), e) -> in
        }
      case (LastTicks(l), EveryTicks(d)) =>
        times.flatMap(t => endsHolding(t, l, d)).distinct.sorted.map { e =>
          (e - l, e) -> times.indices.filter(i => times(i) > e - l && times(i) <= e).toVector
        }
    }
  }

  /** Ends e, multiples of `slide`, with e − length < t ≤ e; in BigInt, so no wrap. */
  private def endsHolding(t: Long, length: Long, slide: Long): Seq[Long] = {
    val first = ceiling(t, slide)
    Iterator.iterate(BigInt(first))(_ + slide).takeWhile(e => e - length < t).map(_.toLong).toSeq
  }

  private def ceiling(t: Long, slide: Long): Long = {
    val (q, r) = (BigInt(t) /% BigInt(slide))
    (if (r > 0) (q + 1) * slide else q * slide).toLong
  }
}
