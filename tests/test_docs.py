"""Every example of the reference manual (dev/docs) runs, so none goes stale.

- The docstring examples of the Python package (its API pages) run as doctests against a Spark
  session with windowagg, in a namespace holding ``spark`` and ``windowagg``: their outputs are
  checked.
- The code blocks of the README and of the pages under docs/ run in order, page by page in one
  namespace: Python blocks (sessions, ``pycon`` or ``>>>``, with their outputs checked) and SQL
  statements (a streaming query is analysed, a batch one collected). An example that writes files
  makes its own folder for them.
  Shell, text and diagram blocks are not code to run. A Scala block is run by the Scala example
  (examples/scala, run by dev/scala-example): it says which file just above it,
  ``<!-- run by path -->``, and its lines must be that file's, in order. A block that cannot run
  here says why just above it: ``<!-- not run: reason -->``.
- The manual builds without a warning, every part of it: dev/docs, the pages, the Python API and
  the Scala API docs (scaladoc, whose broken links fail it) with the pages' links into them.
"""

import doctest
import glob
import os
import re
import subprocess
import sys
from typing import List, NamedTuple, Optional

import pytest
from markdown_it import MarkdownIt

import windowagg
import windowagg._session
import windowagg.functions
import windowagg.windows

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The pages of the manual: docs/index.md and docs/readme.md (which includes the README) hold no code.
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
# As PySpark's own doctests: show()'s column padding and trailing blank line do not matter.
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

RUN = {"python", "pycon", "sql"}
# Commands for a terminal, program output and diagrams; MyST directives ({toctree}, {include}) are
# not code either.
NOT_CODE = {"", "text", "bash", "sh", "shell", "console", "mermaid"}
NOT_RUN_MARKER = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>\S.*?)\s*-->\s*$")
RUN_BY_MARKER = re.compile(r"^\s*<!--\s*run by\s+(?P<path>\S+)\s*-->\s*$")


# --- docstrings ------------------------------------------------------------------------------------


def docstring_examples() -> List[doctest.DocTest]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    modules = [windowagg, windowagg._session, windowagg.functions, windowagg.windows]
    tests = (test for module in modules for test in finder.find(module) if test.examples)
    return sorted(tests, key=lambda test: test.name)


DOCSTRING_EXAMPLES = docstring_examples()


def test_main_entry_points_have_examples():
    names = {test.name for test in DOCSTRING_EXAMPLES}
    entry_points = [
        "windowagg.functions.window",
        "windowagg.functions.new_rows",
        "windowagg.functions.expired_rows",
        "windowagg.functions.metrics",
        "windowagg._session.session",
        "windowagg.windows.WindowDefinition.spec",
    ] + [
        f"windowagg.windows.{kind}"
        for kind in ("SlidingWindows", "SessionWindows", "TimeWindows", "CumulativeWindows", "CalendarWindows",
                     "UnlimitedWindows", "CountWindows", "DurationWindows", "CustomWindows", "TableWindows", "ListedWindows",
                     "PythonWindows")
    ]
    assert [name for name in entry_points if name not in names] == []


def run_doctest(test: doctest.DocTest) -> Optional[str]:
    """None when every example of ``test`` printed what it shows, else the doctest report."""
    report: List[str] = []
    runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
    runner.run(test, out=report.append, clear_globs=False)
    return "".join(report) if runner.failures else None


@pytest.mark.parametrize("example", DOCSTRING_EXAMPLES, ids=lambda test: test.name)
def test_docstring_example(spark, example):
    example.globs = {"spark": spark, "windowagg": windowagg}
    failure = run_doctest(example)
    assert failure is None, failure


# --- the Markdown pages ----------------------------------------------------------------------------


class Block(NamedTuple):
    page: str
    line: int  # of the opening fence, from 1
    language: str
    code: str
    not_run: Optional[str]  # the marker's reason
    run_by: Optional[str]  # the file of another build that holds and runs the block

    @property
    def runs(self) -> bool:
        return self.language in RUN and self.not_run is None

    @property
    def is_code(self) -> bool:
        return self.language not in NOT_CODE and not self.language.startswith("{")


def code_blocks(page: str) -> List[Block]:
    """The fenced code blocks of ``page``, as MyST (the manual) and GitHub parse them."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as handle:
        text = handle.read()
    lines = text.splitlines()
    blocks = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type != "fence":
            continue
        first = token.map[0]
        above = lines[first - 1] if first > 0 else ""
        marker = NOT_RUN_MARKER.match(above)
        run_by = RUN_BY_MARKER.match(above)
        language = token.info.split()[0].lower() if token.info.strip() else ""
        blocks.append(Block(page, first + 1, language, token.content, marker and marker.group("reason"),
                            run_by and run_by.group("path")))
    return blocks


RUNNABLE_PAGES = [page for page in PAGES if any(block.runs for block in code_blocks(page))]


def test_every_block_runs_or_says_why():
    unrunnable = [
        f"{block.page}:{block.line}: a {block.language} block"
        for page in PAGES
        for block in code_blocks(page)
        if block.is_code and not block.runs and block.not_run is None and block.run_by is None
    ]
    assert unrunnable == [], "mark each with <!-- not run: reason --> on the line above it"
    assert {"README.md", "docs/streaming.md"} <= set(RUNNABLE_PAGES)


SCALA_BLOCKS = [block for page in PAGES for block in code_blocks(page) if block.language == "scala"]


@pytest.mark.parametrize("block", SCALA_BLOCKS, ids=lambda block: f"{block.page}:{block.line}")
def test_scala_block_is_in_the_scala_example(block):
    """The block's lines, in order, are lines of the file that runs it (indentation aside)."""
    assert block.run_by, "a Scala block says which file of examples/scala runs it: <!-- run by path -->"
    with open(os.path.join(ROOT, block.run_by), encoding="utf-8") as handle:
        file_lines = [line.strip() for line in handle]
    at = 0
    for line in (line.strip() for line in block.code.splitlines() if line.strip()):
        assert line in file_lines[at:], f"{block.page}:{block.line}: not in {block.run_by} (after line {at}): {line}"
        at = file_lines.index(line, at) + 1


def run_python(block: Block, namespace: dict) -> None:
    if re.search(r"^\s*>>> ", block.code, re.MULTILINE):
        name = f"{block.page}:{block.line}"
        test = doctest.DocTestParser().get_doctest(block.code, namespace, name, block.page, block.line)
        failure = run_doctest(test)
        namespace.update(test.globs)
        assert failure is None, failure
    else:
        # padded so that a traceback gives the page's own line numbers
        exec(compile("\n" * block.line + block.code, block.page, "exec"), namespace)


def sql_statements(code: str) -> List[str]:
    """The statements of a SQL block, without comments, split at semicolons outside quotes."""
    statements, current, quote, i = [], [], None, 0
    while i < len(code):
        char = code[i]
        if quote:
            current.append(char)
            if char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
            current.append(char)
        elif code.startswith("--", i):
            i = code.find("\n", i)
            if i < 0:
                break
            continue
        elif char == ";":
            statements.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    statements.append("".join(current))
    return [statement.strip() for statement in statements if statement.strip()]


def run_sql(block: Block, spark) -> None:
    for statement in sql_statements(block.code):
        df = spark.sql(statement)
        if not df.isStreaming:
            df.collect()


def temp_views(spark) -> set:
    return {table.name for table in spark.catalog.listTables() if table.isTemporary}


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_page_examples(spark, page):
    namespace = {"__name__": "__main__"}
    views = temp_views(spark)
    try:
        for block in code_blocks(page):
            if not block.runs:
                continue
            if block.language in ("python", "pycon"):
                run_python(block, namespace)
            else:
                run_sql(block, spark)
    finally:
        for query in spark.streams.active:
            query.stop()
        for view in temp_views(spark) - views:
            spark.catalog.dropTempView(view)


# --- the build -------------------------------------------------------------------------------------


def test_manual_builds_without_warnings():
    # under dev/test, whose sbt run has just built the Scala API docs (a broken link fails it there)
    built = os.environ.get("WINDOWAGG_SCALADOC_BUILT")
    build = subprocess.run(
        [os.path.join(ROOT, "dev", "docs"), *(["--scaladoc-from", built] if built else [])],
        capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    html = os.path.join(ROOT, "target", "docs", "html")
    assert os.path.isfile(os.path.join(html, "python-api.html"))
    assert os.path.isfile(os.path.join(html, "scaladoc", "windowagg", "functions$.html"))
