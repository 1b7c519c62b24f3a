"""Shared pieces of the batch benchmarks (extracted from sliding_batch.py).

  log(msg)                      timestamped progress line
  build_session(...)            SparkSession with the windowagg jar (a private copy) and extension
  machine_info(spark), git_rev(), jar_info()
  Runner(spark, timeout)        one query to the noop sink: wall time, own CPU, others' CPU (/proc),
                                cancelled after `timeout` s; wait_quiet() for a calm machine
  measure(...)                  one cell: warm-up + reps (one rep after a long warm-up), median,
                                contended runs marked, contended short runs optionally retried
  write_json(res, path)         atomic result-file write
  ratio(a, b)                   a / b or None
  add_run_args(p, page)         the flags every batch benchmark takes (contention, session, seed, tag, docs)
  start(a, app, benchmark, ...) session + the results' header (git, args, config, machine)
  segment_tree_conf(spark)      Spark's opt-in segment-tree window frame settings in force

Nothing here runs at import time.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

_T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - _T0:8.1f}s] {msg}", flush=True)


def ratio(a, b):
    return (a / b) if a is not None and b else None


# ------------------------------------------------------------------------------ the session

JAR_SOURCE: dict = {}


def jar_path() -> str | None:
    """$WINDOWAGG_JAR, else /tmp/windowagg-latest.jar when it exists (bench/run's convention);
    None means: whatever the installed windowagg package ships."""
    p = os.environ.get("WINDOWAGG_JAR")
    if p:
        return p
    default = Path("/tmp/windowagg-latest.jar")
    return str(default) if default.exists() else None


def _private_copy(src: Path, stem: str) -> str:
    """Runs on a private copy of the jar: the JVM reads classes from it lazily, and a jar replaced
    by a new build mid-run breaks the running session. Records the original in JAR_SOURCE."""
    st = src.stat()
    JAR_SOURCE.update({"path": str(src), "bytes": st.st_size,
                       "mtime": dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc).isoformat(timespec="seconds")})
    copy = Path(f"/tmp/windowagg-bench-{stem}-{os.getpid()}.jar")
    shutil.copyfile(src, copy)
    JAR_SOURCE["sha256"] = hashlib.sha256(copy.read_bytes()).hexdigest()
    JAR_SOURCE["copy"] = str(copy)
    return str(copy)


def build_session(app_name: str, master: str = "local[2]", shuffle_partitions: int = 4,
                  driver_memory: str = "8g", aqe_coalesce: bool = False, ui: bool = False,
                  extra_conf: dict | None = None, use_tmp_jar: bool = True):
    """A classic SparkSession with windowagg's jar and extension (through windowagg.session when the
    package is installed, else spark.jars + spark.sql.extensions), `master`, `shuffle_partitions`
    reduce tasks with AQE coalescing off (unless `aqe_coalesce`), UTC session time zone, no UI.
    With use_tmp_jar=False, /tmp/windowagg-latest.jar is not looked at (only $WINDOWAGG_JAR or the
    installed package's jar)."""
    conf = {
        "spark.driver.memory": driver_memory,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        # every query gets exactly `shuffle_partitions` reduce tasks: AQE would otherwise coalesce
        # the groupBy shuffles (not an explicit repartition), leaving a core idle on 2 cores
        "spark.sql.adaptive.coalescePartitions.enabled": "true" if aqe_coalesce else "false",
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        **(extra_conf or {}),
    }
    jar = os.environ.get("WINDOWAGG_JAR") if not use_tmp_jar else jar_path()
    stem = app_name.replace("windowagg-bench-", "")
    try:
        import windowagg
        if not jar:
            try:
                jar = windowagg.jar_path()
            except FileNotFoundError as e:
                log(f"windowagg package has no jar: {e}")
                jar = None
        if jar:
            os.environ["WINDOWAGG_JAR"] = _private_copy(Path(jar), stem)
            log(f"session through windowagg.session (package at {Path(windowagg.__file__).parent}, "
                f"jar {JAR_SOURCE['path']}, private copy {os.environ['WINDOWAGG_JAR']})")
            return windowagg.session(app_name=app_name, master=master, config=conf)
    except ImportError:
        pass
    from pyspark.sql import SparkSession
    b = SparkSession.builder.appName(app_name).master(master)
    for k, v in conf.items():
        b = b.config(k, v)
    if jar:
        jar = _private_copy(Path(jar), stem)
        os.environ["WINDOWAGG_JAR"] = jar
        log(f"python package windowagg not installed: session with spark.jars={jar}")
        b = b.config("spark.jars", jar).config("spark.sql.extensions", "windowagg.spark.WindowAggExtensions")
    else:
        log("no windowagg jar (set WINDOWAGG_JAR): windowagg competitors will be skipped")
    return b.getOrCreate()


def windowagg_loadable(spark) -> bool:
    jvm = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName("windowagg.spark.WindowAggExtensions", False,
                                    jvm.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:
        return False


def cleanup_jar_copy() -> None:
    copy = JAR_SOURCE.get("copy")
    if copy and copy.startswith("/tmp/windowagg-bench-"):
        Path(copy).unlink(missing_ok=True)


# ------------------------------------------------------------------------------ metadata

def machine_info(spark) -> dict:
    jvm = spark.sparkContext._jvm
    sysprop = jvm.System.getProperty
    mem_kb = None
    cpu = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    rt = jvm.java.lang.Runtime.getRuntime()
    return {
        "cpu_model": cpu,
        "cpus_visible": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1) if mem_kb else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "pyspark": __import__("pyspark").__version__,
        "spark": spark.version,
        "java": f"{sysprop('java.vm.name')} {sysprop('java.version')} ({sysprop('java.vendor')})",
        "driver_max_heap_gib": round(rt.maxMemory() / 1024 ** 3, 2),
    }


def git_rev() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except Exception:
        return None


def jar_info() -> dict | None:
    if JAR_SOURCE:
        return dict(JAR_SOURCE)
    jar = os.environ.get("WINDOWAGG_JAR")
    if not jar or not Path(jar).exists():
        return None
    st = Path(jar).stat()
    return {"path": jar, "bytes": st.st_size,
            "mtime": dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc).isoformat(timespec="seconds")}


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


# ------------------------------------------------------------------------------ /proc CPU

_CLK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def busy_jiffies() -> int | None:
    """CPU time used by everything on the machine so far (all cores), in clock ticks."""
    try:
        f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in f[:8])
        return user + nice + system + irq + softirq + steal
    except (OSError, ValueError):
        return None


def proc_jiffies(pid: int) -> int | None:
    """CPU time of one process (all its threads) so far, in clock ticks."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])  # utime, stime
    except (OSError, ValueError, IndexError):
        return None


class Runner:
    """Times one query at a time to the noop sink, cancels it after `timeout` seconds, and measures
    the CPU of this benchmark's processes (Python + driver JVM with the local executors) and of
    every other process on the machine meanwhile (a benchmark on 2 cores is only as good as the
    machine is quiet)."""

    def __init__(self, spark, timeout: float):
        self.spark = spark
        self.sc = spark.sparkContext
        self.timeout = timeout
        self._n = 0
        self.own_pids = [os.getpid()]
        try:
            self.own_pids.append(int(self.sc._jvm.java.lang.ProcessHandle.current().pid()))
        except Exception:
            pass

    def own(self) -> int | None:
        vals = [proc_jiffies(p) for p in self.own_pids]
        return None if any(v is None for v in vals) else sum(vals)

    def wait_quiet(self, max_wait: float, threshold: float) -> tuple[float, float]:
        """Waits until other processes use at most `threshold` cores over a 2 s sample, or
        `max_wait` seconds passed. Returns (seconds waited, last sampled share)."""
        if max_wait <= 0:
            return 0.0, 0.0
        t0 = time.perf_counter()
        while True:
            b0, o0 = busy_jiffies(), self.own()
            time.sleep(2.0)
            b1, o1 = busy_jiffies(), self.own()
            if None in (b0, b1, o0, o1):
                return 0.0, 0.0
            share = max(0.0, (b1 - b0 - (o1 - o0)) / _CLK / 2.0)
            waited = time.perf_counter() - t0 - 2.0
            if share <= threshold or waited >= max_wait:
                return max(0.0, waited), share
            time.sleep(3.0)

    def run(self, name: str, df_out, conf: dict | None = None, timeout: float | None = None) -> dict:
        """Runs df_out to the noop sink (with session `conf` set for the run only). Returns
        {"status": "ok" | "timeout" | "error: ...", "seconds": wall time, "own_cpu": CPU seconds of
        this benchmark, "foreign_cpu": CPU seconds other processes used meanwhile}."""
        self._n += 1
        timeout = self.timeout if timeout is None else timeout
        group = f"bench-{self._n}"
        self.sc._jvm.System.gc()
        self.sc.setJobGroup(group, f"{name}", interruptOnCancel=True)
        fired = threading.Event()
        done = threading.Event()

        def watchdog():
            # cancel at the deadline, and again every second: with AQE a query runs several jobs,
            # and a job submitted after a cancel would otherwise run on
            if done.wait(timeout):
                return
            fired.set()
            while not done.is_set():
                try:
                    self.sc.cancelJobGroup(group)
                except Exception:
                    pass
                done.wait(1.0)

        dog = threading.Thread(target=watchdog, daemon=True)
        sconf = self.spark.conf
        for k, v in (conf or {}).items():
            sconf.set(k, v)
        busy0, own0 = busy_jiffies(), self.own()
        t0 = time.perf_counter()
        dog.start()
        try:
            df_out.write.format("noop").mode("overwrite").save()
            status = "ok"
        except Exception as e:  # cancelled by the watchdog, or a real failure
            detail = str(e).splitlines()[0] if str(e) else repr(e)
            jexc = getattr(e, "java_exception", None)
            if jexc is not None:
                try:
                    detail = str(jexc.toString())
                    cause = jexc.getCause()
                    while cause is not None:
                        detail += " | caused by " + str(cause.toString())
                        cause = cause.getCause()
                except Exception:
                    pass
            status = "timeout" if fired.is_set() else f"error: {detail[:1000]}"
        finally:
            elapsed = time.perf_counter() - t0
            done.set()
            busy1, own1 = busy_jiffies(), self.own()
            dog.join()
            for k in (conf or {}):
                sconf.unset(k)
            self.sc.setLocalProperty("spark.jobGroup.id", None)
        out = {"status": status, "seconds": elapsed, "foreign_cpu": None, "own_cpu": None}
        if None not in (busy0, busy1, own0, own1):
            out["own_cpu"] = (own1 - own0) / _CLK
            out["foreign_cpu"] = max(0.0, (busy1 - busy0 - (own1 - own0)) / _CLK)
        return out


# ------------------------------------------------------------------------------ one cell

def measure(runner: Runner, label: str, make_df: Callable[[], object], *, reps: int, long_run: float = 60.0,
            contended: float = 0.2, retries: int = 0, quiet_wait: float = 0.0, conf: dict | None = None,
            timeout: float | None = None, on_run: Callable[[dict], None] | None = None,
            long_warmup_is_timed: bool = False) -> dict:
    """One cell: an untimed warm-up, then `reps` timed runs (one when the warm-up took over
    `long_run` s), median of wall and own CPU. Runs during which other processes used more than
    `contended` cores on average are marked; a contended timed run shorter than `long_run` is
    repeated up to `retries` times and the least contended attempt kept. A timed-out or failed
    warm-up ends the cell (status "timeout" / "error"). `on_run(run)` sees every run (to record it).
    With long_warmup_is_timed, a warm-up longer than `long_run` s is itself the cell's one timed run
    (JIT warm-up is a negligible share of such a run; this halves the cost of very slow cells)."""
    timeout = runner.timeout if timeout is None else timeout
    cell = {"label": label, "times_s": [], "cpu_s": [], "foreign_cores": [], "warmup_s": None,
            "median_s": None, "median_cpu_s": None, "median_foreign_cores": None,
            "status": None, "note": None, "contended_runs": 0, "max_foreign_cores": None,
            "timeout_s": timeout}

    def one(kind: str) -> dict:
        attempt, attempts = 0, []
        while True:
            waited, share = runner.wait_quiet(quiet_wait, contended)
            if waited >= 1:
                log(f"  waited {waited:.0f}s for a quiet machine (other processes at {share:.2f} cores)")
            r = runner.run(label, make_df(), conf=conf, timeout=timeout)
            fshare = (r["foreign_cpu"] / r["seconds"]) if r["foreign_cpu"] is not None and r["seconds"] > 0 else None
            r.update({"label": label, "kind": kind, "attempt": attempt, "foreign_cores": fshare,
                      "contended": fshare is not None and fshare > contended, "loadavg_after": loadavg()})
            if on_run:
                on_run(r)
            cpu = "" if r["own_cpu"] is None else f", own CPU {r['own_cpu']:.2f}s"
            busy = "" if fshare is None else f", others {fshare:.2f} cores{' CONTENDED' if r['contended'] else ''}"
            log(f"{label:34s} {kind}: {r['status'][:200]} {r['seconds']:.2f}s{cpu}{busy}")
            attempts.append(r)
            if (kind != "warm-up" and r["status"] == "ok" and r["contended"] and attempt < retries
                    and r["seconds"] < long_run):
                attempt += 1
                continue
            ok = [x for x in attempts if x["status"] == "ok"]
            if len(ok) > 1:
                return min(ok, key=lambda x: x["foreign_cores"] if x["foreign_cores"] is not None else 0.0)
            return r

    w = one("warm-up")
    cell["warmup_s"] = w["seconds"]
    cell["warmup_cpu_s"] = w["own_cpu"]
    cell["warmup_foreign_cores"] = w["foreign_cores"]
    if w["status"] != "ok":
        cell["status"] = "timeout" if w["status"] == "timeout" else "error"
        cell["note"] = (f"timed out > {timeout:.0f} s (warm-up run cancelled)" if w["status"] == "timeout"
                        else w["status"])
        return cell
    n = 1 if w["seconds"] > long_run else reps
    if n < reps:
        cell["note"] = f"1 timed run: warm-up took {w['seconds']:.0f} s > {long_run:.0f} s"
    if n < reps and long_warmup_is_timed:
        n = 0
        cell["note"] = f"1 timed run: the warm-up itself, which took {w['seconds']:.0f} s > {long_run:.0f} s"
        cell["warmup_is_timed"] = True
        cell["times_s"].append(w["seconds"])
        cell["cpu_s"].append(w["own_cpu"])
        cell["foreign_cores"].append(w["foreign_cores"])
        cell["contended_runs"] += int(w["contended"])
    for i in range(n):
        r = one(f"rep {i + 1}/{n}")
        if r["status"] != "ok":
            cell["note"] = (cell["note"] + "; " if cell["note"] else "") + f"rep {i + 1}: {r['status'][:300]}"
            break
        cell["times_s"].append(r["seconds"])
        cell["cpu_s"].append(r["own_cpu"])
        cell["foreign_cores"].append(r["foreign_cores"])
        cell["contended_runs"] += int(r["contended"])
    if cell["times_s"]:
        cell["median_s"] = statistics.median(cell["times_s"])
        if None not in cell["cpu_s"]:
            cell["median_cpu_s"] = statistics.median(cell["cpu_s"])
        fc = [x for x in cell["foreign_cores"] if x is not None]
        if fc:
            cell["median_foreign_cores"] = statistics.median(fc)
            cell["max_foreign_cores"] = max(fc)
        cell["status"] = "ok"
        log(f"{label:34s} median {cell['median_s']:.2f}s wall, "
            f"{cell['median_cpu_s'] if cell['median_cpu_s'] is not None else float('nan'):.2f}s CPU "
            f"of {[round(x, 2) for x in cell['times_s']]}"
            + (f" ({cell['contended_runs']} contended)" if cell["contended_runs"] else ""))
    else:
        cell["status"] = "timeout" if "timeout" in (cell["note"] or "") else "error"
    return cell


# ------------------------------------------------------------------------------ results

def write_json(res: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=2, default=str) + "\n")
    tmp.replace(path)
    return path


# ------------------------------------------------------------------------------ shared by the batch scripts

SEGTREE_CONF = "spark.sql.window.segmentTree.enabled"
SEGTREE_KEYS = [SEGTREE_CONF, "spark.sql.window.segmentTree.minPartitionRows",
                "spark.sql.window.segmentTree.blockSize", "spark.sql.window.segmentTree.fanout"]


def segment_tree_conf(spark) -> dict:
    """The segment-tree settings in force (their defaults; spark.conf.get(k, default) would only
    show explicitly set values). "<not a config>" if this Spark does not know the key."""
    jconf = spark._jsparkSession.sessionState().conf()
    out = {}
    for k in SEGTREE_KEYS:
        try:
            out[k] = str(jconf.getConfString(k))
        except Exception:
            out[k] = "<not a config>"
    return out


def add_run_args(p, page: str) -> None:
    """The flags every batch benchmark takes: contention, the session, the seed, the results' tag,
    and whether to render `page` (a docs file name) at the end."""
    p.add_argument("--contended", type=float, default=0.2,
                   help="a run during which other processes used more than this many cores is contended (0.2)")
    p.add_argument("--retries", type=int, default=0, help="repeat a contended short timed run up to N times (0)")
    p.add_argument("--quiet-wait", type=float, default=0.0, help="wait up to N s for a quiet machine before each run (0)")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--shuffle-partitions", type=int, default=4)
    p.add_argument("--driver-memory", default="8g")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--tag", help="results file stem suffix (default quick or full)")
    p.add_argument("--docs", dest="docs", action="store_true", default=None,
                   help=f"render docs/{page} and its plot at the end (default: on unless --quick)")
    p.add_argument("--no-docs", dest="docs", action="store_false")


def start(a, app_name: str, benchmark: str, extra_config: Callable[[object], dict] | None = None):
    """The session (this checkout's build: the installed package's jar) and the results' header, or
    (spark, None) when windowagg cannot be loaded."""
    spark = build_session(app_name, master=a.master, shuffle_partitions=a.shuffle_partitions,
                          driver_memory=a.driver_memory, use_tmp_jar=False)
    spark.sparkContext.setLogLevel("FATAL")  # cancelled runs log stack traces at ERROR
    if not windowagg_loadable(spark):
        log("windowagg is not loadable: nothing to compare")
        return spark, None
    config = {"master": a.master, "spark.sql.shuffle.partitions": a.shuffle_partitions,
              "spark.driver.memory": a.driver_memory,
              "spark.sql.adaptive.enabled": spark.conf.get("spark.sql.adaptive.enabled"),
              "spark.sql.adaptive.coalescePartitions.enabled":
                  spark.conf.get("spark.sql.adaptive.coalescePartitions.enabled"),
              **(extra_config(spark) if extra_config else {}),
              "windowagg_jar": jar_info()}
    res = {
        "benchmark": benchmark,
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_rev": git_rev(),
        "args": vars(a),
        "config": config,
        "machine": machine_info(spark),
    }
    log(f"machine: {res['machine']}")
    log(f"config: {config}")
    return spark, res
