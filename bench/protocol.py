"""The protocol of a benchmark: what it declares (Benchmark) and what the harness does with it (Run).
bench/README.md's table of files says what each holds; a benchmark declares

    BENCHMARK = protocol.Benchmark(
        "count_batch", "windowagg-bench-count", parse_args, run, render, DOC, IMG,
        results={"input": None, "lengths": {}, "floor": None}, summary=summary)
    main, rerender = BENCHMARK.main, BENCHMARK.rerender
"""
from __future__ import annotations

import copy
import sys
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import report  # noqa: E402
from harness import log  # noqa: E402


class Run:
    """One run of a benchmark: its session (`spark`), its results (`res`, saved to `path` with
    `summarize(res)` first and `also_write(path, res)` after) and, for a batch benchmark, its cells,
    each harness.measure with the run's flags (`a`: --reps, --long-run, the contention flags)."""

    def __init__(self, a, app: str, name: str, results: dict, summarize=None, also_write=None, indent: int = 2,
                 prepared=None, **start_options):
        self.a, self.summarize, self.also_write, self.indent = a, summarize, also_write, indent
        self.prepared = prepared  # what the benchmark's prepare(a) made before the session
        self.spark, self.res = harness.start(a, app, name, **start_options)
        self.path = harness.results_path(name, a.tag)
        if self.res is not None:
            self.res.update(copy.deepcopy(results))

    @cached_property
    def runner(self) -> harness.Runner:
        return harness.Runner(self.spark, self.a.timeout)

    def save(self) -> Path:
        if self.summarize:
            self.summarize(self.res)
        path = harness.write_json(self.res, self.path, self.indent)
        if self.also_write:
            self.also_write(path, self.res)
        return path

    def cell(self, label: str, make_df: Callable[[], object], into: dict | list, key: str | None = None, *,
             conf: dict | None = None, timeout: float | None = None, time_analysis: bool = False, **tags) -> dict:
        """One competitor's cell, stored in `into` (at `key`, or appended) and saved: harness.measure (a
        warm-up longer than --long-run is the one timed run), every run tagged with `tags` and kept in
        res["runs"]; the cell carries the tags too. With time_analysis, each run records the seconds
        make_df took (Spark's analysis, before the timer starts)."""
        a, analysis_s = self.a, []

        def on_run(r):
            r.update(tags)
            if time_analysis:
                r["analysis_s"] = analysis_s[-1] if analysis_s else None
            self.res.setdefault("runs", []).append(r)
            self.save()

        def make():
            t0 = time.perf_counter()
            df = make_df()
            analysis_s.append(time.perf_counter() - t0)
            return df
        c = harness.measure(self.runner, label, make if time_analysis else make_df, reps=a.reps,
                            long_run=a.long_run, contended=a.contended, retries=a.retries, quiet_wait=a.quiet_wait,
                            conf=conf, timeout=timeout, on_run=on_run, long_warmup_is_timed=True)
        c.update(tags)
        if time_analysis:
            c["median_analysis_s"] = harness.median(analysis_s)
        self._store(c, into, key)
        return c

    def _store(self, c: dict, into: dict | list, key: str | None) -> None:
        if key is None:
            into.append(c)
        else:
            into[key] = c
        self.save()

    def check(self, what: str, compute: Callable[[], dict], into: dict, **on_error) -> dict:
        """An untimed check, into["check"]: compute()'s findings, or `on_error` with the error's first line,
        and the seconds it took (check_s); logged and saved."""
        t0 = time.perf_counter()
        try:
            ck = compute()
        except Exception as e:  # noqa: BLE001  (a check that fails says so in the results; the timings stand)
            ck = {**on_error, "error": str(e).splitlines()[0][:500]}
        ck["check_s"] = round(time.perf_counter() - t0, 1)
        into["check"] = ck
        log(f"check {what}: {ck}")
        self.save()
        return ck

    def timed_run(self, meter: harness.CpuMeter, run_once: Callable[[], dict], into: list | None = None,
                  quiet: bool = True, **tags) -> dict:
        """A run that is not a batch cell (a streaming query, another engine's process): run_once()'s findings,
        after a wait for a quiet machine (--quiet-wait) unless not `quiet`, with `tags`, marked contended when other
        processes used more than --contended cores meanwhile, kept in `into` (res["runs"]) and saved."""
        if quiet:
            harness.wait_quiet(meter, self.a.quiet_wait, self.a.contended)
        r = run_once()
        r.update(tags)
        r["contended"] = r["foreign_cores"] is not None and r["foreign_cores"] > self.a.contended
        (self.res["runs"] if into is None else into).append(r)
        self.save()
        return r

    def until_timeout(self, sizes: list[int], letter: str, competitor: str, size_field: str,
                      cells_at: Callable[[int], dict], measure_at: Callable[[int], dict]) -> None:
        """A competitor whose cost only grows with the size: measure_at(size) (its cell) at each size,
        smallest first, until it times out; the larger sizes then get a cell marked not run in
        cells_at(size) (with --no-skip-longer they are measured anyway)."""
        timed_out_at = None
        for size in sizes:
            if timed_out_at is None or not self.a.skip_longer:
                if measure_at(size)["status"] == "timeout":
                    timed_out_at = size
                continue
            label = f"{letter}={size}/{competitor}"
            note = f"not run: timed out at {letter} = {timed_out_at:,} (its cost only grows with {letter})"
            log(f"{label}: {note}")
            self._store({"label": label, "competitor": competitor, size_field: size, "status": "timeout",
                         "skipped": True, "timeout_s": self.a.timeout, "times_s": [], "cpu_s": [], "median_s": None,
                         "median_cpu_s": None, "contended_runs": 0, "shuffle_bytes": None, "note": note},
                        cells_at(size), competitor)


@dataclass(frozen=True)
class Benchmark:
    """A benchmark, declared: its results' name and Spark application, its flags (`parse_args`), its run
    (`run(b: Run)`: inputs, checks, cells or streaming runs, into b.res, which starts with `results`),
    its summary (`summary(res)`, logged at the end; what it returns is the exit status, None for 0) and its
    page (`render(res, json_path, doc, img)`, by default onto `doc` and `img`; None when the page is written
    by hand around what render prints). `prepare(a)`, before the session, returns why the run cannot start
    (a string), or what the run takes from before its session (`b.prepared`: None or anything else); `start(a)` gives
    harness.start's options; `summarize(res)` derives the results' summary from the runs before each
    save (and --report's); `also_write(path, res)` writes other files beside the results (CSV),
    `indent` is the JSON's; `load(json_paths)` makes one results of several files (--report then takes
    several, and render gets their paths)."""
    name: str
    app: str
    parse_args: Callable
    run: Callable[[Run], None]
    render: Callable
    doc: Path | None
    img: Path | None
    results: dict
    summary: Callable[[dict], int | None] | None = None
    prepare: Callable[[object], object] | None = None
    start: Callable[[object], dict] = lambda a: {}
    summarize: Callable[[dict], None] | None = None
    also_write: Callable[[Path, dict], None] | None = None
    indent: int = 2
    load: Callable[[list[Path]], dict] | None = None

    def rerender(self, json_paths: list[Path], doc: Path | None = None, img: Path | None = None) -> None:
        """--report, and bench/report.py's: the page of the results file(s)."""
        if self.load:
            self.render(self.load(json_paths), json_paths, doc or self.doc, img or self.img)
        else:
            report.rerender_one(json_paths, self.render, doc or self.doc, img or self.img, self.summarize,
                                self.indent)

    def main(self, argv=None) -> int:
        return self.main_parsed(self.parse_args(argv))

    def main_parsed(self, a) -> int:
        """main, its flags parsed."""
        if a.report:
            self.rerender([Path(x) for x in (a.report if self.load else [a.report])], *self.page(a))
            return 0
        prepared = self.prepare(a) if self.prepare else None
        if isinstance(prepared, str):
            log(prepared)
            return 1
        log(f"args: {vars(a)}")
        b = Run(a, self.app, self.name, self.results, self.summarize, self.also_write, self.indent, prepared,
                **self.start(a))
        if b.res is None:
            return 1
        try:
            self.run(b)
        finally:
            harness.finish(b.spark, b.res, b.save)
        status = self.summary(b.res) if self.summary else None
        if getattr(a, "docs", False):
            self.rerender([b.path], *self.page(a))
        return status or 0

    def page(self, a) -> tuple[Path | None, Path | None]:
        """Where --docs puts the page and its plot: the benchmark's own, or under the folder `--docs DIR` names."""
        if isinstance(getattr(a, "docs", None), str) and self.doc and self.img:
            return Path(a.docs) / self.doc.name, Path(a.docs) / "img" / self.img.name
        return None, None
