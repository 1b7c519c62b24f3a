package windowagg.spark.streaming

import java.nio.ByteBuffer

import org.apache.spark.sql.{Encoder, Encoders}
import org.apache.spark.sql.streaming.{StatefulProcessorHandle, TTLConfig}

/**
 * How a checkpoint's state is grouped in transformWithState. Since 0.4.0 by the keys' state
 * partition ([[KeyBucket]]); releases before it grouped by the keys themselves, and a checkpoint
 * they wrote keeps that grouping (Spark's timers are kept under the grouping key, whose schema a
 * checkpoint cannot change), with each key's state converted to this release's layout the first
 * time the key is read (`PreviousLayouts`).
 */
sealed trait StateKeying extends Serializable {
  /** As the checkpoint's state record names it. */
  def name: String
}

object StateKeying {
  case object ByPartition extends StateKeying {
    override def name: String = "state partition"
  }

  case object ByKey extends StateKeying {
    override def name: String = "key"
  }

  val all: Seq[StateKeying] = Seq(ByPartition, ByKey)

  def named(name: String): Option[StateKeying] = all.find(_.name == name)
}

/**
 * The state layouts of the release before this one (0.3.0), which kept each key's state in
 * variables of its own group, read and converted key by key: a query restarted from such a
 * checkpoint keeps grouping by key ([[StateKeying.ByKey]]), declares the old variables beside this
 * release's, and moves a key's state into this release's layout (and its timer into [[Timers]])
 * the first time a micro-batch reads the key, by its rows or its timer. A key converted has no
 * entry left in the old variables, so a conversion interrupted by a failure is done again by the
 * micro-batch's retry, whose state starts from the last commit. `read_state` converts in memory the
 * keys not converted yet, with the same code.
 */
private[spark] trait PreviousLayout extends Serializable {
  /** The version of the kind's layout this reads, as the previous release recorded it. */
  def version: Int

  /**
   * The conversion of a group's old variables, declared on `handle`, into `states`: at init, as
   * Spark takes declarations (on the driver too, for its schema check).
   */
  def open(handle: StatefulProcessorHandle, states: KeyStates): PreviousLayout.Converter =
    converter(new PreviousLayout.OfHandle(handle), states)

  /** The conversion of what `variables` hold for one group into `states`. */
  def converter(variables: PreviousLayout.Variables, states: KeyStates): PreviousLayout.Converter
}

private[spark] object PreviousLayout {
  /** What a conversion did: whether the group had state in the old layout, and its timer (ms), if any. */
  final case class Converted(timerMs: Option[Long])

  trait Converter {
    /**
     * Moves the current group's state, if it has any in the old layout, into the key's entries (the
     * states are set to the group's one key) and clears the old variables; returns what it moved, or None.
     */
    def convert(): Option[Converted]
  }

  /** The old variables of a group: values, maps and lists, read whole and cleared. */
  trait Variables {
    def value[T](name: String, encoder: Encoder[T]): Variable[Option[T]]
    def map[K, V](name: String, keys: Encoder[K], values: Encoder[V]): Variable[Seq[(K, V)]]
    def list[T](name: String, encoder: Encoder[T]): Variable[Seq[T]]
  }

  trait Variable[T] {
    def read(): T
    def clear(): Unit
  }

  final class OfHandle(handle: StatefulProcessorHandle) extends Variables {
    override def value[T](name: String, encoder: Encoder[T]): Variable[Option[T]] = {
      val state = handle.getValueState[T](name, encoder, TTLConfig.NONE)
      new Variable[Option[T]] {
        override def read(): Option[T] = if (state.exists()) Some(state.get()) else None
        override def clear(): Unit = state.clear()
      }
    }

    override def map[K, V](name: String, keys: Encoder[K], values: Encoder[V]): Variable[Seq[(K, V)]] = {
      val state = handle.getMapState[K, V](name, keys, values, TTLConfig.NONE)
      new Variable[Seq[(K, V)]] {
        override def read(): Seq[(K, V)] = state.iterator().toSeq
        override def clear(): Unit = state.clear()
      }
    }

    override def list[T](name: String, encoder: Encoder[T]): Variable[Seq[T]] = {
      val state = handle.getListState[T](name, encoder, TTLConfig.NONE)
      new Variable[Seq[T]] {
        override def read(): Seq[T] = state.get().toSeq
        override def clear(): Unit = state.clear()
      }
    }
  }
}

private[spark] object PreviousLayouts {
  import PreviousLayout._

  /**
   * "partials by time" version 2 (0.3.0): a value `progress` (`finalBefore`, the timer, the block
   * starts, 8 bytes each) and a map `blocks` of every block by its start, blocks encoded as now.
   */
  object PartialsByTime2 extends PreviousLayout {
    override val version: Int = 2

    override def converter(variables: Variables, states: KeyStates): Converter = new Converter {
      private val progress = variables.value("progress", Encoders.BINARY)
      private val blocks = variables.map("blocks", Encoders.scalaLong, Encoders.BINARY)
      private val newProgress = states.value(PartialsByTime.ProgressVariable)
      private val newBlocks = states.map(PartialsByTime.BlocksVariable)

      override def convert(): Option[Converted] = progress.read().map { bytes =>
        val in = ByteBuffer.wrap(bytes)
        val finalBefore = in.getLong()
        val timerMs = in.getLong()
        val starts = Array.fill((bytes.length - 16) / 8)(in.getLong())
        blocks.read().foreach { case (start, block) => newBlocks.update(start, block) }
        val converted = new PartialsByTime.Progress(finalBefore, timerMs, starts, null, Vector.empty)
        newProgress.update(converted.encode)
        progress.clear()
        blocks.clear()
        Converted(converted.timer)
      }
    }
  }

  /** "sessions" version 2 (0.3.0): a value `keySessions`, encoded as now. */
  object Sessions2 extends PreviousLayout {
    override val version: Int = 2

    override def converter(variables: Variables, states: KeyStates): Converter = new Converter {
      private val sessions = variables.value("keySessions", Encoders.BINARY)
      private val newSessions = states.value(Sessions.SessionsVariable)

      override def convert(): Option[Converted] = sessions.read().map { bytes =>
        newSessions.update(bytes)
        sessions.clear()
        Converted(Sessions.timerOf(bytes))
      }
    }
  }

  /**
   * "rows" version 1 (0.2.0, 0.3.0): a map `settled` of the settled rows by position, a list
   * `waiting`, and values `firstPosition`, `accountedBefore`, `settledUntil`, `lastWindowHead` and
   * `timer`, each absent until first set.
   */
  object Rows1 extends PreviousLayout {
    override val version: Int = 1

    override def converter(variables: Variables, states: KeyStates): Converter = new Converter {
      private val settled = variables.map("settled", Encoders.scalaLong, Encoders.BINARY)
      private val waiting = variables.list("waiting", Encoders.BINARY)
      private val firstPosition = variables.value("firstPosition", Encoders.scalaLong)
      private val accountedBefore = variables.value("accountedBefore", Encoders.scalaLong)
      private val settledUntil = variables.value("settledUntil", Encoders.scalaLong)
      private val lastWindowHead = variables.value("lastWindowHead", Encoders.scalaLong)
      private val timer = variables.value("timer", Encoders.scalaLong)
      private val values = Seq(firstPosition, accountedBefore, settledUntil, lastWindowHead, timer)
      private val newSettled = states.map(CountedRows.SettledVariable)
      private val newWaiting = states.value(CountedRows.WaitingVariable)
      private val newProgress = states.value(CountedRows.ProgressVariable)

      override def convert(): Option[Converted] = {
        val rows = settled.read()
        val waitingRows = waiting.read()
        val first = firstPosition.read()
        val timerMs = timer.read()
        if (rows.isEmpty && waitingRows.isEmpty && first.isEmpty && timerMs.isEmpty) None
        else {
          val from = first.getOrElse(0L)
          rows.foreach { case (position, entry) => newSettled.update(position, entry) }
          if (waitingRows.nonEmpty) newWaiting.update(CountedRows.encodeWaiting(waitingRows))
          newProgress.update(CountedRows.progress(first = from, next = from + rows.length,
            accountedBefore = accountedBefore.read().getOrElse(from), settledUntil = settledUntil.read().getOrElse(Long.MinValue),
            lastWindowHead = lastWindowHead.read(), timerMs = timerMs))
          settled.clear()
          waiting.clear()
          values.foreach(_.clear())
          Some(Converted(timerMs))
        }
      }
    }
  }
}
