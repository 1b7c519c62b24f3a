package windowagg.spark.streaming

import java.nio.ByteBuffer
import java.time.ZoneId
import java.util.concurrent.TimeUnit

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, GenericInternalRow, Literal, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, AggregateFunction}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LocalRelation}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types._
import org.apache.spark.sql.windowagg.SparkInternals
import org.apache.spark.unsafe.types.UTF8String

import windowagg.WindowSpec
import windowagg.core.ResolvedWindows
import windowagg.spark.common.{SparkAggregates, TimeColumn, WindowAggError, WindowAggException, WindowsTable}

/**
 * What `read_state` needs to decode one windowed aggregation's state, recorded with it in the
 * checkpoint (the record's `reading`): the keys' and the processor's rows' schemas, the time
 * column, the definition (its spec) and each aggregate as SQL over those rows, with the name the
 * query gives its value.
 */
final case class StateReading(keySchema: StructType, valueSchema: StructType, timeType: DataType, timeUnit: Option[TimeUnit],
    timeZone: String, definition: String, aggregates: Seq[StateReading.Aggregate]) {

  def toJson(json: ObjectMapper): ObjectNode = {
    val node = json.createObjectNode()
    node.set[JsonNode]("keys", json.readTree(keySchema.json))
    node.set[JsonNode]("values", json.readTree(valueSchema.json))
    node.put("time type", timeType.json)
    timeUnit.foreach(u => node.put("time unit", u.name))
    node.put("time zone", timeZone)
    node.put("definition", definition)
    val aggregatesNode = node.putArray("aggregates")
    aggregates.foreach { a =>
      val entry = aggregatesNode.addObject()
      entry.put("function", a.function)
      a.filter.foreach(f => entry.put("filter", f))
      entry.put("view", a.view)
      entry.put("name", a.name)
    }
    node
  }
}

object StateReading {
  /** An aggregate function and its FILTER as SQL over the processor's rows, the rows it is over (Storm's view), and its name. */
  final case class Aggregate(function: String, filter: Option[String], view: String, name: String)

  /** The reading as recorded; an error (`IllegalArgumentException`) names what is missing. */
  def fromJson(node: JsonNode): StateReading = {
    def text(n: JsonNode, name: String): String =
      Option(n.get(name)).filter(_.isTextual).map(_.asText()).getOrElse(throw new IllegalArgumentException(s"its reading has no '$name'"))
    def schema(name: String): StructType = Option(node.get(name)).filter(_.isObject).map(s => DataType.fromJson(s.toString)) match {
      case Some(s: StructType) => s
      case _ => throw new IllegalArgumentException(s"its reading has no schema '$name'")
    }
    val aggregates = Option(node.get("aggregates")).filter(_.isArray)
      .getOrElse(throw new IllegalArgumentException("its reading has no 'aggregates'"))
    StateReading(schema("keys"), schema("values"), DataType.fromJson(text(node, "time type")),
      Option(node.get("time unit")).map(u => TimeUnit.valueOf(u.asText())), text(node, "time zone"), text(node, "definition"),
      aggregates.elements().asScala.map { a =>
        Aggregate(text(a, "function"), Option(a.get("filter")).map(_.asText()), text(a, "view"), text(a, "name"))
      }.toSeq)
  }
}

/**
 * `read_state`: what a streaming windowed aggregation's checkpoint holds for each key, as a batch
 * DataFrame. Each of the aggregation's state variables is read with Spark's state data source
 * (`format("statestore")`) as of a committed micro-batch; a key's entries are gathered in its state
 * partition (every variable's partition i is the state's partition i, and a key's entries all lie
 * in one), then decoded by its kind's own layout (`StreamingKind.inspect`, the processor's
 * decoders), keys still in the previous release's layout converted in memory first
 * (`PreviousLayouts`). One row per open window of a key, with its current aggregate values as the
 * query names and types them; a key holding only rows or a timer gives one row with no window.
 */
object StateReader {
  val FunctionName = "windowagg_state"

  /** Column names of the result beside the keys and the aggregates. */
  val WindowColumn = "window"
  val HeldRowsColumn = "held_rows"
  val NextCloseColumn = "next_close"
  val StateColumn = "state"

  private val json = new ObjectMapper()

  def read(session: SparkSession, checkpoint: String, batchId: Option[Long], aggregation: Option[Int]): DataFrame = {
    val root = new Path(checkpoint)
    val fs = root.getFileSystem(session.sessionState.newHadoopConf())
    if (!fs.exists(root)) fail(s"there is no checkpoint at $checkpoint")
    val recordFile = new Path(new Path(root, StreamingStartCheck.Directory), StreamingStartCheck.FileName)
    val committed = StreamingStartCheck.committedBatches(fs, root)
    if (!fs.exists(recordFile)) {
      fail(if (committed.isEmpty) s"$checkpoint is not a streaming query's checkpoint with windowagg's state: it has no " +
        s"${StreamingStartCheck.Directory}/${StreamingStartCheck.FileName} and no committed micro-batch"
      else s"$checkpoint is not the checkpoint of a windowagg streaming query (it has no ${StreamingStartCheck.Directory}/" +
        s"${StreamingStartCheck.FileName}): it was written by a query without windowagg's windows, or by windowagg 0.1.0")
    }
    if (committed.isEmpty) fail(s"the query of $checkpoint has not committed a micro-batch yet: it holds no state")
    val batch = batchId.getOrElse(committed.max)
    if (!committed.contains(batch)) {
      fail(s"the checkpoint $checkpoint has no committed micro-batch $batch: its committed micro-batches are " +
        s"${committed.min} to ${committed.max} (Spark keeps the latest ones only)")
    }
    val recorded = StreamingStartCheck.readRecord(fs, recordFile)
    val which = aggregation.getOrElse {
      if (recorded.operators.length == 1) 0
      else fail(s"the query of $checkpoint has ${recorded.operators.length} windowed aggregations: say which to read " +
        s"(aggregation 0 to ${recorded.operators.length - 1}, in the order of the query's plan)")
    }
    if (which < 0 || which >= recorded.operators.length) {
      fail(s"the query of $checkpoint has ${recorded.operators.length} windowed aggregation(s); there is no aggregation $which")
    }
    val record = recorded.operators(which)
    val kind = StreamingKind.withLayout(record.layout)
      .getOrElse(fail(s"$recordFile records the state layout '${record.layout}', which this release of windowagg does not know"))
    if (record.version != kind.layout.version) {
      fail(s"$recordFile says the state is '${record.layout}' version ${record.version}, written by windowagg " +
        s"${recorded.windowagg}; this release reads version ${kind.layout.version}: read it with the release that wrote it" +
        (if (kind.previousLayout.exists(_.version == record.version)) ", or restart the query once with this release, which converts it" else ""))
    }
    val reading = record.reading.getOrElse(fail(
      s"$recordFile was written by windowagg ${recorded.windowagg}, which did not record what reading its state needs: " +
        "restart the query once with this release, then read it"))
    val operator = windowOperators(fs, root).lift(which).getOrElse(fail(
      s"$checkpoint has no state of windowed aggregation $which: its state directory holds no such transformWithState operator"))
    decoded(session, root, batch, operator, record, reading, kind, watermarkOf(fs, root, batch))
  }

  private def fail(message: String): Nothing = throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH, message)

  /** One transformWithState operator of windowagg's in the checkpoint: its id and state variables with their types. */
  private final case class Operator(id: Long, variables: Seq[(String, String)])

  /** windowagg's transformWithState operators, in the order of their ids (the plan's, as the records'). */
  private def windowOperators(fs: FileSystem, root: Path): Seq[Operator] =
    StreamingStartCheck.operatorVariables(fs, root).toSeq.sortBy(_._1).collect {
      case (id, variables) if variables.exists { case (name, _) => name == StateEntries.Variable } => Operator(id, variables)
    }

  /** The watermark (ms) the micro-batch `batch` ran with. */
  private def watermarkOf(fs: FileSystem, root: Path, batch: Long): Option[Long] = {
    val file = new Path(new Path(root, "offsets"), batch.toString)
    try {
      val in = fs.open(file)
      val lines = try scala.io.Source.fromInputStream(in, "UTF-8").getLines().toList finally in.close()
      lines.drop(1).headOption.map(json.readTree).flatMap(m => Option(m.get("batchWatermarkMs"))).map(_.asLong())
    } catch {
      case NonFatal(_) => None
    }
  }

  /** The aggregates recorded as SQL, rebuilt over the recorded rows' attributes as Spark's analyzer resolves them. */
  private def rebuiltAggregates(session: SparkSession, values: Seq[AttributeReference], reading: StateReading)
      : (Seq[AggregateFunction], Seq[Expression]) = {
    val sql = reading.aggregates.map(a => a.function + a.filter.fold("")(f => s" FILTER (WHERE $f)"))
    val analyzed = try {
      SparkInternals.dataFrame(session, LocalRelation(values)).selectExpr(sql: _*).queryExecution.analyzed
    } catch {
      case NonFatal(e) =>
        fail(s"cannot rebuild the aggregates ${sql.mkString(", ")} from their SQL to read their state (${e.getMessage}); " +
          "a function of the query's own (a Scala UDAF) must be registered under that name in this session")
    }
    val expressions = analyzed.collectFirst { case a: Aggregate => a.aggregateExpressions }.getOrElse(Nil)
      .map(_.collectFirst { case ae: AggregateExpression => ae })
    if (expressions.length != sql.length || expressions.exists(_.isEmpty)) fail(s"${sql.mkString(", ")} are not all aggregates")
    (expressions.map(e => StreamingWindowPlanner.evaluable(e.get.aggregateFunction).asInstanceOf[AggregateFunction]),
      expressions.map(e => StreamingWindowPlanner.evaluable(e.get.filter.getOrElse(Literal.TrueLiteral))))
  }

  /** The definition recorded, resolved as the query resolved it (a table's windows read again, and checked the same). */
  private def rebuiltWindows(session: SparkSession, record: StateRecord, reading: StateReading, time: TimeColumn): ResolvedWindows = {
    val keys = DataTypeUtils.toAttributes(reading.keySchema)
    val definition = try WindowsTable.read(session, WindowSpec.parse(reading.definition), time, "the recorded time column", keys)
      catch { case NonFatal(e) => fail(s"cannot rebuild the windows '${reading.definition}' to read their state: ${e.getMessage}") }
    if (WindowsTable.changedSince(definition, record.field(StreamingStartCheck.Window))) {
      fail(s"the windows of ${reading.definition} have changed since the query recorded them " +
        s"(${record.field(StreamingStartCheck.Window).getOrElse("")}, now ${definition.stateIdentity}): its state holds the old windows' slices")
    }
    val windows = definition.resolve(time.timeline(ZoneId.of(reading.timeZone)))
    if (!windows.perKey) windows
    else windows.boundToKeys(windows.keyColumns.map(name => reading.keySchema.fieldIndex(name)).toArray)
  }

  /** A key's entries as one variable holds them, read by Spark's state data source: this release's, or the previous release's. */
  private final case class Entry(key: Array[Byte], variable: String, entry: Any, value: Any, previous: Boolean)

  private def decoded(session: SparkSession, root: Path, batch: Long, operator: Operator, record: StateRecord,
      reading: StateReading, kind: StreamingKind, watermarkMs: Option[Long]): DataFrame = {
    val time = TimeColumn(reading.timeType, reading.timeUnit)
    val values = DataTypeUtils.toAttributes(reading.valueSchema)
    val (functions, filters) = rebuiltAggregates(session, values, reading)
    val windows = rebuiltWindows(session, record, reading, time)
    val keyTypes = reading.keySchema.map(_.dataType)
    val outputKeys = reading.keySchema.filterNot(_.name == StreamingWindowPlanner.AllRowsKey)
    val windowType = time.windowType
    val schema = StructType(outputKeys ++ Seq(
      StructField(WindowColumn, StructType(Seq(StructField("start", windowType), StructField("end", windowType)))))
      ++ reading.aggregates.zip(functions).map { case (a, f) => StructField(a.name, f.dataType) }
      ++ Seq(StructField(HeldRowsColumn, LongType, nullable = false), StructField(NextCloseColumn, TimestampType),
        StructField(StateColumn, StructType(Seq("kind", "layout").map(StructField(_, StringType)) ++ Seq(
          StructField("version", IntegerType), StructField("keying", StringType), StructField("definition", StringType),
          StructField("emit", StringType), StructField("batch_id", LongType), StructField("watermark", TimestampType))))))
    val state = InternalRow(UTF8String.fromString(reading.definition.trim.split("\\s+").head), UTF8String.fromString(record.layout),
      record.version, UTF8String.fromString(record.keying.name),
      UTF8String.fromString(record.field(StreamingStartCheck.Window).getOrElse(reading.definition)),
      UTF8String.fromString(record.field(StreamingStartCheck.Emit).getOrElse("")), batch, watermarkMs.map(_ * 1000L).orNull)

    val entries = operator.variables.filterNot { case (name, _) => name == Timers.DueBuckets || name.startsWith("$") }.map {
      case (name, variableType) => entriesOf(session, root, batch, operator.id, name, variableType, reading.keySchema)
    }
    val gathered = entries.reduce((a, b) => a.zipPartitions(b, preservesPartitioning = true)(_ ++ _))
    val (kindOf, previous, aggregateCount) = (kind, kind.previousLayout, reading.aggregates.length)
    val keyFields = outputKeys.length
    val rows: RDD[InternalRow] = gathered.mapPartitionsWithIndex { (partition, partitionEntries) =>
      val aggregates = new SparkAggregates(functions, filters, values, partition)
      val byKey = mutable.LinkedHashMap.empty[ByteBuffer, KeyStates.Snapshot]
      partitionEntries.foreach { e =>
        val snapshot = byKey.getOrElseUpdate(ByteBuffer.wrap(e.key), new KeyStates.Snapshot(e.key))
        if (e.previous) snapshot.putPrevious(e.variable, e.entry, e.value) else snapshot.put(e.variable, e.entry, e.value)
      }
      val toOutput = UnsafeProjection.create(schema)
      val out = new GenericInternalRow(schema.length)
      val keyRow = new UnsafeRow(keyTypes.length)
      byKey.valuesIterator.flatMap { snapshot =>
        keyRow.pointTo(snapshot.current, snapshot.current.length)
        previous.foreach(_.converter(snapshot.previousVariables, snapshot).convert())
        val holding = new Holding(aggregates)
        kindOf.inspect(windows, keyTypes, aggregates, snapshot, keyRow, holding)
        // a key that holds no window, row or timer (what is left of it is not the kind's) is not shown
        val shown = if (holding.windows.nonEmpty) holding.windows.map(Some(_))
          else if (holding.held > 0 || holding.timerMs.isDefined) Seq(None)
          else Nil
        shown.iterator.map { window =>
          var i = 0
          while (i < keyFields) { out.update(i, keyRow.get(i, keyTypes(i))); i += 1 }
          window match {
            case Some((start, end, result)) =>
              out.update(keyFields, InternalRow(start, end))
              (0 until aggregateCount).foreach(a => out.update(keyFields + 1 + a, result.get(a, functions(a).dataType)))
            case None =>
              (0 to aggregateCount).foreach(a => out.setNullAt(keyFields + a))
          }
          out.setLong(keyFields + 1 + aggregateCount, holding.held)
          holding.timerMs match {
            case Some(ms) => out.setLong(keyFields + 2 + aggregateCount, ms * 1000L)
            case None => out.setNullAt(keyFields + 2 + aggregateCount)
          }
          out.update(keyFields + 3 + aggregateCount, state)
          toOutput(out).copy(): InternalRow
        }
      }
    }
    SparkInternals.internalRowsToDataFrame(session, rows, schema)
  }

  /** What `StreamingKind.inspect` reports of a key: its windows with their values, its held rows and its timer. */
  private final class Holding(aggregates: SparkAggregates) extends KeyHolding {
    val windows = mutable.ArrayBuffer.empty[(Long, Long, InternalRow)]
    var held = 0L
    var timerMs: Option[Long] = None
    override def window(start: Long, end: Long, buffer: InternalRow): Unit = windows += ((start, end, aggregates.result(buffer).copy()))
    override def heldRows(count: Long): Unit = held = count
    override def timer(ms: Option[Long]): Unit = timerMs = ms
  }

  /**
   * One state variable's entries in the state partitions, by Spark's state data source: this
   * release's (the keys' entries of the processor's state, [[StateEntries]]; the group's own are
   * not a key's) and the previous release's (values, maps and lists of the key's own group, whose
   * bytes are packed from the grouping key as the processor packs them).
   */
  private def entriesOf(session: SparkSession, root: Path, batch: Long, operatorId: Long, name: String, variableType: String,
      keySchema: StructType): RDD[Entry] = {
    val df = session.read.format("statestore")
      .option("path", root.toString).option("operatorId", operatorId).option("batchId", batch).option("stateVarName", name)
      .load()
    val columns = df.schema.fieldNames.toSeq
    val ordinal = columns.zipWithIndex.toMap
    val keyTypes = keySchema.map(_.dataType)
    val groupKeyFields = df.schema("key").dataType.asInstanceOf[StructType].length
    val ours = name == StateEntries.Variable
    val valueColumn = if (columns.contains("user_map_value")) "user_map_value" else if (columns.contains("list_element")) "list_element" else "value"
    val valueType = df.schema(valueColumn).dataType.asInstanceOf[StructType].head.dataType
    val (keyAt, mapKeyAt, valueAt) = (ordinal("key"), ordinal.get("user_map_key"), ordinal(valueColumn))
    val keyBytes = KeyedWindowProcessor.internalKeyBytes(keyTypes)
    df.queryExecution.toRdd.mapPartitions { rows =>
      val pack = keyBytes()
      rows.flatMap { row =>
        val value = row.getStruct(valueAt, 1).get(0, valueType) match {
          case b: Array[Byte] => b.clone()
          case other => other
        }
        if (ours) {
          StateEntries.parse(row.getStruct(mapKeyAt.get, 1).getBinary(0)) match {
            case StateEntries.Parsed(variable, StateEntries.KeyValuePart, _, key) => Some(Entry(key, variable, null, value, previous = false))
            case StateEntries.Parsed(variable, StateEntries.KeyMapPart, entry, key) => Some(Entry(key, variable, entry, value, previous = false))
            case _ => None
          }
        } else {
          val group = pack(row.getStruct(keyAt, groupKeyFields))
          Some(Entry(group, name, mapKeyAt.map(at => row.getStruct(at, 1).getLong(0)).orNull, value, previous = true))
        }
      }
    }
  }
}
