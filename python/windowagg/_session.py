"""Finding the windowagg jar and starting Spark sessions with the windowagg extension."""

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, Mapping, Optional

from windowagg import _jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__version__ = "0.4.0"

#: The class to list in ``spark.sql.extensions`` to enable windowagg's SQL functions and planning.
EXTENSION_CLASS = "windowagg.spark.WindowAggExtensions"

_JAR_ENV = "WINDOWAGG_JAR"
# Streaming windows keep their state with transformWithState, which needs the RocksDB state store.
_STATE_STORE_CONF = "spark.sql.streaming.stateStore.providerClass"
_ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
_JARS_DIR = Path(__file__).resolve().parent / "jars"


def jar_path() -> str:
    """The path of the windowagg jar to put on Spark's classpath.

    The environment variable ``WINDOWAGG_JAR`` wins when set; otherwise the jar shipped inside
    this package (``windowagg/jars/windowagg-<version>.jar``).

    >>> windowagg.jar_path()
    '/...windowagg-...jar'

    :raises FileNotFoundError: when ``WINDOWAGG_JAR`` names no file, or no jar is packaged.
    """
    override = os.environ.get(_JAR_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"{_JAR_ENV} is set to {override!r}, but there is no such file")
        return str(path.resolve())
    packaged = _JARS_DIR / f"windowagg-{__version__}.jar"
    if packaged.is_file():
        return str(packaged)
    others = sorted(_JARS_DIR.glob("windowagg-*.jar"))
    if len(others) == 1:
        return str(others[0])
    raise FileNotFoundError(
        f"the windowagg jar is not in this installation (looked for {packaged}). Released wheels "
        "ship it; in a source checkout, build the JVM side (the build copies the jar into "
        f"python/windowagg/jars/) before installing, or set {_JAR_ENV} to the path of a built jar."
    )


def _split(value: Optional[str]) -> List[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _appended(existing: Optional[str], items: Iterable[str]) -> str:
    parts = _split(existing)
    for item in items:
        if item not in parts:
            parts.append(item)
    return ",".join(parts)


def configure(builder: "SparkSession.Builder") -> "SparkSession.Builder":
    """Adds windowagg to a ``SparkSession.Builder`` and returns the builder.

    Appends the jar (:func:`jar_path`) to ``spark.jars`` and :data:`EXTENSION_CLASS` to
    ``spark.sql.extensions``, keeping values already set on the builder, and sets
    ``spark.sql.streaming.stateStore.providerClass`` to Spark's RocksDB state store (which
    streaming windows need) unless the builder already sets a provider, as in
    ``spark = windowagg.configure(SparkSession.builder.appName("app")).getOrCreate()``.
    It takes effect only when the builder starts a new SparkContext (see :func:`session`).

    :raises FileNotFoundError: when the jar cannot be found (see :func:`jar_path`).
    :raises RuntimeError: for a Spark Connect builder (windowagg needs a classic session).
    """
    options: Dict[str, str] = dict(getattr(builder, "_options", {}) or {})
    if _connect_requested(options, None):
        raise _jvm.connect_error()
    jar = jar_path()
    builder = builder.config("spark.jars", _appended(options.get("spark.jars"), [jar]))
    builder = builder.config(
        "spark.sql.extensions", _appended(options.get("spark.sql.extensions"), [EXTENSION_CLASS])
    )
    if _STATE_STORE_CONF not in options:
        builder = builder.config(_STATE_STORE_CONF, _ROCKSDB_PROVIDER)
    return builder


def _connect_requested(options: Mapping[str, str], master: Optional[str]) -> bool:
    try:
        from pyspark.util import is_remote_only

        if is_remote_only():
            return True
    except ImportError:  # pragma: no cover
        pass
    if _jvm.is_connect_active():
        return True
    if "SPARK_REMOTE" in os.environ or "spark.remote" in options:
        return True
    if (master or options.get("spark.master") or "").startswith("sc://"):
        return True
    api_mode = str(options.get("spark.api.mode", os.environ.get("SPARK_API_MODE", ""))).lower()
    return api_mode == "connect"


def _running_without_extension() -> Optional[str]:
    """Why the running SparkContext cannot use windowagg and what to do, or None when it can."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return None
    extensions = _split(sc.getConf().get("spark.sql.extensions", ""))
    jar_loaded = _jvm.class_loadable(sc._jvm, EXTENSION_CLASS)
    if EXTENSION_CLASS in extensions and jar_loaded:
        return None
    problem = f"spark.sql.extensions is {','.join(extensions) or 'not set'}"
    if jar_loaded:
        fix = "Stop it first (spark.stop()) and call windowagg.session() again"
    else:
        problem += " and the windowagg jar is not on its classpath"
        fix = (
            "Stop it (spark.stop()) and call windowagg.session() from a new Python process, before "
            "anything else starts Spark"
        )
    return (
        f"a SparkContext is already running without the windowagg extension ({problem}). {fix}, or "
        f"start Spark with --jars {jar_path()} --conf spark.sql.extensions={EXTENSION_CLASS}."
    )


def _running_conf(key: str) -> Optional[str]:
    """The value set for ``key`` in the session that ``getOrCreate()`` would reuse (or in the
    running SparkContext's configuration), or None when nothing runs or it is not set."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    existing = SparkSession._instantiatedSession
    if existing is not None and existing._sc._jsc is not None:
        return existing.conf.get(key, None)
    sc = SparkContext._active_spark_context
    if sc is None:
        return None
    return sc.getConf().get(key, None)


def session(
    app_name: str = "windowagg",
    master: Optional[str] = None,
    config: Optional[Mapping[str, object]] = None,
) -> "SparkSession":
    """Gets or creates a classic SparkSession with windowagg enabled.

    >>> spark = windowagg.session()  # a running session with windowagg is returned as it is
    >>> spark.conf.get("spark.sql.extensions")
    'windowagg.spark.WindowAggExtensions'
    >>> spark.conf.get("spark.sql.streaming.stateStore.providerClass")
    'org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider'

    :param app_name: the application name.
    :param master: the master URL, e.g. ``"local[2]"``; Spark's default when None.
    :param config: more Spark settings; ``spark.jars`` and ``spark.sql.extensions`` given here
        are kept and windowagg's are appended. The state store provider is set to RocksDB (which
        streaming windows need) unless ``spark.sql.streaming.stateStore.providerClass`` is given
        here or already set on the running session. A local master's Python workers run this
        process's interpreter (``PYSPARK_PYTHON``, unless set).
    :raises RuntimeError: when a SparkContext is already running without windowagg (stop it
        first, or start Spark with ``--jars`` and ``spark.sql.extensions``), or for Spark Connect
        (windowagg runs only in a classic, JVM-backed session).
    """
    from pyspark.sql import SparkSession

    options = {str(key): str(value) for key, value in (config or {}).items()}
    if _connect_requested(options, master):
        raise _jvm.connect_error()
    problem = _running_without_extension()
    if problem is not None:
        raise RuntimeError(problem)
    running = _running_conf(_STATE_STORE_CONF)
    if _STATE_STORE_CONF not in options and running is not None:
        options[_STATE_STORE_CONF] = running  # keep the running session's choice
    # spark-submit (which hands Python its gateway) gives the master; without it Spark runs locally
    master_url = master or options.get("spark.master") or (None if "PYSPARK_GATEWAY_PORT" in os.environ else "local")
    if master_url is not None and master_url.startswith("local"):
        # Python workers of a local Spark run this interpreter (with its packages: pandas and pyarrow
        # for PythonWindows), not whichever python3 comes first on PATH, PySpark's default
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in options.items():
        builder = builder.config(key, value)
    spark = configure(builder).getOrCreate()
    if not _jvm.class_loadable(spark.sparkContext._jvm, EXTENSION_CLASS):
        spark.stop()
        raise RuntimeError(
            "the JVM of this Python process was started earlier without the windowagg jar, so the "
            "extension cannot be loaded into it; start a new Python process and create the session "
            f"with windowagg.session() first, or pass --jars {jar_path()}."
        )
    return spark
