package windowagg.spark.streaming

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeMap, AttributeReference, AttributeSet, Expression,
  GenericInternalRow, JoinedRow, Literal, UnsafeArrayData, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, AggregateFunction, Count, Partial}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{BinaryType, DataType, LongType}
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.core.{ResolvedWindows, WindowFinality}
import windowagg.spark.common.{AggregateBeforeShuffle, Engine, NotWindowed, OpenWindows, PackedRow, SparkAggregates, WindowsOfKey}

/**
 * The kinds swept from per-time partials (sliding, tumbling, hopping, cumulative, calendar,
 * unlimited, user-defined) in streaming.
 *
 * State per key, one entry in steady state: the key's [[PartialsByTime.Progress]], which holds the
 * point `finalBefore` below which every window is final, the one event-time timer (at the last tick
 * of the next window to become final), the rows waiting to learn whether a window holds them, and
 * [[PartialBlocks]] (one partial aggregate per partial time, a distinct time or the kind's slice, in
 * blocks of partials kept as UnsafeRow bytes): the blocks' keys, and the block itself when it is
 * the key's only one; a key with more keeps them in a map of its own. Windows come from the kind's cursor over
 * the partials, as in batch; blocks no open window can need are dropped, so state stays within the
 * kind's largest span + grace, and where every window still to come holds a span of old partials
 * whole (cumulative windows' period so far: [[windowagg.core.ResolvedWindows.foldable]]) they are folded
 * into one, so a sweep does not read every step since the period began. A micro-batch reads a key's
 * blocks only when one of its windows has become final (or to emit changes), and otherwise only the
 * blocks its new rows fall in. The changes it reports to the emission policy are partial times: the
 * open windows they change are the ones the policy asks for ([[windowagg.spark.common.OpenWindows]]).
 *
 * Where rows list their own windows ([[windowagg.ListedWindows]], `listed`), each partial keeps
 * its windows in its block (a layout of its own), and finality asks them instead of the kind: a
 * row is late once its latest listed window is final.
 *
 * Before the shuffle, rows certain to be in a window combine per (key, partial time) through
 * Spark's partial aggregation ([[PartialsByTime.PartialsBeforeShuffle]]), and where rows list their windows per
 * those windows too; the pieces are its partials.
 */
private[spark] final class PartialsByTime private (listed: Boolean) extends StreamingKind {
  import PartialsByTime._

  override val layout: StateLayout = if (listed) ListedLayout else TimesLayout

  override def combine(spec: StreamingWindowSpec, mode: AggregateBeforeShuffle.Mode): Combine = {
    val choice = AggregateBeforeShuffle.choose(mode, spec.engine, spec.functions, perRowLength = false)
    if (spec.processingTime) Combine.none("processing time: every row is in its micro-batch's windows")
    else if (spec.expireIdleAfter.isDefined) Combine.none("idle keys expire by their rows' times, which combined rows do not keep")
    else if (spec.withViews) Combine.none("Storm's window view reads rows")
    else if (choice.aggregated) PartialsBeforeShuffle(choice.why)
    else Combine.none(choice.why)
  }

  override def previousLayout: Option[PreviousLayout] = if (listed) None else Some(PreviousLayouts.PartialsByTime2)

  override def open(spec: StreamingWindowSpec, tools: TaskTools, states: KeyStates, timers: Timers): KeyLogic =
    new Logic(spec, tools, states, timers)

  /** The windows not final yet over the key's partials (the cursor's, as the processor's), and its pending rows. */
  override def inspect(windows: ResolvedWindows, keyTypes: Seq[DataType], aggregates: SparkAggregates, states: KeyStates,
      key: InternalRow, out: KeyHolding): Unit = {
    val stored = states.value(ProgressVariable).get()
    if (stored != null) {
      val progress = Progress.decode(stored)
      val finality = new WindowFinality(new WindowsOfKey(windows, keyTypes)(key))
      val listedKind = Engine.of(windows).listed
      val blocks = new PartialBlocks(states.map(BlocksVariable), progress.blockStarts,
        progress.inline, aggregates, listedKind)
      val oldest = finality.oldestNeeded(progress.finalBefore)
      val times = blocks.from(oldest).map(_.time).toArray
      finality.windowsChangedBy(blocks.from(oldest), aggregates, progress.finalBefore, times)(out.window)
      out.heldRows(progress.pending.length.toLong)
      out.timer(progress.timer)
    }
  }
}

private[spark] object PartialsByTime {
  /**
   * Spark's partial aggregation per (key, partial time) of the rows certain to be in a window, after
   * [[StreamingIntakeExec]] sends the uncertain rows whole; the pieces are this kind's partials
   * ([[StreamingWindowSpec.partialAttributes]]).
   */
  final case class PartialsBeforeShuffle(override val why: String) extends Combine(why) {
    override def name: String = "partials aggregated before the shuffle"

    override def plan(node: CombineBeforeShuffle, child: SparkPlan): SparkPlan = {
      val spec = node.spec
      val values = child.output.take(spec.valueAttributes.length)
      val partialTime = AttributeReference("_partial_time", LongType)()
      val uncertain = AttributeReference("_uncertain_row", BinaryType)()
      // where rows list their windows, the certain rows' windows: a partial time's must be the same
      val listed = spec.pieceWindowsType.map(AttributeReference("_listed_windows", _)())
      // the spec's aggregates read its value attributes: here, the child's (the optimizer may have
      // renamed them, e.g. removing an alias of a file source's columns)
      val asChild = AttributeMap(spec.valueAttributes.zip(values))
      def onChild(e: Expression): Expression = e.transform { case a: Attribute => asChild.getOrElse(a, a) }
      val aggregates = (Count(Literal(1)) +: spec.functions).zip(Literal.TrueLiteral +: spec.filters).map { case (f, filter) =>
        AggregateExpression(onChild(f).asInstanceOf[AggregateFunction], Partial, isDistinct = false,
          Option(filter).filterNot(_ == Literal.TrueLiteral).map(onChild))
      }
      // the intake passes on only the columns the aggregation reads: an uncertain row's values go packed
      val read = AttributeSet(node.keys ++ aggregates.flatMap(_.references))
      val intake = StreamingIntakeExec(spec, node.keys, child.output.filter(read.contains), partialTime, uncertain, listed, child)
      val groups = node.keys ++ Seq(partialTime, uncertain) ++ listed
      val aggregated = SparkInternals.partialAggregate(groups, aggregates, intake)
      val out = aggregated.output
      val at = node.keys.length
      // the piece: partial time, row count, buffers, windows ([[StreamingWindowSpec.partialAttributes]])
      ProjectExec(out.take(at) ++ Seq(
        Alias(out(at + 1), node.whole.name)(exprId = node.whole.exprId),
        Alias(PackedRow(out(at) +: out.drop(groups.length) ++: out.slice(at + 2, groups.length)), node.piece.name)(
          exprId = node.piece.exprId)), aggregated)
    }
  }

  /**
   * Version 1 (0.1.0, 0.2.0) kept one state entry per partial time and separate `finalBefore` and
   * timer entries; version 2 (0.3.0) kept a key's progress (no pending rows) and its blocks (every
   * one in the map) in variables of the key's own group, with a timer of Spark's per key, and
   * converts to this one ([[PreviousLayouts.PartialsByTime2]]); versions 3 to 6 were builds of
   * 0.4.0 never released; version 7 keeps a key's state in entries of the processor's one state
   * map ([[StateEntries]]), its timer in its progress and nowhere else (`Timers` files the key by it).
   */
  private val TimesLayout = StateLayout("partials by time", 7)
  /**
   * The blocks of "partials by time" with each partial's windows; versions 1 to 4 were builds of
   * 0.4.0 never released, version 5 keeps a key's state in entries of the processor's one state map,
   * its timer in its progress.
   */
  private val ListedLayout = StateLayout("listed partials by time", 5)
  val ProgressVariable = "progress"
  val BlocksVariable = "blocks"
  // the two kinds come after the layouts they read: an object's fields are set in order
  /** The kinds whose windows come from the definition. */
  val OfTimes = new PartialsByTime(listed = false)
  /** Windows each row lists ([[windowagg.ListedWindows]]). */
  val Listed = new PartialsByTime(listed = true)

  /** A row kept whole until it is known whether some window holds it (`certainlyHeldUntil`). */
  final case class PendingRow(time: Long, bytes: Array[Byte]) {
    def value(fields: Int): UnsafeRow = {
      val row = new UnsafeRow(fields)
      row.pointTo(bytes, bytes.length)
      row
    }
  }

  /**
   * A key's progress, kept as one state entry read and written once per micro-batch: `finalBefore`,
   * the timer and the block starts (8 bytes each); the inline block (`inline`, the key's only block,
   * or null) and the pending rows, each one's time, length and bytes; then the inline block's length
   * and the number of block starts (4 bytes each).
   */
  final class Progress(var finalBefore: Long, var timerMs: Long, var blockStarts: Array[Long], var inline: Array[Byte],
      var pending: Vector[PendingRow]) {
    def timer: Option[Long] = if (timerMs == Progress.NoTimer) None else Some(timerMs)

    def encode: Array[Byte] = {
      val inlineLength = if (inline == null) 0 else inline.length
      val pendingBytes = pending.map(12 + _.bytes.length).sum
      val out = ByteBuffer.allocate(16 + 8 * blockStarts.length + inlineLength + pendingBytes + 8)
      out.putLong(finalBefore).putLong(timerMs)
      blockStarts.foreach(out.putLong)
      if (inline != null) out.put(inline)
      pending.foreach(r => out.putLong(r.time).putInt(r.bytes.length).put(r.bytes))
      out.putInt(inlineLength).putInt(blockStarts.length)
      out.array()
    }
  }

  object Progress {
    val NoTimer: Long = Long.MinValue

    def empty: Progress = new Progress(Long.MinValue, NoTimer, Array.emptyLongArray, null, Vector.empty)

    def decode(bytes: Array[Byte]): Progress = {
      val in = ByteBuffer.wrap(bytes)
      val end = bytes.length - 8
      val finalBefore = in.getLong()
      val timerMs = in.getLong()
      val starts = Array.fill(in.getInt(end + 4))(in.getLong())
      val inlineLength = in.getInt(end)
      val inline = if (inlineLength == 0) null else {
        val block = new Array[Byte](inlineLength)
        in.get(block)
        block
      }
      val pending = Vector.newBuilder[PendingRow]
      while (in.position() < end) {
        val time = in.getLong()
        val row = new Array[Byte](in.getInt())
        in.get(row)
        pending += PendingRow(time, row)
      }
      new Progress(finalBefore, timerMs, starts, inline, pending.result())
    }
  }

  private final class Logic(spec: StreamingWindowSpec, tools: TaskTools, states: KeyStates, timers: Timers) extends KeyLogic {
    private val aggregates = tools.aggregates
    private val blockState: Entries[Long, Array[Byte]] = states.map(BlocksVariable)
    private val progressState = states.value(ProgressVariable)
    // the windows of the key at hand (each key's own, for per-key windows), set as each call starts
    private val keyWindows = new WindowsOfKey(spec.windows, spec.keySchema.map(_.dataType))
    private var windows = spec.windows
    private var finality = new WindowFinality(windows)
    private def forKey(key: InternalRow): Unit = {
      val ofKey = keyWindows(key)
      if (ofKey ne windows) {
        windows = ofKey
        finality = new WindowFinality(ofKey)
      }
    }
    private val values = spec.valueAttributes.length
    // where rows list their windows: the kind that checks them (listed windows are never per key)
    private val listed = spec.engine.listed
    // a piece: Spark's partial of rows combined before the shuffle ([[StreamingWindowSpec.partialAttributes]])
    private val piece = new UnsafeRow(spec.partialAttributes.length)

    override def countOf(bytes: Array[Byte]): Long = {
      piece.pointTo(bytes, bytes.length)
      piece.getLong(1)
    }

    override def onRows(key: InternalRow, rows: Iterator[Input], watermark: Long, out: Emitter): Unit = {
      forKey(key)
      val progress = readProgress()
      val blocks = new PartialBlocks(blockState, progress.blockStarts, progress.inline, aggregates, listed)
      // Windows that became final before these rows arrived are closed first: rows behind the
      // watermark may only change windows that are still open.
      var nextEnd = finalizeUpTo(watermark, progress, blocks, out)

      val fresh = mutable.LongMap.empty[InternalRow]
      // where rows list their windows, each new partial's (partials of one time must list the same)
      val freshWindows = mutable.LongMap.empty[Array[Long]]
      def into(partialTime: Long, listedWindows: Array[Long]): InternalRow = {
        listed.foreach { kind =>
          freshWindows.get(partialTime) match {
            case Some(seen) => kind.checkSame(partialTime, seen, listedWindows)
            case None => freshWindows.update(partialTime, listedWindows)
          }
        }
        fresh.getOrElseUpdate(partialTime, aggregates.newEmpty())
      }
      rows.foreach { in =>
        if (in.whole != null) {
          val t = in.time
          val listedWindows = in.listedWindows
          if (finality.isLate(t, listedWindows, watermark)) out.notWindowed(in.whole, NotWindowed.Late, in.count)
          else {
            if (in.piece == null) aggregates.update(into(in.partialTime, listedWindows), in.whole)
            else {
              piece.pointTo(in.piece, in.piece.length)
              tools.partials.update(into(in.partialTime, listedWindows), piece)
            }
            // only later rows can make a window hold it: kept until every window that could is final
            if (finality.certainlyHeldUntil(t, listedWindows) < watermark) {
              val kept = PendingRow(t, in.whole.copy().getBytes)
              progress.pending ++= Iterator.fill(in.count.toInt)(kept)
            }
          }
        } else {
          // pieces hold only rows certain to be in a window at the micro-batch's watermark
          piece.pointTo(in.piece, in.piece.length)
          val partialTime = piece.getLong(0)
          val listedWindows = spec.windowsOfPiece(piece)
          if (finality.certainlyHeldUntil(partialTime, listedWindows) < watermark) {
            throw new IllegalStateException(s"rows at $partialTime were combined before the shuffle as certain to be in a " +
              s"window, but the watermark is $watermark")
          }
          tools.partials.update(into(partialTime, listedWindows), piece)
        }
      }
      var changed = Array.emptyLongArray
      if (fresh.nonEmpty) {
        changed = fresh.keys.toArray
        java.util.Arrays.sort(changed)
        blocks.add(changed, changed.map(fresh), if (listed.isDefined) changed.map(freshWindows) else null,
          keep = finality.oldestNeeded(progress.finalBefore))
        // the first of the new partials' windows to close (a kind that lists a time's windows knows
        // it; others give the time, a lower bound), and an open one at or after the watermark: the
        // key's timer is set once per window, and a timer fired early finds the real next end
        val firstClose = changed.iterator.map(windows.firstClosesAt).min
        nextEnd = Some(math.min(nextEnd.getOrElse(Long.MaxValue), math.max(firstClose, watermark)))
        if (out.wantsChanges) {
          finality.windowsChangedBy(blocks.from(finality.oldestNeeded(progress.finalBefore)), aggregates, watermark, changed) {
            (s, e, p) => out.changed(s, e, p)
          }
        }
      }
      val fireAt = out.fire(watermark, changed, openWindows(progress, blocks, watermark))
      save(progress, blocks, (nextEnd ++ fireAt).minOption)
    }

    override def onTimer(key: InternalRow, watermark: Long, out: Emitter): Unit = {
      forKey(key)
      val progress = readProgress()
      if (!timers.due(progress.timer)) return
      val blocks = new PartialBlocks(blockState, progress.blockStarts, progress.inline, aggregates, listed)
      val nextEnd = finalizeUpTo(watermark, progress, blocks, out)
      progress.timerMs = Progress.NoTimer // the fired timer is gone
      val fireAt = out.fire(watermark, Array.emptyLongArray, openWindows(progress, blocks, watermark))
      save(progress, blocks, (nextEnd ++ fireAt).minOption)
    }

    override def expire(key: InternalRow, watermark: Long, out: Emitter): Unit = {
      forKey(key)
      val progress = readProgress()
      val blocks = new PartialBlocks(blockState, progress.blockStarts, progress.inline, aggregates, listed)
      finalizeUpTo(watermark, progress, blocks, out)
      // rows still waiting to learn whether a window holds them never will
      progress.pending.foreach(r => out.notWindowed(r.value(values), NotWindowed.Expired, 1L))
      blocks.clear()
      blocks.flush()
      progressState.clear()
    }

    /**
     * Emits the windows ending in [finalBefore, watermark) as final, routes the pending rows that no
     * window held once every window that could is final, drops blocks no open window needs, and
     * returns the end of the next window to become final (or the time a pending row is settled).
     * The key's timer says when that is, so the blocks are read only if a window is due.
     */
    private def finalizeUpTo(watermark: Long, progress: Progress, blocks: PartialBlocks, out: Emitter): Option[Long] = {
      val from = progress.finalBefore
      val pending = progress.timer.map(timers.timerEnd)
      if (watermark <= from) return pending
      // the timer is at or before the next window's last tick: until the watermark passes it, no window is due
      if (pending.forall(_ >= watermark)) {
        progress.finalBefore = watermark
        return pending
      }
      val next = finality.windowsEndingIn(blocks.from(finality.oldestNeeded(from)), aggregates, from, watermark) { (s, e, p) =>
        out.finalWindow(s, e, p)
        if (progress.pending.nonEmpty) {
          val last = windows.lastTick(e)
          progress.pending = progress.pending.filterNot(r => s <= r.time && r.time <= last)
        }
      }
      progress.finalBefore = watermark
      val (settled, waiting) = progress.pending.partition(r => windows.closesAt(r.time) < watermark)
      settled.foreach(r => out.notWindowed(r.value(values), NotWindowed.NoWindow, 1L))
      progress.pending = waiting
      // With no window left to close, the partials wait only for rows that could still join them:
      // none once the latest one is late, so the key's state goes (its timer is set for then).
      val wakeUp = (next ++ waiting.map(r => windows.closesAt(r.time))).minOption
        .orElse(blocks.lastCloses(finality).filter(_ >= watermark))
      if (wakeUp.isEmpty) blocks.clear()
      else {
        blocks.dropBefore(finality.oldestNeeded(watermark))
        finality.foldable(watermark).foreach { case (start, until) => blocks.fold(start, until) }
      }
      wakeUp
    }

    /** The key's open windows, as its blocks hold them, for the emission policy. */
    private def openWindows(progress: Progress, blocks: PartialBlocks, watermark: Long): OpenWindows = new OpenWindows {
      override def isEmpty: Boolean = blocks.isEmpty
      override def holding(marks: Array[Long])(f: (Long, Long, InternalRow) => Unit): Unit =
        finality.windowsChangedBy(blocks.from(finality.oldestNeeded(progress.finalBefore)), aggregates, watermark, marks)(f)
    }

    /**
     * Writes the changed blocks and the key's progress with its one timer at the expiry of `wakeAt`.
     * A key with no partials left keeps no state: its next rows start from the watermark they meet.
     */
    private def save(progress: Progress, blocks: PartialBlocks, wakeAt: Option[Long]): Unit = {
      blocks.flush()
      val wanted = if (blocks.isEmpty) None else wakeAt.map(timers.expiryMs)
      progress.timerMs = timers.move(progress.timer, wanted).getOrElse(Progress.NoTimer)
      if (blocks.isEmpty) progressState.clear()
      else {
        progress.blockStarts = blocks.blockStarts
        progress.inline = blocks.inlineBlock
        progressState.update(progress.encode)
      }
    }

    // one read: get() is null for a key without state, where exists() and get() would read twice
    private def readProgress(): Progress = Option(progressState.get()).map(Progress.decode).getOrElse(Progress.empty)
  }
}

/**
 * Before Spark's partial aggregation in streaming: for each row, its partial time when it cannot be
 * late and is certain to be in a window at the micro-batch's watermark (and where rows list their
 * windows, those in `listed`, [[StreamingWindowSpec.pieceWindowsType]]), else its values packed
 * whole (rows with a null time or in no window too), so that the aggregation combines the former
 * and carries the latter through as they are. Of the child's columns it passes on only `carried`,
 * those the keys and the partial aggregates read.
 */
case class StreamingIntakeExec(spec: StreamingWindowSpec, keys: Seq[Attribute], carried: Seq[Attribute], partialTime: Attribute,
    uncertain: Attribute, listed: Option[Attribute], child: SparkPlan) extends UnaryExecNode {

  override def output: Seq[Attribute] = carried ++ Seq(partialTime, uncertain) ++ listed
  override def producedAttributes: AttributeSet = AttributeSet(Seq(partialTime, uncertain) ++ listed)
  override def outputPartitioning: Partitioning = child.outputPartitioning match {
    case p: Expression if !p.references.subsetOf(outputSet) => UnknownPartitioning(child.outputPartitioning.numPartitions)
    case p => p
  }

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "combinedRows" -> SQLMetrics.createMetric(sparkContext, "rows combined by partial time"),
    "wholeRows" -> SQLMetrics.createMetric(sparkContext, "rows sent whole (may be late, or in no window)"))

  override protected def withNewChildInternal(newChild: SparkPlan): StreamingIntakeExec = copy(child = newChild)

  override protected def doExecute(): RDD[InternalRow] = {
    val watermark = CombineBeforeShuffle.batchWatermark(sparkContext, spec)
    val (spec_, keys_, childOutput, carried_) = (spec, keys, child.output, carried)
    val added = Seq(partialTime, uncertain) ++ listed
    val (combined, sentWhole) = (longMetric("combinedRows"), longMetric("wholeRows"))
    val windowsType = listed.map(_.dataType)
    child.execute().mapPartitions { rows =>
      val intake = spec_.intake
      // per-key windows: each row's key picks them
      val keyWindows = new WindowsOfKey(spec_.windows, keys_.map(_.dataType))
      val keyOf = if (spec_.windows.perKey) Some(UnsafeProjection.create(keys_, childOutput)) else None
      val pack = UnsafeProjection.create(childOutput.take(spec_.valueAttributes.length), childOutput)
      val extra = new GenericInternalRow(2 + windowsType.size)
      val joined = new JoinedRow()
      val toOutput = UnsafeProjection.create(carried_ ++ added, childOutput ++ added)
      rows.map { row =>
        val windows = keyOf.fold(spec_.windows)(project => keyWindows(project(row)))
        intake.use(windows)
        val certain = intake.classify(row) == null &&
          WindowFinality.certainlyHeldUntil(windows, intake.time, intake.listedWindows) >= watermark
        if (certain) {
          combined += 1
          extra.setLong(0, intake.partialTime)
          extra.setNullAt(1)
          windowsType.foreach {
            case LongType => extra.setLong(2, intake.listedWindows(1))
            case _ => extra.update(2, UnsafeArrayData.fromPrimitiveArray(intake.listedWindows))
          }
        } else {
          sentWhole += 1
          extra.setNullAt(0)
          extra.update(1, pack(row).copy().getBytes)
          if (windowsType.isDefined) extra.setNullAt(2)
        }
        toOutput(joined(row, extra))
      }
    }
  }
}
