"""Internal helpers for reaching the JVM of a classic (py4j) Spark session.

Nothing here is public API.
"""

from typing import Any, NoReturn, Optional

_CONNECT_MESSAGE = (
    "this needs a classic (py4j) SparkSession: windowagg.session() and windowagg.configure() put the "
    "jar into a local Spark driver. On Spark Connect the server runs windowagg: start it with --jars "
    "<windowagg jar> --conf spark.sql.extensions=windowagg.spark.WindowAggExtensions "
    "(windowagg.jar_path() gives the jar), connect with SparkSession.builder.remote(...), and use "
    "window(), the window classes, the SQL functions and metrics(df) (after df.collect()) as on a "
    "classic session; the observed metrics of streaming queries count late rows there."
)

_NO_JAR_MESSAGE = (
    "the windowagg classes are not on this JVM's classpath. Create the session with "
    "windowagg.session() or windowagg.configure(SparkSession.builder) before any other "
    "SparkContext starts in this process, or start Spark with --jars <windowagg jar> "
    "--conf spark.sql.extensions=windowagg.spark.WindowAggExtensions "
    "(windowagg.jar_path() gives the jar's path)."
)


def connect_error() -> RuntimeError:
    """The error raised whenever a Spark Connect session or object is given to windowagg."""
    return RuntimeError(_CONNECT_MESSAGE)


def is_connect_active() -> bool:
    """True when PySpark runs in Spark Connect mode in this process."""
    try:
        from pyspark.sql.utils import is_remote

        return bool(is_remote())
    except Exception:  # pragma: no cover - very old or stripped PySpark
        return False


def active_jvm() -> Any:
    """The py4j JVM view of the running classic SparkContext, or a clear error."""
    if is_connect_active():
        raise connect_error()
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None or sc._jvm is None:
        raise RuntimeError(
            "no SparkSession is running; create one first with windowagg.session() "
            "(or windowagg.configure(SparkSession.builder).getOrCreate())"
        )
    return sc._jvm


def current_gateway() -> Any:
    """The py4j gateway of this process, or None when no JVM was started yet."""
    from pyspark import SparkContext

    return SparkContext._gateway


def jvm_class(jvm: Any, name: str) -> Any:
    """The JVM class (or Scala object's static forwarders) named `name`, or a clear error."""
    from py4j.java_gateway import JavaClass

    cls = getattr(jvm, name)
    if not isinstance(cls, JavaClass):
        raise RuntimeError(f"cannot find JVM class {name}: {_NO_JAR_MESSAGE}")
    return cls


def class_loadable(jvm: Any, name: str) -> bool:
    """True when the driver JVM can load the class `name` (without initialising it)."""
    try:
        loader = getattr(jvm, "org.apache.spark.util.Utils").getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName(name, False, loader)
        return True
    except Exception:
        return False


def _java_throwable(error: BaseException) -> Optional[Any]:
    """The JVM throwable behind a py4j or PySpark-captured exception, if there is one."""
    from py4j.protocol import Py4JJavaError

    if isinstance(error, Py4JJavaError):
        return error.java_exception
    return getattr(error, "_origin", None)


def is_illegal_argument(error: BaseException) -> bool:
    """True when `error` carries a java.lang.IllegalArgumentException (e.g. windowagg's WindowError)."""
    try:
        from pyspark.errors.exceptions.captured import IllegalArgumentException

        if isinstance(error, IllegalArgumentException):
            return True
    except ImportError:  # pragma: no cover
        pass
    throwable = _java_throwable(error)
    gateway = current_gateway()
    if throwable is None or gateway is None:
        return False
    from py4j.java_gateway import is_instance_of

    try:
        return bool(is_instance_of(gateway, throwable, "java.lang.IllegalArgumentException"))
    except Exception:
        return False


def java_message(error: BaseException) -> str:
    """The JVM exception's own message, without PySpark's appended JVM stack trace."""
    throwable = _java_throwable(error)
    if throwable is not None:
        try:
            message = throwable.getMessage()
            if message:
                return str(message)
        except Exception:
            pass
    desc = getattr(error, "_desc", None)
    if desc:
        return str(desc)
    return str(error).split("\n\nJVM stacktrace:")[0]


def raise_value_error(error: BaseException) -> NoReturn:
    """Re-raise a JVM IllegalArgumentException as a Python ValueError with the same message."""
    raise ValueError(java_message(error)) from None


ERROR_CONDITION_PREFIX = "WINDOWAGG_"


def install_error_messages() -> None:
    """Lets PySpark's ``getMessage()`` render windowagg's own error conditions.

    PySpark builds that message from Spark's registry of conditions, which a library cannot join,
    so for a windowagg condition the JVM exception's own message is returned instead. Idempotent.
    """
    try:
        from pyspark.errors.exceptions.captured import CapturedException
    except ImportError:  # pragma: no cover - PySpark without the classic exception layer
        return
    original = CapturedException.getMessage
    if getattr(original, "_windowagg", False):
        return

    def get_message(self: Any) -> str:
        condition = self.getCondition()
        if condition is not None and condition.startswith(ERROR_CONDITION_PREFIX):
            return java_message(self)
        return original(self)

    get_message._windowagg = True  # type: ignore[attr-defined]
    CapturedException.getMessage = get_message  # type: ignore[method-assign]
