package windowagg.core

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.TestAggregations.{Counting, LongCell, Sum}

/**
 * Structural bounds of the sweep on long inputs: how far it reads ahead of the window it produces
 * (so how many partials it holds), and how many merges it makes. Counts, not timings.
 */
class SlidingWindowSweepBoundsSpec extends AnyFunSuite with Matchers {

  /**
   * Partials beyond the current window's end that the sweep may have read: one to find where the
   * window ends, one to decide a right window. (The sweep reads at most one today.)
   */
  private val MaxReadAhead = 2

  private final class CountingIterator(times: Array[Long]) extends Iterator[Timed[LongCell]] {
    var read = 0
    def hasNext: Boolean = read < times.length
    def next(): Timed[LongCell] = {
      val t = times(read)
      read += 1
      Timed(t, new LongCell(1))
    }
  }

  /**
   * Sweeps `times` (strictly increasing, one record each) and checks at every window: every
   * record of the window was read; at most [[MaxReadAhead]] records beyond its end were; so the
   * records read and not yet left behind (time >= start) are at most the window's own records plus
   * that constant. Also checks each count against the window's aggregate. Returns the number of
   * windows and the largest read-ahead seen.
   */
  private def checkReadAhead(size: Long, times: Array[Long]): (Int, Int) = {
    val input = new CountingIterator(times)
    val sweep = new SlidingWindowSweep[LongCell](size, input, Sum)
    var lo = 0 // first index with time >= start
    var hi = 0 // first index with time > end
    var windows = 0
    var maxAhead = 0
    var maxHeld = 0
    while (sweep.advance()) {
      windows += 1
      while (lo < times.length && times(lo) < sweep.start) lo += 1
      while (hi < times.length && times(hi) <= sweep.end) hi += 1
      val inWindow = hi - lo
      val ahead = input.read - hi
      val held = input.read - lo
      if (ahead < 0 || ahead > MaxReadAhead || held > inWindow + MaxReadAhead || sweep.aggregate.value != inWindow) {
        fail(s"window #$windows [${sweep.start}, ${sweep.end}]: $inWindow records in it, ${input.read} read " +
          s"(${math.max(ahead, 0)} beyond its end, $held not left behind), aggregate ${sweep.aggregate.value}")
      }
      maxAhead = math.max(maxAhead, ahead)
      maxHeld = math.max(maxHeld, held)
    }
    input.read shouldBe times.length
    (windows, maxAhead)
  }

  private val N = 100000

  private def timesFromGaps(gap: Random => Long, seed: Long): Array[Long] = {
    val random = new Random(seed)
    val times = new Array[Long](N)
    times(0) = -5000000L // negative times too
    var i = 1
    while (i < N) { times(i) = times(i - 1) + gap(random); i += 1 }
    times
  }

  test("read-ahead is bounded: dense input (gap 1, S = 20)") {
    val (windows, _) = checkReadAhead(20, timesFromGaps(_ => 1L, 1))
    windows shouldBe N + 20 // left windows, plus the right windows of the 20 times before the last
  }

  test("read-ahead is bounded: sparse input, every right window empty (gaps > S + 1, S = 5)") {
    val (windows, _) = checkReadAhead(5, timesFromGaps(r => 7L + r.nextInt(20), 2))
    windows shouldBe N
  }

  test("read-ahead is bounded: random gaps around S (S = 8)") {
    checkReadAhead(8, timesFromGaps(r => 1L + r.nextInt(24), 3))
  }

  test("read-ahead is bounded: bursts separated by huge gaps (S = 50)") {
    checkReadAhead(50, timesFromGaps(r => if (r.nextInt(100) == 0) 1000000000000L else 1L + r.nextInt(10), 4))
  }

  test("read-ahead is bounded: S = 1, gaps of 1 and 2") {
    checkReadAhead(1, timesFromGaps(r => 1L + r.nextInt(2), 5))
  }

  test("merges are amortized O(1) per distinct time, however many times a window holds") {
    // A window of S = 500 over gap-1 data holds 501 partials; recomputing each window would cost
    // ~500 merges per window. The sweep pushes each partial once (1 merge), merges it into a suffix
    // at most once, and makes at most 2 merges per window it reads out.
    for ((size, seed) <- Seq(500L -> 6L, 8L -> 7L, 1L -> 8L)) {
      val times = timesFromGaps(r => 1L + r.nextInt(3), seed)
      val agg = new Counting(Sum)
      val sweep = new SlidingWindowSweep[LongCell](size, times.iterator.map(t => Timed(t, new LongCell(1))), agg)
      var windows = 0L
      while (sweep.advance()) windows += 1
      withClue(s"S = $size: ${agg.merges} merges for $N distinct times and $windows windows: ") {
        agg.merges should be <= (2L * N + 2L * windows)
        agg.merges should be <= 6L * N
      }
    }
  }
}
