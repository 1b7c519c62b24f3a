package windowagg.spark

import java.io.{ByteArrayOutputStream, File, PrintStream}
import java.nio.file.Paths
import java.util.spi.ToolProvider

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

/**
 * The packages of jvm/ depend on each other in one direction: no loop, so that each can be read, and
 * changed, knowing only what it uses. Read from the compiled classes (the JDK's jdeps), not the
 * sources: an import left unused does not count, a fully qualified name does. A package is counted per
 * module, as the jar's users see them: `windowagg` in jvm/core (the definitions) and in jvm/spark
 * (`functions`) are two.
 */
class PackageLayersSuite extends AnyFunSuite {
  import PackageLayersSuite._

  private lazy val modules: Seq[(String, File)] = Seq(
    "core" -> classesOf(classOf[windowagg.WindowDefinition]),
    "spark" -> classesOf(classOf[windowagg.spark.WindowAggExtensions]))

  /** Each package of windowagg's own classes ("module:package") and the packages it uses, with the class edges behind each. */
  private lazy val uses: Map[String, Map[String, Seq[String]]] = {
    val edges = mutable.Map.empty[String, mutable.Map[String, mutable.Buffer[String]]]
    for ((module, dir) <- modules; (from, to) <- classDependencies(modules.map(_._2))) {
      val target = modules.collectFirst { case (m, d) if new File(d, to.replace('.', '/') + ".class").isFile => m }
      if (new File(dir, from.replace('.', '/') + ".class").isFile && target.isDefined) {
        val (a, b) = (s"$module:${packageOf(from)}", s"${target.get}:${packageOf(to)}")
        if (a != b) edges.getOrElseUpdate(a, mutable.Map.empty).getOrElseUpdate(b, mutable.Buffer.empty) += s"$from -> $to"
      }
    }
    edges.map { case (a, bs) => a -> bs.map { case (b, why) => b -> why.distinct.sorted.toSeq }.toMap }.toMap
  }

  test("windowagg's packages form no loop: each depends only on packages that do not depend back on it") {
    // not an empty reading: the layers the architecture page names are all there
    val packages = uses.keySet ++ uses.values.flatMap(_.keySet)
    assert(Set("core:windowagg", "core:windowagg.core", "spark:windowagg", "spark:windowagg.spark",
      "spark:windowagg.spark.common", "spark:windowagg.spark.streaming").subsetOf(packages), packages)
    assert(uses("core:windowagg").contains("core:windowagg.core"))
    assert(uses("spark:windowagg.spark.streaming").contains("spark:windowagg.spark.common"))
    val found = loops(uses.map { case (a, bs) => a -> bs.keySet })
    val shown = found.map { loop =>
      (for (a <- loop; b <- loop; why <- uses.get(a).flatMap(_.get(b))) yield s"$a -> $b, through ${why.take(3).mkString("; ")}")
        .mkString("\n  ")
    }
    assert(found.isEmpty, s"package loops:\n  ${shown.mkString("\n\n  ")}")
  }

  test("the loop finder finds a loop, and only a loop") {
    assert(loops(Map("a" -> Set("b"), "b" -> Set("c"), "c" -> Set("a"), "d" -> Set("a"))) == Seq(Seq("a", "b", "c")))
    assert(loops(Map("a" -> Set("b", "c"), "b" -> Set("c"))).isEmpty)
  }
}

object PackageLayersSuite {
  /** The classes folder (or jar) a class was loaded from. */
  def classesOf(c: Class[_]): File = Paths.get(c.getProtectionDomain.getCodeSource.getLocation.toURI).toFile

  def packageOf(className: String): String = className.substring(0, className.lastIndexOf('.'))

  /** Every (class, class it uses) among classes of `roots`, as the JDK's jdeps reads them. */
  def classDependencies(roots: Seq[File]): Seq[(String, String)] = {
    val jdeps = ToolProvider.findFirst("jdeps").orElseThrow(() => new IllegalStateException("this JDK has no jdeps"))
    val out = new ByteArrayOutputStream()
    val printer = new PrintStream(out, true, "UTF-8")
    val status = jdeps.run(printer, printer, ("-verbose:class" +: "-filter:none" +: roots.map(_.getPath)): _*)
    val text = out.toString("UTF-8")
    require(status == 0, s"jdeps failed ($status):\n$text")
    val edge = """^\s+(\S+)\s+->\s+(\S+)\s+.*$""".r
    text.linesIterator.collect { case edge(from, to) => (from, to) }.toSeq
  }

  /** The loops of a graph, each once, as the strongly connected components of more than one node (Tarjan's). */
  def loops(graph: Map[String, Set[String]]): Seq[Seq[String]] = {
    val index = mutable.Map.empty[String, Int]
    val low = mutable.Map.empty[String, Int]
    val stack = mutable.Stack.empty[String]
    val found = mutable.Buffer.empty[Seq[String]]
    def visit(v: String): Unit = {
      index(v) = index.size
      low(v) = index(v)
      stack.push(v)
      for (w <- graph.getOrElse(v, Set.empty).toSeq.sorted) {
        if (!index.contains(w)) { visit(w); low(v) = math.min(low(v), low(w)) }
        else if (stack.contains(w)) low(v) = math.min(low(v), index(w))
      }
      if (low(v) == index(v)) {
        val component = mutable.Buffer.empty[String]
        var w = ""
        while (w != v) { w = stack.pop(); component += w }
        if (component.size > 1) found += component.sorted.toSeq
      }
    }
    (graph.keySet ++ graph.values.flatten).toSeq.sorted.foreach(v => if (!index.contains(v)) visit(v))
    found.toSeq
  }
}
