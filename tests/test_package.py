"""The Python package itself: jar lookup, session configuration, definitions, argument checks."""

import datetime
import os
import subprocess
import sys
import textwrap
import tomllib
import warnings

import pytest
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

import windowagg
from conftest import child_env
from windowagg import SlidingWindows

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def test_public_names_have_docstrings():
    for name in windowagg.__all__:
        obj = getattr(windowagg, name)
        if callable(obj):
            assert obj.__doc__, f"windowagg.{name} has no docstring"
    assert SlidingWindows.of.__doc__
    assert SlidingWindows.grace.__doc__
    assert windowagg.EXTENSION_CLASS == "windowagg.spark.WindowAggExtensions"


def test_installing_the_package_without_its_jar_stops_with_one_line(tmp_path):
    import shutil

    source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
    copy = tmp_path / "python"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("jars", "build", "*.egg-info", "__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(copy)],
        capture_output=True,
        text=True,
    )
    assert built.returncode != 0
    assert "windowagg: the jar this package carries is not built; run dev/package" in built.stdout + built.stderr


def test_the_wheel_holds_the_api_and_its_jar_only():
    """The files pip installed from the wheel dev/install-python built: the API's modules, the modules
    the executors import for PythonWindows (_executor) and for pandas/Arrow aggregate UDFs
    (_aggregates), the jar and the typing marker. The demo is an application of the package
    (examples/python/demo.py), not in it."""
    from importlib import metadata

    files = metadata.distribution("windowagg").files
    installed = {str(f) for f in files if f.parts[0] == "windowagg" and f.suffix != ".pyc"}
    assert installed == {
        "windowagg/__init__.py",
        "windowagg/_aggregates.py",
        "windowagg/_executor.py",
        "windowagg/_jvm.py",
        "windowagg/_session.py",
        "windowagg/functions.py",
        "windowagg/windows.py",
        "windowagg/py.typed",
        f"windowagg/jars/windowagg-{windowagg.__version__}.jar",
    }


def test_the_python_windows_extra_keeps_pandas_where_pyspark_supports_it(monkeypatch):
    """`windowagg[python-windows]` bounds pandas from above where the pinned PySpark starts warning that it
    does not fully support pandas, and allows the pandas the tests run with."""
    import pandas
    from packaging.requirements import Requirement
    from pyspark.sql.pandas import utils

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "python", "pyproject.toml"), "rb") as handle:
        extra = [Requirement(r) for r in tomllib.load(handle)["project"]["optional-dependencies"]["python-windows"]]
    (wanted,) = [r for r in extra if r.name == "pandas"]
    (bound,) = [s.version for s in wanted.specifier if s.operator == "<"]
    tested = pandas.__version__

    def warned(version):
        monkeypatch.setattr(pandas, "__version__", version)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            utils.require_minimum_pandas_version()
        return any("does not yet fully support pandas" in str(w.message) for w in caught)

    # the last version below the bound, as far as version numbers go: 2.999.999 below 3.0.0
    parts = [int(p) for p in bound.split(".")]
    last = max(i for i, p in enumerate(parts) if p > 0)
    below = ".".join(str(p) for p in parts[:last] + [parts[last] - 1] + [999] * (len(parts) - last - 1))
    assert warned(bound), f"PySpark no longer warns at pandas {bound}: lift the python-windows extra's bound"
    assert not warned(below), f"PySpark warns below pandas {bound}, at {below}: lower the python-windows extra's bound"
    assert not warned(tested) and wanted.specifier.contains(tested)


def test_jar_path_prefers_the_environment(tmp_path, monkeypatch):
    jar = tmp_path / "custom.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("WINDOWAGG_JAR", str(jar))
    assert windowagg.jar_path() == str(jar.resolve())


def test_jar_path_reports_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("WINDOWAGG_JAR", str(tmp_path / "nope.jar"))
    with pytest.raises(FileNotFoundError, match="WINDOWAGG_JAR"):
        windowagg.jar_path()


def test_configure_appends_to_existing_values(tmp_path, monkeypatch):
    jar = tmp_path / "w.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("WINDOWAGG_JAR", str(jar))
    builder = (
        SparkSession.builder.config("spark.jars", "/opt/other.jar")
        .config("spark.sql.extensions", "com.example.Ext")
    )
    assert windowagg.configure(builder) is builder
    windowagg.configure(builder)  # twice: nothing is added twice
    options = builder._options
    assert options["spark.jars"] == f"/opt/other.jar,{jar.resolve()}"
    assert options["spark.sql.extensions"] == "com.example.Ext,windowagg.spark.WindowAggExtensions"


def test_configure_on_a_fresh_builder(tmp_path, monkeypatch):
    jar = tmp_path / "w.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("WINDOWAGG_JAR", str(jar))
    options = windowagg.configure(SparkSession.builder)._options
    assert options["spark.jars"] == str(jar.resolve())
    assert options["spark.sql.extensions"] == windowagg.EXTENSION_CLASS
    assert options[PROVIDER_CONF] == ROCKSDB


def test_configure_keeps_a_state_store_provider_set_on_the_builder(tmp_path, monkeypatch):
    jar = tmp_path / "w.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("WINDOWAGG_JAR", str(jar))
    builder = SparkSession.builder.config(PROVIDER_CONF, "com.example.MyProvider")
    assert windowagg.configure(builder)._options[PROVIDER_CONF] == "com.example.MyProvider"


def test_session_uses_the_rocksdb_state_store(spark):
    assert spark.conf.get(PROVIDER_CONF) == ROCKSDB


def test_session_keeps_the_state_store_provider_of_the_running_session(spark):
    hdfs = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
    spark.conf.set(PROVIDER_CONF, hdfs)
    try:
        assert windowagg.session() is spark
        assert spark.conf.get(PROVIDER_CONF) == hdfs
    finally:
        spark.conf.set(PROVIDER_CONF, ROCKSDB)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"config": {"spark.remote": "sc://localhost:15002"}},
        {"master": "sc://localhost:15002"},
        {"config": {"spark.api.mode": "connect"}},
    ],
)
def test_session_refuses_spark_connect(kwargs):
    with pytest.raises(RuntimeError, match="Spark Connect"):
        windowagg.session(**kwargs)


def test_session_returns_the_running_windowagg_session(spark):
    assert windowagg.session() is spark
    extensions = spark.sparkContext.getConf().get("spark.sql.extensions")
    assert windowagg.EXTENSION_CLASS in extensions.split(",")


@pytest.mark.parametrize(
    "size, ticks",
    [
        ("10 minutes", 600_000_000),
        ("1 hour 30 minutes", 5_400_000_000),
        ("250ms", 250_000),
        (datetime.timedelta(seconds=90), 90_000_000),
        (10_000, 10_000),  # ticks of an integral time column
        (2**40, 2**40),
    ],
)
def test_valid_sizes(spark, size, ticks):
    """A row's left window is [t - size, t]: durations in µs of a TIMESTAMP, integers in ticks of a BIGINT."""
    definition = SlidingWindows.of(size)
    assert isinstance(definition, windowagg.WindowDefinition)
    t = 2**41
    row = spark.createDataFrame([(t,)], "t bigint")
    if isinstance(size, int):
        windows = row.groupBy(windowagg.window("t", definition)).count().select("window.start", "window.end")
    else:
        windows = row.groupBy(windowagg.window(F.timestamp_micros("t"), definition)).count().select(
            F.unix_micros("window.start"), F.unix_micros("window.end"))
    assert [tuple(r) for r in windows.collect()] == [(t - ticks, t)]


@pytest.mark.parametrize(
    "size, phrase",
    [
        ("0 minutes", "positive"),
        ("-5 minutes", "positive"),
        (0, "positive"),
        (-3, "positive"),
        (datetime.timedelta(0), "positive"),
        (datetime.timedelta(seconds=-1), "positive"),
        ("10 fortnights", "fortnights"),
        ("1 month", "month"),
        ("soon", "soon"),
    ],
)
def test_invalid_sizes_raise_value_error_with_the_jvm_message(spark, size, phrase):
    with pytest.raises(ValueError) as info:
        SlidingWindows.of(size)
    assert phrase in str(info.value)
    assert "JVM stacktrace" not in str(info.value)


@pytest.mark.parametrize(
    "grace", ["1 minute", "0 seconds", "250ms", datetime.timedelta(seconds=90), datetime.timedelta(0)]
)
def test_valid_graces(spark, grace):
    base = SlidingWindows.of("10 minutes")
    definition = base.grace(grace)
    assert isinstance(definition, SlidingWindows)
    assert definition.size == "10 minutes" and definition.grace_period == grace
    assert base.grace_period is None  # grace() returns a new definition
    assert ".grace(" in definition._java_definition().toString()
    assert ".grace(" in repr(definition) and ".grace(" not in repr(base)


def test_grace_of_a_timedelta_keeps_microseconds(spark):
    definition = SlidingWindows.of("1 minute").grace(datetime.timedelta(seconds=1, microseconds=500))
    assert definition._java_definition().equals(SlidingWindows.of("1 minute").grace("1000500 us")._java_definition())


@pytest.mark.parametrize(
    "grace, phrase",
    [
        ("-5 seconds", "negative"),
        (datetime.timedelta(seconds=-1), "negative"),
        ("soon", "soon"),
        ("2 months", "month"),
    ],
)
def test_invalid_graces_raise_value_error(spark, grace, phrase):
    with pytest.raises(ValueError) as info:
        SlidingWindows.of("10 minutes").grace(grace)
    assert phrase in str(info.value)
    assert "JVM stacktrace" not in str(info.value)


def test_negative_timedelta_grace_is_checked_in_python():
    # no JVM call is needed to refuse it
    with pytest.raises(ValueError, match="negative"):
        SlidingWindows.of(10).grace(datetime.timedelta(milliseconds=-1))


@pytest.mark.parametrize("grace", [5, 1.5, None, True])
def test_graces_of_other_types_raise_type_error(grace):
    with pytest.raises(TypeError):
        SlidingWindows.of("10 minutes").grace(grace)


@pytest.mark.parametrize("size", [1.5, None, True, [10]])
def test_sizes_of_other_types_raise_type_error(size):
    with pytest.raises(TypeError):
        SlidingWindows.of(size)


def test_window_returns_a_column(spark):
    col = windowagg.window("ts", SlidingWindows.of("10 minutes"))
    assert isinstance(col, Column)
    assert isinstance(windowagg.window(F.col("ts"), SlidingWindows.of(5), time_unit="seconds"), Column)


def test_window_checks_its_arguments(spark):
    with pytest.raises(TypeError):
        windowagg.window("ts", "10 minutes")
    with pytest.raises(TypeError):
        windowagg.window("ts", SlidingWindows.of("1 minute"), time_unit=5)
    with pytest.raises(TypeError):
        windowagg.window("ts", SlidingWindows.of("1 minute"), emit=True)
    with pytest.raises(TypeError):
        windowagg.window("ts", SlidingWindows.of("1 minute"), late_rows=["emit"])


@pytest.mark.parametrize(
    "options, shown",
    [
        ({"emit": "updates"}, "emit=updates, lateRows=count"),
        ({"late_rows": "emit"}, "emit=final, lateRows=emit"),
        (
            {"emit": "final", "late_rows": "count", "time_unit": "seconds"},
            "timeUnit=seconds, emit=final, lateRows=count",
        ),
        ({"emit": "UPDATES", "late_rows": "Emit"}, "emit=updates, lateRows=emit"),
    ],
)
def test_window_passes_its_options_to_the_jvm(spark, options, shown):
    col = windowagg.window("ts", SlidingWindows.of("1 minute"), **options)
    assert isinstance(col, Column)
    assert shown in str(col)


def test_window_without_options_keeps_the_defaults(spark):
    assert "emit=final, lateRows=count" in str(windowagg.window("ts", SlidingWindows.of("1 minute")))
    assert "timeUnit=seconds" in str(windowagg.window("t", SlidingWindows.of(5), time_unit="seconds"))


def test_metrics_needs_a_dataframe(spark):
    with pytest.raises(TypeError):
        windowagg.metrics("not a dataframe")


_GUARD_SCRIPT = textwrap.dedent(
    """
    from pyspark.sql import SparkSession
    import windowagg

    plain = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    plain.sparkContext.setLogLevel("OFF")
    try:
        windowagg.session(master="local[1]")
        print("NO ERROR WHILE RUNNING")
    except RuntimeError as error:
        print("RUNNING:", error)
    plain.stop()
    try:
        windowagg.session(master="local[1]", config={"spark.ui.enabled": "false"})
        print("NO ERROR AFTER STOP")
    except RuntimeError as error:
        print("AFTER STOP:", error)
    """
)


def test_session_refuses_a_context_started_without_the_extension():
    """In a fresh process: a plain SparkContext is running, then one was (its JVM lacks the jar)."""
    out = subprocess.run(
        [sys.executable, "-c", _GUARD_SCRIPT],
        capture_output=True,
        text=True,
        timeout=240,
        env=child_env(),
    ).stdout
    running = [line for line in out.splitlines() if line.startswith("RUNNING:")]
    after = [line for line in out.splitlines() if line.startswith("AFTER STOP:")]
    assert running, out
    assert "already running" in running[0] and "spark.sql.extensions" in running[0]
    assert after, out
    assert "jar" in after[0]
