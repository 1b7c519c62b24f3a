package windowagg.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.toPrettySQL

import windowagg.spark.common.{Engine, WindowAggError, WindowAggException, WindowAggregate, WindowGroupingExpression,
  WindowView}

/**
 * Resolution (runs to a fixed point with Spark's own rules): an Aggregate grouped by
 * `window(ts, definition)` gets the window as a column named `window` of its child, as Spark does
 * for `window()` and `session_window()`, so that `window.start` resolves in SQL select lists and
 * HAVING clauses like any column. Definition and time column are checked here, before any of the
 * query's data is read; windows given as a table ([[windowagg.TableWindows]]) are read here, once.
 */
case class PlaceWindowColumn(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case a: Aggregate if a.child.resolved && unplacedWindows(a).nonEmpty =>
      if (a.groupingExpressions.exists(_.isInstanceOf[BaseGroupingSets])) {
        throw WindowAggException(WindowAggError.INVALID_QUERY, "windowagg windows cannot be combined with GROUPING SETS, ROLLUP or CUBE")
      }
      val windows = unplacedWindows(a)
      if (windows.size > 1) {
        throw WindowAggException(WindowAggError.INVALID_QUERY,
          s"an aggregation can group by one windowagg window, found ${windows.size}: ${windows.mkString(", ")}")
      }
      val grouped = windows.head
      // windows given as a table are read here, once: every later step sees them
      val window = grouped.withTableRead(session, a.groupingExpressions.filterNot(_.exists(_.semanticEquals(grouped))))
      window.validated
      val alias = Alias(window, WindowGroupingExpression.ColumnName)()
      val column = alias.toAttribute
      def place(e: Expression): Expression = e.transformDown {
        case w: WindowGroupingExpression if w.semanticEquals(grouped) => column
      }
      // a grouping column Spark named after the expression (F.expr("windows(...)")) is named `window`
      def named(e: NamedExpression): NamedExpression = e match {
        case al @ Alias(w: WindowGroupingExpression, name) if name == toPrettySQL(w) =>
          Alias(w, WindowGroupingExpression.ColumnName)(al.exprId, al.qualifier, al.explicitMetadata)
        case other => other
      }
      Aggregate(
        a.groupingExpressions.map(place),
        a.aggregateExpressions.map(e => place(named(e)).asInstanceOf[NamedExpression]),
        Project(a.child.output :+ alias, a.child),
        a.hint)
  }

  private def unplacedWindows(a: Aggregate): Seq[WindowGroupingExpression] =
    a.groupingExpressions.flatMap(_.collect { case w: WindowGroupingExpression if w.childrenResolved => w })
      .foldLeft(Seq.empty[WindowGroupingExpression]) { (seen, w) =>
        if (seen.exists(_.semanticEquals(w))) seen else seen :+ w
      }
}

/**
 * Post-hoc resolution (once, after all names are resolved): the Aggregate over a placed window
 * column becomes a [[windowagg.spark.common.WindowAggregate]] under a Project that rebuilds the Aggregate's output
 * (same names and expression ids) from the keys, the window bounds and the aggregate values.
 * Anything that cannot be computed this way is rejected here with a message naming it.
 */
case class PlanWindowAggregation(session: SparkSession) extends Rule[LogicalPlan] with AliasHelper {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    val rewritten = plan.resolveOperatorsUp {
      case a @ Aggregate(_, _, Project(projectList, _), _) if projectList.exists(isWindowColumn) =>
        rewrite(a)
    }
    rewritten.foreachWithSubqueries { node =>
      node.expressions.foreach(_.foreach {
        // one whose columns do not resolve is left to Spark, whose error names the missing column
        case w: WindowGroupingExpression if w.childrenResolved =>
          throw WindowAggException(WindowAggError.INVALID_QUERY,
            s"$w can only be used as a grouping key: df.groupBy(..., window(ts, definition)) or GROUP BY windows(ts, 'spec')")
        case v: WindowView if v.childrenResolved =>
          throw WindowAggException(WindowAggError.INVALID_QUERY,
            s"${v.sql} is Storm's window view: it can only be used in an aggregation grouped by Storm's windows " +
              "(CountWindows, DurationWindows)")
        case _ =>
      })
    }
    rewritten
  }

  private def isWindowColumn(e: NamedExpression): Boolean = e match {
    case Alias(_: WindowGroupingExpression, _) => true
    case _ => false
  }

  private def rewrite(a: Aggregate): LogicalPlan = {
    val project = a.child.asInstanceOf[Project]
    val child = project.child
    val windowAlias = project.projectList.collectFirst { case al @ Alias(_: WindowGroupingExpression, _) => al }.get
    val window = windowAlias.child.asInstanceOf[WindowGroupingExpression]
    val windowColumn = windowAlias.toAttribute
    val (timeColumn, unboundWindows) = window.validated
    if (window.options.processingTime) checkProcessingTime(window, child.isStreaming)
    if (window.options.expireIdleKeys.isDefined && !child.isStreaming) {
      throw WindowAggException(WindowAggError.INVALID_QUERY,
        "expireIdleKeys is for streaming queries, which keep keys' state between micro-batches: a batch query keeps none")
    }

    val grouping = a.groupingExpressions.map(trimAliases)
    if (!grouping.exists(_.semanticEquals(windowColumn))) {
      throw WindowAggException(WindowAggError.INVALID_QUERY, s"the window column must be a grouping key of the aggregation")
    }
    val keyExpressions = grouping.filterNot(_.semanticEquals(windowColumn))
      .foldLeft(Seq.empty[Expression]) { (seen, e) => if (seen.exists(_.semanticEquals(e))) seen else seen :+ e }
    val pulledKeys = keyExpressions.collect { case e if !e.isInstanceOf[Attribute] => Alias(e, "_groupingexpression")() }
    val keyAttributes: Seq[Attribute] = {
      val pulled = pulledKeys.iterator
      keyExpressions.map {
        case attr: Attribute => attr
        case _ => pulled.next().toAttribute
      }
    }
    // per-key windows find their key columns among the grouping keys (named alike; WindowsTable read
    // them as those keys' types, and refused a key column that is not one)
    val windows = if (!unboundWindows.perKey) unboundWindows else {
      val resolver = session.sessionState.conf.resolver
      unboundWindows.boundToKeys(unboundWindows.keyColumns.map { name =>
        val i = keyAttributes.indexWhere(a => resolver(a.name, name))
        if (i < 0) throw new IllegalStateException(s"the key column $name of ${window.definition} is not a grouping key")
        i
      }.toArray)
    }
    def pulledOut(e: Expression, name: String): (Attribute, Option[Alias]) = e match {
      case attr: Attribute => (attr, None)
      case other =>
        val alias = Alias(other, name)()
        (alias.toAttribute, Some(alias))
    }
    val (timeAttribute, timeAlias) = pulledOut(window.timeColumn, "_window_time")
    val gap = window.gap.map(pulledOut(_, "_window_gap"))
    val tieBreak = window.tieBreak.map(pulledOut(_, "_window_tie_break"))
    // a listing computed by a Python function is evaluated here, in the rows' own stage: Spark plans
    // it as an Arrow evaluation before the shuffle
    val listing = window.listingAsWindows.map(pulledOut(_, "_window_listing"))
    val pulled = pulledKeys ++ timeAlias ++ Seq(gap, tieBreak, listing).flatMap(_.flatMap(_._2))
    val input = if (pulled.isEmpty) child else Project(child.output ++ pulled, child)

    // each aggregate with the rows it is over: all of the window's, or Storm's view (new or expired rows)
    val aggregates = a.aggregateExpressions.flatMap(viewed)
      .foldLeft(Seq.empty[(AggregateExpression, WindowView.View)]) { case (seen, (ae, view)) =>
        if (seen.exists { case (e, v) => v == view && e.semanticEquals(ae) }) seen else seen :+ ((ae, view))
      }
    a.aggregateExpressions.foreach(checkNoUnsupportedFunction)
    aggregates.foreach { case (ae, _) =>
      if (PythonAggregates.isPython(ae)) PythonAggregates.check(ae, child.isStreaming) else checkMergeable(ae)
    }
    aggregates.collectFirst { case (ae, view) if view != WindowView.All && Engine.of(windows).cutAtRows.isEmpty =>
      throw WindowAggException(WindowAggError.INVALID_QUERY,
        s"${view.name}(${ae.sql}) is Storm's window view, for Storm's windows (CountWindows, DurationWindows); " +
          s"${window.definition} has no previous window to compare with")
    }
    val aggregateOutput = aggregates.map { case (ae, view) =>
      val name = if (view == WindowView.All) ae.aggregateFunction.prettyName else s"${view.name}(${ae.aggregateFunction.prettyName})"
      AttributeReference(name, ae.dataType, ae.nullable)()
    }
    def outputOf(ae: AggregateExpression, view: WindowView.View): Attribute =
      aggregateOutput(aggregates.indexWhere { case (e, v) => v == view && e.semanticEquals(ae) })
    // pandas/Arrow aggregate UDFs are computed after the windows, over each window's rows
    val (python, windowed) = aggregates.zip(aggregateOutput).partition { case ((ae, _), _) => PythonAggregates.isPython(ae) }
    val pythonIntake = if (python.isEmpty) None
      else Some(PythonAggregates.intake(python.map(_._1), timeAttribute, Engine.of(windows), gap.isDefined, input,
        child.isStreaming))

    val pythonAggregates = pythonIntake.toSeq.flatMap(_.aggregates)

    val windowType = timeColumn.windowType
    val windowStart = AttributeReference("window_start", windowType, nullable = false)()
    val windowEnd = AttributeReference("window_end", windowType, nullable = false)()
    val bounds = CreateNamedStruct(Seq(Literal("start"), windowStart, Literal("end"), windowEnd))
    // late rows emitted by a streaming aggregation have no window
    val windowStruct =
      if (child.isStreaming && window.options.emitLateRows) If(IsNull(windowStart), Literal(null, bounds.dataType), bounds)
      else bounds
    def replace(e: Expression): Expression = e.transformDown {
      case WindowView(child, view) => child.transformDown { case ae: AggregateExpression => outputOf(ae, view) }
      case ae: AggregateExpression => outputOf(ae, WindowView.All)
      case attr: Attribute if attr.semanticEquals(windowColumn) => windowStruct
      case k if !k.isInstanceOf[Attribute] && keyExpressions.exists(_.semanticEquals(k)) =>
        keyAttributes(keyExpressions.indexWhere(_.semanticEquals(k)))
    }
    val results = a.aggregateExpressions.map {
      case attr: Attribute if attr.semanticEquals(windowColumn) =>
        Alias(windowStruct, attr.name)(exprId = attr.exprId, qualifier = attr.qualifier)
      case ne => replace(ne).asInstanceOf[NamedExpression]
    }
    // each aggregate's value under the name the query gives it where it selects it alone, else its SQL
    val names = windowed.map { case ((ae, view), out) =>
      results.collectFirst { case Alias(selected: Attribute, name) if selected.exprId == out.exprId => name }
        .getOrElse(if (view == WindowView.All) ae.sql else s"${view.name}(${ae.sql})")
    } ++ pythonAggregates.map(_ => python.map(_._1._1.aggregateFunction.asInstanceOf[PythonUDAF].name).mkString("rows for ", ", ", ""))
    val node = WindowAggregate(
      keyAttributes, timeAttribute, gap.map(_._1), tieBreak.map(_._1), listing.map(_._1), timeColumn, window.definition, windows,
      window.options,
      windowed.map(_._1._1.aggregateFunction) ++ pythonAggregates.map(_.aggregateFunction),
      windowed.map(_._1._1.filter.getOrElse(Literal.TrueLiteral)) ++ pythonAggregates.map(_ => Literal.TrueLiteral),
      windowed.map(_._1._2) ++ pythonIntake.toSeq.flatMap(_.views), names, windowStart, windowEnd,
      windowed.map(_._2) ++ pythonIntake.toSeq.flatMap(_.outputs), input)
    val available = node.outputSet ++ AttributeSet(python.map(_._2))
    val missing = results.flatMap(_.references).filterNot(available.contains)
    if (missing.nonEmpty) {
      throw WindowAggException(WindowAggError.INVALID_QUERY,
        s"column ${missing.map(_.sql).distinct.mkString(", ")} is neither a grouping key nor inside an aggregate function")
    }
    if (child.isStreaming) {
      // Streaming: the same node's meaning, planned through transformWithState; late rows, when
      // emitted, come out as two more columns.
      val streaming = windowagg.spark.streaming.StreamingWindowPlanner.plan(session, node)
      val withPython = pythonIntake.fold[LogicalPlan](streaming) {
        case rows: PythonAggregates.Collected =>
          PythonAggregates.overStreamedWindows(node, streaming, rows, python.map { case ((ae, _), out) => (ae, out) })
        case other => throw new IllegalStateException(s"a streaming aggregation takes its Python UDFs' rows collected, not $other")
      }
      Project(results ++ streaming.output.drop(node.output.length), withPython)
    } else {
      pythonIntake.fold[LogicalPlan](Project(results, node)) { intake =>
        PythonAggregates.plan(node, input, intake, python.map { case ((ae, _), out) => (ae, out) }, results)
      }
    }
  }

  /** Processing time is a stream's clock: a batch query has none, and the time column must be that clock. */
  private def checkProcessingTime(window: WindowGroupingExpression, streaming: Boolean): Unit = {
    if (!streaming) {
      throw WindowAggException(WindowAggError.INVALID_QUERY,
        "time 'processing' needs a streaming DataFrame: a batch query has no processing time; window by an event time column")
    }
    window.timeColumn match {
      case _: CurrentTimestampLike =>
      case other =>
        throw WindowAggException(WindowAggError.INVALID_TIME_COLUMN,
          s"with time 'processing' the time column must be current_timestamp(), the micro-batch's processing time; got '${other.sql}'")
    }
  }

  /** The aggregates in `e`, each with the rows it is over: those inside a view over the view's rows. */
  private def viewed(e: Expression): Seq[(AggregateExpression, WindowView.View)] = e match {
    case v @ WindowView(child, view) =>
      val inside = child.collect { case ae: AggregateExpression => ae }
      if (inside.isEmpty || child.exists(_.isInstanceOf[WindowView])) {
        throw WindowAggException(WindowAggError.INVALID_QUERY,
          s"${v.prettyName} takes an expression of aggregates, not of other views, e.g. ${v.prettyName}(count(1)); got ${child.sql}")
      }
      inside.map(ae => (ae, view))
    case ae: AggregateExpression => Seq((ae, WindowView.All))
    case other => other.children.flatMap(viewed)
  }

  private def checkNoUnsupportedFunction(e: Expression): Unit = e.foreach {
    case w: WindowFunction =>
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"${w.prettyName}() is a ranking/window function, not an aggregate: it cannot be computed over windowagg windows")
    case _ =>
  }

  private def checkMergeable(ae: AggregateExpression): Unit = {
    val name = ae.aggregateFunction.prettyName
    if (ae.isDistinct) {
      throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE,
        s"$name(DISTINCT ...) cannot be computed incrementally over windows; use approx_count_distinct, " +
          s"or size(collect_set(...)) for an exact distinct count")
    }
    if (ae.aggregateFunction.children.exists(_.exists(_.isInstanceOf[AggregateExpression]))) {
      throw WindowAggException(WindowAggError.INVALID_QUERY, s"aggregate functions cannot be nested: ${ae.sql}")
    }
    ae.aggregateFunction match {
      case _: DeclarativeAggregate | _: ImperativeAggregate =>
      case _: RuntimeReplaceableAggregate =>
      case other =>
        throw WindowAggException(WindowAggError.UNSUPPORTED_AGGREGATE, s"aggregate ${other.prettyName} cannot be computed incrementally over windows")
    }
  }
}
