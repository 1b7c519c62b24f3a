package windowagg

import java.lang.reflect.{InvocationTargetException, Method}

import scala.util.control.NonFatal

import windowagg.core.WindowError

/**
 * A definition written as the calls that build it, `TimeWindows.of('1 hour').advanceBy('10 minutes')`:
 * what a client without these classes sends (Python on Spark Connect, or without a session), and a
 * spec the SQL functions read beside the grammar of [[WindowSpec]]. The calls are replayed on the
 * definition classes' public methods, so they are checked exactly as a Scala caller's would be.
 *
 * Arguments are strings in single quotes (a quote doubled inside), integers, or `name='value'` pairs,
 * which become one map argument (a user-defined kind's parameters).
 */
object WindowCalls {
  /** The kinds by the names their calls start with. */
  private val kinds: Map[String, AnyRef] = WindowSpec.readers.map(r => r.getClass.getSimpleName.stripSuffix("$") -> r).toMap

  /** Whether `text` is written as calls: a kind's class name, then a method. */
  def isCalls(text: String): Boolean = text.trim.matches("(?s)[A-Z][A-Za-z]*\\s*\\..*")

  def read(text: String): WindowDefinition = {
    val in = new Reader(text)
    val kind = in.name()
    var target: AnyRef = kinds.getOrElse(kind, throw WindowError(
      s"'$text': unknown window kind $kind; known kinds: ${kinds.keys.toSeq.sorted.mkString(", ")}"))
    do {
      in.expect('.')
      val method = in.name()
      target = call(text, target, method, in.arguments())
    } while (!in.atEnd)
    target match {
      case d: WindowDefinition => d
      case other => throw WindowError(s"'$text' builds a ${other.getClass.getSimpleName}, not a window definition")
    }
  }

  private sealed trait Argument
  private final case class Text(value: String) extends Argument
  private final case class Whole(value: Long) extends Argument
  private final case class Named(name: String, value: String) extends Argument

  /** Invokes the public method `name` of `target` whose parameters take `args`. */
  private def call(text: String, target: AnyRef, name: String, arguments: Seq[Argument]): AnyRef = {
    val (named, positional) = arguments.partition(_.isInstanceOf[Named])
    val parameters = named.collect { case Named(k, v) => k -> v }.toMap
    val args: Seq[Any] = positional ++ (if (named.nonEmpty) Seq(parameters) else Nil)
    // only the builders: methods that return a definition
    val candidates = target.getClass.getMethods.toSeq.filter(m => m.getName == name && m.getParameterCount == args.length &&
      classOf[WindowDefinition].isAssignableFrom(m.getReturnType))
    val chosen = candidates.flatMap(m => converted(m, args).map(m -> _)).headOption.getOrElse {
      val shown = arguments.map { case Text(_) => "text"; case Whole(_) => "an integer"; case Named(k, _) => s"$k=..." }
      val what = target match {
        case _: WindowSpec.Reader => target.getClass.getSimpleName.stripSuffix("$")
        case _ => target.getClass.getSimpleName
      }
      throw WindowError(s"'$text': $what has no method $name(${shown.mkString(", ")})")
    }
    try chosen._1.invoke(target, chosen._2: _*)
    catch {
      case e: InvocationTargetException => e.getCause match {
        case w: WindowError => throw w
        case i: IllegalArgumentException => throw WindowError(s"'$text': ${i.getMessage}")
        case other => throw WindowError(s"'$text': $name failed: $other")
      }
      case NonFatal(e) => throw WindowError(s"'$text': $name failed: $e")
    }
  }

  /** `args` as `method`'s parameters, or None where a parameter cannot take its argument. */
  private def converted(method: Method, args: Seq[Any]): Option[Seq[AnyRef]] = {
    val out = method.getParameterTypes.toSeq.zip(args).map {
      case (t, Text(v)) if t == classOf[String] => Some(v)
      case (t, Whole(v)) if t == java.lang.Long.TYPE => Some(java.lang.Long.valueOf(v))
      case (t, Whole(v)) if t == java.lang.Integer.TYPE && v.isValidInt => Some(java.lang.Integer.valueOf(v.toInt))
      case (t, m: Map[_, _]) if t == classOf[scala.collection.immutable.Map[_, _]] => Some(m)
      case _ => None
    }
    if (out.forall(_.isDefined)) Some(out.map(_.get.asInstanceOf[AnyRef])) else None
  }

  /** The calls' tokens, read left to right; errors quote the text and say where. */
  private final class Reader(text: String) {
    private var at = 0
    skipSpaces()

    def atEnd: Boolean = at >= text.length

    private def skipSpaces(): Unit = while (at < text.length && text.charAt(at).isWhitespace) at += 1

    private def fail(what: String): Nothing =
      throw WindowError(s"cannot read '$text' as calls at ${if (atEnd) "its end" else s"'${text.substring(at)}'"}: $what; " +
        "write them like TimeWindows.of('1 hour').advanceBy('10 minutes')")

    def expect(c: Char): Unit = {
      if (atEnd || text.charAt(at) != c) fail(s"expected '$c'")
      at += 1
      skipSpaces()
    }

    def name(): String = {
      val from = at
      while (at < text.length && (text.charAt(at).isLetterOrDigit || text.charAt(at) == '_')) at += 1
      if (at == from) fail("expected a name")
      val n = text.substring(from, at)
      skipSpaces()
      n
    }

    def arguments(): Seq[Argument] = {
      expect('(')
      val args = Seq.newBuilder[Argument]
      if (!atEnd && text.charAt(at) == ')') { expect(')'); return Nil }
      var more = true
      while (more) {
        args += argument()
        if (!atEnd && text.charAt(at) == ',') expect(',') else more = false
      }
      expect(')')
      args.result()
    }

    private def argument(): Argument = {
      if (atEnd) fail("expected an argument")
      val c = text.charAt(at)
      if (c == '\'') Text(quoted())
      else if (c == '-' || c.isDigit) Whole(whole())
      else {
        val n = name()
        expect('=')
        if (!atEnd && text.charAt(at) == '\'') Named(n, quoted()) else Named(n, whole().toString)
      }
    }

    private def quoted(): String = {
      val out = new StringBuilder
      at += 1 // the opening quote
      var closed = false
      while (!closed) {
        if (atEnd) fail("a quote is not closed")
        val c = text.charAt(at)
        at += 1
        if (c != '\'') out += c
        else if (at < text.length && text.charAt(at) == '\'') { out += '\''; at += 1 }
        else closed = true
      }
      skipSpaces()
      out.result()
    }

    private def whole(): Long = {
      val from = at
      if (text.charAt(at) == '-') at += 1
      while (at < text.length && text.charAt(at).isDigit) at += 1
      val digits = text.substring(from, at)
      skipSpaces()
      digits.toLongOption.getOrElse(fail(s"'$digits' is not a 64-bit integer"))
    }
  }
}
