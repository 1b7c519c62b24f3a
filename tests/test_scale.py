"""Opt-in scale run (WINDOWAGG_SCALE_TESTS=1): one key with 20 million rows in the default driver.

The session of the test run is started without a driver memory setting, so the driver has Spark's
default 1 GiB heap; the operator must stream the key through Spark's spilling sort instead of holding it.
"""

import os

import pytest
from pyspark.sql import functions as F

from windowagg import SlidingWindows, metrics, window

pytestmark = pytest.mark.skipif(
    os.environ.get("WINDOWAGG_SCALE_TESTS") != "1", reason="scale run: set WINDOWAGG_SCALE_TESTS=1"
)


def test_one_key_with_20_million_rows_in_the_default_driver(spark):
    rows, size = 20_000_000, 1000
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.memory", "1g") == "1g"
    # times 0..N-1 ms: N left windows, and right windows only for the last `size` times
    # (every earlier right window starts where a left window starts), so N + size windows.
    events = spark.range(rows).select(F.lit("k").alias("key"), F.col("id").alias("t"))
    out = events.groupBy("key", window("t", SlidingWindows.of(size))).agg(F.count("*").alias("n"))
    stats = out.agg(F.count("*").alias("windows"), F.max("n").alias("widest"), F.min("n").alias("narrowest"))
    result = stats.collect()[0]
    assert result["windows"] == rows + size
    assert result["widest"] == size + 1
    assert result["narrowest"] == 1
    assert metrics(stats)["inputRows"] == rows
