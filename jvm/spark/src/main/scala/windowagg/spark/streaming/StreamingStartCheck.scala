package windowagg.spark.streaming

import java.nio.charset.StandardCharsets

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, TransformWithState}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.WriteToStreamStatement
import org.apache.spark.sql.streaming.OutputMode

import windowagg.spark.{WindowAggError, WindowAggException, WindowAggVersion}

/**
 * A streaming processor's state layout, named, and its version; it also reads the versions from
 * `readsFrom` on (earlier ones whose every entry reads as this version's), so their checkpoints restart.
 */
final case class StateLayout(name: String, version: Int, readsFrom: Int) {
  require(readsFrom <= version)
}

object StateLayout {
  def apply(name: String, version: Int): StateLayout = StateLayout(name, version, version)
}

/**
 * What one streaming windowed aggregation keeps in its checkpoint: the processor's state layout
 * and its version, and what the query computes into that state (window, keys, time, aggregates,
 * emission), as named text fields so a difference can be said in words.
 */
final case class StateRecord(layout: String, version: Int, fields: Seq[(String, String)], readsFrom: Option[Int] = None) {
  /** Whether this release's record can take over state written as `old` (the same layout, a version it reads). */
  def reads(old: StateRecord): Boolean =
    old.layout == layout && old.version <= version && old.version >= readsFrom.getOrElse(version)

  def field(name: String): Option[String] = fields.collectFirst { case (`name`, v) => v }
}

/**
 * Checks a streaming query's windowed aggregations when it starts (`writeStream.start()`), where
 * the output mode and the checkpoint are known, so that misuse fails before any data is read:
 *  - `emit` against the output mode: updates need the update mode (an append sink would keep
 *    every version of a window as a new row); the complete mode has no meaning for windows that
 *    close;
 *  - the checkpoint's state against the query: a restart whose window, keys, time column,
 *    aggregates or emission differ from what built the state, or whose state layout this release
 *    cannot read, fails naming what changed.
 * The record is a small JSON file in the checkpoint (`windowagg/state.json`), written on the
 * first start. It runs among the analyzer's hint rules, the one extension point ahead of Spark's
 * own streaming checks; it never changes the plan.
 */
final case class StreamingStartCheck(session: SparkSession) extends Rule[LogicalPlan] {
  import StreamingStartCheck._

  override def apply(plan: LogicalPlan): LogicalPlan = {
    plan match {
      case write: WriteToStreamStatement =>
        val processors = write.inputQuery.collect {
          case t: TransformWithState if t.statefulProcessor.isInstanceOf[KeyedWindowProcessor] =>
            t.statefulProcessor.asInstanceOf[KeyedWindowProcessor]
        }
        if (processors.nonEmpty) {
          checkOutputMode(write.outputMode, processors)
          checkpointRoot(write).foreach(root => checkState(root, write.hadoopConf, processors.map(_.stateRecord)))
        }
      case _ =>
    }
    plan
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
            (if (p.retracts && p.emission.emitsChanges) " and retracts merged sessions" else "") +
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

  private def checkState(root: String, hadoopConf: Configuration, records: Seq[StateRecord]): Unit = {
    val file = new Path(new Path(root, Directory), FileName)
    val fs = file.getFileSystem(hadoopConf)
    val hasRun = hasCommittedBatches(fs, new Path(root, "commits"))
    val recorded = if (fs.exists(file)) Some(read(fs, file)) else None
    recorded match {
      case Some(old) if hasRun =>
        refuseDifferences(root, old, records, "")
        // an earlier version this release reads is written as this release's version from now on
        if (old.map(_.version) != records.map(_.version)) write(fs, file, records)
      case Some(old) if old == records.map(_.copy(readsFrom = None)) =>
      case None if hasRun =>
        // written before records were kept (0.1.0): its state is each layout's first version
        refuseDifferences(root, records.map(r => r.copy(version = FirstVersion)), records, " by windowagg 0.1.0")
        write(fs, file, records)
      case _ => write(fs, file, records)
    }
  }
}

object StreamingStartCheck {
  private def refuseDifferences(root: String, old: Seq[StateRecord], now: Seq[StateRecord], writtenBy: String): Unit = {
    val problems = differences(old, now)
    if (problems.nonEmpty) {
      val sameQuery = differences(old.map(_.copy(version = 0)), now.map(_.copy(version = 0, readsFrom = None))).isEmpty
      val message =
        if (sameQuery) {
          s"the checkpoint $root holds windowed-aggregation state written$writtenBy in a layout this release cannot read " +
            s"(${problems.mkString("; ")}). Let the query close its open windows with the release that wrote the " +
            "checkpoint, or start it from a new checkpoint location (its open windows then start empty)"
        } else {
          s"the checkpoint $root holds windowed-aggregation state built$writtenBy by a different query " +
            s"(${problems.mkString("; ")}); restarting would mix the two. Restore the query the checkpoint " +
            "was written by, or start this one from a new checkpoint location"
        }
      throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH, message)
    }
  }

  val CheckpointLocationConf = "spark.sql.streaming.checkpointLocation"
  val Directory = "windowagg"
  val FileName = "state.json"
  /** The record's own format (not the state's): bumped only if this file changes shape. */
  val RecordFormat = 1
  /** Every state layout's first version, the one windowagg 0.1.0 wrote before it kept records. */
  val FirstVersion = 1
  val Window = "window"
  val Keys = "keys"
  val Time = "time"
  val Aggregates = "aggregates"
  val Emit = "emit"
  val ExpireIdleKeys = "expire idle keys"

  private val json = new ObjectMapper()

  /** What differs between the checkpoint's records and the query's, in words; empty when they agree. */
  def differences(old: Seq[StateRecord], now: Seq[StateRecord]): Seq[String] =
    if (old.length != now.length) {
      Seq(s"it had ${old.length} windowed aggregation(s), the query now has ${now.length}")
    } else {
      old.zip(now).zipWithIndex.flatMap { case ((o, n), i) =>
        val which = if (old.length > 1) s"windowed aggregation ${i + 1}: " else ""
        if (o.layout != n.layout) {
          Seq(s"${which}its state is '${o.layout}', the query's is '${n.layout}'")
        } else if (!n.reads(o)) {
          val reads = n.readsFrom.filter(_ < n.version).fold(s"version ${n.version} only")(from => s"versions $from to ${n.version} only")
          Seq(s"${which}its '${o.layout}' state is version ${o.version}, and this release of windowagg " +
            s"(${WindowAggVersion.current}) reads $reads, with no conversion between them")
        } else {
          (o.fields.map(_._1) ++ n.fields.map(_._1)).distinct.flatMap { name =>
            val (before, after) = (o.field(name), n.field(name))
            if (before == after) None
            else Some(s"$which$name was ${before.fold("absent")(v => s"'$v'")}, now ${after.fold("absent")(v => s"'$v'")}")
          }
        }
      }
    }

  private def hasCommittedBatches(fs: FileSystem, commits: Path): Boolean =
    fs.exists(commits) && fs.listStatus(commits).exists(_.getPath.getName.forall(_.isDigit))

  private def read(fs: FileSystem, file: Path): Seq[StateRecord] = {
    val root =
      try {
        val in = fs.open(file)
        try json.readTree(in) finally in.close()
      } catch {
        case NonFatal(e) => throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH, s"cannot read windowagg's state record $file: ${e.getMessage}", e)
      }
    val format = root.path("format").asInt()
    if (format > RecordFormat) {
      throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH,
        s"$file was written by a newer windowagg (${root.path("windowagg").asText()}, record format $format); " +
          s"this release (${WindowAggVersion.current}) cannot read its state: run that release or a newer one")
    }
    try {
      root.get("operators").elements().asScala.map { op =>
        StateRecord(
          op.get("layout").asText(), op.get("version").asInt(),
          op.get("fields").properties().asScala.map(e => e.getKey -> e.getValue.asText()).toSeq)
      }.toSeq
    } catch {
      case NonFatal(e) => throw WindowAggException(WindowAggError.CHECKPOINT_MISMATCH, s"cannot read windowagg's state record $file: $e", e)
    }
  }

  private def write(fs: FileSystem, file: Path, records: Seq[StateRecord]): Unit = {
    val root = json.createObjectNode()
    root.put("format", RecordFormat)
    root.put("windowagg", WindowAggVersion.current)
    val operators = root.putArray("operators")
    records.foreach { r =>
      val op = operators.addObject()
      op.put("layout", r.layout)
      op.put("version", r.version)
      val fields = op.putObject("fields")
      r.fields.foreach { case (k, v) => fields.put(k, v) }
    }
    fs.mkdirs(file.getParent)
    val out = fs.create(file, true)
    try out.write(json.writerWithDefaultPrettyPrinter().writeValueAsString(root).getBytes(StandardCharsets.UTF_8))
    finally out.close()
  }
}
