package windowagg.spark.common

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{CalendarIntervalType, DataType, DayTimeIntervalType, LongType}

import windowagg.ListedWindows
import windowagg.core.{ResolvedWindows, WindowError}

/**
 * Why a row is in no window: one vocabulary for the batch operator's SQL metrics, the `late_reason`
 * of the rows a streaming aggregation routes aside, and the columns of its observed metrics.
 */
sealed abstract class NotWindowed(val reason: String, val metric: String, val observed: String, val description: String)

object NotWindowed {
  case object NullTime extends NotWindowed("null time", "nullTimeRows", "null_time_rows", "rows with a null time (not windowed)")
  case object InvalidGap extends NotWindowed("invalid gap", "invalidGapRows", "invalid_gap_rows",
    "rows with a null or non-positive session gap (not windowed)")
  case object NoWindow extends NotWindowed("no window", "unwindowedRows", "unwindowed_rows",
    "rows in no window of the definition (not windowed)")
  /** Streaming only: every window that could hold the row was final when it arrived. */
  case object Late extends NotWindowed("late", "lateRows", "late_rows", "rows after every window that could hold them was final")
  /** Streaming only: the row's key was forgotten after being idle (`expireIdleKeys`) before a window took the row. */
  case object Expired extends NotWindowed("expired", "expiredRows", "expired_rows",
    "rows of keys forgotten as idle (expireIdleKeys) before any window took them")

  /** What a batch aggregation can leave out (a batch has no watermark: no row is late, and no key expires). */
  val inBatch: Seq[NotWindowed] = Seq(NullTime, InvalidGap, NoWindow)
  val inStreaming: Seq[NotWindowed] = Late +: inBatch :+ Expired
}

/**
 * Reads a row's time, and its reach where the definition reads a length per row (sessions with a
 * dynamic gap), and says whether the definition windows it: the one place rows are classified, for
 * the batch operator, the streaming processors and the aggregation before the shuffle. After
 * `classify` returns null, `time`, `partialTime` and `reach` describe the row.
 */
final class RowIntake(definitionWindows: ResolvedWindows, timeColumn: TimeColumn, timeOrdinal: Int, gapOrdinal: Option[Int],
    gapType: Option[DataType], listingColumn: Option[(Int, DataType)] = None) {
  private var windows = definitionWindows
  // where rows list their own windows: the kind that checks them, and the column they are in
  private val listed = Engine.of(definitionWindows).listed.orNull
  require((listed == null) == listingColumn.isEmpty, "listed windows are read from their column, and only they")
  private val listing = listingColumn.fold(-1)(_._1)
  // partials of windows that do not overlap carry their window's end ([[AggregateBeforeShuffle.Partials]])
  private val listingIsEnd = listingColumn.exists(_._2 == LongType)
  private val readTime = timeColumn.reader(timeOrdinal)
  private val reachOf = RowIntake.reachOf(windows, gapOrdinal, gapType)
  private val readsGap = gapOrdinal.isDefined
  // whether the definition has windows for the partial time last asked about (asked once per partial time)
  private var heldTime = 0L
  private var held = false
  private var heldKnown = false

  var time: Long = 0L
  var partialTime: Long = 0L
  var reach: Long = 0L
  /** The row's windows as pairs (start, end), where rows list them ([[ListedWindows]]); null otherwise. */
  var listedWindows: Array[Long] = null

  /** Classifies the rows that follow by `keyWindows`: their key's own windows, where each key has its own. */
  def use(keyWindows: ResolvedWindows): Unit = if (keyWindows ne windows) {
    windows = keyWindows
    heldKnown = false
  }

  /** Null when the definition windows `row` (then `time`, `partialTime` and `reach` are its), else why it does not. */
  def classify(row: InternalRow): NotWindowed =
    if (row.isNullAt(timeOrdinal)) NotWindowed.NullTime
    else {
      time = readTime(row)
      reach = reachOf(row, time)
      // only a row's own gap makes NoReach: otherwise it is the reach of a row at Long.MinValue
      if (readsGap && reach == RowIntake.NoReach) NotWindowed.InvalidGap
      else if (listed != null) {
        listedWindows =
          if (!listingIsEnd) RowIntake.listedWindows(row, listing, time, listed)
          else if (row.isNullAt(listing)) Array.emptyLongArray
          else listed.checked(time, Array(time, row.getLong(listing)))
        partialTime = listed.partialTime(time, listedWindows)
        if (listedWindows.length == 0) NotWindowed.NoWindow else null
      } else {
        partialTime = windows.partialTime(time)
        if (holds(partialTime)) null else NotWindowed.NoWindow
      }
    }

  /** Whether the definition has a window for records aggregated under `partialTime`. */
  def holds(partialTime: Long): Boolean = {
    if (!heldKnown || partialTime != heldTime) {
      held = windows.holds(partialTime)
      heldTime = partialTime
      heldKnown = true
    }
    held
  }
}

/**
 * The windows of each key: the definition's, or where each key has its own ([[windowagg.core.ResolvedWindows.perKey]])
 * the key's, by its grouping values (`keyTypes` in order). Each key's are looked up once and kept
 * (up to [[WindowsOfKey.MaxKept]] keys), as rows before the shuffle come in no key order.
 */
final class WindowsOfKey(windows: ResolvedWindows, keyTypes: Seq[DataType]) {
  private val kept = new java.util.HashMap[UnsafeRow, ResolvedWindows]()
  private lazy val toUnsafe = UnsafeProjection.create(keyTypes.toArray)

  def apply(key: InternalRow): ResolvedWindows =
    if (!windows.perKey) windows
    else {
      val row = key match {
        case u: UnsafeRow => u
        case other => toUnsafe(other)
      }
      val found = kept.get(row)
      if (found != null) found
      else {
        if (kept.size >= WindowsOfKey.MaxKept) kept.clear()
        val copy = row.copy()
        val ofKey = windows.ofKey(keyTypes.indices.map(i => copy.get(i, keyTypes(i))))
        kept.put(copy, ofKey)
        ofKey
      }
    }
}

object WindowsOfKey {
  /** Keys whose windows a task keeps looked up: beyond, it starts again (a lookup costs one hash of the key's values). */
  val MaxKept = 100000
}

object RowIntake {
  /** The reach of a row whose own session gap is null or not positive: the row is not windowed. */
  val NoReach: Long = Long.MinValue

  /**
   * The windows a row at `time` lists in its column at `ordinal` (an array of structs (start, end)),
   * as pairs (start, end), checked by `kind`; none for a null array.
   */
  def listedWindows(row: InternalRow, ordinal: Int, time: Long, kind: ListedWindows.Resolved): Array[Long] =
    if (row.isNullAt(ordinal)) Array.emptyLongArray
    else {
      val array = row.getArray(ordinal)
      val pairs = new Array[Long](2 * array.numElements())
      var i = 0
      while (i < array.numElements()) {
        val window = if (array.isNullAt(i)) null else array.getStruct(i, 2)
        if (window == null || window.isNullAt(0) || window.isNullAt(1)) {
          throw WindowError(s"the windows listed for ${kind.timeline.format(time)} include a null window or bound; list no window instead")
        }
        pairs(2 * i) = window.getLong(0)
        pairs(2 * i + 1) = window.getLong(1)
        i += 1
      }
      kind.checked(time, pairs)
    }

  /**
   * How far a row keeps its window open (the kind's reach: sessions' t + gap), or [[NoReach]] when
   * the row's own length (a per-row session gap) is null or not positive; without a per-row length,
   * NoReach is a real reach (a row at Long.MinValue). A plain method on longs: it runs for every
   * input row, so nothing is boxed.
   */
  trait RowReach extends Serializable {
    def apply(row: InternalRow, time: Long): Long
  }

  def reachOf(windows: ResolvedWindows, lengthOrdinal: Option[Int], lengthType: Option[DataType]): RowReach =
    (lengthOrdinal, lengthType) match {
      case (Some(ordinal), Some(dataType)) =>
        val readLength: InternalRow => Long = dataType match {
          case _: DayTimeIntervalType => _.getLong(ordinal) // microseconds, the ticks of a timestamp
          case CalendarIntervalType => row => {
            val i = row.getInterval(ordinal) // months have no fixed length: such a length counts as invalid
            if (i.months != 0) -1L
            else
              try Math.addExact(Math.multiplyExact(i.days.toLong, 86400000000L), i.microseconds)
              catch { case _: ArithmeticException => if (i.days > 0) Long.MaxValue else -1L } // beyond every time, not wrapped
          }
          case other => TimeColumn(other, None).reader(ordinal)
        }
        (row, t) =>
          if (row.isNullAt(ordinal)) NoReach
          else {
            val length = readLength(row)
            if (length <= 0) NoReach else windows.reach(t, length)
          }
      case _ => (_, t) => windows.reach(t, 0L)
    }
}
