"""What runs on the executors for :class:`windowagg.PythonWindows`: the function Spark's Arrow UDF
calls on each batch of times, which runs the user's ``assign`` with pandas and hands the JVM each
time's windows as Arrow.

The pickled UDF refers to this module by name, so the executors import it (the package is installed
there, with pandas and pyarrow); pandas, numpy and pyarrow are imported only when a batch comes, so
that ``import windowagg`` needs none of them.
"""

import datetime
from typing import Any, Callable, Optional, Tuple

# The Spark type of the column listing each time's windows, by the time column's type.
LISTING_TYPES = {
    "timestamp": "array<struct<start: timestamp, end: timestamp>>",
    "timestamp_ntz": "array<struct<start: timestamp_ntz, end: timestamp_ntz>>",
    "bigint": "array<struct<start: bigint, end: bigint>>",
}


def function_name(function: Any) -> str:
    return getattr(function, "__qualname__", None) or repr(function)


def listing(assign: Callable[[Any], Any], time_type: str) -> Callable[[Any], Any]:
    """The function the Arrow UDF runs on each batch of times (a pyarrow Array), named after
    ``assign`` so that Spark's plans and errors name the user's function."""
    import pyarrow as pa

    def listing(times: pa.Array) -> pa.Array:  # arrow_udf reads its kind (Array to Array) from the hints
        return listed_windows(times, assign, time_type)

    listing.__name__ = listing.__qualname__ = function_name(assign)
    return listing


def listed_windows(times: Any, assign: Callable[[Any], Any], time_type: str) -> Any:
    """The windows ``assign`` gives each of ``times`` (a batch of the time column, a pyarrow Array)
    as the Arrow ``list<struct<start, end>>`` the JVM reads: a null list for a null time, an empty
    one for a time in no window."""
    import numpy as np
    import pyarrow as pa

    name = function_name(assign)
    present = times.is_valid().to_numpy(zero_copy_only=False)
    series = _assign_input(times.drop_null(), time_type, name)
    if len(series):
        try:
            windows = assign(series)
        except Exception as error:
            raise RuntimeError(f"PythonWindows: {name} raised {type(error).__name__}: {error}") from error
        counts, starts, ends = _windows_by_time(windows, len(series), name)
    else:  # a batch of null times: nothing to ask
        counts, starts, ends = np.zeros(0, np.int64), series, series
    bound_type = times.type if time_type != "bigint" else pa.int64()
    zone = times.type.tz if time_type == "timestamp" else None
    bounds = pa.StructArray.from_arrays(
        [
            pa.array(_ticks(starts, time_type, zone, name, "start"), pa.int64()).cast(bound_type),
            pa.array(_ticks(ends, time_type, zone, name, "end"), pa.int64()).cast(bound_type),
        ],
        names=["start", "end"],
    )
    per_row = np.zeros(len(times), np.int64)
    per_row[present] = counts
    offsets = np.concatenate([[0], np.cumsum(per_row)])
    if offsets[-1] > 2**31 - 1:
        raise ValueError(
            f"PythonWindows: {name} gave {offsets[-1]} windows to one batch of {len(times)} rows, more than an "
            "Arrow list holds; lower spark.sql.execution.arrow.maxRecordsPerBatch"
        )
    null_times = None if present.all() else pa.array(~present)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), bounds, mask=null_times)


def _assign_input(times: Any, time_type: str, name: str) -> Any:
    """The non-null times of a batch as ``assign`` gets them: a pandas Series of naive
    ``datetime64[ns]`` wall-clock times (in the session time zone for TIMESTAMP) or of int64."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = times.type
    actual = (
        "bigint" if pa.types.is_integer(kind)
        else ("timestamp" if kind.tz is not None else "timestamp_ntz") if pa.types.is_timestamp(kind)
        else None
    )
    if actual != time_type:
        hint = f"; pass time_type={actual!r}" if actual else ""
        raise TypeError(f"PythonWindows.of({name}, ..., time_type={time_type!r}) got a time column of Arrow type {kind}{hint}")
    if time_type == "bigint":
        return times.cast(pa.int64()).to_pandas()
    offset = _fixed_offset(kind.tz) if time_type == "timestamp" else None
    if offset is not None:  # a zone without transitions (UTC): wall-clock times are the instants shifted
        times = pc.add(times.cast(pa.int64()), offset).cast(pa.timestamp(kind.unit))
    try:
        local = times.to_pandas(coerce_temporal_nanoseconds=True)
    except pa.ArrowInvalid as error:
        raise ValueError(
            f"PythonWindows gives {name} its times as pandas datetime64[ns], which holds 1677-09-21 to "
            f"2262-04-11 only: {error}"
        ) from error
    return local.dt.tz_localize(None) if times.type.tz is not None else local


def _windows_by_time(windows: Any, n: int, name: str) -> Tuple[Any, Any, Any]:
    """How many windows each of the n times has, and the windows' starts and ends in order of time,
    from what ``assign`` returned (nulls dropped)."""
    import numpy as np
    import pandas as pd

    forms = "columns start and end (one row per time), or row, start and end"
    if not isinstance(windows, pd.DataFrame):
        raise TypeError(f"PythonWindows: {name} returned a {type(windows).__name__}, not a pandas DataFrame with {forms}")
    missing = [c for c in ("start", "end") if c not in windows.columns]
    if missing:
        raise ValueError(
            f"PythonWindows: {name} returned a DataFrame without the column{'s' * (len(missing) > 1)} "
            f"{' and '.join(missing)} (it has {', '.join(map(str, windows.columns)) or 'none'}); it needs {forms}"
        )
    starts, ends = windows["start"].reset_index(drop=True), windows["end"].reset_index(drop=True)
    no_start, no_end = starts.isna().to_numpy(), ends.isna().to_numpy()
    if (no_start != no_end).any():
        at = int(np.flatnonzero(no_start != no_end)[0])
        raise ValueError(
            f"PythonWindows: {name} returned the start {starts.iloc[at]} and end {ends.iloc[at]} (at row {at}): a "
            "window needs both, a time in no window neither"
        )
    listed = np.flatnonzero(~no_start)
    if "row" not in windows.columns:
        if len(windows) != n:
            raise ValueError(
                f"PythonWindows: {name} returned {len(windows)} row{'s' * (len(windows) != 1)} for {n} times; with "
                "columns start and end it returns one row per time, in order (nulls for a time in no window), or it "
                "adds a column row"
            )
        if len(listed) == n:  # every time in a window: nothing to drop
            return np.ones(n, np.int64), starts, ends
        return (~no_start).astype(np.int64), starts.iloc[listed], ends.iloc[listed]
    rows = windows["row"].reset_index(drop=True)
    if not pd.api.types.is_integer_dtype(rows.dtype) or rows.isna().any():
        held = f"{rows.dtype} with nulls" if pd.api.types.is_integer_dtype(rows.dtype) else rows.dtype
        raise TypeError(f"PythonWindows: {name} returned a column row of {held}, not the times' positions (integers)")
    positions = rows.to_numpy(dtype=np.int64)[listed]
    outside = (positions < 0) | (positions >= n)
    if outside.any():
        raise ValueError(
            f"PythonWindows: {name} returned the row {positions[outside][0]}, not the position of one of the "
            f"{n} times it was given (0 to {n - 1})"
        )
    order = listed[np.argsort(positions, kind="stable")]
    return np.bincount(positions, minlength=n), starts.iloc[order], ends.iloc[order]


def _ticks(bounds: Any, time_type: str, zone: Optional[str], name: str, column: str) -> Any:
    """Window bounds (none null) as the time column's int64 ticks: epoch microseconds (naive
    datetimes read in ``zone`` for TIMESTAMP, as wall-clock for TIMESTAMP_NTZ) or integers as given."""
    import numpy as np
    import pandas as pd

    if bounds.empty:  # of any type: an empty DataFrame's columns often are float64 or object
        return np.zeros(0, np.int64)
    bounds = bounds.reset_index(drop=True)
    inferred = pd.api.types.infer_dtype(bounds, skipna=True) if bounds.dtype == object else None
    if time_type == "bigint":
        if inferred == "integer":
            bounds = bounds.astype(np.int64)
        if not pd.api.types.is_integer_dtype(bounds.dtype):
            raise TypeError(
                f"PythonWindows: {name} returned a column {column} of {bounds.dtype}, not integers (int64, or "
                "pandas' nullable Int64 where a time is in no window)"
            )
        return bounds.to_numpy(dtype=np.int64)
    if inferred == "datetime":
        bounds = pd.to_datetime(bounds)
    if not pd.api.types.is_datetime64_any_dtype(bounds.dtype):
        raise TypeError(f"PythonWindows: {name} returned a column {column} of {bounds.dtype}, not datetimes (datetime64)")
    aware = getattr(bounds.dtype, "tz", None) is not None
    if time_type == "timestamp_ntz" and aware:
        raise TypeError(
            f"PythonWindows: {name} returned a column {column} of {bounds.dtype}: windows of a TIMESTAMP_NTZ "
            "column are naive wall-clock datetimes"
        )
    if time_type == "timestamp" and not aware:
        # windows share their bounds among many times: each distinct bound is read in the zone once
        codes, distinct = pd.factorize(bounds)
        return _local_micros(pd.Series(distinct), zone)[codes]
    if aware:
        bounds = bounds.dt.tz_convert("UTC").dt.tz_localize(None)
    return bounds.to_numpy(dtype="datetime64[us]").view(np.int64)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def _fixed_offset(zone: str) -> Optional[int]:
    """The offset from UTC in microseconds of a zone that never changes it (UTC, '+05:30'), else None."""
    if zone in ("UTC", "Etc/UTC", "GMT", "Etc/GMT", "Z"):
        return 0
    sign, hours, minutes = zone[:1], zone[1:3], zone[4:6]
    if len(zone) == 6 and sign in "+-" and zone[3] == ":" and (hours + minutes).isdigit():
        return (1 if sign == "+" else -1) * (int(hours) * 60 + int(minutes)) * 60_000_000
    return None


def _local_micros(local: Any, zone: str) -> Any:
    """Naive wall-clock times in ``zone`` as epoch microseconds, a time the zone skips or repeats
    resolved as ``java.time`` resolves it (``LocalDateTime.atZone``: with the offset before the
    transition, which is PEP 495's ``fold=0``)."""
    import zoneinfo

    import numpy as np

    offset = _fixed_offset(zone)
    if offset is not None:
        return local.to_numpy(dtype="datetime64[us]").view(np.int64) - offset
    instants = local.dt.tz_localize(zone, ambiguous="NaT", nonexistent="NaT").dt.tz_convert("UTC").dt.tz_localize(None)
    micros = instants.to_numpy(dtype="datetime64[us]").view(np.int64).copy()
    unresolved = instants.isna().to_numpy()
    if unresolved.any():
        tz = zoneinfo.ZoneInfo(zone)  # a zone with transitions is a region, which zoneinfo knows
        skipped_or_repeated = local[unresolved]
        resolved = {  # few: the times within an hour of a transition
            t: (t.to_pydatetime(warn=False).replace(tzinfo=tz, fold=0) - _EPOCH) // datetime.timedelta(microseconds=1)
            for t in skipped_or_repeated.unique()
        }
        micros[unresolved] = skipped_or_repeated.map(resolved).to_numpy(dtype=np.int64)
    return micros
