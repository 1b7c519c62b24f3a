"""Exactly-once output of streaming windowagg queries, one per window kind, whose driver is killed
(SIGKILL) and restarted from its checkpoints.

The job (streaming_job.py) runs in a child process: its Python driver and the JVM it starts are one
process group, killed together with SIGKILL at points of its progress, found by watching files
appear in a query's checkpoint and output:
  - inside a micro-batch: its offsets are written (``offsets/N``) and it has not committed;
  - during a state commit: the state store writes micro-batch N's state (``state/0/<p>/<N+1>.zip``);
  - between micro-batches: ``commits/N`` is written;
  - while a file sink writes its first file.
Every query of the job is killed at once, each at whatever point it has reached. Each time the job
restarts from the same checkpoints; the last run, given one more file, finishes. That file is what a
user's next run would bring: a query killed after the micro-batch that read the flush row (the
watermark it moves closes every window), before the no-data micro-batch that emits those windows,
runs no micro-batch on restart until new input comes (Spark plans a no-data micro-batch only after
one it ran itself), so its last windows come out with that input. Each kind's output (a Parquet
file sink read through its ``_spark_metadata``, or foreachBatch overwriting a folder per
micro-batch) must then hold every window and every late row exactly once: the windows exactly the
batch result over the rows that were on time, each late row once, with all its columns.

CI runs four kill points. WINDOWAGG_SOAK_KILLS=20 runs 20 random ones, each a little ahead of a
random query's progress, so that every run moves on (a soak of about ten minutes);
WINDOWAGG_SOAK_REPORT=path.json writes the figures (kill points, rows compared, lost, duplicated).
"""

import json
import os
import random
import signal
import subprocess
import sys
import time

from pyspark.sql import Row
from pyspark.sql import functions as F

import streaming_job
import streaming_support as ss

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "streaming_job.py")
FILES = 12
RUN_TIMEOUT = 300  # seconds, per run of the child
PHASES = ("offsets", "state", "commits")


WATERMARK_DELAY = 20 * ss.SECOND  # streaming_job.WATERMARK
SESSION_GAP = 20 * ss.SECOND
# Each kind's windows (the job's definitions, as specs), and whether the late rows job_input designs are late
# for it; a changed definition needs job_input's argument for it read again
LATE_ROWS_BY_KIND = {
    "sliding": ("sliding 30 seconds", True),
    "session": ("session gap 20 seconds", True),
    "tumbling": ("tumbling 1 minute", True),
    "hopping": ("hopping 1 minute every 20 seconds", True),
    "cumulative": ("cumulative 20 seconds up to 2 minutes", True),
    # one local day (2023-12-31 in New York) holds the whole input, which ends at 19:12 local: never final
    "calendar": ("calendar 1 day in 'America/New_York'", False),
    "count": ("count 5 rows every 2 rows", True),
    "duration": ("duration 30 seconds every 10 seconds", True),
    "unlimited": ("unlimited", False),  # its one window never closes
    "session-early": ("session gap 20 seconds", True),
    "tumbling-pandas": ("tumbling 1 minute", True),
}


def joins_an_open_session(times, t, watermark):
    """Whether a row at t reaches a session still open at the watermark (its last row + the gap not behind
    it) through the rows at `times`, each at most the gap after the one before."""
    reach = t
    for later in sorted(u for u in times if u > t):
        if later > reach + SESSION_GAP:
            break
        reach = later
    return reach + SESSION_GAP >= watermark


def job_input(rnd):
    """12 files of one minute of event time each, then a flush file. Rows of file i lie in
    [60 i - 15 s, 60 i + 59 s] and file i - 1 ends with a row at 60 (i - 1) + 59 s, so with a
    watermark delay of 20 s no row is behind the watermark (60 i - 21 s), except the late rows: one
    each in files 3, 5, 8 and 10, in [60 (i - 3) s, 60 (i - 2) s), late for every kind whose windows
    close while the input runs (LATE_ROWS_BY_KIND):
      - sliding, 30 s: t + 30 s < 60 (i - 2) + 30 s < watermark;
      - tumbling, 1 minute: its window ends by 60 (i - 2) s, behind the watermark;
      - hopping, 1 minute every 20 s: its latest window ends before t + 60 s < 60 (i - 1) s;
      - cumulative, up to 2 minutes: its period ends at a multiple of 2 minutes before t + 120 s < 60 i s,
        so by 60 i - 60 s;
      - Storm's count and duration windows: a row behind the watermark is late;
      - sessions, gap 20 s: drawn again until the on-time rows of its key so far, chained from it at most
        20 s apart, end more than 20 s behind the watermark: it joins no open session.
    One row has a malformed time."""
    s = ss.SECOND
    chunks, late_ids, null_time_ids = [], [], []
    on_time = {}  # key: the times of its on-time rows so far
    n = 0

    def add(chunk, key, t, v, note):
        nonlocal n
        chunk.append(ss.event(n, key, t, v, note))
        n += 1
        if note != "late":
            on_time.setdefault(key, []).append(t)

    for i in range(FILES):
        # the watermark of file i's micro-batch: the latest time of the files before it, less the delay
        watermark = max(max(times) for times in on_time.values()) - WATERMARK_DELAY if on_time else None
        chunk = []
        for _ in range(14):
            lo, hi = max(0, i * 60 - 15) * s, (i * 60 + 59) * s
            t = rnd.randrange(lo, hi) if rnd.random() < 0.3 else rnd.randrange(lo, hi, s)  # some with microseconds
            add(chunk, rnd.choice(["k0", "k1", "k2", None]), t, rnd.randint(-5, 50), f"row {n}")
        if i in (3, 5, 8, 10):
            key, t = rnd.choice(["k0", None]), ((i - 3) * 60 + rnd.randrange(60)) * s
            while joins_an_open_session(on_time.get(key, []), t, watermark):
                key, t = rnd.choice(["k0", None]), ((i - 3) * 60 + rnd.randrange(60)) * s
            late_ids.append(n)
            add(chunk, key, t, 7, "late")
        if i == 6:
            null_time_ids.append(n)
            chunk.append(ss.event(n, "k1", None, 9, "no time"))
            n += 1
        add(chunk, f"k{i % 3}", (i * 60 + 59) * s, 1, "anchor")
        rnd.shuffle(chunk)
        chunks.append(chunk)
    chunks.append([ss.flush_event(n, days=2)])  # past the end of the calendar kind's local day
    return chunks, late_ids, null_time_ids


class Job:
    """One run of streaming_job.py in its own process group, with its output in a log file."""

    def __init__(self, tmp_path, run):
        self.log_path = tmp_path / f"job-{run}.log"
        self.log = open(self.log_path, "w")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, env.get("PYTHONPATH", "")] if p)
        args = [str(tmp_path / d) for d in ("in", "out", "checkpoints", "spark-local")]
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


class KillPoint:
    """A point of one query's progress: `phase` of micro-batch `batch` (or a first output file)."""

    def __init__(self, kind, phase, batch, root):
        self.kind, self.phase, self.batch = kind, phase, batch
        self.checkpoint = root / "checkpoints" / kind
        self.out = root / "out" / kind

    def __str__(self):
        if self.phase == "output":
            return f"{self.kind}: a first output file"
        return {
            "offsets": f"{self.kind}: inside micro-batch {self.batch} (offsets/{self.batch})",
            "state": f"{self.kind}: committing the state of micro-batch {self.batch}",
            "commits": f"{self.kind}: after micro-batch {self.batch} (commits/{self.batch})",
        }[self.phase]

    def reached(self):
        if self.phase == "output":
            return any(name.endswith(".parquet") for _, _, names in os.walk(self.out) for name in names)
        if self.phase == "state":
            state = self.checkpoint / "state" / "0"
            version = f"{self.batch + 1}.zip"
            return state.is_dir() and any((p / version).exists() for p in state.iterdir() if p.name.isdigit())
        return (self.checkpoint / self.phase / str(self.batch)).exists()


FIXED_POINTS = [("sliding", "output", None), ("hopping", "offsets", 4), ("session-early", "state", 6), ("count", "commits", 9)]


def next_random_point(root, rnd):
    """A point a little ahead of a random query's progress (one of its next three not yet reached)."""
    for kind in rnd.sample(streaming_job.KINDS, len(streaming_job.KINDS)):
        ahead = [KillPoint(kind, phase, batch, root) for batch in range(1, FILES) for phase in PHASES]
        ahead = [p for p in ahead if not p.reached()][:3]
        if ahead:
            return rnd.choice(ahead)
    return None


def batch_ids(folder):
    return sorted(int(name) for name in os.listdir(folder) if name.isdigit()) if os.path.isdir(folder) else []


def emitted(spark, out, kind):
    """The rows a kind's sink holds; for values emitted before final ones, what an upserting sink keeps:
    each window's last value (by micro-batch), which must be final where values say so (but for the
    flush rows' windows), and no window whose last row retracts it."""
    rows = spark.read.parquet(str(out / kind))
    if not streaming_job.emits_before_final(kind):
        return rows.drop("batch_id")
    from pyspark.sql import Window

    newest_first = Window.partitionBy("k", "window").orderBy(F.col("batch_id").desc())
    windows = rows.where("late_reason IS NULL").withColumn("nth", F.row_number().over(newest_first))
    latest = windows.where("nth = 1").drop("nth", "batch_id")
    if "retraction" in latest.columns:
        latest = latest.where(~F.col("retraction")).drop("retraction")
    if "is_final" in latest.columns:
        # the flush rows' own windows never close
        open_windows = latest.where(~F.col("is_final") & (F.col("k").isNull() | (F.col("k") != "flush"))).collect()
        assert open_windows == [], f"{kind}: these windows' last values are not final ones: {open_windows}"
        latest = latest.drop("is_final")
    late = rows.where("late_reason IS NOT NULL").drop("batch_id", *(c for c in ("retraction", "is_final") if c in rows.columns))
    return latest.unionByName(late)


def late_rows_for(kind):
    """Whether job_input's late rows are late for the job's definition of `kind` (LATE_ROWS_BY_KIND)."""
    import windowagg

    definition, _ = streaming_job.JOB_KINDS[kind]
    assert kind in LATE_ROWS_BY_KIND, f"{kind}: say in LATE_ROWS_BY_KIND whether job_input's late rows are late for it"
    spec, late = LATE_ROWS_BY_KIND[kind]
    assert definition(windowagg).spec == spec, f"{kind}: the job's windows changed; read job_input's argument again"
    return late


def test_exactly_once_across_driver_kills(spark, tmp_path):
    # before the runs, so that a changed job fails at once: job_input's late rows are argued for these
    assert streaming_job.WATERMARK == "20 seconds"  # WATERMARK_DELAY
    late_for = {kind: late_rows_for(kind) for kind in streaming_job.KINDS}
    chunks, late_ids, null_time_ids = job_input(random.Random(4242))
    files = ss.write_files(str(tmp_path / "in"), chunks)
    kills = int(os.environ.get("WINDOWAGG_SOAK_KILLS", "0"))
    fixed = [KillPoint(kind, phase, batch, tmp_path) for kind, phase, batch in FIXED_POINTS]
    rnd = random.Random(kills)
    survived, phases = [], {}
    job = None
    try:
        for run in range(kills or len(fixed)):
            point = next_random_point(tmp_path, rnd) if kills else fixed[run]
            if point is None or point.reached():  # the queries are done, or a replay went past it
                continue
            job = Job(tmp_path, run)
            started = time.monotonic()
            job.wait_for(str(point), point.reached)
            job.kill()
            assert job.proc.returncode == -signal.SIGKILL, job.output()
            phases[point.phase] = phases.get(point.phase, 0) + 1
            survived.append(
                f"run {run} killed at {point} after {time.monotonic() - started:.1f} s: "
                f"offsets {batch_ids(point.checkpoint / 'offsets')}, commits {batch_ids(point.checkpoint / 'commits')}"
            )
        second_flush = ss.event(chunks[-1][0]["id"] + 1, "flush", (2 * 86_400 + 60) * ss.SECOND, 0, "flush")
        (tmp_path / "in" / f"part-{len(chunks):04d}.json").write_text(json.dumps(second_flush) + "\n")
        job = Job(tmp_path, "last")
        code = job.proc.wait(timeout=RUN_TIMEOUT)
        assert code == 0 and "FINISHED" in job.output(), f"the last run failed (code {code}):\n{job.output()}"
    finally:
        if job is not None and job.proc.poll() is None:
            job.kill()
    print("\n".join(survived))
    assert len(survived) >= 4

    rows = spark.read.schema(ss.SCHEMA).json(files[:-1])
    # each input row as a late row carries it; the checks below run on rows collected once per kind
    as_late_row = {r.id: r.late_row for r in rows.select("id", F.struct(*ss.COLUMNS).alias("late_row")).collect()}
    report = {"kill_points": len(survived), "by_phase": phases, "kinds": {}}
    for kind in streaming_job.KINDS:
        got = emitted(spark, tmp_path / "out", kind)
        assert got.columns == ["k", "window", *ss.AGGREGATE_NAMES, "late_reason", "late_row"], kind
        got_rows = got.collect()

        # late and null-time rows: each exactly once, with all its columns; rows in no window (Storm's
        # kinds, which keep partials, not rows) carry no row to check
        late = [r for r in got_rows if r.late_reason in ("late", "null time")]
        assert all(r.k == r.late_row.k and r.n is None and r.window is None for r in late), kind
        got_late = ss.multiset(Row(late_reason=r.late_reason, late_row=r.late_row) for r in late)
        late_for_kind = late_ids if late_for[kind] else []
        want_late = ss.multiset(
            [Row(late_reason="late", late_row=as_late_row[i]) for i in late_for_kind]
            + [Row(late_reason="null time", late_row=as_late_row[i]) for i in null_time_ids]
        )

        # windows: exactly the batch result over the rows that were on time
        windows = [r.asDict() for r in got_rows if r.late_reason is None and r.k != "flush"]
        got_windows = ss.multiset(Row(**{c: w[c] for c in got.columns[:-2]}) for w in windows)
        on_time = rows.where(~F.col("id").isin(late_for_kind))
        want_windows = ss.multiset(streaming_job.query(on_time, kind, streaming=False).collect())
        got_all, want_all = got_windows + got_late, want_windows + want_late
        report["kinds"][kind] = {
            "sink": "file" if streaming_job.uses_file_sink(kind) else "foreachBatch",
            "rows_compared": sum(want_all.values()),
            "lost": sum((want_all - got_all).values()),
            "duplicated": sum(count - 1 for count in got_all.values() if count > 1),
            "late_rows": len(late_for_kind),
        }
        assert got_late == want_late, f"{kind}: {ss.describe_difference(got_late, want_late)}"
        assert len(want_windows) >= 4, kind  # one calendar day per key
        assert got_windows == want_windows, f"{kind}: {ss.describe_difference(got_windows, want_windows)}"
    if os.environ.get("WINDOWAGG_SOAK_REPORT"):
        with open(os.environ["WINDOWAGG_SOAK_REPORT"], "w") as f:
            json.dump({**report, "runs": survived}, f, indent=2)
    print(json.dumps(report, indent=2))
