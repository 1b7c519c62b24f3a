"""What runs on the executors for a pandas or Arrow aggregate UDF over windows whose rows are a run of
a key's time-ordered rows (every kind but Storm's and listed windows): each key's rows come to Python
once, with its windows, and the user's function is called on each window's slice of them, as Spark's
bounded ``OVER`` frames call a pandas UDF on slices of a partition's rows.

The JVM (windowagg.spark.PythonAggregates) plans a cogroup of two sides by key: the key's rows (the
time ``_t`` in ticks and each distinct argument ``_a0``, ``_a1``, ...) and its windows (``_values``,
the window's keys, bounds and built-in values packed by the JVM; ``_first`` and ``_last``, the ticks
of its first and last rows; ``_n``, its row count; ``_start`` and ``_end``, its bounds in ticks, for
errors). Its Python function is a pickle the JVM writes, which calls :func:`sliced` here with the
users' pickled functions when a Python worker loads it: the package is installed on the executors,
as for :class:`windowagg.PythonWindows`.

In streaming, each window the query emits carries the rows it holds, collected in its state (the time
then each distinct argument, in the order they were merged); :func:`collected` gives the scalar Arrow
UDF that calls a user's function on each window's rows in time order, many windows per Arrow batch.
"""

import datetime
from typing import Any, Callable, List, Sequence, Tuple


def sliced(
    commands: Sequence[bytes], arguments: Sequence[Sequence[int]], arrow: bool, time_type: str
) -> Tuple[Callable, Any]:
    """The cogroup function and its return type, for the users' functions pickled in ``commands``
    (as PySpark pickles a UDF: its function and return type), the i-th taking the arguments
    ``_a<arguments[i][0]>``, ...; pandas Series, or pyarrow Arrays with ``arrow``. Windows' bounds
    come as ticks of the time column, of type ``time_type`` ('timestamp', 'timestamp_ntz' or an
    integral epoch's)."""
    from pyspark.serializers import CloudPickleSerializer
    from pyspark.sql.types import BinaryType, StructField, StructType

    functions, types = [], []
    for command in commands:
        function, return_type = _loaded(CloudPickleSerializer(), command)
        functions.append(function)
        types.append(return_type)
    # each result's column is named after its function, which Spark's error names should a value not
    # convert to the declared type
    names: List[str] = []
    for i, function in enumerate(functions):
        name = getattr(function, "__name__", None) or "udf"
        while name in names or name == "_values":
            name = f"{name}_{i}"
        names.append(name)
    schema = StructType([StructField("_values", BinaryType(), False)] +
                        [StructField(n, t, True) for n, t in zip(names, types)])
    apply = _arrow_windows if arrow else _pandas_windows

    def over_windows(key: Tuple, rows: Any, windows: Any) -> Any:  # three parameters: Spark passes the key too
        return apply(tuple(_scalar(k) for k in key), rows, windows, functions, names, arguments, time_type)

    return over_windows, schema


def collected(command: bytes, arguments: Sequence[int], arrow: bool, time_type: str, time_zone: str) -> Tuple[Callable, Any]:
    """The scalar Arrow UDF and its return type for the user's function pickled in ``command``, taking
    the collected rows' fields ``_<1 + a>`` for ``a`` in ``arguments``: over a batch of windows (each a
    list of rows, null for the processor's rows that are no window), their bounds in ticks of
    ``time_type`` and, where there are keys, their keys (both for errors), the function's value on each
    window's rows in time order (pandas Series, timestamps in the session's ``time_zone`` without one,
    as Spark converts them; or pyarrow Arrays with ``arrow``); null for a window without rows."""
    from pyspark.serializers import CloudPickleSerializer
    from pyspark.sql.pandas.types import to_arrow_type

    function, return_type = _loaded(CloudPickleSerializer(), command)
    arrow_type = to_arrow_type(return_type)

    def over_windows(rows: Any, starts: Any, ends: Any, keys: Any = None) -> Any:
        import numpy as np
        import pandas as pd
        import pyarrow as pa
        import pyarrow.compute as pc

        fields = pc.list_flatten(rows).flatten()
        # every window's rows together, by window and then time (a stable sort keeps the collected
        # order among rows of one time)
        window_of = pc.list_parent_indices(rows).to_numpy()
        order = np.lexsort((fields[0].cast(pa.int64()).to_numpy(), window_of))
        taken = pa.array(order, type=pa.int64())
        begin = np.searchsorted(window_of[order], np.arange(len(rows)), "left")
        end = np.searchsorted(window_of[order], np.arange(len(rows)), "right")
        columns = [fields[1 + a].take(taken) for a in arguments]
        if not arrow:
            columns = [_numpy_or_array(_as_spark_gives(c.to_pandas(), time_zone)) for c in columns]
        results = []
        for i in range(len(rows)):
            if begin[i] == end[i]:
                results.append(None)
                continue
            b, e = int(begin[i]), int(end[i])
            values = [c.slice(b, e - b) for c in columns] if arrow else [pd.Series(c[b:e], copy=False) for c in columns]
            try:
                results.append(_scalar(function(*values)))
            except Exception as error:
                name = getattr(function, "__name__", repr(function))
                key = "" if keys is None else f" of the key {tuple(keys[i].as_py().values())}"
                bounds = f"from {_time(starts[i].as_py(), time_type)} to {_time(ends[i].as_py(), time_type)}"
                raise WindowAggregateError(
                    f"{name} failed on the window {bounds}{key}: {type(error).__name__}: {error}"
                ) from error
        return pa.array(results, type=arrow_type)

    return over_windows, return_type


def _as_spark_gives(series: Any, time_zone: str) -> Any:
    """A column as Spark hands it to a pandas UDF: a timestamp as the session's local time, without a zone."""
    tz = getattr(series.dtype, "tz", None)
    return series.dt.tz_convert(time_zone).dt.tz_localize(None) if tz is not None else series


def _numpy_or_array(series: Any) -> Any:
    """A Series' values to slice per window: numpy's arrays slice faster than Series do."""
    import numpy as np

    return series.to_numpy() if isinstance(series.dtype, np.dtype) else series.array


def _loaded(serializer: Any, command: bytes) -> Any:
    """A UDF's (function, return type), through the broadcast PySpark uses for a large one."""
    loaded = serializer.loads(command)
    if type(loaded).__name__ == "Broadcast":
        loaded = serializer.loads(loaded.value)
    return loaded


def _runs(times: Any, windows_first: Any, windows_last: Any, counts: Any) -> Tuple[Any, Any]:
    """Each window's [begin, end) among the key's rows sorted by time: the rows from its first row's
    time to its last's, which must be its own rows, as many as it counted."""
    import numpy as np

    begin = np.searchsorted(times, windows_first, "left")
    end = np.searchsorted(times, windows_last, "right")
    wrong = np.flatnonzero(end - begin != counts)
    if len(wrong):
        i = wrong[0]
        raise RuntimeError(
            f"windowagg: the window of rows from {windows_first[i]} to {windows_last[i]} counted {counts[i]} rows, "
            f"and {end[i] - begin[i]} rows of its key have times in that run; please report this"
        )
    return begin, end


def _pandas_windows(key: Tuple, rows: Any, windows: Any, functions: List[Callable], names: List[str],
                    arguments: Sequence[Sequence[int]], time_type: str) -> Any:
    import numpy as np
    import pandas as pd

    rows = rows.iloc[np.argsort(rows["_t"].to_numpy(), kind="stable")].reset_index(drop=True)
    begin, end = _runs(rows["_t"].to_numpy(), windows["_first"].to_numpy(), windows["_last"].to_numpy(),
                       windows["_n"].to_numpy())
    # each argument's values, sliced per window into a Series of its own indexed from 0, as a grouped
    # aggregation gives a group's (numpy's arrays slice faster than Series do)
    values = {name: _numpy_or_array(rows[name]) for name in rows.columns if name.startswith("_a")}
    out = {"_values": windows["_values"].reset_index(drop=True)}
    for function, name, taken in zip(functions, names, arguments):
        arrays = [values[f"_a{a}"] for a in taken]
        out[name] = pd.Series(
            _each_window(function, begin, end, lambda b, e: [pd.Series(a[b:e], copy=False) for a in arrays],
                         key, windows["_start"].to_numpy(), windows["_end"].to_numpy(), time_type),
            dtype=object)
    return pd.DataFrame(out)


def _arrow_windows(key: Tuple, rows: Any, windows: Any, functions: List[Callable], names: List[str],
                   arguments: Sequence[Sequence[int]], time_type: str) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = rows.take(pc.sort_indices(rows, sort_keys=[("_t", "ascending")]))
    begin, end = _runs(rows.column("_t").to_numpy(), windows.column("_first").to_numpy(),
                       windows.column("_last").to_numpy(), windows.column("_n").to_numpy())
    out = {"_values": windows.column("_values")}
    for function, name, taken in zip(functions, names, arguments):
        arrays = [rows.column(f"_a{a}").combine_chunks() for a in taken]
        out[name] = [_scalar(value) for value in _each_window(
            function, begin, end, lambda b, e: [a.slice(b, e - b) for a in arrays], key,
            windows.column("_start").to_numpy(), windows.column("_end").to_numpy(), time_type)]
    return pa.table(out)


class WindowAggregateError(RuntimeError):
    """A user's aggregate function failed on a window: the error names the function, key and window."""


def _each_window(function: Callable, begin: Any, end: Any, slices: Callable, key: Tuple, starts: Any, ends: Any,
                 time_type: str) -> List:
    """``function`` over each window's ``slices``; should it fail, an error naming the key and the
    window's bounds (``starts``, ``ends``: ticks of ``time_type``)."""
    results = []
    j = 0
    try:
        for j in range(len(begin)):
            results.append(function(*slices(begin[j], end[j])))
    except Exception as e:
        name = getattr(function, "__name__", repr(function))
        bounds = f"from {_time(starts[j], time_type)} to {_time(ends[j], time_type)}"
        raise WindowAggregateError(
            f"{name} failed on the window {bounds} of the key {key}: {type(e).__name__}: {e}"
        ) from e
    return results


def _time(ticks: Any, time_type: str) -> str:
    """A window's bound as the time column shows it: a timestamp's microseconds as a date and time."""
    if time_type not in ("timestamp", "timestamp_ntz"):
        return str(ticks)
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=int(ticks))
    return moment.isoformat(sep=" ") + (" UTC" if time_type == "timestamp" else "")


def _scalar(value: Any) -> Any:
    """An Arrow UDF's result as a Python value (it may return a pyarrow Scalar)."""
    return value.as_py() if hasattr(value, "as_py") else value
