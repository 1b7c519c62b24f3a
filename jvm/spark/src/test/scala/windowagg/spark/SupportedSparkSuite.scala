package windowagg.spark

import org.scalatest.funsuite.AnyFunSuite

import windowagg.spark.common.SupportedSpark

class SupportedSparkSuite extends AnyFunSuite {

  test("the extension starts on Spark 4.1, 4.2 and 4.3, vendors' builds of them included") {
    Seq("4.1.3", "4.2.0", "4.3.0", "4.1.0-amzn-0", "4.3.1-SNAPSHOT").foreach(SupportedSpark.check)
    SupportedSpark.check(org.apache.spark.SPARK_VERSION)
  }

  test("on another Spark line the session does not start, and the message names both") {
    Seq("4.0.1", "4.4.0", "3.5.3", "5.0.0-preview1", "4").foreach { version =>
      val e = intercept[UnsupportedOperationException](SupportedSpark.check(version))
      assert(e.getMessage.contains(s"this is Spark $version"))
      assert(e.getMessage.contains("runs on Spark 4.1, 4.2, 4.3"))
      assert(e.getMessage.contains(s"leave ${classOf[WindowAggExtensions].getName} out of spark.sql.extensions"))
    }
  }
}
