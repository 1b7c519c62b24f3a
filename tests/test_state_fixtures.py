"""Streaming state survives upgrades: checkpoints written by earlier releases restart on this one,
or, where the state layout changed since, are refused with a message saying why.

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

FIXTURES = sorted(os.listdir(sf.FIXTURES_DIR))


def test_every_kind_has_a_fixture():
    assert FIXTURES == sorted(sf.KINDS)


@pytest.mark.parametrize("kind", FIXTURES)
def test_a_checkpoint_of_an_earlier_release_restarts_with_the_same_results(spark, kind, tmp_path):
    fixture = os.path.join(sf.FIXTURES_DIR, kind)
    with open(os.path.join(fixture, "about.json")) as f:
        about = json.load(f)
    with open(os.path.join(fixture, "first_output.json")) as f:
        first = [tuple(r) for r in json.load(f)]
    checkpoint = str(tmp_path / "checkpoint")
    shutil.copytree(os.path.join(fixture, "checkpoint"), checkpoint)

    first_half, second_half = sf.halves()
    if kind in sf.LAYOUT_CHANGED:
        layout, old, new = sf.LAYOUT_CHANGED[kind]
        with pytest.raises(AnalysisException) as refused:
            sf.run_stream(spark, windowagg, kind, checkpoint, [second_half, *sf.flushes()])
        message = str(refused.value)
        assert refused.value.getCondition() == "WINDOWAGG_CHECKPOINT_MISMATCH", message
        assert f"its '{layout}' state is version {old}" in message, message
        assert f"reads version {new} only" in message, message
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

    # the restart recorded what the state holds, for the next restart's check
    with open(os.path.join(checkpoint, "windowagg", "state.json")) as f:
        record = json.load(f)
    assert [op["fields"]["window"] for op in record["operators"]] == [sf.KINDS[kind][0](windowagg).spec]
