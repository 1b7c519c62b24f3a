// windowagg: one jar (core + Spark adapters) for Spark 4.1, 4.2 and 4.3, Scala 2.13.
//
// Spark is a provided dependency. The jar is compiled against the pinned PySpark's Spark 4.3 (its
// jars/ folder, SPARK_JARS_DIR, set by build/sbt; Spark 4.3 is not on Maven Central), so compilation
// and tests run against the very jars a PySpark user's session loads. `-Dspark.version=4.1.3` (a
// release of an older line) builds the same sources against that Spark from Maven Central instead,
// into jvm/spark/target/spark<line>/ as windowagg-<version>-spark<line>.jar: dev/test-spark-version
// compares its class files with the shipped jar's and can run the ScalaTest suites on that Spark.

ThisBuild / organization := "io.windowagg"
ThisBuild / version := "0.4.0"
ThisBuild / scalaVersion := "2.13.18"
ThisBuild / scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-Xlint", "-release", "17")

val scalaTest = "org.scalatest" %% "scalatest" % "3.2.19" % Test
val scalaCheck = Seq(
  "org.scalatestplus" %% "scalacheck-1-18" % "3.2.19.0" % Test,
  "org.scalacheck" %% "scalacheck" % "1.18.1" % Test)

/** A release of an older Spark line to build against, from Maven Central (`-Dspark.version`). */
val sparkRelease: Option[String] = sys.props.get("spark.version").filter(_.nonEmpty).map {
  case release @ OlderLineRelease() => release
  case other => sys.error(s"-Dspark.version=$other: builds against another Spark take a 4.1.x or 4.2.x release; 4.3 is the default build")
}
lazy val OlderLineRelease = """4\.[12]\.\d+""".r
/** "4.1" for 4.1.3: names the build's folder and jar. */
lazy val sparkLine: Option[String] = sparkRelease.map(_.split('.').take(2).mkString("."))

lazy val sparkJars = Def.setting {
  if (sparkRelease.isDefined) Nil
  else {
    val dir = sys.env.get("SPARK_JARS_DIR").map(file).getOrElse(
      sys.error("SPARK_JARS_DIR is not set: run sbt through build/sbt, which reads it from .venv"))
    // scala-library and friends come from sbt itself at the same version
    (dir ** "*.jar").get.filterNot(_.getName.matches("scala-(library|reflect|compiler)-.*"))
  }
}

// Spark's own JVM flags for Java 17 (from org.apache.spark.launcher.JavaModuleOptions).
val sparkJavaOptions = Seq(
  "-XX:+IgnoreUnrecognizedVMOptions",
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.io=ALL-UNNAMED",
  "--add-opens=java.base/java.net=ALL-UNNAMED",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
  "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
  "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
  "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
  "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true")

/** The windowing core: window definitions, the sweep, incremental aggregation. No Spark. */
lazy val core = (project in file("jvm/core"))
  .settings(
    name := "windowagg-core",
    publish / skip := true,
    libraryDependencies ++= scalaTest +: scalaCheck,
    Test / fork := true,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"))

/**
 * Two user-defined window kinds, as a user would write them against the core (the docs show them,
 * the tests load them by class name): their own jar, windowagg-examples.jar.
 */
lazy val examples = (project in file("jvm/examples"))
  .dependsOn(core % Provided)
  .settings(
    name := "windowagg-examples",
    publish / skip := true,
    javacOptions ++= Seq("--release", "17", "-Xlint:all"),
    Compile / packageBin / artifactPath := target.value / s"windowagg-examples-${version.value}.jar")

/** Spark adapters (Catalyst expressions, rules, operator, SQL, extension), packaged with the core. */
lazy val spark = (project in file("jvm/spark"))
  .dependsOn(core % "compile->compile;test->test", examples % "test->compile")
  .settings(
    name := "windowagg",
    libraryDependencies ++= scalaTest +: scalaCheck,
    libraryDependencies ++= sparkRelease.toSeq.map(v => "org.apache.spark" %% "spark-sql" % v % Provided),
    Compile / unmanagedJars ++= sparkJars.value.map(Attributed.blank),
    // an older line builds apart, so switching lines never recompiles the default build
    target := sparkLine.fold(baseDirectory.value / "target")(line => baseDirectory.value / "target" / s"spark$line"),
    Compile / packageBin / mappings ++= (core / Compile / packageBin / mappings).value,
    // the jar holds the core, so its published sources and API docs (and dev/docs) do too: every
    // [[link]] into the core resolves, and a broken one fails the build
    Compile / packageSrc / mappings ++= (core / Compile / packageSrc / mappings).value,
    Compile / doc / sources ++= (core / Compile / sources).value,
    Compile / doc / scalacOptions ++= Seq("-doc-title", "windowagg", "-doc-version", version.value, "-Werror"),
    Compile / packageBin / artifactPath := target.value / s"windowagg-${version.value}${sparkLine.fold("")(l => s"-spark$l")}.jar",
    // published as one artifact, io.windowagg:windowagg_2.13 (dev/publish-local): the core is inside
    // the jar, so neither it nor the test-only examples are dependencies in its POM or ivy.xml; Spark
    // is provided by the cluster
    projectDependencies := projectDependencies.value.filterNot(_.name.startsWith("windowagg-")),
    // local repositories take the tree's current jar again under the same version
    publishLocalConfiguration := publishLocalConfiguration.value.withOverwrite(true),
    publishM2Configuration := publishM2Configuration.value.withOverwrite(true),
    Test / fork := true,
    Test / parallelExecution := false,
    // the parallel collector: a few percent less wall time than G1 for the suites on two cores
    Test / javaOptions ++= sparkJavaOptions ++ Seq("-Xmx4g", "-XX:+UseParallelGC", "-Dspark.ui.enabled=false"),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    Compile / run / fork := true,
    Compile / run / javaOptions ++= sparkJavaOptions)

lazy val root = (project in file("."))
  .aggregate(core, examples, spark)
  .settings(name := "windowagg-root", publish / skip := true)
