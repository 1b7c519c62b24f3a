package windowagg.spark.streaming

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, TransformWithState}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.WriteToStreamStatement
import org.apache.spark.sql.streaming.OutputMode

import windowagg.spark.common.{WindowAggError, WindowAggException, WindowAggVersion}


/** A streaming processor's state layout, named, and its version: bumped whenever what it keeps changes. */
final case class StateLayout(name: String, version: Int)

/**
 * What one streaming windowed aggregation keeps in its checkpoint: the processor's state layout,
 * its version and how its state is grouped (`keying`), and what the query computes into that state
 * (window, keys, time, aggregates, emission), as named text fields so a difference can be said in
 * words. `previousVersion` is the version of the previous release's layout this release converts
 * (`PreviousLayout`), if any: not recorded, since a record says what a checkpoint holds.
 * `reading` is what `read_state` needs to decode the state ([[StateReader]]); a restart never
 * compares it, and records what the query now says.
 */
final case class StateRecord(layout: String, version: Int, keying: StateKeying, fields: Seq[(String, String)],
    previousVersion: Option[Int] = None, reading: Option[StateReading] = None) {

  /**
   * How this release's aggregation keeps state taken over from `old` (this layout's version, or the
   * previous release's, which was kept per key), or None when it cannot.
   */
  def takesOver(old: StateRecord): Option[StateKeying] =
    if (old.layout != layout) None
    else if (old.version == version) Some(old.keying)
    else if (previousVersion.contains(old.version) && old.keying == StateKeying.ByKey) Some(StateKeying.ByKey)
    else None

  def field(name: String): Option[String] = fields.collectFirst { case (`name`, v) => v }

  /** As the checkpoint keeps it. */
  def stored: StateRecord = copy(previousVersion = None)
}

/**
 * Binds a streaming query's windowed aggregations to its checkpoint when it starts
 * (`writeStream.start()`), where the output mode and the checkpoint are known, so that misuse fails
 * before any data is read or anything is written:
 *  - `emit` against the output mode: updates need the update mode (an append sink would keep
 *    every version of a window as a new row); the complete mode has no meaning for windows that
 *    close;
 *  - the checkpoint against the query: a checkpoint of another kind of query or state store, a
 *    restart whose window, keys, time column, aggregates or emission differ from what built the
 *    state, or whose state layout this release cannot read, fails naming what changed and what to do.
 * A checkpoint of the previous release restarts: its state stays grouped by key, as it was written,
 * and converts key by key (`PreviousLayouts`), so this rule plans such an aggregation by key.
 * The record is a small JSON file in the checkpoint (`windowagg/state.json`), written on the
 * first start and whenever a restart changes what it says. It runs among the analyzer's hint rules,
 * the one extension point ahead of Spark's own streaming checks.
 */
final case class StreamingStartCheck(session: SparkSession) extends Rule[LogicalPlan] {
  import StreamingStartCheck._

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case write: WriteToStreamStatement =>
      val aggregations = write.inputQuery.collect {
        case t: TransformWithState if t.statefulProcessor.isInstanceOf[KeyedWindowProcessor] =>
          t -> t.statefulProcessor.asInstanceOf[KeyedWindowProcessor]
      }
      if (aggregations.isEmpty) plan
      else {
        checkOutputMode(write.outputMode, aggregations.map(_._2))
        val keyings = checkpointRoot(write) match {
          case Some(root) => checkState(new Path(root), write.hadoopConf, aggregations.map(_._2.stateRecord))
          case None => aggregations.map(_ => StateKeying.ByPartition)
        }
        // grouped by key as the checkpoint is, unless already (the rule runs until the plan stays the same)
        val byKey = aggregations.zip(keyings).collect { case ((t, p), StateKeying.ByKey) if p.spec.keying != StateKeying.ByKey => t }
        if (byKey.isEmpty) plan
        // withNewChildren, not copy: the statement's fields differ between Spark lines
        else write.withNewChildren(Seq(write.inputQuery.transform {
          case t: TransformWithState if byKey.exists(_ eq t) => StreamingWindowPlanner.groupedByKey(session, t)
        }))
      }
    case _ => plan
  }

  private def checkOutputMode(mode: OutputMode, processors: Seq[KeyedWindowProcessor]): Unit = {
    if (mode == OutputMode.Complete()) {
      throw WindowAggException(WindowAggError.OUTPUT_MODE,
        "a windowed aggregation cannot run in the complete output mode: it keeps the state of open windows " +
          "only and emits each window when it is final (emit 'final', append mode) or when it changes (emit " +
          "'updates', update mode); start the query with outputMode('append') or outputMode('update')")
    }
    processors.find(_.emission.outputMode == OutputMode.Update()).foreach { p =>
      if (mode == OutputMode.Append()) {
        val what = if (p.emission.emitsChanges) "every new value of a window" else "early values of a window before its final one"
        throw WindowAggException(WindowAggError.OUTPUT_MODE,
          s"emit '${p.emission}' (${p.stateRecord.field(Window).getOrElse("")}) sends $what" +
            (if (p.retracts && p.emission.retractsMerged) " and retracts values of windows whose bounds changed (sessions that grew or merged, count windows whose rows shifted)" else "") +
            ", which an append-mode sink would keep as new rows: start the query with outputMode('update'), " +
            "or use emit 'final' with outputMode('append')")
      }
    }
  }

  /** The checkpoint a restart would read, as Spark resolves it; none for a temporary one. */
  private def checkpointRoot(write: WriteToStreamStatement): Option[String] =
    if (!write.recoverFromCheckpointLocation) None
    else write.userSpecifiedCheckpointLocation.orElse {
      for {
        location <- session.conf.getOption(CheckpointLocationConf)
        name <- write.userSpecifiedName
      } yield new Path(location, name).toString
    }

  /** Checks the checkpoint at `root` against the query's records and says how each aggregation's state is grouped. */
  private def checkState(root: Path, hadoopConf: Configuration, records: Seq[StateRecord]): Seq[StateKeying] = {
    val file = new Path(new Path(root, Directory), FileName)
    val fs = file.getFileSystem(hadoopConf)
    val lastBatch = committedBatches(fs, root).maxOption
    val recorded = if (fs.exists(file)) Some(readRecord(fs, file)) else None
    (recorded, lastBatch) match {
      case (Some(old), Some(_)) =>
        checkProvider(fs, root)
        val keyings = takeOver(root, file, old.operators, records)
        val now = Recorded(WindowAggVersion.current, records.zip(keyings).map { case (r, k) => r.copy(keying = k).stored })
        if (now != old) write(fs, file, now)
        keyings
      case (None, Some(_)) =>
        refuseUnrecorded(fs, root, records)
      case _ =>
        // nothing committed yet: the query starts its state afresh, grouped by state partition
        val now = Recorded(WindowAggVersion.current, records.map(_.stored))
        if (!recorded.contains(now)) write(fs, file, now)
        records.map(_ => StateKeying.ByPartition)
    }
  }
}

object StreamingStartCheck {
  val CheckpointLocationConf = "spark.sql.streaming.checkpointLocation"
  val Directory = "windowagg"
  val FileName = "state.json"
  /**
   * The record's own format (not the state's): 1 (0.2.0, 0.3.0) had no keying, all state being kept
   * per key; 2 names it. Bumped only if this file changes shape.
   */
  val RecordFormat = 2
  /** Every state layout's first version, the one windowagg 0.1.0 wrote before it kept records. */
  val FirstVersion = 1
  val Window = "window"
  val Keys = "keys"
  val Time = "time"
  val Aggregates = "aggregates"
  val Emit = "emit"
  val ExpireIdleKeys = "expire idle keys"

  /** What `windowagg/state.json` holds: the release that last wrote it, and one record per windowed aggregation. */
  final case class Recorded(windowagg: String, operators: Seq[StateRecord])

  private val json = new ObjectMapper()

  /**
   * How each of the query's aggregations takes over the state the checkpoint recorded, or the error
   * naming what differs and what to do.
   */
  private def takeOver(root: Path, file: Path, old: Seq[StateRecord], now: Seq[StateRecord]): Seq[StateKeying] = {
    val problems = differences(old, now)
    if (problems.nonEmpty) {
      // the same query when only the layout's version or keying differs
      def query(records: Seq[StateRecord]) =
        records.map(_.copy(version = 0, keying = StateKeying.ByPartition, previousVersion = None, reading = None))
      val sameQuery = differences(query(old), query(now)).isEmpty
      val message =
        if (sameQuery) {
          s"the checkpoint $root holds windowed-aggregation state in a layout this release cannot read " +
            s"(${problems.mkString("; ")}; recorded in $file). Run the release that wrote it, or start this query " +
            "from a new checkpoint location (its open windows then start empty)"
        } else {
          s"the checkpoint $root holds windowed-aggregation state built by a different query " +
            s"(${problems.mkString("; ")}; recorded in $file); restarting would mix the two. Restore the query the " +
            "checkpoint was written by, or start this one from a new checkpoint location"
        }
      throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH, message)
    }
    old.zip(now).map { case (o, n) => n.takesOver(o).get }
  }

  /** What differs between the checkpoint's records and the query's, in words; empty when they agree. */
  def differences(old: Seq[StateRecord], now: Seq[StateRecord]): Seq[String] =
    if (old.length != now.length) {
      Seq(s"it had ${old.length} windowed aggregation(s), the query now has ${now.length}")
    } else {
      old.zip(now).zipWithIndex.flatMap { case ((o, n), i) =>
        val which = if (old.length > 1) s"windowed aggregation ${i + 1}: " else ""
        if (o.layout != n.layout) {
          Seq(s"${which}its state is '${o.layout}', the query's is '${n.layout}'")
        } else if (n.takesOver(o).isEmpty) {
          val converts = n.previousVersion.fold("")(v => s" and converts version $v (the previous release's)")
          val newer = if (o.version > n.version) "; a newer windowagg wrote it" else ""
          Seq(s"${which}its '${o.layout}' state is version ${o.version} kept by ${o.keying.name}, and this release of " +
            s"windowagg (${WindowAggVersion.current}) reads version ${n.version}$converts only$newer")
        } else {
          (o.fields.map(_._1) ++ n.fields.map(_._1)).distinct.flatMap { name =>
            val (before, after) = (o.field(name), n.field(name))
            if (before == after) None
            else Some(s"$which$name was ${before.fold("absent")(v => s"'$v'")}, now ${after.fold("absent")(v => s"'$v'")}")
          }
        }
      }
    }

  /** The micro-batches the checkpoint committed (those Spark still keeps). */
  def committedBatches(fs: FileSystem, root: Path): Seq[Long] = {
    val commits = new Path(root, "commits")
    if (!fs.exists(commits)) Nil
    else fs.listStatus(commits).map(_.getPath.getName).filter(n => n.nonEmpty && n.forall(_.isDigit)).map(_.toLong).toSeq
  }

  private val RocksDb = "RocksDBStateStoreProvider"

  /**
   * Spark restores a checkpoint's state store provider from its offsets log whatever the session
   * says: a checkpoint begun with another provider cannot hold transformWithState's state.
   */
  private def checkProvider(fs: FileSystem, root: Path): Unit = {
    val offsets = new Path(root, "offsets")
    val latest = if (!fs.exists(offsets)) None
      else fs.listStatus(offsets).map(_.getPath).filter(p => p.getName.nonEmpty && p.getName.forall(_.isDigit))
        .maxByOption(_.getName.toLong)
    latest.foreach { file =>
      val provider = try {
        val in = fs.open(file)
        val lines = try scala.io.Source.fromInputStream(in, "UTF-8").getLines().toList finally in.close()
        lines.drop(1).headOption.map(json.readTree).flatMap(m => Option(m.path("conf").get(StreamingWindowPlanner.ProviderConf)))
          .map(_.asText())
      } catch {
        case NonFatal(_) => None // Spark reads its own log and says what is wrong with it
      }
      provider.filterNot(_.contains(RocksDb)).foreach { other =>
        throw WindowAggException(WindowAggError.STREAMING_REQUIREMENT,
          s"the checkpoint $root was begun with the state store provider $other (recorded in $file), and Spark keeps " +
            s"a checkpoint's provider: windowagg's streaming windows keep their state with transformWithState, which " +
            s"needs ${StreamingWindowPlanner.RocksDbProvider}. Start the query from a new checkpoint location")
      }
    }
  }

  // The state variables windowagg 0.1.0 kept (sliding windows and sessions), before records were kept.
  private val FirstReleaseVariables = Set("partials", "finalBefore", "sessions", "closedReach")

  /**
   * A checkpoint with committed micro-batches and no record: written by windowagg 0.1.0, whose state
   * this release cannot read, or by a query without windowagg's streaming windows.
   */
  private def refuseUnrecorded(fs: FileSystem, root: Path, records: Seq[StateRecord]): Nothing = {
    val variables = stateVariables(fs, root)
    val ours = variables.filter(v => v == StateEntries.Variable || v == Timers.DueBuckets)
    if (ours.nonEmpty) {
      throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH,
        s"the checkpoint $root holds windowagg's state (${ours.distinct.sorted.mkString(", ")}), but its record " +
          s"$Directory/$FileName is missing: restore it from a copy of the checkpoint, or start the query from a new " +
          "checkpoint location")
    }
    if (variables.exists(FirstReleaseVariables.contains)) {
      val old = records.map(r => r.copy(version = FirstVersion, keying = StateKeying.ByKey))
      throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH,
        s"the checkpoint $root holds windowed-aggregation state written by windowagg 0.1.0, which this release cannot " +
          s"read (${differences(old, records).mkString("; ")}). Let the query close its open windows with 0.1.0, or " +
          "start it from a new checkpoint location (its open windows then start empty)")
    }
    val holds = if (variables.isEmpty) "no state" else s"state of its own (${variables.distinct.sorted.mkString(", ")})"
    throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH,
      s"the checkpoint $root was written by a query without windowagg's streaming windows: it has committed " +
        s"micro-batches and $holds, and no windowagg record ($Directory/$FileName). A windowed aggregation cannot take " +
        "over another query's state: start it from a new checkpoint location")
  }

  /** The state variables of the checkpoint's transformWithState operators (but Spark's own). */
  private def stateVariables(fs: FileSystem, root: Path): Seq[String] =
    operatorVariables(fs, root).values.flatten.map(_._1).filterNot(_.startsWith("$")).toSeq

  /**
   * Each transformWithState operator's state variables with their types, by operator id, as Spark's
   * operator metadata lists them (in its latest file: a restart that declares other variables adds one).
   */
  def operatorVariables(fs: FileSystem, root: Path): Map[Long, Seq[(String, String)]] = {
    val state = new Path(root, "state")
    if (!fs.exists(state)) return Map.empty
    fs.listStatus(state).toSeq.filter(_.getPath.getName.forall(_.isDigit)).flatMap { operator =>
      val metadata = new Path(operator.getPath, "_metadata/v2")
      val latest = if (!fs.exists(metadata)) None
        else fs.listStatus(metadata).map(_.getPath).filter(p => p.getName.nonEmpty && p.getName.forall(_.isDigit)).maxByOption(_.getName.toLong)
      latest.flatMap { file =>
        try {
          val in = fs.open(file)
          val text = try new String(in.readAllBytes(), StandardCharsets.UTF_8) finally in.close()
          val properties = json.readTree(json.readTree(text.substring(text.indexOf('{'))).path("operatorPropertiesJson").asText("{}"))
          Some(operator.getPath.getName.toLong -> properties.path("stateVariables").elements().asScala
            .map(v => v.path("stateName").asText() -> v.path("stateVariableType").asText()).toSeq)
        } catch {
          case NonFatal(_) => None
        }
      }
    }.toMap
  }

  private def unreadable(file: Path, why: String, cause: Throwable = null): WindowAggException =
    WindowAggException(WindowAggError.CHECKPOINT_MISMATCH,
      s"cannot read windowagg's state record $file: $why. It is written by windowagg alone; restore it from a copy of " +
        "the checkpoint, or start the query from a new checkpoint location", cause)

  /** The record in `file`, or the error naming what is wrong with it. */
  def readRecord(fs: FileSystem, file: Path): Recorded = {
    val root =
      try {
        val in = fs.open(file)
        try json.readTree(in) finally in.close()
      } catch {
        case NonFatal(e) => throw unreadable(file, s"it is not JSON (${e.getMessage})", e)
      }
    if (root == null || !root.isObject) throw unreadable(file, "it is empty or not a JSON object")
    val format = root.path("format").asInt(0)
    val writtenBy = root.path("windowagg").asText("")
    if (format > RecordFormat) {
      throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH,
        s"$file was written by a newer windowagg (${if (writtenBy.isEmpty) "unknown" else writtenBy}, record format " +
          s"$format); this release (${WindowAggVersion.current}) cannot read its state: run that release or a newer one")
    }
    if (format < 1) throw unreadable(file, "it has no record format")
    def text(node: JsonNode, name: String): String = {
      val value = node.get(name)
      if (value == null || !value.isTextual || value.asText().isEmpty) throw unreadable(file, s"an operator has no '$name'")
      value.asText()
    }
    val operators = Option(root.get("operators")).filter(_.isArray).getOrElse(throw unreadable(file, "it lists no operators"))
    Recorded(writtenBy, operators.elements().asScala.map { op =>
      val version = op.get("version")
      if (version == null || !version.isInt || version.asInt() < 1) throw unreadable(file, "an operator has no valid 'version'")
      val fields = Option(op.get("fields")).filter(_.isObject).getOrElse(throw unreadable(file, "an operator has no 'fields'"))
      // format 1 recorded no keying: every release that wrote it kept state per key
      val keying = if (format == 1) StateKeying.ByKey else {
        val name = text(op, "keying")
        StateKeying.named(name).getOrElse(throw unreadable(file,
          s"keying '$name' is none of ${StateKeying.all.map(k => s"'${k.name}'").mkString(", ")}"))
      }
      val reading = Option(op.get("reading")).map { node =>
        try StateReading.fromJson(node) catch { case NonFatal(e) => throw unreadable(file, e.getMessage, e) }
      }
      StateRecord(text(op, "layout"), version.asInt(), keying,
        fields.properties().asScala.map(e => e.getKey -> e.getValue.asText()).toSeq, reading = reading)
    }.toSeq)
  }

  private def write(fs: FileSystem, file: Path, recorded: Recorded): Unit = {
    val root = json.createObjectNode()
    root.put("format", RecordFormat)
    root.put("windowagg", recorded.windowagg)
    val operators = root.putArray("operators")
    recorded.operators.foreach { r =>
      val op = operators.addObject()
      op.put("layout", r.layout)
      op.put("version", r.version)
      op.put("keying", r.keying.name)
      val fields = op.putObject("fields")
      r.fields.foreach { case (k, v) => fields.put(k, v) }
      r.reading.foreach(reading => op.set[JsonNode]("reading", reading.toJson(json)))
    }
    fs.mkdirs(file.getParent)
    val out = fs.create(file, true)
    try out.write(json.writerWithDefaultPrettyPrinter().writeValueAsString(root).getBytes(StandardCharsets.UTF_8))
    finally out.close()
  }
}
