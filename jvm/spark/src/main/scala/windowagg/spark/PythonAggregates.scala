package windowagg.spark

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, CollectList}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Generate, LogicalPlan, Project, Sort}
import org.apache.spark.sql.types.{ArrayType, BinaryType, DataType, IntegerType, StructField, StructType}
import org.apache.spark.unsafe.Platform

import windowagg.spark.common.{WindowAggError, WindowAggException, WindowAggregate, WindowView}

/**
 * Grouped-aggregate pandas and Arrow UDFs (`@pandas_udf` Series -> scalar, `arrow_udf`) over
 * windowagg windows, in batch queries.
 *
 * Such a UDF reads all rows of a group at once, so it cannot be merged from partials. The windows
 * are computed as for any other aggregation, with one more aggregate: each window's rows (the
 * UDFs' arguments and the row's time) collected in a list. Each window's list is then spread back
 * into rows, ordered by time, and handed to Spark's own Python aggregation grouped by the window, so
 * a UDF gets exactly its window's rows, in time order, in Arrow batches as over Spark's `window()`.
 * The keys, the bounds and the built-in aggregates' values ride through that aggregation packed in
 * one binary grouping column, so they come out exactly as the windows produced them (grouping on
 * them would normalize floating-point keys and refuse map values).
 */
object PythonAggregates {

  /** Each window's rows, collected by the window aggregation for the Python aggregation after it. */
  final case class WindowRows(collect: AggregateExpression, output: AttributeReference, arguments: Seq[Expression])

  def isPython(ae: AggregateExpression): Boolean = ae.aggregateFunction.isInstanceOf[PythonUDAF]

  /** What a pandas/Arrow aggregate UDF cannot be given over windows, refused with its name. */
  def check(ae: AggregateExpression, view: WindowView.View, streaming: Boolean): Unit = {
    val name = ae.aggregateFunction.asInstanceOf[PythonUDAF].name
    if (streaming) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"$name is a pandas/Arrow aggregate UDF: over windowagg windows it runs in batch queries; a streaming " +
          "query would have to keep every open window's rows in its state, which windowagg does not do yet: use " +
          "built-in aggregates (sum, avg, percentile_approx, collect_list, ...) or a Scala/Java Aggregator registered with functions.udaf")
    }
    if (ae.isDistinct) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE, s"$name(DISTINCT ...): a pandas/Arrow aggregate UDF takes no DISTINCT")
    }
    if (ae.filter.isDefined) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"$name(...) FILTER (WHERE ...): a pandas/Arrow aggregate UDF takes no FILTER; filter its arguments or the rows instead")
    }
    if (view != WindowView.All) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"${view.name}($name(...)): a pandas/Arrow aggregate UDF is over all of a window's rows, not Storm's ${view.name} rows")
    }
  }

  /** The aggregate collecting each window's rows for `udfs`: the row's time, then each distinct argument. */
  def windowRows(udfs: Seq[AggregateExpression], time: Attribute): WindowRows = {
    // Spark runs them in one Python aggregation, of one evaluation type
    val byType = udfs.map(_.aggregateFunction.asInstanceOf[PythonUDAF]).groupBy(_.evalType)
    if (byType.size > 1) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"${byType.values.map(_.head.name).mkString(" and ")} are Python aggregate UDFs of different kinds (pandas, Arrow, " +
          "or their iterator forms): Spark computes one kind in one aggregation; compute them in two aggregations and join them")
    }
    val arguments = udfs.flatMap(_.aggregateFunction.children.map(valueOf))
      .foldLeft(Seq.empty[Expression]) { (seen, e) => if (seen.exists(_.semanticEquals(e))) seen else seen :+ e }
    val fields = (time +: arguments).zipWithIndex.flatMap { case (e, i) => Seq(Literal(s"_$i"), e) }
    val collect = new CollectList(CreateNamedStruct(fields)).toAggregateExpression()
    WindowRows(collect, AttributeReference("_window_rows", collect.dataType, nullable = false)(), arguments)
  }

  /**
   * The plan computing `results` (the Aggregate's output, over `windows`' output and the UDFs'
   * values, `udfs` paired with the attributes standing for them) from the windows and their rows.
   */
  def plan(windows: WindowAggregate, rows: WindowRows, udfs: Seq[(AggregateExpression, Attribute)],
      results: Seq[NamedExpression]): LogicalPlan = {
    val carried = windows.output.filterNot(_.exprId == rows.output.exprId)
    val packed = Alias(PackedRow(carried), "_window_values")()
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

    val argument: Seq[(Expression, Attribute)] = rows.arguments.zip(fields.tail.map(_.toAttribute))
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

    val unpacked = Alias(UnpackedRow(packed.toAttribute, StructType(carried.map(a => StructField(a.name, a.dataType, a.nullable)))),
      "_window_values")()
    val unpacking = Project(unpacked +: values.map(_.toAttribute), aggregated)
    val carriedField: Map[ExprId, Expression] = carried.zipWithIndex.map { case (a, i) =>
      a.exprId -> GetStructField(unpacked.toAttribute, i, Some(a.name))
    }.toMap
    Project(results.map {
      case a: Attribute if carriedField.contains(a.exprId) => Alias(carriedField(a.exprId), a.name)(a.exprId, a.qualifier)
      case ne => ne.transformUp { case a: Attribute if carriedField.contains(a.exprId) => carriedField(a.exprId) }
        .asInstanceOf[NamedExpression]
    }, unpacking)
  }

  private def valueOf(argument: Expression): Expression = argument match {
    case NamedArgumentExpression(_, value) => value
    case value => value
  }
}

/** `children`'s values as the bytes of one UnsafeRow: equal values, equal bytes. */
case class PackedRow(children: Seq[Expression]) extends Expression with CodegenFallback {
  override def nullable: Boolean = false
  override def dataType: DataType = BinaryType
  override def prettyName: String = "windowagg_packed_row"

  @transient private lazy val project = UnsafeProjection.create(children)

  override def eval(input: InternalRow): Any = {
    val row = project(input)
    val bytes = new Array[Byte](row.getSizeInBytes)
    row.writeToMemory(bytes, Platform.BYTE_ARRAY_OFFSET)
    bytes
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): PackedRow = copy(children = newChildren)
}

/** The row [[PackedRow]] packed, as a struct of `schema`. */
case class UnpackedRow(child: Expression, schema: StructType) extends UnaryExpression with CodegenFallback {
  override def nullable: Boolean = false
  override def dataType: DataType = schema
  override def prettyName: String = "windowagg_unpacked_row"

  override protected def nullSafeEval(packed: Any): Any = {
    val bytes = packed.asInstanceOf[Array[Byte]]
    val row = new UnsafeRow(schema.length)
    row.pointTo(bytes, bytes.length)
    row
  }

  override protected def withNewChildInternal(newChild: Expression): UnpackedRow = copy(child = newChild)
}
