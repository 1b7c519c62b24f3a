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
 * earliest key's, and each key's timer is an entry of the key's ([[StateEntries]]). When Spark's
 * timer fires, [[sweep]] gives the keys that are due; grouped by partition (`indexed`), it finds
 * them by time (`DueKeys`), reading the keys due and not every key of the partition. A key's timer
 * moved later leaves Spark's where it is (it fires early, and the sweep sets it again), where a
 * timer per key in Spark cost its timer store a delete and an insert at every move. One per task,
 * shared by the processor and the kind: the processor sets, before the kind sees a key, the time
 * `idleAt` at which the key becomes idle (expireIdleKeys), and the kind's timer is never later.
 */
private[spark] final class Timers(ticksPerMilli: Long, indexed: Boolean, handle: StatefulProcessorHandle, states: HandleKeyStates,
    keysPerSlot: Int = Timers.KeysPerSlot) {
  private val entries = states.entries
  private val keyTimers = new Timers.KeyTimers(entries)
  // Spark's one timer, kept in state too, since Spark's timers can be listed only by scanning them
  private val partitionTimer = groupEntry(nameBytes(Timers.PartitionTimer), Array.emptyByteArray)
  // grouped by key, the group's one key is the only one to look at
  private val dueKeys: Option[DueKeys] = if (indexed) Some(new DueKeys(handle, entries, keyTimers, keysPerSlot)) else None
  private var registered: Option[Long] = None
  // the key the sweep gave last: its entry still holds the timer that fell due, until the kind moves
  // its timer (one write where a delete first cost another, each read first by Spark's store) or
  // forgets the key, or else until the next key swept or the call's end (`settle`)
  private var swept: Array[Byte] = _

  /** The time (ms) the current key must be looked at whatever the kind wants, if any. */
  var idleAt: Option[Long] = None

  /** As each of Spark's calls starts: reads where Spark's timer is, and writes what the call before filed. */
  def start(): Unit = {
    registered = Option(entries.get(partitionTimer)).map(longOf)
    swept = null
    dueKeys.foreach(_.start())
  }

  /**
   * `output`, the output of one of Spark's calls, then, once it is read, what the call filed is
   * written and the last key swept settled.
   */
  def finishing(output: Iterator[Array[Byte]]): Iterator[Array[Byte]] =
    output ++ { settle(); dueKeys.foreach(_.flush()); Iterator.empty }

  // A window whose last tick is `last` is final once the watermark (in ms) is past it.
  def expiryMs(last: Long): Long = Math.floorDiv(last, ticksPerMilli) + 1

  /** A tick no later than the end a timer at `ms` was set for. */
  def timerEnd(ms: Long): Long = (ms - 1) * ticksPerMilli

  /**
   * Moves the current key's timer from `current` to `wanted` (milliseconds, or none), or to
   * `idleAt` if that is earlier, writing it only when it changes; returns where it is, for the caller
   * to keep with the key's state (a kind woken early finds nothing due yet).
   */
  def move(current: Option[Long], wanted: Option[Long]): Option[Long] = {
    val target = (wanted ++ idleAt).minOption
    if (takeSwept()) {
      // whatever the kind kept, the entry holds the timer that fell due and the sweep unfiled the key
      target match {
        case Some(ms) => set(ms, None)
        case None => keyTimers.remove(states.current)
      }
    } else if (target != current) {
      target match {
        case Some(ms) => set(ms, current)
        case None => keyTimers.remove(states.current)
      }
    }
    target
  }

  private def set(ms: Long, from: Option[Long]): Unit = {
    keyTimers.update(states.current, ms)
    dueKeys.foreach(_.moved(states.current, from, ms))
    wakeBy(ms)
  }

  /** Whether the current key is the one the sweep gave last, which it then no longer is. */
  private def takeSwept(): Boolean = {
    val current = swept != null && java.util.Arrays.equals(swept, states.current)
    if (current) swept = null
    current
  }

  /** The key swept last, if its kind neither moved its timer nor forgot it, has no timer any more. */
  private def settle(): Unit = if (swept != null) {
    keyTimers.remove(swept)
    swept = null
  }

  /**
   * The current key's state came from the previous release's layout with Spark's timer of its group
   * (grouped by key) at `ms`: the key's timer is that one.
   */
  def adopt(ms: Option[Long]): Unit = ms.foreach { at =>
    keyTimers.update(states.current, at)
    dueKeys.foreach(_.moved(states.current, None, at))
    entries.update(partitionTimer, longBytes(at))
  }

  /** The current key has no timer any more (its state is gone). */
  def forget(): Unit = {
    takeSwept()
    keyTimers.remove(states.current)
  }

  /**
   * Spark's timer has fired (Spark deletes it once the call's output is read): the keys whose timers
   * are due at `nowMs`, each one's timer gone as it comes (the kind sets it again if it still wants
   * one, which writes over the entry the sweep left), with Spark's timer set again no later than the
   * earliest of the others'.
   */
  def sweep(nowMs: Long): Iterator[Array[Byte]] = {
    val (due, next) = dueKeys match {
      case Some(index) => index.sweep(nowMs, registered)
      case None => scan(nowMs)
    }
    registered = None
    entries.remove(partitionTimer)
    next.foreach(wakeBy)
    due.iterator.map { key =>
      settle()
      swept = key
      key
    }
  }

  /** The keys due at `nowMs` and the earliest timer of the others, read from every key's timer. */
  private def scan(nowMs: Long): (Seq[Array[Byte]], Option[Long]) = {
    val due = mutable.ArrayBuffer.empty[Array[Byte]]
    var next: Option[Long] = None
    keyTimers.all.foreach { case (key, at) =>
      if (at <= nowMs) due += key
      else if (next.forall(_ > at)) next = Some(at)
    }
    (due.toSeq, next)
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
  /** The timers' entries in the processor's state: each key's, and the one of Spark's per group. */
  val KeyTimer = "timer"
  val PartitionTimer = "partitionTimer"

  /**
   * The partition's keys filed by when they are due (`DueKeys`): the lists of keys, entries of the
   * processor's state, and the buckets' sizes, a state variable of their own, read whole when the
   * watermark jumps far (`read_state` skips both).
   */
  val DueSlots = "dueKeys"
  val DueBuckets = "dueKeyBuckets"

  /** Each key's timer (ms), an entry of the key's. */
  final class KeyTimers(entries: StateEntries) {
    private val name = nameBytes(KeyTimer)
    def get(key: Array[Byte]): Option[Long] = Option(entries.get(keyValue(name, key))).map(longOf)
    def update(key: Array[Byte], ms: Long): Unit = entries.update(keyValue(name, key), longBytes(ms))
    def remove(key: Array[Byte]): Unit = entries.remove(keyValue(name, key))

    /** Every key's timer in the group, read from all its entries: grouped by key, the key's own. */
    def all: Iterator[(Array[Byte], Long)] = entries.iterator.collect {
      case (Parsed(KeyTimer, KeyValuePart, _, key), ms) => (key, longOf(ms))
    }
  }

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
 * A state partition's keys filed by when their timers are due, for a sweep to read the keys due,
 * not the partition's every key: the keys of a time bucket ([[Timers.BucketMs]]) are listed in
 * numbered slots of the bucket, which a sweep reads by point lookups. A call lists the keys it files
 * in a bucket in one slot (up to `keysPerSlot`, [[Timers.KeysPerSlot]]), written once the call's
 * output has been read, so that a micro-batch writes its keys' filing once per bucket, not once per
 * key. A key with a timer is filed in the bucket of its timer or an earlier one: a timer moved later
 * stays filed where it was, and the sweep that reaches that bucket files the key again where its
 * timer is then (as Spark's own timer, moved later, fires early and is set again). Nothing is
 * unfiled when a timer moves or goes: a sweep drops the keys whose timer is gone, or that repeat a
 * key it read in an earlier slot.
 */
private final class DueKeys(handle: StatefulProcessorHandle, entries: StateEntries, keyTimers: Timers.KeyTimers, keysPerSlot: Int) {
  import Timers.BucketMs

  // a bucket's number of slots, by bucket (the timer's ms divided by the width)
  private val sizes: MapState[java.lang.Long, java.lang.Integer] =
    handle.getMapState[java.lang.Long, java.lang.Integer](Timers.DueBuckets, Encoders.LONG, Encoders.INT, TTLConfig.NONE)
  // keys' bytes listed (DueKeys.listed), by bucket and slot
  private val slotName = nameBytes(Timers.DueSlots)
  private object slots {
    private def entry(bucketAndSlot: (Long, Int)): Array[Byte] =
      groupEntry(slotName, ByteBuffer.allocate(12).putLong(bucketAndSlot._1).putInt(bucketAndSlot._2).array())
    def getValue(at: (Long, Int)): Array[Byte] = entries.get(entry(at))
    def updateValue(at: (Long, Int), keys: Array[Byte]): Unit = entries.update(entry(at), keys)
    def removeKey(at: (Long, Int)): Unit = entries.remove(entry(at))
  }
  // the keys filed during the current call, by bucket, not written yet
  private val filed = mutable.LinkedHashMap.empty[Long, mutable.ArrayBuffer[Array[Byte]]]

  private def bucketOf(ms: Long): Long = Math.floorDiv(ms, BucketMs)

  /** As each of Spark's calls starts: what an earlier call filed is written (its output was read). */
  def start(): Unit = flush()

  /** `key`'s timer moved from `from` (none: it had none) to `to`: filed again if its filing may be later than `to`. */
  def moved(key: Array[Byte], from: Option[Long], to: Long): Unit =
    if (from.forall(f => bucketOf(to) < bucketOf(f))) file(key, bucketOf(to))

  private def file(key: Array[Byte], bucket: Long): Unit =
    filed.getOrElseUpdate(bucket, mutable.ArrayBuffer.empty) += key

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
   * The keys due at `nowMs`, from the buckets up to now's, with a time no later than every other
   * key's timer (a bucket's start, or a timer read). The buckets before now's are emptied, the keys
   * not due yet filed again where their timers are, each key once; in now's, such a key stays in
   * its slot, which the next sweep reads again.
   *
   * `fired`, Spark's timer that woke this sweep, is no later than the earliest bucket holding keys
   * (it is set no later than each bucket's start, or a timer filed in it), so the buckets from its
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
    val later = mutable.ArrayBuffer.empty[(Array[Byte], Long)]
    reached.sortBy(_._1).foreach { case (bucket, n) =>
      var keptSlots = 0
      var slot = 0
      while (slot < n) {
        val listed = slots.getValue((bucket, slot))
        if (listed != null) {
          val keys = DueKeys.keysOf(listed)
          val kept = mutable.ArrayBuffer.empty[Array[Byte]]
          keys.foreach { key =>
            val timer = if (seen.add(ByteBuffer.wrap(key))) keyTimers.get(key) else None
            timer.foreach { at =>
              if (at <= nowMs) due += key
              else {
                if (bucketOf(at) == bucket) kept += key else later += ((key, at))
                if (next.forall(_ > at)) next = Some(at)
              }
            }
          }
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
    later.foreach { case (key, at) => file(key, bucketOf(at)) }
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
  /** Keys' bytes as one value: their number, then each one's length and bytes. */
  def listed(keys: collection.Seq[Array[Byte]]): Array[Byte] = {
    val out = ByteBuffer.allocate(4 + keys.iterator.map(4 + _.length).sum)
    out.putInt(keys.length)
    keys.foreach(k => out.putInt(k.length).put(k))
    out.array()
  }

  def keysOf(listed: Array[Byte]): Array[Array[Byte]] = {
    val in = ByteBuffer.wrap(listed)
    Array.fill(in.getInt()) {
      val key = new Array[Byte](in.getInt())
      in.get(key)
      key
    }
  }
}
