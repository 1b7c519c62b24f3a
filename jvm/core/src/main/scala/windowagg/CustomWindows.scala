package windowagg

import java.time.Duration

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import windowagg.core.{EnumeratedWindows, TimeSpan, WindowError}

/**
 * A user's own kind of windows (an [[EnumerableWindowDefinition]]), as an instance or by class
 * name and parameters (how Python and SQL name it), with an optional grace period. Every window the
 * definition lists is checked as it is used: it must hold the time it was listed for, be non-empty,
 * and be no larger than the declared maximum size; otherwise the error names the class and the time.
 */
final class CustomWindows private (
    val definition: EnumerableWindowDefinition,
    val parameters: Map[String, String],
    val gracePeriod: Option[TimeSpan]) extends WindowDefinition {

  private def className: String = definition.getClass.getName

  /** How long after a window's end records may still arrive (streaming); see [[SlidingWindows.grace(afterWindowEnd:String)* SlidingWindows.grace]]. */
  def grace(afterWindowEnd: String): CustomWindows = new CustomWindows(definition, parameters, Some(WindowSpec.grace(afterWindowEnd)))
  def grace(afterWindowEnd: Duration): CustomWindows = new CustomWindows(definition, parameters, Some(WindowSpec.grace(afterWindowEnd)))

  override def rowLengthColumn: Option[String] = definition.rowLengthColumn

  override def resolve(timeline: Timeline): CustomWindows.Resolved = {
    val maxSize =
      try definition.maxSize(timeline)
      catch { case NonFatal(e) => throw WindowError(s"$className.maxSize failed: ${e.getMessage}") }
    if (maxSize <= 0) throw WindowError(s"$className.maxSize must be positive, got $maxSize")
    val resolved = CustomWindows.Resolved(definition, timeline, maxSize, gracePeriod.map(timeline.ticks(_, "grace period")))
    // a definition that lists wrong windows fails here, at analysis, where it does so for common times
    Seq(0L, timeline.fromInstant(java.time.Instant.parse("2024-02-29T12:34:56.789Z"))).foreach(t => resolved.foreachWindow(t)((_, _) => ()))
    resolved
  }

  private def parameterList: Seq[String] = CustomWindows.parameterList(parameters)

  /** By name and parameters where it was built so; an instance says its own spec. */
  override def spec: String =
    (if (parameters.isEmpty) definition.spec else s"custom $className${parameterList.mkString("(", ", ", ")")}") +
      WindowSpec.graceSpec(gracePeriod)
  override def toString: String =
    s"CustomWindows.of($className${if (parameters.isEmpty) "" else parameterList.mkString(", ", ", ", "")})" +
      gracePeriod.map(g => s".grace($g)").getOrElse("")
  // the definition's own equality decides: built by name or as an instance, the same windows are equal
  override def equals(other: Any): Boolean = other match {
    case o: CustomWindows => o.definition == definition && o.gracePeriod == gracePeriod
    case _ => false
  }
  override def hashCode: Int = (definition, gracePeriod).hashCode
}

object CustomWindows extends WindowSpec.Reader {
  /** A definition instance (Scala, Java). */
  def of(definition: EnumerableWindowDefinition): CustomWindows = {
    if (definition == null) throw WindowError("the window definition must not be null")
    new CustomWindows(definition, Map.empty, None)
  }

  /** The definition class `className` (on the classpath, e.g. through --jars), made by its no-argument constructor. */
  def of(className: String): CustomWindows = of(className, Map.empty[String, String])

  /** The definition class `className` made from its parameters by its `java.util.Map[String, String]` constructor. */
  def of(className: String, parameters: java.util.Map[String, String]): CustomWindows =
    of(className, Option(parameters).map(_.asScala.toMap).getOrElse(Map.empty))

  def of(className: String, parameters: Map[String, String]): CustomWindows = {
    if (className == null || className.trim.isEmpty) throw WindowError("the custom window class name must not be empty")
    val name = className.trim
    val loader = Option(Thread.currentThread.getContextClassLoader).getOrElse(getClass.getClassLoader)
    val cls =
      try Class.forName(name, true, loader)
      catch {
        case _: ClassNotFoundException =>
          throw WindowError(s"custom window class $name is not on the classpath (add its jar with --jars)")
        case e: LinkageError => throw WindowError(s"custom window class $name cannot be loaded: $e")
      }
    if (!classOf[EnumerableWindowDefinition].isAssignableFrom(cls)) {
      throw WindowError(s"$name is not a window definition: it must implement ${classOf[EnumerableWindowDefinition].getName}")
    }
    val constructed =
      try {
        if (parameters.nonEmpty || cls.getConstructors.exists(isMapConstructor)) {
          val constructor = cls.getConstructors.find(isMapConstructor).getOrElse(throw WindowError(
            s"$name takes no parameters: it has no public constructor taking a java.util.Map[String, String]"))
          constructor.newInstance(parameters.asJava)
        } else {
          val constructor = cls.getConstructors.find(_.getParameterCount == 0).getOrElse(throw WindowError(
            s"$name has no public constructor taking no arguments or a java.util.Map[String, String] of parameters"))
          constructor.newInstance()
        }
      } catch {
        case e: WindowError => throw e
        case e: java.lang.reflect.InvocationTargetException =>
          throw WindowError(s"$name rejected its parameters ${parameterList(parameters).mkString(", ")}: ${e.getCause.getMessage}")
        case NonFatal(e) => throw WindowError(s"$name cannot be constructed: $e")
      }
    new CustomWindows(constructed.asInstanceOf[EnumerableWindowDefinition], parameters, None)
  }

  /** Parameters as `name=value`, sorted by name, as the spec grammar writes them. */
  private def parameterList(parameters: Map[String, String]): Seq[String] =
    parameters.toSeq.sorted.map { case (k, v) => s"$k=$v" }

  private def isMapConstructor(c: java.lang.reflect.Constructor[_]): Boolean =
    c.getParameterCount == 1 && c.getParameterTypes.head.isAssignableFrom(classOf[java.util.HashMap[_, _]])

  override val keywords: Seq[String] = Seq("custom")
  override val usage: String = "custom <class name>[(name=value, ...)] [grace <length>]"
  override def read(keyword: String, spec: WindowSpec.Clauses): WindowDefinition = {
    spec.only(Seq("grace"))
    val Call = """([\w.$]+)\s*(?:\((.*)\))?""".r
    val windows = spec.lead match {
      case Call(name, args) =>
        val params = Option(args).map(_.split(",").toSeq.map(_.trim).filter(_.nonEmpty).map { pair =>
          pair.split("=", 2) match {
            case Array(k, v) => k.trim -> v.trim
            case _ => throw WindowError(s"cannot read the parameter '$pair' of $name; write name=value")
          }
        }.toMap).getOrElse(Map.empty[String, String])
        of(name, params)
      case other => throw WindowError(s"'$other' is not a class name with optional parameters: $usage")
    }
    spec.grace.fold(windows)(g => new CustomWindows(windows.definition, windows.parameters, Some(g)))
  }

  /** A user's definition in ticks of `timeline`, its windows checked as they are listed. */
  final case class Resolved(definition: EnumerableWindowDefinition, timeline: Timeline, maxSize: Long, graceTicks: Option[Long])
      extends EnumeratedWindows {
    override def maxSpan: Long = maxSize - 1

    /** A user kind may leave times out (list no window for them). */
    override def holds(time: Long): Boolean = {
      var any = false
      foreachWindow(time)((_, _) => any = true)
      any
    }

    override def foreachWindow(time: Long)(window: (Long, Long) => Unit): Unit = {
      val windows =
        try definition.windowsFor(time, timeline)
        catch {
          case e: WindowError => throw e
          case NonFatal(e) => throw WindowError(s"${what(time)} failed: $e")
        }
      if (windows == null) throw WindowError(s"${what(time)} returned null; return an empty list for a time in no window")
      val it = windows.iterator()
      while (it.hasNext) {
        val w = it.next()
        if (w == null) throw WindowError(s"${what(time)} listed a null window")
        if (w.end <= w.start) throw WindowError(s"${what(time)} listed the empty or inverted window [${w.start}, ${w.end})")
        if (time < w.start || time >= w.end) {
          throw WindowError(s"${what(time)} listed the window [${w.start}, ${w.end}), which does not contain $time")
        }
        if (w.end - w.start > maxSize) {
          throw WindowError(s"${what(time)} listed the window [${w.start}, ${w.end}), larger than its maxSize $maxSize")
        }
        window(w.start, w.end)
      }
    }

    private def what(time: Long): String = s"${definition.getClass.getName}.windowsFor($time = ${timeline.format(time)})"
  }
}
