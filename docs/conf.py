"""Sphinx configuration of the windowagg reference manual, built by dev/docs.

The pages under docs/ stay Markdown (MyST), so they read the same on GitHub; the Python API pages
come from the package's docstrings (autodoc) under the JVM classes' names (windowagg.SlidingWindows,
windowagg.window, ...). dev/docs copies the Scala API docs (scaladoc) into the HTML tree beside them.
"""

import os
import re
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)
# Document the package of this source tree, not whichever windowagg an environment has installed.
sys.path.insert(0, os.path.join(ROOT, "python"))

import windowagg  # noqa: E402 (after the path above)
from pygments.lexers.special import TextLexer  # noqa: E402
from sphinx import highlighting  # noqa: E402

project = "windowagg"
release = windowagg.__version__
version = release
copyright = "the windowagg authors"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"

# Anchors for links such as semantics.md#streaming, as GitHub makes them.
myst_heading_anchors = 4

# Every cross-reference must resolve (with -W, dev/docs fails on one that does not); types from
# PySpark and the standard library are named in signatures without pages of their own here.
nitpicky = True
nitpick_ignore_regex = [
    ("py:class", r"pyspark\..*"),
    ("py:class", r"(Column|DataFrame|SparkSession\.Builder|SparkSession)"),
    ("py:class", r"datetime\.(timedelta|datetime)"),
    ("py:class", r"(SizeLike|GraceLike)"),
]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True}

# architecture.md's diagram is Mermaid, which GitHub draws; the manual shows its text as it is.
highlighting.lexers["mermaid"] = TextLexer()

html_theme = "furo"
html_title = f"windowagg {release}"


# The Markdown files of the repository's root that the manual includes, each by a page of its own:
# docs/readme.md includes the README, docs/changelog.md the changelog.
_INCLUDED = {"README.md": "readme.md", "CHANGELOG.md": "changelog.md"}
# A relative link of theirs (a Markdown link's target: not a URL, not an anchor) is relative to the
# repository's root; the pages that include them are in docs/.
_RELATIVE_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)")


def _included_links_from_docs(app, relative_path, parent_docname, content):
    included = os.path.normpath(os.path.join(DOCS, relative_path))
    if included not in {os.path.join(ROOT, name) for name in _INCLUDED}:
        return

    def from_docs(match):
        target = match.group(1)
        name, anchor = target.partition("#")[::2]
        if name in _INCLUDED:
            return f"]({_INCLUDED[name]}{'#' + anchor if anchor else ''})"
        return f"]({target[len('docs/'):] if target.startswith('docs/') else '../' + target})"

    content[0] = _RELATIVE_LINK.sub(from_docs, content[0])


# A page under docs/ links to those files as GitHub shows them (../CHANGELOG.md); the manual has the
# page that includes them.
def _links_to_included_files(app, docname, source):
    for name, page in _INCLUDED.items():
        source[0] = source[0].replace(f"](../{name}", f"]({page}")


# Each window class's snake_case method names are the same methods (WindowDefinition says so once).
_ALIASES = {alias for cls in vars(windowagg).values() if isinstance(cls, type) and issubclass(cls, windowagg.WindowDefinition)
            for alias in cls._aliases}


def _skip_snake_case_aliases(app, what, name, obj, skip, options):
    return True if name in _ALIASES else None


def setup(app):
    app.connect("include-read", _included_links_from_docs)
    app.connect("source-read", _links_to_included_files)
    app.connect("autodoc-skip-member", _skip_snake_case_aliases)
