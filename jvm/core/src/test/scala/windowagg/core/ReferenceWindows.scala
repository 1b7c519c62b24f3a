package windowagg.core

import java.time.{DayOfWeek, Instant, LocalDate, ZoneId}
import java.time.temporal.{ChronoUnit, TemporalAdjusters, TemporalUnit}

/**
 * Each kind's windows written from the contract (docs/semantics.md), for one key's records: the
 * references the operators are checked against. Parameters are plain ticks, counts, dates and zones,
 * as a test states them next to the definition it checks, and nothing here calls into windowagg's
 * main code, so a mistake there is never shared by its reference. Records are (time, value); each
 * window's records come in time order, ties in input order.
 */
sealed trait ReferenceWindows {
  /**
   * Every window holding records, as (start, end) the way the kind reports it, with its records. A kind
   * cut at rows may evaluate one window more than once (several triggers at one time): a sequence.
   */
  def windows[V](records: Seq[(Long, V)]): Seq[((Long, Long), Vector[(Long, V)])]

  /** Whether a record at `time` is in some window when it is alone (kinds that leave times out say no). */
  def holds(time: Long): Boolean

  /**
   * Times on and beside the bounds of the windows a record at `time` is in or makes: records drawn
   * there show a bound that is off by one tick.
   */
  def edges(time: Long): Seq[Long]
}

object ReferenceWindows {

  /** KIP-450 sliding windows of `size` ticks (from the contract's own brute force). */
  final case class Sliding(size: Long) extends ReferenceWindows {
    override def windows[V](records: Seq[(Long, V)]): Seq[((Long, Long), Vector[(Long, V)])] =
      BruteForceSliding.windows(records, size).map(w => (w.start, w.end) -> w.records)
    override def holds(time: Long): Boolean = true
    override def edges(time: Long): Seq[Long] = Seq(time - size - 1, time - size, time + size, time + size + 1)
  }

  /** KIP-94 sessions with an inactivity gap of `gap` ticks, as [first, last]. */
  final case class Sessions(gap: Long) extends ReferenceWindows {
    override def windows[V](records: Seq[(Long, V)]): Seq[((Long, Long), Vector[(Long, V)])] =
      BruteForceSessions.sessions(records, gap).map(s => (s.first, s.last) -> s.records)
    override def holds(time: Long): Boolean = true
    override def edges(time: Long): Seq[Long] = Seq(time - gap - 1, time - gap, time + gap, time + gap + 1)
  }

  /**
   * Kinds whose windows of a time depend on that time alone (KIP-645's enumerable windows): a window
   * holds exactly the records whose times it holds, and exists when it holds some.
   */
  abstract class ByTime extends ReferenceWindows {
    /** The windows `[start, end)` holding `time`, each once. */
    def windowsOf(time: Long): Seq[(Long, Long)]

    final override def holds(time: Long): Boolean = windowsOf(time).nonEmpty

    final override def edges(time: Long): Seq[Long] = windowsOf(time).flatMap { case (s, e) => Seq(s - 1, s, e - 1, e) }

    final override def windows[V](records: Seq[(Long, V)]): Seq[((Long, Long), Vector[(Long, V)])] =
      records.sortBy(_._1).flatMap(r => windowsOf(r._1).map(_ -> r)).groupMap(_._1)(_._2).toSeq
        .map { case (window, held) => window -> held.toVector }
  }

  /** Windows whose exact bounds may lie beyond the 64-bit range, where the product must refuse the time. */
  abstract class Aligned extends ByTime {
    /** The windows holding `time`, in unbounded integers. */
    def exactWindowsOf(time: Long): Seq[(BigInt, BigInt)]

    final override def windowsOf(time: Long): Seq[(Long, Long)] = exactWindowsOf(time).map { case (s, e) =>
      if (!s.isValidLong || !e.isValidLong) throw new ArithmeticException(s"the window [$s, $e) of $time is beyond the 64-bit range")
      (s.toLong, e.toLong)
    }
  }

  /**
   * Tumbling (`advance` = `size`) and hopping windows: `[start, start + size)` for every start that is
   * `offset` plus a whole (possibly negative) number of advances.
   */
  final case class Hopping(size: Long, advance: Long, offset: Long) extends Aligned {
    override def exactWindowsOf(time: Long): Seq[(BigInt, BigInt)] = {
      val t = BigInt(time)
      val latestStart = t - (t - offset).mod(advance) // the last start at or before t
      Iterator.iterate(latestStart)(_ - advance).takeWhile(_ + size > t).map(s => (s, s + size)).toSeq
    }
  }

  /**
   * Flink's CUMULATE: periods `[p, p + max)` with p = `offset` plus a whole number of `max`; in its
   * period, a time is in the windows `[p, p + k·step)` that end after it.
   */
  final case class Cumulative(step: Long, max: Long, offset: Long) extends Aligned {
    override def exactWindowsOf(time: Long): Seq[(BigInt, BigInt)] = {
      val t = BigInt(time)
      val period = t - (t - offset).mod(max)
      (BigInt(1) to BigInt(max) / step).map(k => (period, period + k * step)).filter(_._2 > t)
    }
  }

  /** Kafka's UnlimitedWindows: the one window `[start, end)`. */
  final case class Unlimited(start: Long, end: Long) extends ByTime {
    override def windowsOf(time: Long): Seq[(Long, Long)] = if (start <= time && time < end) Seq((start, end)) else Nil
  }

  /** Windows listed as rows (a table's): `[start, end)` holds the times `start ≤ t < end`; identical rows are one window. */
  final case class Listed(rows: Seq[(Long, Long)]) extends ByTime {
    private val distinct = rows.distinct
    override def windowsOf(time: Long): Seq[(Long, Long)] = distinct.filter { case (s, e) => s <= time && time < e }
  }

  /**
   * Calendar windows of `count` units starting every `every` units, on microsecond ticks, from local
   * midnight to local midnight in `zone` (`LocalDate.atStartOfDay`, so a day a zone skipped has no
   * window). Units are numbered from the one holding 1970-01-01 (for weeks, the week starting on
   * `firstDay` that holds it); windows start at unit numbers that are multiples of `every`.
   * `unit` is days, weeks, months, quarters (`IsoFields.QUARTER_YEARS`) or years.
   */
  final case class Calendar(unit: TemporalUnit, count: Int, every: Int, zone: ZoneId, firstDay: DayOfWeek = DayOfWeek.MONDAY)
      extends ByTime {
    private val epochDay = LocalDate.of(1970, 1, 1)
    private val firstUnit = if (unit == ChronoUnit.WEEKS) epochDay.`with`(TemporalAdjusters.previousOrSame(firstDay)) else epochDay
    private def unitStart(number: Long): LocalDate = firstUnit.plus(number, unit)

    override def windowsOf(time: Long): Seq[(Long, Long)] = {
      val date = localDate(time, zone)
      // `between` counts whole units towards zero: one unit too many for dates before the first unit
      val counted = unit.between(firstUnit, date)
      val number = if (unitStart(counted).isAfter(date)) counted - 1 else counted
      (number - count + 1 to number).filter(Math.floorMod(_, every.toLong) == 0).map { first =>
        (startOfDay(unitStart(first), zone), startOfDay(unitStart(first + count), zone))
      }.filter { case (start, end) => start < end }
    }
  }

  /** Quarters of a fiscal year starting in `firstMonth` (1 to 12), from the first day of the quarter to the next's, in `zone`. */
  final case class FiscalQuarters(firstMonth: Int, zone: ZoneId) extends ByTime {
    override def windowsOf(time: Long): Seq[(Long, Long)] = {
      val date = localDate(time, zone)
      val month = date.getYear * 12L + date.getMonthValue - 1 // months since year 0
      val first = month - Math.floorMod(month - (firstMonth - 1), 3L)
      val start = LocalDate.of(Math.floorDiv(first, 12L).toInt, Math.floorMod(first, 12L).toInt + 1, 1)
      Seq((startOfDay(start, zone), startOfDay(start.plusMonths(3), zone)))
    }
  }

  /** Business days in `zone`: Monday to Friday, each to the next business day's midnight (Friday's holds the weekend). */
  final case class BusinessDays(zone: ZoneId) extends ByTime {
    override def windowsOf(time: Long): Seq[(Long, Long)] = {
      val date = localDate(time, zone)
      val start = date.minusDays(date.getDayOfWeek match {
        case DayOfWeek.SATURDAY => 1
        case DayOfWeek.SUNDAY => 2
        case _ => 0
      })
      val end = start.plusDays(if (start.getDayOfWeek == DayOfWeek.FRIDAY) 3 else 1)
      Seq((startOfDay(start, zone), startOfDay(end, zone)))
    }
  }

  /**
   * Apache Storm's windows (`withWindow(length, slide)`) over a key's rows in counting order (time,
   * ties in input order). A window's end is its last time, inclusive; a duration length's start is
   * `end − length`, exclusive; a count length's start is the time of its first row.
   */
  final case class Storm(length: Storm.Length, slide: Storm.Length) extends ReferenceWindows {
    import Storm.{Rows, Ticks}

    override def windows[V](records: Seq[(Long, V)]): Seq[((Long, Long), Vector[(Long, V)])] = {
      val rows = records.sortBy(_._1)
      rowWindows(rows.map(_._1)).map { case (window, in) => window -> in.map(rows) }
    }

    override def holds(time: Long): Boolean = true

    /** A row at the same time (a tie the count cuts through); at and beside a duration's bounds and a time slide's ends. */
    override def edges(time: Long): Seq[Long] = {
      val ofLength = length match {
        case Rows(_) => Seq(time)
        case Ticks(l) => Seq(time - l - 1, time - l, time - l + 1, time + l)
      }
      val ofSlide = slide match {
        case Rows(_) => Nil
        case Ticks(d) => Seq(ceiling(time, d), ceiling(time, d) + 1)
      }
      ofLength ++ ofSlide
    }

    /** The indexes of the records, sorted by time, that are in no window. */
    def inNoWindow[V](records: Seq[(Long, V)]): Set[Int] =
      records.indices.toSet -- rowWindows(records.map(_._1).sorted).flatMap(_._2)

    /** The windows of rows at `times` (in counting order), each with the indexes of the rows it holds. */
    def rowWindows(times: Seq[Long]): Seq[((Long, Long), Vector[Int])] = (length, slide) match {
      case (Rows(n), Rows(m)) => // after every m-th row, the last n rows
        times.indices.filter(p => (p + 1) % m == 0).map { p =>
          val in = (math.max(0L, p - n + 1).toInt to p).toVector
          (times(in.head), times(p)) -> in
        }
      case (Ticks(l), Rows(m)) => // after every m-th row at t, the rows in (t − l, t]
        times.indices.filter(p => (p + 1) % m == 0).map { p =>
          val t = times(p)
          (t - l, t) -> times.indices.filter(i => times(i) > t - l && times(i) <= t).toVector
        }
      case (Rows(n), Ticks(d)) => // at each multiple of d that brings new rows, the last n rows up to it
        times.map(t => ceiling(t, d)).distinct.sorted.map { e =>
          val in = times.indices.filter(i => times(i) <= e).takeRight(n.toInt).toVector
          (times(in.head), e) -> in
        }
      case (Ticks(l), Ticks(d)) => // each window (e − l, e], e a multiple of d, that holds rows
        times.flatMap(t => endsHolding(t, l, d)).distinct.sorted.map { e =>
          (e - l, e) -> times.indices.filter(i => times(i) > e - l && times(i) <= e).toVector
        }
    }

    /** Ends e, multiples of `slide`, with e − length < t ≤ e; in BigInt, so no wrap. */
    private def endsHolding(t: Long, length: Long, slide: Long): Seq[Long] =
      Iterator.iterate(BigInt(ceiling(t, slide)))(_ + slide).takeWhile(e => e - length < t).map(_.toLong).toSeq

    private def ceiling(t: Long, slide: Long): Long = {
      val (q, r) = BigInt(t) /% BigInt(slide)
      (if (r > 0) (q + 1) * slide else q * slide).toLong
    }
  }

  object Storm {
    /** A window length or slide: Storm's `Count` (rows) or `Duration` (ticks). */
    sealed trait Length
    final case class Rows(n: Long) extends Length
    final case class Ticks(ticks: Long) extends Length
  }

  /** The local date of a microsecond tick in `zone`. */
  def localDate(micros: Long, zone: ZoneId): LocalDate =
    Instant.ofEpochSecond(Math.floorDiv(micros, 1000000L), Math.floorMod(micros, 1000000L) * 1000L).atZone(zone).toLocalDate

  /** The microsecond tick of `date`'s first instant in `zone`. */
  def startOfDay(date: LocalDate, zone: ZoneId): Long = {
    val instant = date.atStartOfDay(zone).toInstant
    Math.addExact(Math.multiplyExact(instant.getEpochSecond, 1000000L), instant.getNano / 1000L)
  }
}
