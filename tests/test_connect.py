"""windowagg on Spark Connect: a real Connect server from the installed PySpark
(sbin/start-connect-server.sh, with the windowagg jar and extension), queried by a child process
through SparkSession.builder.remote(...). Every query of connect_job.py (the DataFrame API with each
window kind, the SQL grouping and table functions, Storm's window view, an epoch column, a streaming
query with late rows and its observed metrics) gives the same rows as on the classic session,
windowagg.metrics gives the same counts from the plan metrics the server returns (and an error before
an action), and errors carry the same conditions and SQLSTATEs.
"""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

import connect_job
import windowagg
from conftest import child_env, examples_jar, stop_process_group

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    import pyspark

    home = os.path.dirname(pyspark.__file__)
    port = free_port()
    log_path = tmp_path_factory.mktemp("connect") / "server.log"
    log = open(log_path, "w")
    server = subprocess.Popen(
        [
            os.path.join(home, "sbin", "start-connect-server.sh"), "--wait",
            "--master", "local[2]",
            "--jars", f"{windowagg.jar_path()},{examples_jar()}",
            "--conf", f"spark.sql.extensions={windowagg.EXTENSION_CLASS}",
            "--conf", "spark.sql.streaming.stateStore.providerClass="
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
            "--conf", f"spark.connect.grpc.binding.port={port}",
            "--conf", "spark.sql.session.timeZone=UTC",
            "--conf", "spark.sql.shuffle.partitions=2",
            "--conf", "spark.ui.enabled=false",
        ],
        # the server's Python workers (PythonWindows' function) run this interpreter, with its packages
        env=child_env(SPARK_HOME=home, PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable)),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the server's JVM joins this process group, stopped with it
    )
    try:
        deadline = time.monotonic() + 180
        while "Spark Connect server started" not in log_path.read_text():
            assert server.poll() is None, f"the Connect server ended:\n{log_path.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no Connect server after 180 s:\n{log_path.read_text()[-3000:]}"
            time.sleep(0.2)
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop_process_group(server, timeout=60)
        log.close()


def test_every_query_gives_the_same_rows_on_connect_as_on_a_classic_session(spark, connect_url, tmp_path):
    out = tmp_path / "connect.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH", "")] if p)}
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "connect_job.py"), connect_url, str(out), str(tmp_path / "remote-in")],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[:2000] + "\n...\n" + done.stderr[-1000:]
    remote = json.loads(out.read_text())

    classic = {name: connect_job.rows(df) for name, df in connect_job.queries(spark).items()}
    assert sorted(remote["queries"]) == sorted(classic)
    for name, got in remote["queries"].items():
        assert got, f"{name}: no rows"
        assert got == classic[name], name
    classic_metrics = connect_job.metric_counts(spark)
    assert remote["metrics"] == classic_metrics
    storm, storm_rows = classic_metrics["count windows"]
    assert storm["windows"] == storm_rows > 0 and storm["nullTimeRows"] == 10 and storm["unwindowedRows"] > 0
    both, both_rows = classic_metrics["unlimited and sessions"]
    assert both["inputRows"] == 200 and both["nullTimeRows"] == 20  # the rows of two operators, summed
    assert both["windows"] == both_rows and both["unwindowedRows"] > 0 and both["invalidGapRows"] > 0
    assert "no action ran on this DataFrame yet" in remote["metrics errors"]["before an action"]
    assert "returned no plan metrics" in remote["metrics errors"]["after a write"]

    streamed_rows, late = connect_job.streamed(spark, str(tmp_path / "classic-in"))
    assert remote["streamed"] == [streamed_rows, late]
    assert late == 1 and any('"late_reason": "late"' in r for r in streamed_rows)
    assert remote["errors"] == connect_job.errors(spark) == {
        "spec": ["WINDOWAGG_INVALID_WINDOW", "22023"],
        "option": ["WINDOWAGG_INVALID_OPTION", "42K06"],
        "aggregate": ["WINDOWAGG_UNSUPPORTED_AGGREGATE", "0A000"],
    }
