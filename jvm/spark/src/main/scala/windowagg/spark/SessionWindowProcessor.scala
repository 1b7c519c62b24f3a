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
 * State per key: one partial aggregate per open session (keyed by its first record time, with its
 * last time and reach), and `closedReach`, the largest reach of its closed sessions (a record
 * within it that bridges no open session is late). A record merges every open session it bridges;
 * an event-time timer at each session's reach closes it once the watermark passes, so no
 * micro-batch scans all state. With a fixed gap, closedReach is dropped once no on-time record can
 * fall within it; with a per-row gap a later record may reach back arbitrarily far, so it stays.
 * In update mode, a session merged away (including one extended to new bounds) is retracted and
 * the merged session emitted.
 */
final class SessionWindowProcessor(spec: StreamingWindowSpec) extends KeyedWindowProcessor(spec) {
  import StreamingWindowSpec._

  @transient private var sessions: MapState[Long, Array[Byte]] = _
  @transient private var closedReach: ValueState[Long] = _
  @transient private var merging: SessionMerging[InternalRow] = _
  @transient private var reachOf: WindowAggregateExec.RowReach = _

  override protected def stateLayout: StateLayout = SessionWindowProcessor.Layout

  override protected def initState(handle: StatefulProcessorHandle): Unit = {
    sessions = handle.getMapState[Long, Array[Byte]]("sessions", Encoders.scalaLong, Encoders.BINARY, TTLConfig.NONE)
    closedReach = handle.getValueState[Long]("closedReach", Encoders.scalaLong, TTLConfig.NONE)
    merging = new SessionMerging[InternalRow](aggregates)
    reachOf = WindowAggregateExec.reachOf(spec.windows, spec.gapOrdinal, spec.gapType)
  }

  override def handleInputRows(key: Row, inputRows: Iterator[Row], timerValues: TimerValues): Iterator[Row] = {
    val watermark = watermarkTicks(timerValues)
    val keyRow = internalKey(key)
    val out = mutable.ArrayBuffer.empty[Row]
    // Sessions already final are closed before these rows: rows may only change open sessions.
    var open = closeFinal(keyRow, load(), watermark, out)
    val before = open.map(s => (s.first, s.last)).toSet
    // every open session already has a timer at its reach: only new reaches need one (Spark warns of
    // each timer registered twice)
    val timed = open.map(s => expiryMs(s.reach)).toSet
    val closed = if (closedReach.exists()) Some(closedReach.get()) else None

    val fresh = mutable.HashMap.empty[Long, (Long, InternalRow)] // time -> (reach, partial)
    val behind = mutable.ArrayBuffer.empty[(Long, Long, InternalRow)] // late unless they join an open session
    inputRows.foreach { row =>
      val value = internalValue(row)
      if (value.isNullAt(spec.timeOrdinal)) out += lateRow(keyRow, value, ReasonNullTime)
      else {
        val t = readTime(value)
        val reach = reachOf(value, t)
        if (reach == WindowAggregateExec.NoReach) out += lateRow(keyRow, value, ReasonInvalidGap)
        else if (merging.isLate(t, reach, watermark, closed)) behind += ((t, reach, value.copy()))
        else {
          val (r, partial) = fresh.getOrElseUpdate(t, (reach, aggregates.newEmpty()))
          aggregates.update(partial, value)
          if (reach > r) fresh.update(t, (reach, partial))
        }
      }
    }
    val touched = mutable.Set.empty[Long]
    def add(t: Long, reach: Long, partial: InternalRow): Unit = {
      val (next, absorbed, merged) = merging.add(open, t, reach, partial)
      absorbed.foreach(s => touched -= s.first)
      touched += merged.first
      open = next
    }
    fresh.toSeq.sortBy(_._1).foreach { case (t, (reach, partial)) => add(t, reach, partial) }
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
        add(t, reach, partial)
      }
      joined = bridging.nonEmpty
      waiting = rest
    }
    waiting.foreach { case (_, _, value) => out += lateRow(keyRow, value, ReasonLate) }
    if (touched.nonEmpty) {
      save(open)
      open.map(s => expiryMs(s.reach)).distinct.filterNot(timed.contains).foreach(getHandle.registerTimer)
      if (spec.emitUpdates) {
        val after = open.map(s => (s.first, s.last)).toSet
        before.filterNot(after.contains).toSeq.sorted.foreach { case (first, last) => out += retractionRow(keyRow, first, last) }
        open.filter(s => touched.contains(s.first)).foreach(s => out += windowRow(keyRow, s.first, s.last, s.partial))
      }
    }
    out.iterator
  }

  override def handleExpiredTimer(key: Row, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo): Iterator[Row] = {
    val watermark = watermarkTicks(timerValues)
    val out = mutable.ArrayBuffer.empty[Row]
    val open = closeFinal(internalKey(key), load(), watermark, out)
    // With a fixed gap, a key with no open session keeps closedReach only while a record within it could be on time.
    if (open.isEmpty && closedReach.exists() && fixedGap.exists(g => saturatingAdd(closedReach.get(), g) < watermark)) {
      closedReach.clear()
    }
    out.iterator
  }

  /** Emits (final mode) and drops the sessions the watermark has passed; returns the others. */
  private def closeFinal(keyRow: InternalRow, open: Vector[OpenSession[InternalRow]], watermark: Long,
      out: mutable.ArrayBuffer[Row]): Vector[OpenSession[InternalRow]] = {
    val (done, remaining) = open.partition(merging.isFinal(_, watermark))
    done.foreach { s =>
      if (!spec.emitUpdates) out += windowRow(keyRow, s.first, s.last, s.partial)
      sessions.removeKey(s.first)
      if (!closedReach.exists() || closedReach.get() < s.reach) closedReach.update(s.reach)
    }
    if (done.nonEmpty && remaining.isEmpty) {
      // wake up once closedReach no longer matters, to drop it
      fixedGap.foreach(g => getHandle.registerTimer(expiryMs(saturatingAdd(closedReach.get(), g))))
    }
    remaining
  }

  private val fixedGap: Option[Long] = spec.windows match {
    case m: MergingWindows => m.fixedGap
    case _ => None
  }

  private def load(): Vector[OpenSession[InternalRow]] =
    sessions.iterator().map { case (first, bytes) =>
      val buffer = ByteBuffer.wrap(bytes)
      val last = buffer.getLong
      val reach = buffer.getLong
      OpenSession(first, last, reach, aggregates.fromBytes(java.util.Arrays.copyOfRange(bytes, 16, bytes.length)))
    }.toVector.sortBy(_.first)

  private def save(open: Vector[OpenSession[InternalRow]]): Unit = {
    val keep = open.map(_.first).toSet
    sessions.keys().filterNot(keep.contains).toList.foreach(sessions.removeKey)
    open.foreach { s =>
      val partial = aggregates.toBytes(s.partial)
      sessions.updateValue(s.first, ByteBuffer.allocate(16 + partial.length).putLong(s.last).putLong(s.reach).put(partial).array())
    }
  }
}

object SessionWindowProcessor {
  /** Per key: open sessions by start, the reach of closed ones, the timer (as in 0.1.0). */
  val Layout: StateLayout = StateLayout("sessions", 1)
}
