"""Window definitions: Python handles on the JVM's ``windowagg.WindowDefinition`` values."""

import datetime
import decimal
import difflib
import re
from typing import Any, Callable, Dict, List, Optional, Union

from windowagg import _jvm

SizeLike = Union[str, datetime.timedelta, int]
GraceLike = Union[str, datetime.timedelta]

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def _snake_case(name: str) -> str:
    """``withInactivityGap`` -> ``with_inactivity_gap``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _no_attribute(owner: str, name: str, names: Any) -> AttributeError:
    """An AttributeError naming the closest public name, in the user's own style (snake_case or not)."""
    squashed: Dict[str, List[str]] = {}
    for n in sorted({n for n in names if not n.startswith("_")}):
        squashed.setdefault(n.replace("_", "").lower(), []).append(n)
    close = difflib.get_close_matches(name.replace("_", "").lower(), list(squashed), n=1, cutoff=0.6)
    candidates = squashed[close[0]] if close else []
    in_style = [c for c in candidates if ("_" in c or c.islower()) == ("_" in name or name.islower())]
    hint = f"; did you mean '{(in_style or candidates)[0]}'?" if candidates else ""
    return AttributeError(f"{owner} has no attribute '{name}'{hint}")


class _DefinitionType(type):
    """The window classes' type: a misspelt factory (``SessionWindows.withInactivityGapp``) names the closest."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _no_attribute(cls.__name__, name, dir(cls))


class WindowDefinition(metaclass=_DefinitionType):
    """A window definition: which windows exist for the records of one key.

    Instances hold the JVM ``windowagg.WindowDefinition`` they stand for; pass them to
    :func:`windowagg.window`. Build them with the factories of the concrete kinds, such as
    :meth:`SlidingWindows.of`, :meth:`TimeWindows.of`, :meth:`CumulativeWindows.of`,
    :meth:`CountWindows.of` or :meth:`CustomWindows.of`.

    Methods keep the names of Kafka Streams and the JVM API (``withInactivityGap``, ``advanceBy``,
    ``inZone``), and each also answers to its snake_case form (``with_inactivity_gap``,
    ``advance_by``, ``in_zone``, ``with_offset``, ``start_on``, ``tie_break``, ``with_dynamic_gap``):
    the same method under a second name. A name that is neither says which is closest:

    >>> windowagg.SessionWindows.with_inactivity_gap("5 minutes").spec
    'session gap 5 minutes'
    >>> windowagg.TimeWindows.of("1 hour").advance_by("10 minutes").spec
    'hopping 1 hour every 10 minutes'
    >>> windowagg.TimeWindows.of("1 hour").advanced_by("10 minutes")
    Traceback (most recent call last):
    ...
    AttributeError: TimeWindows has no attribute 'advanced_by'; did you mean 'advance_by'?
    """

    #: The snake_case names of the methods of each window class, to their names (e.g.
    #: ``{"advance_by": "advanceBy"}``).
    _aliases: Dict[str, str] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._aliases = dict(cls._aliases)
        for name, member in list(vars(cls).items()):
            alias = _snake_case(name)
            if not name.startswith("_") and alias != name and alias not in vars(cls):
                setattr(cls, alias, member)
                cls._aliases[alias] = name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _no_attribute(type(self).__name__, name, dir(self))

    def __init__(self, description: str, build: Callable[[Any], Any], spec: Callable[[], str]) -> None:
        self._description = description
        self._build = build
        self._python_spec = spec
        self._gateway: Any = None
        self._jdef: Any = None
        if _classic_session_running():
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

    @property
    def spec(self) -> str:
        """The definition in the spec grammar of the SQL functions ``windows(ts, spec)`` and
        ``window_agg(..., spec, ...)``, e.g. ``'hopping 1 hour every 10 seconds'``; it reads back
        as an equal definition.

        It is the JVM's ``spec()`` when a classic SparkSession is running, otherwise the same text
        built in Python.

        >>> from windowagg import CalendarWindows, SlidingWindows, TimeWindows
        >>> TimeWindows.of("1 hour").advanceBy("10 minutes").spec
        'hopping 1 hour every 10 minutes'
        >>> CalendarWindows.months(1).inZone("America/New_York").grace("1 day").spec
        "calendar 1 month in 'America/New_York' grace 1 day"
        >>> spec = SlidingWindows.of(10).spec
        >>> spec
        'sliding 10'
        >>> spark.sql("SELECT k, window.start, window.end, count(*) AS n "
        ...           "FROM VALUES ('a', 1), ('a', 4) AS events(k, t) "
        ...           f"GROUP BY k, windows(t, '{spec}')").orderBy("end").show()
        +---+-----+---+---+
        |  k|start|end|  n|
        +---+-----+---+---+
        |  a|   -9|  1|  1|
        |  a|   -6|  4|  2|
        |  a|    2| 12|  1|
        +---+-----+---+---+

        :raises ValueError: when a SparkSession is running and the definition is invalid.
        """
        if _classic_session_running():
            return str(self._java_definition().spec())
        return self._python_spec()

    def __repr__(self) -> str:
        if _classic_session_running():
            try:
                return str(self._java_definition().toString())
            except Exception:  # an invalid definition built before the session: describe it in Python
                pass
        return self._description


def _classic_session_running() -> bool:
    """True when a classic (py4j) SparkContext runs in this process."""
    if _jvm.current_gateway() is None or _jvm.is_connect_active():
        return False
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


class SlidingWindows(WindowDefinition):
    """Kafka Streams' sliding windows (KIP-450) of a fixed size.

    Per key, windows are closed intervals ``[start, start + size]``: one ending at each distinct
    record time (its *left* window) and one starting just after each distinct record time (its
    *right* window) when that window holds records; a window's aggregate covers exactly the
    records whose time lies in it, and empty windows do not exist. Over times in ticks (the unit of
    an integral time column), the windows of 10 ticks of rows at 1, 4 and 12, with their sums:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import SlidingWindows, window
    >>> df = spark.createDataFrame([("a", 1, 10), ("a", 4, 20), ("a", 12, 30)],
    ...                            "k STRING, t BIGINT, v BIGINT")
    >>> (df.groupBy("k", window("t", SlidingWindows.of(10))).agg(F.sum("v").alias("sum"))
    ...  .select("k", "window.start", "window.end", "sum").orderBy("end").show())
    +---+-----+---+---+
    |  k|start|end|sum|
    +---+-----+---+---+
    |  a|   -9|  1| 10|
    |  a|   -6|  4| 30|
    |  a|    2| 12| 50|
    |  a|    5| 15| 30|
    +---+-----+---+---+

    ``[-9, 1]``, ``[-6, 4]`` and ``[2, 12]`` end at a row; ``[2, 12]`` is also the window starting
    just after 1 (a set of rows is one window), ``[5, 15]`` starts just after 4, and the one after
    12 would be empty.
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
        super().__init__(
            description,
            lambda jvm: _build_sliding(jvm, size, grace),
            lambda: f"sliding {_length_spec(size)}{_grace_spec(grace)}",
        )

    def grace(self, grace: GraceLike) -> "SlidingWindows":
        """The same windows with a grace period, for streaming queries.

        The grace period is how long after a window's end its rows may still arrive: where the
        streaming input has no ``withWatermark`` on the time column, the watermark is the largest
        time seen minus the grace. A window is final (emitted in ``emit="final"`` mode, never
        changed afterwards) once its end is behind the watermark; a row whose every window is
        final is late (see ``late_rows`` of :func:`windowagg.window`). A ``withWatermark`` on the
        input wins over the grace; batch queries see complete data and ignore it:

        >>> windowagg.SlidingWindows.of("10 minutes").grace("1 minute").spec
        'sliding 10 minutes grace 1 minute'

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
    away comes first as a row with ``retraction = true``. Over times in ticks, sessions with a gap of 5:

    >>> from windowagg import SessionWindows, window
    >>> df = spark.createDataFrame([("a", 1), ("a", 3), ("a", 10), ("a", 12), ("b", 4)], "k STRING, t BIGINT")
    >>> (df.groupBy("k", window("t", SessionWindows.withInactivityGap(5))).count()
    ...  .select("k", "window.start", "window.end", "count").orderBy("k", "start").show())
    +---+-----+---+-----+
    |  k|start|end|count|
    +---+-----+---+-----+
    |  a|    1|  3|    2|
    |  a|   10| 12|    2|
    |  b|    4|  4|    1|
    +---+-----+---+-----+
    """

    @classmethod
    def withInactivityGap(cls, gap: SizeLike) -> "SessionWindows":  # noqa: N802 (Kafka's name)
        """Sessions closed by a fixed inactivity gap.

        :param gap: a duration (``"5 minutes"``, :class:`datetime.timedelta`), or an ``int`` number
            of ticks of an integral time column.
        :raises ValueError: when the gap is not positive or cannot be parsed.
        :raises TypeError: for a gap of another type.
        """
        _check_length(gap, "a session gap", "'5 minutes'")
        return cls(gap=gap)

    @classmethod
    def withDynamicGap(cls, gap_column: str) -> "SessionWindows":  # noqa: N802 (Kafka-style name)
        """Sessions whose gap is read per row from ``gap_column``: a day-time interval for a
        timestamp time column (e.g. ``F.make_dt_interval(secs=F.col("gap_s"))``), or ticks for an
        integral one. Rows whose gap is null or not positive are not windowed and are counted
        (``invalidGapRows`` in :func:`windowagg.metrics`; ``invalid_gap_rows`` in streaming).
        Here the row at 1 closes its session at 2, and the row at 3 keeps its own open until 13:

        >>> df = spark.createDataFrame([("a", 1, 1), ("a", 3, 10), ("a", 12, 1)],
        ...                            "k STRING, t BIGINT, gap BIGINT")
        >>> (df.groupBy("k", windowagg.window("t", windowagg.SessionWindows.withDynamicGap("gap"))).count()
        ...  .select("window.start", "window.end", "count").orderBy("start").show())
        +-----+---+-----+
        |start|end|count|
        +-----+---+-----+
        |    1|  1|    1|
        |    3| 12|    2|
        +-----+---+-----+
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
        super().__init__(
            description,
            lambda jvm: _build_session(jvm, gap, gap_column, grace),
            lambda: (
                f"session gap column {gap_column}" if gap_column is not None
                else f"session gap {_length_spec(gap)}"
            ) + _grace_spec(grace),
        )

    def grace(self, grace: GraceLike) -> "SessionWindows":
        """The same sessions with a grace period for streaming (see :meth:`SlidingWindows.grace`):
        where the input has no watermark, the watermark is the largest time seen minus the grace.
        """
        _check_grace(grace)
        return type(self)(self.gap, self.gap_column, grace)


class TimeWindows(WindowDefinition):
    """Kafka Streams' time windows: tumbling windows of a fixed size, or hopping ones that advance
    by a smaller step (:meth:`advanceBy`).

    Windows are half-open, ``[start, start + size)``, and start at ``offset + k * advance`` for
    whole k (the advance is the size for tumbling windows): the same boundaries as Spark's
    ``window(ts, size, slide, startTime)``, times before 1970 included. Per key, only windows that
    hold records exist. Over times in ticks, tumbling windows of 10 and hopping ones that start
    every 5:

    >>> from windowagg import TimeWindows, window
    >>> df = spark.createDataFrame([("a", 1), ("a", 4), ("a", 12)], "k STRING, t BIGINT")
    >>> (df.groupBy("k", window("t", TimeWindows.of(10))).count()
    ...  .select("window.start", "window.end", "count").orderBy("start").show())
    +-----+---+-----+
    |start|end|count|
    +-----+---+-----+
    |    0| 10|    2|
    |   10| 20|    1|
    +-----+---+-----+
    >>> (df.groupBy("k", window("t", TimeWindows.of(10).advanceBy(5))).count()
    ...  .select("window.start", "window.end", "count").orderBy("start").show())
    +-----+---+-----+
    |start|end|count|
    +-----+---+-----+
    |   -5|  5|    2|
    |    0| 10|    2|
    |    5| 15|    1|
    |   10| 20|    1|
    +-----+---+-----+
    >>> TimeWindows.of("1 day").withOffset("6 hours").grace("1 hour").spec
    'tumbling 1 day offset 6 hours grace 1 hour'
    """

    @classmethod
    def of(cls, size: SizeLike) -> "TimeWindows":
        """Tumbling windows of the given size; :meth:`advanceBy` makes them hopping.

        :param size: a duration, as a string (``"10 minutes"``, ``"1 hour 30 minutes"``) or a
            :class:`datetime.timedelta`; or an ``int``, a number of ticks of an integral time
            column's own unit (e.g. ``60_000`` for one minute of epoch milliseconds).
        :raises ValueError: when the size is not positive or cannot be parsed (the message is the
            JVM's; checked at once when a SparkSession is running, otherwise on first use).
        :raises TypeError: for a size of another type.
        """
        _check_length(size, "a window size", "'1 hour'")
        return cls(size)

    def __init__(
        self,
        size: SizeLike,
        advance: Optional[SizeLike] = None,
        offset: Optional[SizeLike] = None,
        grace: Optional[GraceLike] = None,
    ) -> None:
        """Use :meth:`TimeWindows.of` (and :meth:`advanceBy`, :meth:`withOffset`, :meth:`grace`) instead."""
        self.size = size
        #: The advance given with :meth:`advanceBy`, or None for tumbling windows.
        self.advance = advance
        #: The offset given with :meth:`withOffset`, or None.
        self.offset = offset
        #: The grace period given with :meth:`grace`, or None.
        self.grace_period = grace
        description = (
            f"TimeWindows.of({size!r})"
            + ("" if advance is None else f".advanceBy({advance!r})")
            + ("" if offset is None else f".withOffset({offset!r})")
            + ("" if grace is None else f".grace({grace!r})")
        )

        def spec() -> str:
            kind = (
                f"tumbling {_length_spec(size)}" if advance is None
                else f"hopping {_length_spec(size)} every {_length_spec(advance)}"
            )
            return kind + ("" if offset is None else f" offset {_length_spec(offset)}") + _grace_spec(grace)

        super().__init__(description, lambda jvm: _build_time(jvm, size, advance, offset, grace), spec)

    def advanceBy(self, advance: SizeLike) -> "TimeWindows":  # noqa: N802 (Kafka's name)
        """Hopping windows: a window of the size starts every ``advance``.

        The advance must be positive and at most the size (checked when the time column is known,
        as the size and advance may be in different terms); a size that is not a multiple of the
        advance is fine. Like Spark's ``window(ts, size, slideDuration)``.

        :param advance: a duration (``"10 minutes"``, :class:`datetime.timedelta`) or an ``int``
            number of ticks.
        :returns: a new :class:`TimeWindows`; this one is unchanged.
        :raises ValueError: when the advance is not positive or cannot be parsed.
        :raises TypeError: for an advance of another type.
        """
        _check_length(advance, "a window advance", "'10 minutes'")
        return type(self)(self.size, advance, self.offset, self.grace_period)

    def withOffset(self, offset: SizeLike) -> "TimeWindows":  # noqa: N802 (Kafka-style name)
        """Windows whose starts are shifted by ``offset`` from the epoch (Spark's ``startTime``):
        zero or more, and less than the advance (the size for tumbling windows), e.g.
        ``TimeWindows.of("1 day").withOffset("6 hours")`` for days from 06:00 to 06:00 UTC.

        :param offset: a duration or an ``int`` number of ticks.
        :returns: a new :class:`TimeWindows`; this one is unchanged.
        :raises ValueError: when the offset is negative or cannot be parsed; an offset not less
            than the advance is an error when the time column is known.
        :raises TypeError: for an offset of another type.
        """
        _check_length(offset, "a window offset", "'10 seconds'")
        return type(self)(self.size, self.advance, offset, self.grace_period)

    def grace(self, grace: GraceLike) -> "TimeWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`TimeWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return type(self)(self.size, self.advance, self.offset, grace)


class CumulativeWindows(WindowDefinition):
    """Cumulative windows (Flink's CUMULATE): a running total that restarts every period.

    Time is cut into periods of ``max_size`` starting at ``offset + k * max_size``; each period
    ``s`` has the windows ``[s, s + step)``, ``[s, s + 2 * step)``, ..., ``[s, s + max_size)``,
    half-open like Spark's ``window()``. Per key, only windows that hold records exist, e.g.
    ``CumulativeWindows.of("1 hour", "1 day")``: the day's total so far, every hour. Over times in
    ticks, periods of 10 growing by 5:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import CumulativeWindows, window
    >>> df = spark.createDataFrame([("a", 1, 10), ("a", 4, 20), ("a", 7, 30), ("a", 12, 40)],
    ...                            "k STRING, t BIGINT, v BIGINT")
    >>> (df.groupBy("k", window("t", CumulativeWindows.of(5, 10))).agg(F.sum("v").alias("sum"))
    ...  .select("window.start", "window.end", "sum").orderBy("start", "end").show())
    +-----+---+---+
    |start|end|sum|
    +-----+---+---+
    |    0|  5| 30|
    |    0| 10| 60|
    |   10| 15| 40|
    |   10| 20| 40|
    +-----+---+---+
    """

    @classmethod
    def of(cls, step: SizeLike, max_size: SizeLike) -> "CumulativeWindows":
        """Windows growing by ``step`` within periods of ``max_size``, a whole multiple of the step.

        :param step: a duration (``"1 hour"``, :class:`datetime.timedelta`) or an ``int`` number
            of ticks of an integral time column.
        :param max_size: the period, in the same terms (both durations, or both ``int`` ticks).
        :raises ValueError: when the step or max size is not positive or cannot be parsed; a max
            size that is not a whole multiple of the step is an error when the time column is known.
        :raises TypeError: for arguments of other types, or ticks mixed with durations.
        """
        _check_length(step, "a cumulative window step", "'1 hour'")
        _check_length(max_size, "a cumulative window max size", "'1 day'")
        if isinstance(step, int) != isinstance(max_size, int):
            raise TypeError(
                "the step and max size of cumulative windows must both be durations (str or "
                f"datetime.timedelta) or both int ticks, not {type(step).__name__} and {type(max_size).__name__}"
            )
        return cls(step, max_size)

    def __init__(
        self,
        step: SizeLike,
        max_size: SizeLike,
        offset: Optional[SizeLike] = None,
        grace: Optional[GraceLike] = None,
    ) -> None:
        """Use :meth:`CumulativeWindows.of` (and :meth:`withOffset`, :meth:`grace`) instead."""
        self.step = step
        self.max_size = max_size
        #: The offset given with :meth:`withOffset`, or None.
        self.offset = offset
        #: The grace period given with :meth:`grace`, or None.
        self.grace_period = grace
        description = (
            f"CumulativeWindows.of({step!r}, {max_size!r})"
            + ("" if offset is None else f".withOffset({offset!r})")
            + ("" if grace is None else f".grace({grace!r})")
        )

        def spec() -> str:
            return (
                f"cumulative {_length_spec(step)} up to {_length_spec(max_size)}"
                + ("" if offset is None else f" offset {_length_spec(offset)}")
                + _grace_spec(grace)
            )

        super().__init__(description, lambda jvm: _build_cumulative(jvm, step, max_size, offset, grace), spec)

    def withOffset(self, offset: SizeLike) -> "CumulativeWindows":  # noqa: N802 (Kafka-style name)
        """Periods shifted by ``offset`` from the epoch: zero or more, less than the max size, e.g.
        ``CumulativeWindows.of("1 hour", "1 day").withOffset("6 hours")`` for days from 06:00 UTC.

        :returns: a new :class:`CumulativeWindows`; this one is unchanged.
        :raises ValueError: when the offset is negative or cannot be parsed.
        :raises TypeError: for an offset of another type.
        """
        _check_length(offset, "a window offset", "'6 hours'")
        return type(self)(self.step, self.max_size, offset, self.grace_period)

    def grace(self, grace: GraceLike) -> "CumulativeWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`CumulativeWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return type(self)(self.step, self.max_size, self.offset, grace)


class CalendarWindows(WindowDefinition):
    """Windows aligned to the local calendar of a time zone: ``n`` days, weeks, months, quarters
    or years, each ``[start, end)`` from local midnight to local midnight, so a day lasts 23 or 25
    hours across a daylight-saving change and a month has its real length, e.g.
    ``CalendarWindows.months(3).advanceBy(1)``: 3 months, every month. Monthly totals in New York,
    in a session whose time zone is UTC:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import CalendarWindows, window
    >>> sales = spark.createDataFrame(
    ...     [("2024-01-31 23:30:00", 10), ("2024-02-01 04:30:00", 20), ("2024-02-01 05:30:00", 40)],
    ...     "ts STRING, amount INT",
    ... ).withColumn("ts", F.to_timestamp("ts"))
    >>> (sales.groupBy(window("ts", CalendarWindows.months(1).inZone("America/New_York")))
    ...  .agg(F.sum("amount").alias("total"))
    ...  .select("window.start", "window.end", "total").orderBy("start").show())
    +-------------------+-------------------+-----+
    |              start|                end|total|
    +-------------------+-------------------+-----+
    |2024-01-01 05:00:00|2024-02-01 05:00:00|   30|
    |2024-02-01 05:00:00|2024-03-01 05:00:00|   40|
    +-------------------+-------------------+-----+

    Units are counted from 1970-01-01 (weeks from the week holding it that starts on the first
    day, Monday by default), so ``months(3)`` are calendar quarters. The zone is :meth:`inZone`'s,
    else the session time zone of a TIMESTAMP column; TIMESTAMP_NTZ values are local times and
    ignore it; an integral epoch column needs :meth:`inZone` for months, quarters and years.
    """

    @classmethod
    def days(cls, n: int) -> "CalendarWindows":
        """Windows of ``n`` local days."""
        return cls._of("days", n)

    @classmethod
    def weeks(cls, n: int, first_day: Optional[str] = None) -> "CalendarWindows":
        """Windows of ``n`` weeks starting on ``first_day`` (``"MONDAY"`` by default, ``"SUNDAY"``, ...)."""
        if first_day is not None and not isinstance(first_day, str):
            raise TypeError(f"first_day must be a day name such as 'SUNDAY', not {type(first_day).__name__}")
        return cls._of("weeks", n, first_day=first_day)

    @classmethod
    def months(cls, n: int) -> "CalendarWindows":
        """Windows of ``n`` calendar months."""
        return cls._of("months", n)

    @classmethod
    def quarters(cls, n: int) -> "CalendarWindows":
        """Windows of ``n`` calendar quarters (starting January, April, July, October)."""
        return cls._of("quarters", n)

    @classmethod
    def years(cls, n: int) -> "CalendarWindows":
        """Windows of ``n`` calendar years."""
        return cls._of("years", n)

    @classmethod
    def _of(cls, unit: str, n: Any, first_day: Optional[str] = None) -> "CalendarWindows":
        _check_count(n, f"a number of {unit}")
        return cls(unit, n, first_day=first_day)

    def __init__(
        self,
        unit: str,
        n: int,
        advance: Optional[int] = None,
        zone: Optional[str] = None,
        first_day: Optional[str] = None,
        grace: Optional[GraceLike] = None,
    ) -> None:
        """Use :meth:`days`, :meth:`weeks`, :meth:`months`, :meth:`quarters` or :meth:`years` instead."""
        #: The unit: "days", "weeks", "months", "quarters" or "years".
        self.unit = unit
        self.n = n
        #: The advance in whole units given with :meth:`advanceBy`, or None for tumbling windows.
        self.advance = advance
        #: The zone given with :meth:`inZone`, or None for the session time zone.
        self.zone = zone
        self.first_day = first_day
        #: The grace period given with :meth:`grace`, or None.
        self.grace_period = grace
        description = (
            f"CalendarWindows.{unit}({n!r}" + ("" if first_day is None else f", {first_day!r}") + ")"
            + ("" if advance is None else f".advanceBy({advance!r})")
            + ("" if zone is None else f".inZone({zone!r})")
            + ("" if grace is None else f".grace({grace!r})")
        )

        def spec() -> str:
            name = unit[:-1] if n == 1 else unit
            first = "" if first_day is None or first_day.upper() == "MONDAY" else f" from {first_day.lower()}"
            return (
                f"calendar {n} {name}" + ("" if advance is None else f" every {advance}") + first
                + ("" if zone is None else f" in '{zone}'") + _grace_spec(grace)
            )

        super().__init__(description, lambda jvm: _build_calendar(jvm, unit, n, advance, zone, first_day, grace), spec)

    def advanceBy(self, units: int) -> "CalendarWindows":  # noqa: N802 (Kafka's name)
        """Hopping: a window starts every ``units`` units (at most the size), e.g.
        ``CalendarWindows.months(3).advanceBy(1)``.

        :returns: a new :class:`CalendarWindows`; this one is unchanged.
        :raises ValueError: when the advance is not positive or larger than the size.
        :raises TypeError: for an advance that is not an int.
        """
        _check_count(units, "a calendar window advance")
        return type(self)(self.unit, self.n, units, self.zone, self.first_day, self.grace_period)

    def inZone(self, zone: str) -> "CalendarWindows":  # noqa: N802 (JVM name)
        """The local calendar of ``zone``: a region such as ``"Europe/Berlin"`` or an offset such
        as ``"+05:30"``.

        :returns: a new :class:`CalendarWindows`; this one is unchanged.
        :raises ValueError: for an unknown zone.
        :raises TypeError: for a zone that is not a str.
        """
        if not isinstance(zone, str):
            raise TypeError(f"the time zone must be a str such as 'Europe/Berlin', not {type(zone).__name__}")
        return type(self)(self.unit, self.n, self.advance, zone, self.first_day, self.grace_period)

    def grace(self, grace: GraceLike) -> "CalendarWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`CalendarWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return type(self)(self.unit, self.n, self.advance, self.zone, self.first_day, grace)


class UnlimitedWindows(WindowDefinition):
    """Kafka Streams' unlimited windows: one window per key from a start time on, never closing.

    Batch gives one row per key; streaming needs ``emit="updates"`` (a window that never closes is
    never final) and emits each key's current value as rows arrive. The start is the epoch unless
    :meth:`startOn` says another; rows before it are in no window and are counted
    (``unwindowedRows`` in :func:`windowagg.metrics`; ``unwindowed_rows`` in streaming), never
    dropped silently. The window's end is the largest time the column can hold. Over times in
    ticks, from 3 on (``UnlimitedWindows.of().startOn("2024-01-01T00:00:00Z")`` for a TIMESTAMP):

    >>> from pyspark.sql import functions as F
    >>> from windowagg import UnlimitedWindows, window
    >>> df = spark.createDataFrame([("a", 1, 10), ("a", 5, 20), ("a", 9, 30), ("b", 7, 5)],
    ...                            "k STRING, t BIGINT, v BIGINT")
    >>> (df.groupBy("k", window("t", UnlimitedWindows.of().startOn(3))).agg(F.sum("v").alias("sum"))
    ...  .select("k", "window.start", "window.end", "sum").orderBy("k").show())
    +---+-----+-------------------+---+
    |  k|start|                end|sum|
    +---+-----+-------------------+---+
    |  a|    3|9223372036854775807| 50|
    |  b|    3|9223372036854775807|  5|
    +---+-----+-------------------+---+
    """

    @classmethod
    def of(cls) -> "UnlimitedWindows":
        """One window per key from the epoch on."""
        return cls()

    def __init__(self, start: Optional[Union[str, int]] = None, grace: Optional[GraceLike] = None) -> None:
        """Use :meth:`UnlimitedWindows.of` (and :meth:`startOn`, :meth:`grace`) instead."""
        #: The start given with :meth:`startOn`, or None for the epoch.
        self.start = start
        #: The grace period given with :meth:`grace`, or None.
        self.grace_period = grace
        description = (
            "UnlimitedWindows.of()" + ("" if start is None else f".startOn({start!r})")
            + ("" if grace is None else f".grace({grace!r})")
        )

        def spec() -> str:
            return "unlimited" + ("" if start is None else f" starting {start}") + _grace_spec(grace)

        super().__init__(description, lambda jvm: _build_unlimited(jvm, start, grace), spec)

    def startOn(self, start: Union[str, int, datetime.datetime]) -> "UnlimitedWindows":  # noqa: N802 (Kafka's name)
        """The window starts at ``start``: an ISO-8601 instant (``"2024-01-01T00:00:00Z"``), an
        aware :class:`datetime.datetime`, or an ``int`` number of ticks of an integral time column.

        :returns: a new :class:`UnlimitedWindows`; this one is unchanged.
        :raises ValueError: for text that is not an instant, or a naive datetime.
        :raises TypeError: for a start of another type.
        """
        if isinstance(start, datetime.datetime):
            if start.tzinfo is None:
                raise ValueError("the start of unlimited windows must be an aware datetime (with a tzinfo)")
            start = start.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
        if isinstance(start, bool) or not isinstance(start, (str, int)):
            raise TypeError(
                f"the start of unlimited windows must be an ISO-8601 str, an aware datetime or int ticks, not {type(start).__name__}"
            )
        if isinstance(start, int) and not _LONG_MIN <= start <= _LONG_MAX:
            raise ValueError(f"the start of unlimited windows {start} does not fit in a 64-bit number of ticks")
        return type(self)(start, self.grace_period)

    def grace(self, grace: GraceLike) -> "UnlimitedWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`UnlimitedWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return type(self)(self.start, grace)


class _StormWindows(WindowDefinition):
    """What Storm's two kinds share (the JVM's ``windowagg.StormWindows``): a length, the slide (in
    rows or in time), the lag and the tie-break column, and the builders that change them."""

    _JVM_CLASS = ""  # the JVM class, e.g. "windowagg.CountWindows"

    def __init__(
        self,
        length: Any,
        slide_rows: Optional[int] = None,
        slide_interval: Optional[SizeLike] = None,
        lag: Optional[GraceLike] = None,
        tie_break: Optional[str] = None,
    ) -> None:
        """Use the kind's ``of`` or ``tumbling`` (and :meth:`slide`, :meth:`every`, :meth:`lag`,
        :meth:`tieBreak`) instead."""
        #: The window's length: a number of rows (count windows) or a length of time.
        self.length = length
        #: The slide in rows given with :meth:`slide` (or a count ``tumbling``), or None.
        self.slide_rows = slide_rows
        #: The slide in time given with :meth:`every` (or a duration ``tumbling``), or None.
        self.slide_interval = slide_interval
        #: The lag given with :meth:`lag`, or None.
        self.lag_period = lag
        #: The tie-break column given with :meth:`tieBreak`, or None.
        self.tie_break_column = tie_break
        description = (
            f"{type(self).__name__}.of({length!r})" + _storm_description(slide_rows, slide_interval, lag, tie_break)
        )
        super().__init__(
            description,
            lambda jvm: _build_storm(jvm, self._JVM_CLASS, length, slide_rows, slide_interval, lag, tie_break),
            lambda: self._kind_spec() + _storm_clauses_spec(slide_rows, slide_interval, lag, tie_break),
        )

    def _kind_spec(self) -> str:
        raise NotImplementedError

    def slide(self, rows: int):
        """Evaluates a window after every ``rows`` rows (Storm's ``Count`` sliding interval): the
        window ends at that row's time. A count window holds the last :attr:`length` rows; a
        duration window the rows of the last :attr:`length` of time, every row at its end time
        included. Rows between windows (a slide longer than what a window holds) are in none.

        :param rows: a positive ``int`` number of rows; 1 is a window per row.
        :returns: a new definition of the same kind (its slide replaces one given with
            :meth:`every`); this one is unchanged.
        :raises ValueError: when ``rows`` is not positive.
        :raises TypeError: for ``rows`` that is not an int.
        """
        _check_rows(rows, "the slide")
        return type(self)(self.length, rows, None, self.lag_period, self.tie_break_column)

    def every(self, interval: SizeLike):
        """Evaluates a window at every multiple of ``interval`` from the epoch (Storm's ``Duration``
        sliding interval). A count window ending there holds the last :attr:`length` rows up to
        it, and is evaluated only when rows came since the previous one; a duration window is
        ``(end - length, end]``, only where it holds rows (an interval longer than the length
        leaves the rows between windows in none, counted).

        :param interval: a duration (``"10 seconds"``, :class:`datetime.timedelta`) or an ``int``
            number of ticks of an integral time column.
        :returns: a new definition of the same kind (its slide replaces one given with
            :meth:`slide`); this one is unchanged.
        :raises ValueError: when the interval is not positive or cannot be parsed (checked at once
            when a SparkSession is running, otherwise on first use).
        :raises TypeError: for an interval of another type.
        """
        _check_length(interval, "a slide interval", "'10 seconds'")
        return type(self)(self.length, None, interval, self.lag_period, self.tie_break_column)

    def lag(self, lag: GraceLike):
        """How far behind the latest row time rows may still arrive (Storm's ``withLag``), for
        streaming queries: where the input has no ``withWatermark`` on the time column, the
        watermark is the latest time seen minus the lag. A window is evaluated once its end is
        behind the watermark; a row behind the watermark is late (see ``late_rows`` of
        :func:`windowagg.window`). Batch queries ignore it.

        :param lag: a duration, as a string (``"5 seconds"``) or a :class:`datetime.timedelta`;
            zero is allowed.
        :returns: a new definition of the same kind; this one is unchanged.
        :raises ValueError: when the lag is negative or cannot be parsed (a timedelta is checked
            at once; a string at once when a SparkSession is running, otherwise on first use).
        :raises TypeError: for a lag of another type.
        """
        _check_lag(lag)
        return type(self)(self.length, self.slide_rows, self.slide_interval, lag, self.tie_break_column)

    def tieBreak(self, column: str):  # noqa: N802 (JVM name)
        """A column ordering rows that share a time (a sequence number, an offset): which rows a
        count window cutting through them keeps, which row is the m-th for a slide in rows, and
        the order ``collect_list``, ``first`` and ``last`` see. Without one, such rows are ordered
        by the values the aggregates read: a fixed order, not one a user would choose.

        :param column: the name of a column of the input whose type can be ordered.
        :returns: a new definition of the same kind; this one is unchanged.
        :raises ValueError: for an empty name; a column the input lacks is an AnalysisException
            when the query is analysed.
        :raises TypeError: for a name that is not a str.
        """
        column = _check_tie_break(column)
        return type(self)(self.length, self.slide_rows, self.slide_interval, self.lag_period, column)


class CountWindows(_StormWindows):
    """Apache Storm's count windows: per key, each window holds the last ``n`` rows up to its end.

    A window is evaluated at every row (:meth:`of`, Storm's ``withWindow(Count(n))``), after every
    m-th row (:meth:`slide`: ``withWindow(Count(n), Count(m))``; :meth:`tumbling`:
    ``withTumblingWindow(Count(n))``), or at every multiple of a length of time that brings new
    rows (:meth:`every`: ``withWindow(Count(n), Duration(d))``). Over the rows at 1 to 5 ticks, the
    last 3 rows every 2 rows, and tumbling windows of 2 rows:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import CountWindows, window
    >>> df = spark.createDataFrame([("a", t, 10 * t) for t in range(1, 6)], "k STRING, t BIGINT, v BIGINT")
    >>> (df.groupBy("k", window("t", CountWindows.of(3).slide(2))).agg(F.collect_list("v").alias("values"))
    ...  .select("window.start", "window.end", "values").orderBy("end").show())
    +-----+---+------------+
    |start|end|      values|
    +-----+---+------------+
    |    1|  2|    [10, 20]|
    |    2|  4|[20, 30, 40]|
    +-----+---+------------+
    >>> (df.groupBy("k", window("t", CountWindows.tumbling(2))).agg(F.collect_list("v").alias("values"))
    ...  .select("window.start", "window.end", "values").orderBy("end").show())
    +-----+---+--------+
    |start|end|  values|
    +-----+---+--------+
    |    1|  2|[10, 20]|
    |    3|  4|[30, 40]|
    +-----+---+--------+
    >>> CountWindows.of(30).every("10 seconds").lag("5 seconds").tieBreak("seq").spec
    'count 30 rows every 10 seconds lag 5 seconds tie break seq'

    Rows are counted in order of time, then of the tie-break column (:meth:`tieBreak`), then of the
    values the aggregates read, so results never depend on arrival order or partitioning. A
    window's ``end`` is the time of its last row (inclusive) and its ``start`` the time of its
    first row. Rows in no window (after a key's last m-th row, or between windows when the slide
    exceeds the length) are counted (``unwindowedRows`` in :func:`windowagg.metrics`;
    ``unwindowed_rows`` in streaming), not aggregated. In streaming, windows come out final only
    (``emit="updates"`` is refused).
    """

    @classmethod
    def of(cls, n: int) -> "CountWindows":
        """Windows of the last ``n`` rows, one evaluated at every row (a window per row, like
        Spark's ``ROWS BETWEEN n - 1 PRECEDING AND CURRENT ROW``); :meth:`slide` or :meth:`every`
        evaluate less often.

        :param n: the number of rows a window holds, a positive ``int``.
        :raises ValueError: when ``n`` is not positive.
        :raises TypeError: for an ``n`` that is not an int.
        """
        _check_rows(n, "a count window's length")
        return cls(n)

    @classmethod
    def tumbling(cls, n: int) -> "CountWindows":
        """Windows of ``n`` rows that do not overlap, one after every n-th row (Storm's
        ``withTumblingWindow(Count(n))``): ``CountWindows.of(n).slide(n)``. A key's last rows,
        fewer than ``n``, are in no window.

        :param n: the number of rows of a window, a positive ``int``.
        :raises ValueError: when ``n`` is not positive.
        :raises TypeError: for an ``n`` that is not an int.
        """
        _check_rows(n, "a count window's length")
        return cls(n, slide_rows=n)

    _JVM_CLASS = "windowagg.CountWindows"

    def _kind_spec(self) -> str:
        return f"count {_rows_spec(self.length)}"


class DurationWindows(_StormWindows):
    """Apache Storm's duration windows: per key, each window holds the rows in ``(end - length, end]``.

    A window is evaluated at every row, ending at its time (:meth:`of`, Storm's
    ``withWindow(Duration(l))``), after every m-th row (:meth:`slide`:
    ``withWindow(Duration(l), Count(m))``), or at every multiple of an interval, only where it
    holds rows (:meth:`every`: ``withWindow(Duration(l), Duration(d))``; :meth:`tumbling`:
    ``withTumblingWindow(Duration(l))``). Over times in ticks, a trailing window of 5 per row, and
    tumbling windows of 5:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import DurationWindows, window
    >>> df = spark.createDataFrame([("a", 1), ("a", 4), ("a", 8)], "k STRING, t BIGINT")
    >>> (df.groupBy("k", window("t", DurationWindows.of(5))).agg(F.collect_list("t").alias("times"))
    ...  .select("window.start", "window.end", "times").orderBy("end").show())
    +-----+---+------+
    |start|end| times|
    +-----+---+------+
    |   -4|  1|   [1]|
    |   -1|  4|[1, 4]|
    |    3|  8|[4, 8]|
    +-----+---+------+
    >>> (df.groupBy("k", window("t", DurationWindows.tumbling(5))).agg(F.collect_list("t").alias("times"))
    ...  .select("window.start", "window.end", "times").orderBy("end").show())
    +-----+---+------+
    |start|end| times|
    +-----+---+------+
    |    0|  5|[1, 4]|
    |    5| 10|   [8]|
    +-----+---+------+
    >>> DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds").spec
    'duration 20 seconds every 10 seconds lag 5 seconds'

    A window reports ``start = end - length`` (exclusive) and ``end`` (inclusive), as Storm does;
    a window per row, ``(t - length, t]``, is what Spark's ``RANGE BETWEEN`` frame of ``length`` minus
    one tick ``PRECEDING AND CURRENT ROW`` gives each row (a frame of ``length PRECEDING`` is
    ``[t - length, t]``, one tick more). A window
    holds every row at its end time. With a slide in rows, rows are counted in order of time,
    then of the tie-break column, then of the values the aggregates read; rows in no window (when
    m rows span more than the length, or a slide longer than the length) are counted, not
    aggregated. In streaming, windows come out final only (``emit="updates"`` is refused).
    """

    @classmethod
    def of(cls, length: SizeLike) -> "DurationWindows":
        """A trailing window ``(t - length, t]`` per row, t its time; :meth:`slide` or
        :meth:`every` evaluate less often.

        :param length: a duration, as a string (``"20 seconds"``, ``"1 hour 30 minutes"``) or a
            :class:`datetime.timedelta`; or an ``int``, a number of ticks of an integral time
            column's own unit (e.g. ``20_000`` for 20 s of epoch milliseconds).
        :raises ValueError: when the length is not positive or cannot be parsed (the message is
            the JVM's; checked at once when a SparkSession is running, otherwise on first use).
        :raises TypeError: for a length of another type.
        """
        _check_length(length, "a window length", "'20 seconds'")
        return cls(length)

    @classmethod
    def tumbling(cls, length: SizeLike) -> "DurationWindows":
        """Windows of ``length`` that do not overlap, ending at multiples of it (Storm's
        ``withTumblingWindow(Duration(l))``): ``DurationWindows.of(length).every(length)``.

        :param length: a duration (``"5 seconds"``, :class:`datetime.timedelta`) or an ``int``
            number of ticks of an integral time column.
        :raises ValueError: when the length is not positive or cannot be parsed.
        :raises TypeError: for a length of another type.
        """
        _check_length(length, "a window length", "'5 seconds'")
        return cls(length, slide_interval=length)

    _JVM_CLASS = "windowagg.DurationWindows"

    def _kind_spec(self) -> str:
        return f"duration {_length_spec(self.length)}"


class CustomWindows(WindowDefinition):
    """A user's own kind of windows: a JVM class implementing ``windowagg.EnumerableWindowDefinition``
    (it lists the windows ``[start, end)`` that contain a time), loaded by name from the driver's
    classpath (add its jar with ``spark.jars`` / ``--jars``). ``windowagg.examples.FiscalQuarters``, in
    the project's jar of examples (``jvm/examples``), cuts years that start in ``firstMonth`` into
    quarters:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import CustomWindows, window
    >>> sales = spark.createDataFrame(
    ...     [("2024-01-15 12:00:00", 10), ("2024-02-10 12:00:00", 20), ("2024-04-30 12:00:00", 40)],
    ...     "ts STRING, amount INT",
    ... ).withColumn("ts", F.to_timestamp("ts"))
    >>> quarters = CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=2)
    >>> quarters.spec
    'custom windowagg.examples.FiscalQuarters(firstMonth=2)'
    >>> (sales.groupBy(window("ts", quarters)).agg(F.sum("amount").alias("total"))
    ...  .select("window.start", "window.end", "total").orderBy("start").show())
    +-------------------+-------------------+-----+
    |              start|                end|total|
    +-------------------+-------------------+-----+
    |2023-11-01 00:00:00|2024-02-01 00:00:00|   10|
    |2024-02-01 00:00:00|2024-05-01 00:00:00|   60|
    +-------------------+-------------------+-----+

    The class needs a public constructor taking a ``java.util.Map<String, String>`` of
    parameters, or one taking no arguments when it is given none.
    """

    @classmethod
    def of(cls, class_name: str, **params: Any) -> "CustomWindows":
        """The windows of the JVM class ``class_name``, made from ``params``.

        :param class_name: the fully qualified JVM class name.
        :param params: the class's parameters; each value is passed as ``str(value)`` in a
            ``java.util.Map[String, String]``.
        :raises ValueError: when the class cannot be found, is not a window definition, or rejects
            its parameters (the message is the JVM's; checked at once when a SparkSession is
            running, otherwise on first use).
        :raises TypeError: for a class name that is not a str.
        """
        if not isinstance(class_name, str):
            raise TypeError(f"the custom window class name must be a str, not {type(class_name).__name__}")
        if not class_name.strip():
            raise ValueError("the custom window class name must not be empty")
        return cls(class_name.strip(), {str(k): str(v) for k, v in params.items()})

    def __init__(
        self, class_name: str, params: Optional[Dict[str, str]] = None, grace: Optional[GraceLike] = None
    ) -> None:
        """Use :meth:`CustomWindows.of` (and :meth:`grace`) instead."""
        self.class_name = class_name
        #: The parameters, as the strings passed to the class.
        self.params: Dict[str, str] = dict(params or {})
        #: The grace period given with :meth:`grace`, or None.
        self.grace_period = grace
        ordered = sorted(self.params.items())
        description = (
            f"CustomWindows.of({class_name!r}"
            + "".join(f", {k}={v!r}" for k, v in ordered)
            + ")"
            + ("" if grace is None else f".grace({grace!r})")
        )

        def spec() -> str:
            arguments = "" if not ordered else "(" + ", ".join(f"{k}={v}" for k, v in ordered) + ")"
            return f"custom {class_name}{arguments}{_grace_spec(grace)}"

        params_now = dict(self.params)
        super().__init__(description, lambda jvm: _build_custom(jvm, class_name, params_now, grace), spec)

    def grace(self, grace: GraceLike) -> "CustomWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`CustomWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return type(self)(self.class_name, self.params, grace)


def _check_length(value: Any, what: str, example: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (str, datetime.timedelta, int)):
        raise TypeError(
            f"{what} must be a str such as {example}, a datetime.timedelta or an int number of "
            f"ticks, not {type(value).__name__}"
        )
    if isinstance(value, int) and not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f"{what} {value} does not fit in a 64-bit number of ticks")


def _check_count(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 < value <= 2**31 - 1:
        raise ValueError(f"{what} must be a positive whole number, got {value}")


def _check_grace(grace: Any) -> None:
    if isinstance(grace, bool) or not isinstance(grace, (str, datetime.timedelta)):
        raise TypeError(
            "a grace period must be a str such as '1 minute' or a datetime.timedelta, "
            f"not {type(grace).__name__}"
        )
    if isinstance(grace, datetime.timedelta) and grace < datetime.timedelta(0):
        raise ValueError(f"the grace period must not be negative, got {grace.total_seconds()} seconds")


def _check_rows(value: Any, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int number of rows, not {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{what} must be a positive number of rows, got {value}")
    if value > _LONG_MAX:
        raise ValueError(f"{what} {value} does not fit in a 64-bit number of rows")


def _check_lag(lag: Any) -> None:
    if isinstance(lag, bool) or not isinstance(lag, (str, datetime.timedelta)):
        raise TypeError(
            f"a lag must be a str such as '5 seconds' or a datetime.timedelta, not {type(lag).__name__}"
        )
    if isinstance(lag, datetime.timedelta) and lag < datetime.timedelta(0):
        raise ValueError(f"the lag must not be negative, got {lag.total_seconds()} seconds")


def _check_tie_break(column: Any) -> str:
    """The tie-break column's name, trimmed as the JVM keeps it."""
    if not isinstance(column, str):
        raise TypeError(f"the tie-break column must be a column name (a str), not {type(column).__name__}")
    if not column.strip():
        raise ValueError("the tie-break column name must not be empty")
    return column.strip()


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


def _build_time(
    jvm: Any, size: SizeLike, advance: Optional[SizeLike], offset: Optional[SizeLike], grace: Optional[GraceLike]
) -> Any:
    definition = _jvm.jvm_class(jvm, "windowagg.TimeWindows").of(_span(jvm, size))
    if advance is not None:
        definition = definition.advanceBy(_span(jvm, advance))
    if offset is not None:
        definition = definition.withOffset(_span(jvm, offset))
    return _with_grace(jvm, definition, grace)


def _build_cumulative(
    jvm: Any, step: SizeLike, max_size: SizeLike, offset: Optional[SizeLike], grace: Optional[GraceLike]
) -> Any:
    factory = _jvm.jvm_class(jvm, "windowagg.CumulativeWindows")
    if type(step) is not type(max_size) and not isinstance(step, int):
        # a str and a timedelta: the JVM takes two strings or two Durations; the timedelta as text is exact
        definition = factory.of(_duration_text(step), _duration_text(max_size))
    else:
        definition = factory.of(_span(jvm, step), _span(jvm, max_size))
    if offset is not None:
        definition = definition.withOffset(_span(jvm, offset))
    return _with_grace(jvm, definition, grace)


def _build_calendar(
    jvm: Any, unit: str, n: int, advance: Optional[int], zone: Optional[str], first_day: Optional[str],
    grace: Optional[GraceLike],
) -> Any:
    factory = _jvm.jvm_class(jvm, "windowagg.CalendarWindows")
    definition = factory.weeks(n, first_day) if unit == "weeks" and first_day is not None else getattr(factory, unit)(n)
    if advance is not None:
        definition = definition.advanceBy(advance)
    if zone is not None:
        definition = definition.inZone(zone)
    return _with_grace(jvm, definition, grace)


def _build_unlimited(jvm: Any, start: Optional[Union[str, int]], grace: Optional[GraceLike]) -> Any:
    definition = _jvm.jvm_class(jvm, "windowagg.UnlimitedWindows").of()
    if start is not None:
        definition = definition.startOn(start)  # a str picks startOn(String), an int startOn(long)
    return _with_grace(jvm, definition, grace)


def _build_storm(
    jvm: Any, jvm_class: str, length: SizeLike, slide_rows: Optional[int], slide_interval: Optional[SizeLike],
    lag: Optional[GraceLike], tie_break: Optional[str],
) -> Any:
    # An int picks of(long) (rows, or ticks), a str of(String), a timedelta of(Duration).
    definition = _jvm.jvm_class(jvm, jvm_class).of(_span(jvm, length))
    return _with_storm_clauses(jvm, definition, slide_rows, slide_interval, lag, tie_break)


def _with_storm_clauses(
    jvm: Any, definition: Any, slide_rows: Optional[int], slide_interval: Optional[SizeLike], lag: Optional[GraceLike],
    tie_break: Optional[str],
) -> Any:
    """Storm's optional parts on a JVM CountWindows or DurationWindows (tumbling is of(n).slide(n) / of(l).every(l))."""
    if slide_rows is not None:
        definition = definition.slide(slide_rows)
    if slide_interval is not None:
        definition = definition.every(_span(jvm, slide_interval))
    if lag is not None:
        definition = definition.lag(_span(jvm, lag))
    if tie_break is not None:
        definition = definition.tieBreak(tie_break)
    return definition


def _build_custom(jvm: Any, class_name: str, params: Dict[str, str], grace: Optional[GraceLike]) -> Any:
    factory = _jvm.jvm_class(jvm, "windowagg.CustomWindows")
    if params:
        java_params = jvm.java.util.HashMap()
        for key, value in params.items():
            java_params.put(key, value)
        definition = factory.of(class_name, java_params)
    else:
        definition = factory.of(class_name)
    return _with_grace(jvm, definition, grace)


def _span(jvm: Any, size: SizeLike) -> Any:
    return _java_duration(jvm, size) if isinstance(size, datetime.timedelta) else size


def _with_grace(jvm: Any, definition: Any, grace: Optional[GraceLike]) -> Any:
    return definition if grace is None else definition.grace(_span(jvm, grace))


# --- lengths in the spec grammar, for the Python fallback of WindowDefinition.spec ------------------

_NANOS_PER_UNIT = [
    (("w", "week", "weeks"), 7 * 86_400 * 10**9),
    (("d", "day", "days"), 86_400 * 10**9),
    (("h", "hr", "hrs", "hour", "hours"), 3_600 * 10**9),
    (("m", "min", "mins", "minute", "minutes"), 60 * 10**9),
    (("s", "sec", "secs", "second", "seconds"), 10**9),
    (("ms", "milli", "millis", "millisecond", "milliseconds"), 10**6),
    (("us", "micro", "micros", "microsecond", "microseconds"), 10**3),
    (("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 1),
]
_FORMAT_UNITS = [
    (86_400 * 10**9, "day"),
    (3_600 * 10**9, "hour"),
    (60 * 10**9, "minute"),
    (10**9, "second"),
    (10**6, "millisecond"),
    (10**3, "microsecond"),
    (1, "nanosecond"),
]
_LENGTH_PART = re.compile(r"([+-]?\d+(?:\.\d+)?)\s*([a-zA-Z]+)")


def _duration_nanos(text: str) -> Optional[int]:
    """The nanoseconds of a duration written as the JVM reads it ("1 hour 30 minutes", "250ms"),
    or None when it is not one (the JVM then reports the problem)."""
    trimmed = re.sub(r"(?i)^interval\s+", "", text.strip())
    parts = list(_LENGTH_PART.finditer(trimmed))
    if not parts or re.sub(r"\s", "", "".join(m.group(0) for m in parts)) != re.sub(r"\s", "", trimmed):
        return None
    total = decimal.Decimal(0)
    for m in parts:
        unit = m.group(2).lower()
        nanos = next((n for names, n in _NANOS_PER_UNIT if unit in names), None)
        if nanos is None:
            return None
        total += decimal.Decimal(m.group(1)) * nanos
    if total != total.to_integral_value() or abs(total) > _LONG_MAX:
        return None
    return int(total)


def _format_nanos(nanos: int) -> str:
    """A duration as the JVM writes it: its largest whole unit ("90 minutes", "250 milliseconds")."""
    if nanos == 0:
        return "0 seconds"
    for unit, name in _FORMAT_UNITS:
        if nanos % unit == 0:
            count = nanos // unit
            return f"{count} {name}{'' if abs(count) == 1 else 's'}"
    raise AssertionError("unreachable: every count of nanoseconds is whole")


def _timedelta_nanos(delta: datetime.timedelta) -> int:
    return ((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds) * 1000


def _duration_text(value: SizeLike) -> str:
    """A str or timedelta duration as text the JVM parses to the same duration."""
    if isinstance(value, datetime.timedelta):
        return _format_nanos(_timedelta_nanos(value))
    return str(value)


def _length_spec(value: Optional[SizeLike]) -> str:
    """A length as the spec grammar writes it: int ticks bare, durations in their largest whole unit."""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return _format_nanos(_timedelta_nanos(value))
    nanos = _duration_nanos(str(value))
    return str(value).strip() if nanos is None else _format_nanos(nanos)


def _grace_spec(grace: Optional[GraceLike]) -> str:
    return "" if grace is None else f" grace {_length_spec(grace)}"


def _rows_spec(n: int) -> str:
    return f"{n} {'row' if n == 1 else 'rows'}"


def _storm_clauses_spec(
    slide_rows: Optional[int], slide_interval: Optional[SizeLike], lag: Optional[GraceLike], tie_break: Optional[str]
) -> str:
    """Storm's optional clauses as the JVM writes them; a slide of 1 row is the default and left out."""
    if slide_rows is not None:
        every = "" if slide_rows == 1 else f" every {_rows_spec(slide_rows)}"
    else:
        every = "" if slide_interval is None else f" every {_length_spec(slide_interval)}"
    return (
        every + ("" if lag is None else f" lag {_length_spec(lag)}")
        + ("" if tie_break is None else f" tie break {_column_spec(tie_break)}")
    )


# words that start a clause of some kind in the spec grammar (WindowSpec.isClauseWord on the JVM)
_CLAUSE_WORDS = {"every", "offset", "grace", "gap", "up", "to", "lag", "tie", "break", "from", "in", "starting"}


def _column_spec(column: str) -> str:
    """A column name as the JVM's spec writes it: in backquotes when it holds a space or could read as a clause word."""
    if any(c.isspace() for c in column) or column.lower() in _CLAUSE_WORDS:
        return f"`{column}`"
    return column


def _storm_description(
    slide_rows: Optional[int], slide_interval: Optional[SizeLike], lag: Optional[GraceLike], tie_break: Optional[str]
) -> str:
    return (
        ("" if slide_rows is None else f".slide({slide_rows!r})")
        + ("" if slide_interval is None else f".every({slide_interval!r})")
        + ("" if lag is None else f".lag({lag!r})")
        + ("" if tie_break is None else f".tieBreak({tie_break!r})")
    )


def _ensure_definition(definition: Optional[WindowDefinition]) -> WindowDefinition:
    if not isinstance(definition, WindowDefinition):
        raise TypeError(
            "expected a window definition such as windowagg.SlidingWindows.of('10 minutes'), "
            "windowagg.SessionWindows.withInactivityGap('5 minutes') or windowagg.TimeWindows.of('1 hour'), "
            f"not {type(definition).__name__}"
        )
    return definition
