package windowagg.spark.common

import java.util.Locale
import java.util.concurrent.TimeUnit

import org.apache.spark.sql.streaming.OutputMode

import windowagg.core.{TimeSpan, WindowError}

/**
 * When a streaming aggregation emits its windows: a policy the processor asks as windows change
 * and become final, so that the kinds of windows know nothing of it. One case of this file per
 * policy.
 */
sealed abstract class Emission(val name: String) extends Serializable {
  /** The output mode the sink must run in. */
  def outputMode: OutputMode

  /** Whether a window is emitted once when it becomes final. */
  def emitsFinal: Boolean

  /** Whether a window is emitted whenever a micro-batch changes it (merged sessions retracted). */
  def emitsChanges: Boolean

  /** The interval, in ticks, at which open windows' running values are emitted early, if they are. */
  def earlyEvery: Option[Long] = None

  override def toString: String = name
}

object Emission {
  /** Each window once, when the watermark passes its end: the append output mode. */
  case object Final extends Emission("final") {
    override def outputMode: OutputMode = OutputMode.Append()
    override def emitsFinal: Boolean = true
    override def emitsChanges: Boolean = false
  }

  /** Every window a micro-batch changed, with its current value: the update output mode. */
  case object Updates extends Emission("updates") {
    override def outputMode: OutputMode = OutputMode.Update()
    override def emitsFinal: Boolean = false
    override def emitsChanges: Boolean = true
  }

  /**
   * Early firing (Flink's continuous triggers): a window's running value at most once per `every`
   * of the aggregation's clock (event time as the watermark moves, or processing time) while it is
   * open and changed since, then its final value once, marked `is_final`: the update output mode.
   */
  final case class Every(every: TimeSpan, ticks: Long) extends Emission(s"every ${every.spec}") {
    require(ticks > 0)
    override def outputMode: OutputMode = OutputMode.Update()
    override def emitsFinal: Boolean = true
    override def emitsChanges: Boolean = false
    override def earlyEvery: Option[Long] = Some(ticks)
  }

  /** The policies by what `emit` says: "final", "updates" or "every <duration>" (ticks: microseconds). */
  def parse(text: String): Emission = text.trim.toLowerCase(Locale.ROOT) match {
    case "final" => Final
    case "updates" => Updates
    case every if every.startsWith("every ") =>
      // a streaming time column is a TIMESTAMP: its ticks are microseconds
      val span = TimeSpan.positive(TimeSpan.parse(text.trim.drop("every ".length)), "the interval of emit 'every ...'")
      Every(span, span.toTicks(TimeUnit.MICROSECONDS, "the interval of emit 'every ...'"))
    case _ => throw WindowError(s"emit must be 'final', 'updates' or 'every <duration>' (e.g. 'every 10 seconds'), got '$text'")
  }
}
