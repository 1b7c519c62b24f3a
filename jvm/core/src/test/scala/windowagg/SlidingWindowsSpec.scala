package windowagg

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}
import java.time.Duration
import java.util.concurrent.TimeUnit

import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.WindowError

class SlidingWindowsSpec extends AnyFunSuite with Matchers {

  private def rejected(build: => SlidingWindows): String = intercept[WindowError](build).getMessage

  test("sizes from text, a Duration or ticks resolve to ticks of the time column") {
    SlidingWindows.of("10 minutes").resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe SlidingWindows.Resolved(600000000L)
    SlidingWindows.of("10 minutes").resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe SlidingWindows.Resolved(600000L)
    SlidingWindows.of("1 hour 30 minutes").resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe
      SlidingWindows.Resolved(5400000000L)
    SlidingWindows.of("250ms").resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe SlidingWindows.Resolved(250000L)
    SlidingWindows.of(Duration.ofSeconds(2)).resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe SlidingWindows.Resolved(2000000L)
    SlidingWindows.of(Duration.ofNanos(1000)).resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe SlidingWindows.Resolved(1L)
    SlidingWindows.of(10000L).resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe SlidingWindows.Resolved(10000L)
    SlidingWindows.of(1L).resolve(Timeline.epoch(TimeUnit.MICROSECONDS)) shouldBe SlidingWindows.Resolved(1L)
  }

  test("a size finer than the time column's resolution is rejected when resolved") {
    val message = intercept[WindowError](SlidingWindows.of(Duration.ofNanos(1500)).resolve(Timeline.epoch(TimeUnit.MICROSECONDS)))
      .getMessage
    message should include("sliding window size")
    message should include("microseconds")
    intercept[WindowError](SlidingWindows.of("1500 us").resolve(Timeline.epoch(TimeUnit.MILLISECONDS)))
      .getMessage should include("milliseconds")
  }

  test("zero and negative sizes are rejected, naming the problem") {
    for (message <- Seq(
        rejected(SlidingWindows.of(0L)),
        rejected(SlidingWindows.of(-5L)),
        rejected(SlidingWindows.of(Long.MinValue)),
        rejected(SlidingWindows.of(Duration.ZERO)),
        rejected(SlidingWindows.of(Duration.ofSeconds(-1))),
        rejected(SlidingWindows.of("0 seconds")),
        rejected(SlidingWindows.of("-5 minutes")))) {
      message should include("sliding window size")
      message should include("positive")
    }
    rejected(SlidingWindows.of(-5L)) should include("-5")
    rejected(SlidingWindows.of("-5 minutes")) should include("-5 minutes")
  }

  test("null and unparsable sizes are rejected") {
    rejected(SlidingWindows.of(null: Duration)) should include("null")
    rejected(SlidingWindows.of(null: String)) should include("null")
    rejected(SlidingWindows.of("ten minutes")) should include("ten minutes")
    rejected(SlidingWindows.of("1 month")) should include("calendar")
  }

  test("definitions with the same size are equal, however the size was written") {
    SlidingWindows.of("10 minutes") shouldBe SlidingWindows.of(Duration.ofMinutes(10))
    SlidingWindows.of("10 minutes").hashCode shouldBe SlidingWindows.of(Duration.ofMinutes(10)).hashCode
    SlidingWindows.of("1 hour 30 minutes") shouldBe SlidingWindows.of("90 minutes")
    SlidingWindows.of("10 minutes") should not be SlidingWindows.of("11 minutes")
    SlidingWindows.of(10L) should not be SlidingWindows.of("10 ms")
    SlidingWindows.of("10 minutes").toString shouldBe "SlidingWindows.of(10 minutes)"
  }

  test("a definition survives Java serialization") {
    for (definition <- Seq(SlidingWindows.of("10 minutes"), SlidingWindows.of(10000L))) {
      val bytes = new ByteArrayOutputStream()
      val out = new ObjectOutputStream(bytes)
      out.writeObject(definition)
      out.close()
      val back = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray)).readObject()
      back shouldBe definition
      back.asInstanceOf[SlidingWindows].resolve(Timeline.epoch(TimeUnit.MILLISECONDS)) shouldBe
        definition.resolve(Timeline.epoch(TimeUnit.MILLISECONDS))
    }
  }
}
