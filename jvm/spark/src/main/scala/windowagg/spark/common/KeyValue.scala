package windowagg.spark.common

/** A key's value in streaming state: `get` is null when it has none (one read). */
private[spark] trait KeyValue[T] {
  def get(): T
  def update(value: T): Unit
  def clear(): Unit
}
