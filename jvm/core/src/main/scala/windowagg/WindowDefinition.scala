package windowagg

import windowagg.core.ResolvedWindows

/**
 * What windows exist, independent of any engine (the idea of Kafka's KIP-645): a value the user
 * builds once and hands to a windowed aggregation (`groupBy(window(ts, definition))`, the SQL
 * functions). Lengths stay in the user's terms until the time column, and with it the tick unit
 * and time zone, is known; `resolve` then checks them and returns what the engine drives.
 *
 * Built-in kinds implement this directly. The simplest way to add a kind of one's own is
 * [[EnumerableWindowDefinition]]: list the windows that contain a time.
 */
trait WindowDefinition extends Serializable {
  /** This definition against a time column: every length in the column's ticks, checked. */
  def resolve(timeline: Timeline): ResolvedWindows

  /**
   * A column this definition reads per row, as a length of time in the time column's terms (a
   * session's own gap), if any. Rows whose value is null or not positive are not windowed.
   */
  def rowLengthColumn: Option[String] = None

  /**
   * A column that orders rows sharing a time, for kinds whose windows cut between rows (count
   * windows). Rows still tied after it are ordered by the values the aggregates read.
   */
  def tieBreakColumn: Option[String] = None

  /**
   * Whether each row lists its own windows ([[ListedWindows]]): the aggregation then reads a listing,
   * the column this definition names or one given beside it.
   */
  def rowsListWindows: Boolean = false

  /** A column in which each row lists its own windows, where the definition names one ([[ListedWindows]]). */
  def listingColumn: Option[String] = None

  /** The definition in the `window_agg` spec grammar (see [[WindowSpec]]); it parses back to an equal definition. */
  def spec: String

  /**
   * What a streaming query's state depends on, recorded with its checkpoint and compared when it
   * restarts: the spec, and for windows read from data ([[TableWindows]]) that data too.
   */
  def stateIdentity: String = spec
}

/**
 * A window `[start, end)` in ticks of the time column: it holds the times t with start ≤ t < end,
 * as Kafka's `TimeWindow` and Spark's `window()`.
 */
final case class Window(start: Long, end: Long)

/**
 * A user-defined kind of windows (KIP-645's `EnumerableWindowDefinition`): for a time, the windows
 * that contain it, and an upper bound on their size, which bounds how long streaming state lives.
 * The engine sweeps such windows by slicing: one partial aggregate per distinct time, each window
 * combining the partials of its times, never a copy of a row per window.
 *
 * Implementations are shipped to Spark's executors, so they must be serializable (this trait is)
 * and deterministic. From Python and SQL a class is named with its parameters; it then needs a
 * public constructor taking a `java.util.Map[String, String]` of them, or none when it takes none.
 * Wrap an instance in [[CustomWindows]] to give it a grace period.
 */
trait EnumerableWindowDefinition extends WindowDefinition {
  /**
   * Every window that contains `time` (ticks of `timeline`), each with start ≤ time < end and
   * end − start ≤ `maxSize(timeline)`; none for a time the kind leaves out (such rows are counted,
   * not aggregated). No window may be listed for some of its times and not others.
   */
  def windowsFor(time: Long, timeline: Timeline): java.util.List[Window]

  /** An upper bound on end − start of any window, in ticks of `timeline`. */
  def maxSize(timeline: Timeline): Long

  override def resolve(timeline: Timeline): ResolvedWindows = CustomWindows.of(this).resolve(timeline)

  /** `custom <class name>`; a kind with parameters says them, `custom com.example.Kind(name=value, ...)`. */
  override def spec: String = s"custom ${getClass.getName}"
}
