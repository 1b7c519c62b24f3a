"""Shared fixtures: one local Spark session with windowagg for the whole test run."""

import os
import sys

import pytest

# The helpers beside this file (brute_force.py, helpers.py) are imported as plain modules.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession with the windowagg jar and extension, stopped after the run."""
    import windowagg

    session = windowagg.session(
        app_name="windowagg-tests",
        master="local[2]",
        config={
            "spark.sql.shuffle.partitions": "4",
            "spark.ui.enabled": "false",
            # Timestamps are compared as epoch microseconds; a fixed zone keeps the
            # TIMESTAMP_NTZ <-> TIMESTAMP casts in the tests exact.
            "spark.sql.session.timeZone": "UTC",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
