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
        _check_grace(grace)
        return type(self)(self.size, grace)


class SessionWindows(WindowDefinition):
    """Kafka Streams' session windows (KIP-94).

    Per key, records at most ``gap`` apart (inclusive), transitively, form one session
    ``[first record time, last record time]``; a lone record makes ``[t, t]``. With a per-row gap
    (:meth:`withDynamicGap`), a record at t with gap g keeps its session open until t + g. In
    streaming, a record can bridge and merge sessions; with ``emit="updates"`` each session merged
    away comes first as a row with ``retraction = true``.
    """

    @classmethod
    def withInactivityGap(cls, gap: SizeLike) -> "SessionWindows":  # noqa: N802 (Kafka's name)
        """Sessions closed by a fixed inactivity gap.

        :param gap: a duration (``"5 minutes"``, :class:`datetime.timedelta`), or an ``int`` number
            of ticks of an integral time column.
        :raises ValueError: when the gap is not positive or cannot be parsed.
        :raises TypeError: for a gap of another type.
        """
        if isinstance(gap, bool) or not isinstance(gap, (str, datetime.timedelta, int)):
            raise TypeError(
                "a session gap must be a str such as '5 minutes', a datetime.timedelta or an int "
                f"number of ticks, not {type(gap).__name__}"
            )
        return cls(gap=gap)

    @classmethod
    def withDynamicGap(cls, gap_column: str) -> "SessionWindows":  # noqa: N802 (Kafka-style name)
        """Sessions whose gap is read per row from ``gap_column``: a day-time interval for a
        timestamp time column (e.g. ``F.make_dt_interval(secs=F.col("gap_s"))``), or ticks for an
        integral one. Rows whose gap is null or not positive are not windowed and are counted
        (``invalidGapRows`` in :func:`windowagg.metrics`; ``invalid_gap_rows`` in streaming).
        """
        if not isinstance(gap_column, str) or not gap_column.strip():
            raise TypeError("the gap column must be a non-empty column name")
        return cls(gap_column=gap_column)

    def __init__(
        self,
        gap: Optional[SizeLike] = None,
        gap_column: Optional[str] = None,
        grace: Optional[GraceLike] = None,
    ) -> None:
        """Use :meth:`withInactivityGap` or :meth:`withDynamicGap` (and :meth:`grace`) instead."""
        self.gap = gap
        self.gap_column = gap_column
        #: The grace period given with :meth:`grace`, or None.
        self.grace_period = grace
        description = (
            f"SessionWindows.withInactivityGap({gap!r})" if gap_column is None
            else f"SessionWindows.withDynamicGap({gap_column!r})"
        ) + ("" if grace is None else f".grace({grace!r})")
        super().__init__(description, lambda jvm: _build_session(jvm, gap, gap_column, grace))

    def grace(self, grace: GraceLike) -> "SessionWindows":
        """The same sessions with a grace period for streaming (see :meth:`SlidingWindows.grace`):
        where the input has no watermark, the watermark is the largest time seen minus the grace.
        """
        _check_grace(grace)
        return type(self)(self.gap, self.gap_column, grace)


def _check_grace(grace: Any) -> None:
    if isinstance(grace, bool) or not isinstance(grace, (str, datetime.timedelta)):
        raise TypeError(
            "a grace period must be a str such as '1 minute' or a datetime.timedelta, "
            f"not {type(grace).__name__}"
        )
    if isinstance(grace, datetime.timedelta) and grace < datetime.timedelta(0):
        raise ValueError(f"the grace period must not be negative, got {grace.total_seconds()} seconds")


def _java_duration(jvm: Any, delta: datetime.timedelta) -> Any:
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    return jvm.java.time.Duration.ofSeconds(micros // 1_000_000, (micros % 1_000_000) * 1000)


def _build_sliding(jvm: Any, size: SizeLike, grace: Optional[GraceLike] = None) -> Any:
    factory = _jvm.jvm_class(jvm, "windowagg.SlidingWindows")
    # A str picks of(String); an int picks of(long) (py4j widens a small int to long).
    return _with_grace(jvm, factory.of(_span(jvm, size)), grace)


def _build_session(jvm: Any, gap: Optional[SizeLike], gap_column: Optional[str], grace: Optional[GraceLike]) -> Any:
    factory = _jvm.jvm_class(jvm, "windowagg.SessionWindows")
    definition = factory.withDynamicGap(gap_column) if gap_column is not None else factory.withInactivityGap(_span(jvm, gap))
    return _with_grace(jvm, definition, grace)


def _span(jvm: Any, size: SizeLike) -> Any:
    return _java_duration(jvm, size) if isinstance(size, datetime.timedelta) else size


def _with_grace(jvm: Any, definition: Any, grace: Optional[GraceLike]) -> Any:
    return definition if grace is None else definition.grace(_span(jvm, grace))


def _ensure_definition(definition: Optional[WindowDefinition]) -> WindowDefinition:
    if not isinstance(definition, WindowDefinition):
        raise TypeError(
            "expected a window definition such as windowagg.SlidingWindows.of('10 minutes') or "
            "windowagg.SessionWindows.withInactivityGap('5 minutes'), "
            f"not {type(definition).__name__}"
        )
    return definition
