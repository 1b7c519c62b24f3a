package windowagg.spark.streaming

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.sql.Encoder
import org.apache.spark.sql.streaming.{ListState, MapState, QueryInfo, StatefulProcessorHandle, TTLConfig, ValueState}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * The timers of a state partition against a plain map of each key's timer, with Spark's timer
 * played as Spark plays it (it fires once the time reaches it, and is gone once fired): whatever
 * the order of moves (earlier, later, across time buckets, gone), of keys forgotten, of restarts,
 * every key is found due by a sweep exactly when its timer is due, once (a sweep may give keys not
 * due, whose kinds find their timers later or gone), and Spark's timer is never later than the
 * earliest key's (checked after every step). Where Spark's timer was near now, a
 * sweep looks the filing's buckets up one by one instead of reading them all.
 */
class TimersSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import TimersSuite._

  /** Steps over `keys` keys. */
  private def steps(keys: Int): Gen[List[Step]] = {
    val key = Gen.choose(0, keys - 1)
    val move = for {
      k <- key
      // timers around now, a few buckets ahead, sometimes already due
      ahead <- Gen.frequency(6 -> Gen.choose(-5000L, 3 * Timers.BucketMs), 1 -> Gen.choose(0L, 12 * Timers.BucketMs),
        2 -> Gen.choose(0L, 3L * Timers.BucketsLookedUp * Timers.BucketMs))
      gone <- Gen.frequency(8 -> false, 1 -> true)
    } yield Move(k, if (gone) None else Some(ahead))
    val step = Gen.frequency(
      10 -> move,
      1 -> key.map(Forget(_)),
      4 -> Gen.frequency(3 -> Gen.choose(0L, 20000L), 1 -> Gen.choose(0L, 6 * Timers.BucketMs),
        1 -> Gen.choose(0L, 2L * Timers.BucketsLookedUp * Timers.BucketMs)).map(Advance(_)),
      1 -> Gen.const(Restart),
      2 -> Gen.frequency(3 -> Gen.choose(-1000L, 2 * Timers.BucketMs), 1 -> Gen.const(-1000L)).map(AfterDue(_)))
    Gen.listOfN(120, step)
  }

  for (indexed <- Seq(true, false)) {
    test(s"every key is swept exactly when its timer is due (${if (indexed) "filed by time" else "grouped by key"})") {
      forAll(steps(if (indexed) 12 else 1), Gen.choose(0L, 10L * Timers.BucketMs))((plan, start) => play(indexed, plan, start))
    }
  }

  test("a key due far ahead, all others gone, still wakes a sweep when due (filed by time)") {
    val far = 5L * Timers.BucketsLookedUp * Timers.BucketMs
    val steps = Seq.fill(12)(Advance(Timers.BucketsLookedUp * Timers.BucketMs / 2))
    val left = play(indexed = true, List(Move(0, Some(far)), Move(1, Some(5000L)), AfterDue(-1000L), Advance(6000L)) ++ steps, 0L)
    assert(left.isEmpty, s"not swept: $left")
  }

  /**
   * Plays `plan` from time `start`, checking every sweep and Spark's timer after each step against the
   * model; returns the keys' timers left at the end. The kinds keep their timers (`kept`), as the
   * timers give them; grouped by key (not `indexed`), a group holds one key.
   */
  private def play(indexed: Boolean, plan: List[Step], start: Long): collection.Map[Int, Long] = {
    val handle = new MemoryHandle
    def open(): (Timers, HandleKeyStates) = {
      val states = new HandleKeyStates(new StateEntries(handle))
      // two keys per slot of the filing: a call filing more writes several slots
      (new Timers(1L, indexed, handle, states, keysPerSlot = 2), states)
    }
    var (timers, states) = open()
    timers.start()
    val model = mutable.Map.empty[Int, Long]
    // what each key's kind keeps as its timer
    val kept = mutable.Map.empty[Int, Long]
    var now = start
    var afterDue: Long = Timers.BucketMs

    def use(k: Int): Unit = states.use(Array[Byte](7, k.toByte))
    def keep(k: Int, at: Option[Long]): Unit = at match {
      case Some(ms) => kept(k) = ms
      case None => kept.remove(k)
    }
    def moveTo(k: Int, to: Option[Long]): Unit = {
      use(k)
      keep(k, timers.move(kept.get(k), to))
      to match {
        case Some(at) => model(k) = at
        case None => model.remove(k)
      }
    }
    def checkSparkTimer(): Unit = if (model.nonEmpty) {
      assert(handle.timers.nonEmpty, s"keys have timers ($model) but Spark has none")
      assert(handle.timers.min <= model.values.min, s"Spark's timer ${handle.timers} is later than $model")
    }

    plan.foreach { step =>
      step match {
        case Move(k, at) => moveTo(k, at.map(now + _))
        case Forget(k) =>
          // the key's state, its timer in it, is gone
          kept.remove(k)
          model.remove(k)
        case Restart =>
          // the call's output is read before Spark commits: what the call filed is written then
          assert(timers.finishing(Iterator.empty).isEmpty)
          val reopened = open()
          timers = reopened._1
          states = reopened._2
          timers.start()
        case AfterDue(ahead) => afterDue = ahead
        case Advance(by) =>
          now += by
          val fired = handle.timers.filter(_ <= now)
          if (fired.isEmpty) {
            assert(model.values.forall(_ > now), s"at $now keys are due ($model) but Spark's timer is ${handle.timers}")
          } else {
            handle.timers --= fired
            timers.start()
            val due = model.filter(_._2 <= now).keySet.toSet
            val bucketsRead = handle.iterations(Timers.DueBuckets)
            if (!indexed) use(0) // the group's key
            // as the processor does: the sweep's keys are the call's output, after which the call is finished
            val swept = timers.finishing(timers.sweep(now).filter { bytes =>
              val k = bytes(1).toInt
              use(k)
              // the kind looks whether its timer is due; if so, moves it from there: later, nowhere, or
              // where it was (already due)
              timers.due(kept.get(k)) && {
                model.remove(k)
                moveTo(k, if (afterDue > 0) Some(now + afterDue) else if (afterDue < -500) None else kept.get(k))
                true
              }
            }).map(_(1).toInt).toList
            assert(swept.sorted == due.toList.sorted, s"at $now swept $swept, due $due")
            // near where Spark's timer was, the sweep looks the buckets up instead of reading them all
            if (Math.floorDiv(now, Timers.BucketMs) - Math.floorDiv(fired.min, Timers.BucketMs) < Timers.BucketsLookedUp) {
              assert(handle.iterations(Timers.DueBuckets) == bucketsRead, s"at $now, Spark's timer at ${fired.min}: read every bucket")
            }
          }
      }
      checkSparkTimer()
      assert(kept == model, s"after $step the kinds keep $kept, not $model")
    }
    model
  }
}

object TimersSuite {
  sealed trait Step
  final case class Move(key: Int, ahead: Option[Long]) extends Step
  final case class Forget(key: Int) extends Step
  final case class Advance(by: Long) extends Step
  // a new task on the same state
  case object Restart extends Step
  // how far after a due key's sweep its kind sets its timer again: none when far below zero, where it was when near
  final case class AfterDue(ahead: Long) extends Step

  /** Keys of state compared by value, as the state store compares their bytes. */
  private def same(k: Any): Any = k match {
    case b: Array[Byte] => ByteBuffer.wrap(b.clone())
    case (b: Array[Byte], other) => (ByteBuffer.wrap(b.clone()), other)
    case other => other
  }

  /** transformWithState's handle of one group, its state and timers kept in memory across tasks. */
  final class MemoryHandle extends StatefulProcessorHandle {
    val states = mutable.Map.empty[String, mutable.LinkedHashMap[Any, (Any, Any)]]
    val timers = mutable.Set.empty[Long]
    // how many times each state variable was read whole
    val iterations = mutable.Map.empty[String, Int].withDefaultValue(0)

    private def of(name: String) = states.getOrElseUpdate(name, mutable.LinkedHashMap.empty)

    override def getMapState[K, V](stateName: String, userKeyEnc: Encoder[K], valEncoder: Encoder[V], ttlConfig: TTLConfig): MapState[K, V] =
      new MapState[K, V] {
        override def exists(): Boolean = of(stateName).nonEmpty
        override def getValue(key: K): V = of(stateName).get(same(key)).map(_._2).orNull.asInstanceOf[V]
        override def containsKey(key: K): Boolean = of(stateName).contains(same(key))
        override def updateValue(key: K, value: V): Unit = of(stateName)(same(key)) = (key, value)
        override def iterator(): Iterator[(K, V)] = {
          iterations(stateName) += 1
          of(stateName).values.toList.iterator.map { case (k, v) => (k.asInstanceOf[K], v.asInstanceOf[V]) }
        }
        override def keys(): Iterator[K] = iterator().map(_._1)
        override def values(): Iterator[V] = iterator().map(_._2)
        override def removeKey(key: K): Unit = of(stateName).remove(same(key))
        override def clear(): Unit = of(stateName).clear()
      }

    override def getValueState[T](stateName: String, valEncoder: Encoder[T], ttlConfig: TTLConfig): ValueState[T] =
      new ValueState[T] {
        override def exists(): Boolean = of(stateName).contains(())
        override def get(): T = of(stateName).get(()).map(_._2).orNull.asInstanceOf[T]
        override def update(newState: T): Unit = of(stateName)(()) = ((), newState)
        override def clear(): Unit = of(stateName).clear()
      }

    override def registerTimer(expiryTimestampMs: Long): Unit = timers += expiryTimestampMs
    override def deleteTimer(expiryTimestampMs: Long): Unit = timers -= expiryTimestampMs
    override def listTimers(): Iterator[Long] = timers.iterator

    override def getValueState[T: Encoder](stateName: String, ttlConfig: TTLConfig): ValueState[T] = unused
    override def getListState[T](stateName: String, valEncoder: Encoder[T], ttlConfig: TTLConfig): ListState[T] = unused
    override def getListState[T: Encoder](stateName: String, ttlConfig: TTLConfig): ListState[T] = unused
    override def getMapState[K: Encoder, V: Encoder](stateName: String, ttlConfig: TTLConfig): MapState[K, V] = unused
    override def getQueryInfo(): QueryInfo = unused
    override def deleteIfExists(stateName: String): Unit = unused
    private def unused: Nothing = throw new UnsupportedOperationException("not used by the timers")
  }
}
