"""Shared fixtures: one local Spark session with windowagg per pytest process (dev/test runs two)."""

import collections
import os
import signal
import subprocess
import sys

import pytest

# The helpers beside this file (brute_force.py, helpers.py) are imported as plain modules.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The user-defined window kinds of jvm/examples (windowagg.examples.FiscalQuarters, BusinessDays),
# which test_kinds.py loads by class name as a user's jar given with --jars.
EXAMPLES_JAR = os.path.join(ROOT, "jvm", "examples", "target", "windowagg-examples-0.4.0.jar")


def examples_jar() -> str:
    if not os.path.isfile(EXAMPLES_JAR):
        pytest.exit(
            f"the examples jar {EXAMPLES_JAR} is missing: run dev/package (it builds it) before the tests",
            returncode=2,
        )
    return EXAMPLES_JAR


# The modules whose tests start child processes (Spark drivers, a cluster, a Connect server, the
# manual's build) take from half a minute to four minutes each. They come first, slowest first, then
# the others by their number of tests, most first: dev/test's two pytest workers take modules in this
# order (--no-loadscope-reorder), so that they end together instead of one starting a long module last.
SLOWEST_MODULES = ("test_streaming_exactly_once.py", "test_kafka.py", "test_cluster.py", "test_demo.py",
                   "test_connect.py", "test_flink.py", "test_docs.py")


def pytest_collection_modifyitems(items):
    first = {name: rank for rank, name in enumerate(SLOWEST_MODULES)}
    tests = collections.Counter(item.path.name for item in items)
    # stable: a module's tests keep their order
    items.sort(key=lambda item: (first.get(item.path.name, len(SLOWEST_MODULES)), -tests[item.path.name]))


def child_env(**extra) -> dict:
    """The environment of a child process that starts a short-lived JVM (a Spark driver, a Connect
    server): it compiles with the quick compiler alone, as on the tests' small inputs the optimizing
    compiler's work does not pay back (the cluster test's job: 84 s instead of 189 s)."""
    java_options = " ".join(filter(None, [os.environ.get("JAVA_TOOL_OPTIONS"), "-XX:TieredStopAtLevel=1"]))
    return {**os.environ, "JAVA_TOOL_OPTIONS": java_options, **extra}


def stop_process_group(process: subprocess.Popen, timeout: float = 30) -> None:
    """Stops a process started with ``start_new_session=True`` and everything in its group (the JVMs
    Spark's scripts start): SIGTERM, then SIGKILL if it outlives ``timeout`` seconds."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession with the windowagg jar and extension, stopped after the run."""
    import windowagg

    session = windowagg.session(
        app_name="windowagg-tests",
        master="local[2]",
        config={
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            # the parallel collector: about 4% less wall time than G1 for the tests on two cores
            "spark.driver.extraJavaOptions": "-XX:+UseParallelGC",
            # Timestamps are compared as epoch microseconds; a fixed zone keeps the
            # TIMESTAMP_NTZ <-> TIMESTAMP casts in the tests exact.
            "spark.sql.session.timeZone": "UTC",
            # kept by windowagg.session(), which appends its own jar
            "spark.jars": examples_jar(),
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
