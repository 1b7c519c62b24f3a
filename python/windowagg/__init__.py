"""windowagg: windowed aggregation for Apache Spark, with Kafka Streams-style window definitions.

A thin Python layer over the windowagg Spark extension (a JVM jar shipped in this package). Per
user, the total of every 10-minute sliding window (KIP-450: a window ends at each record and one
starts just after each record, when it holds records):

>>> import windowagg
>>> from windowagg import SlidingWindows, window
>>> from pyspark.sql import functions as F
>>> spark = windowagg.session()
>>> events = spark.createDataFrame(
...     [("ann", "2024-03-01 10:00:00", 5.0), ("ann", "2024-03-01 10:04:00", 7.5),
...      ("bob", "2024-03-01 10:02:00", 3.0)],
...     "user STRING, ts STRING, amount DOUBLE",
... ).withColumn("ts", F.to_timestamp("ts"))
>>> totals = (events
...           .groupBy("user", window("ts", SlidingWindows.of("10 minutes")))
...           .agg(F.sum("amount").alias("total")))
>>> (totals.select("user", "window.start", "window.end", "total")
...  .orderBy("user", "start").show(truncate=False))
+----+--------------------------+--------------------------+-----+
|user|start                     |end                       |total|
+----+--------------------------+--------------------------+-----+
|ann |2024-03-01 09:50:00       |2024-03-01 10:00:00       |5.0  |
|ann |2024-03-01 09:54:00       |2024-03-01 10:04:00       |12.5 |
|ann |2024-03-01 10:00:00.000001|2024-03-01 10:10:00.000001|7.5  |
|bob |2024-03-01 09:52:00       |2024-03-01 10:02:00       |3.0  |
+----+--------------------------+--------------------------+-----+

The kinds of windows, each a definition passed to :func:`window`:

- :class:`SlidingWindows`: Kafka Streams' sliding windows (KIP-450), ``[start, start + size]``;
- :class:`SessionWindows`: Kafka Streams' session windows (KIP-94), by an inactivity gap;
- :class:`TimeWindows`: tumbling and hopping windows ``[start, start + size)``, with the
  boundaries of Spark's ``window()`` (``TimeWindows.of("1 hour").advanceBy("10 minutes")``);
- :class:`CumulativeWindows`: Flink's cumulative windows, a running total per period
  (``CumulativeWindows.of("1 hour", "1 day")``);
- :class:`CalendarWindows`: days, weeks, months, quarters or years of a time zone's calendar
  (``CalendarWindows.months(1).inZone("America/New_York")``);
- :class:`UnlimitedWindows`: one window per key from a start on (Kafka Streams'), streaming
  with ``emit="updates"``;
- :class:`CountWindows`: Apache Storm's count windows, the last n rows of a key, evaluated at
  every row, every m rows or at multiples of an interval (``CountWindows.of(30).slide(10)``);
- :class:`DurationWindows`: Storm's duration windows ``(end - length, end]``, evaluated at every
  row, every m rows or at multiples of an interval
  (``DurationWindows.of("20 seconds").every("10 seconds").lag("5 seconds")``);
- :class:`CustomWindows`: a user's own JVM class implementing
  ``windowagg.EnumerableWindowDefinition`` (KIP-645), named with its parameters
  (``CustomWindows.of("com.example.FiscalQuarters", firstMonth=2)``);
- :class:`TableWindows`: windows given as data, one per row of a table, view or DataFrame
  (``TableWindows.of(campaign_periods, start="opens", end="closes")``);
- :class:`ListedWindows`: windows each row lists in a column, an array of ``(start, end)``
  computed by any expression (``ListedWindows.of("periods", "1 day")``);
- :class:`PythonWindows`: listed windows that a vectorized Python function gives each batch of
  times, run on the executors by Spark's Arrow workers
  (``PythonWindows.of(fiscal_quarters, "92 days 1 hour", overlapping=False)``).

Each kind has the name of the JVM class it stands for (``windowagg.SlidingWindows``, ...);
:class:`PythonWindows` is Python's own way to build ``windowagg.ListedWindows``.

On a streaming DataFrame the same grouping works with a watermark (``withWatermark`` on the time
column, or ``.grace(g)`` on the definition, ``.lag(l)`` for Storm's kinds);
``window(..., emit="updates")`` and ``window(..., late_rows="emit")`` choose what is emitted (see
:func:`window`).

With the extension on, SQL has the grouping function ``windows(ts, spec [, options])`` and the
table function ``window_agg(TABLE(t) PARTITION BY k ORDER BY (ts), spec, 'aggregates')`` for
every kind, where ``spec`` is a definition's :attr:`WindowDefinition.spec` (e.g.
``'hopping 1 hour every 10 minutes'``), besides ``sliding_window``, ``sliding_window_agg`` and
``session_window_agg``.
"""

from windowagg._jvm import install_error_messages
from windowagg._session import EXTENSION_CLASS, __version__, configure, jar_path, session
from windowagg.functions import expired_rows, metrics, new_rows, read_state, window
from windowagg.windows import (
    CalendarWindows,
    CountWindows,
    CumulativeWindows,
    CustomWindows,
    DurationWindows,
    ListedWindows,
    PythonWindows,
    SessionWindows,
    SlidingWindows,
    TableWindows,
    TimeWindows,
    UnlimitedWindows,
    WindowDefinition,
)

__all__ = [
    "EXTENSION_CLASS",
    "CalendarWindows",
    "CountWindows",
    "CumulativeWindows",
    "CustomWindows",
    "DurationWindows",
    "ListedWindows",
    "PythonWindows",
    "SessionWindows",
    "SlidingWindows",
    "TableWindows",
    "TimeWindows",
    "UnlimitedWindows",
    "WindowDefinition",
    "__version__",
    "configure",
    "expired_rows",
    "jar_path",
    "metrics",
    "new_rows",
    "read_state",
    "session",
    "window",
]

install_error_messages()
