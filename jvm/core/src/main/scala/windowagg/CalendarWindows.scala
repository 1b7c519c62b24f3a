package windowagg

import java.time.{DateTimeException, DayOfWeek, Duration, LocalDate, ZoneId}
import java.util.Locale

import windowagg.core.{EnumeratedWindows, TimeSpan, WindowError}

/**
 * Windows aligned to the local calendar of a time zone: `n` days, weeks, months, quarters or years,
 * each `[start, end)` from local midnight to local midnight, so a day lasts 23 or 25 hours across a
 * daylight-saving change and a month has its real length. Tumbling by default; `advanceBy(k)` makes
 * them hop by whole units (a 3-month window every month). Windows of n units start at unit indexes
 * that are multiples of the advance, counted from 1970-01-01 (weeks: from the week holding it that
 * starts on `firstDay`), so `months(3)` are calendar quarters and `years(1)` calendar years.
 *
 * The zone is `inZone(...)`'s, else the session time zone of a TIMESTAMP column; TIMESTAMP_NTZ
 * values are local times and ignore it; an integral epoch column needs `inZone` for months,
 * quarters and years. A local midnight that falls in a daylight-saving gap or overlap is the instant
 * `java.time` gives (`LocalDate.atStartOfDay(zone)`).
 *
 * Swept by slicing: one partial per gcd(n, k) units, each window combining its slices.
 */
final class CalendarWindows private (
    val unit: CalendarWindows.CalendarUnit,
    val size: Int,
    val advance: Option[Int],
    val zone: Option[ZoneId],
    val firstDay: DayOfWeek,
    val gracePeriod: Option[TimeSpan]) extends WindowDefinition {

  /** Hopping: a window starts every `units` units (at most the size). */
  def advanceBy(units: Int): CalendarWindows = {
    if (units <= 0) throw WindowError(s"calendar window advance must be a positive number of ${unit.plural}, got $units")
    if (units > size) throw WindowError(s"calendar window advance $units is larger than the size $size ${unit.plural}")
    copy(advance = Some(units))
  }

  /** Local calendar of `zoneId` ("Europe/Berlin", "+05:30", "UTC"). */
  def inZone(zoneId: String): CalendarWindows = copy(zone = Some(CalendarWindows.zoneOf(zoneId)))

  /** How long after a window's end records may still arrive (streaming); see [[SlidingWindows.grace(afterWindowEnd:String)* SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): CalendarWindows = copy(gracePeriod = Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): CalendarWindows = copy(gracePeriod = Some(WindowSpec.grace(afterWindowEnd)))

  private def copy(advance: Option[Int] = advance, zone: Option[ZoneId] = zone,
      gracePeriod: Option[TimeSpan] = gracePeriod): CalendarWindows =
    new CalendarWindows(unit, size, advance, zone, firstDay, gracePeriod)

  override def resolve(timeline: Timeline): CalendarWindows.Resolved = {
    val readIn =
      if (timeline.isTimestamp && !timeline.hasZone) timeline // TIMESTAMP_NTZ: local times already
      else zone match {
        case Some(z) => timeline.inZone(z)
        case None if !timeline.isTimestamp && unit.months > 0 =>
          throw WindowError(s"$this on an integral epoch column needs a time zone for its ${unit.plural}: add inZone(UTC) or another zone")
        case None => timeline
      }
    CalendarWindows.Resolved(unit, size, advance.getOrElse(size), firstDay, readIn, gracePeriod.map(timeline.ticks(_, "grace period")))
  }

  override def spec: String =
    s"calendar $size ${if (size == 1) unit.singular else unit.plural}" +
      advance.map(k => s" every $k").getOrElse("") +
      (if (unit == CalendarWindows.Weeks && firstDay != DayOfWeek.MONDAY) s" from ${firstDay.name.toLowerCase(Locale.ROOT)}" else "") +
      zone.map(z => s" in '$z'").getOrElse("") + WindowSpec.graceSpec(gracePeriod)
  override def toString: String =
    s"CalendarWindows.${unit.plural}($size" +
      (if (unit == CalendarWindows.Weeks && firstDay != DayOfWeek.MONDAY) s", $firstDay" else "") + ")" +
      advance.map(k => s".advanceBy($k)").getOrElse("") + zone.map(z => s".inZone($z)").getOrElse("") +
      gracePeriod.map(g => s".grace($g)").getOrElse("")
  override def equals(other: Any): Boolean = other match {
    case o: CalendarWindows =>
      o.unit == unit && o.size == size && o.advance == advance && o.zone == zone && o.firstDay == firstDay &&
        o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (unit, size, advance, zone, firstDay, gracePeriod).hashCode
}

object CalendarWindows extends WindowSpec.Reader {
  /** A calendar unit: whole days (`days` of them) or whole months (`months` of them). */
  sealed abstract class CalendarUnit(val singular: String, val days: Int, val months: Int) extends Serializable {
    def plural: String = singular + "s"
  }
  case object Days extends CalendarUnit("day", 1, 0)
  case object Weeks extends CalendarUnit("week", 7, 0)
  case object Months extends CalendarUnit("month", 0, 1)
  case object Quarters extends CalendarUnit("quarter", 0, 3)
  case object Years extends CalendarUnit("year", 0, 12)
  private val units = Seq(Days, Weeks, Months, Quarters, Years)

  def days(n: Int): CalendarWindows = of(Days, n, DayOfWeek.MONDAY)
  def weeks(n: Int): CalendarWindows = of(Weeks, n, DayOfWeek.MONDAY)
  /** Weeks starting on `firstDay` ("SUNDAY", "monday", …). */
  def weeks(n: Int, firstDay: String): CalendarWindows = of(Weeks, n, dayOf(firstDay))
  def months(n: Int): CalendarWindows = of(Months, n, DayOfWeek.MONDAY)
  def quarters(n: Int): CalendarWindows = of(Quarters, n, DayOfWeek.MONDAY)
  def years(n: Int): CalendarWindows = of(Years, n, DayOfWeek.MONDAY)

  private def of(unit: CalendarUnit, n: Int, firstDay: DayOfWeek): CalendarWindows = {
    if (n <= 0) throw WindowError(s"a calendar window must be a positive number of ${unit.plural}, got $n")
    if (n > 100000) throw WindowError(s"a calendar window of $n ${unit.plural} is too long")
    new CalendarWindows(unit, n, None, None, firstDay, None)
  }

  private def dayOf(name: String): DayOfWeek =
    try DayOfWeek.valueOf(Option(name).map(_.trim.toUpperCase(Locale.ROOT)).getOrElse(""))
    catch { case _: IllegalArgumentException => throw WindowError(s"unknown first day of the week '$name'; write e.g. MONDAY or SUNDAY") }

  private def zoneOf(id: String): ZoneId =
    try ZoneId.of(Option(id).map(_.trim).getOrElse(""))
    catch { case _: DateTimeException => throw WindowError(s"unknown time zone '$id'; write a region like 'Europe/Berlin' or an offset like '+05:30'") }

  override val keywords: Seq[String] = Seq("calendar")
  override val clauseWords: Seq[String] = Seq("from", "in")
  override val usage: String =
    "calendar <n> day[s]|week[s]|month[s]|quarter[s]|year[s] [every <k>] [from <weekday>] [in '<zone>'] [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("every", "from", "in", "grace"))
    val (n, unitName) = spec.lead.split("\\s+") match {
      case Array(count, name) if count.matches("\\d+") => (wholeCount(count, spec.text), name.toLowerCase(Locale.ROOT))
      case _ => throw WindowError(s"'${spec.text}': write the size as a count and a unit: $usage")
    }
    val unit = units.find(u => u.singular == unitName || u.plural == unitName).getOrElse(
      throw WindowError(s"'${spec.text}': unknown calendar unit '$unitName'; use days, weeks, months, quarters or years"))
    var windows = of(unit, n, spec.clause("from").map(dayOf).getOrElse(DayOfWeek.MONDAY))
    spec.clause("every").foreach { k =>
      if (!k.matches("\\d+")) throw WindowError(s"'${spec.text}': the advance must be a whole number of ${unit.plural}")
      windows = windows.advanceBy(wholeCount(k, spec.text))
    }
    spec.clause("in").foreach(z => windows = windows.inZone(z.stripPrefix("'").stripSuffix("'")))
    spec.grace.fold(windows)(g => windows.grace(g.spec))
  }

  private def wholeCount(digits: String, text: String): Int =
    digits.toIntOption.getOrElse(throw WindowError(s"'$text': $digits units is too many"))

  /** A slice of times: its instants [from, until), the last tick of its windows, and its first unit. */
  private final case class Slice(from: Long, until: Long, closes: Long, firstUnit: Long)
  private val MaxKnownBoundaries = 1 << 16

  /**
   * Slices by the buckets of `width` ticks they overlap: for bucket b, `table(2b)` holds the slice
   * holding its first tick and `table(2b + 1)` one starting inside it (one array, read once, so a
   * reader racing a writer that grows it sees one table or the other). Covers at most
   * [[SliceBuckets.MaxBuckets]] buckets around the first slice added; slices beyond are recomputed.
   */
  private final class SliceBuckets(width: Long) {
    @volatile private var table: Array[Slice] = Array.empty
    @volatile private var base = 0L

    def find(time: Long): Slice = {
      val t = table
      val b = Math.floorDiv(time, width) - base
      if (b < 0 || 2 * b + 1 >= t.length) null
      else {
        val s = t((2 * b).toInt)
        if (s != null && s.from <= time && time < s.until) s
        else {
          val l = t((2 * b + 1).toInt)
          if (l != null && l.from <= time && time < l.until) l else null
        }
      }
    }

    def add(slice: Slice): Unit = {
      val (from, until) = (Math.floorDiv(slice.from, width), Math.floorDiv(slice.until - 1, width))
      val t = covering(from, until)
      if (t == null) return
      var b = from
      while (b <= until) {
        t((2 * (b - base)).toInt + (if (slice.from <= b * width) 0 else 1)) = slice
        b += 1
      }
    }

    /** The table grown to hold buckets [from, until], or null when that would pass MaxBuckets. */
    private def covering(from: Long, until: Long): Array[Slice] = {
      val t = table
      val (low, high) = if (t.isEmpty) (from, until) else (math.min(base, from), math.max(base + t.length / 2 - 1, until))
      if (high - low + 1 > SliceBuckets.MaxBuckets) null
      else if (t.nonEmpty && low == base && high == base + t.length / 2 - 1) t
      else {
        val grown = new Array[Slice](2 * (high - low + 1).toInt)
        if (t.nonEmpty) System.arraycopy(t, 0, grown, 2 * (base - low).toInt, t.length)
        base = low
        table = grown
        grown
      }
    }
  }

  private object SliceBuckets {
    val MaxBuckets: Long = 1L << 18
  }

  /** Windows of `size` units starting every `advance` units, in `timeline`'s zone; slices of gcd(size, advance) units. */
  final case class Resolved(unit: CalendarUnit, size: Int, advance: Int, firstDay: DayOfWeek, timeline: Timeline, graceTicks: Option[Long])
      extends EnumeratedWindows {
    private val sliceUnits = gcd(size, advance)
    // the first day of week 0: the week holding 1970-01-01 that starts on firstDay
    private val firstWeekDay = LocalDate.ofEpochDay(0).`with`(java.time.temporal.TemporalAdjusters.previousOrSame(firstDay)).toEpochDay

    /** Longest window, with two days to spare for zones that moved their offset (a day skipped or repeated). */
    override val maxSpan: Long =
      timeline.unit.convert(Duration.ofDays(size.toLong * math.max(unit.days, unit.months * 31) + 2))

    // The slices met so far, by the 6-hour buckets of time they overlap (at most two slices share a
    // bucket: none is shorter than 23 hours): a row finds its slice by two array reads, in any order,
    // instead of the zone's rules. Lost entries only cost a recomputation, so threads sharing the kind
    // may race on it; a slice's fields are final, so a slice is seen whole.
    @transient private var buckets: CalendarWindows.SliceBuckets = _

    private def sliceOf(time: Long): CalendarWindows.Slice = {
      if (buckets == null) buckets = new CalendarWindows.SliceBuckets(timeline.unit.convert(Duration.ofHours(6)))
      val known = buckets.find(time)
      if (known != null) known
      else {
        val first = alignedDown(unitIndex(time), sliceUnits)
        // all times of a slice share their windows, so the latest of them ends the same for all
        val slice = CalendarWindows.Slice(boundary(first), boundary(first + sliceUnits),
          boundary(alignedDown(first, advance) + size) - 1, first)
        buckets.add(slice)
        slice
      }
    }

    override def sliceStart(time: Long): Long = sliceOf(time).from
    override def partialsSpanTimes: Boolean = true

    // Every time of a slice has the slice's windows: they start at multiples of advance and end at
    // multiples of gcd(size, advance), none of which falls inside the slice.
    override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit = {
      val u = sliceOf(time).firstUnit
      var start = alignedDown(u, advance)
      while (start + size > u) {
        window(boundary(start), boundary(start + size))
        start -= advance
      }
    }

    override def closesAt(time: Long): Long = sliceOf(time).closes

    /** The unit holding `time`: its local date's, moved so that boundary(u) ≤ time < boundary(u + 1) always holds. */
    private def unitIndex(time: Long): Long = {
      var u = unitOf(timeline.toLocal(time).toLocalDate)
      while (time < boundary(u)) u -= 1
      while (time >= boundary(u + 1)) u += 1
      u
    }

    private def unitOf(date: LocalDate): Long =
      if (unit.months > 0) Math.floorDiv((date.getYear - 1970L) * 12 + date.getMonthValue - 1, unit.months.toLong)
      else if (unit == Weeks) Math.floorDiv(date.toEpochDay - firstWeekDay, 7L)
      else date.toEpochDay

    // boundaries by unit, for the windows of each partial (a concurrent map: tasks may share the kind)
    @transient private var boundaries: java.util.concurrent.ConcurrentHashMap[java.lang.Long, java.lang.Long] = _

    /** The instant unit `u` starts: local midnight of its first day. */
    private def boundary(u: Long): Long = {
      if (boundaries == null || boundaries.size > CalendarWindows.MaxKnownBoundaries) boundaries = new java.util.concurrent.ConcurrentHashMap()
      boundaries.computeIfAbsent(u, _ => computeBoundary(u))
    }

    private def computeBoundary(u: Long): Long = {
      val date =
        if (unit.months > 0) LocalDate.of(1970, 1, 1).plusMonths(u * unit.months)
        else if (unit == Weeks) LocalDate.ofEpochDay(firstWeekDay + u * 7)
        else LocalDate.ofEpochDay(u)
      timeline.fromInstant(date.atStartOfDay(timeline.zone).toInstant)
    }

    private def alignedDown(u: Long, step: Int): Long = u - Math.floorMod(u, step.toLong)
    private def gcd(a: Int, b: Int): Int = if (b == 0) a else gcd(b, a % b)
  }
}
