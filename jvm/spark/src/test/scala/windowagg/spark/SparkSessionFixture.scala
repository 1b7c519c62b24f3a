package windowagg.spark

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.streaming.StreamingQuery
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
    // a micro-batch's commit writes its changes, not a snapshot of the store (what pytest's streaming
    // sessions and the Kafka jobs use too): the streaming suites take a tenth less time
    .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
    // as in Spark's own tests: generated code that does not compile fails the test, instead of
    // being replaced by interpreted code with only an error in the log
    .config("spark.sql.codegen.fallback", "false")
    .getOrCreate()

  /**
   * Starts a streaming query without Spark's no-data micro-batches (the one after each micro-batch that
   * moves the watermark): every micro-batch then carries rows, so the last execution's plan and metrics
   * are of rows, and a test feeding many micro-batches takes half the time. Lateness is the same (a
   * no-data micro-batch uses the watermark the micro-batch before it set); a test that ends with two
   * flush rows still gets every final window. Spark copies the setting when the query starts.
   */
  def startWithoutNoDataBatches(start: => StreamingQuery): StreamingQuery = {
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    try start finally spark.conf.unset("spark.sql.streaming.noDataMicroBatches.enabled")
  }

  override def afterAll(): Unit = {
    try spark.stop()
    finally super.afterAll()
  }
}
