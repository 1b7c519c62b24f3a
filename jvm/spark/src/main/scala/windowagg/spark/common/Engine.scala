package windowagg.spark.common

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}

import windowagg.ListedWindows
import windowagg.core.{MergingWindows, ResolvedWindows, RowWindows}

/**
 * How windowagg runs a kind of window, chosen once from its resolved windows by [[Engine.of]]: swept
 * from per-time partials, listed by the rows themselves, merged as rows arrive (sessions), or cut at
 * rows (Storm's windows). The planner, the batch operator, the row intake and the streaming side ask
 * the engine what they need; [[Engine.of]] is the one place in jvm/spark that asks a resolved kind's
 * type (besides it only the table reader, `WindowsTable`, knows a definition's), and the streaming
 * side's choice of state layout (`StreamingKind.of`) reads the engine.
 */
sealed abstract class Engine extends Serializable {
  def windows: ResolvedWindows

  /** Where rows list their own windows (a column of the rows): the kind that checks them. */
  def listed: Option[ListedWindows.Resolved] = None

  /** Where windows grow and merge as rows arrive: the kind that merges them. */
  def merging: Option[MergingWindows] = None

  /** Where windows are cut at rows: the kind that cuts them. */
  def cutAtRows: Option[RowWindows] = None

  /**
   * Whether a window's rows are all of its key's rows from its first row's time to its last's, so
   * that it is one run of the key's rows in time order: windows that are spans of time. Not so for
   * windows cut at rows (rows of one time may fall in different windows) nor listed ones (a row
   * lists its own windows).
   */
  def windowsAreRunsOfRows: Boolean = cutAtRows.isEmpty && listed.isEmpty

  /**
   * Why rows cannot be aggregated before the shuffle, whatever the aggregates, if so; `perRowLength`
   * says whether the definition reads a length from each row (a session's gap).
   */
  def readsRowsOneByOne(perRowLength: Boolean): Option[String] = None

  /**
   * The order of a key's rows sharing a time: the tie-break column, then, where windows are cut at
   * rows, the aggregates' inputs (`inputs`) in binary form, so that every run cuts the same rows.
   */
  def tieOrder(tieBreak: Option[Expression], inputs: Seq[Attribute]): Seq[Expression] = tieBreak.toSeq
}

object Engine {
  def of(windows: ResolvedWindows): Engine = windows match {
    case merging: MergingWindows => Merging(merging)
    case rows: RowWindows => CutAtRows(rows)
    case listed: ListedWindows.Resolved => Listed(listed)
    case other => OfTimes(other)
  }

  /** Windows of the definition alone, swept from a key's partials by time (a time, or a slice of times). */
  final case class OfTimes(windows: ResolvedWindows) extends Engine

  /** Windows each row lists in a column ([[windowagg.ListedWindows]]), swept from partials by time. */
  final case class Listed(windows: ListedWindows.Resolved) extends Engine {
    override def listed: Option[ListedWindows.Resolved] = Some(windows)
  }

  /** Windows that grow and merge as rows arrive (sessions). */
  final case class Merging(windows: MergingWindows) extends Engine {
    override def merging: Option[MergingWindows] = Some(windows)
    override def readsRowsOneByOne(perRowLength: Boolean): Option[String] =
      Option.when(perRowLength)("each row of a session with a per-row gap is read on its own")
  }

  /** Windows cut at rows (Storm's count and duration windows): one partial per row, in a fixed order. */
  final case class CutAtRows(windows: RowWindows) extends Engine {
    override def cutAtRows: Option[RowWindows] = Some(windows)
    override def readsRowsOneByOne(perRowLength: Boolean): Option[String] = Some("Storm's windows are cut at rows")
    override def tieOrder(tieBreak: Option[Expression], inputs: Seq[Attribute]): Seq[Expression] =
      tieBreak.toSeq :+ PackedRow(inputs)
  }
}
