"""The mutation check of issue 56: each deliberate bug below is put into a scratch git worktree of HEAD,
the jars are built there, the tests that should catch it run, and the tests that failed are recorded.
Run through dev/mutations, which says how; it is opt-in (dev/test does not run it)."""

import argparse
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Mutation:
    name: str
    bug: str  # what the edit breaks, and why that edit is this bug
    path: str  # a product file, from the repository's root
    old: str  # must occur exactly once in the file
    new: str
    scalatest: Tuple[str, ...]  # suites, by class name (core's and spark's alike: the root project's testOnly runs both)
    pytest: Tuple[str, ...]  # modules or test ids under tests/


MUTATIONS = (
    Mutation(
        name="sliding-window-start-off-by-one-tick",
        bug="A window bound off by one tick. The sliding sweep drops the records at a window's start along with those "
            "before it, so every sliding window [s, s + size] holds only (s, s + size]: a row exactly `size` "
            "before a window's end is left out of it.",
        path="jvm/core/src/main/scala/windowagg/core/SlidingWindowSweep.scala",
        old="while (timesInWindow.nonEmpty && timesInWindow.head < s) {",
        new="while (timesInWindow.nonEmpty && timesInWindow.head <= s) {",
        scalatest=("windowagg.core.SlidingWindowSweepSpec", "windowagg.core.SlidingWindowSweepBoundsSpec",
                   "windowagg.SlidingWindowsSpec", "windowagg.spark.SlidingWindowAggregationSuite"),
        pytest=("tests/test_dataframe.py",)),
    Mutation(
        name="late-row-kept",
        bug="A late row kept. The streaming processor of the kinds swept from partials by time judges a row late "
            "against the earliest time instead of the micro-batch's watermark, so no row is ever late: a row whose "
            "windows were all emitted is aggregated into the key's state instead of being routed and counted.",
        path="jvm/spark/src/main/scala/windowagg/spark/streaming/PartialsByTime.scala",
        old="if (finality.isLate(t, listedWindows, watermark)) out.notWindowed(in.whole, NotWindowed.Late, in.count)",
        new="if (finality.isLate(t, listedWindows, Long.MinValue)) out.notWindowed(in.whole, NotWindowed.Late, in.count)",
        scalatest=("windowagg.spark.StreamingSlidingSuite", "windowagg.spark.EmissionSuite"),
        pytest=("tests/test_streaming.py", "tests/test_kinds.py")),
    Mutation(
        name="metric-not-published",
        bug="A metric not published. The streaming plan no longer observes the metrics named `windowagg` (late, "
            "null-time, unwindowed and expired rows): rows are still routed, but a query's progress reports none "
            "of the counts.",
        path="jvm/spark/src/main/scala/windowagg/spark/streaming/StreamingWindowPlanner.scala",
        old="val observed = processed.observe(MetricsName, counts.head, counts.tail: _*)",
        new="val observed = processed",
        scalatest=("windowagg.spark.StreamingSlidingSuite", "windowagg.spark.IdleKeyExpirySuite"),
        pytest=("tests/test_streaming.py", "tests/test_storm.py")),
    Mutation(
        name="calendar-day-in-the-session-zone",
        bug="A calendar day in the wrong zone. Calendar windows ignore their own zone (`inZone`) and read times in "
            "the column's: the session time zone for a TIMESTAMP, UTC for an epoch column, so a day in New York "
            "starts at midnight UTC.",
        path="jvm/core/src/main/scala/windowagg/CalendarWindows.scala",
        old="case Some(z) => timeline.inZone(z)",
        new="case Some(_) => timeline",
        scalatest=("windowagg.CalendarWindowsSpec", "windowagg.spark.WindowKindConformanceSuite"),
        pytest=("tests/test_calendar.py",)),
    Mutation(
        name="table-window-end-inclusive",
        bug="A table window's end inclusive. Each window [start, end) read from the table is swept as "
            "[start, end + 1 tick), which holds the same ticks as [start, end]: a row exactly at a window's end is "
            "aggregated into it.",
        path="jvm/core/src/main/scala/windowagg/TableWindows.scala",
        old="def resolved(l: TableWindows.Listed) = TableWindows.Resolved(l.starts, l.ends, grace)",
        new="def resolved(l: TableWindows.Listed) = TableWindows.Resolved(l.starts, l.ends.map(_ + 1), grace)",
        scalatest=("windowagg.TableWindowsSpec", "windowagg.spark.TableWindowsSuite"),
        pytest=("tests/test_kinds.py",)),
)


class NotApplied(Exception):
    """A mutation's text is not in its file exactly once: it would test nothing."""


def mutated(mutation: Mutation, text: str) -> str:
    found = text.count(mutation.old)
    if found != 1:
        raise NotApplied(f"{mutation.name}: the text to replace occurs {found} times in {mutation.path}, "
                         f"not once: {mutation.old!r}")
    return text.replace(mutation.old, mutation.new)


def check_applies(mutation: Mutation) -> None:
    """Fails before anything is built when HEAD's file does not hold the mutation's text exactly once."""
    head = subprocess.run(["git", "-C", ROOT, "show", f"HEAD:{mutation.path}"], capture_output=True, text=True)
    if head.returncode != 0:
        raise NotApplied(f"{mutation.name}: {mutation.path} is not in HEAD: {head.stderr.strip()}")
    mutated(mutation, head.stdout)


def run(command: List[str], cwd: str, log: str, env: Dict[str, str] = None) -> int:
    with open(log, "w") as out:
        return subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              env=env).returncode


def failed_in_junit_reports(paths: List[str]) -> List[str]:
    """The test cases with a failure or an error in JUnit XML reports (sbt's and pytest's), as
    `Suite: test` for ScalaTest and `tests/module.py::test` for pytest."""
    failed = []
    for path in paths:
        for case in ElementTree.parse(path).iter("testcase"):
            if case.find("failure") is None and case.find("error") is None:
                continue
            owner = case.get("classname", "")
            if owner.startswith("tests."):
                failed.append(f"{owner.replace('.', '/')}.py::{case.get('name')}")
            else:
                failed.append(f"{owner.rsplit('.', 1)[-1]}: {case.get('name')}")
    return failed


def aborted_suites(log: str, failed: List[str]) -> List[str]:
    """Suites sbt names as failed ("Failed tests:" / "Error during tests:") that no failing test case
    accounts for: they aborted (their set-up or a forked JVM failed)."""
    named = set(re.findall(r"^\[error\]\s+(windowagg\.[\w.]+)\s*$", open(log, errors="replace").read(), re.M))
    accounted = {entry.split(":", 1)[0] for entry in failed}
    return [f"{suite.rsplit('.', 1)[-1]}: aborted" for suite in sorted(named)
            if suite.rsplit(".", 1)[-1] not in accounted]


def check(mutation: Mutation, logs: str) -> dict:
    """Builds and tests `mutation` in a scratch worktree of HEAD, which it removes; the result, for the JSON."""
    os.makedirs(logs, exist_ok=True)
    scratch = os.path.join(tempfile.mkdtemp(prefix="windowagg-mutation-"), mutation.name)
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", scratch, "HEAD"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result = {"name": mutation.name, "bug": mutation.bug, "path": mutation.path, "old": mutation.old,
              "new": mutation.new, "scalatest": list(mutation.scalatest), "pytest": list(mutation.pytest)}
    started = time.monotonic()
    result["load_average_at_start"] = list(os.getloadavg())
    try:
        # the same pinned PySpark, used and never installed into: the tests import the scratch tree's
        # python/ and its jar (PYTHONPATH, WINDOWAGG_JAR), as dev/make-state-fixtures runs old releases
        os.symlink(os.path.join(ROOT, ".venv"), os.path.join(scratch, ".venv"))
        source = os.path.join(scratch, mutation.path)
        with open(source) as f:
            text = f.read()
        with open(source, "w") as f:
            f.write(mutated(mutation, text))

        print(f"windowagg mutations: {mutation.name}: building", flush=True)
        build_log = os.path.join(logs, "build.log")
        built = run([os.path.join(scratch, "build", "sbt"), "spark/package", "examples/package"], scratch, build_log)
        result["build_s"] = round(time.monotonic() - started, 1)
        if built != 0:
            result.update(status="build failed", caught_by=[], log=build_log)
            return result

        caught = []
        tests_started = time.monotonic()
        if mutation.scalatest:
            print(f"windowagg mutations: {mutation.name}: ScalaTest {', '.join(mutation.scalatest)}", flush=True)
            scala_log = os.path.join(logs, "scalatest.log")
            run([os.path.join(scratch, "build", "sbt"), "testOnly " + " ".join(mutation.scalatest)], scratch, scala_log)
            scala_failed = failed_in_junit_reports(glob.glob(os.path.join(scratch, "jvm", "*", "target", "test-reports", "*.xml")))
            caught += scala_failed + aborted_suites(scala_log, scala_failed)
        if mutation.pytest:
            print(f"windowagg mutations: {mutation.name}: pytest {' '.join(mutation.pytest)}", flush=True)
            report = os.path.join(logs, "pytest.xml")
            jar = glob.glob(os.path.join(scratch, "jvm", "spark", "target", "windowagg-*.jar"))[0]
            env = {**os.environ, "PYTHONPATH": os.path.join(scratch, "python"), "WINDOWAGG_JAR": jar}
            workers = ["-n", "2", "--dist", "loadfile"] if len(mutation.pytest) > 1 else []
            run([os.path.join(ROOT, ".venv", "bin", "python"), "-m", "pytest", *mutation.pytest, "-q",
                 "-p", "no:cacheprovider", *workers, f"--junitxml={report}"], scratch, os.path.join(logs, "pytest.log"), env)
            if os.path.isfile(report):
                caught += failed_in_junit_reports([report])
            else:
                caught.append("pytest: did not run (see pytest.log)")
        result["tests_s"] = round(time.monotonic() - tests_started, 1)
        result.update(status="caught" if caught else "NOT CAUGHT", caught_by=caught)
        return result
    finally:
        result["total_s"] = round(time.monotonic() - started, 1)
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", scratch], stdout=subprocess.DEVNULL)
        shutil.rmtree(os.path.dirname(scratch), ignore_errors=True)


def table(results: List[dict]) -> str:
    lines = []
    for r in results:
        caught_by = r["caught_by"] or [r["status"]]
        lines.append(f"{r['name']} ({r['status']}, {r['total_s'] / 60:.1f} min)")
        lines += [f"    {test}" for test in caught_by]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="dev/mutations", description=__doc__)
    parser.add_argument("--only", action="append", choices=[m.name for m in MUTATIONS], metavar="NAME",
                        help="run this mutation (repeatable); all of them by default")
    parser.add_argument("--list", action="store_true", help="name each mutation and its bug, and stop")
    parser.add_argument("--results", default=os.path.join(ROOT, "target", "mutations", "mutations.json"),
                        help="where the JSON goes (default: %(default)s)")
    args = parser.parse_args()
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name}\n    {m.bug}\n    {m.path}")
        return 0
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    try:
        for m in chosen:
            check_applies(m)
    except NotApplied as e:
        print(f"windowagg mutations: {e}", file=sys.stderr)
        return 2

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    logs = os.path.join(os.path.dirname(os.path.abspath(args.results)), "logs")
    started = time.monotonic()
    results = []
    for m in chosen:
        results.append(check(m, os.path.join(logs, m.name)))
        print(f"windowagg mutations: {m.name}: {results[-1]['status']}", flush=True)
    summary = {
        "commit": commit,
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "load_average_at_end": list(os.getloadavg()), "system": platform.platform()},
        "total_s": round(time.monotonic() - started, 1),
        "mutations": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
    with open(args.results, "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(table(results))
    survived = [r["name"] for r in results if r["status"] != "caught"]
    print(f"windowagg mutations: {len(results) - len(survived)} of {len(results)} caught"
          + (f"; not caught: {', '.join(survived)}" if survived else "") + f" ({args.results})")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
