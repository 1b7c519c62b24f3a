package windowagg.spark.common

import java.nio.ByteBuffer
import java.util.Locale
import java.util.concurrent.TimeUnit

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.streaming.OutputMode

import windowagg.core.{TimeSpan, WindowError}

/**
 * When a streaming aggregation emits its windows: a policy (Flink's trigger) that sees what the
 * kinds of windows expose of a key (`EmissionTrigger`: windows that became final, changed, merged away,
 * and the key's open windows on demand) and keeps its own per-key state and wake-up time, so that
 * the kinds know nothing of it. A policy is one case of this file: its description here, its
 * per-task side beside it, its spelling in [[Emission.parse]].
 */
abstract class Emission(val name: String) extends Serializable {
  /** The output mode the sink must run in. */
  def outputMode: OutputMode

  /** Whether a window is emitted once when it becomes final (a kind whose windows never close refuses it). */
  def emitsFinal: Boolean

  /** Whether every change of an open window is emitted as it happens, so the kinds compute each one. */
  def emitsChanges: Boolean

  /** Whether output rows say which values are final (an `is_final` column): a policy emitting values before them. */
  def marksFinal: Boolean = false

  /** Whether a window merged into another (sessions) is retracted: a `retraction` column. */
  def retractsMerged: Boolean = emitsChanges

  /**
   * One task's side of the policy: `state(name)` is a per-key value of the policy's own in the
   * checkpoint (declared when asked), `boundsChange` whether an open window's bounds can change
   * (sessions grow and merge; windows cut at rows shift as their rows settle).
   */
  private[spark] def trigger(state: String => KeyValue[Array[Byte]], boundsChange: Boolean): EmissionTrigger

  override def toString: String = name
}

/**
 * A policy at work in one task, a key at a time: the kinds report through it, and call [[fire]] once
 * per key and call (after the key's rows or its timer) with the times the call changed.
 */
private[spark] abstract class EmissionTrigger {
  /** A key's call starts: what the policy read of the previous key is not this one's. */
  def start(): Unit = ()

  /** Whether a window that became final is output (marked final); what it replaces is retracted through `out` first. */
  def onFinal(start: Long, end: Long, out: WindowOutput): Boolean = true

  /** Whether an open window a micro-batch changed is output now. */
  def onChange(start: Long, end: Long): Boolean = false

  /** Whether a window merged into another (sessions) is retracted now. */
  def onMerged(start: Long, end: Long): Boolean = false

  /**
   * Every window of the key ending before `before` is final by now (windows cut at rows, once their
   * rows settled), so bounds the policy emitted early that did not come out final are no window's.
   */
  def settled(before: Long, out: WindowOutput): Unit = ()

  /**
   * The policy's own firing, after a key's `rows` rows (or its timer: none) changed the windows
   * holding `marks` (sorted times of the kind's: partial times, sessions' starts), at `watermark`
   * (the aggregation's clock). Returns the tick the key must be looked at again for it, if any.
   */
  def fire(watermark: Long, rows: Long, marks: Array[Long], open: OpenWindows, out: WindowOutput): Option[Long] = None

  /** The key's state is gone (an idle key expired). */
  def forget(): Unit = ()
}

/** A key's windows not final yet, as its kind holds them during a call. */
private[spark] trait OpenWindows {
  def isEmpty: Boolean

  /** Each open window holding one of the sorted `marks`, with its running value (valid during the call only). */
  def holding(marks: Array[Long])(f: (Long, Long, InternalRow) => Unit): Unit
}

/** Where a policy's own output goes: running values (`is_final` false) and retractions. */
private[spark] trait WindowOutput {
  def early(start: Long, end: Long, buffer: InternalRow): Unit
  def retract(start: Long, end: Long): Unit
}

object Emission {
  /** Each window once, when the watermark passes its end: the append output mode. */
  case object Final extends Emission("final") {
    override def outputMode: OutputMode = OutputMode.Append()
    override def emitsFinal: Boolean = true
    override def emitsChanges: Boolean = false
    override private[spark] def trigger(state: String => KeyValue[Array[Byte]], boundsChange: Boolean): EmissionTrigger = new EmissionTrigger {}
  }

  /** Every window a micro-batch changed, with its current value, merged sessions retracted: the update output mode. */
  case object Updates extends Emission("updates") {
    override def outputMode: OutputMode = OutputMode.Update()
    override def emitsFinal: Boolean = false
    override def emitsChanges: Boolean = true
    override private[spark] def trigger(state: String => KeyValue[Array[Byte]], boundsChange: Boolean): EmissionTrigger = new EmissionTrigger {
      override def onFinal(start: Long, end: Long, out: WindowOutput): Boolean = false
      override def onChange(start: Long, end: Long): Boolean = true
      override def onMerged(start: Long, end: Long): Boolean = true
    }
  }

  /**
   * Early firing (Flink's continuous triggers): a window's running value at most once per `every`
   * of the aggregation's clock (event time as the watermark moves, or processing time) while it is
   * open and changed since, then its final value once, marked `is_final`: the update output mode.
   * Over windows that merge (sessions), as Flink's continuous trigger over merging windows: a value
   * fired for bounds that later grow or merge away is retracted when the window holding it is next
   * emitted, early or final. Over windows cut at rows (Storm's count windows), a window's value
   * before its rows settle: one fired for bounds its rows no longer make is retracted once they
   * settle.
   */
  final case class Every(every: TimeSpan, ticks: Long) extends Emission(s"every ${every.spec}") {
    require(ticks > 0)
    override def outputMode: OutputMode = OutputMode.Update()
    override def emitsFinal: Boolean = true
    override def emitsChanges: Boolean = false
    override def marksFinal: Boolean = true
    override def retractsMerged: Boolean = true
    override private[spark] def trigger(state: String => KeyValue[Array[Byte]], boundsChange: Boolean): EmissionTrigger =
      new EveryInterval(ticks, state(Every.FiringVariable), if (boundsChange) Some(state(Every.FiredVariable)) else None)
  }

  object Every {
    /** The interval the key last fired in, then the marks changed since (8 bytes each). */
    val FiringVariable = "firing"
    /** Where bounds change (sessions, count windows): the bounds (start, end) of the values fired and not yet replaced. */
    val FiredVariable = "fired"
  }

  private final class EveryInterval(every: Long, firingState: KeyValue[Array[Byte]], firedState: Option[KeyValue[Array[Byte]]])
      extends EmissionTrigger {
    // where bounds change, the key's fired bounds, read at their first use in a call and written by fire
    private var fired: Array[Long] = _

    private def firedBounds: Array[Long] = {
      if (fired == null) fired = firedState.flatMap(s => Option(s.get())).map(longs).getOrElse(Array.emptyLongArray)
      fired
    }

    /** Retracts the fired values within [start, end] under other bounds; keeps or drops the one under these. */
    private def replace(start: Long, end: Long, keep: Boolean, out: WindowOutput): Unit = if (firedState.isDefined) {
      val bounds = firedBounds
      val kept = Array.newBuilder[Long]
      var i = 0
      while (i < bounds.length) {
        val (s, e) = (bounds(i), bounds(i + 1))
        if (s != start || e != end) {
          if (start <= s && e <= end) out.retract(s, e) else kept += s += e
        }
        i += 2
      }
      if (keep) kept += start += end
      fired = kept.result()
    }

    override def start(): Unit = fired = null

    override def onFinal(start: Long, end: Long, out: WindowOutput): Boolean = {
      replace(start, end, keep = false, out)
      true
    }

    override def settled(before: Long, out: WindowOutput): Unit = if (firedState.isDefined) {
      val bounds = firedBounds
      val kept = Array.newBuilder[Long]
      var i = 0
      while (i < bounds.length) {
        if (bounds(i + 1) < before) out.retract(bounds(i), bounds(i + 1)) else kept += bounds(i) += bounds(i + 1)
        i += 2
      }
      fired = kept.result()
    }

    override def fire(watermark: Long, rows: Long, marks: Array[Long], open: OpenWindows, out: WindowOutput): Option[Long] = {
      val (lastInterval, waiting) = Option(firingState.get()).map { bytes =>
        val all = longs(bytes)
        (all(0), all.drop(1))
      }.getOrElse((Long.MinValue, Array.emptyLongArray))
      val pending = if (marks.isEmpty) waiting else (waiting ++ marks).distinct.sorted
      val interval = Math.floorDiv(watermark, every)
      val wake =
        if (pending.isEmpty || open.isEmpty) {
          if (waiting.nonEmpty || open.isEmpty) firingState.clear()
          None
        } else if (interval > lastInterval) {
          open.holding(pending) { (s, e, p) =>
            replace(s, e, keep = true, out)
            out.early(s, e, p)
          }
          firingState.update(encode(interval, Array.emptyLongArray))
          None
        } else {
          if (marks.nonEmpty) firingState.update(encode(lastInterval, pending))
          Some(Math.multiplyExact(interval + 1, every) - 1) // due once the watermark passes the last tick of this interval
        }
      firedState.foreach { s =>
        if (fired != null) {
          if (fired.isEmpty || open.isEmpty) s.clear() else s.update(encode(fired))
        }
      }
      wake
    }

    override def forget(): Unit = {
      firingState.clear()
      firedState.foreach(_.clear())
      fired = null
    }
  }

  private def encode(first: Long, rest: Array[Long]): Array[Byte] = encode(first +: rest)

  private def encode(values: Array[Long]): Array[Byte] = {
    val out = ByteBuffer.allocate(8 * values.length)
    values.foreach(out.putLong)
    out.array()
  }

  private def longs(bytes: Array[Byte]): Array[Long] = {
    val in = ByteBuffer.wrap(bytes)
    Array.fill(bytes.length / 8)(in.getLong())
  }

  // policies spelled otherwise than the ones of this file (a test's own), tried after them
  @volatile private var others: List[PartialFunction[String, Emission]] = Nil

  /** Adds the policies `spelled` reads from an `emit` text (lowercase and trimmed), after the ones of this file. */
  private[spark] def register(spelled: PartialFunction[String, Emission]): Unit = synchronized { others = others :+ spelled }

  /** The policies by what `emit` says: "final", "updates" or "every <duration>" (ticks: microseconds). */
  def parse(text: String): Emission = text.trim.toLowerCase(Locale.ROOT) match {
    case "final" => Final
    case "updates" => Updates
    case every if every.startsWith("every ") && !others.exists(_.isDefinedAt(every)) =>
      // a streaming time column is a TIMESTAMP: its ticks are microseconds
      val span = TimeSpan.positive(TimeSpan.parse(text.trim.drop("every ".length)), "the interval of emit 'every ...'")
      Every(span, span.toTicks(TimeUnit.MICROSECONDS, "the interval of emit 'every ...'"))
    case other => others.collectFirst { case p if p.isDefinedAt(other) => p(other) }.getOrElse(
      throw WindowError(s"emit must be 'final', 'updates' or 'every <duration>' (e.g. 'every 10 seconds'), got '$text'"))
  }
}
