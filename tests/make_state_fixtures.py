"""Writes state fixtures (see state_fixtures.py) with whichever windowagg is importable, under its version.

    python tests/make_state_fixtures.py sliding session      # e.g. with 0.1.0 on PYTHONPATH and WINDOWAGG_JAR
    python tests/make_state_fixtures.py --upgrade 0.3.0 sliding session count

The first writes each kind's checkpoint after the first half of the input. With --upgrade RELEASE,
each kind's fixture of that earlier release is restarted instead on a few rows of some keys
(state_fixtures.between()): a checkpoint this release upgraded, with keys converted and keys not,
for the next release to restart (named <kind>-from-<release>).
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


def write_about(out, kind, emitted, **extra):
    with open(os.path.join(out, "first_output.json"), "w") as f:
        json.dump(emitted, f)
    with open(os.path.join(out, "about.json"), "w") as f:
        about = {
            "kind": kind,
            "written_by": f"windowagg {windowagg.__version__}",
            "pyspark": pyspark.__version__,
            "definition": repr(sf.FIXTURE_KINDS[kind][0](windowagg)),
            "emit": sf.FIXTURE_KINDS[kind][1],
            "rows_emitted": len(emitted),
            **extra,
        }
        json.dump(about, f, indent=2)
        f.write("\n")


def main(kinds, upgrade_from=None):
    # Python windows' functions run in workers of this interpreter, which has pandas and pyarrow
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("windowagg state fixtures")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
    )
    # the user-defined JVM kinds of the examples jar (WINDOWAGG_EXAMPLES_JAR), for releases that have them
    examples = os.environ.get("WINDOWAGG_EXAMPLES_JAR")
    if examples:
        builder = builder.config("spark.jars", examples)
    spark = windowagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    first_half, _ = sf.halves()
    for kind in kinds:
        if upgrade_from:
            name = f"{kind}-from-{upgrade_from}"
            out = os.path.join(sf.FIXTURES_DIR, windowagg.__version__, name)
            shutil.rmtree(out, ignore_errors=True)
            earlier = os.path.join(sf.FIXTURES_DIR, upgrade_from, kind)
            shutil.copytree(os.path.join(earlier, "checkpoint"), os.path.join(out, "checkpoint"))
            sf.relocate(os.path.join(out, "checkpoint"))
            with open(os.path.join(earlier, "first_output.json")) as f:
                before = json.load(f)
            between = sf.between()
            emitted = before + sf.run_stream(spark, windowagg, kind, os.path.join(out, "checkpoint"), [between])
            write_about(out, kind, emitted, upgraded_from=upgrade_from, between=sf.rows_as_json(between))
        else:
            name = kind
            out = os.path.join(sf.FIXTURES_DIR, windowagg.__version__, kind)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            emitted = sf.run_stream(spark, windowagg, kind, os.path.join(out, "checkpoint"), [first_half])
            write_about(out, kind, emitted)
        print(f"{name}: windowagg {windowagg.__version__}, {len(emitted)} rows emitted, checkpoint in {out}")
    spark.stop()


if __name__ == "__main__":
    args = sys.argv[1:]
    upgrade_from = None
    if args[:1] == ["--upgrade"]:
        upgrade_from, args = args[1], args[2:]
    unknown = [k for k in args if k not in sf.FIXTURE_KINDS]
    if unknown or not args:
        sys.exit(f"usage: make_state_fixtures.py [--upgrade RELEASE] KIND...; kinds: {', '.join(sf.FIXTURE_KINDS)}")
    main(args, upgrade_from)
