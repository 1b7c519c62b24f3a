package windowagg.core

import java.time.Duration
import java.util.concurrent.TimeUnit

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

class TimeSpanSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  private def parsed(text: String): Duration = TimeSpan.parse(text) match {
    case TimeSpan.OfDuration(d) => d
    case other => fail(s"'$text' parsed to $other, not a duration")
  }

  test("parses the documented forms") {
    parsed("10 minutes") shouldBe Duration.ofMinutes(10)
    parsed("1 hour 30 minutes") shouldBe Duration.ofMinutes(90)
    parsed("1.5 s") shouldBe Duration.ofMillis(1500)
    parsed("250ms") shouldBe Duration.ofMillis(250)
    parsed("interval 2 days") shouldBe Duration.ofDays(2)
  }

  test("parses unit spellings, case and spacing") {
    parsed("INTERVAL 2 days") shouldBe Duration.ofDays(2)
    parsed("  10   Minutes ") shouldBe Duration.ofMinutes(10)
    parsed("1 week") shouldBe Duration.ofDays(7)
    parsed("2h") shouldBe Duration.ofHours(2)
    parsed("1 hr 1 min 1 sec") shouldBe Duration.ofSeconds(3661)
    parsed("3 m") shouldBe Duration.ofMinutes(3)
    parsed("7 us") shouldBe Duration.ofNanos(7000)
    parsed("7 microseconds") shouldBe Duration.ofNanos(7000)
    parsed("7 ns") shouldBe Duration.ofNanos(7)
    parsed("1 second") shouldBe Duration.ofSeconds(1)
    parsed("0.25 hours") shouldBe Duration.ofMinutes(15)
  }

  test("property: a sum of parts parses to the sum of their durations") {
    val units = Seq(
      "days" -> Duration.ofDays(1), "hours" -> Duration.ofHours(1), "minutes" -> Duration.ofMinutes(1),
      "s" -> Duration.ofSeconds(1), "ms" -> Duration.ofMillis(1), "microseconds" -> Duration.ofNanos(1000))
    val parts = Gen.nonEmptyListOf(for {
      (name, unit) <- Gen.oneOf(units)
      n <- Gen.choose(0L, 1000L)
      space <- Gen.oneOf("", " ", "  ")
    } yield (s"$n$space$name", unit.multipliedBy(n)))
    forAll(parts, Gen.oneOf("", "interval ")) { (ps, prefix) =>
      val text = prefix + ps.map(_._1).mkString(" ")
      parsed(text) shouldBe ps.map(_._2).foldLeft(Duration.ZERO)(_ plus _)
    }
  }

  private def rejected(text: String): String = intercept[WindowError](TimeSpan.parse(text)).getMessage

  test("rejects what is not a length of time, naming the text") {
    rejected("") should include("cannot parse")
    rejected("   ") should include("cannot parse")
    rejected("interval ") should include("cannot parse")
    rejected("ten minutes") should include("'ten minutes'")
    rejected("10 minutes and more") should include("'10 minutes and more'")
    rejected("10") should include("'10'")
    rejected("minutes") should include("'minutes'")
    rejected("10 minutes, 5 seconds") should include("'10 minutes, 5 seconds'")
  }

  test("rejects unknown units, naming the unit") {
    rejected("5 fortnights") should include("fortnights")
    rejected("5 lightyears") should include("lightyears")
  }

  test("rejects months and years, pointing to calendar windows") {
    for (text <- Seq("1 month", "2 months", "1 year", "3 years", "1 mon")) {
      val message = rejected(text)
      message should include("calendar")
      message should include(text)
    }
  }

  test("rejects null") {
    rejected(null) should include("null")
  }

  test("rejects fractions of a nanosecond and lengths beyond a Duration; takes those beyond 64-bit nanoseconds") {
    rejected("0.5 ns") should include("0.5 ns")
    rejected("99999999999999999999999 days") should include("too large")
    parsed("1000000 days") shouldBe Duration.ofDays(1000000)
    // a timedelta's longest exact length from Python, in microseconds: Long.MaxValue µs rounded down to days
    parsed("9223372022400000000 microseconds") shouldBe Duration.ofDays(106751991)
    parsed("-9223372022400000000 microseconds") shouldBe Duration.ofDays(-106751991)
  }

  test("toTicks converts to the time column's unit") {
    val tenMinutes = TimeSpan(Duration.ofMinutes(10))
    tenMinutes.toTicks(TimeUnit.MILLISECONDS, "size") shouldBe 600000L
    tenMinutes.toTicks(TimeUnit.MICROSECONDS, "size") shouldBe 600000000L
    tenMinutes.toTicks(TimeUnit.SECONDS, "size") shouldBe 600L
    tenMinutes.toTicks(TimeUnit.NANOSECONDS, "size") shouldBe 600000000000L
    TimeSpan.parse("1.5 s").toTicks(TimeUnit.MILLISECONDS, "size") shouldBe 1500L
    TimeSpan(Duration.ofNanos(1500000)).toTicks(TimeUnit.MICROSECONDS, "size") shouldBe 1500L
  }

  test("toTicks rejects a length that is not a whole number of ticks, naming the span and the unit") {
    val e = intercept[WindowError](TimeSpan(Duration.ofNanos(1500000)).toTicks(TimeUnit.MILLISECONDS, "window size"))
    e.getMessage should include("window size")
    e.getMessage should include("whole number of milliseconds")
    intercept[WindowError](TimeSpan.parse("1.5 s").toTicks(TimeUnit.SECONDS, "size"))
    intercept[WindowError](TimeSpan(Duration.ofNanos(1)).toTicks(TimeUnit.MICROSECONDS, "size"))
  }

  test("toTicks rejects a duration too long for the 64-bit range of nanoseconds") {
    intercept[WindowError](TimeSpan(Duration.ofDays(365L * 1000)).toTicks(TimeUnit.NANOSECONDS, "size"))
      .getMessage should include("too large")
  }

  test("property: toTicks is exact for whole tick counts") {
    val unitsGen = Gen.oneOf(TimeUnit.NANOSECONDS, TimeUnit.MICROSECONDS, TimeUnit.MILLISECONDS, TimeUnit.SECONDS)
    forAll(unitsGen, Gen.choose(-1000000000L, 1000000000L)) { (unit, n) =>
      TimeSpan(Duration.ofNanos(unit.toNanos(1) * (n % (Long.MaxValue / unit.toNanos(1)))))
        .toTicks(unit, "size") shouldBe n % (Long.MaxValue / unit.toNanos(1))
    }
  }

  test("a count of ticks is taken as is") {
    TimeSpan.ticks(42).toTicks(TimeUnit.MILLISECONDS, "size") shouldBe 42L
    TimeSpan.ticks(42).toTicks(TimeUnit.MICROSECONDS, "size") shouldBe 42L
  }

  test("toString gives the span in the user's terms") {
    TimeSpan.parse("1 hour 30 minutes").toString shouldBe "90 minutes"
    TimeSpan.parse("2 hours").toString shouldBe "2 hours"
    TimeSpan.parse("1 day").toString shouldBe "1 day"
    TimeSpan.parse("1.5 s").toString shouldBe "1500 milliseconds"
    TimeSpan.ticks(7).toString shouldBe "7 ticks"
  }
}
