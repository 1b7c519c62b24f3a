"""A kind of window is chosen once in jvm/spark: the Spark adapters ask its engine
(windowagg.spark.common.Engine) what they need, never its type, so that a new kind needs no change
there unless it needs a new engine. Read from the sources; no Spark needed."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPARK_SOURCES = os.path.join(ROOT, "jvm", "spark", "src", "main", "scala")
CORE_SOURCES = os.path.join(ROOT, "jvm", "core", "src", "main", "scala", "windowagg")

# The places that may test a kind's type, and why
ALLOWED = {
    "windowagg/spark/common/Engine.scala": "the one choice of engine, from the resolved windows",
    "windowagg/spark/common/WindowsTable.scala": "a table's windows are read from Spark at analysis",
}


def kind_types() -> set:
    """Every kind's type: the definitions of jvm/core (one file each, *Windows.scala) and the engine's
    contract their resolved forms implement (windowagg.core)."""
    names = {name[: -len(".scala")] for name in os.listdir(CORE_SOURCES) if name.endswith("Windows.scala")}
    with open(os.path.join(CORE_SOURCES, "core", "ResolvedWindows.scala"), encoding="utf-8") as handle:
        names |= set(re.findall(r"^trait (\w+Windows)\b", handle.read(), re.MULTILINE))
    return names


def type_tests(source: str, types: set) -> list:
    """The lines of `source` that test a value against a kind's type (a pattern or a cast)."""
    kind = r"(?:%s)(?:\.\w+)?\b" % "|".join(sorted(types))
    # a typed pattern after `case` (alone or inside a tuple), or a cast; not a case class's parameters
    pattern = re.compile(r"\bcase\b(?!\s+(?:class|object)\b).*?[\s(,]\w+\s*:\s*%s" % kind)
    cast = re.compile(r"(?:isInstanceOf|asInstanceOf)\[%s" % kind)
    code = re.sub(r"/\*.*?\*/", "", source, flags=re.DOTALL)
    lines = (line.split("//")[0] for line in code.splitlines())
    return [line.strip() for line in lines if pattern.search(line) or cast.search(line)]


def test_only_the_engine_and_the_table_reader_test_a_kinds_type():
    types = kind_types()
    assert {"SlidingWindows", "ListedWindows", "TableWindows", "ResolvedWindows", "RowWindows", "MergingWindows"} <= types
    found = {}
    for folder, _dirs, files in os.walk(SPARK_SOURCES):
        for name in files:
            if name.endswith(".scala"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    lines = type_tests(handle.read(), types)
                if lines:
                    found[os.path.relpath(path, SPARK_SOURCES).replace(os.sep, "/")] = lines
    assert set(found) <= set(ALLOWED), {path: lines for path, lines in found.items() if path not in ALLOWED}
    assert set(found) == set(ALLOWED), f"{set(ALLOWED) - set(found)} no longer test a kind's type: drop them from ALLOWED"


def test_a_type_test_is_found_in_every_form():
    types = {"RowWindows", "ListedWindows"}
    source = """
      case r: RowWindows => r
      case _: ListedWindows.Resolved => 1
      case (_: ListedWindows, None) => 2
      case (Some(x), l: RowWindows) => 3
      windows.isInstanceOf[RowWindows]
      spec.windows.asInstanceOf[ListedWindows.Resolved]
      // case r: RowWindows => in a comment
      /** case r: RowWindows => in a doc comment */
      def rows: Option[RowWindows] = None
      final case class Listed(windows: ListedWindows.Resolved) extends Engine
      case Some(kind) => kind.rowCursor(0L, rows: Iterator[Timed[P]])
    """
    assert len(type_tests(source, types)) == 6
