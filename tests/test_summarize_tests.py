"""dev/summarize_tests.py, the closing line of dev/test and dev/test-spark-version: it counts what
passed, failed and was skipped, and fails the run on a skip that is not opt-in. Its pytest reports
here are real ones, of a small module run in a child pytest."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "dev", "summarize_tests.py")

SAMPLE = '''
import os
import pytest

def test_passes():
    assert True

@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.skipif(os.environ.get("WINDOWAGG_SAMPLE_RUNS") != "1", reason="long run: set WINDOWAGG_SAMPLE_RUNS=1")
def test_opt_in(n):
    assert True
'''


def report(tmp_path, source, name="report.xml"):
    """The JUnit XML report of a child pytest run over `source`, as test_sample.py."""
    (tmp_path / "test_sample.py").write_text(source)
    path = tmp_path / name
    env = {k: v for k, v in os.environ.items() if k != "WINDOWAGG_SAMPLE_RUNS"}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={path}", "test_sample.py"],
                   cwd=tmp_path, env=env, capture_output=True, check=False)
    return str(path)


def summarize(*args, **env):
    run = subprocess.run([sys.executable, SCRIPT, "t", *args], capture_output=True, text=True,
                         env={**os.environ, **env}, check=False)
    return run.returncode, run.stdout.strip().splitlines()


def test_opt_in_skips_are_counted_and_named_and_pass(tmp_path):
    code, lines = summarize("--pytest", report(tmp_path, SAMPLE))
    assert lines == ["t: 1 passed, 0 failed, 2 skipped (opt-in: test_sample.py needs WINDOWAGG_SAMPLE_RUNS=1)"]
    assert code == 0


def test_a_skip_that_is_not_opt_in_fails_the_run(tmp_path):
    source = SAMPLE + '''
def test_needs_fixtures():
    pytest.skip("no fixtures")
'''
    code, lines = summarize("--pytest", report(tmp_path, source))
    assert lines == [
        "t: unexpected skip: test_sample.py::test_needs_fixtures: no fixtures",
        "t: 1 passed, 0 failed, 3 skipped (opt-in: test_sample.py needs WINDOWAGG_SAMPLE_RUNS=1; 1 unexpected)",
    ]
    assert code == 1


def test_an_opt_in_skip_with_its_variable_set_is_unexpected(tmp_path):
    code, lines = summarize("--pytest", report(tmp_path, SAMPLE), WINDOWAGG_SAMPLE_RUNS="1")
    assert lines[-1] == "t: 1 passed, 0 failed, 2 skipped (2 unexpected)"
    assert code == 1


def test_failures_missing_reports_and_scalatest_lines(tmp_path):
    failing = report(tmp_path, "def test_fails():\n    assert False\n", "failing.xml")
    scala = tmp_path / "scalatest.log"
    scala.write_text("[info] Tests: succeeded 7, failed 0, canceled 0, ignored 0, pending 0\n"
                     "[info] Tests: succeeded 3, failed 2, canceled 0, ignored 1, pending 0\n")
    code, lines = summarize("--scalatest", str(scala), "1", "--pytest", failing, "--pytest", str(tmp_path / "none.xml"),
                            "--check", "the example", "0", "--check", "class files", "1")
    assert lines[-1] == "t: 11 passed, 5 failed, 1 skipped (1 unexpected)"
    assert "t: failed: test_sample.py::test_fails" in lines
    assert "t: failed: class files (exit status 1)" in lines
    assert code == 1
    built_nothing = tmp_path / "sbt.log"
    built_nothing.write_text("[error] compilation failed\n")
    assert summarize("--scalatest", str(built_nothing), "1")[1][-1] == "t: 0 passed, 1 failed, 0 skipped"


def test_included_results_add_up_and_their_skips_are_judged_again(tmp_path):
    saved = str(tmp_path / "older-line.json")
    assert summarize("--pytest", report(tmp_path, SAMPLE), "--check", "class files", "0", "--save", saved)[0] == 0
    code, lines = summarize("--include", saved, "--check", "the example", "0")
    assert lines == ["t: 3 passed, 0 failed, 2 skipped (opt-in: test_sample.py needs WINDOWAGG_SAMPLE_RUNS=1)"]
    assert code == 0
    assert summarize("--include", saved, WINDOWAGG_SAMPLE_RUNS="1")[0] == 1
    assert summarize("--include", str(tmp_path / "none.json"))[1][-1] == "t: 0 passed, 1 failed, 0 skipped"
