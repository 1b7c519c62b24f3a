"""The benchmarks of bench/, one row each, and the launcher behind bench/run (issue 55).

    bench/run NAME [--quick] [--tag T] [--report FILE] [the benchmark's flags]
    bench/run NAME --help        the benchmark's flags
    bench/run --list             every NAME, its page, what it measures

A run logs to bench/results/<results>-<tag>.log (tag: --tag, else quick or full), next to the
results file the benchmark writes; --report and --help go straight to the script, unlogged. The
windowagg jar is the same for every benchmark: harness.windowagg_jar().
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"


@dataclass(frozen=True)
class Benchmark:
    name: str  # bench/run NAME
    script: str  # under bench/
    results: str  # its results and log files: bench/results/<results>-<tag>.json and .log
    page: str
    measures: str
    tagged: bool = True  # False: the script takes no --quick/--tag, and logs to <results>.log
    flink: bool = False  # compares with Apache Flink: its virtualenv is set up first (only when missing)
    args: tuple[str, ...] = ()  # always given to the script: one script can run as several benchmarks


BENCHMARKS = [
    Benchmark("sliding-batch", "sliding_batch.py", "sliding_batch", "docs/benchmarks.md",
              "batch sliding windows against Spark's OVER RANGE, self-join and window()"),
    Benchmark("aligned", "aligned_batch.py", "aligned_batch", "docs/benchmarks-aligned.md",
              "hopping, tumbling, cumulative and calendar windows in batch against Spark"),
    Benchmark("count", "count_batch.py", "count_batch", "docs/benchmarks-count.md",
              "count windows (count N rows) against Spark's ROWS frame"),
    Benchmark("table-windows", "table_windows.py", "table_windows", "docs/benchmarks-table-windows.md",
              "windows given as a table against the range join a user writes"),
    Benchmark("table-windows-per-key", "table_windows.py", "table_windows_per_key",
              "docs/benchmarks-table-windows-per-key.md",
              "per-key windows given as a table against the range join on the key", args=("--per-key",)),
    Benchmark("python-windows", "python_windows.py", "python_windows", "docs/benchmarks-python-windows.md",
              "windows a Python function assigns against the same windows in Java"),
    Benchmark("python-aggregates", "python_aggregates.py", "python_aggregates", "docs/benchmarks-python-aggregates.md",
              "a grouped-aggregate pandas UDF over windows against window() and OVER with the same UDF, and in streaming"),
    Benchmark("streaming", "sliding_streaming.py", "sliding_streaming", "docs/benchmarks-streaming.md",
              "streaming sliding windows against Spark's tumbling and hopping windows"),
    Benchmark("sessions", "sessions.py", "sessions", "docs/benchmarks-sessions.md",
              "session windows against Spark's session_window, batch and streaming"),
    Benchmark("small-batches", "small_batches.py", "small_batches", "docs/benchmarks-small-batches.md",
              "small micro-batches over many open keys against Spark's session_window and window()"),
    Benchmark("kafka-compare", "kafka_compare.py", "kafka_compare", "docs/benchmarks-kafka.md",
              "windowagg against Kafka Streams, per core (builds bench/kafka-streams with Maven)"),
    Benchmark("nexmark", "nexmark_bench.py", "nexmark", "docs/benchmarks-nexmark.md",
              "Nexmark q5, q7, q11 and cumulative in Structured Streaming against Apache Flink", flink=True),
    Benchmark("nexmark-differential", "nexmark/differential.py", "nexmark-differential",
              "docs/benchmarks-nexmark.md",
              "windowagg's and Spark's Nexmark outputs checked row by row against Flink's", tagged=False, flink=True),
    Benchmark("latency", "latency.py", "latency", "docs/benchmarks-latency.md",
              "end-to-end latency through Kafka: real-time mode, micro-batches, Kafka Streams "
              "(builds bench/kafka-streams with Maven)"),
    Benchmark("state-upgrade", "state_upgrade.py", "state_upgrade", "docs/benchmarks-state.md",
              "read_state against Spark's state reader, and restarting a 0.3.0 checkpoint "
              "(builds 0.3.0 once)"),
]
BY_NAME = {benchmark.name: benchmark for benchmark in BENCHMARKS}


def listing() -> str:
    name_width, page_width = (max(len(getattr(b, column)) for b in BENCHMARKS) for column in ("name", "page"))
    return "\n".join(f"{b.name:<{name_width}}  {b.page:<{page_width}}  {b.measures}" for b in BENCHMARKS)


def log_path(benchmark: Benchmark, args: list[str]) -> Path:
    if not benchmark.tagged:
        return RESULTS_DIR / f"{benchmark.results}.log"
    # the tag as the script reads it; its other flags are its own
    tags = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    tags.add_argument("--quick", action="store_true")
    tags.add_argument("--tag")
    known, _ = tags.parse_known_args(args)
    return RESULTS_DIR / f"{benchmark.results}-{known.tag or ('quick' if known.quick else 'full')}.log"


def run_logged(commands: list[list[str]], log: Path) -> int:
    """Runs `commands` one after another until one fails, their output both shown and written to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        for command in commands:
            with subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as child:
                # kill <bench/run's pid> stops the benchmark, as when bench/run was the benchmark itself
                signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
                while chunk := child.stdout.read1(65536):
                    for sink in (sys.stdout.buffer, out):
                        sink.write(chunk)
                        sink.flush()
            if child.returncode != 0:  # a signal's as the shell gives it (-15: 143)
                return child.returncode if child.returncode > 0 else 128 - child.returncode
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        print(listing())
        return 0
    if not argv or argv[0] in ("-h", "--help"):
        usage = __doc__.split("\n\n")[1].rstrip()
        print(f"{usage}\n\n{listing()}", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, args = argv[0], argv[1:]
    if name not in BY_NAME:
        print(f"bench/run: unknown benchmark {name!r}; known: {', '.join(BY_NAME)} (bench/run --list)",
              file=sys.stderr)
        return 2
    benchmark = BY_NAME[name]
    # this checkout's Python package, whose jar (windowagg.jar_path) dev/package built and put in it
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")]))
    # Python workers (pandas UDFs) run this interpreter, which has pandas and pyarrow
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    script = [sys.executable, "-u", str(BENCH_DIR / benchmark.script), *benchmark.args]
    if any(a in ("-h", "--help") or a.startswith("--report") for a in args):
        os.execv(sys.executable, script + args)
    commands = [script + args]
    if benchmark.flink:
        import harness  # beside this script: where Flink's virtualenv is
        commands = [[str(BENCH_DIR / "nexmark" / "setup-flink")], script + ["--flink-python", str(harness.FLINK_PYTHON), *args]]
    try:
        return run_logged(commands, log_path(benchmark, args))
    except KeyboardInterrupt:  # the benchmark, in the same process group, was interrupted too
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
