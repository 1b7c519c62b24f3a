"""The Python package itself: jar lookup, session configuration, definitions, argument checks."""

import datetime
import os
import subprocess
import sys
import textwrap

import pytest
from pyspark.sql import Column, SparkSession

import windowagg
from windowagg import SlidingWindows


def test_public_names_have_docstrings():
    for name in windowagg.__all__:
        obj = getattr(windowagg, name)
        if callable(obj):
            assert obj.__doc__, f"windowagg.{name} has no docstring"
    assert SlidingWindows.of.__doc__
    assert windowagg.EXTENSION_CLASS == "windowagg.spark.WindowAggExtensions"


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
    "size",
    ["10 minutes", "1 hour 30 minutes", "250ms", datetime.timedelta(seconds=90), 10_000, 2**40],
)
def test_valid_sizes(spark, size):
    definition = SlidingWindows.of(size)
    assert isinstance(definition, windowagg.WindowDefinition)
    assert definition._java_definition() is not None


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


@pytest.mark.parametrize("size", [1.5, None, True, [10]])
def test_sizes_of_other_types_raise_type_error(size):
    with pytest.raises(TypeError):
        SlidingWindows.of(size)


def test_window_returns_a_column(spark):
    col = windowagg.window("ts", SlidingWindows.of("10 minutes"))
    assert isinstance(col, Column)
    from pyspark.sql import functions as F

    assert isinstance(windowagg.window(F.col("ts"), SlidingWindows.of(5), time_unit="seconds"), Column)


def test_window_checks_its_arguments(spark):
    with pytest.raises(TypeError):
        windowagg.window("ts", "10 minutes")
    with pytest.raises(TypeError):
        windowagg.window("ts", SlidingWindows.of("1 minute"), time_unit=5)


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
        env=dict(os.environ),
    ).stdout
    running = [line for line in out.splitlines() if line.startswith("RUNNING:")]
    after = [line for line in out.splitlines() if line.startswith("AFTER STOP:")]
    assert running, out
    assert "already running" in running[0] and "spark.sql.extensions" in running[0]
    assert after, out
    assert "jar" in after[0]
