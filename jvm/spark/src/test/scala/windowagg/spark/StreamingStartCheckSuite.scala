package windowagg.spark

import java.nio.file.{Files, Path}
import java.sql.Timestamp

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{AnalysisException, Column, DataFrame}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.StreamingQuery
import org.scalatest.funsuite.AnyFunSuite

import windowagg.{CountWindows, SessionWindows, SlidingWindows, WindowDefinition}
import windowagg.functions.window
import windowagg.spark.streaming.{PartialsByTime, Sessions, StateKeying, StateRecord, StreamingStartCheck, StreamingWindowPlanner}

/**
 * Misuse a streaming query can only show when it starts: emit against the output mode, and a
 * checkpoint built by another query, another release or another state store, or edited by hand.
 */
class StreamingStartCheckSuite extends AnyFunSuite with SparkSessionFixture {

  private def ts(seconds: Long): Timestamp = new Timestamp(seconds * 1000)

  private def windowed(input: MemoryStream[(String, Timestamp, Long)], definition: WindowDefinition,
      options: Map[String, String] = Map.empty, aggregate: Column = sum("v")): DataFrame =
    input.toDF().toDF("k", "ts", "v").withWatermark("ts", "1 minute")
      .groupBy(col("k"), window(col("ts"), definition, options)).agg(aggregate.as("total"))

  private def newInput(): MemoryStream[(String, Timestamp, Long)] = {
    import spark.implicits._
    MemoryStream[(String, Timestamp, Long)](spark)
  }

  /** Starts `df`; with a checkpoint, into the no-op sink (the memory sink cannot restart from a checkpoint). */
  private def start(df: DataFrame, mode: String, checkpoint: Option[Path] = None): StreamingQuery = checkpoint match {
    case Some(c) => df.writeStream.format("noop").outputMode(mode).option("checkpointLocation", c.toString).start()
    case None => df.writeStream.format("memory").queryName(s"start_check_${System.nanoTime()}").outputMode(mode).start()
  }

  private def refused(run: => Unit): String = intercept[AnalysisException](run).getMessage

  /** Runs one micro-batch and stops, leaving a checkpoint with committed state. */
  private def runOnce(df: DataFrame, input: MemoryStream[(String, Timestamp, Long)], checkpoint: Path, mode: String = "append"): Unit = {
    val query = start(df, mode, Some(checkpoint))
    try {
      input.addData(Seq(("a", ts(1), 1L), ("b", ts(2), 2L)))
      query.processAllAvailable()
    } finally query.stop()
  }

  test("emit 'updates' needs the update output mode: append is refused when the query starts") {
    val message = refused(start(windowed(newInput(), SlidingWindows.of("10 seconds"), Map("emit" -> "updates")), "append"))
    assert(message.contains("emit 'updates' (sliding 10 seconds)"), message)
    assert(message.contains("outputMode('update')"), message)
    val sessions = refused(start(windowed(newInput(), SessionWindows.withInactivityGap("10 seconds"), Map("emit" -> "updates")), "append"))
    assert(sessions.contains("retracts values of windows whose bounds changed (sessions that grew or merged"), sessions)
  }

  test("the complete output mode gets windowagg's own message, whatever the emission") {
    for (options <- Seq(Map.empty[String, String], Map("emit" -> "updates"))) {
      val message = refused(start(windowed(newInput(), SlidingWindows.of("10 seconds"), options), "complete"))
      assert(message.contains("cannot run in the complete output mode"), message)
    }
  }

  test("final windows run in the append and the update mode alike") {
    import spark.implicits._
    val batches = Seq(Seq(("a", ts(1), 1L)), Seq(("a", ts(200), 2L)), Seq(("b", ts(300), 4L)))
    val definition = SlidingWindows.of("10 seconds")
    // the reference: the same windows in batch; the third micro-batch starts with the watermark at
    // 140 s, past the end of the window of the row at 1 s alone, so that window must have come out
    val batch = batches.flatten.toDF("k", "ts", "v").groupBy(col("k"), window(col("ts"), definition))
      .agg(sum("v").as("total")).collect().toSet
    val first = batch.filter(r => r.getString(0) == "a" && r.getLong(2) == 1L)
    assert(first.size == 1, batch)
    for (mode <- Seq("append", "update")) {
      val input = newInput()
      val query = start(windowed(input, definition), mode)
      try {
        batches.foreach { rows => input.addData(rows); query.processAllAvailable() }
        val emitted = spark.table(query.name).collect().toSeq
        assert(emitted.toSet.subsetOf(batch) && emitted.distinct.size == emitted.size, s"$mode: $emitted, batch: $batch")
        assert(first.subsetOf(emitted.toSet), s"$mode: $emitted lacks $first")
      } finally query.stop()
    }
  }

  test("a restart with a different window, aggregate or emission fails at start, naming what changed") {
    val checkpoint = Files.createTempDirectory("windowagg-restart")
    val input = newInput()
    runOnce(windowed(input, SlidingWindows.of("10 minutes")), input, checkpoint)
    val record = Files.readString(checkpoint.resolve("windowagg").resolve("state.json"))
    assert(record.contains("\"window\" : \"sliding 10 minutes\""), record)

    val window = refused(start(windowed(newInput(), SlidingWindows.of("20 minutes")), "append", Some(checkpoint)))
    assert(window.contains("window was 'sliding 10 minutes', now 'sliding 20 minutes'"), window)
    assert(window.contains("start this one from a new checkpoint location"), window)

    val aggregate = refused(start(windowed(newInput(), SlidingWindows.of("10 minutes"), aggregate = max("v")), "append", Some(checkpoint)))
    assert(aggregate.contains("aggregates was 'sum(v)', now 'max(v)'"), aggregate)

    val emit = refused(start(windowed(newInput(), SlidingWindows.of("10 minutes"), Map("emit" -> "updates")), "update", Some(checkpoint)))
    assert(emit.contains("emit was 'final', now 'updates'"), emit)

    val kind = refused(start(windowed(newInput(), CountWindows.of(10)), "append", Some(checkpoint)))
    assert(kind.contains("its state is 'partials by time', the query's is 'rows'"), kind)

    // the same query restarts, and late-row routing (which keeps nothing in state) may change
    val same = start(windowed(newInput(), SlidingWindows.of("10 minutes"), Map("lateRows" -> "emit")), "append", Some(checkpoint))
    same.stop()
  }

  test("a checkpoint that never committed a batch takes the new query's record") {
    val checkpoint = Files.createTempDirectory("windowagg-uncommitted")
    start(windowed(newInput(), SlidingWindows.of("10 minutes")), "append", Some(checkpoint)).stop()
    val input = newInput()
    runOnce(windowed(input, SlidingWindows.of("5 minutes")), input, checkpoint)
    assert(Files.readString(checkpoint.resolve("windowagg").resolve("state.json")).contains("sliding 5 minutes"))
  }

  /** Every file under `dir` with its bytes: what a refused start must leave as it was. */
  private def files(dir: Path): Map[String, Seq[Byte]] = {
    val stream = Files.walk(dir)
    try stream.iterator().asScala.filter(Files.isRegularFile(_)).map(p => dir.relativize(p).toString -> Files.readAllBytes(p).toSeq).toMap
    finally stream.close()
  }

  /** The start of `df` from `checkpoint` is refused, leaving the checkpoint as it was; the message. */
  private def refusedLeaving(checkpoint: Path, df: DataFrame, mode: String = "append"): String = {
    val before = files(checkpoint)
    val message = refused(start(df, mode, Some(checkpoint)))
    assert(files(checkpoint) == before, s"a refused start changed the checkpoint: $message")
    message
  }

  /** Replaces the record's text by `edit` of it (the .crc beside it would refuse a hand edit). */
  private def editRecord(checkpoint: Path)(edit: String => String): Unit = {
    val file = checkpoint.resolve("windowagg").resolve("state.json")
    Files.deleteIfExists(checkpoint.resolve("windowagg").resolve(".state.json.crc"))
    Files.writeString(file, edit(Files.readString(file)))
  }

  test("state of another version, or a record of a newer format, fails at start naming the versions") {
    val sessions = SessionWindows.withInactivityGap("10 seconds")
    val checkpoint = Files.createTempDirectory("windowagg-version")
    val input = newInput()
    runOnce(windowed(input, sessions), input, checkpoint)
    val record = Files.readString(checkpoint.resolve("windowagg").resolve("state.json"))
    assert(record.contains("\"keying\" : \"state partition\""), record)
    val current = s"\"version\" : ${Sessions.layout.version}"
    assert(record.contains(current), record)

    editRecord(checkpoint)(_ => record.replace(current, "\"version\" : 9"))
    val version = refusedLeaving(checkpoint, windowed(newInput(), sessions))
    assert(version.contains("its 'sessions' state is version 9 kept by state partition"), version)
    assert(version.contains(s"reads version ${Sessions.layout.version} and converts version 2 (the previous release's) only; " +
      "a newer windowagg wrote it"), version)
    assert(version.contains("in a layout this release cannot read"), version)
    assert(version.contains(checkpoint.resolve("windowagg").resolve("state.json").toString), version)

    // version 2 was kept per key: a record saying it was kept per state partition is not the previous release's
    editRecord(checkpoint)(_ => record.replace(current, "\"version\" : 2"))
    val partitioned = refusedLeaving(checkpoint, windowed(newInput(), sessions))
    assert(partitioned.contains("its 'sessions' state is version 2 kept by state partition"), partitioned)

    editRecord(checkpoint)(_ => record.replace("\"format\" : 2", "\"format\" : 9"))
    val format = refusedLeaving(checkpoint, windowed(newInput(), sessions))
    assert(format.contains("written by a newer windowagg"), format)
  }

  test("a truncated or hand-edited record fails at start naming the file and what to do") {
    val checkpoint = Files.createTempDirectory("windowagg-edited")
    val input = newInput()
    runOnce(windowed(input, SlidingWindows.of("10 seconds")), input, checkpoint)
    val record = Files.readString(checkpoint.resolve("windowagg").resolve("state.json"))
    val file = checkpoint.resolve("windowagg").resolve("state.json").toString
    val edits: Seq[(String => String, String)] = Seq(
      ((r: String) => r.take(r.length / 2), "it is not JSON"),
      ((_: String) => "", "it is empty or not a JSON object"),
      ((r: String) => r.replace("\"keying\" : \"state partition\"", "\"keying\" : \"row\""),
        "keying 'row' is none of 'state partition', 'key'"),
      ((r: String) => r.replace(s"\"version\" : ${PartialsByTime.OfTimes.layout.version}", "\"version\" : \"six\""),
        "an operator has no valid 'version'"),
      ((r: String) => r.replace("\"layout\" : \"partials by time\",", ""), "an operator has no 'layout'"),
      ((r: String) => r.replace("\"operators\"", "\"operator\""), "it lists no operators"))
    for ((edit, why) <- edits) {
      editRecord(checkpoint)(_ => edit(record))
      val message = refusedLeaving(checkpoint, windowed(newInput(), SlidingWindows.of("10 seconds")))
      assert(message.contains(s"cannot read windowagg's state record $file"), message)
      assert(message.contains(why), message)
      assert(message.contains("restore it from a copy of the checkpoint, or start the query from a new checkpoint location"), message)
    }
  }

  test("a checkpoint of a query without windowagg's windows, or whose record was deleted, fails at start saying so") {
    val counts = CountWindows.of(10)
    val other = Files.createTempDirectory("windowagg-other-query")
    val input = newInput()
    val query = input.toDF().toDF("k", "ts", "v").withWatermark("ts", "1 minute").dropDuplicates("k", "ts")
      .writeStream.format("noop").option("checkpointLocation", other.toString).start()
    try {
      input.addData(Seq(("a", ts(1), 1L)))
      query.processAllAvailable()
    } finally query.stop()
    val message = refusedLeaving(other, windowed(newInput(), counts))
    assert(message.contains(s"the checkpoint file:$other was written by a query without windowagg's streaming windows") ||
      message.contains(s"the checkpoint $other was written by a query without windowagg's streaming windows"), message)
    assert(message.contains("start it from a new checkpoint location"), message)

    val deleted = Files.createTempDirectory("windowagg-deleted-record")
    val ownInput = newInput()
    runOnce(windowed(ownInput, counts), ownInput, deleted)
    Files.delete(deleted.resolve("windowagg").resolve("state.json"))
    val missing = refusedLeaving(deleted, windowed(newInput(), counts))
    assert(missing.contains("holds windowagg's state (dueKeyBuckets, windowagg)"), missing)
    assert(missing.contains("but its record windowagg/state.json is missing"), missing)
  }

  test("a checkpoint begun with another state store provider fails at start naming the offsets file") {
    val checkpoint = Files.createTempDirectory("windowagg-provider")
    val input = newInput()
    runOnce(windowed(input, SlidingWindows.of("10 seconds")), input, checkpoint)
    val offsets = checkpoint.resolve("offsets").resolve("0")
    Files.deleteIfExists(checkpoint.resolve("offsets").resolve(".0.crc"))
    Files.writeString(offsets, Files.readString(offsets)
      .replace(StreamingWindowPlanner.RocksDbProvider, "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"))
    val message = refusedLeaving(checkpoint, windowed(newInput(), SlidingWindows.of("10 seconds")))
    assert(message.contains("was begun with the state store provider org.apache.spark.sql.execution.streaming.state." +
      "HDFSBackedStateStoreProvider"), message)
    assert(message.contains(s"recorded in file:$offsets") || message.contains(s"recorded in $offsets"), message)
    assert(message.contains("Start the query from a new checkpoint location"), message)
  }

  test("a record of this release's layout, or of the previous release's kept per key, is taken over; no other") {
    val fields = Seq("window" -> "sliding 10 seconds", "keys" -> "k STRING")
    val now = StateRecord("partials by time", 5, StateKeying.ByPartition, fields, previousVersion = Some(2))
    assert(now.takesOver(StateRecord("partials by time", 5, StateKeying.ByPartition, fields)).contains(StateKeying.ByPartition))
    assert(now.takesOver(StateRecord("partials by time", 5, StateKeying.ByKey, fields)).contains(StateKeying.ByKey))
    assert(now.takesOver(StateRecord("partials by time", 2, StateKeying.ByKey, fields)).contains(StateKeying.ByKey))
    assert(now.takesOver(StateRecord("partials by time", 2, StateKeying.ByPartition, fields)).isEmpty)
    assert(now.takesOver(StateRecord("partials by time", 1, StateKeying.ByKey, fields)).isEmpty)
    assert(now.takesOver(StateRecord("partials by time", 6, StateKeying.ByPartition, fields)).isEmpty)
    assert(now.takesOver(StateRecord("sessions", 5, StateKeying.ByPartition, fields)).isEmpty)
    assert(StateRecord("partials by time", 5, StateKeying.ByPartition, fields).takesOver(
      StateRecord("partials by time", 2, StateKeying.ByKey, fields)).isEmpty)
  }

  test("differences are said per aggregation when a query has several") {
    val a = StateRecord("sessions", 1, StateKeying.ByPartition, Seq("window" -> "session gap 10 seconds", "keys" -> "k STRING"))
    val b = StateRecord("sessions", 1, StateKeying.ByPartition, Seq("window" -> "session gap 10 seconds", "keys" -> "k STRING, j INT"))
    assert(StreamingStartCheck.differences(Seq(a, a), Seq(a, b)) ==
      Seq("windowed aggregation 2: keys was 'k STRING', now 'k STRING, j INT'"))
    assert(StreamingStartCheck.differences(Seq(a), Seq(a, b)) ==
      Seq("it had 1 windowed aggregation(s), the query now has 2"))
    assert(StreamingStartCheck.differences(Seq(a, b), Seq(a, b)).isEmpty)
  }
}
