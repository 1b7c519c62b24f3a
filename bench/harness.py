"""The one harness of every benchmark in bench/: what a benchmark file does not hold itself (the shared
flags, the session, the results' header, CPU accounting and profiles, batch cells, streaming runs,
results files); bench/README.md lists its parts, and protocol.py builds the benchmarks' protocol on them.

Nothing here runs at import time; nothing here imports pyspark at import time.
"""
from __future__ import annotations

import datetime as dt
import glob
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
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# PyFlink's virtualenv, which bench/nexmark/setup-flink makes ($FLINK_VENV, else .venv-flink)
FLINK_PYTHON = Path(os.environ.get("FLINK_VENV") or REPO / ".venv-flink") / "bin" / "python"
STREAM_SCHEMA = "k INT, ts TIMESTAMP, v DOUBLE"

_T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - _T0:8.1f}s] {msg}", flush=True)


def ratio(a, b):
    return (a / b) if a is not None and b else None


def median(xs):
    """The median of the values that are not None, or None."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def tail(path, n=15) -> str:
    """The last n lines of a log file ("" when there is none)."""
    try:
        return "".join(Path(path).read_text(errors="replace").splitlines(True)[-n:])
    except OSError:
        return ""


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------ flags

def parser(doc: str, quick: str):
    """A benchmark's flags, --quick first (`quick`: what its smoke run is), the script's docstring as its help."""
    import argparse
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=quick)
    return p


def add_session_args(p, *, master: str = "local[2]", shuffle_partitions: int = 4, driver_memory: str = "8g",
                     seed: int = 42) -> None:
    p.add_argument("--master", default=master)
    p.add_argument("--shuffle-partitions", type=int, default=shuffle_partitions)
    p.add_argument("--driver-memory", default=driver_memory)
    p.add_argument("--seed", type=int, default=seed)
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting for the session, for every competitor alike (repeatable); recorded "
                        "with the results, e.g. spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true")


def extra_conf(a) -> dict:
    """The --conf settings as a dict; a setting without '=' is an error that names it."""
    out = {}
    for item in getattr(a, "conf", None) or []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise SystemExit(f"--conf takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def add_contention_args(p, *, contended: float = 0.2, quiet_wait: float = 0.0, retries: bool = True) -> None:
    p.add_argument("--contended", type=float, default=contended,
                   help=f"a run during which other processes used more than this many cores on average is "
                        f"marked contended ({contended:g})")
    if retries:
        p.add_argument("--retries", type=int, default=0,
                       help="repeat a contended timed run shorter than --long-run up to N times, keeping the "
                            "attempt during which other processes took the least CPU (0)")
    p.add_argument("--quiet-wait", type=float, default=quiet_wait,
                   help=f"wait up to N s for other processes to use at most --contended cores before a run "
                        f"({quiet_wait:g}; 0: do not wait)")


def add_output_args(p, page: str | None, *, several_reports: bool = False) -> None:
    """--tag, --docs/--no-docs (when the benchmark renders docs/`page`) and --report."""
    p.add_argument("--tag", help="results file name suffix (default quick or full)")
    if page:
        p.add_argument("--docs", dest="docs", action="store_true", default=None,
                       help=f"render docs/{page} and its plot at the end (default: on unless --quick)")
        p.add_argument("--no-docs", dest="docs", action="store_false")
    if several_reports:
        p.add_argument("--report", metavar="JSON", nargs="+",
                       help="only re-render from results file(s); with several, each later file's sections "
                            "replace or add to the first's and keep their own run time and git commit")
    else:
        p.add_argument("--report", metavar="JSON", help="only re-render from this results file")


def add_batch_args(p, page: str | None, *, reps: tuple[int, int], timeout: tuple[float, float],
                   several_reports: bool = False) -> dict:
    """The flags of a batch benchmark (cells timed by `measure`): --reps, --timeout and --long-run, then the
    contention, session and output flags. Returns the (full, quick) defaults of --reps and --timeout, for
    `defaults`."""
    p.add_argument("--reps", type=int, help=f"timed runs per cell after one warm-up (default {reps[0]}; quick {reps[1]})")
    p.add_argument("--timeout", type=float,
                   help=f"seconds per run before it is cancelled (default {timeout[0]:g}; quick {timeout[1]:g})")
    p.add_argument("--long-run", type=float, default=60.0,
                   help="a cell whose warm-up took longer than this many seconds gets one timed run (60)")
    add_contention_args(p)
    add_session_args(p)
    add_output_args(p, page, several_reports=several_reports)
    return {"reps": reps, "timeout": timeout}


def defaults(a, **sizes: tuple) -> None:
    """Each `name=(full, quick)` not given on the command line takes its full or --quick value; (when the
    benchmark has them) the tag and --docs follow --quick too."""
    for name, (full, quick) in sizes.items():
        if getattr(a, name) is None:
            setattr(a, name, quick if a.quick else full)
    if "tag" in vars(a):  # not the Nexmark differential's, which writes no results file
        a.tag = a.tag or ("quick" if a.quick else "full")
    if getattr(a, "docs", False) is None:
        a.docs = not a.quick


def subset(p, text: str, allowed: list[str], what: str) -> list[str]:
    """A comma separated list of names out of `allowed`; p.error names the first unknown one."""
    names = [x.strip() for x in text.split(",") if x.strip()]
    for x in names:
        if x not in allowed:
            p.error(f"unknown {what} {x!r} (known: {', '.join(allowed)})")
    return names


# ------------------------------------------------------------------------------ the session

JAR_SOURCE: dict = {}


def csv_ints(p, text: str, what: str) -> list[int]:
    """A flag's comma-separated positive integers (underscores allowed), or argparse's error naming `what`."""
    try:
        out = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        p.error(f"{what}: comma-separated integers, got {text!r}")
    if not out or min(out) < 1:
        p.error(f"{what}: positive integers, got {text!r}")
    return out


def flink_process(flink_python: str, script: Path, args: list[str], log_path: Path, timeout: float,
                  env: dict | None = None) -> str:
    """`script` with `args` on the Python of PyFlink's virtualenv (bench/nexmark/setup-flink makes it), from
    the repository's root, its output into `log_path`: "ok", "error: exit N", or "timeout after N s"."""
    try:
        with open(log_path, "w") as out:
            code = subprocess.run([flink_python, str(script), *args], stdout=out, stderr=subprocess.STDOUT,
                                  timeout=timeout, cwd=REPO, env=env).returncode
    except subprocess.TimeoutExpired:
        return f"timeout after {timeout:.0f} s"
    return "ok" if code == 0 else f"error: exit {code}"


def maven_classpath(project: Path, build: bool = True) -> str:
    """The java -cp value of the Maven project at `project`: its classes and dependencies, after `mvn package`
    unless not `build` (then it must have been built before)."""
    cp_file = project / "target" / "classpath.txt"
    if build:
        cmd = ["mvn", "-q", "-f", str(project / "pom.xml"), "package", "dependency:build-classpath",
               f"-Dmdep.outputFile={cp_file}"]
        log(f"building {project.relative_to(REPO)}: {' '.join(cmd[:4])} ...")
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"mvn failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
        log(f"built ({time.perf_counter() - t0:.1f}s)")
    classes = project / "target" / "classes"
    if not cp_file.exists() or not classes.exists():
        raise RuntimeError(f"{project} is not built (run without --no-build)")
    return f"{classes}:{cp_file.read_text().strip()}"


def windowagg_jar() -> str | None:
    """The windowagg jar of every benchmark: $WINDOWAGG_JAR when set, else the one inside this checkout's
    windowagg package (dev/package builds it and installs the package; bench/run puts python/ first on
    PYTHONPATH), both through windowagg.jar_path. Never /tmp/windowagg-latest.jar: it may be another
    checkout's build. None when there is none."""
    try:
        import windowagg
    except ImportError:  # a script run without bench/run, and without the package
        return os.environ.get("WINDOWAGG_JAR")
    try:
        return windowagg.jar_path()
    except FileNotFoundError as e:
        log(f"no windowagg jar (run dev/package, or set WINDOWAGG_JAR): {e}")
        return None


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


def build_session(app_name: str, *, master: str = "local[2]", shuffle_partitions: int = 4,
                  driver_memory: str = "8g", aqe_coalesce: bool = False, ui: bool = False,
                  streaming: bool = False, extra: dict | None = None):
    """A classic SparkSession with windowagg's jar and extension (through windowagg.session when the
    package is installed, else spark.jars + spark.sql.extensions), `master`, `shuffle_partitions`
    reduce tasks with AQE coalescing off (unless `aqe_coalesce`), UTC session time zone, no UI; with
    `streaming`, the RocksDB state store for every query and every progress update kept; `extra`
    settings last."""
    conf = {
        "spark.driver.memory": driver_memory,
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        # every query gets exactly `shuffle_partitions` reduce tasks: AQE would otherwise coalesce
        # the groupBy shuffles (not an explicit repartition), leaving a core idle on 2 cores
        "spark.sql.adaptive.coalescePartitions.enabled": "true" if aqe_coalesce else "false",
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
    }
    if streaming:
        conf["spark.sql.streaming.stateStore.providerClass"] = ROCKSDB
        conf["spark.sql.streaming.numRecentProgressUpdates"] = "100000"
    conf.update(extra or {})
    jar = windowagg_jar()
    if jar:
        jar = _private_copy(Path(jar), app_name.replace("windowagg-bench-", ""))
        os.environ["WINDOWAGG_JAR"] = jar  # what windowagg.session and jar_info take
    try:
        import windowagg
    except ImportError:
        windowagg = None
    if jar and windowagg:
        log(f"session through windowagg.session (package at {Path(windowagg.__file__).parent}, "
            f"jar {JAR_SOURCE['path']}, private copy {jar})")
        return windowagg.session(app_name=app_name, master=master, config=conf)
    from pyspark.sql import SparkSession
    b = SparkSession.builder.appName(app_name).master(master)
    for k, v in conf.items():
        b = b.config(k, v)
    if jar:
        log(f"python package windowagg not installed: session with spark.jars={jar}")
        b = b.config("spark.jars", jar).config("spark.sql.extensions", "windowagg.spark.WindowAggExtensions")
    else:
        log("no windowagg jar: windowagg competitors will be skipped")
    return b.getOrCreate()


def windowagg_loadable(spark) -> bool:
    jvm = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName("windowagg.spark.WindowAggExtensions", False,
                                    jvm.Thread.currentThread().getContextClassLoader())
        return True
    except Exception:
        return False


def batch_config(a, spark) -> dict:
    """The session settings a batch benchmark's results record."""
    return {"master": a.master, "spark.sql.shuffle.partitions": a.shuffle_partitions,
            "spark.driver.memory": a.driver_memory,
            "spark.sql.adaptive.enabled": spark.conf.get("spark.sql.adaptive.enabled"),
            "spark.sql.adaptive.coalescePartitions.enabled":
                spark.conf.get("spark.sql.adaptive.coalescePartitions.enabled")}


def stream_config(a, spark) -> dict:
    """The session settings a streaming benchmark's results record."""
    return {"master": a.master, "shuffle_partitions": a.shuffle_partitions, "driver_memory": a.driver_memory,
            "state_store": spark.conf.get("spark.sql.streaming.stateStore.providerClass"),
            "rocksdb_changelog": conf_value(spark, "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled")}


def start(a, app_name: str, benchmark: str, *, config: Callable[[object, object], dict] = batch_config,
          streaming: bool = False, log_level: str = "FATAL",
          require_windowagg: bool = True, conf: dict | None = None, **session):
    """The session and the results' header (benchmark, start time, git, args, config, machine), or
    (spark, None) when windowagg cannot be loaded and `require_windowagg`. `config(a, spark)` gives
    the recorded settings, to which the jar's description (windowagg_jar's) is added; `conf` are the
    benchmark's own session settings, before --conf's."""
    spark = build_session(app_name, master=a.master, shuffle_partitions=a.shuffle_partitions,
                          driver_memory=a.driver_memory, streaming=streaming,
                          extra={**(conf or {}), **extra_conf(a)}, **session)
    spark.sparkContext.setLogLevel(log_level)  # FATAL: cancelled runs log stack traces at ERROR
    if require_windowagg and not windowagg_loadable(spark):
        log("windowagg is not loadable: nothing to compare")
        return spark, None
    res = {
        "benchmark": benchmark,
        "started": now(),
        "git_rev": git_rev(),
        "args": dict(vars(a)),
        "config": {**config(a, spark), **({"extra_conf": extra_conf(a)} if extra_conf(a) else {}),
                   "windowagg_jar": jar_info()},
        "machine": machine_info(spark),
    }
    log(f"machine: {res['machine']}")
    log(f"config: {res['config']}")
    return spark, res


def finish(spark, res: dict, save: Callable[[], Path]) -> Path:
    """Ends a run: its finish time, the results written (`save` returns their path), the session stopped."""
    res["finished"] = now()
    path = save()
    log(f"results: {path}")
    stop(spark)
    return path


def stop(spark) -> None:
    spark.stop()
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
    """The checkout's short commit, marked when jvm/ (the jar's sources) has uncommitted changes."""
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "jvm"],
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (+ uncommitted changes under jvm/)" if dirty else "")
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


def conf_value(spark, key: str) -> str:
    """A conf's value as set in the session, or "not set (Spark's default)"."""
    value = spark.conf.get(key, None)
    return "not set (Spark's default)" if value is None else str(value)


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


def segment_tree_config(a, spark) -> dict:
    """batch_config plus the segment-tree settings in force (for benchmarks with OVER frames)."""
    return {**batch_config(a, spark), "segment_tree_conf": segment_tree_conf(spark)}


def plan_of(df) -> str:
    try:
        return str(df._jdf.queryExecution().executedPlan().toString())
    except Exception as e:  # noqa: BLE001
        return f"<no plan: {e}>"


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


def proc_jiffies(pid: int, children: bool = False) -> int | None:
    """CPU time of one process (all its threads) so far, in clock ticks; with `children`, also of
    the commands it ran and waited for."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if children else 0)  # utime, stime, cutime, cstime
    except (OSError, ValueError, IndexError):
        return None


class CpuMeter:
    """CPU used by this benchmark's processes (Python + the driver JVM, which runs the local
    executors) and by every other process on the machine, between two samples (a benchmark on 2
    shared cores is only as good as the machine is quiet). The JVM's share includes the commands
    it runs: Hadoop's local file system runs `chmod`, `readlink` and `rm` for the checkpoint's
    files, with 4 state store partitions about 90 commands and 170 ms of CPU per micro-batch."""

    def __init__(self, spark):
        self.pids = [os.getpid()]
        try:
            self.jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
            self.pids.append(self.jvm_pid)
        except Exception:
            self.jvm_pid = None

    def sample(self) -> tuple[int | None, int | None]:
        """(clock ticks used by the whole machine, by this benchmark's processes) so far."""
        own = [proc_jiffies(p, children=p == self.jvm_pid) for p in self.pids]
        return busy_jiffies(), None if None in own else sum(own)

    @staticmethod
    def between(s0, s1, seconds: float) -> dict:
        """Own and others' CPU seconds between two samples `seconds` apart, and others' cores."""
        (b0, o0), (b1, o1) = s0, s1
        if None in (b0, b1, o0, o1) or seconds <= 0:
            return {"own_cpu_s": None, "foreign_cpu_s": None, "foreign_cores": None}
        own = (o1 - o0) / _CLK
        foreign = max(0.0, (b1 - b0 - (o1 - o0)) / _CLK)
        return {"own_cpu_s": own, "foreign_cpu_s": foreign, "foreign_cores": foreign / seconds}

    def wait_quiet(self, max_wait: float, threshold: float) -> tuple[float, float]:
        """Waits until other processes use at most `threshold` cores over a 2 s sample, or
        `max_wait` seconds passed. Returns (seconds waited, last sampled share)."""
        if max_wait <= 0:
            return 0.0, 0.0
        t0 = time.perf_counter()
        while True:
            s0 = self.sample()
            time.sleep(2.0)
            share = self.between(s0, self.sample(), 2.0)["foreign_cores"]
            if share is None:
                return 0.0, 0.0
            waited = time.perf_counter() - t0 - 2.0
            if share <= threshold or waited >= max_wait:
                return max(0.0, waited), share
            time.sleep(3.0)


def descendants(pid: int) -> list[int]:
    """The processes below `pid` (children, their children, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # the process ended meanwhile
        children.setdefault(ppid, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


class ProcessTreeCpuMeter(CpuMeter):
    """harness.CpuMeter plus the processes the driver JVM runs: PySpark's Python daemon and the
    workers it forks, which run the Arrow UDF. Workers are reused from task to task, so the JVM's
    counters of its finished children, which harness.CpuMeter adds, would not see their CPU (it
    would count as other processes'). A worker that ends between two samples moves into its
    parent's counters of finished children, which are counted too."""

    def sample(self) -> tuple[int | None, int | None]:
        busy, own = super().sample()
        if own is None or self.jvm_pid is None:
            return busy, own
        tree = [proc_jiffies(p, children=True) for p in descendants(self.jvm_pid)]
        return busy, own + sum(x for x in tree if x is not None)


def wait_quiet(meter: CpuMeter, max_wait: float, threshold: float) -> None:
    """meter.wait_quiet, saying how long it waited when it did."""
    waited, share = meter.wait_quiet(max_wait, threshold)
    if waited >= 1:
        log(f"  waited {waited:.0f}s for a quiet machine (other processes at {share:.2f} cores)")


class FlightRecording:
    """Java Flight Recorder (the `profile` settings) on the JVM `pid` of `spark`'s driver while the
    block runs, written to `path`: `with FlightRecording(spark, pid, path) as rec:` ... then
    `execution_samples(rec)`. Raises FileNotFoundError when the JDK has no jcmd or jfr."""

    def __init__(self, spark, pid: int, path: Path):
        bin_dir = Path(spark.sparkContext._jvm.System.getProperty("java.home")) / "bin"
        self.jcmd, self.jfr, self.path, self.pid = bin_dir / "jcmd", bin_dir / "jfr", path, pid
        if not self.jcmd.exists() or not self.jfr.exists():
            raise FileNotFoundError(f"no jcmd/jfr in {bin_dir}")

    def start(self) -> None:
        self.path.unlink(missing_ok=True)
        subprocess.run([str(self.jcmd), str(self.pid), "JFR.start", "name=windowagg-bench", "settings=profile",
                        f"filename={self.path}"], check=True, capture_output=True)

    def stop(self) -> None:
        subprocess.run([str(self.jcmd), str(self.pid), "JFR.stop", "name=windowagg-bench"], capture_output=True)

    def __enter__(self) -> "FlightRecording":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


# Maven coordinates of async-profiler: its jar carries the native agent of each platform
ASYNC_PROFILER = "tools.profiler:async-profiler:3.0"


def async_profiler_agent() -> Path | None:
    """async-profiler's agent for this machine (Linux on x86-64 or arm64), fetched once with mvn into
    target/async-profiler/<version>/; None where it cannot be had (another platform, no mvn, no network)."""
    arch = {"x86_64": "linux-x64", "aarch64": "linux-arm64"}.get(platform.machine())
    if platform.system() != "Linux" or arch is None:
        return None
    version = ASYNC_PROFILER.rsplit(":", 1)[1]
    home = REPO / "target" / "async-profiler" / version
    agent = home / arch / "libasyncProfiler.so"
    if agent.exists():
        return agent
    jar = home / f"async-profiler-{version}.jar"
    if not jar.exists():
        mvn = shutil.which("mvn")
        if mvn is None:
            return None
        try:
            subprocess.run([mvn, "-q", "dependency:copy", f"-Dartifact={ASYNC_PROFILER}", f"-DoutputDirectory={home}"],
                           capture_output=True, timeout=300)
        except subprocess.TimeoutExpired:
            return None
        if not jar.exists():
            return None
    import zipfile
    with zipfile.ZipFile(jar) as z:
        z.extract(f"{arch}/libasyncProfiler.so", home)
    return agent if agent.exists() else None


class CpuProfile:
    """async-profiler in the JVM `pid` of `spark`'s driver between start() and stop() (or while a `with`
    block runs): samples of the process's CPU time (`itimer`, which needs no kernel perf events), each
    of the thread then running, native frames included (RocksDB, the JIT compilers, the garbage
    collector), unlike JFR's; written to `path` as collapsed stacks, read by `profile_samples(rec)`.
    Raises FileNotFoundError when the agent or jcmd cannot be had."""

    def __init__(self, spark, pid: int, path: Path, interval: str = "1ms", event: str = "itimer"):
        self.jcmd = Path(spark.sparkContext._jvm.System.getProperty("java.home")) / "bin" / "jcmd"
        self.agent = async_profiler_agent()
        if self.agent is None or not self.jcmd.exists():
            raise FileNotFoundError(f"no async-profiler agent ({ASYNC_PROFILER}) or no jcmd at {self.jcmd}")
        self.pid, self.path, self.interval, self.event = pid, path, interval, event
        self.started = False

    def _send(self, command: str) -> None:
        # each load of the agent runs its command in the JVM (as async-profiler's own launcher does); quoted,
        # or jcmd reads the command's first '=' as a name=value argument of its own
        r = subprocess.run([str(self.jcmd), str(self.pid), "JVMTI.agent_load", str(self.agent), f'"{command}"'],
                           capture_output=True, text=True)
        if r.returncode != 0 or "return code: 0" not in r.stdout:
            raise RuntimeError(f"async-profiler {command.split(',')[0]}: {(r.stdout + r.stderr).strip()[:300]}")

    def start(self) -> None:
        self.path.unlink(missing_ok=True)
        self._send(f"start,event={self.event},interval={self.interval},threads")
        self.started = True

    def stop(self) -> None:
        if self.started:
            self.started = False
            self._send(f"stop,file={self.path},collapsed")

    def __enter__(self) -> "CpuProfile":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def profile_samples(rec: CpuProfile):
    """The profile's stacks as (thread name, frames from the top, samples): a Java frame as
    "package.Class.method" (as JFR's), a native one as its symbol or library."""
    with open(rec.path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not stack or not n.isdigit():
                continue
            frames = stack.split(";")
            thread = frames[0][1:-1].rsplit(" tid=", 1)[0] if frames[0].startswith("[") else ""
            yield thread, [fr if fr.startswith("/") else fr.replace("/", ".") for fr in reversed(frames[1:])], int(n)


def execution_samples(rec: FlightRecording):
    """The recording's execution samples as (thread name, frames from the top, each a method without
    its line): read from `jfr print`'s text as it is printed (the JSON form of a long recording is too
    large to load). JFR keeps a thread's first name. Raises RuntimeError if `jfr print` fails."""
    proc = subprocess.Popen([str(rec.jfr), "print", "--stack-depth", "64", "--events", "jdk.ExecutionSample",
                             str(rec.path)], stdout=subprocess.PIPE, text=True)
    thread, frames, in_stack = "", [], False
    for line in proc.stdout:
        line = line.strip()
        if line.startswith("jdk.ExecutionSample"):
            thread, frames, in_stack = "", [], False
        elif line.startswith("sampledThread = "):
            thread = line.split('"')[1] if '"' in line else line
        elif line.startswith("stackTrace = ["):
            in_stack = True
        elif in_stack and line == "]":
            in_stack = False
            yield thread, frames
        elif in_stack and line != "...":
            frames.append(line.split("(", 1)[0])
    if proc.wait() != 0:
        raise RuntimeError(f"jfr print failed ({proc.returncode})")


def category(frames: list[str], categories: list[tuple[str, list[str]]]) -> str:
    """The label of the nearest frame, from the top, that falls in one of `categories` (label, needles
    its frames contain); "other" if none does."""
    return next((label for f in frames for label, needles in categories if any(n in f for n in needles)), "other")


# ------------------------------------------------------------------------------ batch runs

class Runner:
    """Times one query at a time to the noop sink, cancels it after `timeout` seconds, and measures
    the CPU of this benchmark's processes and of every other process meanwhile (CpuMeter)."""

    def __init__(self, spark, timeout: float):
        self.spark = spark
        self.sc = spark.sparkContext
        self.timeout = timeout
        self.cpu = CpuMeter(spark)
        self._n = 0

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
        s0 = self.cpu.sample()
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
            c = CpuMeter.between(s0, self.cpu.sample(), elapsed)
            dog.join()
            for k in (conf or {}):
                sconf.unset(k)
            self.sc.setLocalProperty("spark.jobGroup.id", None)
        return {"status": status, "seconds": elapsed, "foreign_cpu": c["foreign_cpu_s"], "own_cpu": c["own_cpu_s"],
                "shuffle_bytes": self.shuffle_bytes(group)}

    def shuffle_bytes(self, group: str) -> int | None:
        """Bytes the stages of a job group wrote to the shuffle (Spark's task metrics, as its UI shows
        them): what a cluster's network and disks carry between a query's stages."""
        def scala_seq(seq):
            it = seq.iterator()
            while it.hasNext():
                yield it.next()

        try:
            store = self.sc._jsc.sc().statusStore()
            stages = set()
            for job in scala_seq(store.jobsList(None)):
                if job.jobGroup().isDefined() and job.jobGroup().get() == group:
                    stages.update(int(s) for s in scala_seq(job.stageIds()))
            return sum(int(store.lastStageAttempt(s).shuffleWriteBytes()) for s in stages)
        except Exception as e:  # a Spark whose status store reads differently: the figure is missing, not wrong
            log(f"shuffle bytes unavailable: {e}")
            return None


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
    cell = {"label": label, "times_s": [], "cpu_s": [], "foreign_cores": [], "shuffle_bytes": None, "warmup_s": None,
            "median_s": None, "median_cpu_s": None, "median_foreign_cores": None,
            "status": None, "note": None, "contended_runs": 0, "max_foreign_cores": None,
            "timeout_s": timeout}

    def one(kind: str) -> dict:
        attempt, attempts = 0, []
        while True:
            wait_quiet(runner.cpu, quiet_wait, contended)
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
            if len(ok) > 1:  # keep the attempt that shared the machine least
                best = min(ok, key=lambda x: x["foreign_cores"] if x["foreign_cores"] is not None else 0.0)
                if best is not r:
                    log(f"  keeping attempt {best['attempt']} ({best['seconds']:.2f}s, other processes "
                        f"{best['foreign_cores']:.2f} cores)")
                return best
            return r

    w = one("warm-up")
    cell["shuffle_bytes"] = w.get("shuffle_bytes")  # the same in every run of a query
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


def cache_input(df, name: str, **extra) -> tuple[object, dict]:
    """Caches and materializes df before any timing; returns it with its rows, keys, time range,
    partitions and the seconds that took, plus one aggregate per `extra` column (name=Column)."""
    from pyspark.sql import functions as F
    t0 = time.perf_counter()
    df = df.cache()
    r = df.agg(F.count("*").alias("n"), F.countDistinct("k").alias("keys"),
               F.min("ts").alias("lo"), F.max("ts").alias("hi"),
               *[col.alias(k) for k, col in extra.items()]).collect()[0]
    info = {"rows": r["n"], "keys": r["keys"], **{k: r[k] for k in extra}, "ts_min": str(r["lo"]),
            "ts_max": str(r["hi"]), "partitions": df.rdd.getNumPartitions(),
            "cache_s": round(time.perf_counter() - t0, 1)}
    log(f"input {name} cached: {info}")
    return df, info


def sum_count_max():
    """The aggregates of the sliding and session benchmarks: sum_v, count_v, max_v of v."""
    from pyspark.sql import functions as F
    return [F.sum("v").alias("sum_v"), F.count("v").alias("count_v"), F.max("v").alias("max_v")]


def sum_count_avg():
    """The aggregates of the aligned and count-window benchmarks: s, n, a (sum, rows, mean of v)."""
    from pyspark.sql import functions as F
    return [F.sum("v").alias("s"), F.count(F.lit(1)).alias("n"), F.avg("v").alias("a")]


# ------------------------------------------------------------------------------ streaming runs

def write_batches(df, folder: Path, batches: int) -> list[Path]:
    """Writes df, whose `batch` column numbers its rows' micro-batch 0..batches-1 (the other columns in
    the order the rows arrive), as one Parquet file per micro-batch; modification times increase file
    by file, the order in which the file source reads them. Returns the files in order."""
    staging = folder.with_name(folder.name + "-staging")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    df.write.partitionBy("batch").parquet(str(staging))
    folder.mkdir(parents=True)
    files = []
    first = time.time() - batches - 10
    for b in range(batches):
        parts = sorted(glob.glob(str(staging / f"batch={b}" / "*.parquet")))
        if len(parts) != 1:
            raise RuntimeError(f"expected one file for micro-batch {b}, found {len(parts)}")
        target = folder / f"events-{b:05d}.parquet"
        os.replace(parts[0], target)
        os.utime(target, (first + b, first + b))
        files.append(target)
    shutil.rmtree(staging, ignore_errors=True)
    return files


def link_subset(files: list[Path], folder: Path, n: int) -> None:
    """The first n files, hard-linked into `folder` with their modification times (a warm-up input)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in files[:n]:
        os.link(f, folder / f.name)
        st = f.stat()
        os.utime(folder / f.name, (st.st_mtime, st.st_mtime))


def file_stream(spark, source: Path, watermark: str | None = None):
    """The (k, ts, v) files in `source` as a stream, one file per micro-batch."""
    events = spark.readStream.schema(STREAM_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(source))
    return events.withWatermark("ts", watermark) if watermark else events


def run_stream(spark, df, name: str, checkpoint: Path, expected_batches: int, timeout: float,
               meter: CpuMeter) -> dict:
    """Runs the streaming query `df` (append mode, noop sink, a fresh checkpoint) until it has read
    `expected_batches` data micro-batches and the trailing no-data micro-batch (the last watermark
    move) is done, or `timeout` seconds pass. Events per second = events / the sum of the
    micro-batches' triggerExecution; per micro-batch: state rows, memory, RocksDB bytes, output rows, durations."""
    return run_stream_with_progress(spark, df, name, checkpoint, expected_batches, timeout, meter)[0]


def jit_compile_s(spark) -> float:
    """Seconds the driver JVM's just-in-time compilers have spent compiling since it started (its
    threads' time, about their CPU: they run beside the query's tasks and count in its CPU)."""
    jvm = spark.sparkContext._jvm
    return jvm.java.lang.management.ManagementFactory.getCompilationMXBean().getTotalCompilationTime() / 1000.0


def wait_for_batches(q, expected_batches: int, timeout: float, *, poll: float = 0.2, trailing_wait: float = 20.0,
                     on_progress: Callable[[int], None] | None = None) -> str:
    """Waits until the streaming query `q` has read `expected_batches` data micro-batches and the trailing
    no-data micro-batch (the last watermark move) is done: "ok", or "ok (no trailing micro-batch)" when none
    came within `trailing_wait` s; "timeout" after `timeout` s; "error: ..." when the query failed.
    `on_progress(n)` is called whenever n progress reports have been seen. Every `poll` s it reads only each
    new micro-batch's input rows through Py4J: the whole progress as JSON at every look would cost a good part
    of a core after ~90 micro-batches, inside the CPU measured."""
    jq = q._jsq
    seen, data, last_rows = 0, 0, None
    t0 = last_data_seen = time.perf_counter()
    while True:
        exc = jq.exception()
        if exc.isDefined():
            return f"error: {str(exc.get().getMessage()).splitlines()[0][:300]}"
        progress = jq.recentProgress()
        if len(progress) > seen:
            for i in range(seen, len(progress)):
                last_rows = progress[i].numInputRows()
                data += last_rows > 0
            seen = len(progress)
            if on_progress is not None:
                on_progress(seen)
        read_all = data >= expected_batches
        if read_all and last_rows == 0 and seen > data:
            return "ok"
        if read_all and time.perf_counter() > last_data_seen + trailing_wait:
            return "ok (no trailing micro-batch)"
        if not read_all:
            last_data_seen = time.perf_counter()
        if time.perf_counter() > t0 + timeout:
            return "timeout"
        time.sleep(poll)


def batch_of(p: dict) -> dict:
    """What a micro-batch's progress (as a dict) says of it: input, durations, state, output, watermark."""
    ops = p.get("stateOperators") or []
    custom = [op.get("customMetrics") or {} for op in ops]
    return {
        "batch": p["batchId"],
        "input_rows": p["numInputRows"],
        "trigger_ms": p["durationMs"].get("triggerExecution", 0),
        "add_batch_ms": p["durationMs"].get("addBatch", 0),
        "state_rows": sum(op.get("numRowsTotal", 0) for op in ops),
        "state_rows_updated": sum(op.get("numRowsUpdated", 0) for op in ops),
        "state_rows_removed": sum(op.get("numRowsRemoved", 0) for op in ops),
        "state_memory_bytes": sum(op.get("memoryUsedBytes", 0) for op in ops),
        "state_commit_ms": sum(op.get("commitTimeMs", 0) for op in ops),
        # RocksDB's files: the state's bytes on disk, and what this micro-batch's commit flushed
        "state_sst_bytes": sum(c.get("rocksdbSstFileSize", 0) for c in custom),
        "state_flushed_bytes": sum(c.get("rocksdbTotalBytesWrittenByFlush", 0) for c in custom),
        "output_rows": (p.get("sink") or {}).get("numOutputRows", -1),
        "watermark": (p.get("eventTime") or {}).get("watermark"),
        "operator": ",".join(str(op.get("operatorName")) for op in ops),
    }


def run_stream_with_progress(spark, df, name: str, checkpoint: Path, expected_batches: int, timeout: float,
                             meter: CpuMeter, on_start: Callable[[], None] | None = None) -> tuple[dict, list]:
    """run_stream, and the query's progress (a dict per micro-batch, observed metrics included); `on_start`
    is called just before the query starts, after the garbage collection that precedes it. The whole
    progress is read once, after the query stopped and the CPU was sampled (wait_for_batches reads little)."""
    shutil.rmtree(checkpoint, ignore_errors=True)
    spark.sparkContext._jvm.System.gc()
    jit0 = jit_compile_s(spark)
    if on_start is not None:
        on_start()
    s0 = meter.sample()
    t0 = time.perf_counter()
    q = (df.writeStream.queryName(f"bench_{name}_{int(time.time() * 1000)}")
         .format("noop").outputMode("append")
         .option("checkpointLocation", str(checkpoint))
         .start())
    try:
        status = wait_for_batches(q, expected_batches, timeout)
        status = "ok" if status.startswith("ok") else status  # without a trailing micro-batch: every file was read
        wall = time.perf_counter() - t0
    finally:
        q.stop()
    c = CpuMeter.between(s0, meter.sample(), time.perf_counter() - t0)
    jit = jit_compile_s(spark) - jit0
    progress = q.recentProgress  # after the CPU sample: reading it is not the query's work
    batches = [batch_of(p) for p in progress]
    events = sum(b["input_rows"] for b in batches)
    proc_ms = sum(b["trigger_ms"] for b in batches)
    return {
        "competitor": name, "status": status, "wall_s": wall, "events": events,
        "micro_batches": len(batches), "data_batches": sum(1 for b in batches if b["input_rows"] > 0),
        "processing_s": proc_ms / 1000.0,
        "events_per_s": events / (proc_ms / 1000.0) if proc_ms else None,
        "output_rows": sum(max(b["output_rows"], 0) for b in batches),
        "jit_s": jit, "batches": batches, **c,
    }, progress


def state_quarters(batches: list[dict], field: str = "state_rows") -> dict:
    """State rows (or another per-micro-batch `field`) over the data micro-batches: the mean of the
    second quarter against the mean of the last quarter (after the state filled up), and the
    largest value."""
    rows = [b.get(field) or 0 for b in batches if b["input_rows"] > 0]
    n = len(rows)
    if n < 4:
        return {"q2_mean": None, "q4_mean": None, "growth": None, "max": max(rows) if rows else None}
    m2, m4 = statistics.mean(rows[n // 4: n // 2]), statistics.mean(rows[3 * n // 4:])
    return {"q2_mean": m2, "q4_mean": m4, "growth": (m4 - m2) / m2 if m2 else None, "max": max(rows)}


# ------------------------------------------------------------------------------ results

def results_path(benchmark: str, tag: str, suffix: str = ".json") -> Path:
    return RESULTS_DIR / f"{benchmark}-{tag}{suffix}"


def write_json(res: dict, path: Path, indent: int = 2) -> Path:
    """Writes the results atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(res, indent=indent, default=str) + "\n")
    tmp.replace(path)
    return path


def write_csv(path: Path, rows: list[dict]) -> Path:
    """`rows` as CSV, a line per dict and a column per field that holds a number or a string (in the order
    the fields first appear): the numbers of a results file, for a spreadsheet."""
    import csv
    columns = list(dict.fromkeys(k for r in rows for k, v in r.items() if not isinstance(v, (dict, list))))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_run_csvs(json_path: Path, runs: list[dict], run_keys: tuple[str, ...]) -> None:
    """Beside the results file: <name>.csv, a line per run, and <name>-batches.csv, a line per micro-batch
    of each streaming run (run_stream's `batches`) after the fields `run_keys` that name its run."""
    write_csv(json_path.with_suffix(".csv"), runs)
    write_csv(json_path.with_name(json_path.stem + "-batches.csv"),
              [{**{k: r.get(k) for k in run_keys}, **b} for r in runs for b in r.get("batches") or []])


def compare_windows(left, right, other: str = "range_join", sum_tolerance: float = 0.0,
                    avg_tolerance: float = 1e-12) -> dict:
    """windowagg's (k, start, end, s, n, a) result against `other`'s, as a full outer join on (k, start, end);
    one job. Counts must be equal, sums and averages within their tolerance, relative (0: equal; the sums of
    the table and Python windows are exact); `pairs` and `mean_rows_per_window` are from `other`'s counts."""
    from pyspark.sql import functions as F
    lj = left.select("k", "start", "end", F.col("s").alias("ls"), F.col("n").alias("ln"), F.col("a").alias("la"),
                     F.lit(1).alias("lx"))
    rj = right.select("k", "start", "end", F.col("s").alias("rs"), F.col("n").alias("rn"), F.col("a").alias("ra"),
                      F.lit(1).alias("rx"))
    j = lj.join(rj, ["k", "start", "end"], "full_outer")

    def off(mine: str, theirs: str, tolerance: float):
        if tolerance == 0:
            return F.col(mine) != F.col(theirs)
        return F.abs(F.col(mine) - F.col(theirs)) > tolerance * F.greatest(F.abs(F.col(theirs)), F.lit(1.0))
    one_side = F.col("lx").isNull() | F.col("rx").isNull()
    n_off = F.col("ln") != F.col("rn")
    s_off, a_off = off("ls", "rs", sum_tolerance), off("la", "ra", avg_tolerance)

    def count_if(c):
        return F.sum(F.when(c, 1).otherwise(0))
    r = j.agg(F.count("lx").alias("l"), F.count("rx").alias("r"),
              count_if(one_side | n_off | s_off | a_off).alias("bad"),
              count_if(F.col("lx").isNull()).alias("only_right"), count_if(F.col("rx").isNull()).alias("only_left"),
              count_if(~one_side & n_off).alias("count_off"), count_if(~one_side & s_off).alias("sum_off"),
              count_if(~one_side & a_off).alias("avg_off"), F.sum("rn").alias("pairs"),
              F.avg("rn").alias("mean_rows")).collect()[0]
    return {"windowagg_rows": r["l"], f"{other}_rows": r["r"], "mismatches": r["bad"] or 0,
            "only_in_windowagg": r["only_left"] or 0, f"only_in_{other}": r["only_right"] or 0,
            "count_mismatches": r["count_off"] or 0, "sum_mismatches": r["sum_off"] or 0,
            "avg_mismatches": r["avg_off"] or 0, "pairs": r["pairs"] or 0, "mean_rows_per_window": r["mean_rows"]}
