package windowagg.spark.common

import java.time.ZoneId
import java.util.Locale
import java.util.concurrent.TimeUnit

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types._

import windowagg.Timeline

/**
 * How a time column's values map to the core's ticks: TIMESTAMP and TIMESTAMP_NTZ are
 * microseconds; an integral column is an epoch in the unit the query declares, which durations and
 * dates need (it is never assumed: a wrong guess would be off by 1000 without a sign). Windows of integral time come out as BIGINT.
 */
final case class TimeColumn(dataType: DataType, unit: Option[TimeUnit]) {
  /** The type of window_start and window_end. */
  def windowType: DataType = dataType match {
    case TimestampType | TimestampNTZType => dataType
    case _ => LongType
  }

  def isTimestamp: Boolean = dataType == TimestampType || dataType == TimestampNTZType

  /** The column as the core sees it: TIMESTAMP in `sessionZone`; TIMESTAMP_NTZ as local times; integral epochs in UTC. */
  def timeline(sessionZone: ZoneId): Timeline = dataType match {
    case TimestampType => Timeline.timestamp(sessionZone)
    case TimestampNTZType => Timeline.local
    case _ => Timeline.epoch(unit)
  }

  /** Reads the time at `ordinal` of a row as ticks (the caller checks for null first). */
  def reader(ordinal: Int): InternalRow => Long = dataType match {
    case TimestampType | TimestampNTZType | LongType => _.getLong(ordinal)
    case IntegerType => _.getInt(ordinal).toLong
    case ShortType => _.getShort(ordinal).toLong
    case ByteType => _.getByte(ordinal).toLong
    case other => throw new IllegalStateException(s"unsupported time type $other")
  }
}

object TimeColumn {
  val supportedTypes = "TIMESTAMP, TIMESTAMP_NTZ, or an integral epoch (TINYINT, SMALLINT, INT, BIGINT)"

  private val units: Map[String, TimeUnit] = Map(
    "microseconds" -> TimeUnit.MICROSECONDS, "microsecond" -> TimeUnit.MICROSECONDS, "us" -> TimeUnit.MICROSECONDS,
    "milliseconds" -> TimeUnit.MILLISECONDS, "millisecond" -> TimeUnit.MILLISECONDS, "ms" -> TimeUnit.MILLISECONDS,
    "seconds" -> TimeUnit.SECONDS, "second" -> TimeUnit.SECONDS, "s" -> TimeUnit.SECONDS)

  /** Validates a time column's type and unit; `description` names the column in errors. */
  def of(dataType: DataType, unit: Option[String], description: String): TimeColumn = {
    val integral = dataType match {
      case TimestampType | TimestampNTZType => false
      case ByteType | ShortType | IntegerType | LongType => true
      case other =>
        throw WindowAggException(WindowAggError.INVALID_TIME_COLUMN,
          s"time column $description has type ${other.sql}; it must be $supportedTypes" +
            (if (other == DateType) " (cast a DATE to TIMESTAMP)" else ""))
    }
    unit match {
      case Some(u) if !integral =>
        throw WindowAggException(WindowAggError.INVALID_TIME_COLUMN,
          s"a time unit ('$u') applies only to integral time columns; $description is ${dataType.sql}")
      case Some(u) =>
        val parsed = units.getOrElse(u.trim.toLowerCase(Locale.ROOT), throw WindowAggException(WindowAggError.INVALID_OPTION,
          s"unknown time unit '$u' for $description; use 'milliseconds', 'microseconds' or 'seconds'"))
        TimeColumn(dataType, Some(parsed))
      case None => TimeColumn(dataType, if (integral) None else Some(TimeUnit.MICROSECONDS))
    }
  }
}
