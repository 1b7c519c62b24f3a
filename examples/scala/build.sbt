// A Scala application that uses windowagg as a library, by its coordinates (dev/publish-local puts
// them in the local Ivy and Maven repositories). Spark is provided, as on a cluster: here the jars of
// the pinned PySpark (SPARK_JARS_DIR, set by build/sbt), since Spark 4.3 is not on Maven Central.

scalaVersion := "2.13.18"
scalacOptions ++= Seq("-deprecation", "-feature", "-Xlint")

libraryDependencies ++= Seq(
  "io.windowagg" %% "windowagg" % "0.4.0",
  // Spark's encoders need Scala's reflection, at the build's own Scala version
  "org.scala-lang" % "scala-reflect" % scalaVersion.value)

// the manual's own window kind (windowagg.examples.FiscalQuarters), a user's jar of their own: the
// main build's examples/package makes it
Compile / unmanagedJars += Attributed.blank(file("../../jvm/examples/target/windowagg-examples-0.4.0.jar"))

Compile / unmanagedJars ++= {
  val dir = sys.env.get("SPARK_JARS_DIR").map(file).getOrElse(
    sys.error("SPARK_JARS_DIR is not set: run this build through build/sbt (dev/scala-example does)"))
  (dir ** "*.jar").get.filterNot(_.getName.matches("scala-(library|reflect|compiler)-.*")).map(Attributed.blank)
}

run / fork := true
// the application's own stdout and stderr, not sbt's [info]/[error] tags
run / outputStrategy := Some(StdoutOutput)
// Spark's JVM flags for Java 17
run / javaOptions ++= Seq(
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
  "-Djdk.reflect.useDirectMethodHandle=false")
