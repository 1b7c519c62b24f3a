"""The demo (examples/python/demo.py, what dev/demo runs), batch and streaming, on small inputs.

Each run is a child process with its own Spark, as dev/demo starts it. The batch windows that end at
a click are checked against Spark's own RANGE frame over the same generated clicks.
"""

import os
import subprocess
import sys

from pyspark.sql import Window
from pyspark.sql import functions as F

from conftest import ROOT, child_env

DEMO = os.path.join(ROOT, "examples", "python", "demo.py")
sys.path.insert(0, os.path.dirname(DEMO))

from demo import generate_clicks  # noqa: E402 (examples/python is put on the path just above)

USERS, EVENTS = 30, 3000


def run_demo(*args):
    done = subprocess.run(
        [sys.executable, DEMO, "--master", "local[2]", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=child_env(),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_batch_demo_writes_every_users_sliding_windows(spark, tmp_path):
    out = str(tmp_path / "demo")
    printed = run_demo("--users", str(USERS), "--events", str(EVENTS), "--out", out)
    assert f"{EVENTS} clicks of {USERS} users ->" in printed
    assert "the window, both ends included" in printed  # the columns are described
    assert os.path.getsize(os.path.join(out, "busiest-users.png")) > 10_000

    windows = spark.read.parquet(os.path.join(out, "windows"))
    clicks = generate_clicks(spark, USERS, EVENTS)
    frame = Window.partitionBy("user_id").orderBy("event_time").rangeBetween(-600_000_000, 0)
    micros = clicks.withColumn("event_time", F.unix_micros("event_time"))
    over = (
        micros.select(
            "user_id",
            "event_time",
            F.count(F.lit(1)).over(frame).alias("clicks"),
            F.sum("dwell_ms").over(frame).alias("total_dwell_ms"),
            F.max("dwell_ms").over(frame).alias("max_dwell_ms"),
        )
        .distinct()
        .withColumnRenamed("event_time", "window_end")
    )
    # the windows ending at a click are exactly the RANGE frames ending there, one per distinct click time
    ending_at_clicks = windows.withColumn("window_end", F.unix_micros("window_end")).join(
        micros.select("user_id", F.col("event_time").alias("window_end")).distinct(), ["user_id", "window_end"]
    )
    got = sorted(tuple(r) for r in ending_at_clicks.select(*over.columns).collect())
    expected = sorted(tuple(r) for r in over.collect())
    assert len(expected) > 1000
    assert got == expected


def test_streaming_demo_writes_final_windows_and_late_clicks_apart(tmp_path):
    out = str(tmp_path / "stream")
    printed = run_demo(
        "--streaming", "--users", "10", "--events", "800", "--files", "4", "--land-every", "0", "--out", out
    )
    assert "800 clicks read in" in printed
    assert "Final windows written:" in printed
    assert "Clicks routed aside, by late_reason:" in printed
    assert os.listdir(os.path.join(out, "windows"))
    assert os.path.getsize(os.path.join(out, "micro-batches.png")) > 10_000
