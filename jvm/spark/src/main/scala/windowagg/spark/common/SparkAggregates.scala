package windowagg.spark.common

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.trees.LeafLike
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.Platform

import windowagg.core.PartialAggregation

/**
 * Drives any mergeable Spark aggregate function by its buffers, so the windowing core's combine is
 * Spark's own merge: declarative aggregates through their initial/update/merge/evaluate
 * expressions (compiled to mutable projections), imperative ones (including typed imperative ones
 * such as collect_list, percentile_approx and Scala `Aggregator`s through `udaf`) through their
 * initialize/update/merge/eval methods.
 *
 * All functions share one buffer row: each function's buffer fields at its own offset, as in
 * Spark's aggregation operators. Typed imperative buffers hold their objects, never serialized:
 * partials are merged in memory, so nothing is serialized per record.
 *
 * Created per task (projections are not serializable); `functions` and `filters` (`true` for
 * none) are resolved against `input`, the attributes of the rows given to `update`, and bound here.
 * With `partialsAt`, those rows are partial aggregates instead, Spark's partial aggregation's output
 * ([[AggregateBeforeShuffle]]) whose buffers start at that ordinal: `update` merges them in with
 * Spark's own merge, and their FILTERs were applied where they were made.
 */
final class SparkAggregates(
    functions: Seq[AggregateFunction],
    filters: Seq[Expression],
    input: Seq[Attribute],
    partitionIndex: Int,
    partialsAt: Option[Int] = None) extends PartialAggregation[InternalRow] {

  require(functions.length == filters.length)

  private val offsets: Seq[Int] = functions.scanLeft(0)(_ + _.aggBufferAttributes.length).init
  private val bound: Seq[AggregateFunction] = functions.zip(offsets).map {
    case (f: ImperativeAggregate, offset) =>
      // imperative functions evaluate their inputs themselves, so they are bound to the input row
      // (partial input has no raw columns: they only merge)
      val withInputs = if (partialsAt.isDefined) f else BindReferences.bindReference(f: Expression, input)
      withInputs.asInstanceOf[ImperativeAggregate].withNewMutableAggBufferOffset(offset).withNewInputAggBufferOffset(offset)
    case (f, _) => f
  }
  private val bufferAttributes: Seq[AttributeReference] = functions.flatMap(_.aggBufferAttributes)
  private val laterBufferAttributes: Seq[AttributeReference] = bufferAttributes.map(_.newInstance())
  private val bufferTypes: IndexedSeq[DataType] = bufferAttributes.map(_.dataType).toIndexedSeq

  private val declarative = bound.collect { case d: DeclarativeAggregate => d }
  private val imperative: Array[ImperativeAggregate] = bound.collect {
    case i: ImperativeAggregate if !i.isInstanceOf[TypedImperativeAggregate[_]] => i
  }.toArray
  private val (typed, typedOffsets) = bound.zip(offsets).collect {
    case (t: TypedImperativeAggregate[_], offset) => (t.asInstanceOf[TypedImperativeAggregate[Any]], offset)
  }.toArray.unzip

  /** For each declarative function, its slice of a projection over the whole buffer; others keep their fields. */
  private def perFunction(declared: DeclarativeAggregate => Seq[Expression]): Seq[Expression] =
    bound.zip(functions).flatMap {
      case (d: DeclarativeAggregate, _) => declared(d)
      case (other, _) => Seq.fill(other.aggBufferAttributes.length)(NoOp) // left to the methods
    }

  private val initialize: MutableProjection = {
    val init = bound.flatMap {
      case d: DeclarativeAggregate => d.initialValues
      case other => Seq.fill(other.aggBufferAttributes.length)(NoOp)
    }
    MutableProjection.create(init, Nil)
  }

  private val updateDeclarative: MutableProjection = {
    val exprs = partialsAt match {
      case None =>
        bound.zip(filters).flatMap {
          case (d: DeclarativeAggregate, filter) =>
            if (filter == Literal.TrueLiteral) d.updateExpressions
            else d.updateExpressions.zip(d.aggBufferAttributes).map { case (u, a) => If(filter, u, a) }
          case (other, _) => Seq.fill(other.aggBufferAttributes.length)(NoOp)
        }
      case Some(at) =>
        // mergeExpressions read the partial through inputAggBufferAttributes: here, the input row's
        // fields at the buffer's place after `at`
        perFunction { d =>
          val first = at + bufferAttributes.indexWhere(_.exprId == d.aggBufferAttributes.head.exprId)
          val partial: Map[ExprId, Attribute] = d.inputAggBufferAttributes.map(_.exprId)
            .zip(input.slice(first, first + d.aggBufferAttributes.length)).toMap
          d.mergeExpressions.map(_.transform { case a: AttributeReference if partial.contains(a.exprId) => partial(a.exprId) })
        }
    }
    val p = MutableProjection.create(exprs, bufferAttributes ++ input)
    p.initialize(partitionIndex)
    p
  }

  private val imperativeFilters: Array[InternalRow => Boolean] = bound.zip(filters).collect {
    case (_: ImperativeAggregate, filter) =>
      if (filter == Literal.TrueLiteral || partialsAt.isDefined) (_: InternalRow) => true
      else {
        val predicate = Predicate.create(filter, input)
        predicate.initialize(partitionIndex)
        (row: InternalRow) => predicate.eval(row)
      }
  }.toArray
  private val allImperative: Array[ImperativeAggregate] = bound.collect { case i: ImperativeAggregate => i }.toArray
  // with partial input: each imperative function reading its partial at its buffer's place after `at`
  private val partialMerging: Array[ImperativeAggregate] = partialsAt.fold(Array.empty[ImperativeAggregate]) { at =>
    bound.zip(offsets).collect { case (i: ImperativeAggregate, offset) => i.withNewInputAggBufferOffset(at + offset) }.toArray
  }

  private val mergeDeclarative: MutableProjection = {
    val exprs = perFunction { d =>
      // mergeExpressions read the later partial through inputAggBufferAttributes
      val rename: Map[ExprId, Attribute] = d.inputAggBufferAttributes.map(_.exprId)
        .zip(laterOf(d)).toMap
      d.mergeExpressions.map(_.transform { case a: AttributeReference if rename.contains(a.exprId) => rename(a.exprId) })
    }
    MutableProjection.create(exprs, bufferAttributes ++ laterBufferAttributes)
  }

  private def laterOf(d: DeclarativeAggregate): Seq[Attribute] = {
    val first = bufferAttributes.indexWhere(_.exprId == d.aggBufferAttributes.head.exprId)
    laterBufferAttributes.slice(first, first + d.aggBufferAttributes.length)
  }

  private val hasDeclarative = declarative.nonEmpty

  // Buffer fields that may point into an input row's memory (which the sort reuses) are copied.
  private val borrowedFields: Array[(Int, DataType)] = bufferAttributes.zipWithIndex.collect {
    case (a, i) if declarative.exists(_.aggBufferAttributes.exists(_.exprId == a.exprId)) &&
        !UnsafeRow.isFixedLength(a.dataType) => (i, a.dataType)
  }.toArray

  private val joined = new JoinedRow

  // the aggregates' values over a buffer alone, for `result`
  private lazy val evaluate: MutableProjection = MutableProjection.create(resultExpressions(bufferAttributes, 0), bufferAttributes)
  private lazy val resultRow = new SpecificInternalRow(bound.map(_.dataType))

  /**
   * Whether every buffer field has a fixed width, so a buffer can be an UnsafeRow updated in place:
   * made, copied and stored as one block of bytes, with no field boxed on the way in or out.
   */
  private val fixedWidth: Boolean = typed.isEmpty && bufferTypes.forall(UnsafeRow.isFixedLength)
  // what newEmpty copies: every field null, then initialized by the aggregates
  private lazy val emptyFixed: UnsafeRow = {
    val nulls = UnsafeProjection.create(bufferTypes.toArray)(new GenericInternalRow(bufferTypes.length)).copy()
    reset(nulls).asInstanceOf[UnsafeRow]
  }

  override def newEmpty(): InternalRow =
    if (fixedWidth) emptyFixed.copy() else reset(new SpecificInternalRow(bufferTypes))

  override def reset(buffer: InternalRow): InternalRow = {
    if (hasDeclarative) initialize.target(buffer)(InternalRow.empty)
    var i = 0
    while (i < allImperative.length) { allImperative(i).initialize(buffer); i += 1 }
    buffer
  }

  // Fixed-width buffers are copied as bytes: no merge, no field boxed.
  override def copyInto(target: InternalRow, source: InternalRow): InternalRow = (target, source) match {
    case (to: UnsafeRow, from: UnsafeRow) if to.getBaseObject.isInstanceOf[Array[Byte]] && to.getBaseOffset == Platform.BYTE_ARRAY_OFFSET =>
      to.copyFrom(from)
      to
    case _ => super.copyInto(target, source)
  }

  /** Adds one input row (in time order), or with `partialsAt` one partial aggregate, to `buffer`. */
  def update(buffer: InternalRow, row: InternalRow): Unit = {
    if (hasDeclarative) {
      updateDeclarative.target(buffer)(joined(buffer, row))
      var i = 0
      while (i < borrowedFields.length) {
        val (index, dataType) = borrowedFields(i)
        if (!buffer.isNullAt(index)) buffer.update(index, InternalRow.copyValue(buffer.get(index, dataType)))
        i += 1
      }
    }
    var i = 0
    if (partialsAt.isDefined) {
      while (i < partialMerging.length) { partialMerging(i).merge(buffer, row); i += 1 }
    } else {
      while (i < allImperative.length) {
        if (imperativeFilters(i)(row)) allImperative(i).update(buffer, row)
        i += 1
      }
    }
  }

  override def mergeInto(earlier: InternalRow, later: InternalRow): InternalRow = {
    if (hasDeclarative) mergeDeclarative.target(earlier)(joined(earlier, later))
    var i = 0
    while (i < imperative.length) { imperative(i).merge(earlier, later); i += 1 }
    i = 0
    while (i < typed.length) {
      val offset = typedOffsets(i)
      val f = typed(i)
      val laterObject = later.get(offset, BinaryType)
      var merged = f.merge(earlier.get(offset, BinaryType), laterObject)
      // A buffer must never be shared: copy if an aggregate hands back its input object.
      if (merged.asInstanceOf[AnyRef] eq laterObject.asInstanceOf[AnyRef]) merged = f.deserialize(f.serialize(merged))
      earlier.update(offset, merged)
      i += 1
    }
    earlier
  }

  private lazy val toUnsafe = UnsafeProjection.create(bufferTypes.toArray)
  private val stored = new UnsafeRow(bufferTypes.length) // points at the bytes being decoded

  /** A compact, self-contained encoding of `buffer` (typed buffers serialized by their aggregate), owned by the caller. */
  def toBytes(buffer: InternalRow): Array[Byte] = buffer match {
    case fixed: UnsafeRow => fixed.copy().getBytes // the bytes are the caller's, not the buffer's
    case _ => encode(buffer)
  }

  private def encode(buffer: InternalRow): Array[Byte] = {
    var i = 0
    val objects = new Array[Any](typed.length)
    while (i < typed.length) {
      val offset = typedOffsets(i)
      objects(i) = buffer.get(offset, BinaryType)
      buffer.update(offset, typed(i).serialize(objects(i)))
      i += 1
    }
    val bytes = toUnsafe(buffer).copy().getBytes // the projection reuses its row: the bytes must be ours
    i = 0
    while (i < typed.length) { buffer.update(typedOffsets(i), objects(i)); i += 1 }
    bytes
  }

  /** A buffer decoded from `toBytes`, owned by the caller. */
  def fromBytes(bytes: Array[Byte]): InternalRow = fromBytes(bytes, 0, bytes.length)

  /**
   * A buffer decoded from `toBytes` output kept at `at` in `bytes`, owned by the caller; variable-length
   * fields may point into `bytes`, which must not change afterwards.
   */
  def fromBytes(bytes: Array[Byte], at: Int, length: Int): InternalRow = if (fixedWidth) {
    val buffer = new UnsafeRow(bufferTypes.length)
    buffer.pointTo(java.util.Arrays.copyOfRange(bytes, at, at + length), length)
    buffer
  } else {
    stored.pointTo(bytes, Platform.BYTE_ARRAY_OFFSET + at, length)
    val buffer = new SpecificInternalRow(bufferTypes)
    var i = 0
    while (i < bufferTypes.length) {
      if (!stored.isNullAt(i)) buffer.update(i, stored.get(i, bufferTypes(i)))
      i += 1
    }
    i = 0
    while (i < typed.length) {
      val offset = typedOffsets(i)
      buffer.update(offset, typed(i).deserialize(stored.getBinary(offset)))
      i += 1
    }
    buffer
  }

  /** Fresh attributes for a buffer's fields, to place a buffer inside a wider row ([[resultExpressions]]). */
  def newBufferAttributes(): Seq[Attribute] = bufferAttributes.map(_.newInstance())

  /**
   * The aggregates' values, in function order, as expressions over a row that holds a buffer's
   * fields, named `buffer` (from [[newBufferAttributes]]), from its ordinal `at` on: declarative
   * functions by their evaluate expressions, imperative ones by their `eval`. One projection can
   * then write a whole output row, with no value boxed on the way.
   */
  def resultExpressions(buffer: Seq[Attribute], at: Int): Seq[Expression] = {
    val rename: Map[ExprId, Attribute] = bufferAttributes.map(_.exprId).zip(buffer).toMap
    bound.zip(offsets).map {
      case (d: DeclarativeAggregate, _) =>
        d.evaluateExpression.transform { case a: AttributeReference if rename.contains(a.exprId) => rename(a.exprId) }
      case (i: ImperativeAggregate, offset) => ImperativeResult(i.withNewMutableAggBufferOffset(at + offset))
      case (other, _) => throw new IllegalStateException(s"not a declarative or imperative aggregate: $other")
    }
  }

  /** The aggregates' values for `buffer`, in function order; the row is reused. */
  def result(buffer: InternalRow): InternalRow = evaluate.target(resultRow)(buffer)
}

/**
 * An imperative aggregate's value, from its buffer inside the input row (where its buffer offset
 * points). Not a `LeafExpression`, which the fallback from code generation would evaluate without the row.
 */
private final case class ImperativeResult(function: ImperativeAggregate)
    extends Expression with LeafLike[Expression] with CodegenFallback {
  override def dataType: DataType = function.dataType
  override def nullable: Boolean = function.nullable
  override def eval(input: InternalRow): Any = function.eval(input)
}
