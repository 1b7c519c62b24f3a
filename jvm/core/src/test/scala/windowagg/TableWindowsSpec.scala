package windowagg

import java.time.ZoneOffset

import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.{EnumeratedWindows, Reaching, ReferenceWindows, SweepHarness, WindowError}
import windowagg.core.TestAggregations.Collect

/** Table windows in ticks: slices cut at the windows' bounds, and each time's windows, against checking every window. */
class TableWindowsSpec extends AnyFunSuite with Matchers {
  private val timeline = Timeline.timestamp(ZoneOffset.UTC)

  private def resolved(windows: Seq[(Long, Long)]): TableWindows.Resolved =
    TableWindows.of("t").withWindows(TableWindows.Listed(windows.map(_._1).toArray, windows.map(_._2).toArray)).resolve(timeline).asInstanceOf[TableWindows.Resolved]

  test("a time's windows are those holding it, and its slice is held whole by each window or not at all") {
    for (seed <- 1 to 20) {
      val rnd = new Random(seed)
      // mostly short windows and a few very long ones, so that the scan back covers many starts
      val windows = Seq.fill(1 + rnd.nextInt(60)) {
        val start = rnd.nextInt(1000).toLong - 500
        (start, start + (if (rnd.nextInt(10) == 0) 1 + rnd.nextInt(900) else 1 + rnd.nextInt(20)))
      }
      val kind = resolved(windows)
      for (t <- -600L to 600L) {
        val listed = scala.collection.mutable.ArrayBuffer.empty[(Long, Long)]
        kind.foreachWindow(t)((s, e) => listed += ((s, e)))
        val holding = windows.distinct.filter { case (s, e) => s <= t && t < e }
        withClue(s"seed $seed, time $t") {
          listed.sorted shouldBe holding.sorted
          val after = t - 1 - (t & 7) // some earlier time
          val opened = scala.collection.mutable.ArrayBuffer.empty[(Long, Long)]
          kind.foreachWindowStartingAfter(after, t)((s, e) => opened += ((s, e)))
          opened.sorted shouldBe holding.filter(_._1 > after).sorted
          kind.closesAt(t) shouldBe (if (holding.isEmpty) Long.MinValue else holding.map(_._2).max - 1)
          kind.holds(kind.sliceStart(t)) shouldBe holding.nonEmpty
          val slice = kind.sliceStart(t)
          slice should be <= t
          kind.sliceStart(slice) shouldBe slice // a partial time is its own
          // every time from the slice's start to t is in exactly the same windows
          windows.distinct.filter { case (s, e) => s <= slice && slice < e }.sorted shouldBe holding.sorted
        }
      }
    }
  }

  test("the slicing cursor over table windows gives every window holding records once, records in time order") {
    for (seed <- 1 to 40) {
      val rnd = new Random(seed)
      val windows = Seq.fill(1 + rnd.nextInt(40)) {
        val start = rnd.nextInt(400).toLong - 200
        (start, start + 1 + rnd.nextInt(if (rnd.nextBoolean()) 15 else 150))
      }
      val kind = resolved(windows)
      val records = Seq.fill(rnd.nextInt(300))((rnd.nextInt(500).toLong - 250, rnd.nextInt(1000)))
      val agg = new Collect[Int]
      val slices = SweepHarness.partials(records.sortBy(_._1).map { case (t, v) => (kind.partialTime(t), v) }, agg)(v => ArrayBuffer(v))
      val cursor = kind.cursor(slices.iterator.filter(p => kind.holds(p.time)).map(p => Reaching(p.time, p.time, p.partial)), agg)
      val got = Vector.newBuilder[(Long, Long, Vector[Int])]
      while (cursor.advance()) got += ((cursor.start, cursor.end, cursor.aggregate.toVector))
      val expected = ReferenceWindows.Listed(windows).windows(records).toVector
        .map { case ((s, e), rs) => (s, e, rs.map(_._2)) }.sortBy(w => (w._2, w._1))
      withClue(s"seed $seed") { got.result() shouldBe expected }
    }
  }

  test("an empty table holds no time; times in no window are one slice") {
    val kind = resolved(Nil)
    kind.holds(0L) shouldBe false
    kind.sliceStart(5L) shouldBe Long.MinValue
    val some = resolved(Seq((10L, 20L), (30L, 40L)))
    Seq(-5L, 9L, 20L, 29L, 40L, 1000L).map(some.sliceStart).distinct shouldBe Seq(Long.MinValue)
    Seq(10L, 19L, 30L, 39L).map(some.sliceStart) shouldBe Seq(10L, 10L, 30L, 30L)
    some.holds(Long.MinValue) shouldBe false
  }

  test("the spec names the table and its columns, reads back equal, and an unread table says so") {
    val definition = TableWindows.of("db.periods", "opens", "closes").grace("1 hour")
    definition.spec shouldBe "table db.periods columns opens, closes grace 1 hour"
    WindowSpec.parse(definition.spec) shouldBe definition
    WindowSpec.parse("table periods") shouldBe TableWindows.of("periods", "start", "end")
    intercept[WindowError](definition.resolve(timeline)).getMessage should include("has not been read")
  }

  test("identical windows are one; an empty, inverted or overlong window is refused; the fingerprint follows the windows") {
    val listed = TableWindows.Listed(Array(5L, 1L, 5L), Array(9L, 3L, 9L))
    listed.starts.toSeq shouldBe Seq(1L, 5L)
    listed.ends.toSeq shouldBe Seq(3L, 9L)
    intercept[WindowError](TableWindows.Listed(Array(4L), Array(4L))).getMessage should include("the window [4, 4) ends at or before its start")
    intercept[WindowError](TableWindows.Listed(Array(Long.MinValue), Array(Long.MaxValue))).getMessage should include("longer than")
    listed.fingerprint shouldBe TableWindows.Listed(Array(1L, 5L), Array(3L, 9L)).fingerprint
    listed.fingerprint should not be TableWindows.Listed(Array(1L, 5L), Array(3L, 10L)).fingerprint
    listed.firstOverlap shouldBe None
    TableWindows.Listed(Array(0L, 10L, 20L), Array(10L, 20L, 30L)).firstOverlap shouldBe None // touching is not overlapping
    TableWindows.Listed(Array(0L, 10L, 15L), Array(10L, 20L, 16L)).firstOverlap shouldBe Some(((10L, 20L), (15L, 16L)))
    TableWindows.Listed(Array(0L, 2L, 50L), Array(100L, 3L, 60L)).firstOverlap shouldBe Some(((0L, 100L), (2L, 3L)))
    val read = TableWindows.of("t").withWindows(listed)
    read.stateIdentity shouldBe s"table windows (2 windows, content ${listed.fingerprint})"
    // the same windows under another name are the same state
    TableWindows.of("other").withWindows(TableWindows.Read(Map(Seq.empty -> listed))).stateIdentity shouldBe read.stateIdentity
  }

  test("per-key windows: the spec round trip, each key's own windows, none for a key the table does not name") {
    val definition = TableWindows.of("periods", "opens", "closes").perKey("customer, region").grace("1 minute")
    definition.spec shouldBe "table periods columns opens, closes keys customer, region grace 1 minute"
    WindowSpec.parse(definition.spec) shouldBe definition
    val disjoint = definition.nonOverlapping()
    disjoint.spec shouldBe "table periods columns opens, closes keys customer, region non-overlapping grace 1 minute"
    WindowSpec.parse(disjoint.spec) shouldBe disjoint
    disjoint should not be definition
    intercept[WindowError](WindowSpec.parse("table t non-overlapping yes")).getMessage should include("takes nothing after it")
    intercept[WindowError](TableWindows.of("t").perKey("a, A")).getMessage should include("named twice")
    intercept[WindowError](TableWindows.of("t").perKey(" ")).getMessage should include("names no key columns")
    intercept[WindowError](definition.withWindows(TableWindows.Listed(Array(1L), Array(2L)))).getMessage should include("per key")

    val a = TableWindows.Listed(Array(0L, 5L), Array(10L, 7L))
    val b = TableWindows.Listed(Array(100L), Array(200L))
    val read = TableWindows.Read(Map(Seq[Any]("a", 1) -> a, Seq[Any]("b", 1) -> b))
    val resolved = definition.withWindows(read).resolve(timeline).asInstanceOf[TableWindows.ResolvedByKey]
    resolved.perKey shouldBe true
    resolved.maxSpan shouldBe 99L
    // grouping keys (region, n, customer): the key columns are found at ordinals 2 and 0
    val bound = resolved.boundToKeys(Array(2, 0))
    def windowsOf(key: IndexedSeq[Any], t: Long): Seq[(Long, Long)] = {
      val found = Seq.newBuilder[(Long, Long)]
      bound.ofKey(key).asInstanceOf[EnumeratedWindows].foreachWindow(t)((s, e) => found += ((s, e)))
      found.result().sorted
    }
    windowsOf(IndexedSeq(1, "x", "a"), 6L) shouldBe Seq((0L, 10L), (5L, 7L))
    windowsOf(IndexedSeq(1, "x", "b"), 6L) shouldBe Nil
    windowsOf(IndexedSeq(1, "x", "b"), 150L) shouldBe Seq((100L, 200L))
    bound.ofKey(IndexedSeq(2, "x", "a")).holds(6L) shouldBe false
    intercept[IllegalStateException](resolved.ofKey(IndexedSeq("a", 1)))
    intercept[IllegalStateException](bound.holds(6L))

    // the state identity follows every key's windows
    val changed = TableWindows.Read(Map(Seq[Any]("a", 1) -> a, Seq[Any]("b", 1) -> TableWindows.Listed(Array(100L), Array(201L))))
    definition.withWindows(read).stateIdentity should not be definition.withWindows(changed).stateIdentity
    definition.withWindows(read).stateIdentity shouldBe definition.withWindows(TableWindows.Read(read.byKey.toSeq.reverse.toMap)).stateIdentity
    definition.withWindows(read).stateIdentity should include("(3 windows, content ")
  }
}
