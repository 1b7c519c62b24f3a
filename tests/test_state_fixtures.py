"""Streaming state survives upgrades: checkpoints written by earlier releases restart on this one,
or, where this release cannot read their state layout's version, are refused with a message saying why.

Each fixture (state_fixtures.py) is a checkpoint left after the first half of a query's input. This
release restarts it on the second half; both runs' rows together must be exactly the batch result.
"""

import json
import os
import re
import shutil

import pytest
from pyspark.errors import AnalysisException

import state_fixtures as sf
import windowagg

FIXTURES = sorted(
    (release, kind) for release in os.listdir(sf.FIXTURES_DIR) for kind in os.listdir(os.path.join(sf.FIXTURES_DIR, release))
)


def test_the_latest_fixtures_cover_every_kind_and_the_upgrade_of_every_converted_layout():
    """The next release is held to this one's fixtures: every kind's, and a checkpoint this release
    upgraded from the previous one for each layout it converts (some keys converted, some not)."""
    names = sorted(os.listdir(os.path.join(sf.FIXTURES_DIR, sf.LATEST_FIXTURES)))
    upgraded = sorted(f"{kind}-from-{sf.PREVIOUS_RELEASE}" for kind in sf.UPGRADED_KINDS)
    assert names == sorted([*sf.FIXTURE_KINDS, *upgraded])
    assert sorted({sf.LAYOUTS[k] for k in sf.UPGRADED_KINDS}) == sorted(sf.CONVERTS)


def recorded(checkpoint, layout):
    """The layout's version in the checkpoint's state record and how its state is grouped: 0.1.0 kept no
    record, and wrote every layout's first version; records before 0.4.0 (format 1) name no grouping,
    all state being kept per key then."""
    record = os.path.join(checkpoint, "windowagg", "state.json")
    if not os.path.exists(record):
        return 1, "key"
    with open(record) as f:
        saved = json.load(f)
    (operator,) = saved["operators"]
    assert operator["layout"] == layout
    return operator["version"], operator["keying"] if saved["format"] >= 2 else "key"


@pytest.mark.parametrize("release, name", FIXTURES)
def test_a_checkpoint_of_an_earlier_release_restarts_or_is_refused_saying_why(spark, release, name, tmp_path):
    fixture = os.path.join(sf.FIXTURES_DIR, release, name)
    with open(os.path.join(fixture, "about.json")) as f:
        about = json.load(f)
    assert about["written_by"] == f"windowagg {release}"
    kind = about.get("kind", name)
    # rows an upgrading release processed after the first half, if any
    between = sf.rows_from_json(about.get("between", []))
    with open(os.path.join(fixture, "first_output.json")) as f:
        first = [tuple(r) for r in json.load(f)]
    checkpoint = str(tmp_path / "checkpoint")
    shutil.copytree(os.path.join(fixture, "checkpoint"), checkpoint)
    sf.relocate(checkpoint)

    layout = sf.LAYOUTS[kind]
    version, keying = recorded(checkpoint, layout)
    current, converts = sf.CURRENT[layout], sf.CONVERTS.get(layout)
    first_half, second_half = sf.halves()
    if version not in (current, converts):
        with pytest.raises(AnalysisException) as refused:
            sf.run_stream(spark, windowagg, kind, checkpoint, [second_half, *sf.flushes()])
        message = str(refused.value)
        assert refused.value.getCondition() == "WINDOWAGG_CHECKPOINT_MISMATCH", message
        assert f"its '{layout}' state is version {version}" in message, message
        assert f"reads version {current} and converts version {converts} (the previous release's) only" in message, message
        assert "from a new checkpoint location" in message, message
        return
    second = sf.run_stream(spark, windowagg, kind, checkpoint, [second_half, *sf.flushes()])

    batch = sf.aggregated(spark.createDataFrame(first_half + between + second_half, sf.SCHEMA), windowagg, kind, streaming=False)
    expected = sorted(tuple(r) for r in batch.collect())
    emitted = first + second
    got = sorted(r[1:] for r in emitted) if about["emit"] == "final" else sf.latest(emitted)
    assert len(first) == about["rows_emitted"]
    assert second, f"{kind}: the restarted query emitted nothing"
    assert got == expected, f"{kind} (written by {about['written_by']}): restart differs from batch"

    # the restart recorded what the state holds, as this release writes it, for the next restart's check
    with open(os.path.join(checkpoint, "windowagg", "state.json")) as f:
        record = json.load(f)
    # table windows are recorded by their windows, not by the name of the view they were read from
    spec = re.sub(r"^table \S+", "table windows", sf.FIXTURE_KINDS[kind][0](windowagg).spec)
    assert [op["fields"]["window"].split(" (")[0] for op in record["operators"]] == [spec]
    # the state stays grouped as it was written: by key before 0.4.0
    assert [(op["layout"], op["version"], op["keying"]) for op in record["operators"]] == [(layout, current, keying)]
