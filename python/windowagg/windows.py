"""Window definitions: Python handles on the JVM's ``windowagg.WindowDefinition`` values."""

import datetime
from typing import Any, Callable, Optional, Union

from windowagg import _jvm

SizeLike = Union[str, datetime.timedelta, int]
GraceLike = Union[str, datetime.timedelta]

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


class WindowDefinition:
    """A window definition: which windows exist for the records of one key.

    Instances hold the JVM ``windowagg.WindowDefinition`` they stand for; pass them to
    :func:`windowagg.window`. Build them with the factories of the concrete kinds, such as
    :meth:`SlidingWindows.of`.
    """

    def __init__(self, description: str, build: Callable[[Any], Any]) -> None:
        self._description = description
        self._build = build
        self._gateway: Any = None
        self._jdef: Any = None
        gateway = _jvm.current_gateway()
        if gateway is not None and not _jvm.is_connect_active():
            from pyspark import SparkContext

            if SparkContext._active_spark_context is not None:
                self._java_definition()

    def _java_definition(self) -> Any:
        """The JVM definition, built (and validated) against the current JVM on first use."""
        gateway = _jvm.current_gateway()
        if self._jdef is None or self._gateway is not gateway:
            jvm = _jvm.active_jvm()
            try:
                self._jdef = self._build(jvm)
            except Exception as error:
                if _jvm.is_illegal_argument(error):
                    _jvm.raise_value_error(error)
                raise
            self._gateway = gateway
        return self._jdef

    def __repr__(self) -> str:
        return self._description


class SlidingWindows(WindowDefinition):
    """Kafka Streams' sliding windows (KIP-450) of a fixed size.

    Per key, windows are closed intervals ``[start, start + size]``: one ending at each distinct
    record time (its *left* window) and one starting just after each distinct record time (its
    *right* window) when that window holds records; a window's aggregate covers exactly the
    records whose time lies in it, and empty windows do not exist.
    """

    @classmethod
    def of(cls, size: SizeLike) -> "SlidingWindows":
        """Sliding windows of the given size.

        :param size: a duration, as a string (``"10 minutes"``, ``"1 hour 30 minutes"``,
            ``"250ms"``) or a :class:`datetime.timedelta`; or an ``int``, a number of ticks of an
            integral time column's own unit (e.g. ``10_000`` for 10 s of epoch milliseconds).
        :raises ValueError: when the size is not positive or cannot be parsed (the message is
            the JVM's). The size is checked at once when a SparkSession is running, otherwise
            on first use.
        :raises TypeError: for a size of another type.
        """
        if isinstance(size, bool) or not isinstance(size, (str, datetime.timedelta, int)):
            raise TypeError(
                "a sliding window size must be a str such as '10 minutes', a datetime.timedelta "
                f"or an int number of ticks, not {type(size).__name__}"
            )
        if isinstance(size, int) and not _LONG_MIN <= size <= _LONG_MAX:
            raise ValueError(f"sliding window size {size} does not fit in a 64-bit number of ticks")
        return cls(size)

    def __init__(self, size: SizeLike, grace: Optional[GraceLike] = None) -> None:
        """Use :meth:`SlidingWindows.of` (and :meth:`grace`) instead."""
        self.size = size
        #: The grace period given with :meth:`grace`, or None.
        self.grace_period = grace
        description = f"SlidingWindows.of({size!r})" + ("" if grace is None else f".grace({grace!r})")
        super().__init__(description, lambda jvm: _build_sliding(jvm, size, grace))

    def grace(self, grace: GraceLike) -> "SlidingWindows":
        """The same windows with a grace period, for streaming queries.

        The grace period is how long after a window's end its rows may still arrive: where the
        streaming input has no ``withWatermark`` on the time column, the watermark is the largest
        time seen minus the grace. A window is final (emitted in ``emit="final"`` mode, never
        changed afterwards) once its end is behind the watermark; a row whose every window is
        final is late (see ``late_rows`` of :func:`windowagg.window`). A ``withWatermark`` on the
        input wins over the grace; batch queries see complete data and ignore it::

            SlidingWindows.of("10 minutes").grace("1 minute")

        :param grace: a duration, as a string (``"1 minute"``, ``"30 s"``) or a
            :class:`datetime.timedelta`; zero is allowed.
        :returns: a new :class:`SlidingWindows`; this one is unchanged.
        :raises ValueError: when the grace is negative or cannot be parsed (a timedelta is checked
            at once; a string at once when a SparkSession is running, otherwise on first use).
        :raises TypeError: for a grace of another type.
        """
        if isinstance(grace, bool) or not isinstance(grace, (str, datetime.timedelta)):
            raise TypeError(
                "a grace period must be a str such as '1 minute' or a datetime.timedelta, "
                f"not {type(grace).__name__}"
            )
        if isinstance(grace, datetime.timedelta) and grace < datetime.timedelta(0):
            raise ValueError(f"the grace period must not be negative, got {grace.total_seconds()} seconds")
        return type(self)(self.size, grace)


def _java_duration(jvm: Any, delta: datetime.timedelta) -> Any:
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return jvm.java.time.Duration.ofSeconds(micros // 1_000_000, (micros % 1_000_000) * 1000)


def _build_sliding(jvm: Any, size: SizeLike, grace: Optional[GraceLike] = None) -> Any:
    factory = _jvm.jvm_class(jvm, "windowagg.SlidingWindows")
    if isinstance(size, datetime.timedelta):
        definition = factory.of(_java_duration(jvm, size))
    else:
        # A str picks of(String); an int picks of(long) (py4j widens a small int to long).
        definition = factory.of(size)
    if grace is None:
        return definition
    if isinstance(grace, datetime.timedelta):
        return definition.grace(_java_duration(jvm, grace))
    return definition.grace(grace)


def _ensure_definition(definition: Optional[WindowDefinition]) -> WindowDefinition:
    if not isinstance(definition, WindowDefinition):
        raise TypeError(
            "expected a window definition such as windowagg.SlidingWindows.of('10 minutes'), "
            f"not {type(definition).__name__}"
        )
    return definition
