package windowagg.spark.common

import java.util.Locale

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, CodegenFallback, ExprCode}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, LongType}
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.core.ResolvedWindows

/**
 * Aggregation before the shuffle: each map task combines its rows per (keys, partial time) with the
 * query's own aggregates, through Spark's partial aggregation (hash-based and code-generated, or
 * object-hash or sort-based as Spark picks for the aggregates' buffers, spilling as Spark's does), and
 * ships one partial per group with its row count. The windows of every kind are unions of whole
 * partial times (a slice, or a time), so the window operator merges partials as it would fold rows.
 *
 * The planner chooses it ([[choose]]), and says why in the operator's EXPLAIN line.
 */
object AggregateBeforeShuffle {
  /** `auto` (the default), `always` or `never`: whether windowed aggregations aggregate before the shuffle. */
  val Conf = "spark.windowagg.aggregateBeforeShuffle"
  /** The setting it replaced (0.3.0, streaming only), refused with the new one's name. */
  private val StreamingConf = "spark.windowagg.streaming.mergeBeforeShuffle"

  sealed abstract class Mode(val name: String)
  case object Auto extends Mode("auto")
  case object Always extends Mode("always")
  case object Never extends Mode("never")

  def mode(conf: SQLConf): Mode = {
    if (conf.contains(StreamingConf)) {
      throw WindowAggException(WindowAggError.INVALID_OPTION,
        s"$StreamingConf was replaced by $Conf (auto, always or never), for batch and streaming alike")
    }
    conf.getConfString(Conf, Auto.name).trim.toLowerCase(Locale.ROOT) match {
      case Auto.name => Auto
      case Always.name => Always
      case Never.name => Never
      case other => throw WindowAggException(WindowAggError.INVALID_OPTION, s"$Conf must be auto, always or never, not '$other'")
    }
  }

  /** Whether the rows are aggregated before the shuffle, and why: the operator's EXPLAIN line says it. */
  final case class Choice(aggregated: Boolean, why: String) {
    override def toString: String = (if (aggregated) "partials aggregated before the shuffle" else "rows") + s" ($why)"
  }

  /**
   * Aggregating before the shuffle gives the same results wherever a window's aggregate does not
   * depend on its rows' order or on a row's own columns beyond the aggregates': not for kinds cut at
   * rows (they count rows), sessions with a per-row gap (a row's gap is read one by one), or
   * aggregates whose result depends on the order partials merge in. Where it may, `auto` does it when
   * the kind's partial times span many times (slices), so it pays whatever the data; with one
   * partial per distinct time it would merge only rows that share a time, so `always` forces it.
   */
  def choose(mode: Mode, engine: Engine, functions: Seq[AggregateFunction], perRowLength: Boolean): Choice = {
    val impossible = engine.readsRowsOneByOne(perRowLength).orElse(functions.find(f => !mergesInAnyOrder(f)).map(f =>
      s"${f.prettyName} depends on the order its rows are merged in"))
    impossible match {
      case Some(why) => Choice(aggregated = false, why)
      case None => mode match {
        case Never => Choice(aggregated = false, s"$Conf=never")
        case Always => Choice(aggregated = true, s"$Conf=always")
        case Auto =>
          if (engine.windows.partialsSpanTimes) Choice(aggregated = true, "per key and slice of the definition")
          else Choice(aggregated = false, s"each time is its own partial, so little would merge; $Conf=always forces it")
      }
    }
  }

  /**
   * Whether an aggregate's result does not depend on the order its partials merge in (partials of
   * one key from different map tasks interleave in time; floating-point sums may differ in their last
   * bits, as with Spark's own partial aggregation).
   */
  def mergesInAnyOrder(f: AggregateFunction): Boolean = f match {
    case _: Sum | _: Count | _: Min | _: Max | _: Average | _: HyperLogLogPlusPlus => true
    case _: CentralMomentAgg | _: Covariance | _: PearsonCorrelation | _: BitAggregate => true
    case _ => false
  }

  /**
   * The partials' columns after the keys: their partial time, where rows list their windows the
   * partial's windows (the listing; where windows do not overlap, the end of the one window that
   * starts at the partial time, or null for none), and the row count; then the aggregates' buffers.
   */
  final case class Partials(partialTime: Attribute, listing: Option[Attribute], rowCount: Attribute)

  /**
   * Spark's partial aggregation of `child` per (keys, partial time of `time`), and where rows list
   * their windows in `listing` per those windows too, as the engine groups them ([[Engine.partialTime]]):
   * the row count and `functions` (each with its FILTER,
   * `true` for none). Its output: the keys, the partial time (null for rows with a null time), the
   * windows, the row count, then the functions' buffers.
   */
  def plan(keys: Seq[Attribute], time: Attribute, listing: Option[Attribute], engine: Engine,
      functions: Seq[AggregateFunction], filters: Seq[Expression], child: SparkPlan): (SparkPlan, Partials) = {
    val (partialTime, listed) = engine.partialTime(time, keys, listing)
    val aggregates = (Count(Literal(1)) +: functions).zip(Literal.TrueLiteral +: filters).map { case (f, filter) =>
      AggregateExpression(f, Partial, isDistinct = false, Option(filter).filterNot(_ == Literal.TrueLiteral))
    }
    val aggregated = SparkInternals.partialAggregate((keys :+ Alias(partialTime, "_partial_time")()) ++ listed, aggregates, child)
    val out = aggregated.output
    val afterTime = keys.length + 1
    (aggregated, Partials(out(keys.length), listed.map(_ => out(afterTime)), out(afterTime + listed.size)))
  }
}

/**
 * The time a row is aggregated under ([[windowagg.core.ResolvedWindows.partialTime]]: its slice, or its time), or null
 * for a null time: the grouping key of the aggregation before the shuffle.
 */
case class PartialTimeOf(time: Expression, windows: ResolvedWindows) extends UnaryExpression {
  override def child: Expression = time
  override def dataType: DataType = LongType
  override def nullable: Boolean = time.nullable

  // TIMESTAMP, TIMESTAMP_NTZ and BIGINT are longs; narrower integral epochs widen
  override protected def nullSafeEval(value: Any): Any = windows.partialTime(value.asInstanceOf[Number].longValue)

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val kind = ctx.addReferenceObj("windows", windows, classOf[ResolvedWindows].getName)
    nullSafeCodeGen(ctx, ev, t => s"${ev.value} = $kind.partialTime((long) $t);")
  }

  override def toString: String = s"partial_time($time)"
  override protected def withNewChildInternal(newChild: Expression): PartialTimeOf = copy(time = newChild)
}

/**
 * [[PartialTimeOf]] where each key has its own windows ([[windowagg.core.ResolvedWindows.perKey]]): the row's key
 * picks them. Rows before the shuffle come in no key order, so each is looked up (interpreted).
 */
case class PartialTimeOfKey(time: Expression, keys: Seq[Expression], windows: ResolvedWindows) extends Expression with CodegenFallback {
  override def children: Seq[Expression] = time +: keys
  override def dataType: DataType = LongType
  override def nullable: Boolean = time.nullable

  @transient private lazy val keyWindows = new WindowsOfKey(windows, keys.map(_.dataType))
  @transient private lazy val keyOf = UnsafeProjection.create(keys)

  override def eval(input: InternalRow): Any = {
    val t = time.eval(input)
    if (t == null) null else keyWindows(keyOf(input)).partialTime(t.asInstanceOf[Number].longValue)
  }

  override def toString: String = s"partial_time($time, ${keys.mkString(", ")})"
  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): PartialTimeOfKey =
    copy(time = newChildren.head, keys = newChildren.tail)
}
