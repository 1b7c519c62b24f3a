package windowagg.core

import java.util.concurrent.atomic.AtomicReference

import org.scalatest.{Failed, Outcome, TestSuite, TestSuiteMixin}
import org.scalatest.exceptions.{GeneratorDrivenPropertyCheckFailedException, TestFailedException}
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * ScalaCheck property checks that generate the same cases on every run and report failures
 * properly from a forked test JVM.
 *
 * Seed: ScalaTest takes the initial ScalaCheck seed from its runner argument `-S <seed>` and draws
 * a random one otherwise; unless the runner was given one, this fixes it to
 * [[DeterministicPropertyChecks.DefaultSeed]]. (ScalaTest keeps the configured seed in
 * `org.scalatest.prop.Seed.configuredRef`, public in bytecode but package-private in Scala, hence
 * the reflection.) Failures report the seed either way.
 *
 * Failures: a failed property check is reported as a plain test failure with the same message
 * (generated values and seed included) and location. ScalaTest's own property failure holds
 * ScalaCheck's parameters, which are not serializable; sending it from the forked test JVM to sbt
 * corrupts the event stream, and after a few such failures the fork dies and the remaining suites
 * never run (scalatest/scalatest#427).
 */
trait DeterministicPropertyChecks extends TestSuiteMixin with ScalaCheckPropertyChecks { this: TestSuite =>
  DeterministicPropertyChecks.fixSeed()

  abstract override def withFixture(test: NoArgTest): Outcome = super.withFixture(test) match {
    case Failed(e: GeneratorDrivenPropertyCheckFailedException) =>
      val plain = new TestFailedException(e.getMessage, e.failedCodeStackDepth)
      plain.setStackTrace(e.getStackTrace)
      Failed(plain)
    case other => other
  }
}

object DeterministicPropertyChecks {
  val DefaultSeed: Long = 20261121L

  private lazy val fixed: Boolean =
    try {
      val seedObject = org.scalatest.prop.Seed
      val ref = seedObject.getClass.getMethod("configuredRef").invoke(seedObject)
        .asInstanceOf[AtomicReference[Option[Any]]]
      ref.compareAndSet(None, Some(DefaultSeed))
      true
    } catch {
      case _: ReflectiveOperationException | _: ClassCastException => false // random seeds, still reported
    }

  def fixSeed(): Unit = { fixed; () }
}
