package windowagg.spark

import org.apache.spark.sql.SparkSession
import org.scalatest.{BeforeAndAfterAll, Suite}

import windowagg.spark.streaming.StreamingWindowPlanner

/** One local SparkSession with the windowagg extension for a suite. */
trait SparkSessionFixture extends BeforeAndAfterAll { self: Suite =>
  @transient lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName(getClass.getSimpleName)
    .config("spark.sql.extensions", classOf[WindowAggExtensions].getName)
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config(StreamingWindowPlanner.ProviderConf, StreamingWindowPlanner.RocksDbProvider)
    // as in Spark's own tests: generated code that does not compile fails the test, instead of
    // being replaced by interpreted code with only an error in the log
    .config("spark.sql.codegen.fallback", "false")
    .getOrCreate()

  override def afterAll(): Unit = {
    try spark.stop()
    finally super.afterAll()
  }
}
