package windowagg

import java.time.{DayOfWeek, Instant, LocalDate, ZoneId, ZonedDateTime}
import java.time.temporal.TemporalAdjusters
import java.util.concurrent.TimeUnit

import scala.collection.mutable.ArrayBuffer

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.{DeterministicPropertyChecks, WindowError}

/** Calendar windows against java.time's own calendar arithmetic, over two centuries and several zones. */
class CalendarWindowsSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {

  // half-hour offset, southern hemisphere, zones that moved their offset (Caracas 2007/2016, Apia skipped 2011-12-30)
  private val zones = Seq("Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney", "America/Caracas",
    "Pacific/Apia", "UTC").map(ZoneId.of)

  private def micros(i: Instant): Long = i.getEpochSecond * 1000000L + i.getNano / 1000
  private def at(date: LocalDate, zone: ZoneId): Long = micros(date.atStartOfDay(zone).toInstant)

  private def listed(definition: CalendarWindows, zone: ZoneId, t: Long): Set[(Long, Long)] = {
    val kind = definition.resolve(Timeline.timestamp(zone))
    val out = ArrayBuffer.empty[(Long, Long)]
    kind.foreachWindow(t)((s, e) => out += ((s, e)))
    out.toSet
  }

  /** The windows java.time gives for `t`: the units holding its local date, by TemporalAdjusters. */
  private def reference(definition: CalendarWindows, zone: ZoneId, t: Long): Set[(Long, Long)] = {
    val date = ZonedDateTime.ofInstant(Instant.EPOCH.plusNanos(Math.multiplyExact(t, 1000L)), zone).toLocalDate
    val n = definition.size
    val k = definition.advance.getOrElse(n)
    // unit starts as dates: the first day of the unit holding `date`, and how to step by units
    val (unitStart, step): (LocalDate, (LocalDate, Long) => LocalDate) = definition.unit match {
      case CalendarWindows.Days => (date, (d, u) => d.plusDays(u))
      case CalendarWindows.Weeks =>
        (date.`with`(TemporalAdjusters.previousOrSame(definition.firstDay)), (d, u) => d.plusWeeks(u))
      case CalendarWindows.Months => (date.`with`(TemporalAdjusters.firstDayOfMonth()), (d, u) => d.plusMonths(u))
      case CalendarWindows.Quarters =>
        val first = date.`with`(TemporalAdjusters.firstDayOfMonth())
        (first.minusMonths((first.getMonthValue - 1) % 3L), (d, u) => d.plusMonths(3 * u))
      case CalendarWindows.Years => (date.`with`(TemporalAdjusters.firstDayOfYear()), (d, u) => d.plusYears(u))
    }
    // the unit's index from the epoch's unit, by counting java.time's own steps
    val epochUnit = definition.unit match {
      case CalendarWindows.Weeks => LocalDate.ofEpochDay(0).`with`(TemporalAdjusters.previousOrSame(definition.firstDay))
      case _ => LocalDate.ofEpochDay(0)
    }
    val index = definition.unit match {
      case CalendarWindows.Days => unitStart.toEpochDay - epochUnit.toEpochDay
      case CalendarWindows.Weeks => (unitStart.toEpochDay - epochUnit.toEpochDay) / 7
      case CalendarWindows.Months => java.time.temporal.ChronoUnit.MONTHS.between(epochUnit, unitStart)
      case CalendarWindows.Quarters => java.time.temporal.ChronoUnit.MONTHS.between(epochUnit, unitStart) / 3
      case CalendarWindows.Years => java.time.temporal.ChronoUnit.YEARS.between(epochUnit, unitStart)
    }
    (0L until n.toLong).map(back => index - back).filter(s => Math.floorMod(s, k.toLong) == 0).map { s =>
      val start = step(unitStart, s - index)
      (at(start, zone), at(step(start, n.toLong), zone))
    }.toSet
  }

  private val definitions: Gen[CalendarWindows] = Gen.oneOf(
    CalendarWindows.days(1), CalendarWindows.days(7), CalendarWindows.days(3).advanceBy(1),
    CalendarWindows.weeks(1), CalendarWindows.weeks(2, "SUNDAY"), CalendarWindows.months(1),
    CalendarWindows.months(3).advanceBy(1), CalendarWindows.quarters(1), CalendarWindows.years(1),
    CalendarWindows.years(2).advanceBy(1))

  // random instants across 1900–2100, in microseconds
  private val instants: Gen[Long] = Gen.choose(-2208988800L, 4102444800L).map(_ * 1000000L)

  test("property: windows are those java.time gives, across 1900–2100 in zones with DST, half-hour and moved offsets") {
    forAll(definitions, Gen.oneOf(zones), instants, minSuccessful(2000)) { (definition, zone, t) =>
      withClue(s"$definition in $zone at ${Instant.EPOCH.plusNanos(t * 1000)}\n") {
        listed(definition, zone, t) shouldBe reference(definition, zone, t)
        val kind = definition.resolve(Timeline.timestamp(zone))
        listed(definition, zone, kind.sliceStart(t)) shouldBe listed(definition, zone, t)
        kind.closesAt(t) shouldBe listed(definition, zone, t).map(_._2 - 1).max
      }
    }
  }

  test("the daylight-saving days of 2026 last 23 and 25 hours in Berlin and New York") {
    val hour = 3600000000L
    def day(date: String, zone: String): (Long, Long) = {
      val z = ZoneId.of(zone)
      val t = micros(LocalDate.parse(date).atTime(12, 0).atZone(z).toInstant)
      val windows = listed(CalendarWindows.days(1), z, t)
      windows should have size 1
      windows.head
    }
    val berlinSpring = day("2026-03-29", "Europe/Berlin")
    berlinSpring shouldBe ((micros(Instant.parse("2026-03-28T23:00:00Z")), micros(Instant.parse("2026-03-29T22:00:00Z"))))
    (berlinSpring._2 - berlinSpring._1) shouldBe 23 * hour
    val berlinAutumn = day("2026-10-25", "Europe/Berlin")
    berlinAutumn shouldBe ((micros(Instant.parse("2026-10-24T22:00:00Z")), micros(Instant.parse("2026-10-25T23:00:00Z"))))
    val newYorkSpring = day("2026-03-08", "America/New_York")
    newYorkSpring shouldBe ((micros(Instant.parse("2026-03-08T05:00:00Z")), micros(Instant.parse("2026-03-09T04:00:00Z"))))
    val newYorkAutumn = day("2026-11-01", "America/New_York")
    (newYorkAutumn._2 - newYorkAutumn._1) shouldBe 25 * hour
    // March 2026 in Berlin: 31 days less the hour skipped on the 29th
    val months = listed(CalendarWindows.months(1), ZoneId.of("Europe/Berlin"), berlinSpring._1)
    months should have size 1
    val march = months.head
    (march._2 - march._1) shouldBe (31 * 24 - 1) * hour
  }

  test("a zone from inZone wins over the session zone; TIMESTAMP_NTZ is read as local time") {
    val t = micros(Instant.parse("2026-05-01T02:00:00Z"))
    val berlin = CalendarWindows.days(1).inZone("Europe/Berlin").resolve(Timeline.timestamp(ZoneId.of("UTC")))
    val out = ArrayBuffer.empty[(Long, Long)]
    berlin.foreachWindow(t)((s, e) => out += ((s, e)))
    out.toSeq shouldBe Seq((micros(Instant.parse("2026-04-30T22:00:00Z")), micros(Instant.parse("2026-05-01T22:00:00Z"))))
    val local = CalendarWindows.days(1).inZone("Europe/Berlin").resolve(Timeline.local)
    out.clear()
    local.foreachWindow(t)((s, e) => out += ((s, e)))
    out.toSeq shouldBe Seq((micros(Instant.parse("2026-05-01T00:00:00Z")), micros(Instant.parse("2026-05-02T00:00:00Z"))))
  }

  test("bad calendar windows are rejected, naming the problem") {
    def rejected(build: => Any): String = intercept[WindowError](build).getMessage
    rejected(CalendarWindows.days(0)) should include("positive number of days")
    rejected(CalendarWindows.months(-1)) should include("positive number of months")
    rejected(CalendarWindows.months(3).advanceBy(0)) should include("positive number of months")
    rejected(CalendarWindows.months(3).advanceBy(4)) should include("larger than the size")
    rejected(CalendarWindows.days(1).inZone("Mars/Olympus")) should include("unknown time zone 'Mars/Olympus'")
    rejected(CalendarWindows.weeks(1, "Caturday")) should include("unknown first day")
    rejected(CalendarWindows.months(1).resolve(Timeline.epoch(TimeUnit.MILLISECONDS))) should include("needs a time zone")
    CalendarWindows.days(1).resolve(Timeline.epoch(TimeUnit.MILLISECONDS)).timeline.zone shouldBe ZoneId.of("Z")
    rejected(WindowSpec.parse("calendar 1 fortnight")) should include("unknown calendar unit 'fortnight'")
    rejected(WindowSpec.parse("calendar 3 months every 1.5")) should include("whole number of months")
    rejected(WindowSpec.parse("calendar month")) should include("count and a unit")
  }

  test("specs: calendar windows parse back, with zone, advance and first day") {
    val all = Seq(CalendarWindows.months(1).inZone("America/New_York"), CalendarWindows.months(3).advanceBy(1),
      CalendarWindows.weeks(2, "sunday").grace("1 hour"), CalendarWindows.days(1), CalendarWindows.years(1).inZone("+05:30"))
    all.foreach(d => WindowSpec.parse(d.spec) shouldBe d)
    WindowSpec.parse("calendar 1 month in 'America/New_York'") shouldBe CalendarWindows.months(1).inZone("America/New_York")
    CalendarWindows.weeks(1, "SUNDAY").firstDay shouldBe DayOfWeek.SUNDAY
  }
}
