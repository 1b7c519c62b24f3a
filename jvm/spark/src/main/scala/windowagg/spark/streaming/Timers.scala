package windowagg.spark.streaming

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.sql.Encoders
import org.apache.spark.sql.streaming.{MapState, StatefulProcessorHandle, TTLConfig}

import windowagg.spark.streaming.StateEntries._

/**
 * The keys' timers of one group of transformWithState, in milliseconds (timers keep milliseconds).
 * Spark scopes timers to its grouping key, a state partition ([[KeyBucket]]) or, in a checkpoint of
 * the previous release, one key ([[StateKeying.ByKey]]): it keeps one timer, no later than the
 * earliest key's. A key's timer is kept by its kind, in the key's own state, which it writes anyway
 * whenever the timer moves: [[move]] returns it for the kind to keep. When Spark's timer fires,
 * [[sweep]] gives the keys that may be due: grouped by partition (`indexed`), the keys filed by time
 * (`DueKeys`) up to now, each filed no later than its timer; grouped by key, the group's key. A key
 * whose timer moved later since it was filed, or went, is given too, and its kind, reading its state
 * as it would for a due timer, asks [[due]] and finds nothing to do (the key is filed again where its
 * timer is). So a timer moved later leaves Spark's timer and the key's filing where they are, and
 * keeping a timer costs no state write of its own. One per task, shared by the processor and the
 * kind: the processor sets, before the kind sees a key, the time `idleAt` at which the key becomes
 * idle (expireIdleKeys), and the kind's timer is never later.
 */
private[spark] final class Timers(ticksPerMilli: Long, indexed: Boolean, handle: StatefulProcessorHandle, states: HandleKeyStates,
    keysPerSlot: Int = Timers.KeysPerSlot) {
  private val entries = states.entries
  // Spark's one timer, kept in state too, since Spark's timers can be listed only by scanning them
  private val partitionTimer = groupEntry(nameBytes(Timers.PartitionTimer), Array.emptyByteArray)
  // grouped by key, the group's one key is the only one to look at
  private val dueKeys: Option[DueKeys] = if (indexed) Some(new DueKeys(handle, entries, keysPerSlot)) else None
  private var registered: Option[Long] = None
  // the key the sweep gave last, no longer filed, and the time (ms) it was swept at
  private var swept: Array[Byte] = _
  private var sweptAt = Long.MinValue

  /** The time (ms) the current key must be looked at whatever the kind wants, if any. */
  var idleAt: Option[Long] = None

  /** As each of Spark's calls starts: reads where Spark's timer is, and writes what the call before filed. */
  def start(): Unit = {
    registered = Option(entries.get(partitionTimer)).map(longOf)
    swept = null
    dueKeys.foreach(_.start())
  }

  /** `output`, the output of one of Spark's calls, then, once it is read, what the call filed is written. */
  def finishing(output: Iterator[Array[Byte]]): Iterator[Array[Byte]] =
    dueKeys.fold(output)(index => output ++ { index.flush(); Iterator.empty })

  // A window whose last tick is `last` is final once the watermark (in ms) is past it.
  def expiryMs(last: Long): Long = Math.floorDiv(last, ticksPerMilli) + 1

  /** A tick no later than the end a timer at `ms` was set for. */
  def timerEnd(ms: Long): Long = (ms - 1) * ticksPerMilli

  /**
   * Moves the current key's timer from `current`, where its kind kept it, to `wanted` (milliseconds,
   * or none), or to `idleAt` if that is earlier; returns where it is, for the kind to keep with the
   * key's state. Only a timer moved earlier than the key is filed files it again (and wakes Spark's
   * timer by then); a key the sweep gave is filed again wherever its timer is.
   */
  def move(current: Option[Long], wanted: Option[Long]): Option[Long] = {
    val target = (wanted ++ idleAt).minOption
    // the key is filed no later than `current`, unless the sweep gave it (then it is not filed)
    val filedBy = if (takeSwept()) None else current
    target.foreach { ms =>
      if (filedBy.forall(ms < _)) {
        dueKeys.foreach(_.file(states.current, ms))
        wakeBy(ms)
      }
    }
    target
  }

  /**
   * For the key the sweep gave, with the timer its kind kept (`kept`): whether it is due. A key not
   * due (its timer moved later after it was filed, or went) is filed again where its timer is, and
   * its kind leaves its state as it is.
   */
  def due(kept: Option[Long]): Boolean = kept.exists(_ <= sweptAt) || { move(kept, kept); false }

  /** Whether the current key is the one the sweep gave last, which it then no longer is. */
  private def takeSwept(): Boolean = {
    val current = swept != null && java.util.Arrays.equals(swept, states.current)
    if (current) swept = null
    current
  }

  /**
   * The current key's state came from the previous release's layout with Spark's timer of its group
   * (grouped by key) at `ms`, which its kind's state keeps: Spark's timer is that one.
   */
  def adopt(ms: Option[Long]): Unit = ms.foreach(at => entries.update(partitionTimer, longBytes(at)))

  /**
   * Spark's timer has fired (Spark deletes it once the call's output is read): the keys that may be
   * due at `nowMs` (each one's kind looks whether it is, [[due]], and moves its timer), with Spark's
   * timer set again no later than the earliest key filed after them.
   */
  def sweep(nowMs: Long): Iterator[Array[Byte]] = {
    val (due, next) = dueKeys match {
      case Some(index) => index.sweep(nowMs, registered)
      case None => (Seq(states.current), None)
    }
    sweptAt = nowMs
    registered = None
    entries.remove(partitionTimer)
    next.foreach(wakeBy)
    due.iterator.map { key =>
      swept = key
      key
    }
  }

  /** Spark's timer no later than `ms`. */
  private def wakeBy(ms: Long): Unit = if (registered.forall(_ > ms)) {
    registered.foreach(handle.deleteTimer)
    handle.registerTimer(ms)
    entries.update(partitionTimer, longBytes(ms))
    registered = Some(ms)
  }
}

private[spark] object Timers {
  /** Spark's timer of a group, an entry of the group's own in the processor's state. */
  val PartitionTimer = "partitionTimer"

  /**
   * The partition's keys filed by when they may be due (`DueKeys`): the lists of keys, entries of the
   * processor's state, and the buckets' sizes, a state variable of their own, read whole when the
   * watermark jumps far (`read_state` skips both).
   */
  val DueSlots = "dueKeys"
  val DueBuckets = "dueKeyBuckets"

  /** The most keys a slot of the filing lists: a call filing more keys in a bucket writes several slots. */
  val KeysPerSlot: Int = 1024

  /**
   * The width of the time buckets keys are filed in, in ms: a sweep reads the keys of the buckets it
   * reaches. About a micro-batch's move of the watermark, so that a sweep reads few keys not due yet.
   */
  val BucketMs: Long = 10000L

  /**
   * How many buckets a sweep looks up one by one, from where Spark's timer was to now's, and after
   * now's for the next one holding keys; beyond that it reads every bucket's size (a watermark that
   * jumped), or sets Spark's timer that far ahead (no keys due sooner).
   */
  val BucketsLookedUp: Int = 32
}

/**
 * A state partition's keys filed by when they may be due, for a sweep to read the keys due, not the
 * partition's every key: a key is filed with a time no later than its timer, in the time bucket
 * ([[Timers.BucketMs]]) of that time, in numbered slots of the bucket, which a sweep reads by point
 * lookups. A call lists the keys it files in a bucket in one slot (up to `keysPerSlot`,
 * [[Timers.KeysPerSlot]]), written once the call's output has been read, so that a micro-batch writes
 * its keys' filing once per bucket, not once per key. Nothing is unfiled when a timer moves later or
 * goes: the sweep that reaches the filing gives the key, whose kind files it again where its timer is
 * then (as Spark's own timer, moved later, fires early and is set again), or finds it has none.
 */
private final class DueKeys(handle: StatefulProcessorHandle, entries: StateEntries, keysPerSlot: Int) {
  import Timers.BucketMs

  // a bucket's number of slots, by bucket (the filed time's ms divided by the width)
  private val sizes: MapState[java.lang.Long, java.lang.Integer] =
    handle.getMapState[java.lang.Long, java.lang.Integer](Timers.DueBuckets, Encoders.LONG, Encoders.INT, TTLConfig.NONE)
  // keys' bytes with their filed times (DueKeys.listed), by bucket and slot
  private val slotName = nameBytes(Timers.DueSlots)
  private object slots {
    private def entry(bucketAndSlot: (Long, Int)): Array[Byte] =
      groupEntry(slotName, ByteBuffer.allocate(12).putLong(bucketAndSlot._1).putInt(bucketAndSlot._2).array())
    def getValue(at: (Long, Int)): Array[Byte] = entries.get(entry(at))
    def updateValue(at: (Long, Int), keys: Array[Byte]): Unit = entries.update(entry(at), keys)
    def removeKey(at: (Long, Int)): Unit = entries.remove(entry(at))
  }
  // the keys filed during the current call, with their times, by bucket, not written yet
  private val filed = mutable.LinkedHashMap.empty[Long, mutable.ArrayBuffer[DueKeys.Filed]]

  private def bucketOf(ms: Long): Long = Math.floorDiv(ms, BucketMs)

  /** As each of Spark's calls starts: what an earlier call filed is written (its output was read). */
  def start(): Unit = flush()

  /** Files `key` to be given by the sweep that reaches `ms`. */
  def file(key: Array[Byte], ms: Long): Unit =
    filed.getOrElseUpdate(bucketOf(ms), mutable.ArrayBuffer.empty) += DueKeys.Filed(key, ms)

  /** Writes the keys filed since the last write: each bucket's as new slots after its last one. */
  def flush(): Unit = if (filed.nonEmpty) {
    filed.foreach { case (bucket, keys) =>
      var n = Option(sizes.getValue(bucket)).fold(0)(_.intValue)
      keys.grouped(keysPerSlot).foreach { group =>
        slots.updateValue((bucket, n), DueKeys.listed(group))
        n += 1
      }
      sizes.updateValue(bucket, n)
    }
    filed.clear()
  }

  /**
   * The keys filed at or before `nowMs`, each once, from the buckets up to now's, with a time no
   * later than every key filed after it (a bucket's start, or a filed time). The buckets before
   * now's are emptied; in now's, the keys filed after `nowMs` stay in their slot, which the next sweep
   * reads again.
   *
   * `fired`, Spark's timer that woke this sweep, is no later than the earliest bucket holding keys
   * (it is set no later than each bucket's start, or a time filed in it), so the buckets from its
   * bucket to now's are those reached: a few are looked up one by one, and only a watermark that
   * jumped far makes the sweep read every bucket's size.
   */
  def sweep(nowMs: Long, fired: Option[Long]): (Seq[Array[Byte]], Option[Long]) = {
    flush() // the sweep reads the filing in state
    val now = bucketOf(nowMs)
    val reached = mutable.ArrayBuffer.empty[(Long, Int)]
    var next: Option[Long] = None
    val lookedUp = fired.map(bucketOf).filter(first => now - first < Timers.BucketsLookedUp)
    lookedUp match {
      case Some(first) =>
        var b = first
        while (b <= now) {
          Option(sizes.getValue(b)).foreach(n => reached += ((b, n.intValue)))
          b += 1
        }
      case None =>
        sizes.iterator().foreach { case (bucket, n) =>
          val b = bucket.longValue
          if (b <= now) reached += ((b, n.intValue))
          else if (next.forall(_ > b * BucketMs)) next = Some(b * BucketMs)
        }
    }
    val seen = mutable.HashSet.empty[ByteBuffer]
    val due = mutable.ArrayBuffer.empty[Array[Byte]]
    reached.sortBy(_._1).foreach { case (bucket, n) =>
      var keptSlots = 0
      var slot = 0
      while (slot < n) {
        val listed = slots.getValue((bucket, slot))
        if (listed != null) {
          val keys = DueKeys.keysOf(listed)
          val (reachedKeys, kept) = keys.partition(_.ms <= nowMs)
          reachedKeys.foreach(f => if (seen.add(ByteBuffer.wrap(f.key))) due += f.key)
          kept.foreach(f => if (next.forall(_ > f.ms)) next = Some(f.ms))
          if (kept.isEmpty) slots.removeKey((bucket, slot))
          else {
            if (kept.length < keys.length) slots.updateValue((bucket, slot), DueKeys.listed(kept))
            keptSlots += 1
          }
        }
        slot += 1
      }
      if (keptSlots == 0) sizes.removeKey(bucket)
    }
    // looked up after the buckets reached are emptied, so that none of them counts as a later one
    if (lookedUp.isDefined) next = (next ++ laterBucket(now).map(_ * BucketMs)).minOption
    (due.toSeq, next)
  }

  /**
   * The first bucket after `now` holding keys, looked up among the next few; past those, a bucket no
   * later than any holding keys (Spark's timer set there wakes a sweep that looks on), or none if no
   * bucket holds keys.
   */
  private def laterBucket(now: Long): Option[Long] = {
    var b = now + 1
    while (b <= now + Timers.BucketsLookedUp) {
      if (sizes.getValue(b) != null) return Some(b)
      b += 1
    }
    Option.when(sizes.exists())(b)
  }
}

private object DueKeys {
  /** A key filed to be given by the sweep that reaches `ms`. */
  final case class Filed(key: Array[Byte], ms: Long)

  /** Filed keys as one value: their number, then each one's time, length and bytes. */
  def listed(keys: collection.Seq[Filed]): Array[Byte] = {
    val out = ByteBuffer.allocate(4 + keys.iterator.map(12 + _.key.length).sum)
    out.putInt(keys.length)
    keys.foreach(f => out.putLong(f.ms).putInt(f.key.length).put(f.key))
    out.array()
  }

  def keysOf(listed: Array[Byte]): Array[Filed] = {
    val in = ByteBuffer.wrap(listed)
    Array.fill(in.getInt()) {
      val ms = in.getLong()
      val key = new Array[Byte](in.getInt())
      in.get(key)
      Filed(key, ms)
    }
  }
}
