"""Writes state fixtures (see state_fixtures.py) with whichever windowagg is importable, under its version.

    python tests/make_state_fixtures.py sliding session      # e.g. with 0.1.0 on PYTHONPATH and WINDOWAGG_JAR

dev/make-state-fixtures runs it with each release that writes fixtures.
"""

import json
import os
import shutil
import sys

import pyspark
from pyspark.sql import SparkSession

import state_fixtures as sf
import windowagg


def main(kinds):
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("windowagg state fixtures")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
    )
    spark = windowagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    first_half, _ = sf.halves()
    for kind in kinds:
        out = os.path.join(sf.FIXTURES_DIR, windowagg.__version__, kind)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        emitted = sf.run_stream(spark, windowagg, kind, os.path.join(out, "checkpoint"), [first_half])
        with open(os.path.join(out, "first_output.json"), "w") as f:
            json.dump(emitted, f)
        with open(os.path.join(out, "about.json"), "w") as f:
            about = {
                "kind": kind,
                "written_by": f"windowagg {windowagg.__version__}",
                "pyspark": pyspark.__version__,
                "definition": repr(sf.KINDS[kind][0](windowagg)),
                "emit": sf.KINDS[kind][1],
                "rows_emitted": len(emitted),
            }
            json.dump(about, f, indent=2)
            f.write("\n")
        print(f"{kind}: windowagg {windowagg.__version__}, {len(emitted)} rows emitted, checkpoint in {out}")
    spark.stop()


if __name__ == "__main__":
    unknown = [k for k in sys.argv[1:] if k not in sf.KINDS]
    if unknown or len(sys.argv) < 2:
        sys.exit(f"usage: make_state_fixtures.py KIND...; kinds: {', '.join(sf.KINDS)}")
    main(sys.argv[1:])
