package windowagg.spark.streaming

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets

import scala.collection.mutable

import org.apache.spark.sql.{Encoder, Encoders}
import org.apache.spark.sql.streaming.{MapState, StatefulProcessorHandle, TTLConfig}

import windowagg.spark.common.KeyValue

/**
 * A kind's state variables per key, each a value or a map of entries by a number, read and written
 * for the key at hand ([[use]]). The processor's are entries of its one state map ([[StateEntries]],
 * [[HandleKeyStates]]); `read_state` reads the same entries from a checkpoint ([[KeyStates.Snapshot]]),
 * so a layout has one decoder.
 */
private[spark] trait KeyStates {
  /** The key whose entries the variables read and write from now on (its row's bytes). */
  def use(keyBytes: Array[Byte]): Unit

  def current: Array[Byte]

  /** One value per key. */
  def value(name: String): KeyValue[Array[Byte]]

  /** Entries per key by a number (a block's start, a row's position): a map per key. */
  def map(name: String): Entries[Long, Array[Byte]]
}

private[spark] object KeyStates {
  /**
   * A key's entries as read from a checkpoint (`read_state`), by variable: this release's entries
   * (`entry` null for a value) and, not converted yet, the previous release's values, maps and lists
   * of the key's own group ([[previousVariables]]).
   */
  final class Snapshot(key: Array[Byte]) extends KeyStates {
    private val entries = mutable.Map.empty[String, mutable.ArrayBuffer[(Any, Any)]]
    private val previous = mutable.Map.empty[String, mutable.ArrayBuffer[(Any, Any)]]

    /** Adds what the checkpoint holds for the key in this release's `variable`, under `entry` (null for a value). */
    def put(variable: String, entry: Any, value: Any): Unit = entries.getOrElseUpdate(variable, mutable.ArrayBuffer.empty) += ((entry, value))

    /** Adds what the checkpoint holds for the key's group in the previous release's `variable` (as Spark names it). */
    def putPrevious(variable: String, entry: Any, value: Any): Unit =
      previous.getOrElseUpdate(variable, mutable.ArrayBuffer.empty) += ((entry, value))

    private def get(variable: String, entry: Any): Any = entries.get(variable).flatMap(_.find(_._1 == entry)).map(_._2).orNull
    private def set(variable: String, entry: Any, value: Any): Unit = { remove(variable, entry); put(variable, entry, value) }
    private def remove(variable: String, entry: Any): Unit = entries.get(variable).foreach(_.filterInPlace(_._1 != entry))

    override def use(keyBytes: Array[Byte]): Unit =
      if (!java.util.Arrays.equals(keyBytes, key)) throw new IllegalStateException("a snapshot holds one key's entries")
    override def current: Array[Byte] = key

    override def value(name: String): KeyValue[Array[Byte]] = new KeyValue[Array[Byte]] {
      override def get(): Array[Byte] = Snapshot.this.get(name, null).asInstanceOf[Array[Byte]]
      override def update(value: Array[Byte]): Unit = set(name, null, value)
      override def clear(): Unit = remove(name, null)
    }

    override def map(name: String): Entries[Long, Array[Byte]] = new Entries[Long, Array[Byte]] {
      override def get(entry: Long): Array[Byte] = Snapshot.this.get(name, entry).asInstanceOf[Array[Byte]]
      override def update(entry: Long, value: Array[Byte]): Unit = set(name, entry, value)
      override def remove(entry: Long): Unit = Snapshot.this.remove(name, entry)
    }

    /** The previous release's variables of the key's group, as the checkpoint holds them (read only). */
    def previousVariables: PreviousLayout.Variables = new PreviousLayout.Variables {
      private def held(name: String): Seq[(Any, Any)] = previous.get(name).map(_.toSeq).getOrElse(Nil)
      private def reading[T](value: => T): PreviousLayout.Variable[T] = new PreviousLayout.Variable[T] {
        override def read(): T = value
        override def clear(): Unit = ()
      }
      override def value[T](name: String, encoder: Encoder[T]): PreviousLayout.Variable[Option[T]] =
        reading(held(name).headOption.map(_._2.asInstanceOf[T]))
      override def map[K, V](name: String, keys: Encoder[K], values: Encoder[V])
          : PreviousLayout.Variable[Seq[(K, V)]] =
        reading(held(name).map { case (k, v) => (k.asInstanceOf[K], v.asInstanceOf[V]) })
      override def list[T](name: String, encoder: Encoder[T]): PreviousLayout.Variable[Seq[T]] =
        reading(held(name).map(_._2.asInstanceOf[T]))
    }
  }
}

/**
 * The processor's state in a group of transformWithState (a state partition, or one key of a
 * checkpoint of the previous release): one map of bytes to bytes whose entries say whose they are.
 * Spark builds the encoders and generated code of every state variable a processor declares, in
 * every task of every micro-batch, so the state is one variable (with the filing's bucket sizes,
 * which a sweep may read whole: [[Timers]]), not one per thing kept. An entry's bytes are the
 * variable's name, a byte saying what follows ([[StateEntries.Part]]), then a key's value's key (the
 * key's bytes), a key's map entry (its number, 8 bytes, then the key's bytes) or the group's own
 * entry (any bytes).
 */
private[spark] final class StateEntries(handle: StatefulProcessorHandle) {
  import StateEntries._

  private val state: MapState[Array[Byte], Array[Byte]] =
    handle.getMapState[Array[Byte], Array[Byte]](Variable, Encoders.BINARY, Encoders.BINARY, TTLConfig.NONE)

  def get(entry: Array[Byte]): Array[Byte] = state.getValue(entry)
  def update(entry: Array[Byte], value: Array[Byte]): Unit = state.updateValue(entry, value)
  def remove(entry: Array[Byte]): Unit = state.removeKey(entry)

  /** Every entry of the group, by its parts. */
  def iterator: Iterator[(Parsed, Array[Byte])] = state.iterator().map { case (entry, value) => (parse(entry), value) }
}

private[spark] object StateEntries {
  /** The state variable, as Spark's metadata lists it. */
  val Variable = "windowagg"

  /** What follows a variable's name in an entry. */
  sealed abstract class Part(val marker: Byte)
  case object KeyValuePart extends Part(0)
  case object KeyMapPart extends Part(1)
  case object GroupPart extends Part(2)

  /** The bytes of a name, to build its entries with. */
  def nameBytes(name: String): Array[Byte] = {
    val bytes = name.getBytes(StandardCharsets.UTF_8)
    require(bytes.forall(_ > GroupPart.marker), s"a state variable's name is letters: $name")
    bytes
  }

  def keyValue(name: Array[Byte], key: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(name.length + 1 + key.length).put(name).put(KeyValuePart.marker).put(key).array()

  def keyMapEntry(name: Array[Byte], entry: Long, key: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(name.length + 9 + key.length).put(name).put(KeyMapPart.marker).putLong(entry).put(key).array()

  def groupEntry(name: Array[Byte], rest: Array[Byte]): Array[Byte] =
    ByteBuffer.allocate(name.length + 1 + rest.length).put(name).put(GroupPart.marker).put(rest).array()

  /** An entry's parts: its variable's name, what follows it, the map entry's number (a key's map) and the rest (a key's bytes). */
  final case class Parsed(name: String, part: Part, entry: Long, rest: Array[Byte])

  def parse(bytes: Array[Byte]): Parsed = {
    val end = bytes.indexWhere(_ <= GroupPart.marker)
    require(end > 0, "not an entry of windowagg's state")
    val name = new String(bytes, 0, end, StandardCharsets.UTF_8)
    bytes(end) match {
      case KeyValuePart.marker => Parsed(name, KeyValuePart, 0L, java.util.Arrays.copyOfRange(bytes, end + 1, bytes.length))
      case KeyMapPart.marker =>
        Parsed(name, KeyMapPart, ByteBuffer.wrap(bytes, end + 1, 8).getLong(), java.util.Arrays.copyOfRange(bytes, end + 9, bytes.length))
      case _ => Parsed(name, GroupPart, 0L, java.util.Arrays.copyOfRange(bytes, end + 1, bytes.length))
    }
  }

  def longBytes(value: Long): Array[Byte] = ByteBuffer.allocate(8).putLong(value).array()
  def longOf(bytes: Array[Byte]): Long = ByteBuffer.wrap(bytes).getLong()
}

/** A kind's variables per key as entries of the processor's state ([[StateEntries]]). */
private[spark] final class HandleKeyStates(val entries: StateEntries) extends KeyStates {
  import StateEntries._

  private var key: Array[Byte] = _

  override def use(keyBytes: Array[Byte]): Unit = key = keyBytes
  override def current: Array[Byte] = key

  override def value(name: String): KeyValue[Array[Byte]] = {
    val of = nameBytes(name)
    new KeyValue[Array[Byte]] {
      override def get(): Array[Byte] = entries.get(keyValue(of, key))
      override def update(value: Array[Byte]): Unit = entries.update(keyValue(of, key), value)
      override def clear(): Unit = entries.remove(keyValue(of, key))
    }
  }

  override def map(name: String): Entries[Long, Array[Byte]] = {
    val of = nameBytes(name)
    new Entries[Long, Array[Byte]] {
      override def get(entry: Long): Array[Byte] = entries.get(keyMapEntry(of, entry, key))
      override def update(entry: Long, value: Array[Byte]): Unit = entries.update(keyMapEntry(of, entry, key), value)
      override def remove(entry: Long): Unit = entries.remove(keyMapEntry(of, entry, key))
    }
  }
}

/** A key's map in state, read entry by entry: `get` is null for an entry it does not hold. */
private[spark] trait Entries[K, V] {
  def get(entry: K): V
  def update(entry: K, value: V): Unit
  def remove(entry: K): Unit
}
