"""windowagg on a real standalone cluster: a master and two workers (one core each) on 127.0.0.1,
started from the installed PySpark's bin/spark-class (the pip package has no start-master script),
run cluster_job.py through bin/spark-submit with --jars (the jar found by windowagg.jar_path(), as
a user finds it), the extension and the RocksDB state store given as --conf, and the executors on
this Python. Batch (sliding, session, hopping through SQL) and streaming (sliding and session,
watermark, late rows emitted, checkpoints on local disk) give the rows the same job gives on the
local session, every row; the streaming queries' state stores were spread over both workers, each
committing keys, as the executors' logs in the workers' work directories show.

CI runs 200 keys over 3 files (4 micro-batches per streaming query): 60 to 110 s, cluster start
included, measured with the test run's session already started on two cores shared with other
Spark builds (load 12 to 17). WINDOWAGG_CLUSTER_LONG=1 runs 2,000 keys over 10 files (11
micro-batches per streaming query): about 5 minutes there.
"""

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

import pytest

import cluster_job
from conftest import stop_process_group
import streaming_support as ss
import windowagg

HERE = os.path.dirname(os.path.abspath(__file__))
LONG = os.environ.get("WINDOWAGG_CLUSTER_LONG") == "1"
KEYS, FILES = (2000, 10) if LONG else (200, 3)
WORKERS = 2
SHUFFLE_PARTITIONS = 4  # state stores per streaming query, to be spread over the workers
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# Every JVM of the test lives a minute or two: compiling with C1 alone halves the run on a loaded
# two-core machine (84 s instead of 189 s for the job) and changes nothing else.
JIT_OPTIONS = "-XX:TieredStopAtLevel=1"
START_TIMEOUT = 180  # seconds for the master and both workers to be up
JOB_TIMEOUT = 1800 if LONG else 600  # seconds for spark-submit
# An executor's RocksDB state store commits a version of one partition of a query's run with this
# line (Spark's INFO log, which executors write to stderr in their worker's work directory).
COMMIT_LINE = re.compile(
    r"partitionId=(\d+), storeName=\w+ \], queryRunId=([0-9a-f-]+) \]: "
    r'Committed \d+, stats = \{"numCommittedKeys":(\d+)'
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home():
    import pyspark

    return os.path.dirname(pyspark.__file__)


def spark_env(**extra):
    """This environment for the cluster's processes: the installed PySpark as SPARK_HOME, every
    address on 127.0.0.1, small daemons compiling with C1, this Python for the driver and the
    executors' Python workers, and Spark's default logging (no SPARK_CONF_DIR of the caller's)."""
    env = {key: value for key, value in os.environ.items() if key != "SPARK_CONF_DIR"}
    env.update(
        SPARK_HOME=spark_home(),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="256m",
        SPARK_DAEMON_JAVA_OPTS=JIT_OPTIONS,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        **extra,
    )
    return env


def start(command, log_path, env, cwd=None):
    """Starts a command in its own process group (the JVMs it starts join it), output to a log."""
    with open(log_path, "w") as log:
        return subprocess.Popen(
            command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def tail(path, chars=3000):
    return Path(path).read_text(errors="replace")[-chars:]


def alive_workers(ui_port):
    """The number of workers the master lists as alive in its JSON UI, or None before it answers with
    JSON (a master just started on a busy machine answered /json/ once with its HTML page)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as response:
            return json.load(response)["aliveworkers"]
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def standalone_cluster(root):
    """A standalone master and two one-core workers on 127.0.0.1, with their work and local
    directories under `root`; yields the master's URL and the workers' directories once both
    workers are registered. Stops their process groups (executors included) on leaving."""
    spark_class = os.path.join(spark_home(), "bin", "spark-class")
    master_port, ui_port = free_port(), free_port()
    url = f"spark://127.0.0.1:{master_port}"
    processes, logs, worker_dirs = [], [], []
    try:
        logs.append(root / "master.log")
        processes.append(start(
            [spark_class, "org.apache.spark.deploy.master.Master",
             "--host", "127.0.0.1", "--port", str(master_port), "--webui-port", str(ui_port)],
            # no REST submission server: it would take port 6066, which other clusters may hold
            logs[-1], spark_env(SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false"),
        ))
        for n in range(1, WORKERS + 1):
            worker_dir = root / f"worker-{n}"
            (worker_dir / "work").mkdir(parents=True)
            (worker_dir / "local").mkdir()
            logs.append(worker_dir / "worker.log")
            processes.append(start(
                [spark_class, "org.apache.spark.deploy.worker.Worker",
                 "--host", "127.0.0.1", "--webui-port", "0", "--cores", "1", "--memory", "1g",
                 "--work-dir", str(worker_dir / "work"), url],
                logs[-1], spark_env(SPARK_LOCAL_DIRS=str(worker_dir / "local")),
            ))
            worker_dirs.append(worker_dir)
        deadline = time.monotonic() + START_TIMEOUT
        while alive_workers(ui_port) != WORKERS:
            for process, log in zip(processes, logs):
                assert process.poll() is None, f"{log.name} ended:\n{tail(log)}"
            assert time.monotonic() < deadline, (
                f"{WORKERS} workers not registered after {START_TIMEOUT} s:\n" + "\n".join(tail(log, 1500) for log in logs)
            )
            time.sleep(0.3)
        yield url, worker_dirs
    finally:
        for process in reversed(processes):
            stop_process_group(process)


def submit_command(url, input_dir, out_dir):
    """spark-submit of cluster_job.py as a user runs windowagg without the Python helper."""
    return [
        os.path.join(spark_home(), "bin", "spark-submit"), "--master", url,
        "--jars", windowagg.jar_path(),
        "--conf", f"spark.sql.extensions={windowagg.EXTENSION_CLASS}",
        "--conf", f"spark.sql.streaming.stateStore.providerClass={ROCKSDB}",
        "--conf", f"spark.sql.shuffle.partitions={SHUFFLE_PARTITIONS}",
        "--conf", "spark.sql.session.timeZone=UTC",
        "--conf", "spark.ui.enabled=false",
        "--driver-memory", "512m",
        "--conf", f"spark.driver.extraJavaOptions={JIT_OPTIONS}",
        "--conf", "spark.executor.memory=512m",
        "--conf", f"spark.executor.extraJavaOptions={JIT_OPTIONS}",
        "--conf", "spark.executor.cores=1",
        # one executor per worker, both registered before the first job
        "--conf", f"spark.cores.max={WORKERS}",
        "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
        "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=120s",
        os.path.join(HERE, "cluster_job.py"), str(input_dir), str(out_dir),
    ]


class Runs:
    """Where the cluster run and the local run wrote, what the cluster run recorded (run.json),
    the late rows in the input, and the workers' directories."""

    def __init__(self, cluster_out, local_out, run, late, worker_dirs):
        self.cluster_out, self.local_out, self.run = cluster_out, local_out, run
        self.late, self.worker_dirs = late, worker_dirs


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    """The job on the cluster through spark-submit and, meanwhile, on the local session over the
    same input; the cluster is stopped once its run ends."""
    root = tmp_path_factory.mktemp("cluster")
    input_dir, cluster_out, local_out = root / "in", root / "cluster-out", root / "local-out"
    late = cluster_job.write_input(str(input_dir), KEYS, FILES)
    cluster_out.mkdir()
    driver_log = root / "driver.log"
    with standalone_cluster(root) as (url, worker_dirs):
        submit = start(submit_command(url, input_dir, cluster_out), driver_log, spark_env(), cwd=root)
        try:
            cluster_job.run_batch(spark, str(input_dir), str(local_out))
            cluster_job.run_streaming(spark, str(input_dir), str(local_out))
            returncode = submit.wait(timeout=JOB_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"spark-submit did not finish within {JOB_TIMEOUT} s:\n{tail(driver_log)}")
        finally:
            stop_process_group(submit)
    assert returncode == 0, f"spark-submit failed ({returncode}):\n{tail(driver_log, 6000)}"
    run = json.loads((cluster_out / "run.json").read_text())
    return Runs(cluster_out, local_out, run, late, worker_dirs)


def test_the_job_ran_on_one_executor_per_worker_with_this_python_and_windowagg(runs):
    assert len(runs.run["executors at start"]) == WORKERS, runs.run
    assert runs.run["executors at end"] == runs.run["executors at start"], "an executor was lost or replaced"
    assert runs.run["executor pythons"] == [[sys.executable, windowagg.__file__]]


def both_outputs(spark, runs, name):
    """The rows a query wrote on the cluster and on the local session."""
    folder = cluster_job.folder_of(name)
    return [spark.read.parquet(str(out / folder)).collect() for out in (runs.cluster_out, runs.local_out)]


@pytest.mark.parametrize("name", cluster_job.BATCH_QUERIES)
def test_batch_windows_on_the_cluster_equal_local_mode(spark, runs, name):
    on_cluster, local = both_outputs(spark, runs, name)
    got, expected = ss.multiset(on_cluster), ss.multiset(local)
    assert got == expected, ss.describe_difference(got, expected)
    assert len({row["k"] for row in on_cluster}) == KEYS


@pytest.mark.parametrize("name", cluster_job.STREAMING_QUERIES)
def test_streaming_windows_and_late_rows_on_the_cluster_equal_local_mode(spark, runs, name):
    on_cluster, local = both_outputs(spark, runs, name)
    got, expected = ss.multiset(on_cluster), ss.multiset(local)
    assert got == expected, ss.describe_difference(got, expected)
    assert sum(row["late_reason"] == "late" for row in on_cluster) == runs.late
    assert len({row["k"] for row in on_cluster if row["late_reason"] is None}) == KEYS


def committed_keys(worker_dir, app_id):
    """{query run id: {partition: most keys committed}} from the RocksDB commit lines in the logs
    of this worker's executors for the application."""
    found = defaultdict(dict)
    for stderr in (worker_dir / "work" / app_id).glob("*/stderr"):
        for partition, run_id, keys in COMMIT_LINE.findall(stderr.read_text(errors="replace")):
            partition, keys = int(partition), int(keys)
            found[run_id][partition] = max(keys, found[run_id].get(partition, 0))
    return found


def test_each_streaming_query_kept_state_on_both_workers(runs):
    per_worker = [committed_keys(worker_dir, runs.run["app"]) for worker_dir in runs.worker_dirs]
    for name, run_id in runs.run["streaming run ids"].items():
        stores = [worker.get(run_id, {}) for worker in per_worker]
        for worker_dir, partitions in zip(runs.worker_dirs, stores):
            assert partitions and all(keys > 0 for keys in partitions.values()), (
                f"{name}: {worker_dir.name} committed no state (partitions: {partitions})"
            )
        assert set().union(*stores) == set(range(SHUFFLE_PARTITIONS)), (name, stores)
