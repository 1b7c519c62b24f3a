"""Exactly-once output of streaming windowagg queries (sliding windows, sessions, count windows) whose
driver is killed (SIGKILL) and restarted.

The query (streaming_job.py) runs in a child process: its Python driver and the JVM it starts are
one process group, killed together with SIGKILL at several points of its progress, found by
watching files appear in the checkpoint, the sink's log and the output folder:
  1. as soon as the first Parquet file appears in the output: the first micro-batch with output
     (about the 2nd) is writing its files and has not committed;
  2. as soon as micro-batch 4 is planned (``offsets/4``), while it runs;
  3. as soon as the Parquet sink has committed micro-batch 7 (``_spark_metadata/7``), usually
     before the checkpoint commits it (``commits/7``).
Each time it restarts from the same checkpoint; the last run finishes. The Parquet output, read
through the sink's ``_spark_metadata`` (which leaves out the files of uncommitted micro-batches),
must then hold every window and every late row exactly once.
"""

import os
import random
import signal
import subprocess
import sys
import time

import pytest
from pyspark.sql import functions as F

import streaming_job
import streaming_support as ss

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "streaming_job.py")
FILES = 12
RUN_TIMEOUT = 180  # seconds, per run of the child


def job_input(rnd):
    """12 files of one minute of event time each, then a flush file. Rows of file i lie in
    [60 i - 15 s, 60 i + 59 s] and file i - 1 ends with a row at 60 (i - 1) + 59 s, so with a
    grace of 20 s no row is behind the watermark (60 i - 21 s), except the late rows: a few rows
    three minutes old. One row has a malformed time."""
    s = ss.SECOND
    chunks, late_ids, null_time_ids = [], [], []
    n = 0
    for i in range(FILES):
        chunk = []
        for _ in range(14):
            lo, hi = max(0, i * 60 - 15) * s, (i * 60 + 59) * s
            t = rnd.randrange(lo, hi) if rnd.random() < 0.3 else rnd.randrange(lo, hi, s)  # some with microseconds
            chunk.append(ss.event(n, rnd.choice(["k0", "k1", "k2", None]), t, rnd.randint(-5, 50), f"row {n}"))
            n += 1
        if i in (3, 5, 8, 10):
            chunk.append(ss.event(n, rnd.choice(["k0", None]), ((i - 3) * 60 + rnd.randrange(60)) * s, 7, "late"))
            late_ids.append(n)
            n += 1
        if i == 6:
            chunk.append(ss.event(n, "k1", None, 9, "no time"))
            null_time_ids.append(n)
            n += 1
        chunk.append(ss.event(n, f"k{i % 3}", (i * 60 + 59) * s, 1, "anchor"))
        n += 1
        rnd.shuffle(chunk)
        chunks.append(chunk)
    chunks.append([ss.flush_event(n)])
    return chunks, late_ids, null_time_ids


class Job:
    """One run of streaming_job.py in its own process group, with its output in a log file."""

    def __init__(self, tmp_path, run):
        self.log_path = tmp_path / f"job-{run}.log"
        self.log = open(self.log_path, "w")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, env.get("PYTHONPATH", "")] if p)
        args = [str(tmp_path / d) for d in ("in", "out", "checkpoint", "spark-local")]
        self.proc = subprocess.Popen(
            [sys.executable, JOB, *args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(tmp_path),
            start_new_session=True,  # the JVM that PySpark starts joins this process group
        )

    def output(self):
        self.log.flush()
        return self.log_path.read_text()[-3000:]

    def kill(self):
        """SIGKILL to the child's whole process group: Python driver and JVM at once."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.log.close()

    def wait_for(self, what, reached, timeout=RUN_TIMEOUT):
        """Polls until ``reached()``; the job must still be running then."""
        deadline = time.monotonic() + timeout
        while not reached():
            ended = self.proc.poll()
            assert ended is None, f"the job ended (code {ended}) before {what}:\n{self.output()}"
            assert time.monotonic() < deadline, f"no {what} within {timeout} s:\n{self.output()}"
            time.sleep(0.005)


def exists(path):
    return lambda: os.path.exists(path)


def parquet_files(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".parquet")) if os.path.isdir(folder) else []


def batch_ids(folder):
    return sorted(int(name) for name in os.listdir(folder) if name.isdigit()) if os.path.isdir(folder) else []


def test_exactly_once_across_driver_kills(spark, tmp_path):
    chunks, late_ids, null_time_ids = job_input(random.Random(4242))
    files = ss.write_files(str(tmp_path / "in"), chunks)
    checkpoint, out = tmp_path / "checkpoint", tmp_path / "out"
    kill_points = [
        ("a first output file", lambda: bool(parquet_files(out))),
        ("offsets/4", exists(checkpoint / "offsets" / "4")),
        ("_spark_metadata/7", exists(out / "_spark_metadata" / "7")),
    ]
    states = []
    job = None
    try:
        for run, (what, reached) in enumerate(kill_points):
            assert not reached(), f"an earlier run already got past {what}"
            job = Job(tmp_path, run)
            started = time.monotonic()
            job.wait_for(what, reached)
            job.kill()
            assert job.proc.returncode == -signal.SIGKILL, job.output()
            states.append(
                f"run {run} killed at {what} after {time.monotonic() - started:.1f} s: "
                f"offsets {batch_ids(checkpoint / 'offsets')}, commits {batch_ids(checkpoint / 'commits')}, "
                f"sink log {batch_ids(out / '_spark_metadata')}, {len(parquet_files(out))} output files"
            )
        job = Job(tmp_path, len(kill_points))
        code = job.proc.wait(timeout=RUN_TIMEOUT)
        assert code == 0 and "FINISHED" in job.output(), f"the last run failed (code {code}):\n{job.output()}"
    finally:
        if job is not None and job.proc.poll() is None:
            job.kill()
    print("\n".join(states))

    got = spark.read.parquet(str(out))
    assert got.columns == ["k", "window", *ss.AGGREGATE_NAMES, "late_reason", "late_row"]

    # windows: exactly the batch result on the rows that were on time
    windows = got.where("late_reason IS NULL").where(~F.col("k").eqNullSafe("flush"))
    on_time = ss.multiset(windows.drop("late_reason", "late_row").collect())
    rows = spark.read.schema(ss.SCHEMA).json(files[:-1])
    kept = rows.where(~F.col("id").isin(late_ids + null_time_ids))
    expected = ss.multiset(streaming_job.windows(kept).collect())
    assert len(expected) > 150
    assert on_time == expected, ss.describe_difference(on_time, expected)

    # late and null-time rows: each exactly once, with all its columns
    late = got.where("late_reason IS NOT NULL")
    consistent = F.col("k").eqNullSafe(F.col("late_row.k")) & F.col("n").isNull() & F.col("window.start").isNull()
    assert late.where(consistent).count() == late.count()
    got_late = ss.multiset(late.select("late_reason", "late_row").collect())
    reason = F.when(F.col("id").isin(late_ids), F.lit("late")).otherwise(F.lit("null time"))
    want_late = ss.multiset(
        rows.where(F.col("id").isin(late_ids + null_time_ids))
        .select(reason.alias("late_reason"), F.struct(*ss.COLUMNS).alias("late_row"))
        .collect()
    )
    assert len(want_late) == len(late_ids) + len(null_time_ids)
    assert got_late == want_late, ss.describe_difference(got_late, want_late)

    # sessions, killed at the same points: exactly the batch sessions of every row with a time
    got_sessions = ss.multiset(
        spark.read.parquet(str(out) + "-sessions").where(~F.col("k").eqNullSafe("flush")).collect()
    )
    want_sessions = ss.multiset(streaming_job.sessions(rows.where(F.col("ts").isNotNull())).collect())
    assert len(want_sessions) > 30
    assert got_sessions == want_sessions, ss.describe_difference(got_sessions, want_sessions)

    # count windows, killed at the same points: exactly the batch windows of every row with a time
    got_counts = ss.multiset(spark.read.parquet(str(out) + "-counts").where(~F.col("k").eqNullSafe("flush")).collect())
    want_counts = ss.multiset(streaming_job.counts(rows.where(F.col("ts").isNotNull())).collect())
    assert len(want_counts) > 50
    assert got_counts == want_counts, ss.describe_difference(got_counts, want_counts)
