package windowagg.spark.streaming

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal, Murmur3Hash}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode, FalseLiteral}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.types.{DataType, IntegerType}

/**
 * The group a streaming row's keys fall in on their way to transformWithState: one per partition
 * of the query's state, the least int that Spark's hash partitioning sends to the partition the
 * keys' own hash picks (Murmur3 with Spark's seed, modulo `partitions`). Grouping by it gives each
 * state partition one group, whose one timer stands for its keys' (`Timers`), with keys spread
 * over partitions as grouping by the keys themselves would spread them.
 */
case class KeyBucket(children: Seq[Expression], partitions: Int) extends Expression {
  @transient private lazy val keyHash = new Murmur3Hash(children)
  @transient private lazy val buckets: Array[Int] = KeyBucket.buckets(partitions)

  override def nullable: Boolean = false
  override def dataType: DataType = IntegerType

  override def eval(input: InternalRow): Any =
    buckets(Math.floorMod(keyHash.eval(input).asInstanceOf[Int], partitions))

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val hash = keyHash.genCode(ctx)
    val table = ctx.addReferenceObj("buckets", buckets, "int[]")
    ev.copy(code = code"""
      ${hash.code}
      int ${ev.value} = $table[java.lang.Math.floorMod(${hash.value}, $partitions)];""", isNull = FalseLiteral)
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): KeyBucket = copy(children = newChildren)
}

object KeyBucket {
  /** For each of `partitions` partitions, the least non-negative int Spark's hash partitioning sends there. */
  def buckets(partitions: Int): Array[Int] = {
    require(partitions > 0, s"a query's state has at least one partition, not $partitions")
    val found = Array.fill(partitions)(-1)
    var left = partitions
    var bucket = 0
    while (left > 0) {
      val partition = Math.floorMod(new Murmur3Hash(Seq(Literal(bucket))).eval().asInstanceOf[Int], partitions)
      if (found(partition) < 0) {
        found(partition) = bucket
        left -= 1
      }
      bucket += 1
    }
    found
  }
}
