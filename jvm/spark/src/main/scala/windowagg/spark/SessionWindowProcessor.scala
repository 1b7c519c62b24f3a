package windowagg.spark

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.sql.{Encoders, Row}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.streaming._

import windowagg.MergingWindows
import windowagg.core.{OpenSession, SessionMerging}
import windowagg.core.Ticks.saturatingAdd

/**
 * KIP-94 sessions of one key in Structured Streaming (transformWithState, event time), with a
 * fixed or per-row gap.
 *
 * State per key, one entry ([[SessionWindowProcessor.KeySessions]]): the open sessions (each its
 * first and last record time, its reach and its partial aggregate as UnsafeRow bytes),
 * `closedReach`, the largest reach of its closed sessions (a record within it that bridges no open
 * session is late), and the key's one event-time timer, at or before the earliest reach of its open
 * sessions: when the watermark passes that reach the session closes, so no micro-batch scans all
 * state (a timer that fires early finds nothing final and is set again). A record
 * merges every open session it bridges. With a fixed gap, closedReach is dropped once no on-time
 * record can fall within it (the timer wakes the key for that); with a per-row gap a later record
 * may reach back arbitrarily far, so it stays. In update mode, a session merged away (including
 * one extended to new bounds) is retracted and the merged session emitted.
 */
final class SessionWindowProcessor(spec: StreamingWindowSpec) extends KeyedWindowProcessor(spec) {
  import StreamingWindowSpec._
  import SessionWindowProcessor.{FreshTime, KeySessions}

  @transient private var sessionState: ValueState[Array[Byte]] = _
  @transient private var merging: SessionMerging[InternalRow] = _
  @transient private var reachOf: RowIntake.RowReach = _

  override protected def stateLayout: StateLayout = SessionWindowProcessor.Layout

  override protected def initState(handle: StatefulProcessorHandle): Unit = {
    sessionState = handle.getValueState[Array[Byte]]("keySessions", Encoders.BINARY, TTLConfig.NONE)
    merging = new SessionMerging[InternalRow](aggregates)
    reachOf = RowIntake.reachOf(spec.windows, spec.gapOrdinal, spec.gapType)
  }

  override def handleInputRows(key: Row, inputRows: Iterator[Row], timerValues: TimerValues): Iterator[Array[Byte]] = {
    val watermark = watermarkTicks(timerValues)
    val keyRow = internalKey(key)
    val out = mutable.ArrayBuffer.empty[Array[Byte]]
    val state = load()
    // Sessions already final are closed before these rows: rows may only change open sessions.
    var open = closeFinal(keyRow, state, watermark, out)
    val before = open.map(s => (s.first, s.last)).toSet
    val closed = state.closedReach

    val fresh = mutable.LongMap.empty[FreshTime]
    val joinedBefore = mutable.ArrayBuffer.empty[OpenSession[InternalRow]] // runs merged before the shuffle
    val behind = mutable.ArrayBuffer.empty[(Long, Long, InternalRow)] // late unless they join an open session
    def takeRow(value: InternalRow): Unit =
      if (value.isNullAt(spec.timeOrdinal)) out += lateRow(keyRow, value, ReasonNullTime)
      else {
        val t = readTime(value)
        val reach = reachOf(value, t)
        if (reach == RowIntake.NoReach) out += lateRow(keyRow, value, ReasonInvalidGap)
        else if (merging.isLate(t, reach, watermark, closed)) behind += ((t, reach, value.copy()))
        else {
          val at = fresh.getOrElseUpdate(t, new FreshTime(reach, aggregates.newEmpty()))
          aggregates.update(at.partial, value)
          if (reach > at.reach) at.reach = reach
        }
      }
    inputRows.foreach { row =>
      if (spec.mergedBeforeShuffle && !row.isNullAt(mergedOrdinal)) joinedBefore += onTimeRun(row.getAs[Array[Byte]](mergedOrdinal), watermark, closed)
      else takeRow(internalValue(row))
    }
    val touched = mutable.Set.empty[Long]
    def add(first: Long, last: Long, reach: Long, partial: InternalRow): Unit = {
      val (next, absorbed, merged) = merging.addRun(open, first, last, reach, partial)
      absorbed.foreach(s => touched -= s.first)
      touched += merged.first
      open = next
    }
    // On-time rows (and runs merged before the shuffle) join in runs of times each within the reach
    // of the run so far, cut where an open session starts, so each run merges in time order with the
    // sessions it bridges.
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
    waiting.foreach { case (_, _, value) => out += lateRow(keyRow, value, ReasonLate) }
    if (touched.nonEmpty && spec.emitUpdates) {
      val after = open.map(s => (s.first, s.last)).toSet
      before.filterNot(after.contains).toSeq.sorted.foreach { case (first, last) => out += retractionRow(keyRow, first, last) }
      open.filter(s => touched.contains(s.first)).foreach(s => out += windowRow(keyRow, s.first, s.last, s.partial))
    }
    // unchanged sessions keep their bytes as read
    save(state, open, changed = touched.nonEmpty || open.length != state.open.length, watermark)
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo): Iterator[Array[Byte]] = {
    val watermark = watermarkTicks(timerValues)
    val out = mutable.ArrayBuffer.empty[Array[Byte]]
    val state = load()
    state.timerMs = None // the fired timer is gone
    val open = closeFinal(internalKey(key), state, watermark, out)
    // With a fixed gap, a key with no open session keeps closedReach only while a record within it could be on time.
    if (open.isEmpty && fixedGap.exists(g => state.closedReach.exists(saturatingAdd(_, g) < watermark))) {
      state.closedReach = None
    }
    save(state, open, changed = open.length != state.open.length, watermark)
    out.iterator
  }

  /** A run of rows merged before the shuffle ([[MergeBeforeShuffle]]), which only merges rows that cannot be late. */
  private def onTimeRun(bytes: Array[Byte], watermark: Long, closed: Option[Long]): OpenSession[InternalRow] = {
    val (first, last, reach, partial) = MergeBeforeShuffle.decodeRun(bytes, aggregates)
    if (merging.isLate(first, spec.windows.reach(first, 0L), watermark, closed)) {
      throw new IllegalStateException(s"rows from $first to $last were merged before the shuffle as on time, " +
        s"but the watermark is $watermark and the key's closed sessions reach $closed")
    }
    OpenSession(first, last, reach, partial)
  }

  /** Emits (final mode) the sessions the watermark has passed, and returns the others. */
  private def closeFinal(keyRow: InternalRow, state: KeySessions, watermark: Long,
      out: mutable.ArrayBuffer[Array[Byte]]): Vector[OpenSession[InternalRow]] = {
    val (done, remaining) = state.open.partition(merging.isFinal(_, watermark))
    done.foreach { s =>
      if (!spec.emitUpdates) out += windowRow(keyRow, s.first, s.last, s.partial)
      if (state.closedReach.forall(_ < s.reach)) state.closedReach = Some(s.reach)
    }
    remaining
  }

  private val fixedGap: Option[Long] = spec.windows match {
    case m: MergingWindows => m.fixedGap
    case _ => None
  }

  // one read: get() is null for a key without state, where exists() and get() would read twice
  private def load(): KeySessions = Option(sessionState.get()).map(KeySessions.decode(_, aggregates))
    .getOrElse(new KeySessions(Vector.empty, None, None))

  /**
   * Writes the key's sessions (when they or closedReach changed) and keeps its one timer at or before
   * the earliest reach of its open sessions, or with none, where closedReach can be dropped. A timer
   * set earlier than that but not due at this `watermark` stays where it is: firing early, it finds
   * nothing final and sets the next one, where moving it each micro-batch a session grows would cost
   * Spark's timer store a delete and an insert every time.
   */
  private def save(state: KeySessions, open: Vector[OpenSession[InternalRow]], changed: Boolean, watermark: Long): Unit = {
    val needed =
      if (open.nonEmpty) Some(open.map(s => expiryMs(s.reach)).min)
      else fixedGap.flatMap(g => state.closedReach.map(r => expiryMs(saturatingAdd(r, g))))
    val watermarkMs = Math.floorDiv(watermark, spec.ticksPerMilli)
    val wanted = needed match {
      case Some(ms) if state.timerMs.exists(t => t <= ms && t > watermarkMs) => state.timerMs
      case other => other
    }
    val timerChanged = wanted != state.timerMs
    state.timerMs = moveTimer(state.timerMs, wanted)
    if (open.isEmpty && state.closedReach.isEmpty) sessionState.clear()
    else if (changed || timerChanged || state.closedReachChanged) {
      sessionState.update(state.encode(open, aggregates))
    }
  }
}

object SessionWindowProcessor {
  /** The on-time rows of one time in a micro-batch: their partial, and the largest reach among them. */
  private final class FreshTime(var reach: Long, val partial: InternalRow)

  /**
   * Per key: one entry holding its open sessions, the reach of closed ones and its timer. Version 1
   * (0.1.0, 0.2.0) kept one state entry per open session and one for closedReach, and a timer per
   * session reach.
   */
  val Layout: StateLayout = StateLayout("sessions", 2)

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
}
