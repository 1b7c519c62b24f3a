"""A pure-Python, deliberately naive enumeration of windowagg's sliding-window contract.

This is the test oracle. It restates /work/shared/SEMANTICS.md ("Sliding windows (KIP-450)")
literally, with no sweep, no incremental aggregation and nothing shared with the implementation:

- Per key, windows are closed intervals ``[start, start + S]``.
- For each distinct record time ``t`` there is a left window ``[t - S, t]``.
- For each distinct record time ``t`` there is a right window ``[t + eps, t + eps + S]`` if and only
  if at least one record falls inside it.
- Windows are identified by their start; empty windows do not exist.
- A window's aggregate covers exactly the records whose time lies in it.
- Rows whose time is None are not windowed.

Times are plain ints in ticks of the time column (``eps`` = 1 tick: 1 ms for epoch milliseconds,
1 µs for timestamps).
"""

from collections import defaultdict
from typing import Any, Callable, Dict, Hashable, Iterable, List, Optional, Sequence, Tuple

Window = Tuple[int, int]


def window_bounds(times: Iterable[int], size: int, eps: int = 1) -> List[Window]:
    """All windows ``(start, end)`` of one key whose records have the given times, by start."""
    if size <= 0:
        raise ValueError("size must be positive")
    distinct = sorted(set(times))
    starts = set()
    for t in distinct:
        starts.add(t - size)  # left window [t - S, t]: always holds t itself
        right = t + eps
        if any(right <= u <= right + size for u in distinct):
            starts.add(right)  # right window [t + eps, t + eps + S], only when not empty
    return [(start, start + size) for start in sorted(starts)]


def sliding_windows(
    rows: Iterable[Any],
    size: int,
    *,
    key: Callable[[Any], Hashable],
    time: Callable[[Any], Optional[int]],
    eps: int = 1,
) -> Dict[Tuple[Hashable, int, int], List[Any]]:
    """Every window of every key with its member rows.

    :returns: ``{(key, start, end): members}``, members in time order (ties in input order).
    """
    per_key: Dict[Hashable, List[Any]] = defaultdict(list)
    for row in rows:
        if time(row) is None:
            continue
        per_key[key(row)].append(row)
    result: Dict[Tuple[Hashable, int, int], List[Any]] = {}
    for k, members in per_key.items():
        members = sorted(members, key=time)  # stable
        for start, end in window_bounds([time(r) for r in members], size, eps):
            inside = [r for r in members if start <= time(r) <= end]
            assert inside, "the contract has no empty windows"
            result[(k, start, end)] = inside
    return result


# --- Spark aggregate semantics over a window's member values (nulls ignored, as in SQL) --------


def non_null(values: Sequence[Any]) -> List[Any]:
    return [v for v in values if v is not None]


def agg_sum(values: Sequence[Any]) -> Any:
    present = non_null(values)
    return sum(present) if present else None


def agg_min(values: Sequence[Any]) -> Any:
    present = non_null(values)
    return min(present) if present else None


def agg_max(values: Sequence[Any]) -> Any:
    present = non_null(values)
    return max(present) if present else None


def agg_avg(values: Sequence[Any]) -> Optional[float]:
    present = non_null(values)
    return sum(present) / len(present) if present else None


def agg_count(values: Sequence[Any]) -> int:
    return len(non_null(values))


def agg_stddev_samp(values: Sequence[Any]) -> Optional[float]:
    present = non_null(values)
    n = len(present)
    if n == 0:
        return None
    if n == 1:
        return None  # Spark's stddev_samp of one value is NULL (legacy: NaN)
    mean = sum(present) / n
    return (sum((v - mean) ** 2 for v in present) / (n - 1)) ** 0.5


# --- enumerated kinds (tumbling, hopping, cumulative, user-defined): naive oracles ---------------
#
# Windows are half-open ``[start, end)``; a window exists for a key when it holds one of its
# records, and its aggregate covers exactly the records whose time t has start <= t < end.


def time_windows_for(size: int, advance: int, offset: int = 0) -> Callable[[int], List[Window]]:
    """Tumbling (advance = size) or hopping windows ``[offset + k * advance, ... + size)`` holding t,
    found by trying every whole k near t (no modular arithmetic shared with the implementation)."""

    def windows(t: int) -> List[Window]:
        k_hi = (t - offset) // advance + 1
        k_lo = k_hi - size // advance - 2
        found = []
        for k in range(k_lo, k_hi + 1):
            start = offset + k * advance
            if start <= t < start + size:
                found.append((start, start + size))
        return found

    return windows


def cumulative_windows_for(step: int, max_size: int, offset: int = 0) -> Callable[[int], List[Window]]:
    """Flink's CUMULATE: the period ``[p, p + max_size)`` holding t (p = offset + k * max_size)
    has the windows ``[p, p + j * step)`` for j = 1 .. max_size / step; those holding t."""

    def windows(t: int) -> List[Window]:
        k = 0
        while offset + k * max_size > t:
            k -= 1
        while offset + (k + 1) * max_size <= t:
            k += 1
        period = offset + k * max_size
        ends = [period + j * step for j in range(1, max_size // step + 1)]
        return [(period, end) for end in ends if period <= t < end]

    return windows


def enumerated_windows(
    rows: Iterable[Any],
    windows_for: Callable[[int], List[Window]],
    *,
    key: Callable[[Any], Hashable],
    time: Callable[[Any], Optional[int]],
) -> Dict[Tuple[Hashable, int, int], List[Any]]:
    """Every window of every key with its member rows, by listing each row's windows.

    :returns: ``{(key, start, end): members}``, members in input order.
    """
    result: Dict[Tuple[Hashable, int, int], List[Any]] = defaultdict(list)
    for row in rows:
        t = time(row)
        if t is None:
            continue
        for start, end in windows_for(t):
            assert start <= t < end
            result[(key(row), start, end)].append(row)
    return dict(result)
