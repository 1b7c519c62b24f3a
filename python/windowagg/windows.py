"""Window definitions: Python handles on the JVM's ``windowagg.WindowDefinition`` values.

A definition holds the calls that build it, with their arguments as given:
``TimeWindows.of("1 hour").advanceBy("10 minutes")`` is the calls ``of('1 hour')`` and
``advanceBy('10 minutes')`` of the JVM's ``windowagg.TimeWindows``. The JVM reads those calls
(``windowagg.WindowCalls``: through py4j on a classic session, inside the SQL functions on Spark
Connect) and checks their values; Python checks only their types. A kind usable from Python is one
short class here, with the JVM class's name: its factories and builders, each recording its call.
"""

import datetime
import difflib
import re
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from windowagg import _executor, _jvm

SizeLike = Union[str, datetime.timedelta, int]
GraceLike = Union[str, datetime.timedelta]

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1

# One call that builds a definition: the JVM method's name, its positional arguments and its named
# ones (a user kind's parameters), as the user gave them.
_Call = Tuple[str, Tuple[Any, ...], Tuple[Tuple[str, str], ...]]


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


class _Given:
    """A class attribute reading the argument a definition's latest call of ``methods`` was given,
    or None when it made none of them."""

    def __init__(self, *methods: str, index: int = 0) -> None:
        self.methods = methods
        self.index = index

    def __get__(self, definition: Any, owner: Any) -> Any:
        if definition is None:
            return self
        call = definition._latest(*self.methods)
        return None if call is None or len(call[1]) <= self.index else call[1][self.index]


class WindowDefinition(metaclass=_DefinitionType):
    """A window definition: which windows exist for the records of one key.

    Instances hold the JVM ``windowagg.WindowDefinition`` they stand for; pass them to
    :func:`windowagg.window`. Build them with the factories of the concrete kinds, such as
    :meth:`SlidingWindows.of`, :meth:`TimeWindows.of`, :meth:`CumulativeWindows.of`,
    :meth:`CountWindows.of`, :meth:`CustomWindows.of`, :meth:`ListedWindows.of` or :meth:`PythonWindows.of`.

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

    #: The JVM class's simple name, which the calls start with.
    _JVM_NAME = ""

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

    def __init__(self, calls: Tuple[_Call, ...]) -> None:
        """Use the kind's factories (``of``, ``withInactivityGap``, ``months``, ...) instead."""
        self._calls = calls
        self._gateway: Any = None
        self._jdef: Any = None
        if _classic_session_running():
            self._java_definition()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise _no_attribute(type(self).__name__, name, dir(self))

    @classmethod
    def _called(cls, method: str, *args: Any, **named: Any) -> Any:
        """A new definition made by the factory call ``method(*args, **named)``."""
        return cls(((method, args, tuple(sorted((k, str(v)) for k, v in named.items()))),))

    #: Builders that set the same part of a definition as another (Storm's ``slide`` and ``every``).
    _SAME_PART: Dict[str, str] = {}

    def _then(self, method: str, *args: Any) -> Any:
        """A new definition: this one's calls, then ``method(*args)``, which replaces an earlier call
        setting the same part (as on the JVM); this one is unchanged."""
        part = self._SAME_PART.get(method, method)
        kept = self._calls[:1] + tuple(c for c in self._calls[1:] if self._SAME_PART.get(c[0], c[0]) != part)
        return type(self)(kept + ((method, args, ()),))

    def _latest(self, *methods: str) -> Optional[_Call]:
        """The latest of this definition's calls of ``methods``, if any."""
        return next((call for call in reversed(self._calls) if call[0] in methods), None)

    def _calls_text(self) -> str:
        """The calls as the JVM reads them (``windowagg.WindowCalls``)."""

        def literal(value: Any) -> str:
            if isinstance(value, datetime.timedelta):  # exact: a timedelta counts microseconds
                value = f"{(value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds} microseconds"
            if isinstance(value, str):
                return "'" + value.replace("'", "''") + "'"
            return str(value)

        return self._JVM_NAME + "".join(
            f".{method}(" + ", ".join([literal(a) for a in args] + [f"{k}={literal(v)}" for k, v in named]) + ")"
            for method, args, named in self._calls
        )

    def _java_definition(self) -> Any:
        """The JVM definition, read (and checked) by the current JVM on first use."""
        gateway = _jvm.current_gateway()
        if self._jdef is None or self._gateway is not gateway:
            specs = _jvm.jvm_class(_jvm.active_jvm(), "windowagg.WindowSpec")
            try:
                self._jdef = specs.parse(self._calls_text())
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

        It is the JVM's ``spec()`` when a classic SparkSession is running. Without one (before the
        session starts, or on Spark Connect) it is the calls that build the definition, such as
        ``"TimeWindows.of('1 hour').advanceBy('10 minutes')"``, which the SQL functions read as well:
        Python never re-implements the grammar.

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
        return self._calls_text()

    def __repr__(self) -> str:
        if _classic_session_running():
            try:
                return str(self._java_definition().toString())
            except Exception:  # an invalid definition built before the session: show its calls
                pass
        return type(self).__name__ + "".join(
            f".{method}(" + ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in named]) + ")"
            for method, args, named in self._calls
        )


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

    _JVM_NAME = "SlidingWindows"

    #: The size given to :meth:`of`.
    size = _Given("of")
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

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
        _check_length(size, "a sliding window size", "'10 minutes'")
        return cls._called("of", size)

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
        return self._then("grace", grace)


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

    _JVM_NAME = "SessionWindows"

    #: The gap given to :meth:`withInactivityGap`, or None.
    gap = _Given("withInactivityGap")
    #: The column given to :meth:`withDynamicGap`, or None.
    gap_column = _Given("withDynamicGap")
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

    @classmethod
    def withInactivityGap(cls, gap: SizeLike) -> "SessionWindows":  # noqa: N802 (Kafka's name)
        """Sessions closed by a fixed inactivity gap.

        :param gap: a duration (``"5 minutes"``, :class:`datetime.timedelta`), or an ``int`` number
            of ticks of an integral time column.
        :raises ValueError: when the gap is not positive or cannot be parsed.
        :raises TypeError: for a gap of another type.
        """
        _check_length(gap, "a session gap", "'5 minutes'")
        return cls._called("withInactivityGap", gap)

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
        return cls._called("withDynamicGap", gap_column)

    def grace(self, grace: GraceLike) -> "SessionWindows":
        """The same sessions with a grace period for streaming (see :meth:`SlidingWindows.grace`):
        where the input has no watermark, the watermark is the largest time seen minus the grace.
        """
        _check_grace(grace)
        return self._then("grace", grace)


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

    _JVM_NAME = "TimeWindows"

    #: The size given to :meth:`of`.
    size = _Given("of")
    #: The advance given with :meth:`advanceBy`, or None for tumbling windows.
    advance = _Given("advanceBy")
    #: The offset given with :meth:`withOffset`, or None.
    offset = _Given("withOffset")
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

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
        return cls._called("of", size)

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
        return self._then("advanceBy", advance)

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
        return self._then("withOffset", offset)

    def grace(self, grace: GraceLike) -> "TimeWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`TimeWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return self._then("grace", grace)


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

    _JVM_NAME = "CumulativeWindows"

    #: The step given to :meth:`of`.
    step = _Given("of")
    #: The max size given to :meth:`of`.
    max_size = _Given("of", index=1)
    #: The offset given with :meth:`withOffset`, or None.
    offset = _Given("withOffset")
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

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
        return cls._called("of", step, max_size)

    def withOffset(self, offset: SizeLike) -> "CumulativeWindows":  # noqa: N802 (Kafka-style name)
        """Periods shifted by ``offset`` from the epoch: zero or more, less than the max size, e.g.
        ``CumulativeWindows.of("1 hour", "1 day").withOffset("6 hours")`` for days from 06:00 UTC.

        :returns: a new :class:`CumulativeWindows`; this one is unchanged.
        :raises ValueError: when the offset is negative or cannot be parsed.
        :raises TypeError: for an offset of another type.
        """
        _check_length(offset, "a window offset", "'6 hours'")
        return self._then("withOffset", offset)

    def grace(self, grace: GraceLike) -> "CumulativeWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`CumulativeWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return self._then("grace", grace)


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

    _JVM_NAME = "CalendarWindows"
    _UNITS = ("days", "weeks", "months", "quarters", "years")

    #: The advance in whole units given with :meth:`advanceBy`, or None for tumbling windows.
    advance = _Given("advanceBy")
    #: The zone given with :meth:`inZone`, or None for the session time zone.
    zone = _Given("inZone")
    #: The first day of the week given to :meth:`weeks`, or None for Monday.
    first_day = _Given("weeks", index=1)
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

    @property
    def unit(self) -> str:
        """The unit: "days", "weeks", "months", "quarters" or "years"."""
        return self._calls[0][0]

    @property
    def n(self) -> int:
        """How many units a window spans."""
        return self._calls[0][1][0]

    @classmethod
    def days(cls, n: int) -> "CalendarWindows":
        """Windows of ``n`` local days."""
        _check_count(n, "a number of days")
        return cls._called("days", n)

    @classmethod
    def weeks(cls, n: int, first_day: Optional[str] = None) -> "CalendarWindows":
        """Windows of ``n`` weeks starting on ``first_day`` (``"MONDAY"`` by default, ``"SUNDAY"``, ...)."""
        _check_count(n, "a number of weeks")
        if first_day is None:
            return cls._called("weeks", n)
        if not isinstance(first_day, str):
            raise TypeError(f"first_day must be a day name such as 'SUNDAY', not {type(first_day).__name__}")
        return cls._called("weeks", n, first_day)

    @classmethod
    def months(cls, n: int) -> "CalendarWindows":
        """Windows of ``n`` calendar months."""
        _check_count(n, "a number of months")
        return cls._called("months", n)

    @classmethod
    def quarters(cls, n: int) -> "CalendarWindows":
        """Windows of ``n`` calendar quarters (starting January, April, July, October)."""
        _check_count(n, "a number of quarters")
        return cls._called("quarters", n)

    @classmethod
    def years(cls, n: int) -> "CalendarWindows":
        """Windows of ``n`` calendar years."""
        _check_count(n, "a number of years")
        return cls._called("years", n)

    def advanceBy(self, units: int) -> "CalendarWindows":  # noqa: N802 (Kafka's name)
        """Hopping: a window starts every ``units`` units (at most the size), e.g.
        ``CalendarWindows.months(3).advanceBy(1)``.

        :returns: a new :class:`CalendarWindows`; this one is unchanged.
        :raises ValueError: when the advance is not positive or larger than the size.
        :raises TypeError: for an advance that is not an int.
        """
        _check_count(units, "a calendar window advance")
        return self._then("advanceBy", units)

    def inZone(self, zone: str) -> "CalendarWindows":  # noqa: N802 (JVM name)
        """The local calendar of ``zone``: a region such as ``"Europe/Berlin"`` or an offset such
        as ``"+05:30"``.

        :returns: a new :class:`CalendarWindows`; this one is unchanged.
        :raises ValueError: for an unknown zone.
        :raises TypeError: for a zone that is not a str.
        """
        if not isinstance(zone, str):
            raise TypeError(f"the time zone must be a str such as 'Europe/Berlin', not {type(zone).__name__}")
        return self._then("inZone", zone)

    def grace(self, grace: GraceLike) -> "CalendarWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`CalendarWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return self._then("grace", grace)


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

    _JVM_NAME = "UnlimitedWindows"

    #: The start given with :meth:`startOn`, or None for the epoch.
    start = _Given("startOn")
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

    @classmethod
    def of(cls) -> "UnlimitedWindows":
        """One window per key from the epoch on."""
        return cls._called("of")

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
        return self._then("startOn", start)

    def grace(self, grace: GraceLike) -> "UnlimitedWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`UnlimitedWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return self._then("grace", grace)


class _StormWindows(WindowDefinition):
    """What Storm's two kinds share (the JVM's ``windowagg.StormWindows``): a length, the slide (in
    rows or in time), the lag and the tie-break column, and the builders that change them.
    """

    _SAME_PART = {"slide": "slide", "every": "slide"}

    #: The window's length: a number of rows (count windows) or a length of time.
    length = _Given("of", "tumbling")
    #: The lag given with :meth:`lag`, or None.
    lag_period = _Given("lag")
    #: The tie-break column given with :meth:`tieBreak`, or None.
    tie_break_column = _Given("tieBreak")

    @property
    def slide_rows(self) -> Optional[int]:
        """The slide in rows given with :meth:`slide` (or a count ``tumbling``), or None."""
        call = self._latest("slide", "every", "tumbling")
        if call is None or call[0] == "every" or (call[0] == "tumbling" and not isinstance(self, CountWindows)):
            return None
        return call[1][0]

    @property
    def slide_interval(self) -> Optional[SizeLike]:
        """The slide in time given with :meth:`every` (or a duration ``tumbling``), or None."""
        call = self._latest("slide", "every", "tumbling")
        if call is None or call[0] == "slide" or (call[0] == "tumbling" and isinstance(self, CountWindows)):
            return None
        return call[1][0]

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
        return self._then("slide", rows)

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
        return self._then("every", interval)

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
        return self._then("lag", lag)

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
        return self._then("tieBreak", _check_tie_break(column))


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
    ``unwindowed_rows`` in streaming), not aggregated. In streaming, windows come out final, or
    also early with ``emit="every ..."`` (a value fired for bounds that late rows shift is
    retracted); ``emit="updates"`` is refused.
    """

    _JVM_NAME = "CountWindows"

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
        return cls._called("of", n)

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
        return cls._called("tumbling", n)


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
    aggregated. In streaming, windows come out final (``emit="updates"`` is refused); with a slide
    in time (``every("10 minutes")``), ``emit="every ..."`` also gives the running value of each
    window not evaluated yet; otherwise it gives the windows of the rows so far before the rows
    settle, retracting a value fired for bounds that late rows shift.
    """

    _JVM_NAME = "DurationWindows"

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
        return cls._called("of", length)

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
        return cls._called("tumbling", length)


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

    _JVM_NAME = "CustomWindows"

    #: The class named to :meth:`of`.
    class_name = _Given("of")
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

    @property
    def params(self) -> Dict[str, str]:
        """The parameters, as the strings passed to the class."""
        return dict(self._calls[0][2])

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
        return cls._called("of", class_name.strip(), **params)

    def grace(self, grace: GraceLike) -> "CustomWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`CustomWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return self._then("grace", grace)


class TableWindows(WindowDefinition):
    """Windows given as data: each row of a table, view or DataFrame is a window ``[start, end)``.
    Campaign periods, trading sessions, shift rosters, maintenance windows: windows may overlap,
    nest and differ in size, and a time in none of them is in no window (counted, never dropped
    silently). It computes what ``events JOIN periods ON ts >= start AND ts < end`` followed by a
    ``GROUP BY`` does, without the join: the windows' bounds cut time into slices, each key keeps one
    partial aggregate per slice, and each window combines its slices.

    >>> from pyspark.sql import functions as F
    >>> from windowagg import TableWindows, window
    >>> campaigns = spark.createDataFrame(
    ...     [("2024-01-01", "2024-02-01"), ("2024-01-15", "2024-01-22")], "start STRING, end STRING"
    ... ).select(F.to_timestamp("start").alias("start"), F.to_timestamp("end").alias("end"))
    >>> sales = spark.createDataFrame(
    ...     [("2024-01-10 12:00:00", 10), ("2024-01-16 12:00:00", 20), ("2024-02-03 12:00:00", 40)],
    ...     "ts STRING, amount INT",
    ... ).withColumn("ts", F.to_timestamp("ts"))
    >>> (sales.groupBy(window("ts", TableWindows.of(campaigns))).agg(F.sum("amount").alias("total"))
    ...  .select("window.start", "window.end", "total").orderBy("start").show())
    +-------------------+-------------------+-----+
    |              start|                end|total|
    +-------------------+-------------------+-----+
    |2024-01-01 00:00:00|2024-02-01 00:00:00|   30|
    |2024-01-15 00:00:00|2024-01-22 00:00:00|   20|
    +-------------------+-------------------+-----+

    The sale of February 3 is in no window. The start and end columns must have the time column's
    type (both TIMESTAMP, both TIMESTAMP_NTZ, or integral epochs in its unit), and every row must
    be a window: a null bound, or an end not after its start, is an error naming the row. Identical
    rows are one window.

    The table is read when a query is analyzed (a streaming query: once, when it starts) and sent
    with the plan to every task, so it must be small: at most 100,000 windows. A streaming
    checkpoint records the windows, and a query restarted over a changed table fails, naming the
    change. In SQL the definition names a table or view: ``windows(ts, 'table campaign_periods')``.
    """

    _JVM_NAME = "TableWindows"

    #: The table or view the windows are read from (a DataFrame is given a temporary view).
    table = _Given("of")
    #: The column holding each window's start.
    start_column = _Given("of", index=1)
    #: The column holding each window's end.
    end_column = _Given("of", index=2)
    #: The key columns of per-key windows (comma separated), or None for windows of every key.
    key_columns = _Given("perKey")
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

    @classmethod
    def of(
        cls, table: Any, start: str = "start", end: str = "end", keys: Optional[Sequence[str]] = None, overlapping: bool = True
    ) -> "TableWindows":
        """The windows listed by ``table``, one per row, from its columns ``start`` and ``end``.

        :param table: a DataFrame, or the name of a table or view. A DataFrame is registered as a
            temporary view of the session (named ``windowagg_windows_`` and a random suffix), which
            the definition names, so that SQL and Spark Connect read it the same way.
        :param start: the column of window starts.
        :param end: the column of window ends (the first time after the window).
        :param keys: key columns of ``table``, for windows per key: a row is then a window of the key
            it names only, as when the range join also joins on the key. Each must be a grouping key
            of the aggregation, of the same name; its values are read as that key's type, and a key
            the table does not name has no windows.
        :param overlapping: False where the windows (of each key) must not overlap, as subscription
            periods or shifts must not: a table where two do then fails the query when it is
            analyzed, naming both.
        :raises TypeError: for a table that is neither a str nor a DataFrame, or column names that
            are not str.
        :raises ValueError: for an empty name. Problems of the table itself (a missing column, a
            type that differs from the time column's, a null or inverted window) are raised when a
            query using the windows is analyzed.
        """
        for value, what in ((start, "start column"), (end, "end column")):
            if not isinstance(value, str):
                raise TypeError(f"the {what} of table windows must be a column name (a str), not {type(value).__name__}")
            if not value.strip():
                raise ValueError(f"the {what} of table windows must not be empty")
        if keys is not None:
            if not isinstance(keys, (list, tuple)) or not all(isinstance(k, str) for k in keys):
                raise TypeError(f"the keys of table windows must be a list of column names (str), not {keys!r}")
            if not keys or not all(k.strip() and "," not in k for k in keys):
                raise ValueError(f"the keys of table windows must name columns, one per item: {keys!r}")
        if isinstance(table, str):
            if not table.strip():
                raise ValueError("the table name of table windows must not be empty")
            name = table.strip()
        elif hasattr(table, "createOrReplaceTempView") and hasattr(table, "schema"):
            name = f"windowagg_windows_{uuid.uuid4().hex[:16]}"
            table.createOrReplaceTempView(name)
        else:
            raise TypeError(
                f"table windows are read from a DataFrame or a table name (a str), not {type(table).__name__}"
            )
        if not isinstance(overlapping, bool):
            raise TypeError(f"overlapping must be True or False, not {overlapping!r}")
        windows = cls._called("of", name, start.strip(), end.strip())
        if keys is not None:
            windows = windows._then("perKey", ", ".join(k.strip() for k in keys))
        return windows if overlapping else windows._then("nonOverlapping")

    def grace(self, grace: GraceLike) -> "TableWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`).

        :returns: a new :class:`TableWindows`; this one is unchanged.
        """
        _check_grace(grace)
        return self._then("grace", grace)


class ListedWindows(WindowDefinition):
    """Windows each row lists: a column of the rows holds each row's windows ``[start, end)``, an
    array of structs ``(start, end)`` of the time column's type (integers in its ticks for an
    integral time column), computed by any expression. It is the JVM's ``windowagg.ListedWindows``
    (spec ``'listed by <column> max size <length>'``); :class:`PythonWindows` is the same kind, its
    column computed by a Python function. Each click's hour and day, listed with Spark's functions:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import ListedWindows, window
    >>> clicks = spark.createDataFrame(
    ...     [("2024-03-01 10:05:00",), ("2024-03-01 10:50:00",), ("2024-03-01 11:10:00",)], "ts STRING"
    ... ).withColumn("ts", F.to_timestamp("ts"))
    >>> def period(unit, length):
    ...     start = F.date_trunc(unit, "ts")
    ...     return F.struct(start.alias("start"), (start + F.expr(f"INTERVAL {length}")).alias("end"))
    >>> listed = clicks.withColumn("periods", F.array(period("hour", "1 HOUR"), period("day", "1 DAY")))
    >>> hours_and_days = ListedWindows.of("periods", "1 day")
    >>> hours_and_days.spec
    'listed by periods max size 1 day'
    >>> (listed.groupBy(window("ts", hours_and_days)).count()
    ...  .select("window.start", "window.end", "count").orderBy("end", "start").show())
    +-------------------+-------------------+-----+
    |              start|                end|count|
    +-------------------+-------------------+-----+
    |2024-03-01 10:00:00|2024-03-01 11:00:00|    2|
    |2024-03-01 11:00:00|2024-03-01 12:00:00|    1|
    |2024-03-01 00:00:00|2024-03-02 00:00:00|    3|
    +-------------------+-------------------+-----+

    A window holds the rows whose time lists it, as exploding each row's windows and grouping by
    them would; a null or empty array puts the row in no window (counted, never dropped silently).
    Each window must contain its time, be at most ``max_size`` long, and be listed for every time in
    it that has rows, and a time must list the same windows wherever it occurs: the JVM checks them
    and names the time of one that does not. In SQL: ``windows(ts, 'listed by periods max size 1 day')``.
    """

    _JVM_NAME = "ListedWindows"

    #: The max size given to :meth:`of` (an int number of ticks as its str, which the JVM reads).
    max_size = _Given("maxSize")
    #: The column listing each row's windows, by name (None for :class:`PythonWindows`, whose
    #: function computes it).
    listing_column = _Given("by")
    #: The grace period given with :meth:`grace`, or None.
    grace_period = _Given("grace")

    @classmethod
    def of(cls, column: str, max_size: SizeLike, overlapping: bool = True) -> "ListedWindows":
        """The windows the column ``column`` lists for each row (see :class:`ListedWindows`).

        :param column: the name of the column listing each row's windows.
        :param max_size: the longest a window may be: a duration (``"1 day"``,
            :class:`datetime.timedelta`), or an ``int`` number of ticks of an integral time column.
            It bounds how far apart the times of one window are (and how long streaming keeps a
            key's partials), and a longer window is an error.
        :param overlapping: False when each time is in at most one window (a time listing two is
            then an error): windows are then aggregated whole before the shuffle.
        :raises TypeError: for a column that is not a str, or arguments of other types.
        :raises ValueError: for a max size that is not positive or cannot be parsed, or an empty
            column name (the JVM's message; checked at once when a SparkSession is running).
        """
        if not isinstance(column, str):
            raise TypeError(f"the column listing the windows must be a column name (a str), not {type(column).__name__}")
        listed = cls._of_max_size(max_size, overlapping, "listed windows")._then("by", column)
        return listed if overlapping else listed._then("nonOverlapping")

    @classmethod
    def _of_max_size(cls, max_size: SizeLike, overlapping: bool, what: str) -> Any:
        """A new definition of windows at most ``max_size`` long, ``overlapping`` checked."""
        _check_length(max_size, f"the max size of {what}", "'92 days'")
        if not isinstance(overlapping, bool):
            raise TypeError(f"overlapping must be True or False, not {overlapping!r}")
        # ListedWindows.maxSize reads a bare integer as ticks
        return cls._called("maxSize", str(max_size) if isinstance(max_size, int) else max_size)

    def grace(self, grace: GraceLike) -> "ListedWindows":
        """The same windows with a grace period for streaming (see :meth:`SlidingWindows.grace`);
        batch queries ignore it.

        :returns: a new definition of this class; this one is unchanged.
        """
        _check_grace(grace)
        return self._then("grace", grace)

    @property
    def overlapping(self) -> bool:
        """False when each time is in at most one window."""
        return self._latest("nonOverlapping") is None


class PythonWindows(ListedWindows):
    """Windows a Python function defines: ``assign`` gets a batch of times and gives each time its
    windows ``[start, end)``, with pandas and numpy, no JVM code. It is :class:`ListedWindows` whose
    column ``assign`` computes, run as an Arrow UDF. Fiscal quarters of years that start
    in February (pandas' ``Q-JAN`` periods, of years ending in January), in the session time zone,
    the twin of the JVM example ``CustomWindows.of("windowagg.examples.FiscalQuarters", firstMonth=2)``:

    >>> import pandas as pd
    >>> from pyspark.sql import functions as F
    >>> from windowagg import PythonWindows, window
    >>> def fiscal_quarters(times):
    ...     quarters = times.dt.to_period("Q-JAN")
    ...     return pd.DataFrame({"start": quarters.dt.start_time, "end": (quarters + 1).dt.start_time})
    >>> sales = spark.createDataFrame(
    ...     [("2024-01-15 12:00:00", 10), ("2024-02-10 12:00:00", 20), ("2024-04-30 12:00:00", 40)],
    ...     "ts STRING, amount INT",
    ... ).withColumn("ts", F.to_timestamp("ts"))
    >>> quarters = PythonWindows.of(fiscal_quarters, "92 days 1 hour", overlapping=False)
    >>> (sales.groupBy(window("ts", quarters)).agg(F.sum("amount").alias("total"))
    ...  .select("window.start", "window.end", "total").orderBy("start").show())
    +-------------------+-------------------+-----+
    |              start|                end|total|
    +-------------------+-------------------+-----+
    |2023-11-01 00:00:00|2024-02-01 00:00:00|   10|
    |2024-02-01 00:00:00|2024-05-01 00:00:00|   60|
    +-------------------+-------------------+-----+

    ``assign`` runs on the executors, in Spark's Arrow Python workers (as an ``arrow_udf``), on
    batches of rows before the shuffle; the windowing itself is the JVM's, as for every other kind.
    It receives a pandas Series of the batch's times that are not null: ``datetime64[ns]`` naive
    wall-clock times in the session time zone for a TIMESTAMP column (as pandas UDFs get them),
    naive ``datetime64[ns]`` for TIMESTAMP_NTZ, ``int64`` for an integral column. It returns a
    pandas DataFrame in one of two forms:

    - columns ``start`` and ``end``, one row per time, in the Series' order: that time's window,
      or nulls (NaT, or NA for integers) where the time is in no window;
    - columns ``row``, ``start`` and ``end``: any number of windows per time, ``row`` being the
      position (0 to n - 1) of the time in the Series.

    Bounds are naive datetimes (wall-clock times in the session time zone, for TIMESTAMP; a time
    the zone skips or repeats is read as ``java.time`` reads it) or aware ones, and integers in the
    column's ticks for an integral column. Each window must contain its time (``start <= t < end``),
    be at most ``max_size`` long, and depend on nothing but the time; the JVM checks them and names
    the time of one that does not. A time in no window is counted (``unwindowedRows`` in
    :func:`windowagg.metrics`), never dropped silently. Business hours, 09:00 to 17:00 on working
    days that are not holidays:

    >>> holidays = pd.to_datetime(["2024-12-24", "2024-12-25"])
    >>> def business_hours(times):
    ...     day = times.dt.normalize()
    ...     opens, closes = day + pd.Timedelta("9h"), day + pd.Timedelta("17h")
    ...     open_ = (times.dt.weekday < 5) & ~day.isin(holidays) & (times >= opens) & (times < closes)
    ...     return pd.DataFrame({"start": opens.where(open_), "end": closes.where(open_)})
    >>> calls = spark.createDataFrame(
    ...     [("2024-12-23 10:00:00",), ("2024-12-23 16:59:59",), ("2024-12-23 18:00:00",),
    ...      ("2024-12-24 10:00:00",), ("2024-12-27 09:00:00",)], "ts STRING",
    ... ).withColumn("ts", F.to_timestamp("ts"))
    >>> hours = calls.groupBy(window("ts", PythonWindows.of(business_hours, "8 hours", overlapping=False))).count()
    >>> hours.select("window.start", "window.end", "count").orderBy("start").show()
    +-------------------+-------------------+-----+
    |              start|                end|count|
    +-------------------+-------------------+-----+
    |2024-12-23 09:00:00|2024-12-23 17:00:00|    2|
    |2024-12-27 09:00:00|2024-12-27 17:00:00|    1|
    +-------------------+-------------------+-----+
    >>> _ = hours.collect()  # metrics are those of an action on this very DataFrame
    >>> windowagg.metrics(hours)["unwindowedRows"]  # the call after hours and the one on Christmas Eve
    2

    Every 15 minutes during market hours (09:30 to 16:00 on weekdays), over a TIMESTAMP_NTZ column
    of exchange times:

    >>> def market_quarter_hours(times):
    ...     start = times.dt.floor("15min")
    ...     since_midnight = times - times.dt.normalize()
    ...     open_ = ((times.dt.weekday < 5) & (since_midnight >= pd.Timedelta("9h30min"))
    ...              & (since_midnight < pd.Timedelta("16h")))
    ...     return pd.DataFrame({"start": start.where(open_), "end": (start + pd.Timedelta("15min")).where(open_)})
    >>> trades = spark.createDataFrame(
    ...     [("2024-03-01 09:29:00", 5), ("2024-03-01 09:31:00", 7), ("2024-03-01 09:44:00", 1),
    ...      ("2024-03-01 15:59:00", 2), ("2024-03-02 10:00:00", 9)], "ts STRING, qty INT",
    ... ).withColumn("ts", F.to_timestamp_ntz("ts"))
    >>> every_15 = PythonWindows.of(market_quarter_hours, "15 minutes", overlapping=False, time_type="timestamp_ntz")
    >>> (trades.groupBy(window("ts", every_15)).agg(F.sum("qty").alias("qty"))
    ...  .select("window.start", "window.end", "qty").orderBy("start").show())
    +-------------------+-------------------+---+
    |              start|                end|qty|
    +-------------------+-------------------+---+
    |2024-03-01 09:30:00|2024-03-01 09:45:00|  8|
    |2024-03-01 15:45:00|2024-03-01 16:00:00|  2|
    +-------------------+-------------------+---+

    Windows that overlap (a time in several, given in the ``row`` form) need ``overlapping`` left
    True; windows that do not are best declared with ``overlapping=False``, which lets each window
    be aggregated whole before the shuffle. The package must be importable on the executors (as
    pandas and pyarrow must). Streaming queries keep each time's windows in their state:
    ``max_size`` bounds how long a key's partials are kept, and a row is late once the latest of
    its windows is final. In SQL the definition's :attr:`~WindowDefinition.spec` takes the listing column as the last argument of
    ``windows(ts, spec [, options], listing)``.
    """

    @classmethod
    def of(  # not ListedWindows.of's arguments: the windows are a function's, not a column's
        cls, assign: Callable[[Any], Any], max_size: SizeLike, overlapping: bool = True, time_type: str = "timestamp"
    ) -> "PythonWindows":
        """The windows ``assign`` gives each time (see :class:`PythonWindows` for its contract).

        :param assign: a function from a pandas Series of times to a pandas DataFrame of their
            windows, working on the whole Series at once (numpy, pandas), not time by time.
        :param max_size: the longest a window may be: a duration (``"92 days 1 hour"``,
            :class:`datetime.timedelta`), or an ``int`` number of ticks of an integral time column.
            It bounds how far apart the times of one window are, and a longer window is an error.
        :param overlapping: False when each time is in at most one window (a time listing two is
            then an error): windows are then aggregated whole before the shuffle.
        :param time_type: the time column's type, which the windows' bounds have:
            ``"timestamp"``, ``"timestamp_ntz"`` or ``"bigint"`` (any integral column).
        :raises TypeError: for an ``assign`` that is not callable, or arguments of other types.
        :raises ValueError: for an unknown ``time_type``, or a max size that is not positive or
            cannot be parsed (the JVM's message; checked at once when a SparkSession is running).
        """
        if not callable(assign):
            raise TypeError(f"assign must be a function of a pandas Series of times, not {type(assign).__name__}")
        if not isinstance(time_type, str):
            raise TypeError(f"time_type must be a str such as 'timestamp', not {type(time_type).__name__}")
        if time_type not in _executor.LISTING_TYPES:
            known = ", ".join(map(repr, _executor.LISTING_TYPES))
            raise ValueError(f"time_type must be one of {known}, not {time_type!r}")
        windows = cls._of_max_size(max_size, overlapping, "Python windows")
        windows._assign, windows._time_type = assign, time_type
        return windows if overlapping else windows._then("nonOverlapping")

    @property
    def assign(self) -> Callable[[Any], Any]:
        """The function giving each time its windows."""
        return self._assign

    @property
    def time_type(self) -> str:
        """The time column's type: ``"timestamp"``, ``"timestamp_ntz"`` or ``"bigint"``."""
        return self._time_type

    def _then(self, method: str, *args: Any) -> "PythonWindows":
        then = super()._then(method, *args)
        then._assign, then._time_type = self._assign, self._time_type
        return then

    def _listing(self, time_col: Any) -> Any:
        """The column listing the windows of ``time_col``'s times: ``assign`` run by an Arrow UDF."""
        from pyspark.sql.functions import arrow_udf

        listing = _executor.listing(self._assign, self._time_type)
        return arrow_udf(listing, _executor.LISTING_TYPES[self._time_type])(time_col)

    def __repr__(self) -> str:
        max_size = self._calls[0][1][0]
        arguments = [_executor.function_name(self._assign), repr(max_size)]
        if not self.overlapping:
            arguments.append("overlapping=False")
        if self._time_type != "timestamp":
            arguments.append(f"time_type={self._time_type!r}")
        grace = "" if self.grace_period is None else f".grace({self.grace_period!r})"
        return f"PythonWindows.of({', '.join(arguments)}){grace}"


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


def _ensure_definition(definition: Optional[WindowDefinition]) -> WindowDefinition:
    if not isinstance(definition, WindowDefinition):
        raise TypeError(
            "expected a window definition such as windowagg.SlidingWindows.of('10 minutes'), "
            "windowagg.SessionWindows.withInactivityGap('5 minutes') or windowagg.TimeWindows.of('1 hour'), "
            f"not {type(definition).__name__}"
        )
    return definition
