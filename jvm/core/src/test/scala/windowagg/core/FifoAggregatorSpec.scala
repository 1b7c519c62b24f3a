package windowagg.core

import scala.collection.mutable.ArrayBuffer

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

import windowagg.core.TestAggregations.{Collect, CollectImmutable, Counting, LongCell, Sum}

/**
 * The two-stacks FIFO aggregator against a plain list of the held partials folded in order, with
 * non-commutative merges (collect_list), for random interleavings of push, pop and aggregate.
 */
class FifoAggregatorSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {
  import FifoAggregatorSpec._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 400)

  private val collect =
    Subject[ArrayBuffer[Int]]("collect in place", new Collect[Int], v => ArrayBuffer.from(v), _.toVector)
  private val collectImmutable =
    Subject[Vector[Int]]("collect immutable", new CollectImmutable[Int], identity, identity)
  // a sum only sees the values' total; it is checked against the total of the model
  private val sum =
    Subject[LongCell]("sum", Sum, v => new LongCell(v.map(_.toLong).sum), c => Vector(c.value.toInt))

  /**
   * Runs `ops` on a FifoAggregator and on the model (the pushed values, oldest first), checking
   * every aggregate (read twice in a row), size, isEmpty, and pop on empty. Returns the counts.
   */
  private def run[P](subject: Subject[P], ops: Seq[Op], model: Vector[Vector[Int]] => Vector[Int]): Counts = {
    val agg = new Counting(subject.agg)
    val fifo = new FifoAggregator[P](agg)
    var held = Vector.empty[Vector[Int]]
    var next = 0
    var counts = Counts()
    ops.zipWithIndex.foreach { case (op, step) =>
      def where = s"${subject.name}, step $step ($op) of ${ops.mkString(", ")}"
      val mergesBefore = agg.merges
      op match {
        case Push(n) =>
          val values = Vector.tabulate(n)(i => next + i)
          next += n
          fifo.push(subject.make(values))
          held :+= values
          withClue(where)(agg.merges - mergesBefore shouldBe 0) // merges wait for a read
          counts = counts.copy(pushes = counts.pushes + 1)
        case Pop =>
          if (held.isEmpty) {
            withClue(where)(a[NoSuchElementException] should be thrownBy fifo.pop())
          } else {
            fifo.pop()
            held = held.tail
            withClue(where)(agg.merges - mergesBefore shouldBe 0) // merges wait for a read
          }
        case Clear =>
          fifo.clear()
          held = Vector.empty
        case Query =>
          val first = subject.read(fifo.aggregate)
          val mergesBetween = agg.merges
          val second = subject.read(fifo.aggregate)
          withClue(where) {
            first shouldBe model(held)
            second shouldBe first
            // the first read merges what waited; reading again with nothing pushed or popped merges nothing
            agg.merges - mergesBetween shouldBe 0L
          }
          counts = counts.copy(aggregates = counts.aggregates + 2)
      }
      withClue(where) {
        fifo.size shouldBe held.length
        fifo.isEmpty shouldBe held.isEmpty
      }
    }
    // whatever happened, the held partials are intact: pop them one by one
    while (held.nonEmpty) {
      subject.read(fifo.aggregate) shouldBe model(held)
      counts = counts.copy(aggregates = counts.aggregates + 1)
      fifo.pop()
      held = held.tail
    }
    subject.read(fifo.aggregate) shouldBe model(Vector.empty)
    counts.copy(aggregates = counts.aggregates + 1, merges = agg.merges)
  }

  private def concat(held: Vector[Vector[Int]]): Vector[Int] = held.flatten
  private def total(held: Vector[Vector[Int]]): Vector[Int] = Vector(held.flatten.sum)

  test("an empty aggregator: aggregate is empty, pop raises") {
    val fifo = new FifoAggregator[ArrayBuffer[Int]](new Collect[Int])
    fifo.isEmpty shouldBe true
    fifo.size shouldBe 0
    fifo.aggregate shouldBe empty
    a[NoSuchElementException] should be thrownBy fifo.pop()
  }

  test("push, pop and aggregate keep push order") {
    val fifo = new FifoAggregator[ArrayBuffer[Int]](new Collect[Int])
    fifo.push(ArrayBuffer(1, 2))
    fifo.push(ArrayBuffer(3))
    fifo.aggregate.toVector shouldBe Vector(1, 2, 3)
    fifo.pop()
    fifo.aggregate.toVector shouldBe Vector(3) // front only
    fifo.push(ArrayBuffer(4))
    fifo.push(ArrayBuffer(5, 6))
    fifo.aggregate.toVector shouldBe Vector(3, 4, 5, 6) // front and back
    fifo.aggregate.toVector shouldBe Vector(3, 4, 5, 6)
    fifo.pop()
    fifo.aggregate.toVector shouldBe Vector(4, 5, 6) // back only
    fifo.pop()
    fifo.aggregate.toVector shouldBe Vector(5, 6)
    fifo.size shouldBe 1
    fifo.pop()
    fifo.aggregate.toVector shouldBe empty
    fifo.isEmpty shouldBe true
  }

  test("partials pushed and popped before any read cost no merge") {
    val agg = new Counting(Sum)
    val fifo = new FifoAggregator[LongCell](agg)
    (1 to 100).foreach { i =>
      fifo.push(new LongCell(i.toLong))
      if (fifo.size > 10) fifo.pop()
    }
    agg.merges shouldBe 0
    fifo.aggregate.value shouldBe (91 to 100).sum
    agg.merges should be <= 12L // the held partials folded once, then front and back combined
    fifo.clear()
    fifo.aggregate.value shouldBe 0
  }

  test("property: random push/pop/aggregate sequences match the list fold (collect in place)") {
    forAll(opsGen)(ops => run(collect, ops, concat))
  }

  test("property: random push/pop/aggregate sequences match the list fold (collect, immutable)") {
    forAll(opsGen)(ops => run(collectImmutable, ops, concat))
  }

  test("property: random push/pop/aggregate sequences match the list fold (sum)") {
    forAll(opsGen)(ops => run(sum, ops, total))
  }

  test("property: merges are amortized O(1): pushes + flips <= 2 per push, at most 2 per aggregate") {
    forAll(opsGen) { ops =>
      val c = run(collect, ops, concat)
      withClue(s"$c for ${ops.mkString(", ")}: ")(c.merges should be <= 2L * c.pushes + 2L * c.aggregates)
    }
  }

  test("merges stay linear over a long run whatever the window length") {
    for (window <- Seq(1, 2, 7, 100, 5000)) {
      val agg = new Counting(Sum)
      val fifo = new FifoAggregator[LongCell](agg)
      val n = 20000
      var expected = 0L
      for (i <- 0 until n) {
        fifo.push(new LongCell(i.toLong))
        expected += i
        if (fifo.size > window) { fifo.pop(); expected -= i - window }
        fifo.aggregate.value shouldBe expected
      }
      withClue(s"window $window: ${agg.merges} merges for $n pushes and $n aggregates: ") {
        agg.merges should be <= 4L * n
      }
    }
  }
}

object FifoAggregatorSpec {
  sealed trait Op
  /** Push a partial holding `n` new values (n = 0: a partial of no records). */
  final case class Push(n: Int) extends Op
  case object Pop extends Op
  case object Clear extends Op
  /** Read the aggregate, twice in a row. */
  case object Query extends Op

  final case class Counts(pushes: Long = 0, aggregates: Long = 0, merges: Long = 0)

  /** A partial aggregation under test, with how to build a partial and read one out. */
  final case class Subject[P](name: String, agg: PartialAggregation[P], make: Vector[Int] => P,
      read: P => Vector[Int])

  private val opGen: Gen[Op] = Gen.frequency(
    5 -> Gen.frequency(1 -> Gen.const(0), 6 -> Gen.const(1), 3 -> Gen.choose(2, 4)).map(Push(_)),
    3 -> Gen.const(Pop),
    1 -> Gen.const(Clear),
    4 -> Gen.const(Query))

  val opsGen: Gen[Seq[Op]] = Gen.choose(0, 120).flatMap(n => Gen.listOfN(n, opGen))
}
