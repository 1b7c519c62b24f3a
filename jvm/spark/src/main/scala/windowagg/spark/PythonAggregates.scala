package windowagg.spark

import java.io.ByteArrayOutputStream
import java.nio.charset.StandardCharsets

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, CollectList, Count, Max, Min}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, FlatMapCoGroupsInArrow, FlatMapCoGroupsInPandas, Filter,
  Generate, LogicalPlan, Project, Sort, Union}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{ArrayType, BinaryType, DataType, IntegerType, LongType, StructField, StructType}
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.spark.common.{Engine, PackedRow, UnpackedRow, WindowAggError, WindowAggException, WindowAggregate,
  WindowView}

/**
 * Grouped-aggregate pandas and Arrow UDFs (`@pandas_udf` Series -> scalar, `arrow_udf`) over
 * windowagg windows, in batch queries and (collected rows, [[overStreamedWindows]]) in streaming.
 *
 * Such a UDF reads all rows of a group at once, so it cannot be merged from partials. The windows
 * are computed as for any other aggregation, with a few more aggregates, and the UDFs after them, in
 * one of two ways ([[Intake]]):
 *  - [[Runs]], where each window's rows are one run of its key's rows in time order (windows that are
 *    spans of time): the windows count their rows and keep their first and last row's times; each
 *    key's rows then go to Python once, beside its windows (Spark's cogroup by key), and
 *    `windowagg._aggregates` calls the UDFs on each window's slice of them, as Spark's bounded OVER
 *    frames call a pandas UDF on slices of a partition;
 *  - [[Collected]], for the others (Storm's windows, listed windows, sessions whose gap a column
 *    gives) and the UDFs' iterator forms: each window's rows (the UDFs' arguments and the time) are
 *    collected as the windows are computed, spread back into rows in time order and handed to Spark's
 *    Python aggregation grouped by the window, with no second shuffle.
 * Either way, the keys, the bounds and the built-in aggregates' values ride through packed in one
 * binary column, so they come out exactly as the windows produced them (grouping on them would
 * normalize floating-point keys and refuse map values).
 */
object PythonAggregates {

  def isPython(ae: AggregateExpression): Boolean = ae.aggregateFunction.isInstanceOf[PythonUDAF]

  /** What a pandas/Arrow aggregate UDF cannot be given over windows, refused with its name. */
  def check(ae: AggregateExpression, streaming: Boolean): Unit = {
    val udf = ae.aggregateFunction.asInstanceOf[PythonUDAF]
    val name = udf.name
    if (streaming && SparkInternals.cogroupedEvaluation(udf.evalType).isEmpty) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"$name is an iterator form of a pandas/Arrow aggregate UDF: a streaming query calls a UDF on each window's " +
          "rows at once (Series -> scalar, or Arrow arrays -> scalar); declare it over whole Series or arrays")
    }
    if (ae.isDistinct) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE, s"$name(DISTINCT ...): a pandas/Arrow aggregate UDF takes no DISTINCT")
    }
    if (ae.filter.isDefined) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"$name(...) FILTER (WHERE ...): a pandas/Arrow aggregate UDF takes no FILTER; filter its arguments or the rows instead")
    }
  }

  /** What the window aggregation computes for the UDFs: `aggregates` over `views`, whose values are `outputs`. */
  sealed trait Intake {
    def aggregates: Seq[AggregateExpression]
    def views: Seq[WindowView.View] = aggregates.map(_ => WindowView.All)
    def outputs: Seq[AttributeReference]
    /** The UDFs' distinct arguments, expressions of the aggregation's input rows. */
    def arguments: Seq[Expression]
  }

  /**
   * Each window's rows collected in a list, those of Storm's `view` (new or expired rows) or all: the
   * row's time, then each distinct argument.
   */
  final case class Collected(collect: AggregateExpression, view: WindowView.View, output: AttributeReference,
      arguments: Seq[Expression]) extends Intake {
    override def aggregates: Seq[AggregateExpression] = Seq(collect)
    override def views: Seq[WindowView.View] = Seq(view)
    override def outputs: Seq[AttributeReference] = Seq(output)
  }

  /** Each window's row count and its first and last row's times, in ticks. */
  final case class Runs(time: Attribute, arguments: Seq[Expression], cogrouped: Int, arrow: Boolean) extends Intake {
    override val aggregates: Seq[AggregateExpression] =
      Seq(Count(Literal(1)), Min(TimeTicks(time)), Max(TimeTicks(time))).map(_.toAggregateExpression())
    val count: AttributeReference = AttributeReference("_n", LongType, nullable = false)()
    val first: AttributeReference = AttributeReference("_first", LongType)()
    val last: AttributeReference = AttributeReference("_last", LongType)()
    override val outputs: Seq[AttributeReference] = Seq(count, first, last)
  }

  /**
   * How the window aggregation of `input`'s rows over `engine`'s windows (whose sessions' gap a column
   * gives, with `gapColumn`) takes `udfs`, each over all of a window's rows or Storm's view of them.
   */
  def intake(udfs: Seq[(AggregateExpression, WindowView.View)], time: Attribute, engine: Engine, gapColumn: Boolean,
      input: LogicalPlan, streaming: Boolean): Intake = {
    val functions = udfs.map(_._1.aggregateFunction.asInstanceOf[PythonUDAF])
    // Spark's Python aggregation is over one set of rows per window
    val byView = udfs.groupBy(_._2)
    if (byView.size > 1) {
      val named = byView.toSeq.map { case (view, ofView) =>
        val name = ofView.head._1.aggregateFunction.asInstanceOf[PythonUDAF].name
        if (view == WindowView.All) s"$name(...)" else s"${view.name}($name(...))"
      }
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"${named.mkString(" and ")} are pandas/Arrow aggregate UDFs over different rows of a window: Spark computes such " +
          "UDFs over one set of rows per aggregation; compute each view's in an aggregation of its own and join them")
    }
    val view = udfs.head._2
    // Spark runs them in one Python aggregation, of one evaluation type
    val byType = functions.groupBy(_.evalType)
    if (byType.size > 1) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"${byType.values.map(_.head.name).mkString(" and ")} are Python aggregate UDFs of different kinds (pandas, Arrow, " +
          "or their iterator forms): Spark computes one kind in one aggregation; compute them in two aggregations and join them")
    }
    val arguments = functions.flatMap(_.children.map(valueOf))
      .foldLeft(Seq.empty[Expression]) { (seen, e) => if (seen.exists(_.semanticEquals(e))) seen else seen :+ e }
    // Runs read the input twice (for the windows, and for their rows), so it must give the same rows
    // both times; rows a session's gap column leaves out may sit between a session's rows; and its
    // Python side passes arguments by position only
    // (and in streaming a window's rows are in the state; only those collected are)
    val runs = !streaming && engine.windowsAreRunsOfRows && !gapColumn && !input.exists(_.expressions.exists(!_.deterministic)) &&
      !functions.exists(_.children.exists(_.isInstanceOf[NamedArgumentExpression]))
    SparkInternals.cogroupedEvaluation(functions.head.evalType).filter(_ => runs) match {
      case Some((cogrouped, arrow)) => Runs(time, arguments, cogrouped, arrow)
      case None =>
        val fields = (time +: arguments).zipWithIndex.flatMap { case (e, i) => Seq(Literal(s"_$i"), e) }
        val collect = new CollectList(CreateNamedStruct(fields)).toAggregateExpression()
        Collected(collect, view, AttributeReference("_window_rows", collect.dataType, nullable = false)(), arguments)
    }
  }

  /**
   * The plan computing `results` (the Aggregate's output, over `windows`' output and the UDFs'
   * values, `udfs` paired with the attributes standing for them) from the windows, the UDFs' values
   * computed as `intake` says; `input` is the window aggregation's input.
   */
  def plan(windows: WindowAggregate, input: LogicalPlan, intake: Intake, udfs: Seq[(AggregateExpression, Attribute)],
      results: Seq[NamedExpression]): LogicalPlan = {
    val carried = windows.output.filterNot(a => intake.outputs.exists(_.exprId == a.exprId))
    val packed = Alias(PackedRow(carried), "_window_values")()
    val (values, computed) = intake match {
      case c: Collected => overCollectedRows(windows, c, packed, udfs)
      case r: Runs => overRuns(windows, input, r, packed, udfs)
    }
    val unpacked = Alias(UnpackedRow(values, StructType(carried.map(a => StructField(a.name, a.dataType, a.nullable)))),
      "_window_values")()
    val unpacking = Project(unpacked +: udfs.map(_._2), computed)
    val carriedField: Map[ExprId, Expression] = carried.zipWithIndex.map { case (a, i) =>
      a.exprId -> GetStructField(unpacked.toAttribute, i, Some(a.name))
    }.toMap
    Project(results.map {
      case a: Attribute if carriedField.contains(a.exprId) => Alias(carriedField(a.exprId), a.name)(a.exprId, a.qualifier)
      case ne => ne.transformUp { case a: Attribute if carriedField.contains(a.exprId) => carriedField(a.exprId) }
        .asInstanceOf[NamedExpression]
    }, unpacking)
  }

  /**
   * Spark's Python aggregation over each window's collected rows (all, or Storm's view of them): the
   * packed values, and the plan giving them with the UDFs' values.
   */
  private def overCollectedRows(windows: WindowAggregate, rows: Collected, packed: Alias,
      udfs: Seq[(AggregateExpression, Attribute)]): (Attribute, LogicalPlan) = {
    // a window's identity: two windows of a key may share bounds and values (count windows over rows of one time)
    val windowId = Alias(MonotonicallyIncreasingID(), "_window_id")()
    val perWindow = Project(windows.keys ++ Seq(windowId, packed, rows.output), windows)

    val rowType = rows.output.dataType.asInstanceOf[ArrayType].elementType.asInstanceOf[StructType]
    val position = AttributeReference("_row_position", IntegerType, nullable = false)()
    val row = AttributeReference("_row", rowType, nullable = false)()
    val spread = Generate(PosExplode(rows.output), Seq(perWindow.output.length - 1), outer = false, None,
      Seq(position, row), perWindow)
    val fields = rowType.fields.indices.map(i => Alias(GetStructField(row, i), s"_row_$i")())
    val grouping = windows.keys ++ Seq(windowId.toAttribute, packed.toAttribute)
    val withFields = Project(grouping ++ Seq(position) ++ fields, spread)
    // time order, and the collected order among rows of one time
    val ordered = Sort((grouping ++ Seq(fields.head.toAttribute, position)).map(SortOrder(_, Ascending)),
      global = false, withFields)

    val argument = rows.arguments.zip(fields.tail.map(_.toAttribute))
    def fieldOf(e: Expression): Expression = e match {
      case NamedArgumentExpression(key, value) => NamedArgumentExpression(key, fieldOf(value))
      case value => argument.collectFirst { case (a, field) if a.semanticEquals(value) => field }.get
    }
    val values = udfs.map { case (ae, out) =>
      val udf = ae.aggregateFunction
      val overRows = ae.withNewChildren(udf.withNewChildren(udf.children.map(fieldOf)) +: ae.filter.toSeq)
      Alias(overRows, out.name)(exprId = out.exprId)
    }
    val aggregated = Aggregate(grouping, grouping ++ values, ordered)
    if (rows.view == WindowView.All) (packed.toAttribute, aggregated)
    else {
      // a window may have no new or no expired rows: its UDFs' values are null (Spark's own aggregates
      // are null over no rows), without calling them
      val none = Project(grouping ++ udfs.map { case (ae, out) => Alias(Literal(null, ae.dataType), out.name)() },
        Filter(EqualTo(Size(rows.output), Literal(0)), perWindow))
      (packed.toAttribute, Union(aggregated, none))
    }
  }

  /**
   * In streaming, the UDFs' values over the windows `streamed` emits (the windowed aggregation
   * `windows` planned through transformWithState): each row's collected rows (null for retractions
   * and late rows) go to Python in Arrow batches, many windows per batch, where
   * `windowagg._aggregates.collected` calls each UDF on each window's rows in time order; a window
   * emitted early, or again as it changes, is evaluated over its rows so far.
   */
  def overStreamedWindows(windows: WindowAggregate, streamed: LogicalPlan, rows: Collected,
      udfs: Seq[(AggregateExpression, Attribute)]): LogicalPlan = {
    val collected = streamed.output.find(_.exprId == rows.output.exprId)
      .getOrElse(throw new IllegalStateException(s"the streamed windows do not give ${rows.output}: ${streamed.output}"))
    def streamedOf(a: Attribute): Attribute = streamed.output.find(_.exprId == a.exprId).getOrElse(a)
    // what an error names: the window's bounds and, where there are keys, its key
    val named = Seq(windows.windowStart, windows.windowEnd).map(b => TimeTicks(streamedOf(b))) ++
      (if (windows.keys.isEmpty) Nil else Seq(CreateStruct(windows.keys.map(streamedOf))))
    val values = udfs.map { case (ae, out) =>
      val function = ae.aggregateFunction.asInstanceOf[PythonUDAF]
      val taking = function.children.map(c => rows.arguments.indexWhere(_.semanticEquals(valueOf(c))))
      val arrow = SparkInternals.cogroupedEvaluation(function.evalType).exists(_._2)
      // a timestamp argument reaches a pandas UDF in the session's time zone, as Spark's own conversion gives it
      val command = pickledCall("windowagg._aggregates", "collected", Bytes(SparkInternals.pythonCommand(function)),
        Tuple(taking.map(Int32)), Bool(arrow), Text(windows.timeColumn.windowType.typeName),
        Text(SQLConf.get.sessionLocalTimeZone))
      val udf = SparkInternals.pythonUDF(s"windowagg_windows_${function.name}", Seq(function), command, ae.dataType,
        collected +: named, SparkInternals.ScalarArrowEvalType)
      Alias(udf, out.name)(exprId = out.exprId)
    }
    Project(streamed.output ++ values, streamed)
  }

  /**
   * Each key's rows cogrouped with its windows, `windowagg._aggregates.sliced` calling the UDFs on
   * each window's run of rows: the packed values, and the plan giving them with the UDFs' values.
   */
  private def overRuns(windows: WindowAggregate, input: LogicalPlan, runs: Runs, packed: Alias,
      udfs: Seq[(AggregateExpression, Attribute)]): (Attribute, LogicalPlan) = {
    val rows = Project(
      windows.keys.zipWithIndex.map { case (k, i) => Alias(k, s"_k$i")() } ++ Seq(Alias(TimeTicks(runs.time), "_t")()) ++
        runs.arguments.zipWithIndex.map { case (e, i) => Alias(e, s"_a$i")() },
      Filter(IsNotNull(runs.time), input))
    // the windows keep their keys' attributes, so that their clustering by the keys holds for the cogroup
    val windowRuns = Project(windows.keys ++ Seq(Alias(packed.child, "_values")(), Alias(runs.first, "_first")(),
      Alias(runs.last, "_last")(), Alias(runs.count, "_n")(), Alias(TimeTicks(windows.windowStart), "_start")(),
      Alias(TimeTicks(windows.windowEnd), "_end")()), windows)

    val functions = udfs.map(_._1.aggregateFunction.asInstanceOf[PythonUDAF])
    val taking = functions.map(_.children.map(c => runs.arguments.indexWhere(_.semanticEquals(valueOf(c)))))
    val command = pickledCall("windowagg._aggregates", "sliced",
      Tuple(functions.map(f => Bytes(SparkInternals.pythonCommand(f)))), Tuple(taking.map(t => Tuple(t.map(Int32)))),
      Bool(runs.arrow), Text(windows.timeColumn.windowType.typeName))
    val values = AttributeReference("_values", BinaryType, nullable = false)()
    val output = values +: udfs.map { case (ae, out) => AttributeReference(out.name, ae.dataType)(exprId = out.exprId) }
    val function = SparkInternals.pythonUDF(functions.map(_.name).mkString("windowagg_slices_", "_", ""), functions,
      command, StructType(output.map(a => StructField(a.name, a.dataType, a.nullable))), rows.output ++ windowRuns.output,
      runs.cogrouped)
    val keys = windows.keys.length
    val cogrouped =
      if (runs.arrow) FlatMapCoGroupsInArrow(keys, keys, function, output, rows, windowRuns)
      else FlatMapCoGroupsInPandas(keys, keys, function, output, rows, windowRuns)
    (values, cogrouped)
  }

  private def valueOf(argument: Expression): Expression = argument match {
    case NamedArgumentExpression(_, value) => value
    case value => value
  }

  /** A Python value the JVM writes in a pickle. */
  private sealed trait Value
  private final case class Bytes(bytes: Array[Byte]) extends Value
  private final case class Int32(n: Int) extends Value
  private final case class Bool(b: Boolean) extends Value
  private final case class Text(s: String) extends Value
  private final case class Tuple(items: Seq[Value]) extends Value

  /**
   * The pickle (protocol 3) of the call `module.name(args...)`: loaded by a Python worker as a UDF's
   * command, it runs that call there.
   */
  private def pickledCall(module: String, name: String, args: Value*): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    def int32(n: Int): Unit = (0 until 4).foreach(i => out.write((n >>> (8 * i)) & 0xff))
    def write(v: Value): Unit = v match {
      case Bytes(bytes) => out.write('B'); int32(bytes.length); out.write(bytes)
      case Int32(n) => out.write('J'); int32(n)
      case Bool(b) => out.write(if (b) 0x88 else 0x89)
      case Text(s) => val utf8 = s.getBytes(StandardCharsets.UTF_8); out.write('X'); int32(utf8.length); out.write(utf8)
      case Tuple(items) => out.write('('); items.foreach(write); out.write('t')
    }
    out.write(0x80); out.write(3)
    out.write(s"c$module\n$name\n".getBytes(StandardCharsets.US_ASCII))
    write(Tuple(args))
    out.write('R'); out.write('.')
    out.toByteArray
  }
}

/** A time as its ticks: a timestamp's microseconds (with or without a zone), an integral epoch's own number. */
case class TimeTicks(child: Expression) extends UnaryExpression with CodegenFallback {
  override def dataType: DataType = LongType
  override def prettyName: String = "windowagg_time_ticks"

  override protected def nullSafeEval(time: Any): Any = time match {
    case t: Long => t
    case t: Int => t.toLong
    case t: Short => t.toLong
    case t: Byte => t.toLong
    case other => throw new IllegalStateException(s"not a time: $other")
  }

  override protected def withNewChildInternal(newChild: Expression): TimeTicks = copy(child = newChild)
}
