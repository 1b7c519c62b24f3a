package windowagg

import java.time.{Duration, ZoneOffset}
import java.util.concurrent.TimeUnit

import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.WindowError

/** The definitions of the kinds added with the open engine: how they resolve, what they reject, their specs. */
class WindowKindsSpec extends AnyFunSuite with Matchers {
  private val micros = Timeline.timestamp(ZoneOffset.UTC)
  private val millis = Timeline.epoch(TimeUnit.MILLISECONDS)
  private def rejected(build: => Any): String = intercept[WindowError](build).getMessage

  test("tumbling and hopping windows resolve to ticks; the advance defaults to the size, the offset to 0") {
    TimeWindows.of("1 minute").resolve(millis) shouldBe TimeWindows.Resolved(60000, 60000, 0)
    TimeWindows.of("1 hour").advanceBy("10 seconds").resolve(micros) shouldBe
      TimeWindows.Resolved(3600000000L, 10000000L, 0)
    TimeWindows.of(Duration.ofMinutes(10)).advanceBy(Duration.ofMinutes(5)).withOffset("2 minutes").grace("1 minute")
      .resolve(millis) shouldBe TimeWindows.Resolved(600000, 300000, 120000, Some(60000))
    TimeWindows.of(100L).advanceBy(30L).withOffset(7L).resolve(millis) shouldBe TimeWindows.Resolved(100, 30, 7)
  }

  test("a definition putting a time in more than a million windows fails when it resolves, saying what to do") {
    rejected(TimeWindows.of("1 hour").advanceBy("1 microsecond").resolve(micros)) should include(
      "puts every time in 3600000000 windows; at most 1000000 are allowed")
    rejected(TimeWindows.of("1 hour").advanceBy("1 microsecond").resolve(micros)) should include("SlidingWindows.of(size)")
    rejected(CumulativeWindows.of("1 microsecond", "1 day").resolve(micros)) should include("use a larger step")
    TimeWindows.of("1 day").advanceBy("100 milliseconds").resolve(micros).sizeTicks shouldBe 86400000000L // 864,000 windows
  }

  test("cumulative windows resolve to ticks") {
    CumulativeWindows.of("1 hour", "1 day").resolve(millis) shouldBe CumulativeWindows.Resolved(3600000, 86400000, 0)
    CumulativeWindows.of(10L, 40L).withOffset(5L).grace("0 seconds").resolve(millis) shouldBe
      CumulativeWindows.Resolved(10, 40, 5, Some(0))
  }

  test("bad sizes, advances, steps and offsets are rejected, naming the problem") {
    rejected(TimeWindows.of("0 seconds")) should include("window size must be positive")
    rejected(TimeWindows.of(-5L)) should include("window size must be positive")
    rejected(TimeWindows.of("1 minute").advanceBy("0 seconds")) should include("window advance must be positive")
    rejected(TimeWindows.of("1 minute").advanceBy(-1L)) should include("window advance must be positive")
    rejected(TimeWindows.of("1 minute").withOffset("-1 second")) should include("window offset must not be negative")
    rejected(TimeWindows.of("1 minute").advanceBy("2 minutes").resolve(millis)) should include("larger than the window size")
    rejected(TimeWindows.of("1 minute").advanceBy("10 seconds").withOffset("10 seconds").resolve(millis)) should
      include("must be less than the advance")
    rejected(TimeWindows.of("1 minute").withOffset("1 minute").resolve(millis)) should include("must be less than the size")
    rejected(CumulativeWindows.of("0 hours", "1 day")) should include("step must be positive")
    rejected(CumulativeWindows.of("1 hour", "-1 day")) should include("max size must be positive")
    rejected(CumulativeWindows.of("7 hours", "1 day").resolve(millis)) should include("not a whole multiple of the step")
    rejected(CumulativeWindows.of("1 hour", "1 day").withOffset("1 day").resolve(millis)) should include("less than the max size")
    rejected(TimeWindows.of(1000L).resolve(micros)) should include("number of ticks")
    rejected(TimeWindows.of("1500 us").resolve(millis)) should include("milliseconds")
  }

  test("custom kinds: by instance or class name; unknown, unloadable or wrong classes are named") {
    rejected(CustomWindows.of("com.example.NoSuchWindows")) should (include("com.example.NoSuchWindows") and include("classpath"))
    rejected(CustomWindows.of("java.lang.String")) should (include("java.lang.String") and include("not a window definition"))
    rejected(CustomWindows.of("")) should include("must not be empty")
    rejected(CustomWindows.of(null: EnumerableWindowDefinition)) should include("must not be null")
    rejected(CustomWindows.of(classOf[WindowKindsSpec.Weeks].getName, java.util.Map.of("x", "1"))) should
      include("takes no parameters")
    CustomWindows.of(classOf[WindowKindsSpec.Weeks].getName).resolve(millis).maxSpan shouldBe 7L * 86400000 - 1
  }

  test("a custom kind that lists a window without the time, an empty one or one over its max size fails, naming class and time") {
    def failing(windows: Long => Window, largest: Long = 100): String = rejected(CustomWindows.of(new EnumerableWindowDefinition {
      override def windowsFor(time: Long, timeline: Timeline): java.util.List[Window] = java.util.List.of(windows(time))
      override def maxSize(timeline: Timeline): Long = largest
      override def toString: String = "Broken"
    }).resolve(millis))
    failing(t => Window(t + 1, t + 10)) should (include("does not contain 0") and include("windowsFor(0"))
    failing(t => Window(t, t)) should include("empty or inverted")
    failing(t => Window(t, t + 500)) should include("larger than its maxSize 100")
    failing(t => Window(t, t + 1), largest = 0) should include("maxSize must be positive")
  }

  test("every definition's spec parses back to it; toString reads like the Scala that builds it") {
    val definitions = Seq(
      SlidingWindows.of("10 minutes"), SlidingWindows.of(500L).grace("1 second"),
      SessionWindows.withInactivityGap("5 minutes"), SessionWindows.withDynamicGap("gap_col").grace("1 minute"),
      TimeWindows.of("1 minute"), TimeWindows.of("1 hour").advanceBy("10 seconds").withOffset("5 seconds").grace("1 minute"),
      CumulativeWindows.of("1 hour", "1 day"), CumulativeWindows.of(10L, 40L).withOffset(5L),
      CustomWindows.of(classOf[WindowKindsSpec.Weeks].getName).grace("1 day"))
    definitions.foreach(d => WindowSpec.parse(d.spec) shouldBe d)
    TimeWindows.of("1 hour").advanceBy("10 seconds").toString shouldBe "TimeWindows.of(1 hour).advanceBy(10 seconds)"
    WindowSpec.parse("HOPPING 1 hour 30 minutes EVERY 10 seconds") shouldBe
      TimeWindows.of("90 minutes").advanceBy("10 seconds")
    WindowSpec.parse("cumulative 1 hour up to 1 day grace 5 minutes") shouldBe
      CumulativeWindows.of("1 hour", "1 day").grace("5 minutes")
  }

  test("unlimited windows: one window from the start on, rows before it in no window") {
    val fromEpoch = UnlimitedWindows.of().resolve(millis)
    fromEpoch shouldBe UnlimitedWindows.Resolved(0L, Long.MaxValue, None)
    UnlimitedWindows.of().resolve(micros).endTicks shouldBe 253402214400000000L // 9999-12-31T00:00:00Z
    fromEpoch.holds(-1L) shouldBe false
    fromEpoch.holds(0L) shouldBe true
    fromEpoch.sliceStart(123456L) shouldBe 0L
    fromEpoch.everFinal shouldBe false
    UnlimitedWindows.of().startOn("2024-01-01T00:00:00Z").resolve(millis).startTicks shouldBe 1704067200000L
    UnlimitedWindows.of().startOn(-5L).grace("1 second").resolve(millis) shouldBe UnlimitedWindows.Resolved(-5L, Long.MaxValue, Some(1000L))
    rejected(UnlimitedWindows.of().startOn(5L).resolve(micros)) should include("give an instant")
    rejected(UnlimitedWindows.of().startOn("yesterday")) should include("cannot read 'yesterday' as an instant")
    rejected(WindowSpec.parse("unlimited 5 minutes")) should include("no size")
    rejected(WindowSpec.parse("unlimited starting")) should include("'unlimited starting': 'starting' needs the start after it")
    Seq(UnlimitedWindows.of(), UnlimitedWindows.of().startOn("2024-01-01T00:00:00Z").grace("1 minute"), UnlimitedWindows.of().startOn(7L))
      .foreach(d => WindowSpec.parse(d.spec) shouldBe d)
  }

  test("bad specs are rejected, naming the problem") {
    rejected(WindowSpec.parse("rolling 5 minutes")) should (include("unknown window kind 'rolling'") and include("hopping"))
    rejected(WindowSpec.parse("")) should include("must not be empty")
    rejected(WindowSpec.parse("hopping 1 hour")) should include("no advance")
    rejected(WindowSpec.parse("tumbling 1 hour every 1 minute")) should include("takes no 'every'")
    rejected(WindowSpec.parse("cumulative 1 hour")) should include("no max size")
    rejected(WindowSpec.parse("session 5 minutes")) should include("after the word gap")
    rejected(WindowSpec.parse("sliding ten minutes")) should include("ten minutes")
    rejected(WindowSpec.parse("sliding 1 minute grace 1 minute grace 2 minutes")) should include("twice")
    rejected(WindowSpec.parse("tumbling 1 minute grace -1 second")) should include("must not be negative")
  }
}

object WindowKindsSpec {
  /** Calendar weeks from Monday, in UTC: a user kind with no parameters. */
  final class Weeks extends EnumerableWindowDefinition {
    private val week = 7L * 86400000
    override def windowsFor(time: Long, timeline: Timeline): java.util.List[Window] = {
      val start = Math.floorDiv(time + 3 * 86400000L, week) * week - 3 * 86400000L
      java.util.List.of(Window(start, start + week))
    }
    override def maxSize(timeline: Timeline): Long = week
    override def equals(other: Any): Boolean = other.isInstanceOf[Weeks]
    override def hashCode: Int = 1
  }
}
