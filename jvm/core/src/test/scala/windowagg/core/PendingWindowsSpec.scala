package windowagg.core

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

/**
 * The slicing cursor's set of windows waiting for their end against a sorted set of (end, start):
 * windows added mostly in order (as aligned kinds open them), some out of order or again (as table
 * windows and user kinds may), polled in between.
 */
class PendingWindowsSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {
  import PendingWindowsSpec._

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 400)

  /** Windows ending after the previous one mostly, some anywhere (a repeat now and then), polls between. */
  private val ops: Gen[Vector[Op]] = for {
    n <- Gen.choose(0, 60)
    steps <- Gen.listOfN(n, Gen.frequency(
      5 -> Gen.choose(0L, 3L).map(d => Left(d)), // in order: this much after the latest end
      2 -> Gen.choose(0L, 30L).flatMap(e => Gen.choose(0L, 5L).map(size => Right(Add(e - size, e)))),
      3 -> Gen.const(Right(Poll))))
  } yield {
    var latest = 0L
    steps.toVector.map {
      case Left(d) => latest += d; Add(latest - 2, latest)
      case Right(op) => op
    }
  }

  test("property: adds, polls and lookups give what a sorted set of the windows gives") {
    forAll(ops) { script =>
      val pending = new SlicingCursor.Pending
      val model = mutable.TreeSet.empty[(Long, Long)] // (end, start)
      script.zipWithIndex.foreach { case (op, step) =>
        withClue(s"step $step ($op) of ${script.mkString(", ")}\n") {
          op match {
            case Add(start, end) =>
              pending.add(start, end)
              model += ((end, start))
            case Poll =>
              if (model.nonEmpty) {
                pending.firstEnd shouldBe model.head._1
                pending.pollFirst()
                (pending.polledEnd, pending.polledStart) shouldBe model.head
                model -= model.head
              }
          }
          pending.size shouldBe model.size
          pending.isEmpty shouldBe model.isEmpty
          pending.all.toSet shouldBe model.map(_.swap).toSet
          model.foreach { case (end, start) => pending.contains(start, end) shouldBe true }
          pending.contains(-1L, 100L) shouldBe false
        }
      }
    }
  }
}

object PendingWindowsSpec {
  sealed trait Op
  final case class Add(start: Long, end: Long) extends Op
  case object Poll extends Op
}
