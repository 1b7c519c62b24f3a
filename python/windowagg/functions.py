"""Column functions and plan metrics of windowagg.

On a classic session they wrap ``windowagg.functions`` on the JVM; on a Spark Connect session, whose
server runs the jar and the extension, they call windowagg's SQL functions by name (``windows``,
``new_rows``, ``expired_rows``), which every definition reaches through its spec.
"""

from typing import TYPE_CHECKING, Any, Dict, Optional, Union

from windowagg import _jvm
from windowagg.windows import PythonWindows, WindowDefinition, _ensure_definition

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_FUNCTIONS = "windowagg.functions"


def _java_column(col: Union[str, "Column"]) -> Any:
    from pyspark.sql.classic.column import Column as ClassicColumn, _to_java_column

    if not isinstance(col, (str, ClassicColumn)):
        raise TypeError(f"the time column must be a column name or a Column, not {type(col).__name__}")
    return _to_java_column(col)


def _on_connect(col: Any) -> bool:
    """Whether `col` (a Column or a column name) belongs to a Spark Connect session."""
    from pyspark.sql.column import Column as AnyColumn
    from pyspark.sql.classic.column import Column as ClassicColumn

    if isinstance(col, AnyColumn):
        return not isinstance(col, ClassicColumn)
    return _jvm.is_connect_active()


def _connect_window(time_col: Union[str, "Column"], definition: WindowDefinition, options: Dict[str, str]) -> "Column":
    """`windows(time, spec [, options] [, listing])`, the SQL grouping function of every kind, called by
    name; the windows of :class:`PythonWindows` come in the listing column."""
    from pyspark.sql import functions as F
    from pyspark.sql.column import Column as AnyColumn

    if not isinstance(time_col, (str, AnyColumn)):
        raise TypeError(f"the time column must be a column name or a Column, not {type(time_col).__name__}")
    column = F.col(time_col) if isinstance(time_col, str) else time_col
    args = [column, F.lit(definition.spec)]
    if options:
        args.append(F.lit(", ".join(f"{k}={v}" for k, v in options.items())))
    if isinstance(definition, PythonWindows):
        args.append(definition._listing(column))
    return F.call_function("windows", *args).alias("window")


def window(
    time_col: Union[str, "Column"],
    definition: WindowDefinition,
    time_unit: Optional[str] = None,
    emit: Optional[str] = None,
    late_rows: Optional[str] = None,
    time: Optional[str] = None,
    expire_idle_keys: Optional[str] = None,
) -> "Column":
    """A grouping column that assigns each row to the windows of ``definition``.

    It works on classic and Spark Connect sessions alike (on Connect, the server runs windowagg's
    jar and extension, and the column calls its SQL function ``windows`` by name).

    Use it as a ``groupBy`` key; each output row is one window of one key, here sessions of clicks
    at most 5 minutes apart:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import SessionWindows, SlidingWindows, window
    >>> clicks = spark.createDataFrame(
    ...     [("ann", "2024-03-01 10:00:00"), ("ann", "2024-03-01 10:03:00"), ("ann", "2024-03-01 10:20:00"),
    ...      ("bob", "2024-03-01 10:01:00")],
    ...     "user STRING, ts STRING",
    ... ).withColumn("ts", F.to_timestamp("ts"))
    >>> sessions = clicks.groupBy("user", window("ts", SessionWindows.withInactivityGap("5 minutes"))).count()
    >>> sessions.select("user", "window.start", "window.end", "count").orderBy("user", "start").show()
    +----+-------------------+-------------------+-----+
    |user|              start|                end|count|
    +----+-------------------+-------------------+-----+
    | ann|2024-03-01 10:00:00|2024-03-01 10:03:00|    2|
    | ann|2024-03-01 10:20:00|2024-03-01 10:20:00|    1|
    | bob|2024-03-01 10:01:00|2024-03-01 10:01:00|    1|
    +----+-------------------+-------------------+-----+

    The column is named ``window``: a struct ``<start, end>`` whose fields have the time column's
    type (TIMESTAMP or TIMESTAMP_NTZ), or BIGINT for an integral time column (whose unit a
    definition with durations needs):

    >>> epochs = spark.createDataFrame([("ann", 1709287200), ("ann", 1709287380)], "user STRING, t BIGINT")
    >>> sessions = epochs.groupBy("user", window("t", SessionWindows.withInactivityGap("5 minutes"),
    ...                                          time_unit="seconds")).count()
    >>> sessions.select("window.start", "window.end", "count").show()
    +----------+----------+-----+
    |     start|       end|count|
    +----------+----------+-----+
    |1709287200|1709287380|    2|
    +----------+----------+-----+

    Rows whose time is null are not windowed (they are counted, see :func:`metrics`).

    On a streaming DataFrame the time column must be a TIMESTAMP with a watermark: a
    ``withWatermark`` on it, or the definition's grace (``SlidingWindows.of(size).grace(g)``);
    the session needs the RocksDB state store (:func:`windowagg.session` sets it). A window is
    final once its end is behind the watermark; write the result with
    ``counts.writeStream.outputMode("append")`` (see the streaming page of the manual):

    >>> stream = spark.readStream.format("rate").load()  # columns timestamp and value
    >>> counts = (stream.groupBy((F.col("value") % 3).alias("key"),
    ...                          window("timestamp", SlidingWindows.of("10 seconds").grace("1 second")))
    ...           .agg(F.sum("value").alias("total")))
    >>> counts.isStreaming
    True

    Without a watermark or a grace, the query fails at analysis, before it reads anything:

    >>> stream.groupBy(window("timestamp", SlidingWindows.of("10 seconds"))).count()
    Traceback (most recent call last):
        ...
    pyspark.errors.exceptions.captured.AnalysisException: a streaming window needs a watermark on its time column 'timestamp': ...

    Late rows (every window that could hold them is final) and rows with a null time are always
    counted in the query's observed metrics named ``"windowagg"``
    (``query.lastProgress["observedMetrics"]["windowagg"]``, fields ``late_rows``,
    ``null_time_rows``, ``invalid_gap_rows``, ``unwindowed_rows`` and ``expired_rows``).

    :param time_col: the time column, by name or as a Column: TIMESTAMP, TIMESTAMP_NTZ or an
        integral epoch (byte, short, int or long); TIMESTAMP in streaming.
    :param definition: the windows, e.g. ``SlidingWindows.of("10 minutes")``,
        ``TimeWindows.of("1 hour").advanceBy("10 minutes")``, ``CumulativeWindows.of("1 hour", "1 day")``,
        ``CustomWindows.of("com.example.FiscalQuarters", firstMonth=2)``, ``ListedWindows.of("periods", "1 day")``,
        ``PythonWindows.of(fiscal_quarters, "92 days 1 hour", overlapping=False)``, or Storm's
        ``CountWindows.of(30).slide(10)`` and ``DurationWindows.of("20 seconds").every("10 seconds")``.
        Windows of :class:`TimeWindows`, :class:`CumulativeWindows` and :class:`CustomWindows` are
        half-open, ``[start, end)``; Storm's duration windows are ``(end - length, end]``;
        calendar-based custom kinds read a TIMESTAMP in the session time zone and a TIMESTAMP_NTZ or
        integral epoch in UTC.
    :param time_unit: for an integral time column, the unit of its values: ``"milliseconds"``,
        ``"microseconds"`` or ``"seconds"``. A definition with durations or dates needs it (it is
        never assumed: a guess could be off by 1000); sizes in bare ticks do not.
    :param emit: streaming only: ``"final"`` (the default) emits each window once, when it is
        final (use ``outputMode("append")``); ``"updates"`` emits, every micro-batch, the current
        value of each window the micro-batch changed (needs ``outputMode("update")``: the query
        refuses to start in another mode); the last value emitted for a window is its final value.
        ``"every 10 seconds"`` (any duration) fires early: an open window's running value at most
        once per interval of the aggregation's clock (the watermark's event time, or processing
        time with ``time="processing"``) while it changes, then its final value once; an extra
        column ``is_final`` tells them apart (``outputMode("update")``). Over sessions, a value
        fired for bounds that later grow or merge is retracted (a ``retraction`` row) when the
        session holding it next comes out. Storm's windows take it too; over count windows and
        slides in rows, whose bounds follow their rows, a value fired for bounds that late rows
        shift is retracted once the rows settle. Storm's windows refuse ``"updates"``.
    :param late_rows: streaming only: ``"count"`` (the default) only counts late and null-time
        rows in the observed metrics; ``"emit"`` also outputs each of them as a row whose
        ``late_reason`` is ``"late"``, ``"null time"``, ``"invalid gap"`` (sessions with a per-row
        gap), ``"no window"`` (a time the definition leaves out) or ``"expired"`` (see
        ``expire_idle_keys``) and whose ``late_row`` struct holds all the input's columns (the
        keys are set; the window's start and end and the aggregates are null). Storm's windows
        keep only a row's partial aggregate once its place among the key's rows is settled, so
        their ``"no window"`` and ``"expired"`` rows have a null ``late_row``. With ``"emit"``,
        the output has the extra columns ``late_reason`` and ``late_row``.
    :param time: ``"event"`` (the default): windows by the time column's values, closed by the
        watermark. ``"processing"``, streaming only: Storm's default, each row's time is when its
        micro-batch is processed; pass ``F.current_timestamp()`` as the time column, no watermark
        is needed, and windows close on Spark's processing-time clock (give the query a
        processing-time trigger, e.g. ``trigger(processingTime="1 second")``: such a query runs
        a micro-batch on every trigger, with or without new rows).
    :param expire_idle_keys: streaming only, a duration such as ``"1 day"``: forget a key once the
        aggregation's clock (the watermark, or processing time) is that far past the latest time
        among its rows. For the kinds whose state would otherwise outlive its key: Storm's windows
        (a count window waits for rows that an idle key never sends) and windows that never close
        (:class:`UnlimitedWindows`); the others forget a key once its windows are final and refuse
        it. Rows of a forgotten key that no window took come out with ``late_reason`` ``"expired"``
        and are counted in ``expired_rows``; the key's next rows start afresh.
    :returns: a :class:`pyspark.sql.Column`.
    :raises TypeError: for arguments of the wrong type. Unknown ``emit`` or ``late_rows`` values
        raise the JVM's AnalysisException, which names the option.
    """
    from pyspark.sql.classic.column import Column

    for name, value, example in (
        ("time_unit", time_unit, "'seconds'"),
        ("emit", emit, "'final', 'updates' or 'every 10 seconds'"),
        ("late_rows", late_rows, "'count' or 'emit'"),
        ("time", time, "'event' or 'processing'"),
        ("expire_idle_keys", expire_idle_keys, "'1 day'"),
    ):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str such as {example}, not {type(value).__name__}")
    options = {
        "timeUnit": time_unit, "emit": emit, "lateRows": late_rows, "time": time, "expireIdleKeys": expire_idle_keys,
    }
    given = {k: v for k, v in options.items() if v is not None}
    if _on_connect(time_col):
        return _connect_window(time_col, _ensure_definition(definition), given)
    jdef = _ensure_definition(definition)._java_definition()
    jvm = _jvm.active_jvm()
    jcol = _java_column(time_col)
    functions = _jvm.jvm_class(jvm, _FUNCTIONS)
    try:
        if isinstance(definition, PythonWindows):
            listing = _java_column(definition._listing(time_col))
            jc = functions.window(jcol, jdef, listing, given) if given else functions.window(jcol, jdef, listing)
        elif given.keys() <= {"timeUnit"}:
            if time_unit is None:
                jc = functions.window(jcol, jdef)
            else:
                jc = functions.window(jcol, jdef, time_unit)
        else:
            # py4j converts the dict to a java.util.Map, which picks the options overload.
            jc = functions.window(jcol, jdef, given)
    except Exception as error:
        if _jvm.is_illegal_argument(error):
            _jvm.raise_value_error(error)
        raise
    return Column(jc)


def new_rows(aggregate: "Column") -> "Column":
    """Storm's ``TupleWindow.getNew()``: ``aggregate`` with every aggregate in it over the rows of
    each window that were not in the key's previous window, e.g. ``new_rows(F.count("*"))``. For
    Storm's windows (:class:`CountWindows`, :class:`DurationWindows`); a key's first window has all
    its rows new. Over the last two rows at every row, the sum of all, of the new and of the
    expired rows (see :func:`expired_rows`):

    >>> from pyspark.sql import functions as F
    >>> from windowagg import CountWindows, expired_rows, new_rows, window
    >>> df = spark.createDataFrame([("a", 1, 10), ("a", 4, 20), ("a", 12, 30)],
    ...                            "k STRING, t BIGINT, v BIGINT")
    >>> (df.groupBy("k", window("t", CountWindows.of(2)))
    ...  .agg(F.sum("v").alias("sum"), new_rows(F.sum("v")).alias("new"),
    ...       expired_rows(F.sum("v")).alias("expired"))
    ...  .select("window.start", "window.end", "sum", "new", "expired").orderBy("end").show())
    +-----+---+---+---+-------+
    |start|end|sum|new|expired|
    +-----+---+---+---+-------+
    |    1|  1| 10| 10|   NULL|
    |    1|  4| 30| 20|   NULL|
    |    4| 12| 50| 30|     10|
    +-----+---+---+---+-------+

    :raises TypeError: for an argument that is not a Column.
    """
    return _view("newRows", aggregate)


def expired_rows(aggregate: "Column") -> "Column":
    """Storm's ``TupleWindow.getExpired()``: ``aggregate`` over the rows of the key's previous window
    that are not in this one, e.g. ``expired_rows(F.sum("v"))``; see :func:`new_rows`. Over the
    rows of the last 5 ticks ``(t - 5, t]`` at every row t, the rows that left since the row before:

    >>> from pyspark.sql import functions as F
    >>> from windowagg import DurationWindows, expired_rows, window
    >>> df = spark.createDataFrame([("a", 1), ("a", 4), ("a", 8), ("a", 9)], "k STRING, t BIGINT")
    >>> (df.groupBy("k", window("t", DurationWindows.of(5)))
    ...  .agg(F.collect_list("t").alias("times"), expired_rows(F.collect_list("t")).alias("expired"))
    ...  .select("window.start", "window.end", "times", "expired").orderBy("end").show())
    +-----+---+------+-------+
    |start|end| times|expired|
    +-----+---+------+-------+
    |   -4|  1|   [1]|     []|
    |   -1|  4|[1, 4]|     []|
    |    3|  8|[4, 8]|    [1]|
    |    4|  9|[8, 9]|    [4]|
    +-----+---+------+-------+

    :raises TypeError: for an argument that is not a Column.
    """
    return _view("expiredRows", aggregate)


def _view(name: str, aggregate: "Column") -> "Column":
    from pyspark.sql.column import Column as AnyColumn
    from pyspark.sql.classic.column import Column

    if not isinstance(aggregate, AnyColumn):
        raise TypeError(f"{name} takes an aggregate Column such as F.count('*'), not {type(aggregate).__name__}")
    if _on_connect(aggregate):
        from pyspark.sql import functions as F

        return F.call_function({"newRows": "new_rows", "expiredRows": "expired_rows"}[name], aggregate)
    jvm = _jvm.active_jvm()
    return Column(getattr(_jvm.jvm_class(jvm, _FUNCTIONS), name)(_java_column(aggregate)))


# WindowAggregateExec's SQL metrics (WindowAggregateExec.metricNames on the JVM) and its node name in
# Spark Connect's plan metrics (SparkPlan.nodeName: the class name without "Exec").
_METRIC_NAMES = ("inputRows", "nullTimeRows", "invalidGapRows", "unwindowedRows", "windows")
_OPERATOR_NODE_NAME = "WindowAggregate"


def metrics(df: "DataFrame") -> Dict[str, int]:
    """The metrics of the windowagg operators in ``df``'s executed plan, after an action on ``df``.

    Call it after an action that runs this very DataFrame's plan (``collect()``, ``toPandas()``,
    ``foreach``...): a writer (``df.write``) and anything derived from it (``df.count()`` included)
    run a new plan of their own, whose counters this does not see.

    >>> from windowagg import SlidingWindows, window
    >>> df = spark.createDataFrame([("a", 1), ("a", None)], "k STRING, t BIGINT")
    >>> windows = df.groupBy("k", window("t", SlidingWindows.of(10))).count()
    >>> windows.collect()
    [Row(k='a', window=Row(start=-9, end=1), count=1)]
    >>> counts = windowagg.metrics(windows)
    >>> counts["inputRows"], counts["nullTimeRows"], counts["windows"]
    (2, 1, 1)

    On a Spark Connect session it reads the plan metrics the server returns with the result of
    ``collect()``, ``toPandas()`` or ``toArrow()`` on ``df`` (PySpark's ``df.executionInfo``): the same
    counts, but those of operators inside a subquery are not among them. Before such an action it
    raises a RuntimeError.

    :returns: a dict with ``"inputRows"`` (rows read by the windowagg operators),
        ``"nullTimeRows"`` (rows whose time was null: not windowed, but counted),
        ``"invalidGapRows"`` (session rows whose per-row gap was null or not positive),
        ``"unwindowedRows"`` (rows whose time is in no window of the definition) and
        ``"windows"`` (windows output), summed over the plan's windowagg operators.
    :raises TypeError: for anything but a DataFrame.
    :raises RuntimeError: on Spark Connect, for a DataFrame without an action's plan metrics.
    """
    from pyspark.sql import DataFrame

    if not isinstance(df, DataFrame):
        raise TypeError(f"expected a pyspark DataFrame, not {type(df).__name__}")
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return _connect_metrics(df)
    jvm = _jvm.active_jvm()
    jmap = _jvm.jvm_class(jvm, _FUNCTIONS).metrics(jdf)
    return {str(key): int(value) for key, value in dict(jmap).items()}


def _connect_metrics(df: "DataFrame") -> Dict[str, int]:
    """:func:`metrics` of a Spark Connect DataFrame, from the plan metrics of its last action: the
    server sends every node of the executed plan (through adaptive execution and whole-stage codegen)."""
    info = df.executionInfo
    if info is None:
        raise RuntimeError(
            "windowagg.metrics(df) on Spark Connect reads the plan metrics the server returns with an "
            "action's result, and no action ran on this DataFrame yet: call df.collect() or df.toPandas() "
            "first (df.count() or df.show() run another DataFrame's plan)"
        )
    if info.metrics is None:
        raise RuntimeError(
            "the last action on this DataFrame returned no plan metrics (a writer or a view returns "
            "none): call df.collect() or df.toPandas() before windowagg.metrics(df)"
        )
    _, nodes = info.metrics.extract_graph()  # by plan id: a node is counted once
    totals = dict.fromkeys(_METRIC_NAMES, 0)
    for node in nodes.values():
        if node.name != _OPERATOR_NODE_NAME:
            continue
        values = {metric.name: metric.value for metric in node.metrics}
        missing = [name for name in _METRIC_NAMES if name not in values]
        if missing:
            raise RuntimeError(
                f"the server's plan node {_OPERATOR_NODE_NAME} has no metric {', '.join(missing)}: "
                "does the Connect server run the windowagg jar of this package's version?"
            )
        for name in _METRIC_NAMES:
            totals[name] += int(values[name])
    return totals


def read_state(
    spark: "SparkSession",
    checkpoint: str,
    batch_id: Optional[int] = None,
    aggregation: Optional[int] = None,
) -> "DataFrame":
    """What a streaming windowed aggregation's checkpoint holds for each key, as a batch DataFrame.

    One row per open window of a key (a window not final yet), with the key columns, ``window``
    (``start``, ``end``) and each aggregate's current value, named and typed as the query's output;
    then ``held_rows`` (rows the key keeps whole: waiting for the watermark, as Storm's count and
    duration windows do, or to learn whether a window holds them), ``next_close`` (the key's timer:
    once the watermark passes it the key is looked at again, and the windows due close) and
    ``state`` (the record: ``kind``, ``layout``, ``version``, ``keying``, ``definition``, ``emit``,
    ``batch_id`` and the micro-batch's ``watermark``). A key that holds rows or a timer but no open
    window has one row whose ``window`` is null. It reads the checkpoint with Spark's state data
    source and decodes it as the query does; the query may be running or stopped.

    :param checkpoint: the query's checkpoint location.
    :param batch_id: a committed micro-batch to read the state after (the latest by default).
    :param aggregation: with several windowed aggregations in one query, which (from 0, in the
        order of the query's plan).
    :raises pyspark.errors.AnalysisException: ``WINDOWAGG_CHECKPOINT_MISMATCH`` for a path that is
        not a windowagg checkpoint, a micro-batch it has not committed, or state of another release.

    SQL: ``SELECT * FROM windowagg_state('/path/to/checkpoint')``.
    """
    if not isinstance(checkpoint, str) or not checkpoint:
        raise TypeError(f"read_state takes the checkpoint location as a string, not {checkpoint!r}")
    for name, value in (("batch_id", batch_id), ("aggregation", aggregation)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"read_state's {name} is an int, not {value!r}")
    # NULL for the latest micro-batch: the SQL function's arguments are positional
    batch = "NULL" if batch_id is None else ":batch_id"
    which = "" if aggregation is None else ", :aggregation"
    args = {"checkpoint": checkpoint, "batch_id": batch_id, "aggregation": aggregation}
    return spark.sql(
        f"SELECT * FROM {_STATE_FUNCTION}(:checkpoint, {batch}{which})",
        args={k: v for k, v in args.items() if v is not None},
    )


_STATE_FUNCTION = "windowagg_state"
