"""Test data and comparison helpers shared by the Spark tests."""

import math
import random
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import brute_force as bf

PAGES = ["/", "/search", "/cart", "/checkout", "/help", "/item/1", "/item/2", "/item/3"]

# Raw test rows: (id, k, k2, t, v, x, page); t is in ticks of the time column.
ROW_SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType(), False),
        T.StructField("k", T.StringType(), True),
        T.StructField("k2", T.IntegerType(), True),
        T.StructField("t", T.LongType(), True),
        T.StructField("v", T.LongType(), True),
        T.StructField("x", T.DoubleType(), True),
        T.StructField("page", T.StringType(), True),
    ]
)
ID, K, K2, TIME, V, X, PAGE = range(7)

# Time column kinds: Spark type of the column "ts", made from the tick column "t".
INTEGRAL_KINDS = {
    "bigint": T.LongType(),
    "int": T.IntegerType(),
    "smallint": T.ShortType(),
    "tinyint": T.ByteType(),
}
TIMESTAMP_KINDS = {"timestamp": T.TimestampType(), "timestamp_ntz": T.TimestampNTZType()}


def random_rows(
    seed: int,
    n: int,
    *,
    size: int,
    t_lo: int,
    t_hi: int,
    keys: Sequence[Optional[str]] = ("a", "b", "c"),
    null_key: float = 0.05,
    null_time: float = 0.0,
    null_value: float = 0.1,
    solo_keys: int = 2,
) -> List[tuple]:
    """Seeded random rows with duplicate times, times exactly S / S±1 apart, null keys and values,
    and ``solo_keys`` keys that have a single row each."""
    rnd = random.Random(seed)
    pool = [rnd.randint(t_lo, t_hi) for _ in range(max(3, n // 3))]
    for p in list(pool[: max(1, len(pool) // 4)]):
        pool += [p + size, p + size + 1, p - size - 1, p + 1, p - size]
    pool = [min(max(t, t_lo), t_hi) for t in pool]
    rows = []
    for i in range(n):
        k = None if rnd.random() < null_key else rnd.choice(list(keys))
        t = None if rnd.random() < null_time else rnd.choice(pool)
        v = None if rnd.random() < null_value else rnd.randint(-50, 100)
        x = round(rnd.uniform(-10.0, 10.0), 3)
        rows.append((i, k, rnd.randint(0, 1), t, v, x, rnd.choice(PAGES)))
    for j in range(solo_keys):
        rows.append((n + j, f"solo{j}", 1, rnd.choice(pool), rnd.randint(1, 9), 1.5, PAGES[0]))
    return rows


def time_column(kind: str) -> Column:
    """The column "ts" of the given kind, made from the tick column "t" (µs for timestamps)."""
    if kind in INTEGRAL_KINDS:
        return F.col("t").cast(INTEGRAL_KINDS[kind])
    if kind == "timestamp":
        return F.timestamp_micros("t")
    if kind == "timestamp_ntz":
        return F.timestamp_micros("t").cast("timestamp_ntz")
    raise ValueError(kind)


def to_ticks(col: Column, kind: str) -> Column:
    """A window bound of the given time kind as a number of ticks."""
    if kind in INTEGRAL_KINDS:
        return col.cast("bigint")
    if kind == "timestamp":
        return F.unix_micros(col)
    return F.unix_micros(col.cast("timestamp"))


def make_df(spark: SparkSession, rows: List[tuple], kind: str) -> DataFrame:
    """A DataFrame of the raw rows with the time column "ts" of the given kind (and no "t")."""
    df = spark.createDataFrame(rows, ROW_SCHEMA, verifySchema=False)
    return df.withColumn("ts", time_column(kind)).drop("t")


def expected_type(kind: str) -> T.DataType:
    """The type of window.start / window.end for a time column of the given kind."""
    if kind in INTEGRAL_KINDS:
        return T.LongType()
    return TIMESTAMP_KINDS[kind]


# --- aggregates ----------------------------------------------------------------------------------


def windowagg_aggregates() -> List[Column]:
    """Aggregates checked against values computed in Python from the oracle's member rows."""
    return [
        F.count(F.lit(1)).alias("n"),
        F.count("v").alias("nv"),
        F.sum("v").alias("sv"),
        F.min("v").alias("minv"),
        F.max("v").alias("maxv"),
        F.avg("v").alias("avgv"),
        F.expr("count_if(v > 0)").alias("cif"),
        F.collect_list("id").alias("ids"),
        F.first("id").alias("first_id"),
        F.last("id").alias("last_id"),
    ]


def reference_aggregates() -> List[Column]:
    """Aggregates checked against Spark's plain groupBy over the oracle's window memberships."""
    return [
        F.stddev("x").alias("sd"),
        F.var_pop("x").alias("vp"),
        F.expr("percentile_approx(v, 0.5)").alias("p50"),
        F.approx_count_distinct("page").alias("acd"),
        F.size(F.collect_set("page")).alias("pages"),
        F.sort_array(F.collect_set("v")).alias("vset"),
        F.expr("bool_or(v > 90)").alias("anybig"),
        F.max_by("page", "id").alias("maxby"),
        (F.sum("v") + F.count("v")).alias("combo"),
    ]


def python_aggregates(members: Sequence[tuple]) -> Dict[str, Any]:
    """The values of windowagg_aggregates() (but the order-sensitive ones) for member rows."""
    vs = [r[V] for r in members]
    return {
        "n": len(members),
        "nv": bf.agg_count(vs),
        "sv": bf.agg_sum(vs),
        "minv": bf.agg_min(vs),
        "maxv": bf.agg_max(vs),
        "avgv": bf.agg_avg(vs),
        "cif": sum(1 for v in vs if v is not None and v > 0),
    }


# --- running and comparing -----------------------------------------------------------------------


def key_of(row: tuple, keys: Sequence[str]) -> Tuple[Hashable, ...]:
    index = {"k": K, "k2": K2}
    return tuple(row[index[k]] for k in keys)


def expected_windows(
    rows: List[tuple], size: int, keys: Sequence[str], eps: int = 1
) -> Dict[Tuple[Hashable, int, int], List[tuple]]:
    """The oracle's windows, keyed by (key tuple, start, end)."""
    return bf.sliding_windows(rows, size, key=lambda r: key_of(r, keys), time=lambda r: r[TIME], eps=eps)


def collect_by_window(
    df: DataFrame, keys: Sequence[str], start: Column, end: Column, values: Sequence[str]
) -> Dict[Tuple[Hashable, int, int], Dict[str, Any]]:
    """Collects a windowed result as {(key tuple, start ticks, end ticks): {value: ...}}."""
    selected = df.select(
        *[F.col(k) for k in keys], start.alias("__start"), end.alias("__end"), *[F.col(v) for v in values]
    ).collect()
    result: Dict[Tuple[Hashable, int, int], Dict[str, Any]] = {}
    for row in selected:
        window = (tuple(row[k] for k in keys), row["__start"], row["__end"])
        assert window not in result, f"window {window} appears twice"
        result[window] = {v: row[v] for v in values}
    return result


def assert_same_windows(got: Dict, expected: Dict) -> None:
    """The two results have exactly the same windows (with a readable difference if not)."""
    missing = sorted(set(expected) - set(got), key=repr)
    extra = sorted(set(got) - set(expected), key=repr)
    assert not missing and not extra, (
        f"{len(missing)} windows missing (e.g. {missing[:5]}), {len(extra)} unexpected "
        f"(e.g. {extra[:5]}); expected {len(expected)}, got {len(got)}"
    )


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def assert_values(got: Dict, expected: Dict, names: Sequence[str]) -> None:
    """Per window, the named values agree (floats approximately)."""
    bad = []
    for window, want in expected.items():
        for name in names:
            if not same_value(got[window][name], want[name]):
                bad.append((window, name, got[window][name], want[name]))
    assert not bad, f"{len(bad)} wrong values (window, aggregate, got, expected), e.g. {bad[:5]}"


def assert_time_ordered_lists(got: Dict, expected: Dict, id_time: Dict[int, int]) -> None:
    """collect_list(id) holds exactly the window's rows in time order; first/last are the
    earliest/latest rows (any of equal-time rows)."""
    problems = []
    for window, members in expected.items():
        ids = got[window]["ids"]
        want_ids = sorted(r[ID] for r in members)
        if sorted(ids) != want_ids:
            problems.append((window, "members", ids, want_ids))
            continue
        times = [id_time[i] for i in ids]
        if times != sorted(times):
            problems.append((window, "collect_list not in time order", ids, times))
        first_time, last_time = members[0][TIME], members[-1][TIME]
        if id_time.get(got[window]["first_id"]) != first_time:
            problems.append((window, "first", got[window]["first_id"], first_time))
        if id_time.get(got[window]["last_id"]) != last_time:
            problems.append((window, "last", got[window]["last_id"], last_time))
    assert not problems, f"{len(problems)} problems, e.g. {problems[:5]}"


def reference_by_groupby(
    spark: SparkSession,
    df: DataFrame,
    expected: Dict[Tuple[Hashable, int, int], List[tuple]],
    keys: Sequence[str],
    aggregates: Sequence[Column],
) -> Dict[Tuple[Hashable, int, int], Dict[str, Any]]:
    """Spark's plain groupBy of the same aggregates over the oracle's window memberships."""
    membership = [(r[ID], start, end) for (_, start, end), members in expected.items() for r in members]
    mdf = spark.createDataFrame(membership, "id bigint, w_start bigint, w_end bigint")
    grouped = df.join(mdf, "id").groupBy(*keys, "w_start", "w_end").agg(*aggregates)
    names = [c for c in grouped.columns if c not in (*keys, "w_start", "w_end")]
    return collect_by_window(grouped, keys, F.col("w_start"), F.col("w_end"), names)
