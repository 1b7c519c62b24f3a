package windowagg.spark

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path}
import java.sql.Timestamp

import org.apache.spark.sql.{AnalysisException, Column, DataFrame}
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.StreamingQuery
import org.scalatest.funsuite.AnyFunSuite

import windowagg.{CountWindows, SessionWindows, SlidingWindows, WindowDefinition}
import windowagg.functions.window
import windowagg.spark.streaming.{StateRecord, StreamingStartCheck}

/** Misuse a streaming query can only show when it starts: emit against the output mode, and a checkpoint built by another query. */
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
    assert(sessions.contains("retracts merged sessions"), sessions)
  }

  test("the complete output mode gets windowagg's own message, whatever the emission") {
    for (options <- Seq(Map.empty[String, String], Map("emit" -> "updates"))) {
      val message = refused(start(windowed(newInput(), SlidingWindows.of("10 seconds"), options), "complete"))
      assert(message.contains("cannot run in the complete output mode"), message)
    }
  }

  test("final windows run in the append and the update mode alike") {
    for (mode <- Seq("append", "update")) {
      val input = newInput()
      val query = start(windowed(input, SlidingWindows.of("10 seconds")), mode)
      try {
        input.addData(Seq(("a", ts(1), 1L), ("a", ts(200), 2L)))
        query.processAllAvailable()
        assert(query.exception.isEmpty)
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

  test("state of another version, or a record of a newer format, fails at start naming the versions") {
    val checkpoint = Files.createTempDirectory("windowagg-version")
    val input = newInput()
    runOnce(windowed(input, SessionWindows.withInactivityGap("10 seconds")), input, checkpoint)
    val file = checkpoint.resolve("windowagg").resolve("state.json")
    val record = Files.readString(file)
    Files.delete(checkpoint.resolve("windowagg").resolve(".state.json.crc")) // edited by hand below
    Files.writeString(file, record.replace("\"version\" : 3", "\"version\" : 7"))
    val version = refused(start(windowed(newInput(), SessionWindows.withInactivityGap("10 seconds")), "append", Some(checkpoint)))
    assert(version.contains("its 'sessions' state is version 7"), version)
    assert(version.contains("reads version 3 only"), version)
    assert(version.contains("in a layout this release cannot read"), version)

    Files.writeString(file, record.replace("\"format\" : 1", "\"format\" : 9"))
    val format = refused(start(windowed(newInput(), SessionWindows.withInactivityGap("10 seconds")), "append", Some(checkpoint)))
    assert(format.contains("written by a newer windowagg"), format)

    Files.write(file, "not json".getBytes(StandardCharsets.UTF_8))
    val broken = refused(start(windowed(newInput(), SessionWindows.withInactivityGap("10 seconds")), "append", Some(checkpoint)))
    assert(broken.contains("cannot read windowagg's state record"), broken)
  }

  test("a checkpoint written before records were kept (0.1.0) holds first versions, which fail at start naming them") {
    val counts = CountWindows.of(10)
    val checkpoint = Files.createTempDirectory("windowagg-legacy")
    val input = newInput()
    runOnce(windowed(input, counts), input, checkpoint)
    Files.delete(checkpoint.resolve("windowagg").resolve("state.json"))
    val rows = refused(start(windowed(newInput(), counts), "append", Some(checkpoint)))
    assert(rows.contains("its 'rows' state is version 1"), rows)
    assert(rows.contains("reads version 2 only"), rows)

    val sliding = Files.createTempDirectory("windowagg-legacy-sliding")
    val slidingInput = newInput()
    runOnce(windowed(slidingInput, SlidingWindows.of("10 seconds")), slidingInput, sliding)
    Files.delete(sliding.resolve("windowagg").resolve("state.json"))
    val message = refused(start(windowed(newInput(), SlidingWindows.of("10 seconds")), "append", Some(sliding)))
    assert(message.contains("its 'partials by time' state is version 1"), message)
    assert(message.contains("reads version 5 only"), message)
  }

  test("state as 0.3.0 kept it (per key, not per state partition) fails at start naming the versions") {
    val checkpoint = Files.createTempDirectory("windowagg-earlier")
    val input = newInput()
    runOnce(windowed(input, SlidingWindows.of("10 seconds")), input, checkpoint)
    val file = checkpoint.resolve("windowagg").resolve("state.json")
    val record = Files.readString(file)
    assert(record.contains("\"version\" : 5"), record)
    Files.delete(checkpoint.resolve("windowagg").resolve(".state.json.crc")) // edited by hand below
    Files.writeString(file, record.replace("\"version\" : 5", "\"version\" : 2")) // as 0.3.0 wrote it
    val message = refused(start(windowed(newInput(), SlidingWindows.of("10 seconds")), "append", Some(checkpoint)))
    assert(message.contains("its 'partials by time' state is version 2"), message)
    assert(message.contains("reads version 5 only"), message)
  }

  test("a layout that reads earlier versions takes over their records, and no other layout's or later version's") {
    val fields = Seq("window" -> "sliding 10 seconds", "keys" -> "k STRING")
    val now = StateRecord("partials by time", 4, fields, readsFrom = Some(2))
    assert(now.reads(StateRecord("partials by time", 2, fields)))
    assert(now.reads(StateRecord("partials by time", 4, fields)))
    assert(!now.reads(StateRecord("partials by time", 1, fields)))
    assert(!now.reads(StateRecord("partials by time", 5, fields)))
    assert(!now.reads(StateRecord("sessions", 3, fields)))
    assert(!StateRecord("partials by time", 4, fields).reads(StateRecord("partials by time", 3, fields)))
  }

  test("differences are said per aggregation when a query has several") {
    val a = StateRecord("sessions", 1, Seq("window" -> "session gap 10 seconds", "keys" -> "k STRING"))
    val b = StateRecord("sessions", 1, Seq("window" -> "session gap 10 seconds", "keys" -> "k STRING, j INT"))
    assert(StreamingStartCheck.differences(Seq(a, a), Seq(a, b)) ==
      Seq("windowed aggregation 2: keys was 'k STRING', now 'k STRING, j INT'"))
    assert(StreamingStartCheck.differences(Seq(a), Seq(a, b)) ==
      Seq("it had 1 windowed aggregation(s), the query now has 2"))
    assert(StreamingStartCheck.differences(Seq(a, b), Seq(a, b)).isEmpty)
  }
}
