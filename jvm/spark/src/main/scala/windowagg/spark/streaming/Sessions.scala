package windowagg.spark.streaming

import java.nio.ByteBuffer

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, GenericInternalRow, JoinedRow, Literal, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.types.{BinaryType, DataType}

import windowagg.core.{OpenSession, ResolvedWindows, SessionMerging}
import windowagg.core.Ticks.saturatingAdd
import windowagg.spark.common.{AggregateBeforeShuffle, NotWindowed, OpenWindows, PackedRow, SparkAggregates}

/**
 * KIP-94 sessions of a key in streaming, with a fixed or per-row gap.
 *
 * State per key, one entry ([[Sessions.KeySessions]]): the open sessions (each its first and last
 * record time, its reach and its partial aggregate as UnsafeRow bytes), `closedReach`, the largest
 * reach of its closed sessions (a record within it that bridges no open session is late), and the
 * key's one timer, at or before the earliest reach of its open sessions: when the watermark passes
 * that reach the session closes, so no micro-batch scans all state (a timer that fires early finds
 * nothing final and is set again). A record merges every open session it bridges. With a fixed gap,
 * closedReach is dropped once no on-time record can fall within it (the timer wakes the key for
 * that); with a per-row gap a later record may reach back arbitrarily far, so it stays. In update
 * mode, a session merged away (including one extended to new bounds) is retracted and the merged
 * session emitted. What a call changed is told to the emission policy as the starts of the sessions
 * it changed (early firing then emits the open sessions holding them).
 *
 * Before the shuffle, with a fixed gap and aggregates that merge in any order, a key's rows after
 * the micro-batch's watermark join in runs ([[Sessions.KeyRuns]]: rows each within the gap of the
 * run so far), shipped as one piece per run ([[Sessions.Run]]): [[Sessions.RunsBeforeShuffle]], whose stage is
 * [[SessionRunsExec]].
 */
private[spark] object Sessions extends StreamingKind {
  /**
   * Version 1 (0.1.0, 0.2.0) kept one state entry per open session and one for closedReach, and a
   * timer per session reach; version 2 (0.3.0) a key's sessions in a value of the key's own group,
   * with a timer of Spark's per key; version 5 keeps them in an entry of the key's in the
   * processor's one state map ([[StateEntries]]), the key's timer with them (`Timers` files the key
   * by it), into which version 2's move unchanged ([[PreviousLayouts.Sessions2]]); versions 3 and 4
   * were builds of 0.4.0 never released.
   */
  override val layout: StateLayout = StateLayout("sessions", 5)

  override def retracts(windows: ResolvedWindows): Boolean = true

  override def combine(spec: StreamingWindowSpec, mode: AggregateBeforeShuffle.Mode): Combine = {
    val fixedGap = spec.engine.merging.exists(_.fixedGap.isDefined) && spec.gapOrdinal.isEmpty
    val unordered = spec.functions.find(f => !AggregateBeforeShuffle.mergesInAnyOrder(f))
    if (spec.processingTime) Combine.none("processing time")
    else if (!fixedGap) Combine.none("each row of a session with a per-row gap is read on its own")
    else if (unordered.isDefined) Combine.none(s"${unordered.get.prettyName} depends on the order its rows are merged in")
    else if (mode == AggregateBeforeShuffle.Never) Combine.none(s"${AggregateBeforeShuffle.Conf}=never")
    else RunsBeforeShuffle("a key's rows in runs within the gap")
  }

  override def previousLayout: Option[PreviousLayout] = Some(PreviousLayouts.Sessions2)

  override def open(spec: StreamingWindowSpec, tools: TaskTools, states: KeyStates, timers: Timers): KeyLogic =
    new Logic(spec, tools, states, timers)

  /** A key's rows after the watermark join in session runs ([[KeyRuns]]), one piece per run ([[SessionRunsExec]]). */
  final case class RunsBeforeShuffle(override val why: String) extends Combine(why) {
    override def name: String = "session runs merged before the shuffle"

    override def plan(node: CombineBeforeShuffle, child: SparkPlan): SparkPlan =
      SessionRunsExec(node.spec, node.keys, node.keys ++ Seq(node.whole, node.piece), child)
  }

  val SessionsVariable = "keySessions"

  /** The key's open sessions, each `[first, last]` as it would be emitted. */
  override def inspect(windows: ResolvedWindows, keyTypes: Seq[DataType], aggregates: SparkAggregates, states: KeyStates,
      key: InternalRow, out: KeyHolding): Unit = {
    val stored = states.value(SessionsVariable).get()
    if (stored != null) {
      val sessions = KeySessions.decode(stored, aggregates)
      sessions.open.foreach(s => out.window(s.first, s.last, s.partial))
      out.heldRows(0L)
      out.timer(sessions.timerMs)
    }
  }

  private val NoValue = Long.MinValue

  /** A key's sessions state as read; `closedReach` and `timerMs` are updated in place before it is written back. */
  final class KeySessions(val open: Vector[OpenSession[InternalRow]], initialClosedReach: Option[Long], var timerMs: Option[Long]) {
    private var reach = initialClosedReach
    def closedReach: Option[Long] = reach
    def closedReach_=(value: Option[Long]): Unit = reach = value
    def closedReachChanged: Boolean = reach != initialClosedReach

    def encode(sessions: Vector[OpenSession[InternalRow]], aggregates: SparkAggregates): Array[Byte] = {
      val partials = sessions.map(s => aggregates.toBytes(s.partial))
      val out = ByteBuffer.allocate(8 + 8 + 8 + 4 + sessions.length * 28 + partials.map(_.length).sum)
      out.putLong(if (reach.isDefined) 1L else 0L).putLong(reach.getOrElse(NoValue)).putLong(timerMs.getOrElse(NoValue))
      out.putInt(sessions.length)
      sessions.zip(partials).foreach { case (s, bytes) =>
        out.putLong(s.first).putLong(s.last).putLong(s.reach).putInt(bytes.length).put(bytes)
      }
      out.array()
    }
  }

  /** The timer (ms) of a key's sessions as encoded, if it has one. */
  def timerOf(bytes: Array[Byte]): Option[Long] = Some(ByteBuffer.wrap(bytes).getLong(16)).filter(_ != NoValue)

  object KeySessions {
    def decode(bytes: Array[Byte], aggregates: SparkAggregates): KeySessions = {
      val in = ByteBuffer.wrap(bytes)
      val hasReach = in.getLong() == 1L
      val reach = in.getLong()
      val timer = in.getLong()
      val open = Vector.fill(in.getInt()) {
        val first = in.getLong()
        val last = in.getLong()
        val sessionReach = in.getLong()
        val length = in.getInt()
        val partial = aggregates.fromBytes(java.util.Arrays.copyOfRange(bytes, in.position(), in.position() + length))
        in.position(in.position() + length)
        OpenSession(first, last, sessionReach, partial)
      }
      new KeySessions(open, if (hasReach) Some(reach) else None, if (timer == NoValue) None else Some(timer))
    }
  }

  /** A run of one key's rows shipped as a piece: first and last time, reach (ticks), then its partial's bytes. */
  object Run {
    private val Header = 24

    def encode(first: Long, last: Long, reach: Long, partial: Array[Byte]): Array[Byte] =
      ByteBuffer.allocate(Header + partial.length).putLong(first).putLong(last).putLong(reach).put(partial).array()

    def decode(bytes: Array[Byte], aggregates: SparkAggregates): OpenSession[InternalRow] = {
      val in = ByteBuffer.wrap(bytes)
      OpenSession(in.getLong(), in.getLong(), in.getLong(), aggregates.fromBytes(bytes, Header, bytes.length - Header))
    }
  }

  /** A run being built: its first and last time, its reach, and the rows' partial aggregate. */
  private final class Building(var first: Long, var last: Long, var reach: Long, val partial: InternalRow)

  /**
   * One key's session runs in a partition before the shuffle, disjoint (no run reaches another) and
   * sorted by first time. A row within the latest run extends it in place, with no allocation; any
   * other joins the runs it bridges by the core's rule ([[SessionMerging.addRun]]).
   */
  final class KeyRuns(merging: SessionMerging[InternalRow]) {
    private val runs = mutable.ArrayBuffer.empty[Building]

    /** Adds a row at `time` reaching `reach`; returns the change in the number of runs held. */
    def add(time: Long, reach: Long, row: InternalRow, aggregates: SparkAggregates): Int = {
      val latest = if (runs.nonEmpty) runs.last else null
      if (latest != null && time >= latest.first && time <= latest.reach) { // rows come roughly in time order
        aggregates.update(latest.partial, row)
        if (time > latest.last) latest.last = time
        if (reach > latest.reach) latest.reach = reach
        0
      } else {
        val partial = aggregates.newEmpty()
        aggregates.update(partial, row)
        val open = runs.iterator.map(r => OpenSession(r.first, r.last, r.reach, r.partial)).toVector
        val next = merging.addRun(open, time, time, reach, partial)._1
        runs.clear()
        next.foreach(s => runs += new Building(s.first, s.last, s.reach, s.partial))
        next.length - open.length
      }
    }

    /** The runs as pieces to shuffle. */
    def encoded(aggregates: SparkAggregates): Iterator[Array[Byte]] =
      runs.iterator.map(r => Run.encode(r.first, r.last, r.reach, aggregates.toBytes(r.partial)))
  }

  /** The on-time rows of one time in a micro-batch: their partial, and the largest reach among them. */
  private final class FreshTime(var reach: Long, val partial: InternalRow)

  private final class Logic(spec: StreamingWindowSpec, tools: TaskTools, states: KeyStates, timers: Timers) extends KeyLogic {
    private val aggregates = tools.aggregates
    private val sessionState = states.value(SessionsVariable)
    private val merging = new SessionMerging[InternalRow](aggregates)
    private val fixedGap: Option[Long] = spec.engine.merging.flatMap(_.fixedGap)

    override def onRows(key: InternalRow, rows: Iterator[Input], watermark: Long, out: Emitter): Unit = {
      val state = load()
      // Sessions already final are closed before these rows: rows may only change open sessions.
      var open = closeFinal(state, watermark, out)
      val before = open.map(s => (s.first, s.last)).toSet
      val closed = state.closedReach

      val fresh = mutable.LongMap.empty[FreshTime]
      val joinedBefore = mutable.ArrayBuffer.empty[OpenSession[InternalRow]] // runs combined before the shuffle
      val behind = mutable.ArrayBuffer.empty[(Long, Long, InternalRow)] // late unless they join an open session
      rows.foreach { in =>
        if (in.whole == null) joinedBefore += onTimeRun(in.piece, watermark, closed)
        else if (merging.isLate(in.time, in.reach, watermark, closed)) behind += ((in.time, in.reach, in.whole.copy()))
        else {
          val at = fresh.getOrElseUpdate(in.time, new FreshTime(in.reach, aggregates.newEmpty()))
          aggregates.update(at.partial, in.whole)
          if (in.reach > at.reach) at.reach = in.reach
        }
      }
      val touched = mutable.Set.empty[Long]
      def add(first: Long, last: Long, reach: Long, partial: InternalRow): Unit = {
        val (next, absorbed, merged) = merging.addRun(open, first, last, reach, partial)
        absorbed.foreach(s => touched -= s.first)
        touched += merged.first
        open = next
      }
      // On-time rows (and runs combined before the shuffle) join in runs of times each within the
      // reach of the run so far, cut where an open session starts, so each run merges in time order
      // with the sessions it bridges.
      val pieces = (fresh.iterator.map { case (t, at) => OpenSession(t, t, at.reach, at.partial) } ++ joinedBefore)
        .toArray.sortBy(_.first)
      val openStarts = open.map(_.first)
      var i = 0
      while (i < pieces.length) {
        val first = pieces(i).first
        var last = pieces(i).last
        var reach = pieces(i).reach
        var partial = pieces(i).partial
        i += 1
        while (i < pieces.length && pieces(i).first <= reach && !openStarts.exists(s => s > last && s <= pieces(i).first)) {
          val next = pieces(i)
          partial = aggregates.mergeInto(partial, next.partial)
          last = math.max(last, next.last)
          reach = math.max(reach, next.reach)
          i += 1
        }
        add(first, last, reach, partial)
      }
      // A row behind the watermark may reach an open session only through another such row of this
      // micro-batch (in either direction, with per-row gaps), so they join until none bridges any more:
      // which rows are late then does not depend on how rows were split across micro-batches.
      var waiting = behind.sortBy(_._1).toList
      var joined = true
      while (joined && waiting.nonEmpty) {
        val (bridging, rest) = waiting.partition { case (t, reach, _) => merging.bridgesAny(open, t, reach) }
        bridging.foreach { case (t, reach, value) =>
          val partial = aggregates.newEmpty()
          aggregates.update(partial, value)
          add(t, t, reach, partial)
        }
        joined = bridging.nonEmpty
        waiting = rest
      }
      waiting.foreach { case (_, _, value) => out.notWindowed(value, NotWindowed.Late, 1L) }
      if (touched.nonEmpty && out.wantsChanges) {
        val after = open.map(s => (s.first, s.last)).toSet
        before.filterNot(after.contains).toSeq.sorted.foreach { case (first, last) => out.retracted(first, last) }
        open.filter(s => touched.contains(s.first)).foreach(s => out.changed(s.first, s.last, s.partial))
      }
      val fireAt = out.fire(watermark, touched.toArray.sorted, openWindows(open))
      // unchanged sessions keep their bytes as read
      save(state, open, changed = touched.nonEmpty || open.length != state.open.length, watermark, fireAt)
    }

    override def onTimer(key: InternalRow, watermark: Long, out: Emitter): Unit = {
      val state = load()
      if (!timers.due(state.timerMs)) return
      state.timerMs = None // the fired timer is gone
      val open = closeFinal(state, watermark, out)
      // With a fixed gap, a key with no open session keeps closedReach only while a record within it could be on time.
      if (open.isEmpty && fixedGap.exists(g => state.closedReach.exists(saturatingAdd(_, g) < watermark))) {
        state.closedReach = None
      }
      val fireAt = out.fire(watermark, Array.emptyLongArray, openWindows(open))
      save(state, open, changed = open.length != state.open.length, watermark, fireAt)
    }

    /**
     * The key's open sessions for the emission policy: those holding a changed time, a session's
     * start as the call that changed it left it (a later merge keeps it within the merged session).
     */
    private def openWindows(open: Vector[OpenSession[InternalRow]]): OpenWindows = new OpenWindows {
      override def isEmpty: Boolean = open.isEmpty
      override def holding(marks: Array[Long])(f: (Long, Long, InternalRow) => Unit): Unit = open.foreach { s =>
        val at = java.util.Arrays.binarySearch(marks, s.first)
        val next = if (at >= 0) at else -at - 1
        if (next < marks.length && marks(next) <= s.last) f(s.first, s.last, s.partial)
      }
    }

    /** A run combined before the shuffle, which only combines rows that cannot be late. */
    private def onTimeRun(bytes: Array[Byte], watermark: Long, closed: Option[Long]): OpenSession[InternalRow] = {
      val run = Run.decode(bytes, aggregates)
      if (merging.isLate(run.first, spec.windows.reach(run.first, 0L), watermark, closed)) {
        throw new IllegalStateException(s"rows from ${run.first} to ${run.last} were combined before the shuffle as on " +
          s"time, but the watermark is $watermark and the key's closed sessions reach $closed")
      }
      run
    }

    /** Reports the sessions the watermark has passed as final, and returns the others. */
    private def closeFinal(state: KeySessions, watermark: Long, out: Emitter): Vector[OpenSession[InternalRow]] = {
      val (done, remaining) = state.open.partition(merging.isFinal(_, watermark))
      done.foreach { s =>
        out.finalWindow(s.first, s.last, s.partial)
        if (state.closedReach.forall(_ < s.reach)) state.closedReach = Some(s.reach)
      }
      remaining
    }

    // one read: get() is null for a key without state, where exists() and get() would read twice
    private def load(): KeySessions = Option(sessionState.get()).map(KeySessions.decode(_, aggregates))
      .getOrElse(new KeySessions(Vector.empty, None, None))

    /**
     * Writes the key's sessions (when they or closedReach changed) and keeps its one timer at or before
     * the earliest reach of its open sessions, or with none, where closedReach can be dropped, and
     * no later than the emission policy's `fireAt` (a tick). A timer
     * set earlier than that but not due at this `watermark` stays where it is: firing early, it finds
     * nothing final and sets the next one, where moving it each micro-batch a session grows would cost
     * Spark's timer store a delete and an insert every time.
     */
    private def save(state: KeySessions, open: Vector[OpenSession[InternalRow]], changed: Boolean, watermark: Long,
        fireAt: Option[Long]): Unit = {
      val kept =
        if (open.nonEmpty) Some(open.map(s => timers.expiryMs(s.reach)).min)
        else fixedGap.flatMap(g => state.closedReach.map(r => timers.expiryMs(saturatingAdd(r, g))))
      val needed = (kept ++ fireAt.map(timers.expiryMs)).minOption
      val watermarkMs = Math.floorDiv(watermark, spec.ticksPerMilli)
      val wanted = needed match {
        case Some(ms) if state.timerMs.exists(t => t <= ms && t > watermarkMs) => state.timerMs
        case other => other
      }
      val timerChanged = wanted != state.timerMs
      state.timerMs = timers.move(state.timerMs, wanted)
      if (open.isEmpty && state.closedReach.isEmpty) sessionState.clear()
      else if (changed || timerChanged || state.closedReachChanged) {
        sessionState.update(state.encode(open, aggregates))
      }
    }
  }
}

/**
 * The sessions' combine before the shuffle: per partition, a key's rows after the micro-batch's
 * watermark join in runs (`Sessions.KeyRuns`), shipped as one piece per run; every other row
 * passes through whole as it comes. Memory is bounded: after [[SessionRunsExec.MaxHeld]] runs a
 * partition sends on what it holds and starts again.
 */
case class SessionRunsExec(spec: StreamingWindowSpec, keys: Seq[Attribute], output: Seq[Attribute], child: SparkPlan)
  extends UnaryExecNode {

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "inputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows"),
    "runs" -> SQLMetrics.createMetric(sparkContext, "number of runs out"),
    "wholeRows" -> SQLMetrics.createMetric(sparkContext, "rows passed through whole (may be late)"))

  override def outputPartitioning: Partitioning = child.outputPartitioning

  override protected def withNewChildInternal(newChild: SparkPlan): SessionRunsExec = copy(child = newChild)

  override protected def doExecute(): RDD[InternalRow] = {
    val watermark = CombineBeforeShuffle.batchWatermark(sparkContext, spec)
    val counters = (longMetric("inputRows"), longMetric("runs"), longMetric("wholeRows"))
    val (spec_, keys_, childOutput, outputTypes) = (spec, keys, child.output, output.map(_.dataType).toArray)
    child.execute().mapPartitionsWithIndex({ (partition, rows) =>
      new SessionRunsIterator(spec_, keys_, childOutput, outputTypes, rows, partition, watermark, counters)
    }, preservesPartitioning = true)
  }
}

object SessionRunsExec {
  /** Runs a partition holds before sending them on. */
  val MaxHeld = 200000
}

/** A partition of [[SessionRunsExec]]: rows passed whole as they come, then the runs. */
private final class SessionRunsIterator(spec: StreamingWindowSpec, keys: Seq[Attribute], childOutput: Seq[Attribute],
    outputTypes: Array[DataType], input: Iterator[InternalRow], partition: Int, watermark: Long,
    counters: (SQLMetric, SQLMetric, SQLMetric)) extends Iterator[InternalRow] {
  private val tools = TaskTools.borrow(spec, partition)
  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => TaskTools.giveBack(tools)))
  private val aggregates = tools.aggregates
  private val merging = new SessionMerging[InternalRow](aggregates)
  private val intake = spec.intake
  private val keyOf = UnsafeProjection.create(keys, childOutput)
  private val values = childOutput.take(spec.valueAttributes.length)
  private val passThrough = UnsafeProjection.create(keys ++ Seq(PackedRow(values), Literal(null, BinaryType)), childOutput)
  private val toOutput = UnsafeProjection.create(outputTypes)
  private val (inputRows, runsOut, wholeRows) = counters

  private var byKey = new java.util.HashMap[UnsafeRow, Sessions.KeyRuns]()
  private var held = 0
  private var draining: Iterator[InternalRow] = null
  private var inputDone = false
  private var nextRow: InternalRow = null

  override def hasNext: Boolean = {
    while (nextRow == null) {
      if (draining != null) {
        if (draining.hasNext) nextRow = draining.next() else draining = null
      } else if (input.hasNext) {
        nextRow = consume(input.next())
        if (held >= SessionRunsExec.MaxHeld) draining = takeRuns()
      } else if (!inputDone) {
        inputDone = true
        draining = takeRuns()
      } else return false
    }
    true
  }

  override def next(): InternalRow = {
    if (!hasNext) throw new NoSuchElementException
    val row = nextRow
    nextRow = null
    row
  }

  // A row after the watermark bridges no closed session (each reached below the watermark when it
  // closed), so it cannot be late; every other row passes whole, for the state to judge.
  private def consume(row: InternalRow): InternalRow = {
    inputRows += 1
    if (intake.classify(row) != null || intake.time <= watermark) {
      wholeRows += 1
      passThrough(row)
    } else {
      val key = keyOf(row)
      var runs = byKey.get(key)
      if (runs == null) {
        runs = new Sessions.KeyRuns(merging)
        byKey.put(key.copy(), runs)
      }
      held += runs.add(intake.time, intake.reach, row, aggregates)
      null
    }
  }

  private def takeRuns(): Iterator[InternalRow] = {
    val taken = byKey
    byKey = new java.util.HashMap[UnsafeRow, Sessions.KeyRuns]()
    held = 0
    val extra = new GenericInternalRow(2)
    extra.setNullAt(0)
    val joined = new JoinedRow()
    taken.entrySet().iterator().asScala.flatMap { entry =>
      entry.getValue.encoded(aggregates).map { bytes =>
        runsOut += 1
        extra.update(1, bytes)
        toOutput(joined(entry.getKey, extra))
      }
    }
  }
}
