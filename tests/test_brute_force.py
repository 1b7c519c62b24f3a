"""Checks of the test oracle itself (pure Python, no Spark)."""

import random

import pytest

import brute_force as bf


def test_semantics_example():
    # SEMANTICS.md: S = 10, records at 10, 14, 15 (ms).
    windows = bf.sliding_windows([10, 14, 15], 10, key=lambda t: None, time=lambda t: t)
    assert [(s, e) for (_, s, e) in windows] == [(0, 10), (4, 14), (5, 15), (11, 21), (15, 25)]
    assert [len(m) for m in windows.values()] == [1, 2, 3, 2, 1]
    assert windows[(None, 11, 21)] == [14, 15]


def test_left_and_right_window_with_the_same_start_are_one_window():
    # The right window of 0 is [1, 11], which is also the left window of 11.
    assert bf.window_bounds([0, 11], 10) == [(-10, 0), (1, 11)]


def test_duplicates_and_single_record():
    assert bf.window_bounds([5, 5, 5], 3) == [(2, 5)]
    assert bf.window_bounds([-7], 2) == [(-9, -7)]


def test_null_times_are_not_windowed():
    rows = [("a", 1), ("a", None), ("b", None)]
    windows = bf.sliding_windows(rows, 5, key=lambda r: r[0], time=lambda r: r[1])
    assert list(windows) == [("a", -4, 1)]


def test_epsilon_sets_right_window_starts():
    # With microsecond ticks (timestamps), the right window of 10 ms starts at 10 ms + 1 µs.
    assert bf.window_bounds([10_000, 14_000, 15_000], 10_000) == [
        (0, 10_000),
        (4_000, 14_000),
        (5_000, 15_000),
        (10_001, 20_001),
        (14_001, 24_001),
    ]


@pytest.mark.parametrize("seed", range(20))
def test_oracle_matches_a_scan_of_every_start(seed):
    """A second reading of the contract: a start s is a window iff [s, s+S] holds a record and s+S
    is a record time (left window) or s-1 is one (right window)."""
    rnd = random.Random(seed)
    size = rnd.randint(1, 15)
    times = [rnd.randint(-30, 30) for _ in range(rnd.randint(1, 12))]
    present = set(times)
    scanned = [
        (s, s + size)
        for s in range(min(times) - size - 2, max(times) + 3)
        if any(s <= t <= s + size for t in times) and (s + size in present or s - 1 in present)
    ]
    assert bf.window_bounds(times, size) == scanned


def test_python_aggregates_follow_sql_null_rules():
    assert bf.agg_sum([None, None]) is None
    assert bf.agg_sum([1, None, 2]) == 3
    assert bf.agg_count([None, 1]) == 1
    assert bf.agg_avg([1, 2, None]) == 1.5
    assert bf.agg_stddev_samp([3]) is None
