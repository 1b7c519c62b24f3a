package windowagg.spark.common

import java.util.Locale

import java.util.concurrent.TimeUnit

import windowagg.core.{TimeSpan, WindowError}

/**
 * How a windowed aggregation reads its time column and, in streaming, what it emits:
 *  - `timeUnit`: the unit of an integral time column ('milliseconds', 'microseconds', 'seconds'), needed
 *    when the definition has durations or dates;
 *  - `emit`: "final" (each window once, when final; append output mode), "updates" (every
 *    window a micro-batch changed, with its current value; update output mode) or "every <duration>"
 *    (early firing: open windows' running values at most once per interval, then the final value,
 *    marked `is_final`; update output mode): see [[Emission]];
 *  - `lateRows`: "count" (late and null-time rows are counted in the query's observed metrics
 *    "windowagg") or "emit" (they also come out as rows with `late_reason` and `late_row`);
 *  - `time`: "event" (the time column's values, against the watermark) or "processing" (streaming
 *    only: the time column is `current_timestamp()`, each row's time is its micro-batch's, and
 *    windows close on Spark's processing-time clock, as Storm's default);
 *  - `expireIdleKeys`: a duration (streaming only, for kinds whose state would otherwise outlive its
 *    key: windows cut at rows, windows that never close): a key that has had no row for that long,
 *    on the aggregation's clock, is forgotten, and its rows no window took are routed as expired.
 */
final case class WindowOptions(timeUnit: Option[String] = None, emission: Emission = Emission.Final,
    lateRows: String = "count", time: String = "event", expireIdleKeys: Option[TimeSpan] = None) {
  def emit: String = emission.name
  def emitLateRows: Boolean = lateRows == "emit"
  def processingTime: Boolean = time == "processing"
  override def toString: String =
    (timeUnit.map(u => s"timeUnit=$u").toSeq ++ Seq(s"emit=$emit", s"lateRows=$lateRows") ++
      (if (processingTime) Seq("time=processing") else Nil) ++
      expireIdleKeys.map(e => s"expireIdleKeys=${e.spec}")).mkString(", ")

  /** The idle time after which a key is forgotten, in a streaming time column's ticks (microseconds). */
  def expireIdleKeysTicks: Option[Long] = expireIdleKeys.map(_.toTicks(TimeUnit.MICROSECONDS, "expireIdleKeys"))
}

object WindowOptions {
  val Keys = Seq("timeUnit", "emit", "lateRows", "time", "expireIdleKeys")

  /**
   * Options from name/value pairs (names as in `Keys`, case-insensitive, or snake_case); errors name
   * the bad one, and an option given twice, whose second value would silently win.
   */
  def from(pairs: Iterable[(String, String)]): WindowOptions = {
    val named = pairs.toSeq.map { case (key, v) =>
      val k = Option(key).map(_.trim).getOrElse(throw WindowAggException(WindowAggError.INVALID_OPTION, "a window option's name must not be null"))
      val canonical = Keys.find(_.equalsIgnoreCase(k.replace("_", ""))).getOrElse(k)
      (canonical, k, v)
    }
    named.groupBy(_._1).collectFirst { case (name, same) if same.length > 1 =>
      throw WindowAggException(WindowAggError.INVALID_OPTION,
        s"window option '$name' is given ${same.length} times (${same.map { case (_, k, v) => s"$k=$v" }.mkString(", ")}): give it once")
    }
    named.foldLeft(WindowOptions()) { case (o, (_, k, v)) => withOption(o, k, v) }
  }

  private def withOption(o: WindowOptions, k: String, v: String): WindowOptions = {
    val value = Option(v).map(_.trim).getOrElse(throw WindowAggException(WindowAggError.INVALID_OPTION, s"window option '$k' must not be null"))
    k.toLowerCase(Locale.ROOT) match {
      case "timeunit" | "time_unit" => o.copy(timeUnit = Some(value))
      case "emit" =>
        val emission =
          try Emission.parse(value)
          catch { case e: WindowError => throw WindowAggException(WindowAggError.INVALID_OPTION, e.message, e) }
        o.copy(emission = emission)
      case "laterows" | "late_rows" =>
        val l = value.toLowerCase(Locale.ROOT)
        if (l != "count" && l != "emit") throw WindowAggException(WindowAggError.INVALID_OPTION, s"lateRows must be 'count' or 'emit', got '$v'")
        o.copy(lateRows = l)
      case "time" =>
        val t = value.toLowerCase(Locale.ROOT)
        if (t != "event" && t != "processing") throw WindowAggException(WindowAggError.INVALID_OPTION, s"time must be 'event' or 'processing', got '$v'")
        o.copy(time = t)
      case "expireidlekeys" | "expire_idle_keys" =>
        val span =
          try TimeSpan.positive(TimeSpan.parse(value), "expireIdleKeys")
          catch { case e: WindowError => throw WindowAggException(WindowAggError.INVALID_OPTION, e.message, e) }
        o.copy(expireIdleKeys = Some(span))
      case other => throw WindowAggException(WindowAggError.INVALID_OPTION, s"unknown window option '$k'; known options: ${Keys.mkString(", ")}")
    }
  }

  /** SQL's last argument: a time unit ('seconds') or options ('emit=updates, lateRows=emit'). */
  def parse(text: String): WindowOptions =
    if (!text.contains("=")) WindowOptions(timeUnit = Some(text))
    else from(text.split(",").toSeq.filter(_.trim.nonEmpty).map { pair =>
      pair.split("=", 2) match {
        case Array(k, v) => (k, v)
        case _ => throw WindowAggException(WindowAggError.INVALID_OPTION, s"cannot read window option '$pair'; write name=value")
      }
    })
}
