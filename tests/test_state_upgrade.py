"""The first micro-batch after an upgrade, killed: checkpoints of the previous release restart on this
one, and a SIGKILL while it converts their state loses or repeats nothing.

One child job (upgrade_job.py) restarts the previous release's fixtures of one kind per state layout
(partials, sessions, rows) on their second half plus rows a day late. It is killed twice inside the
first micro-batch after the upgrade, at points found by watching the checkpoints (its offsets
written and nothing committed; its new state being written), then runs to the end. The windows of
both releases' runs together must be exactly the batch result, and each late row must come out
once: the expectation is the input's alone (the rows a day behind are late for every window).
"""

import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import state_fixtures as sf
import windowagg

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "upgrade_job.py")
KINDS = ("sliding", "session", "count")  # one per layout: partials by time, sessions, rows
RUN_TIMEOUT = 300  # seconds, per run of the child


def late_rows():
    """Rows a day before the first half: every window that could hold them closed long before."""
    day_before = sf.START - datetime.timedelta(days=1)
    return [(f"k{i}", day_before + datetime.timedelta(seconds=i), 100 + i) for i in range(3)]


class Job:
    """One run of upgrade_job.py in its own process group (its JVM joins it), output in a log file."""

    def __init__(self, root, run):
        self.log_path = root / f"job-{run}.log"
        self.log = open(self.log_path, "w")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, env.get("PYTHONPATH", "")] if p)
        args = [str(root / d) for d in ("in", "out", "checkpoints", "spark-local")]
        self.proc = subprocess.Popen([sys.executable, JOB, *args, *KINDS], stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, cwd=str(root), start_new_session=True)

    def output(self):
        self.log.flush()
        return self.log_path.read_text()[-3000:]

    def kill_when(self, what, reached):
        deadline = time.monotonic() + RUN_TIMEOUT
        while not reached():
            ended = self.proc.poll()
            assert ended is None, f"the job ended (code {ended}) before {what}:\n{self.output()}"
            assert time.monotonic() < deadline, f"no {what} within {RUN_TIMEOUT} s:\n{self.output()}"
            time.sleep(0.005)
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.log.close()
        assert self.proc.returncode == -signal.SIGKILL, self.output()


def committed(checkpoint):
    commits = checkpoint / "commits"
    return sorted(int(n) for n in os.listdir(commits) if n.isdigit()) if commits.is_dir() else []


@pytest.mark.skipif(not os.path.isdir(os.path.join(sf.FIXTURES_DIR, sf.PREVIOUS_RELEASE)), reason="no fixtures")
def test_a_kill_during_the_first_micro_batch_after_the_upgrade_loses_and_repeats_nothing(spark, tmp_path):
    first_half, second_half = sf.halves()
    fixtures = {}
    for kind in KINDS:
        fixture = os.path.join(sf.FIXTURES_DIR, sf.PREVIOUS_RELEASE, kind)
        checkpoint = tmp_path / "checkpoints" / kind
        shutil.copytree(os.path.join(fixture, "checkpoint"), checkpoint)
        sf.relocate(str(checkpoint))
        with open(os.path.join(fixture, "first_output.json")) as f:
            fixtures[kind] = [tuple(r[1:]) for r in json.load(f)]
    # the checkpoints' last micro-batch: the first one after the upgrade comes next
    upgraded = {kind: max(committed(tmp_path / "checkpoints" / kind)) + 1 for kind in KINDS}
    # one file per micro-batch, read in the order of their modification times (as Spark's file source sorts them)
    now = time.time()
    for i, rows in enumerate([second_half + late_rows(), *sf.flushes()]):
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"part-{i:04d}.json").write_text("".join(line + "\n" for line in sf.json_lines(rows)))
        os.utime(tmp_path / "in" / f"part-{i:04d}.json", (now + 10 * i, now + 10 * i))

    checkpoints = {kind: tmp_path / "checkpoints" / kind for kind in KINDS}

    def started(kind):  # its offsets are written
        return (checkpoints[kind] / "offsets" / str(upgraded[kind])).exists()

    def writing_state(kind):  # a state partition has written the micro-batch's new version
        state = checkpoints[kind] / "state" / "0"
        return any((p / f"{upgraded[kind] + 1}.zip").exists() for p in state.iterdir() if p.name.isdigit())

    points = [
        ("a query inside its first micro-batch after the upgrade", lambda: [k for k in KINDS if started(k)]),
        ("a query writing the state of its first micro-batch after the upgrade", lambda: [k for k in KINDS if writing_state(k)]),
    ]
    for run, (what, kinds_at) in enumerate(points):
        job = Job(tmp_path, run)
        try:
            job.kill_when(what, lambda: kinds_at())
        finally:
            if job.proc.poll() is None:
                os.killpg(job.proc.pid, signal.SIGKILL)
        # the kill came inside that query's first micro-batch after the upgrade: it had not committed it
        for kind in kinds_at():
            assert upgraded[kind] not in committed(checkpoints[kind]), f"{what}: {kind} committed before the kill"
    job = Job(tmp_path, "last")
    code = job.proc.wait(timeout=RUN_TIMEOUT)
    assert code == 0 and "FINISHED" in job.output(), f"the last run failed (code {code}):\n{job.output()}"

    late = sorted((k, int(ts.timestamp() * 1_000_000)) for k, ts, _ in late_rows())
    for kind in KINDS:
        out = spark.read.parquet(str(tmp_path / "out" / kind)).collect()
        windows = [(r.k, r.start, r.end, r.total, r.n) for r in out if r.late_reason is None and r.k != sf.FLUSH_KEY]
        batch = sf.aggregated(spark.createDataFrame(first_half + second_half, sf.SCHEMA), windowagg, kind, streaming=False)
        expected = sorted(tuple(r) for r in batch.collect())
        assert sorted(fixtures[kind] + windows) == expected, f"{kind}: the two releases' windows differ from batch"
        got_late = sorted((r.k, r.late_ts) for r in spark.read.parquet(str(tmp_path / "out" / kind)).where("late_reason = 'late'")
                          .selectExpr("k", "unix_micros(late_ts) AS late_ts").collect())
        assert got_late == late, f"{kind}: late rows {got_late}, expected each of {late} once"
