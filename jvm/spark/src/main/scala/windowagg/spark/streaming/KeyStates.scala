package windowagg.spark.streaming

import scala.collection.mutable

import org.apache.spark.sql.{Encoder, Encoders}
import org.apache.spark.sql.streaming.{MapState, StatefulProcessorHandle, TTLConfig}

import windowagg.spark.common.KeyValue

/**
 * A kind's state variables per key, each a map under the key's bytes, read and written for the key
 * at hand ([[use]]). The processor's are maps of transformWithState's state ([[HandleKeyStates]]);
 * `read_state` reads the same variables from a checkpoint ([[KeyStates.Snapshot]]), so a layout has
 * one decoder.
 */
private[spark] trait KeyStates {
  /** The key whose entries the variables read and write from now on (its row's bytes). */
  def use(keyBytes: Array[Byte]): Unit

  def current: Array[Byte]

  /** One value per key. */
  def value[T](name: String, encoder: Encoder[T]): KeyValue[T]

  /** Entries per key, each read and written by its own key: a map per key. */
  def map[K, V](name: String, keys: Encoder[K], values: Encoder[V]): Entries[K, V]
}

private[spark] object KeyStates {
  /**
   * The state variable a kind's variable `name` is kept in. Its own name, unlike every variable of
   * the layouts kept per key before 0.4.0 ([[PreviousLayouts]]), whose variables a query restarted
   * from such a checkpoint declares beside these.
   */
  def variable(name: String): String = s"${name}ByKey"

  /**
   * A key's entries as read from a checkpoint (`read_state`), by variable: this release's entries
   * (`entry` null for a value) and, not converted yet, the previous release's values, maps and lists
   * of the key's own group ([[previousVariables]]).
   */
  final class Snapshot(key: Array[Byte]) extends KeyStates {
    private val entries = mutable.Map.empty[String, mutable.ArrayBuffer[(Any, Any)]]

    /** Adds what the checkpoint holds for the key in `variable` (as the checkpoint names it), under `entry` (null for a value). */
    def put(variable: String, entry: Any, value: Any): Unit = entries.getOrElseUpdate(variable, mutable.ArrayBuffer.empty) += ((entry, value))

    private def get(variable: String, entry: Any): Any = entries.get(variable).flatMap(_.find(_._1 == entry)).map(_._2).orNull
    private def set(variable: String, entry: Any, value: Any): Unit = { remove(variable, entry); put(variable, entry, value) }
    private def remove(variable: String, entry: Any): Unit = entries.get(variable).foreach(_.filterInPlace(_._1 != entry))

    override def use(keyBytes: Array[Byte]): Unit =
      if (!java.util.Arrays.equals(keyBytes, key)) throw new IllegalStateException("a snapshot holds one key's entries")
    override def current: Array[Byte] = key

    override def value[T](name: String, encoder: Encoder[T]): KeyValue[T] = new KeyValue[T] {
      private val of = variable(name)
      override def get(): T = Snapshot.this.get(of, null).asInstanceOf[T]
      override def update(value: T): Unit = set(of, null, value)
      override def clear(): Unit = remove(of, null)
    }

    override def map[K, V](name: String, keys: Encoder[K], values: Encoder[V]): Entries[K, V] = new Entries[K, V] {
      private val of = variable(name)
      override def get(entry: K): V = Snapshot.this.get(of, entry).asInstanceOf[V]
      override def update(entry: K, value: V): Unit = set(of, entry, value)
      override def remove(entry: K): Unit = Snapshot.this.remove(of, entry)
    }

    /** The previous release's variables of the key's group, as the checkpoint holds them (read only). */
    def previousVariables: PreviousLayout.Variables = new PreviousLayout.Variables {
      private def held(name: String): Seq[(Any, Any)] = entries.get(name).map(_.toSeq).getOrElse(Nil)
      private def reading[T](value: => T): PreviousLayout.Variable[T] = new PreviousLayout.Variable[T] {
        override def read(): T = value
        override def clear(): Unit = ()
      }
      override def value[T](name: String, encoder: Encoder[T]): PreviousLayout.Variable[Option[T]] =
        reading(held(name).headOption.map(_._2.asInstanceOf[T]))
      override def map[K, V](name: String, keys: Encoder[K], values: Encoder[V]): PreviousLayout.Variable[Seq[(K, V)]] =
        reading(held(name).map { case (k, v) => (k.asInstanceOf[K], v.asInstanceOf[V]) })
      override def list[T](name: String, encoder: Encoder[T]): PreviousLayout.Variable[Seq[T]] =
        reading(held(name).map(_._2.asInstanceOf[T]))
    }
  }
}

/**
 * transformWithState's state of a group, the key's entries in each variable under its bytes. Spark
 * takes each variable's declaration once, when the processor starts: a variable asked for again
 * is the one declared.
 */
private[spark] final class HandleKeyStates(handle: StatefulProcessorHandle) extends KeyStates {
  private var key: Array[Byte] = _
  private val declared = mutable.Map.empty[String, AnyRef]

  override def use(keyBytes: Array[Byte]): Unit = key = keyBytes
  override def current: Array[Byte] = key

  override def value[T](name: String, encoder: Encoder[T]): KeyValue[T] =
    declared.getOrElseUpdate(name, {
      val state = handle.getMapState[Array[Byte], T](KeyStates.variable(name), Encoders.BINARY, encoder, TTLConfig.NONE)
      new KeyValue[T] {
        override def get(): T = state.getValue(key)
        override def update(value: T): Unit = state.updateValue(key, value)
        override def clear(): Unit = state.removeKey(key)
      }
    }).asInstanceOf[KeyValue[T]]

  override def map[K, V](name: String, keys: Encoder[K], values: Encoder[V]): Entries[K, V] =
    declared.getOrElseUpdate(name, {
      val state: MapState[(Array[Byte], K), V] =
        handle.getMapState[(Array[Byte], K), V](KeyStates.variable(name), Encoders.tuple(Encoders.BINARY, keys), values, TTLConfig.NONE)
      new Entries[K, V] {
        override def get(entry: K): V = state.getValue((key, entry))
        override def update(entry: K, value: V): Unit = state.updateValue((key, entry), value)
        override def remove(entry: K): Unit = state.removeKey((key, entry))
      }
    }).asInstanceOf[Entries[K, V]]
}

/** A key's map in state, read entry by entry: `get` is null for an entry it does not hold. */
private[spark] trait Entries[K, V] {
  def get(entry: K): V
  def update(entry: K, value: V): Unit
  def remove(entry: K): Unit
}
