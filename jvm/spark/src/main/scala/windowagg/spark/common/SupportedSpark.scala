package windowagg.spark.common

/**
 * The Spark lines this jar is tested on (dev/test, dev/test-spark-version; the README's Spark versions).
 * On another, the session does not start: windowagg would otherwise fail later, in the middle of a
 * query, on a Spark method that line lacks or declares differently.
 */
object SupportedSpark {
  val Lines: Seq[String] = Seq("4.1", "4.2", "4.3")

  /** The session extension's class, as spark.sql.extensions names it. */
  val Extension = "windowagg.spark.WindowAggExtensions"

  /** The Spark line of a version string: "4.1" for "4.1.3" or a vendor's "4.1.0-amzn-0". */
  def line(sparkVersion: String): String = sparkVersion.split("[.-]").take(2).mkString(".")

  def check(sparkVersion: String): Unit =
    if (!Lines.contains(line(sparkVersion))) {
      throw new UnsupportedOperationException(
        s"windowagg ${WindowAggVersion.current} runs on Spark ${Lines.mkString(", ")} (Scala 2.13), and this is " +
          s"Spark $sparkVersion: run a supported Spark, or leave $Extension out of " +
          "spark.sql.extensions")
    }
}

/** The running windowagg's version, from its jar's manifest. */
object WindowAggVersion {
  lazy val current: String =
    Option(getClass.getPackage.getImplementationVersion).getOrElse("development build")
}
