"""windowagg: sliding-window aggregation (Kafka Streams KIP-450) for Apache Spark.

A thin Python layer over the windowagg Spark extension (a JVM jar shipped in this package)::

    import windowagg
    from windowagg import SlidingWindows, window
    from pyspark.sql import functions as F

    spark = windowagg.session()
    totals = (events
              .groupBy("user", window("ts", SlidingWindows.of("10 minutes")))
              .agg(F.sum("amount").alias("total")))

On a streaming DataFrame the same grouping works with a watermark (``withWatermark`` on the time
column, or ``SlidingWindows.of(size).grace(g)``); ``window(..., emit="updates")`` and
``window(..., late_rows="emit")`` choose what is emitted (see :func:`window`).

With the extension on, SQL has the grouping function ``sliding_window(ts, size [, time_unit])``
and the table function ``sliding_window_agg(TABLE(t) PARTITION BY k ORDER BY (ts), size,
'aggregates')``.
"""

from windowagg._session import EXTENSION_CLASS, __version__, configure, jar_path, session
from windowagg.functions import metrics, window
from windowagg.windows import SessionWindows, SlidingWindows, WindowDefinition

__all__ = [
    "EXTENSION_CLASS",
    "SessionWindows",
    "SlidingWindows",
    "WindowDefinition",
    "__version__",
    "configure",
    "jar_path",
    "metrics",
    "session",
    "window",
]
