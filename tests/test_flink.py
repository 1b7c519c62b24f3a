"""Flink as a live reference: the Nexmark differential (bench/nexmark/differential.py) on a small input.

The generated bids (with the hand-made edge bids: exactly one session gap apart, on window bounds, at a
UTC midnight) go through Apache Flink 2.3 (its SQL window functions, local mode, one task slot), through
windowagg in batch and in streaming (a file stream, one file per micro-batch, final emission) and through
Spark's built-ins where they exist; every query's rows must be the same multiset in all of them, and the
edge keys' rows equal the rows worked out by hand. Flink's virtualenv is set up by dev/test
(bench/nexmark/setup-flink).
"""

import contextlib
import io
import json
import os
import sys

import pytest

from conftest import ROOT

import windowagg

sys.path.insert(0, os.path.join(ROOT, "bench", "nexmark"))
import differential as differential_run  # noqa: E402 (bench/nexmark, put on the path just above)

FLINK_PYTHON = os.path.join(ROOT, ".venv-flink", "bin", "python")
QUERIES = ("q5_counts", "q5", "q7", "q11", "cumulative")
# the queries Spark has a built-in for (cumulative has none)
SPARK_BUILT_IN = {"q5_counts", "q5", "q7", "q11"}


@pytest.fixture(scope="module")
def differential(spark, tmp_path_factory):
    """The differential's summary and printout; its Spark side runs in a session of the tests' own Spark,
    its Flink job beside it in a child process."""
    if not os.path.exists(FLINK_PYTHON):
        pytest.fail(f"Flink's virtualenv is missing ({FLINK_PYTHON}): bench/nexmark/setup-flink installs it, "
                    "as dev/test does")
    work = tmp_path_factory.mktemp("nexmark-differential") / "work"
    summary = work.parent / "summary.json"
    session = spark.newSession()
    for key, value in {"spark.sql.execution.arrow.pyspark.enabled": "true",
                       "spark.sql.adaptive.coalescePartitions.enabled": "false",
                       "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}.items():
        session.conf.set(key, value)
    # 2,000 events at 50 per second of event time: 40 s of bids, ending 100 ms after a UTC midnight (the
    # cumulative query's day changes), streamed in three micro-batches (two files and the flush)
    args = ["--events", "2000", "--rate", "50", "--after-midnight-ms", "100", "--files", "2",
            "--queries", ",".join(QUERIES), "--jar", windowagg.jar_path(), "--flink-python", FLINK_PYTHON,
            "--work", str(work), "--summary", str(summary), "--flink-timeout", "300", "--stream-timeout", "300"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = differential_run.main(args, spark=session)
    if not summary.exists():
        pytest.fail(f"the differential wrote no summary (exit {code}):\n{printed.getvalue()[-4000:]}")
    return {"summary": json.loads(summary.read_text()), "output": printed.getvalue(), "returncode": code}


def test_every_engine_ran_and_nothing_differs(differential):
    summary = differential["summary"]
    assert summary["failures"] == [], differential["output"][-4000:]
    assert summary["total_mismatches"] == 0, differential["output"][-4000:]
    assert summary["ok"] and differential["returncode"] == 0
    assert summary["input"]["bids"] == summary["input"]["generated_bids"] + summary["input"]["edge_bids"] > 1500


@pytest.mark.parametrize("query", QUERIES)
def test_windowagg_in_batch_and_streaming_and_sparks_built_ins_equal_flink(differential, query):
    result = differential["summary"]["queries"][query]
    engines = {"flink", "wa_batch", "wa_stream"} | ({"spark"} if query in SPARK_BUILT_IN else set())
    assert set(result["rows"]) == engines
    assert len(set(result["rows"].values())) == 1 and result["rows"]["flink"] > 0, result["rows"]
    compared = {f"{other} vs flink" for other in engines - {"flink"}} | {"wa_stream vs wa_batch"}
    assert set(result["comparisons"]) == compared
    assert all(c["mismatches"] == 0 for c in result["comparisons"].values()), result["comparisons"]
    stream = result["facts"]["wa_stream"]
    assert stream["data_batches"] == 3 and not any(stream["windowagg_metrics"].values()), stream


@pytest.mark.parametrize("query", ("q5_counts", "q7", "q11", "cumulative"))
def test_the_edge_bids_give_the_rows_worked_out_by_hand_in_every_engine(differential, query):
    checks = differential["summary"]["queries"][query]["edge_check"]
    assert set(checks) == set(differential["summary"]["queries"][query]["rows"])
    for engine, check in checks.items():
        assert check["mismatches"] == 0 and check["got"] == check["expected"] > 0, (engine, check)
