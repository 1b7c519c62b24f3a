package windowagg

import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.WindowError

/** Definitions written as the calls that build them read back as the definitions those calls build, or as errors saying why not. */
class WindowCallsSpec extends AnyFunSuite with Matchers {
  private def rejected(text: String): String = intercept[WindowError](WindowSpec.parse(text)).getMessage

  test("every kind's builder calls, as a client without the classes writes them, build the same definition") {
    val cases: Seq[(String, WindowDefinition)] = Seq(
      "SlidingWindows.of('10 minutes')" -> SlidingWindows.of("10 minutes"),
      "SlidingWindows.of(10000).grace('1 minute')" -> SlidingWindows.of(10000L).grace("1 minute"),
      "SessionWindows.withInactivityGap('5 minutes')" -> SessionWindows.withInactivityGap("5 minutes"),
      "SessionWindows.withDynamicGap('gap_col').grace('0 seconds')" -> SessionWindows.withDynamicGap("gap_col").grace("0 seconds"),
      "TimeWindows.of('1 hour').advanceBy('10 seconds').withOffset('5 seconds')" ->
        TimeWindows.of("1 hour").advanceBy("10 seconds").withOffset("5 seconds"),
      " TimeWindows . of ( 100 ) . advanceBy ( 30 ) " -> TimeWindows.of(100L).advanceBy(30L),
      "CumulativeWindows.of('1 hour', '1 day')" -> CumulativeWindows.of("1 hour", "1 day"),
      "CalendarWindows.months(3).advanceBy(1).inZone('America/New_York')" ->
        CalendarWindows.months(3).advanceBy(1).inZone("America/New_York"),
      "CalendarWindows.weeks(1, 'SUNDAY')" -> CalendarWindows.weeks(1, "SUNDAY"),
      "UnlimitedWindows.of().startOn('2024-01-01T00:00:00Z')" -> UnlimitedWindows.of().startOn("2024-01-01T00:00:00Z"),
      "UnlimitedWindows.of().startOn(-5)" -> UnlimitedWindows.of().startOn(-5L),
      "CountWindows.of(30).slide(10).tieBreak('seq')" -> CountWindows.of(30).slide(10).tieBreak("seq"),
      "DurationWindows.of('20 seconds').every('10 seconds').lag('5 seconds')" ->
        DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds"),
      "CustomWindows.of('windowagg.WindowCallsSpec$EveryDays', days='2')" ->
        CustomWindows.of("windowagg.WindowCallsSpec$EveryDays", Map("days" -> "2")),
      "SessionWindows.withDynamicGap('it''s')" -> SessionWindows.withDynamicGap("it's"),
      "TableWindows.of('campaign_periods')" -> TableWindows.of("campaign_periods"),
      "TableWindows.of('db.periods', 'opens', 'closes').grace('1 day')" -> TableWindows.of("db.periods", "opens", "closes").grace("1 day"))
    cases.foreach { case (text, expected) =>
      withClue(text) {
        WindowSpec.parse(text) shouldBe expected
        WindowSpec.parse(WindowSpec.parse(text).spec) shouldBe expected
      }
    }
  }

  test("calls that build nothing, or no definition, fail naming the problem") {
    rejected("TimeWindow.of('1 hour')") should include("unknown window kind TimeWindow")
    rejected("TimeWindows.off('1 hour')") should include("TimeWindows has no method off(text)")
    rejected("TimeWindows.of('1 hour').advanceBy(1, 2)") should include("has no method advanceBy(an integer, an integer)")
    rejected("TimeWindows.of('1 hour').spec()") should include("has no method spec()")
    rejected("TimeWindows.of('1 hour').wait(1000)") should include("has no method wait(an integer)")
    rejected("TimeWindows.of('0 seconds')") should include("window size must be positive")
    rejected("TimeWindows.of('1 hour'") should include("expected ')'")
    rejected("TimeWindows.of('1 hour)") should include("a quote is not closed")
    rejected("TimeWindows.of('1 hour') extra") should include("expected '.'")
    rejected("CalendarWindows.months(99999999999)") should include("has no method months(an integer)")
  }
}

object WindowCallsSpec {
  /** Windows of a number of days (a parameter), in ticks of a millisecond epoch: a user kind with parameters. */
  final class EveryDays(parameters: java.util.Map[String, String]) extends EnumerableWindowDefinition {
    private val length = parameters.getOrDefault("days", "1").toLong * 86400000L
    override def windowsFor(time: Long, timeline: Timeline): java.util.List[Window] = {
      val start = Math.floorDiv(time, length) * length
      java.util.List.of(Window(start, start + length))
    }
    override def maxSize(timeline: Timeline): Long = length
    override def equals(other: Any): Boolean = other match {
      case o: EveryDays => o.length == length
      case _ => false
    }
    override def hashCode: Int = length.hashCode
  }
}
