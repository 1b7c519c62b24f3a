package windowagg.spark.streaming

import org.apache.spark.sql.{Encoders, Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, LogicalPlan, Project, TransformWithState}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.functions.{col, count_if, lit}
import org.apache.spark.sql.streaming.{OutputMode, TimeMode}
import org.apache.spark.sql.types.{BinaryType, IntegerType, Metadata, MetadataBuilder}
import org.apache.spark.sql.windowagg.SparkInternals

import windowagg.spark.common.{AggregateBeforeShuffle, NotWindowed, UnpackedRow, WindowAggError, WindowAggException,
  WindowAggregate, WindowView}

/**
 * Plans a windowed aggregation over a streaming input through Spark's supported route for
 * third-party stateful logic: `transformWithState` in event-time (or processing-time) mode with the
 * [[KeyedWindowProcessor]] driving the kind's `StreamingKind`, on the RocksDB state store. The
 * result has the batch node's output (same expression ids), plus `late_reason` and `late_row` when
 * late rows are emitted, `retraction` for sessions emitted before they are final (updates, early firing) and `is_final` with early firing.
 */
object StreamingWindowPlanner {
  val RocksDbProvider = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
  val ProviderConf = "spark.sql.streaming.stateStore.providerClass"
  /** The name of the observed metrics holding the counts of rows not windowed, by reason. */
  val MetricsName = "windowagg"
  /** In update mode, marks the rows that retract a session merged into another. */
  val RetractionColumn = "retraction"
  /** transformWithState's grouping key when the aggregation has no keys: every row's is 0. */
  val AllRowsKey = "_windowagg_all"

  def plan(session: SparkSession, node: WindowAggregate): LogicalPlan = {
    val (definition, options) = (node.definition, node.options)
    val provider = session.conf.getOption(ProviderConf).getOrElse("")
    if (!provider.contains("RocksDBStateStoreProvider")) {
      throw WindowAggException(WindowAggError.STREAMING_REQUIREMENT,
        s"streaming windows keep their state with transformWithState, which needs the RocksDB state store: " +
          s"set $ProviderConf=$RocksDbProvider (windowagg.session() in Python does)")
    }
    if (!node.timeColumn.isTimestamp) {
      throw WindowAggException(WindowAggError.STREAMING_REQUIREMENT,
        s"streaming windows need a TIMESTAMP time column for the watermark; '${node.time.name}' is " +
          s"${node.timeColumn.dataType.sql} (convert it with timestamp_millis(...) or timestamp_seconds(...))")
    }
    val kind = StreamingKind.of(node.engine)
    val emission = options.emission
    kind.check(definition, node.windows, emission, withViews = node.withViews)
    if (options.expireIdleKeys.isDefined && !kind.keepsIdleKeys(node.windows)) {
      throw WindowAggException(WindowAggError.INVALID_OPTION,
        s"$definition forgets a key's state once its windows are final, so no idle key outlives its windows: " +
          "drop expireIdleKeys (it is for windows cut at rows and windows that never close)")
    }
    val grace = node.windows.graceTicks
    val time = node.time
    val inputTime = node.child.output.find(_.exprId == time.exprId).getOrElse(time)
    var input = SparkInternals.dataFrame(session, node.child)
    if (!options.processingTime && !inputTime.metadata.contains(EventTimeWatermark.delayKey)) {
      grace match {
        case Some(grace) => input = input.withWatermark(time.name, s"$grace microseconds")
        case None =>
          throw WindowAggException(WindowAggError.STREAMING_REQUIREMENT,
            s"a streaming window needs a watermark on its time column '${time.name}': call " +
              s"withWatermark('${time.name}', delay) on the input, or give the definition a grace period, " +
              "e.g. SlidingWindows.of(size).grace(\"1 minute\")")
      }
    }

    // Spark drops rows behind the watermark before a stateful processor sees them when the time
    // column carries the watermark marker; without it they reach the processor, which routes them.
    val marked = input.queryExecution.analyzed
    val eventTime = AttributeReference(time.name, time.dataType, time.nullable, unmarked(time.metadata))()
    // a late row emitted carries every input column; otherwise the processor gets only the columns
    // the windows and aggregates read, and Spark prunes the others (at the scan, where it can)
    val read = node.references
    val values = marked.output.filter(a => options.emitLateRows || read.contains(a)).map { a =>
      if (a.exprId == time.exprId) Alias(a, a.name)(exprId = eventTime.exprId, explicitMetadata = Some(eventTime.metadata))
      else a
    }
    val valueAttributes = values.map(_.toAttribute)
    val rebind: Expression => Expression = e => evaluable(e.transform {
      case a: Attribute if a.exprId == time.exprId => eventTime
    })
    // transformWithState needs a grouping key: without keys, every row shares one constant key
    val allRows = Alias(Literal(0), AllRowsKey)()
    val groupKeys: Seq[NamedExpression] = if (node.keys.nonEmpty) node.keys else Seq(allRows)
    val rowByRow = StreamingWindowSpec(
      windows = node.windows,
      keySchema = DataTypeUtils.fromAttributes(groupKeys.map(_.toAttribute)),
      valueAttributes = valueAttributes,
      timeOrdinal = valueAttributes.indexWhere(_.exprId == eventTime.exprId),
      timeColumn = node.timeColumn,
      functions = node.functions.map(f => rebind(f).asInstanceOf[org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction]),
      filters = node.filters.map(rebind),
      options = options,
      gapOrdinal = node.gap.map(g => valueAttributes.indexWhere(_.exprId == g.exprId)),
      gapType = node.gap.map(_.dataType),
      tieOrder = node.tieOrder(valueAttributes, rebind),
      views = node.views,
      description = description(node),
      reading = Some(reading(session, node, groupKeys, valueAttributes)),
      listingColumn = node.listing.map(l => (valueAttributes.indexWhere(_.exprId == l.exprId), l.dataType)))
    val spec = rowByRow.copy(combine = kind.combine(rowByRow, AggregateBeforeShuffle.mode(session.sessionState.conf)))

    // the processor gets, per row, the keys packed, the row's values packed whole and/or a piece of
    // rows combined before the shuffle (planned per micro-batch: real-time mode combines none), and
    // the keys' state partition, by which transformWithState groups them: one group (and one timer)
    // per partition instead of one per key
    val keyBytes = AttributeReference(StreamingWindowSpec.KeyBytes, BinaryType, nullable = false)()
    val whole = AttributeReference(StreamingWindowSpec.Whole, BinaryType)()
    val piece = AttributeReference(StreamingWindowSpec.Piece, BinaryType)()
    val bucket = AttributeReference(StreamingWindowSpec.Bucket, IntegerType, nullable = false)()
    val shipped = CombineBeforeShuffle(spec, groupKeys.map(_.toAttribute), keyBytes, whole, piece, bucket,
      Project(valueAttributes ++ groupKeys, Project(values, marked)))
    val timeMode = if (options.processingTime) TimeMode.ProcessingTime() else TimeMode.EventTime()
    // the processor emits its rows in binary form (no conversion through Row per output row); they are read back in place
    val emitted = withProcessor(session, shipped, timeMode, emission.outputMode)
    val row = Alias(UnpackedRow(emitted.output.head, spec.outputSchema), "row")()
    val columns = spec.outputSchema.fields.zipWithIndex.map { case (f, i) =>
      Alias(GetStructField(row.toAttribute, i, Some(f.name)), f.name)()
    }
    val processed = SparkInternals.dataFrame(session, Project(columns.toSeq, Project(Seq(row), emitted)))
    val rowKind = col(StreamingWindowSpec.Kind)
    val reason = col(StreamingWindowSpec.LateReason)
    val counts = NotWindowed.inStreaming.map(n => count_if(rowKind === StreamingWindowSpec.LateKind && reason === lit(n.reason)).as(n.observed))
    val observed = processed.observe(MetricsName, counts.head, counts.tail: _*)
    val kept = if (options.emitLateRows) observed else observed.where(rowKind =!= StreamingWindowSpec.LateKind)

    val plan = kept.queryExecution.analyzed
    val out = plan.output
    val named = node.output.zip(spec.resultOrdinals.drop(groupKeys.length - node.keys.length)).map { case (target, ordinal) =>
      Alias(out(ordinal), target.name)(exprId = target.exprId)
    }
    val late = if (options.emitLateRows) Seq(out(spec.lateReasonOrdinal), out(spec.lateRowOrdinal)) else Nil
    // windows emitted before they are final whose bounds change (sessions, count windows): values
    // under bounds no window has any more come as rows marked retraction = true
    val retraction =
      if (kind.retracts(spec.windows) && emission.retractsMerged) {
        Seq(Alias(EqualTo(out(spec.kindOrdinal), Literal(StreamingWindowSpec.RetractionKind)), RetractionColumn)())
      } else Nil
    val isFinal = if (emission.marksFinal) Seq(out(spec.isFinalOrdinal)) else Nil
    Project(named ++ late ++ retraction ++ isFinal, plan)
  }

  /**
   * `e` as the processor evaluates it, with no optimizer after it: what Spark's optimizer would
   * replace (median by percentile, nvl by coalesce, ...) replaced.
   */
  def evaluable(e: Expression): Expression = e.transformUp { case replaceable: RuntimeReplaceable => replaceable.replacement }

  /** transformWithState with the processor of `shipped`'s spec over its rows, grouped as the spec's keying says. */
  private def withProcessor(session: SparkSession, shipped: CombineBeforeShuffle, timeMode: TimeMode, outputMode: OutputMode): LogicalPlan = {
    val spec = shipped.spec
    val groups = spec.keying match {
      case StateKeying.ByPartition => Seq(shipped.bucket)
      case StateKeying.ByKey => shipped.keys
    }
    SparkInternals.dataFrame(session, shipped).groupBy(groups.map(SparkInternals.column): _*)
      .as[Row, Row](Encoders.row(spec.groupSchema), Encoders.row(spec.inputSchema))
      .transformWithState(new KeyedWindowProcessor(spec), timeMode, outputMode)(Encoders.BINARY)
      .queryExecution.analyzed
  }

  /**
   * `aggregation` (planned grouped by state partition) grouped by key instead, for a checkpoint
   * whose state was kept per key ([[StateKeying.ByKey]]): the same output, read by the plan above it.
   */
  def groupedByKey(session: SparkSession, aggregation: TransformWithState): TransformWithState = {
    val shipped = aggregation.child.collectFirst { case c: CombineBeforeShuffle => c }
      .getOrElse(throw new IllegalStateException(s"a windowed aggregation's transformWithState reads no rows of its own:\n$aggregation"))
    val spec = shipped.spec.copy(keying = StateKeying.ByKey, queryPlanId = java.util.UUID.randomUUID().toString)
    val rekeyed = withProcessor(session, shipped.copy(spec = spec), aggregation.timeMode, aggregation.outputMode)
    rekeyed.collectFirst { case t: TransformWithState => t.copy(outputObjAttr = aggregation.outputObjAttr) }
      .getOrElse(throw new IllegalStateException("transformWithState planned no TransformWithState node"))
  }

  /** What `read_state` needs to decode the state, recorded with it: the aggregates as SQL over the processor's rows. */
  private def reading(session: SparkSession, node: WindowAggregate, groupKeys: Seq[NamedExpression], values: Seq[Attribute]): StateReading = {
    // the rows' columns by name alone: the reader resolves the SQL against a relation of the recorded schema
    def sql(e: Expression): String = e.transform { case a: AttributeReference => a.withQualifier(Nil) }.sql
    val aggregates = node.functions.indices.map { i =>
      StateReading.Aggregate(sql(node.functions(i)), Option(node.filters(i)).filterNot(_ == Literal.TrueLiteral).map(sql),
        node.views(i).name, node.names(i))
    }
    StateReading(DataTypeUtils.fromAttributes(groupKeys.map(_.toAttribute)), DataTypeUtils.fromAttributes(values),
      node.timeColumn.dataType, node.timeColumn.unit, session.sessionState.conf.sessionLocalTimeZone, node.definition.spec, aggregates)
  }

  /** What the query computes into its state, in words: recorded with the checkpoint and compared on restart. */
  private def description(node: WindowAggregate): Seq[(String, String)] = {
    import StreamingStartCheck._
    val options = node.options
    val aggregates = node.functions.lazyZip(node.filters).lazyZip(node.views).map { (f, filter, view) =>
      val over = if (view == WindowView.All) f.sql else s"${view.name}(${f.sql})"
      if (filter == Literal.TrueLiteral) over else s"$over FILTER (WHERE ${filter.sql})"
    }
    val time = if (options.processingTime) "processing time" else s"event time (${node.timeColumn.dataType.sql})"
    Seq(
      Window -> node.definition.stateIdentity,
      Keys -> (if (node.keys.isEmpty) "none" else node.keys.map(k => s"${k.name} ${k.dataType.sql}").mkString(", ")),
      Time -> time,
      Aggregates -> aggregates.mkString(", "),
      Emit -> options.emit) ++
      options.expireIdleKeys.map(e => ExpireIdleKeys -> e.spec)
  }

  private def unmarked(metadata: Metadata): Metadata =
    new MetadataBuilder().withMetadata(metadata).remove(EventTimeWatermark.delayKey)
      // a marker of our own keeps the alias from being optimized away as redundant
      .putBoolean("windowagg.eventTime", true).build()
}
