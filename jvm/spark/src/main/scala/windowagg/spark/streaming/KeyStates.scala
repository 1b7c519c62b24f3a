package windowagg.spark.streaming

import org.apache.spark.sql.{Encoder, Encoders}
import org.apache.spark.sql.streaming.{MapState, StatefulProcessorHandle, TTLConfig}

/**
 * A kind's state variables per key. transformWithState keeps state per grouping key, which is the
 * key's state partition ([[KeyBucket]]): so each variable is a map of the partition's state with
 * the key's bytes in its own keys, and reads and writes the entry of the key at hand ([[use]]).
 */
private[spark] final class KeyStates(handle: StatefulProcessorHandle) {
  private var key: Array[Byte] = _

  /** The key whose entries the variables read and write from now on (its row's bytes). */
  def use(keyBytes: Array[Byte]): Unit = key = keyBytes

  def current: Array[Byte] = key

  /** One value per key. */
  def value[T](name: String, encoder: Encoder[T]): KeyValue[T] =
    new KeyValue(handle.getMapState[Array[Byte], T](name, Encoders.BINARY, encoder, TTLConfig.NONE))

  /** Entries per key, each read and written by its own key: a map per key. */
  def map[K, V](name: String, keys: Encoder[K], values: Encoder[V]): Entries[K, V] =
    new KeyEntries(handle.getMapState[(Array[Byte], K), V](name, Encoders.tuple(Encoders.BINARY, keys), values, TTLConfig.NONE))

  final class KeyValue[T] private[KeyStates] (state: MapState[Array[Byte], T]) {
    /** The key's value, or null when it has none (one read). */
    def get(): T = state.getValue(key)
    def update(value: T): Unit = state.updateValue(key, value)
    def clear(): Unit = state.removeKey(key)
  }

  private final class KeyEntries[K, V](state: MapState[(Array[Byte], K), V]) extends Entries[K, V] {
    override def get(entry: K): V = state.getValue((key, entry))
    override def update(entry: K, value: V): Unit = state.updateValue((key, entry), value)
    override def remove(entry: K): Unit = state.removeKey((key, entry))
  }
}

/** A key's map in state, read entry by entry: `get` is null for an entry it does not hold. */
private[spark] trait Entries[K, V] {
  def get(entry: K): V
  def update(entry: K, value: V): Unit
  def remove(entry: K): Unit
}
