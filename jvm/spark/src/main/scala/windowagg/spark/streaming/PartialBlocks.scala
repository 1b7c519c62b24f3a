package windowagg.spark.streaming

import java.nio.ByteBuffer

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow

import windowagg.ListedWindows
import windowagg.core.{Reaching, WindowFinality}
import windowagg.spark.common.SparkAggregates

/**
 * A run of one key's partials in time order, as one state entry: each partial's time and its
 * aggregation buffer in Spark's binary row form (the bytes of an UnsafeRow, 8-byte aligned in the
 * entry so they are read in place); where rows list their windows ([[windowagg.ListedWindows]]),
 * also each partial's windows.
 *
 * Layout: the entry count (long), the times (n longs), the buffer lengths (n ints, padded to 8
 * bytes), then the buffers one after another; with listed windows, then per entry the number of
 * windows (long) and their bounds (start, end longs). `listed` holds each partial's windows, as
 * pairs (start, end) sorted by end, where rows list them; else it is null.
 */
private[spark] final class PartialBlock private (
    val times: Array[Long],
    private val bytes: Array[Byte],
    private val offsets: Array[Int],
    private val lengths: Array[Int],
    val listed: Array[Array[Long]]) {

  def size: Int = times.length
  def first: Long = times(0)
  def last: Long = times(times.length - 1)

  def partial(i: Int, aggregates: SparkAggregates): InternalRow = aggregates.fromBytes(bytes, offsets(i), lengths(i))
  def listedAt(i: Int): Array[Long] = if (listed == null) null else listed(i)
}

private[spark] object PartialBlock {
  private def headerSize(n: Int): Int = {
    val unpadded = 8 + 8 * n + 4 * n
    (unpadded + 7) & ~7
  }

  /** A block from its state entry; `listing` tells whether its partials carry their windows. */
  def decode(encoded: Array[Byte], listing: Boolean): PartialBlock = {
    val in = ByteBuffer.wrap(encoded)
    val n = in.getLong().toInt
    val times = new Array[Long](n)
    val lengths = new Array[Int](n)
    val offsets = new Array[Int](n)
    var i = 0
    while (i < n) { times(i) = in.getLong(); i += 1 }
    i = 0
    while (i < n) { lengths(i) = in.getInt(); i += 1 }
    var at = headerSize(n)
    i = 0
    while (i < n) { offsets(i) = at; at += lengths(i); i += 1 }
    val listed = if (!listing) null else {
      in.position(at)
      Array.fill(n)(Array.fill(2 * in.getLong().toInt)(in.getLong()))
    }
    new PartialBlock(times, encoded, offsets, lengths, listed)
  }

  /**
   * Entries being gathered into blocks: each an existing block's entry (copied as bytes, never
   * decoded) or a new buffer's bytes.
   */
  final class Builder(listing: Boolean) {
    private val times = mutable.ArrayBuilder.make[Long]
    private val listed = mutable.ArrayBuffer.empty[Array[Long]]
    private val sources = mutable.ArrayBuffer.empty[Array[Byte]]
    private val offsets = mutable.ArrayBuilder.make[Int]
    private val lengths = mutable.ArrayBuilder.make[Int]
    private var count = 0

    def size: Int = count

    def add(block: PartialBlock, i: Int): Unit =
      add(block.times(i), block.bytes, block.offsets(i), block.lengths(i), block.listedAt(i))

    /** A new partial at `time`, with its windows where rows list them (else null). */
    def add(time: Long, buffer: Array[Byte], windows: Array[Long]): Unit = add(time, buffer, 0, buffer.length, windows)

    private def add(time: Long, source: Array[Byte], offset: Int, length: Int, windows: Array[Long]): Unit = {
      require(listing == (windows != null), "a block's partials carry their windows where rows list them, and only there")
      times += time; sources += source; offsets += offset; lengths += length
      if (listing) listed += windows
      count += 1
    }

    /** The entries in blocks of at most `maxEntries`, each with its encoding. */
    def result(maxEntries: Int): Seq[(PartialBlock, Array[Byte])] = {
      val ts = times.result(); val os = offsets.result(); val ls = lengths.result()
      val pieces = if (count == 0) 0 else (count + maxEntries - 1) / maxEntries
      (0 until pieces).map { p =>
        // split evenly, so a block split for size does not leave a sliver
        val from = (p.toLong * count / pieces).toInt
        val until = ((p + 1).toLong * count / pieces).toInt
        encode(ts, sources, os, ls, if (listing) listed else null, from, until)
      }
    }
  }

  private def encode(times: Array[Long], sources: mutable.ArrayBuffer[Array[Byte]], offsets: Array[Int],
      lengths: Array[Int], listed: mutable.ArrayBuffer[Array[Long]], from: Int, until: Int): (PartialBlock, Array[Byte]) = {
    val n = until - from
    var total = headerSize(n)
    var i = from
    while (i < until) {
      total += lengths(i)
      if (listed != null) total += 8 + 8 * listed(i).length
      i += 1
    }
    val out = ByteBuffer.allocate(total)
    out.putLong(n.toLong)
    i = from
    while (i < until) { out.putLong(times(i)); i += 1 }
    i = from
    while (i < until) { out.putInt(lengths(i)); i += 1 }
    out.position(headerSize(n))
    i = from
    while (i < until) { out.put(sources(i), offsets(i), lengths(i)); i += 1 }
    if (listed != null) {
      i = from
      while (i < until) {
        out.putLong(listed(i).length / 2)
        listed(i).foreach(out.putLong)
        i += 1
      }
    }
    val encoded = out.array()
    (decode(encoded, listed != null), encoded)
  }
}

/**
 * One key's partials in streaming state, for the kinds swept from per-time partials: blocks of up
 * to [[PartialBlocks.MaxEntries]] partials in a map keyed by each block's start (below), and the
 * sorted block keys (`starts`, kept by the caller with the key's other progress). A micro-batch
 * reads only the blocks it sweeps or adds to, and writes only the blocks it changed: a few state
 * entries per key instead of one per partial. Where rows list their windows (`listed`), each
 * partial keeps its windows, and partials of one time must list the same.
 *
 * A key whose partials fit in one block keeps it beside its starts (`inline`, carried by the
 * caller's entry) instead of in the map: most keys of most queries, for which a micro-batch then
 * reads and writes one state entry instead of two. The block moves to the map when a second one
 * comes, and back when a rewrite leaves one.
 *
 * Blocks are disjoint and ordered: block i holds times in [starts(i), starts(i + 1)); a block's
 * start is at or before its first time (older partials may have been left out since).
 */
private[spark] final class PartialBlocks(state: Entries[Long, Array[Byte]], initialStarts: Array[Long],
    initialInline: Array[Byte], aggregates: SparkAggregates, listed: Option[ListedWindows.Resolved]) {
  import PartialBlocks.MaxEntries
  require(initialInline == null || initialStarts.length == 1, "a block is kept inline only as the key's only one")

  private var starts: Array[Long] = initialStarts
  // the key's only block when kept inline (at inlineStart), else null
  private var inline: Array[Byte] = initialInline
  private var inlineStart: Long = if (initialInline == null) 0L else initialStarts(0)
  // the blocks in the map
  private val inMap = mutable.Set.empty[Long] ++= (if (initialInline == null) initialStarts else Array.emptyLongArray)
  private val loaded = mutable.LongMap.empty[PartialBlock]
  private val written = mutable.LongMap.empty[Array[Byte]]
  private val removed = mutable.Set.empty[Long]

  def isEmpty: Boolean = starts.isEmpty

  /** The last tick of the latest window holding the latest partial kept (reads the last block). */
  def lastCloses(finality: WindowFinality): Option[Long] = starts.lastOption.map { start =>
    val last = block(start)
    finality.closesAt(last.last, last.listedAt(last.size - 1))
  }
  def blockStarts: Array[Long] = starts
  /** After [[flush]]: the key's only block, to be kept with its starts instead of in the map, or null. */
  def inlineBlock: Array[Byte] = inline

  private def block(start: Long): PartialBlock = loaded.getOrElseUpdate(start, {
    val stored = if (inline != null && start == inlineStart) inline else state.get(start)
    PartialBlock.decode(stored, listed.isDefined)
  })

  /** The index of the block holding `time`, or -1 when it is before the first block. */
  private def blockOf(time: Long): Int = {
    var lo = 0
    var hi = starts.length
    while (lo < hi) { // the number of starts <= time
      val mid = (lo + hi) >>> 1
      if (starts(mid) <= time) lo = mid + 1 else hi = mid
    }
    lo - 1
  }

  /** The partials at or after `from` in time order, each decoded (and its block read) only when reached. */
  def from(from: Long): Iterator[Reaching[InternalRow]] = new Iterator[Reaching[InternalRow]] {
    private val blocks = starts
    private var nextBlock = math.max(0, blockOf(from))
    private var current: PartialBlock = _
    private var i = 0

    override def hasNext: Boolean = {
      while ((current == null || i >= current.size) && nextBlock < blocks.length) {
        current = block(blocks(nextBlock))
        nextBlock += 1
        i = 0
        while (i < current.size && current.times(i) < from) i += 1
      }
      current != null && i < current.size
    }

    override def next(): Reaching[InternalRow] = {
      if (!hasNext) throw new NoSuchElementException("no partial left")
      val time = current.times(i)
      val partial = current.partial(i, aggregates)
      val windows = current.listedAt(i)
      i += 1
      Reaching(time, time, partial, windows)
    }
  }

  /** Drops the blocks whose every time is before `keep` (known from the next block's start, without reading them). */
  def dropBefore(keep: Long): Unit = {
    val fullyOlder = (0 until starts.length - 1).takeWhile(i => starts(i + 1) <= keep)
    if (fullyOlder.nonEmpty) {
      fullyOlder.foreach(i => remove(starts(i)))
      starts = starts.drop(fullyOlder.length)
    }
  }

  /** Drops every block. */
  def clear(): Unit = {
    starts.foreach(remove)
    starts = Array.emptyLongArray
  }

  private def remove(start: Long): Unit = {
    loaded.remove(start); written.remove(start); removed += start
  }

  /**
   * Merges new partials (times strictly increasing; with their windows where rows list them, else
   * null) into the blocks: a partial at a kept time is merged after the kept one (the later
   * records), others are inserted; a block grown past the limit is split. Reads only the blocks the
   * times fall in. A block rewritten here leaves out its partials before `keep`, which no open
   * window needs: a key whose rows keep coming would otherwise carry up to a block of them.
   */
  def add(times: Array[Long], partials: Array[InternalRow], windows: Array[Array[Long]], keep: Long): Unit = {
    def windowsAt(f: Int): Array[Long] = if (windows == null) null else windows(f)
    val newStarts = mutable.ArrayBuffer.empty[Long] ++= starts
    var i = 0
    while (i < times.length) {
      // the block the next times fall in (times before the first block join it) and where it ends
      val index = math.max(blockOf(times(i)), 0)
      val exists = index < starts.length
      val until = if (index + 1 < starts.length) Some(starts(index + 1)) else None
      var j = i
      while (j < times.length && until.forall(times(j) < _)) j += 1
      val builder = new PartialBlock.Builder(listed.isDefined)
      var f = i
      if (exists) {
        val old = block(starts(index))
        var k = 0
        while (k < old.size || f < j) {
          if (f >= j || (k < old.size && old.times(k) < times(f))) {
            if (old.times(k) >= keep) builder.add(old, k)
            k += 1
          } else if (k < old.size && old.times(k) == times(f)) {
            listed.foreach(_.checkSame(times(f), old.listedAt(k), windowsAt(f)))
            builder.add(times(f), aggregates.toBytes(aggregates.mergeInto(old.partial(k, aggregates), partials(f))), old.listedAt(k))
            k += 1; f += 1
          } else { builder.add(times(f), aggregates.toBytes(partials(f)), windowsAt(f)); f += 1 }
        }
        newStarts -= starts(index)
        remove(starts(index))
      } else {
        while (f < j) { builder.add(times(f), aggregates.toBytes(partials(f)), windowsAt(f)); f += 1 }
      }
      builder.result(MaxEntries).zipWithIndex.foreach { case ((b, encoded), piece) =>
        // a rewritten block keeps its key unless new partials come before it: one write, no removal
        val start = if (piece == 0 && exists) math.min(starts(index), b.first) else b.first
        removed -= start
        loaded.update(start, b)
        written.update(start, encoded)
        newStarts += start
      }
      i = j
    }
    starts = newStarts.toArray.sorted
  }

  /**
   * Folds the partials at times in [from, until), when there are two or more, into one at the
   * earliest of them (merged in time order), rewriting only the blocks they are in. Not where rows
   * list their windows: partials of different times list different ones.
   */
  def fold(from: Long, until: Long): Unit = {
    require(listed.isEmpty, "partials that list their windows are not folded")
    if (until <= from) return
    val first = math.max(blockOf(from), 0)
    val last = blockOf(until - 1)
    if (last < first) return
    val touched = (first to last).map(i => block(starts(i)))
    if (touched.map(_.times.count(t => from <= t && t < until)).sum < 2) return
    val builder = new PartialBlock.Builder(listing = false)
    var folded: InternalRow = null
    var foldedAt = 0L
    def addFolded(): Unit = if (folded != null) {
      builder.add(foldedAt, aggregates.toBytes(folded), null)
      folded = null
    }
    touched.foreach { b =>
      var k = 0
      while (k < b.size) {
        val t = b.times(k)
        if (t < from) builder.add(b, k)
        else if (t < until) {
          if (folded == null) { folded = b.partial(k, aggregates); foldedAt = t }
          else aggregates.mergeInto(folded, b.partial(k, aggregates))
        } else {
          addFolded()
          builder.add(b, k)
        }
        k += 1
      }
    }
    addFolded()
    (first to last).foreach(i => remove(starts(i)))
    val added = builder.result(MaxEntries).zipWithIndex.map { case ((b, encoded), piece) =>
      // the first block keeps its key, at or before every time it holds
      val start = if (piece == 0) starts(first) else b.first
      removed -= start
      loaded.update(start, b)
      written.update(start, encoded)
      start
    }
    starts = (starts.take(first) ++ starts.drop(last + 1) ++ added).sorted
  }

  /**
   * Writes the changed blocks and removes the dropped ones. A key's only block is kept inline when
   * its bytes are at hand (written now, or inline already); one unchanged in the map stays there.
   */
  def flush(): Unit = {
    removed.foreach(start => if (inMap.remove(start)) state.remove(start))
    val only = if (starts.length != 1) None
      else written.get(starts(0)).orElse(Option.when(inline != null && inlineStart == starts(0))(inline))
    only match {
      case Some(encoded) =>
        if (inMap.remove(starts(0))) state.remove(starts(0))
        inline = encoded
        inlineStart = starts(0)
      case None =>
        if (inline != null && starts.contains(inlineStart) && !written.contains(inlineStart)) written.update(inlineStart, inline)
        inline = null
        written.foreach { case (start, encoded) => state.update(start, encoded); inMap += start }
    }
    removed.clear()
    written.clear()
  }
}

private[spark] object PartialBlocks {
  /** Partials per block: big enough that a key's state is a handful of entries, small enough that adding to one rewrites little. */
  val MaxEntries = 64
}
