"""Streaming state survives upgrades: checkpoints written by earlier releases restart on this one,
or, where this release cannot read their state layout's version, are refused with a message saying why.

Each fixture (state_fixtures.py) is a checkpoint left after the first half of a query's input. This
release restarts it on the second half; both runs' rows together must be exactly the batch result.
"""

import json
import os
import shutil

import pytest
from pyspark.errors import AnalysisException

import state_fixtures as sf
import windowagg

FIXTURES = sorted(
    (release, kind) for release in os.listdir(sf.FIXTURES_DIR) for kind in os.listdir(os.path.join(sf.FIXTURES_DIR, release))
)


def test_every_kind_has_a_fixture_of_the_previous_release():
    assert sorted(os.listdir(os.path.join(sf.FIXTURES_DIR, sf.PREVIOUS_RELEASE))) == sorted(sf.KINDS)


def recorded_version(checkpoint, layout):
    """The layout's version in the checkpoint's state record; 0.1.0 kept none, and wrote every layout's first version."""
    record = os.path.join(checkpoint, "windowagg", "state.json")
    if not os.path.exists(record):
        return 1
    with open(record) as f:
        (operator,) = json.load(f)["operators"]
    assert operator["layout"] == layout
    return operator["version"]


@pytest.mark.parametrize("release, kind", FIXTURES)
def test_a_checkpoint_of_an_earlier_release_restarts_or_is_refused_saying_why(spark, release, kind, tmp_path):
    fixture = os.path.join(sf.FIXTURES_DIR, release, kind)
    with open(os.path.join(fixture, "about.json")) as f:
        about = json.load(f)
    assert about["written_by"] == f"windowagg {release}"
    with open(os.path.join(fixture, "first_output.json")) as f:
        first = [tuple(r) for r in json.load(f)]
    checkpoint = str(tmp_path / "checkpoint")
    shutil.copytree(os.path.join(fixture, "checkpoint"), checkpoint)
    sf.relocate(checkpoint)

    layout = sf.LAYOUTS[kind]
    version = recorded_version(checkpoint, layout)
    low, high = sf.READS[layout]
    first_half, second_half = sf.halves()
    if not low <= version <= high:
        with pytest.raises(AnalysisException) as refused:
            sf.run_stream(spark, windowagg, kind, checkpoint, [second_half, *sf.flushes()])
        message = str(refused.value)
        assert refused.value.getCondition() == "WINDOWAGG_CHECKPOINT_MISMATCH", message
        assert f"its '{layout}' state is version {version}" in message, message
        reads = f"version {high}" if low == high else f"versions {low} to {high}"
        assert f"reads {reads} only" in message, message
        assert "start it from a new checkpoint location" in message, message
        return
    second = sf.run_stream(spark, windowagg, kind, checkpoint, [second_half, *sf.flushes()])

    batch = sf.aggregated(spark.createDataFrame(first_half + second_half, sf.SCHEMA), windowagg, kind, streaming=False)
    expected = sorted(tuple(r) for r in batch.collect())
    emitted = first + second
    got = sf.latest(emitted) if about["emit"] == "updates" else sorted(r[1:] for r in emitted)
    assert len(first) == about["rows_emitted"]
    assert second, f"{kind}: the restarted query emitted nothing"
    assert got == expected, f"{kind} (written by {about['written_by']}): restart differs from batch"

    # the restart recorded what the state holds, as this release writes it, for the next restart's check
    with open(os.path.join(checkpoint, "windowagg", "state.json")) as f:
        record = json.load(f)
    assert [op["fields"]["window"] for op in record["operators"]] == [sf.KINDS[kind][0](windowagg).spec]
    assert [(op["layout"], op["version"]) for op in record["operators"]] == [(layout, high)]
