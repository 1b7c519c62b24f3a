"""A job with the windowagg jar but without its session extension (spark-submit --jars, no
spark.sql.extensions) fails at analysis with one message that says how to fix it, never with an
internal code-generation error. Runs in a child process: a JVM holds one SparkContext, and the
tests' own session has the extension."""

import subprocess
import sys
import textwrap

from conftest import child_env

CHILD = textwrap.dedent(
    """
    import windowagg
    from pyspark.sql import SparkSession, functions as F
    from pyspark.errors import AnalysisException

    spark = (SparkSession.builder.master("local[1]").config("spark.jars", windowagg.jar_path())
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.range(3).select(F.timestamp_seconds("id").alias("ts"), F.col("id").alias("v"))
    attempts = {
        "window": lambda: df.groupBy(windowagg.window("ts", windowagg.SlidingWindows.of("1 minute"))).count().collect(),
        "view": lambda: df.groupBy(windowagg.window("ts", windowagg.CountWindows.of(2)))
            .agg(windowagg.new_rows(F.count("*"))).collect(),
    }
    for name, attempt in attempts.items():
        try:
            attempt()
            print(name, "NO ERROR")
        except AnalysisException as error:
            print(name, "ANALYSIS", str(error).replace("\\n", " "))
        except Exception as error:
            print(name, "OTHER", type(error).__name__, str(error).replace("\\n", " ")[:300])
    spark.stop()
    """
)


def test_a_session_without_the_extension_gets_one_message_at_analysis():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, env=child_env())
    lines = [line for line in done.stdout.splitlines() if line.split(" ")[0] in ("window", "view")]
    assert len(lines) == 2, done.stdout + done.stderr[-3000:]
    for line in lines:
        assert " ANALYSIS " in line, line
        assert "spark.sql.extensions=windowagg.spark.WindowAggExtensions" in line, line
        assert "INTERNAL_ERROR" not in line and "Cannot generate code" not in line, line
