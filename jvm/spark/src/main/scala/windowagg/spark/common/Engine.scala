package windowagg.spark.common

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, BinaryExpression, Expression, GenericInternalRow,
  NamedExpression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types.{DataType, LongType}

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

  /**
   * Before the shuffle in batch ([[AggregateBeforeShuffle.plan]]), what rows group by after their
   * keys: the time a row is aggregated under (a slice, or its time; null for a null time), and where
   * rows list their windows (`listing`), those windows.
   */
  def partialTime(time: Expression, keys: Seq[Expression], listing: Option[Attribute]): (Expression, Option[NamedExpression]) =
    if (windows.perKey) (PartialTimeOfKey(time, keys, windows), None) else (PartialTimeOf(time, windows), None)
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

    // a time's windows must be the same wherever it occurs (the operator compares those of partials
    // of one time); windows that do not overlap are grouped by their end, a fixed-width key
    override def partialTime(time: Expression, keys: Seq[Expression], listing: Option[Attribute]): (Expression, Option[NamedExpression]) =
      listing match {
        case Some(l) => (PartialTimeOfListed(time, l, windows), Some(if (windows.disjoint) Alias(ListedWindowEnd(l), "_window_end")() else l))
        case None => super.partialTime(time, keys, listing)
      }
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

/**
 * [[PartialTimeOf]] where rows list their own windows ([[ListedWindows]]): the row's time, or where
 * windows do not overlap the start of its one window; rows in no window share one partial time
 * (Long.MinValue). The listed windows are checked here, where the row's own time is known.
 */
case class PartialTimeOfListed(time: Expression, listing: Expression, windows: ListedWindows.Resolved)
    extends BinaryExpression with CodegenFallback {
  override def left: Expression = time
  override def right: Expression = listing
  override def dataType: DataType = LongType
  override def nullable: Boolean = time.nullable

  @transient private lazy val input = new GenericInternalRow(1)

  override def eval(row: InternalRow): Any = {
    val t = time.eval(row)
    if (t == null) null
    else {
      val at = t.asInstanceOf[Number].longValue
      input.update(0, listing.eval(row))
      val listed = RowIntake.listedWindows(input, 0, at, windows)
      if (listed.length == 0) Long.MinValue else windows.partialTime(at, listed)
    }
  }

  override def toString: String = s"partial_time($time, $listing)"
  override protected def withNewChildrenInternal(newLeft: Expression, newRight: Expression): PartialTimeOfListed =
    copy(time = newLeft, listing = newRight)
}

/**
 * The end of the one window a row lists, where listed windows do not overlap, or null for none: with
 * the partial time (the window's start) it stands for the row's windows after the shuffle.
 */
case class ListedWindowEnd(listing: Expression) extends UnaryExpression with CodegenFallback {
  override def child: Expression = listing
  override def dataType: DataType = LongType
  override def nullable: Boolean = true

  override def eval(row: InternalRow): Any = {
    val windows = listing.eval(row).asInstanceOf[ArrayData]
    if (windows == null || windows.numElements() == 0 || windows.isNullAt(0)) null
    else windows.getStruct(0, 2).getLong(1) // checked with the partial time, which reads the same listing
  }

  override def toString: String = s"window_end($listing)"
  override protected def withNewChildInternal(newChild: Expression): ListedWindowEnd = copy(listing = newChild)
}
