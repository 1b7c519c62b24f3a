package windowagg.core

import scala.collection.mutable

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.matchers.should.Matchers

/** The unboxed queue of times against Scala's ArrayDeque, through growth and wrap-around. */
class LongQueueSpec extends AnyFunSuite with Matchers with DeterministicPropertyChecks {
  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  // Some(t): append t; None: remove the head (or check that an empty queue refuses)
  private val opsGen: Gen[List[Option[Long]]] =
    Gen.listOf(Gen.frequency(3 -> Gen.choose(Long.MinValue, Long.MaxValue).map(Some(_)), 2 -> Gen.const(None)))

  test("property: appends and removals match ArrayDeque") {
    forAll(opsGen) { ops =>
      val queue = new LongQueue
      val model = mutable.ArrayDeque.empty[Long]
      ops.foreach {
        case Some(t) => queue += t; model += t
        case None if model.isEmpty => an[IndexOutOfBoundsException] should be thrownBy queue.removeHead()
        case None => queue.removeHead() shouldBe model.removeHead()
      }
      queue.length shouldBe model.length
      queue.isEmpty shouldBe model.isEmpty
      (0 until queue.length).map(queue(_)) shouldBe model.toSeq
      if (model.nonEmpty) { queue.head shouldBe model.head; queue.last shouldBe model.last }
      an[IndexOutOfBoundsException] should be thrownBy queue(queue.length)
      queue.clear()
      queue.isEmpty shouldBe true
    }
  }
}
