package windowagg

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}
import java.time.Duration
import java.util.concurrent.TimeUnit

import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.WindowError

class SessionWindowsSpec extends AnyFunSuite with Matchers {

  private def rejected(build: => Any): String = intercept[WindowError](build).getMessage

  test("fixed gaps from text, a Duration or ticks resolve to ticks of the time column") {
    SessionWindows.withInactivityGap("5 minutes").resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe
      SessionWindows.Resolved(Some(300000000L), None)
    SessionWindows.withInactivityGap("5 minutes").resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe
      SessionWindows.Resolved(Some(300000L))
    SessionWindows.withInactivityGap("1 hour 30 minutes").resolve(Timeline.epoch(TimeUnit.SECONDS)) shouldBe
      SessionWindows.Resolved(Some(5400L))
    SessionWindows.withInactivityGap(Duration.ofSeconds(2)).resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe
      SessionWindows.Resolved(Some(2000000L))
    SessionWindows.withInactivityGap(Duration.ofNanos(1000)).resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe
      SessionWindows.Resolved(Some(1L))
    SessionWindows.withInactivityGap(30000L).resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe SessionWindows.Resolved(Some(30000L))
    SessionWindows.withInactivityGap(1L).resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe SessionWindows.Resolved(Some(1L))
    // ticks are the time column's own unit, whatever it is
    SessionWindows.withInactivityGap(7L).resolve(Timeline.epoch(TimeUnit.SECONDS)) shouldBe SessionWindows.Resolved(Some(7L))
  }

  test("a dynamic gap resolves to no fixed gap; the column name is kept") {
    val dynamic = SessionWindows.withDynamicGap("gap")
    dynamic.gap shouldBe None
    dynamic.gapColumn shouldBe Some("gap")
    dynamic.resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe SessionWindows.Resolved(None, None)
    SessionWindows.withInactivityGap("1 minute").gapColumn shouldBe None
  }

  test("grace resolves to ticks, for fixed and dynamic gaps; zero grace is allowed") {
    SessionWindows.withInactivityGap("5 minutes").grace("1 minute").resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe
      SessionWindows.Resolved(Some(300000L), Some(60000L))
    SessionWindows.withInactivityGap(10L).grace(Duration.ofMillis(3)).resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe
      SessionWindows.Resolved(Some(10L), Some(3L))
    SessionWindows.withInactivityGap(10L).grace("0 seconds").resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe
      SessionWindows.Resolved(Some(10L), Some(0L))
    SessionWindows.withInactivityGap(10L).grace(Duration.ZERO).gracePeriod.map(_.toTicks(TimeUnit.SECONDS, "g")) shouldBe Some(0L)
    val dynamic = SessionWindows.withDynamicGap("gap").grace("2 seconds")
    dynamic.gapColumn shouldBe Some("gap")
    dynamic.resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe SessionWindows.Resolved(None, Some(2000000L))
    // the last grace wins
    SessionWindows.withInactivityGap(10L).grace("1 second").grace("2 seconds").resolve(Timeline.epoch(TimeUnit.SECONDS)) shouldBe
      SessionWindows.Resolved(Some(10L), Some(2L))
  }

  test("zero and negative gaps are rejected, naming the problem") {
    for (message <- Seq(
        rejected(SessionWindows.withInactivityGap(0L)),
        rejected(SessionWindows.withInactivityGap(-5L)),
        rejected(SessionWindows.withInactivityGap(Long.MinValue)),
        rejected(SessionWindows.withInactivityGap(Duration.ZERO)),
        rejected(SessionWindows.withInactivityGap(Duration.ofSeconds(-1))),
        rejected(SessionWindows.withInactivityGap("0 seconds")),
        rejected(SessionWindows.withInactivityGap("-5 minutes")))) {
      message should include("session inactivity gap")
      message should include("positive")
    }
    rejected(SessionWindows.withInactivityGap(-5L)) should include("-5")
    rejected(SessionWindows.withInactivityGap("-5 minutes")) should include("-5 minutes")
  }

  test("null and unparsable gaps are rejected") {
    val nullDuration = rejected(SessionWindows.withInactivityGap(null: Duration))
    nullDuration should include("session inactivity gap")
    nullDuration should include("null")
    rejected(SessionWindows.withInactivityGap(null: String)) should include("null")
    rejected(SessionWindows.withInactivityGap("five minutes")) should include("five minutes")
    rejected(SessionWindows.withInactivityGap("1 month")) should include("calendar")
  }

  test("a gap finer than the time column's resolution, or too large, is rejected when resolved") {
    val message = rejected(SessionWindows.withInactivityGap(Duration.ofNanos(1500)).resolve(Timeline.epoch(TimeUnit.MICROSECONDS)))
    message should include("session inactivity gap")
    message should include("microseconds")
    rejected(SessionWindows.withInactivityGap("1500 us").resolve(Timeline.epoch(TimeUnit.MILLISECONDS))) should include("milliseconds")
    rejected(SessionWindows.withInactivityGap(Duration.ofSeconds(Long.MaxValue / 2)).resolve(Timeline.epoch(TimeUnit.NANOSECONDS))) should
      include("session inactivity gap")
    val grace = rejected(SessionWindows.withInactivityGap(10L).grace("1500 us").resolve(Timeline.epoch(TimeUnit.MILLISECONDS)))
    grace should include("grace period")
    grace should include("milliseconds")
  }

  test("withDynamicGap rejects a missing or empty column name") {
    for (message <- Seq(
        rejected(SessionWindows.withDynamicGap(null)),
        rejected(SessionWindows.withDynamicGap("")),
        rejected(SessionWindows.withDynamicGap("   ")))) {
      message should include("gap column")
      message should include("empty")
    }
  }

  test("grace rejects negative and null periods, naming the problem") {
    for (message <- Seq(
        rejected(SessionWindows.withInactivityGap(10L).grace("-1 second")),
        rejected(SessionWindows.withInactivityGap(10L).grace(Duration.ofMillis(-1))),
        rejected(SessionWindows.withDynamicGap("gap").grace(Duration.ofNanos(-1))))) {
      message should include("grace period")
      message should include("negative")
    }
    rejected(SessionWindows.withInactivityGap(10L).grace("-1 second")) should include("-1 second")
    rejected(SessionWindows.withInactivityGap(10L).grace(null: Duration)) should include("null")
    rejected(SessionWindows.withInactivityGap(10L).grace(null: String)) should include("null")
    rejected(SessionWindows.withInactivityGap(10L).grace("soon")) should include("soon")
  }

  test("definitions are equal when gap, gap column and grace are, however written; toString in the user's terms") {
    SessionWindows.withInactivityGap("5 minutes") shouldBe SessionWindows.withInactivityGap(Duration.ofMinutes(5))
    SessionWindows.withInactivityGap("5 minutes").hashCode shouldBe SessionWindows.withInactivityGap(Duration.ofMinutes(5)).hashCode
    SessionWindows.withInactivityGap("5 minutes") should not be SessionWindows.withInactivityGap("6 minutes")
    SessionWindows.withInactivityGap(10L) should not be SessionWindows.withInactivityGap("10 ms")
    SessionWindows.withInactivityGap(10L) should not be SessionWindows.withInactivityGap(10L).grace("1 second")
    SessionWindows.withInactivityGap(10L).grace("1 second") shouldBe SessionWindows.withInactivityGap(10L).grace(Duration.ofSeconds(1))
    SessionWindows.withDynamicGap("gap") shouldBe SessionWindows.withDynamicGap("gap")
    SessionWindows.withDynamicGap("gap") should not be SessionWindows.withDynamicGap("other")
    SessionWindows.withDynamicGap("gap") should not be SlidingWindows.of(10L)
    SessionWindows.withInactivityGap("5 minutes").toString shouldBe "SessionWindows.withInactivityGap(5 minutes)"
    SessionWindows.withInactivityGap(10L).grace("1 second").toString shouldBe
      "SessionWindows.withInactivityGap(10 ticks).grace(1 second)"
    SessionWindows.withDynamicGap("gap").toString shouldBe "SessionWindows.withDynamicGap(gap)"
  }

  test("a definition survives Java serialization") {
    for (definition <- Seq(
        SessionWindows.withInactivityGap("5 minutes"),
        SessionWindows.withInactivityGap(10000L).grace("1 second"),
        SessionWindows.withDynamicGap("gap").grace(Duration.ofSeconds(3)))) {
      val bytes = new ByteArrayOutputStream()
      val out = new ObjectOutputStream(bytes)
      out.writeObject(definition)
      out.close()
      val back = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray)).readObject()
      back shouldBe definition
      back.asInstanceOf[SessionWindows].resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe definition.resolve(Timeline.epoch(TimeUnit.MILLISECONDS))
    }
  }
}
