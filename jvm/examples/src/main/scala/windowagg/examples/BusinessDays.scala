package windowagg.examples

import java.time.{DayOfWeek, LocalDate}
import java.util.concurrent.TimeUnit

import windowagg.{EnumerableWindowDefinition, Timeline, Window}

/**
 * Business days in the time column's zone, skipping weekends: each business day runs from its
 * midnight to the next business day's, so Friday's window holds the weekend and every time belongs
 * to exactly one window. A user-defined window kind written in Scala, with no parameters: from
 * Python or SQL it is `custom windowagg.examples.BusinessDays`.
 */
final class BusinessDays extends EnumerableWindowDefinition {

  override def windowsFor(time: Long, timeline: Timeline): java.util.List[Window] = {
    var day = timeline.toLocal(time).toLocalDate
    while (isWeekend(day)) day = day.minusDays(1)
    var next = day.plusDays(1)
    while (isWeekend(next)) next = next.plusDays(1)
    java.util.List.of(Window(timeline.fromLocal(day.atStartOfDay), timeline.fromLocal(next.atStartOfDay)))
  }

  /** Friday to Monday, plus an hour for a daylight-saving change. */
  override def maxSize(timeline: Timeline): Long = timeline.unit.convert(3L * 24 + 1, TimeUnit.HOURS)

  private def isWeekend(day: LocalDate): Boolean =
    day.getDayOfWeek == DayOfWeek.SATURDAY || day.getDayOfWeek == DayOfWeek.SUNDAY

  override def spec: String = s"custom ${getClass.getName}"
  override def equals(other: Any): Boolean = other.isInstanceOf[BusinessDays]
  override def hashCode: Int = getClass.hashCode
  override def toString: String = "BusinessDays"
}
