"""The wheel carries the windowagg jar: without it built, `pip install ./python` stops with one line.

Everything else about the package is in pyproject.toml.
"""

import glob
import os
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))

if not glob.glob(os.path.join(HERE, "windowagg", "jars", "windowagg-*.jar")):
    sys.exit(
        "windowagg: the jar this package carries is not built; run dev/package from the repository root "
        "(it builds the jar and installs the package into .venv)"
    )

setup()
