package windowagg.spark.streaming

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.DataType

import windowagg.WindowDefinition
import windowagg.core.ResolvedWindows
import windowagg.spark.common.{AggregateBeforeShuffle, Emission, Engine, RowIntake, SparkAggregates, WindowAggError,
  WindowAggException}

/**
 * The streaming side of a kind of window: what it keeps per key in state and in which layout, how
 * its rows combine before the shuffle, which emissions it can honour, and, per task, how a key's
 * rows and timers become windows ([[KeyLogic]]). The one keyed processor ([[KeyedWindowProcessor]])
 * drives any of them. Chosen once per query, by [[StreamingKind.of]].
 */
private[spark] trait StreamingKind extends Serializable {
  /** The state layout this kind keeps, named and versioned ([[StreamingStartCheck]]). */
  def layout: StateLayout

  /** How the query's rows combine before the shuffle, and why (the planner's choice, in EXPLAIN). */
  def combine(spec: StreamingWindowSpec, mode: AggregateBeforeShuffle.Mode): Combine

  /**
   * The previous release's layout of this kind's state, when it had one, which a checkpoint it wrote
   * restarts from (converted key by key, [[PreviousLayouts]]).
   */
  def previousLayout: Option[PreviousLayout] = None

  /**
   * Whether an open window's bounds can change (sessions grow and merge; windows cut at rows shift
   * as their rows settle), so that a value emitted for bounds no window has any more is retracted
   * (update mode, early firing): a `retraction` column.
   */
  def retracts(windows: ResolvedWindows): Boolean = false

  /** Refuses, at analysis and naming why, an emission this kind cannot honour (`withViews`: Storm's views are asked for). */
  def check(definition: WindowDefinition, windows: ResolvedWindows, emission: Emission, withViews: Boolean): Unit = {
    if (!windows.everFinal && emission.emitsFinal) {
      throw WindowAggException(WindowAggError.INVALID_OPTION,
        s"$definition never closes, so no window would ever be final: use emit 'updates' (and the update output mode)")
    }
  }

  /**
   * Whether a key's state can outlive its rows (windows cut at rows wait for rows that may never
   * come; windows that never close never end), so that idle keys may be expired (expireIdleKeys).
   */
  def keepsIdleKeys(windows: ResolvedWindows): Boolean = !windows.everFinal

  /** One task's logic for its keys, over the state variables it declares in `states`, with each key's one timer kept by `timers`. */
  def open(spec: StreamingWindowSpec, tools: TaskTools, states: KeyStates, timers: Timers): KeyLogic

  /**
   * What the key `states` is set to holds (`read_state`), read with the processor's own decoders:
   * its open windows with their aggregate buffers, the rows it holds back and its timer.
   */
  def inspect(windows: ResolvedWindows, keyTypes: Seq[DataType], aggregates: SparkAggregates, states: KeyStates, key: InternalRow,
      out: KeyHolding): Unit
}

/** What one key holds, as [[StreamingKind.inspect]] reports it. */
private[spark] trait KeyHolding {
  /** A window not final yet, with its aggregate buffer (valid during the call only). */
  def window(start: Long, end: Long, buffer: InternalRow): Unit
  /** The key's rows kept whole: waiting for the watermark to order them, or to learn whether a window holds them. */
  def heldRows(count: Long): Unit
  /** The key's timer (ms): when the watermark passes it, the key is looked at again. */
  def timer(ms: Option[Long]): Unit
}

private[spark] object StreamingKind {
  def of(engine: Engine): StreamingKind = engine match {
    case _: Engine.Merging => Sessions
    case _: Engine.CutAtRows => CountedRows
    case _: Engine.Listed => PartialsByTime.Listed
    case _: Engine.OfTimes => PartialsByTime.OfTimes
  }

  private lazy val all: Seq[StreamingKind] = Seq(Sessions, CountedRows, PartialsByTime.Listed, PartialsByTime.OfTimes)

  /** The kind whose state layout is named `layout` (a checkpoint's record names it). */
  def withLayout(layout: String): Option[StreamingKind] = all.find(_.layout.name == layout)
}

/**
 * One task's processing of a kind's keys. Each call handles one key: its rows of a micro-batch
 * (the windows that became final first, then the rows, then the windows they changed), or its
 * timer; it reads the key's state, emits through `out`, and writes the state back with the key's next
 * timer in it, which [[Timers.move]] gives. A key the sweep gives may not be due: `onTimer` first
 * asks [[Timers.due]] with the timer the key's state keeps, and does nothing more if it is not.
 */
private[spark] trait KeyLogic {
  def onRows(key: InternalRow, rows: Iterator[Input], watermark: Long, out: Emitter): Unit
  def onTimer(key: InternalRow, watermark: Long, out: Emitter): Unit

  /**
   * Forgets an idle key (expireIdleKeys; only kinds that [[StreamingKind.keepsIdleKeys]]): settles it
   * up to `watermark` as a timer would, routes its rows that no window took as
   * [[windowagg.spark.common.NotWindowed.Expired]] and clears its state, its timer with it.
   */
  def expire(key: InternalRow, watermark: Long, out: Emitter): Unit =
    throw new IllegalStateException(s"${getClass.getName} keeps no idle keys to expire")

  /**
   * How many rows a piece combined before the shuffle stands for (in the kind's codec): the equal
   * rows a whole row came with, or a piece alone's rows where the kind counts them (else one).
   */
  def countOf(piece: Array[Byte]): Long = 1L
}

/**
 * One input row of a key, as the shuffle brought it, read in place (valid until the next). Either
 * a row whole (`whole`), which the definition windows ([[RowIntake]] classified it: `time`,
 * `partialTime` and `reach` are its), standing for `count` equal rows whose partial aggregate is
 * `piece` when they were combined (else null); or a piece of rows combined before the shuffle in the
 * kind's own codec (`whole` null).
 */
private[spark] final class Input(val intake: RowIntake) {
  var whole: UnsafeRow = _
  var piece: Array[Byte] = _
  var count: Long = 1L

  def time: Long = intake.time
  def partialTime: Long = intake.partialTime
  def reach: Long = intake.reach
  /** The row's windows where rows list them ([[windowagg.ListedWindows]]), else null. */
  def listedWindows: Array[Long] = intake.listedWindows
}
