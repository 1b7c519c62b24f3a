"""Left windows against Spark's own RANGE frames.

For every key and distinct time t, the window [t - S, t] must hold the same aggregate values as
``agg OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN S PRECEDING AND CURRENT ROW)`` at t.
"""

import pytest
from pyspark.sql import functions as F

import helpers as h
from windowagg import SlidingWindows, window

AGGS = {
    "sv": "sum(v)",
    "nv": "count(v)",
    "n": "count(1)",
    "minv": "min(v)",
    "maxv": "max(v)",
    "avgv": "avg(v)",
    "sx": "sum(x)",
    "sd": "stddev(x)",
    "maxx": "max(x)",
}


@pytest.mark.parametrize(
    "kind, span, size_ticks, size, range_bound",
    [
        ("bigint", (-20_000, 20_000), 300, 300, "300"),
        ("int", (-1000, 1000), 1, 1, "1"),
        ("timestamp", (-60_000_000, 60_000_000), 2_000_000, "2 seconds", "INTERVAL '2' SECOND"),
        ("timestamp_ntz", (-60_000_000, 60_000_000), 2_000_000, "2 seconds", "INTERVAL '2' SECOND"),
    ],
)
def test_left_windows_equal_range_frames(spark, kind, span, size_ticks, size, range_bound):
    rows = h.random_rows(size_ticks, 2000, size=size_ticks, t_lo=span[0], t_hi=span[1],
                         keys=[f"u{i}" for i in range(12)])
    df = h.make_df(spark, rows, kind)

    frame = f"OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN {range_bound} PRECEDING AND CURRENT ROW)"
    over = df.select("k", h.to_ticks(F.col("ts"), kind).alias("t"),
                     *[F.expr(f"{agg} {frame}").alias(name) for name, agg in AGGS.items()]).collect()
    at_time = {}
    for row in over:
        values = {name: row[name] for name in AGGS}
        previous = at_time.setdefault((row["k"], row["t"]), values)
        assert previous == values, "peers of a RANGE frame disagree"

    windowed = df.groupBy("k", window("ts", SlidingWindows.of(size))).agg(
        *[F.expr(agg).alias(name) for name, agg in AGGS.items()]
    )
    got = h.collect_by_window(windowed, ["k"], h.to_ticks(F.col("window.start"), kind),
                              h.to_ticks(F.col("window.end"), kind), list(AGGS))
    left = {((k,), t - size_ticks, t): values for (k, t), values in at_time.items()}
    missing = [w for w in left if w not in got]
    assert not missing, f"{len(missing)} left windows missing, e.g. {missing[:5]}"
    h.assert_values(got, left, list(AGGS))
    # Every other window is a right window: it starts 1 tick after some record time of its key.
    times = {}
    for (k, t) in at_time:
        times.setdefault((k,), set()).add(t)
    others = [w for w in got if w not in left]
    assert all(w[1] - 1 in times[w[0]] for w in others)
