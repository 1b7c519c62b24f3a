"""The closing line of a test run: what passed, failed and was skipped, from each runner's own report.

    python dev/summarize_tests.py TITLE [--scalatest LOG STATUS] [--pytest JUNIT_XML] [--check NAME STATUS]
                                        [--include RESULTS_JSON] [--save RESULTS_JSON]   (each may repeat)

--scalatest  sbt's "Tests: succeeded N, failed N, canceled N, ignored N, pending N" lines in LOG, and
             sbt's exit STATUS: a failure of its own when sbt failed with no test failing (a build error)
--pytest     pytest's JUnit XML report (--junitxml); missing, or holding no test, it counts as a failure
--check      one check of its own, passed when STATUS is 0 (the class-file comparison, the Scala example)
--include    the results another run saved (dev/test takes each older Spark line's)
--save       saves these results, for another run to include

A skip is opt-in when its reason says "set WINDOWAGG_<NAME>=1" and that variable is not 1 here; every
other skip (a ScalaTest test canceled, ignored or pending too) is unexpected: coverage lost without a
failure. Prints each failure and unexpected skip, then one line:
    TITLE: 1,300 passed, 0 failed, 5 skipped (opt-in: test_scale.py needs WINDOWAGG_SCALE_TESTS=1)
and exits 1 on any failure or unexpected skip.
"""

import argparse
import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree

OPT_IN = re.compile(r"\bset (WINDOWAGG_[A-Z0-9_]+)=1\b")
SCALATEST = re.compile(r"Tests: succeeded (\d+), failed (\d+)(?:, canceled (\d+), ignored (\d+), pending (\d+))?")


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []  # what failed, in words
        self.skips = []  # {"test": ..., "reason": ...}

    def fail(self, what, count=1):
        self.failed += count
        self.failures.append(what)

    def add_scalatest(self, log, status):
        try:
            text = open(log, errors="replace").read()
        except OSError:
            text = ""
        failed = 0
        for succeeded, tests_failed, canceled, ignored, pending in SCALATEST.findall(text):
            self.passed += int(succeeded)
            failed += int(tests_failed)
            for how, n in (("canceled", canceled), ("ignored", ignored), ("pending", pending)):
                self.skips += [{"test": f"a ScalaTest test ({log})", "reason": how}] * int(n or 0)
        if failed:
            self.fail(f"ScalaTest: {failed} failed ({log})", failed)
        elif status != "0":
            self.fail(f"sbt failed with no test failing, exit status {status} ({log})")

    def add_pytest(self, report):
        try:
            cases = list(ElementTree.parse(report).getroot().iter("testcase"))
        except (OSError, ElementTree.ParseError) as e:
            self.fail(f"pytest: no report {report} ({e})")
            return
        if not cases:
            self.fail(f"pytest: no test ran ({report})")
        for case in cases:
            # classname "tests.test_scale" and name "test_x[param]": tests/test_scale.py::test_x[param]
            module = case.get("classname", "").replace(".", "/")
            test = f"{module}.py::{case.get('name')}" if module else case.get("name")
            skipped = case.find("skipped")
            if case.find("failure") is not None or case.find("error") is not None:
                self.fail(test)
            elif skipped is not None:
                self.skips.append({"test": test, "reason": skipped.get("message", "")})
            else:
                self.passed += 1

    def add_check(self, name, status):
        if status == "0":
            self.passed += 1
        else:
            self.fail(f"{name} (exit status {status})")

    def include(self, path):
        try:
            with open(path) as f:
                saved = json.load(f)
        except (OSError, ValueError) as e:
            self.fail(f"no results in {path} ({e})")
            return
        self.passed += saved["passed"]
        self.failed += saved["failed"]
        self.failures += saved["failures"]
        self.skips += saved["skips"]

    def save(self, path):
        with open(path, "w") as f:
            json.dump({"passed": self.passed, "failed": self.failed, "failures": self.failures, "skips": self.skips}, f, indent=1)


def opt_in_variable(skip):
    """The variable that would run a skipped test, when it is an opt-in one and not set."""
    match = OPT_IN.search(skip["reason"])
    if match and os.environ.get(match.group(1)) != "1":
        return match.group(1)
    return None


def closing_line(title, results):
    """The one line, and whether the run passed: no failure and no unexpected skip."""
    opt_ins, unexpected = {}, []
    for skip in results.skips:
        variable = opt_in_variable(skip)
        if variable:
            module = os.path.basename(skip["test"].split("::")[0])
            opt_ins.setdefault(f"{module} needs {variable}=1", None)
        else:
            unexpected.append(skip)
    notes = []
    if opt_ins:
        notes.append("opt-in: " + ", ".join(opt_ins))
    if unexpected:
        notes.append(f"{len(unexpected)} unexpected")
    line = (f"{title}: {results.passed:,} passed, {results.failed:,} failed, {len(results.skips):,} skipped"
            + (f" ({'; '.join(notes)})" if notes else ""))
    return line, unexpected, results.failed == 0 and not unexpected


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("title")
    parser.add_argument("--scalatest", action="append", nargs=2, default=[], metavar=("LOG", "STATUS"))
    parser.add_argument("--pytest", action="append", default=[])
    parser.add_argument("--check", action="append", nargs=2, default=[], metavar=("NAME", "STATUS"))
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("--save")
    args = parser.parse_args(argv)
    results = Results()
    for log, status in args.scalatest:
        results.add_scalatest(log, status)
    for name, status in args.check:
        results.add_check(name, status)
    for report in args.pytest:
        results.add_pytest(report)
    for path in args.include:
        results.include(path)
    if args.save:
        results.save(args.save)
    line, unexpected, ok = closing_line(args.title, results)
    for failure in results.failures:
        print(f"{args.title}: failed: {failure}")
    for skip in unexpected:
        print(f"{args.title}: unexpected skip: {skip['test']}: {skip['reason']}")
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
