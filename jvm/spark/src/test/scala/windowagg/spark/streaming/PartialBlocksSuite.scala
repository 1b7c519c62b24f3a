package windowagg.spark.streaming

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Literal}
import org.apache.spark.sql.catalyst.expressions.aggregate.{Count, Max, Sum}
import org.apache.spark.sql.types.LongType
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

import windowagg.{ListedWindows, SlidingWindows, Timeline}
import windowagg.core.{WindowError, WindowFinality}
import windowagg.spark.common.SparkAggregates

/**
 * The streaming processor's blocks of partials against a plain sorted map of the same partials:
 * whatever the order of additions (before, inside, between and after blocks, at kept times, each
 * leaving out older partials of the blocks it rewrites), folds of a span of times into its earliest,
 * drops and restarts from the stored entries,
 * every sweep from any time sees exactly the partials kept (with their listed windows, where rows
 * list them), and no block outgrows its limit.
 */
class PartialBlocksSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  import PartialBlocksSuite._

  /** A key's map kept in memory, standing in for the state store. */
  private final class MemoryEntries extends Entries[Long, Array[Byte]] {
    val entries = mutable.TreeMap.empty[Long, Array[Byte]]
    var removals = 0
    override def get(key: Long): Array[Byte] = entries(key)
    override def update(key: Long, value: Array[Byte]): Unit = entries.update(key, value)
    override def remove(key: Long): Unit = { removals += 1; entries.remove(key) }
  }

  private val v = AttributeReference("v", LongType)()
  private val aggregates = new SparkAggregates(Seq(Sum(v), Count(Seq(v)), Max(v)), Seq.fill(3)(Literal.TrueLiteral), Seq(v), 0)

  private def partialOf(values: Seq[Long]): InternalRow = {
    val buffer = aggregates.newEmpty()
    values.foreach(x => aggregates.update(buffer, InternalRow(x)))
    buffer
  }

  private def result(p: InternalRow): (Long, Long, Long) = {
    val r = aggregates.result(p)
    (r.getLong(0), r.getLong(1), r.getLong(2))
  }

  private val listedKind = ListedWindows.maxSize("100").resolve(Timeline.epoch(None))
  private val kinds = Seq(None, Some(listedKind))
  /** A time's listed windows in these tests: one to three pairs, the same for the time wherever it is added. */
  private def windowsOf(t: Long): Array[Long] = Array.tabulate(2 * (1 + Math.floorMod(t, 3L).toInt))(i => t + i)

  private val steps: Gen[List[Step]] = {
    val time = Gen.frequency(8 -> Gen.choose(-500L, 500L), 1 -> Gen.oneOf(Long.MinValue, Long.MaxValue))
    val keep = Gen.frequency(3 -> Gen.const(Long.MinValue), 1 -> Gen.choose(-600L, 600L))
    val add = Gen.zip(Gen.choose(1, 150).flatMap(n => Gen.listOfN(n, Gen.zip(time, Gen.choose(-9L, 9L)))), keep).map {
      case (rows, k) => Add(rows, k)
    }
    val fold = Gen.zip(Gen.choose(-600L, 600L), Gen.choose(0L, 500L)).map { case (from, length) => Fold(from, from + length) }
    Gen.listOf(Gen.frequency(6 -> add, 2 -> Gen.choose(-600L, 600L).map(DropBefore(_)), 2 -> fold, 2 -> Gen.const(Restart)))
  }

  test("blocks keep exactly the partials a sorted map keeps, read from any time, after restarts, with listed windows or not") {
    for (listed <- kinds) forAll(steps) { script =>
      def windows(times: Array[Long]): Array[Array[Long]] = if (listed.isDefined) times.map(windowsOf) else null
      val finality = new WindowFinality(listed.getOrElse(SlidingWindows.Resolved(10L)))
      val state = new MemoryEntries
      var blocks = new PartialBlocks(state, Array.emptyLongArray, null, aggregates, listed)
      val expected = mutable.TreeMap.empty[Long, Seq[Long]]
      var floor = Long.MinValue // blocks wholly before it may be gone
      script.foreach {
        case Add(all, keep) =>
          // as in the processor: before the oldest time kept, rows are late and never added
          floor = math.max(floor, keep)
          val rows = all.filter(_._1 >= floor)
          val byTime = rows.groupBy(_._1).view.mapValues(_.map(_._2)).toMap
          val times = byTime.keys.toArray.sorted
          blocks.add(times, times.map(t => partialOf(byTime(t))), windows(times), keep)
          times.foreach(t => expected.update(t, expected.getOrElse(t, Nil) ++ byTime(t)))
        case DropBefore(keep) =>
          blocks.dropBefore(keep)
          floor = math.max(floor, keep)
        case Fold(start, until) if listed.isEmpty => // as the processor, from the oldest time it keeps
          val from = math.max(start, floor)
          blocks.fold(from, until)
          val folded = expected.range(from, until).toList // a copy: the range is a view of the map
          if (folded.size > 1) {
            folded.foreach { case (t, _) => expected.remove(t) }
            expected.update(folded.head._1, folded.flatMap(_._2))
          }
        case Fold(_, _) => // partials that list their windows are not folded
        case Restart => // from what the key's progress entry keeps: the starts and the inline block
          blocks.flush()
          blocks = new PartialBlocks(state, blocks.blockStarts, blocks.inlineBlock, aggregates, listed)
      }
      def summary(xs: Seq[Long]) = (xs.sum, xs.length.toLong, xs.max)
      for (from <- Seq(Long.MinValue, -300L, 0L, 250L, Long.MaxValue).map(math.max(_, floor))) {
        val got = blocks.from(from).map(p => (p.time, result(p.partial), Option(p.listed).map(_.toSeq))).toList
        val want = expected.iteratorFrom(from).map { case (t, xs) => (t, summary(xs), listed.map(_ => windowsOf(t).toSeq)) }.toList
        assert(got == want, s"from $from")
      }
      // before the floor, what is kept is kept whole
      blocks.from(Long.MinValue).takeWhile(_.time < floor).foreach { p =>
        assert(expected.get(p.time).map(summary).contains(result(p.partial)))
      }
      blocks.flush()
      // a block is in the map or, the key's only one, inline
      val inline = Option(blocks.inlineBlock)
      assert(inline.isEmpty || blocks.blockStarts.length == 1)
      assert(state.entries.keys.toArray.sameElements(if (inline.isDefined) Array.emptyLongArray else blocks.blockStarts))
      (state.entries.values ++ inline).foreach(bytes => assert(PartialBlock.decode(bytes, listed.isDefined).size <= PartialBlocks.MaxEntries))
      expected.lastOption.filter(_._1 >= floor).foreach { case (t, _) =>
        assert(blocks.lastCloses(finality).contains(finality.closesAt(t, if (listed.isDefined) windowsOf(t) else null)))
      }
    }
  }

  /** Blocks holding one partial at each time 0 to 199 (of the value t), flushed to their own state. */
  private def partialsAtTimes0To199(): (MemoryEntries, PartialBlocks) = {
    val state = new MemoryEntries
    val blocks = new PartialBlocks(state, Array.emptyLongArray, null, aggregates, None)
    val times = (0L until 200L).toArray
    blocks.add(times, times.map(t => partialOf(Seq(t))), null, Long.MinValue)
    blocks.flush()
    (state, blocks)
  }

  test("a time added again with other listed windows fails naming it") {
    val blocks = new PartialBlocks(new MemoryEntries, Array.emptyLongArray, null, aggregates, Some(listedKind))
    blocks.add(Array(5L, 7L), Array(partialOf(Seq(1L)), partialOf(Seq(2L))), Array(Array(5L, 6L), Array(7L, 9L)), Long.MinValue)
    blocks.add(Array(5L), Array(partialOf(Seq(3L))), Array(Array(5L, 6L)), Long.MinValue)
    val error = intercept[WindowError](blocks.add(Array(7L), Array(partialOf(Seq(4L))), Array(Array(6L, 9L)), Long.MinValue))
    assert(error.getMessage.contains("7 ticks is listed with different windows by different rows: {[7 ticks, 9 ticks)} and {[6 ticks, 9 ticks)}"),
      error.getMessage)
  }

  test("a dropped block is never read again, and clear leaves no entry") {
    val (state, blocks) = partialsAtTimes0To199()
    assert(state.entries.size == 4) // 200 partials in blocks of at most 64, split evenly
    blocks.dropBefore(120L)
    blocks.flush()
    assert(blocks.from(Long.MinValue).next().time <= 120L)
    assert(state.entries.size == 2)
    blocks.clear()
    blocks.flush()
    assert(state.entries.isEmpty && blocks.isEmpty)
  }

  test("a block rewritten by new partials leaves out those before the oldest time kept: a key's rows one by one keep one block, inline") {
    val state = new MemoryEntries
    var starts = Array.emptyLongArray
    var inline: Array[Byte] = null
    (0L until 500L).foreach { t =>
      val blocks = new PartialBlocks(state, starts, inline, aggregates, None)
      blocks.add(Array(t), Array(partialOf(Seq(t))), null, keep = t - 2)
      blocks.flush()
      starts = blocks.blockStarts
      inline = blocks.inlineBlock
    }
    assert(state.entries.isEmpty && state.removals == 0 && starts.length == 1)
    assert(new PartialBlocks(state, starts, inline, aggregates, None).from(Long.MinValue).map(_.time).toList == List(497L, 498L, 499L))
  }

  test("a fold leaves one partial for the span, merged, and rewrites only the blocks it touches") {
    val (state, blocks) = partialsAtTimes0To199()
    val before = state.entries.clone()
    blocks.fold(10L, 150L)
    blocks.flush()
    val kept = blocks.from(Long.MinValue).map(p => (p.time, result(p.partial))).toList
    assert(kept.map(_._1) == (0L until 10L).toList ++ (10L :: (150L until 200L).toList))
    assert(kept.find(_._1 == 10L).map(_._2).contains(((10L until 150L).sum, 140L, 149L)))
    // the last block held times from 150 on only: untouched
    assert(state.entries.get(150L).exists(_ eq before(150L)))
    blocks.fold(0L, 199L)
    blocks.flush()
    assert(blocks.inlineBlock != null && state.entries.isEmpty) // one block left: kept inline
    assert(blocks.from(Long.MinValue).map(p => (p.time, result(p.partial))).toList ==
      List((0L, ((0L until 199L).sum, 199L, 198L)), (199L, (199L, 1L, 199L))))
  }

  test("a key's only block moves into the map when a second one comes, and back inline when a rewrite leaves one") {
    val state = new MemoryEntries
    def partials(times: Array[Long]) = times.map(t => partialOf(Seq(t)))
    val blocks = new PartialBlocks(state, Array.emptyLongArray, null, aggregates, None)
    blocks.add(Array(0L, 1L), partials(Array(0L, 1L)), null, Long.MinValue)
    blocks.flush()
    assert(blocks.inlineBlock != null && state.entries.isEmpty)
    val many = (2L until 100L).toArray
    blocks.add(many, partials(many), null, Long.MinValue)
    blocks.flush()
    assert(blocks.inlineBlock == null && state.entries.size == 2)
    blocks.dropBefore(90L) // the older block goes; the newer one, unchanged, stays in the map
    blocks.flush()
    assert(blocks.inlineBlock == null && state.entries.keys.toList == blocks.blockStarts.toList)
    blocks.add(Array(100L), partials(Array(100L)), null, Long.MinValue)
    blocks.flush()
    assert(blocks.inlineBlock != null && state.entries.isEmpty)
    assert(new PartialBlocks(state, blocks.blockStarts, blocks.inlineBlock, aggregates, None).from(Long.MinValue).map(_.time).toList ==
      (50L to 100L).toList)
  }

  test("a key's progress entry reads back as written, with an inline block and pending rows or without") {
    import PartialsByTime.{PendingRow, Progress}
    val pending = Vector(PendingRow(7L, Array.fill[Byte](16)(3)), PendingRow(9L, Array.fill[Byte](21)(4)))
    val block = Array.tabulate[Byte](37)(_.toByte)
    for (inline <- Seq(null, block); rows <- Seq(Vector.empty, pending); timer <- Seq(Progress.NoTimer, 11L)) {
      val progress = new Progress(5L, timer, if (inline == null) Array(1L, 64L) else Array(1L), inline, rows)
      val read = Progress.decode(progress.encode)
      assert((read.finalBefore, read.timerMs, read.blockStarts.toSeq, Option(read.inline).map(_.toSeq)) ==
        (progress.finalBefore, progress.timerMs, progress.blockStarts.toSeq, Option(progress.inline).map(_.toSeq)))
      assert(read.pending.map(r => (r.time, r.bytes.toSeq)) == progress.pending.map(r => (r.time, r.bytes.toSeq)))
    }
    assert(Progress.decode(Progress.empty.encode).blockStarts.isEmpty)
  }
}

object PartialBlocksSuite {
  /** One step of a generated script: add partials, drop blocks before a time, fold a span, or restart from the stored entries. */
  private sealed trait Step
  private final case class Add(times: Seq[(Long, Long)], keep: Long) extends Step
  private final case class DropBefore(keep: Long) extends Step
  private final case class Fold(from: Long, until: Long) extends Step
  private case object Restart extends Step
}
