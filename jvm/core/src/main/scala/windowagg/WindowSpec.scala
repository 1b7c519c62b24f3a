package windowagg

import java.time.Duration
import java.util.Locale

import windowagg.core.{TimeSpan, WindowError}

/**
 * The text form of every window definition, used by SQL (`window_agg`, `windows`) and by anything
 * that can pass only strings (Spark Connect). A spec is a kind's word, its lengths and clauses:
 * {{{
 *   sliding 10 minutes grace 1 minute
 *   session gap 5 minutes            session gap column gap_col
 *   tumbling 1 minute offset 10 seconds
 *   hopping 1 hour every 10 seconds
 *   cumulative 1 hour up to 1 day
 *   calendar 1 month in 'America/New_York'
 *   unlimited starting 2024-01-01T00:00:00Z
 *   count 30 rows every 10 rows lag 5 seconds tie break seq
 *   duration 20 seconds every 10 seconds lag 5 seconds
 *   custom com.example.FiscalQuarters(firstMonth=2) grace 1 day
 *   table campaign_periods columns opens, closes grace 1 day
 *   listed by quarters max size 92 days non-overlapping
 * }}}
 * A length is a duration ("1 hour 30 minutes") or a bare integer counting ticks of an integral time
 * column. This object is the one registry of built-in kinds: a kind is listed here once.
 */
object WindowSpec {
  /** The most windows a definition may put on one time: each is computed and output. */
  val MaxWindowsPerTime: Long = 1000000L

  /** Refuses a definition whose every time would be in more than [[MaxWindowsPerTime]] windows, saying what to do instead. */
  def checkWindowsPerTime(definition: WindowDefinition, windows: Long, instead: String): Unit =
    if (windows > MaxWindowsPerTime) {
      throw WindowError(s"$definition puts every time in $windows windows; at most $MaxWindowsPerTime are allowed " +
        s"(each is computed and output): $instead")
    }

  /** A kind's reader of its own specs. */
  trait Reader {
    /** The leading words that name the kind. */
    def keywords: Seq[String]
    /** The kind's grammar, shown in errors and docs. */
    def usage: String
    def read(keyword: String, spec: Clauses): WindowDefinition
    /** Clause words of this kind only, beyond the common ones (every, offset, grace, gap, up to). */
    def clauseWords: Seq[String] = Nil
  }

  private val commonWords = Seq("every", "offset", "grace", "gap", "up to")

  /** Every built-in kind, once. */
  val readers: Seq[Reader] = Seq(SlidingWindows, SessionWindows, TimeWindows, CumulativeWindows, CalendarWindows, UnlimitedWindows, CountWindows,
    DurationWindows, CustomWindows, TableWindows, ListedWindows)

  /** All kinds' grammar, one per line. */
  def grammar: String = readers.map(_.usage).mkString("\n")

  /** The definition `text` describes (in the spec grammar, or as the calls that build it: [[WindowCalls]]); an error naming the problem otherwise. */
  def parse(text: String): WindowDefinition = {
    if (text == null || text.trim.isEmpty) throw WindowError(s"a window spec must not be empty; write one of:\n$grammar")
    if (WindowCalls.isCalls(text)) return WindowCalls.read(text)
    val trimmed = text.trim
    val keyword = trimmed.split("\\s+", 2).head.toLowerCase(Locale.ROOT)
    val reader = readers.find(_.keywords.contains(keyword)).getOrElse(throw WindowError(
      s"unknown window kind '$keyword' in '$trimmed'; known kinds: ${readers.flatMap(_.keywords).mkString(", ")}"))
    reader.read(keyword, Clauses(trimmed, trimmed.drop(keyword.length).trim, reader.clauseWords))
  }

  /**
   * A spec cut at its clause words: `lead` is the text before the first clause ("1 hour" in
   * "hopping 1 hour every 10 seconds"), each clause's text follows its words.
   */
  final case class Clauses(text: String, body: String, kindWords: Seq[String] = Nil) {
    private val words = commonWords ++ kindWords
    private val (leadText, clauses) = {
      val tokens = if (body.isEmpty) Array.empty[String] else body.split("\\s+")
      var current: Option[String] = None
      var lead = Vector.empty[String]
      val found = scala.collection.mutable.LinkedHashMap.empty[String, Vector[String]]
      var i = 0
      while (i < tokens.length) {
        val one = tokens(i).toLowerCase(Locale.ROOT)
        val two = if (i + 1 < tokens.length) s"$one ${tokens(i + 1).toLowerCase(Locale.ROOT)}" else one
        words.find(w => w == one || w == two) match {
          case Some(w) =>
            if (found.contains(w)) throw WindowError(s"'$text' says '$w' twice")
            found(w) = Vector.empty
            current = Some(w)
            i += w.split(" ").length
          case None =>
            current match {
              case Some(w) => found(w) = found(w) :+ tokens(i)
              case None => lead :+= tokens(i)
            }
            i += 1
        }
      }
      (lead.mkString(" "), found.map { case (k, v) => k -> v.mkString(" ") }.toMap)
    }

    def lead: String = leadText
    def clause(word: String): Option[String] = clauses.get(word)

    /** Fails on clauses the kind does not take. */
    def only(allowed: Seq[String]): Unit =
      clauses.keys.find(!allowed.contains(_)).foreach { w =>
        throw WindowError(s"'$text': this kind of window takes no '$w'" +
          (if (allowed.isEmpty) "" else s"; it takes ${allowed.mkString(", ")}"))
      }

    /** A clause's length; `what` names it in errors. */
    def length(value: String, what: String): TimeSpan = {
      if (value.isEmpty) throw WindowError(s"'$text' gives no $what")
      TimeSpan.parseLength(value)
    }

    def grace: Option[TimeSpan] = clause("grace").map(g => checkedGrace(length(g, "grace period")))
  }

  /** Whether `word` (either word of a two-word clause) starts a clause of some kind. */
  private[windowagg] def isClauseWord(word: String): Boolean = {
    val lowered = word.toLowerCase(Locale.ROOT)
    (commonWords ++ readers.flatMap(_.clauseWords)).exists(_.split(" ").contains(lowered))
  }

  private[windowagg] def grace(afterWindowEnd: String): TimeSpan = checkedGrace(TimeSpan.parse(afterWindowEnd))
  private[windowagg] def grace(afterWindowEnd: Duration): TimeSpan = checkedGrace(TimeSpan.of(afterWindowEnd, "the grace period"))
  private def checkedGrace(g: TimeSpan): TimeSpan = TimeSpan.nonNegative(g, "the grace period")

  private[windowagg] def graceSpec(grace: Option[TimeSpan]): String = grace.map(g => s" grace ${g.spec}").getOrElse("")
}
