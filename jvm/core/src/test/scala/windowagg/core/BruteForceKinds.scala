package windowagg.core

import windowagg.{EnumeratedWindows, ResolvedWindows, SessionWindows, SlidingWindows}

/**
 * Every window of one key with its records, straight from a resolved definition: sliding windows
 * and sessions from their own brute-force enumerators, enumerable kinds by listing each record's
 * windows one record at a time (no slices, no sweep). Windows are (start, end) as the kind reports
 * them; records keep their input order within a time.
 */
object BruteForceKinds {
  def windows[V](kind: ResolvedWindows, records: Seq[(Long, V)]): Map[(Long, Long), Vector[(Long, V)]] = kind match {
    case s: SlidingWindows.Resolved =>
      BruteForceSliding.windows(records, s.sizeTicks).map(w => (w.start, w.end) -> w.records).toMap
    case s: SessionWindows.Resolved =>
      BruteForceSessions.sessions(records, s.gapTicks.get).map(w => (w.first, w.last) -> w.records).toMap
    case e: EnumeratedWindows =>
      val sorted = records.sortBy(_._1)
      val out = scala.collection.mutable.LinkedHashMap.empty[(Long, Long), Vector[(Long, V)]]
      sorted.foreach { r =>
        e.foreachWindow(r._1)((s, end) => out((s, end)) = out.getOrElse((s, end), Vector.empty) :+ r)
      }
      out.toMap
    case other => throw new IllegalArgumentException(s"no brute force for $other")
  }
}
