"""`make bench WHAT=serve`: issue 34's goals for `make serve` (build_tools/website/serve.py), measured on a
throw-away copy of the project whose runs/ holds the 20 example runs and, beside them, 1,000 generated runs
(bench_scale's scaled set, RUNS x SERVE_STEPS; `SCALE=RUNSxSTEPS` picks another):

- a sentence added to a chapter shows in the page open in a browser within 1.5 s;
- a run's title changed in its run.yaml shows in the page that lists it (the front page's run table) within 4 s;
- the idle server (that page still open, nothing written) uses under 2 % of a core.

The server runs as `python -m build_tools --root COPY serve --port P` in a fresh process, as `make serve` does.
The browser is Debian's Chromium driven by Playwright (the test extra; `make bench WHAT=serve` installs it), as
tests/test_serve.py drives it: each time is from the file written to the text found in the open page, which
reloads by itself (mkdocs' live-reload script), each edit made once the server has settled (wait_quiet: no
rebuild under way, as when an author types). The idle CPU is the user + system seconds of the server's
process tree, read from /proc at the start and end of IDLE_SECONDS, over that time.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from build_tools.benchmarks import bench_history, bench_scale
from build_tools.benchmarks.bench_goals import Judged, verdict
from build_tools.core._layout import PROJECT

ROOT = PROJECT.root
SERVE_SCALE = "1000x100"  # issue 34: 1,000 runs in runs/ (their length is not the goal's: 100 steps each)
CHAPTER = "01-step"
SENTENCE_GOAL_S = 1.5
TITLE_GOAL_S = 4.0
IDLE_GOAL_SHARE = 0.02  # of one core
IDLE_SECONDS = 20.0
# Before each edit, the server is let settle (a rebuild the first build's own writes started, or the last edit's):
# until its tree uses under QUIET_SHARE of a core over QUIET_WINDOW_S, at most QUIET_TIMEOUT_S.
QUIET_SHARE, QUIET_WINDOW_S, QUIET_TIMEOUT_S = 0.05, 1.0, 120.0
START_TIMEOUT_S = 1800.0  # the first, cold build of the copy with its generated runs
SHOW_TIMEOUT_MS = 120_000  # a failure guard only: an edit that never shows is reported as not measured
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@dataclass(frozen=True)
class ServeResults:
    runs: int  # in the copy's runs/
    start_seconds: float  # from the server started to the chapter's page served (its first, cold build)
    sentence_seconds: float | None  # chapter written -> sentence in the open page; None: never shown
    title_seconds: float | None  # run.yaml written -> new title in the open page
    title_page: str
    idle_share: float  # of one core, the server's process tree, IDLE_SECONDS with nothing written
    peak_tree_pss_mib: float  # of the server's tree, as last sampled (shown, not judged)


def serve_main(scale: str) -> int:
    try:
        runs, steps = bench_scale.scaled_writer().parse_scale(scale or SERVE_SCALE)
    except ValueError as error:
        print(f"ERROR {error}", file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    other = bench_scale.OtherWork()
    other.start()
    generated, reused = bench_scale.scaled_set(ROOT / "build" / "bench-runs" / f"{runs}x{steps}", runs, steps)
    print(f"{runs} generated runs of {steps} steps ({'reused' if reused else 'generated'}) beside the example runs",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="manual-bench-serve-") as tmp:
        work, _ = bench_scale.scaled_project(Path(tmp), generated, runs, steps)
        results = measure(work)
    load_after = os.getloadavg()[0]
    lines, code = report(results, load_before, load_after, other.stop())
    print(*lines, sep="\n")
    history = bench_history.append(ROOT, "serve", load_before, load_after, asdict(results))
    print(f"appended to {os.path.relpath(history)}")
    return code


def report(results: ServeResults, load_before: float, load_after: float,
           other_share: float) -> tuple[list[str], int]:
    """The figures, a line per issue 34 goal (met, missed or no verdict) and the exit code."""
    r = results
    busy = bench_scale.busy_machine(load_before, other_share)
    lines = [f"{'runs in runs/ (generated ones with the examples)':<60} {r.runs:8d}",
             f"{'first build until the page is served':<60} {r.start_seconds:8.2f} s",
             f"{'peak PSS of the server process tree':<60} {r.peak_tree_pss_mib:8.0f} MiB",
             f"{'load average (1 min) before, after':<60} {load_before:8.2f}, {load_after:.2f} on "
             f"{os.cpu_count()} cores",
             f"{'other work while measuring, of the CPU':<60} {other_share:8.0%}"]
    goals = [Judged(f"a sentence added to {CHAPTER}.md shows in the open page", r.sentence_seconds,
                    SENTENCE_GOAL_S, "s"),
             Judged(f"a run's title changed in run.yaml shows in {r.title_page}", r.title_seconds, TITLE_GOAL_S, "s"),
             Judged(f"idle server, {r.runs} runs, CPU of one core", round(r.idle_share * 100, 2),
                    IDLE_GOAL_SHARE * 100, "%", strict=True)]
    judged, code = verdict(goals, busy)
    return lines + judged, code


def measure(work: Path) -> ServeResults:
    from playwright.sync_api import sync_playwright

    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    started = time.perf_counter()
    log = (work.parent / "serve.log").open("wb")  # a file, not a pipe: a pipe no one reads would fill and block
    server = subprocess.Popen([sys.executable, "-m", "build_tools", "--root", str(work), "serve", "--port", str(port)],
                              cwd=work, stdout=log, stderr=subprocess.STDOUT, env=bench_history.users_environment())
    sampler = bench_scale._TreeSampler(server.pid)
    sampler.start()
    try:
        _wait_served(server, url + f"{CHAPTER}.html", work.parent / "serve.log")
        start_seconds = time.perf_counter() - started
        print(f"served after {start_seconds:.1f} s; measuring the edits ...", flush=True)
        run_yaml, title_page = _titled_run(work)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(url + f"{CHAPTER}.html")
                settled = [wait_quiet(server.pid)]
                sentence = f"A sentence the benchmark wrote at {time.time():.0f}."
                chapter = work / "docs" / f"{CHAPTER}.md"
                sentence_seconds = _shown(page, sentence, lambda: _append(chapter, f"\n{sentence}\n"))
                settled.append(wait_quiet(server.pid))
                page.goto(url + title_page)
                title = f"Retitled by the benchmark at {time.time():.0f}"
                title_seconds = _shown(page, title, lambda: _retitle(run_yaml, title))
                settled.append(wait_quiet(server.pid))
                print(f"measuring the idle server for {IDLE_SECONDS:.0f} s ...", flush=True)
                idle = idle_share(server.pid, IDLE_SECONDS)
            finally:
                browser.close()
    finally:
        sampler.stop()
        server.terminate()
        server.wait(timeout=60)
        log.close()
    print(f"settled before each edit and the idle time after {', '.join(f'{t:.1f}' for t in settled)} s", flush=True)
    runs = sum(1 for path in (work / "runs").iterdir() if (path / "run.yaml").is_file())
    return ServeResults(runs, round(start_seconds, 2), sentence_seconds, title_seconds, title_page,
                        round(idle, 4), round(sampler.peak_pss / bench_scale.MIB, 1))




def _chromium() -> str:
    """Debian's Chromium (make bench WHAT=serve installs it, as make test does)."""
    return os.environ.get("MANUAL_CHROMIUM") or "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_served(server: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                tail = log.read_text(encoding="utf-8", errors="replace")
                raise RuntimeError(f"make serve did not start during the benchmark:\n{tail[-2000:]}") from None
            time.sleep(0.2)


def _titled_run(work: Path) -> tuple[Path, str]:
    """The first example run whose title a page of the built site shows, and that page."""
    import yaml

    pages = {path.name: path.read_text(encoding="utf-8") for path in sorted((work / "site").glob("*.html"))}
    for run_yaml in sorted((work / "runs").glob("*/run.yaml")):
        if run_yaml.parent.name.startswith("scale-"):
            continue
        title = str(yaml.safe_load(run_yaml.read_text(encoding="utf-8")).get("title", ""))
        shown = [name for name, text in pages.items() if title and title in text]
        if shown:
            return run_yaml, ("index.html" if "index.html" in shown else shown[0])
    raise RuntimeError("no page of the built site shows an example run's title")


def _shown(page: object, text: str, write: object) -> float | None:
    """Seconds from `write()` to `text` in the open page (which reloads itself); None when it never shows."""
    from playwright.sync_api import Error

    started = time.perf_counter()
    write()  # type: ignore[operator]
    try:
        page.wait_for_function("text => document.body && document.body.innerText.includes(text)",  # type: ignore[attr-defined]
                               arg=text, timeout=SHOW_TIMEOUT_MS, polling=20)
    except Error:
        return None
    return round(time.perf_counter() - started, 3)


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def _retitle(run_yaml: Path, title: str) -> None:
    """A new title; a new file replaces a hard link (never written through into the generated set)."""
    lines = run_yaml.read_text(encoding="utf-8").splitlines(keepends=True)
    lines = [f"title: {title}\n" if line.startswith("title:") else line for line in lines]
    run_yaml.unlink()
    run_yaml.write_text("".join(lines), encoding="utf-8")


def wait_quiet(root: int) -> float:
    """Wait until root's process tree uses under QUIET_SHARE of a core over QUIET_WINDOW_S (at most
    QUIET_TIMEOUT_S); the seconds waited."""
    started = time.perf_counter()
    while idle_share(root, QUIET_WINDOW_S) >= QUIET_SHARE and time.perf_counter() - started < QUIET_TIMEOUT_S:
        pass
    return time.perf_counter() - started


def tree_cpu_seconds(root: int) -> float:
    """User + system seconds of root and its descendants, from /proc."""
    processes = bench_scale._processes()
    return sum(processes[pid][1] for pid in bench_scale._descendants(root, processes) if pid in processes)


def idle_share(root: int, seconds: float) -> float:
    """The share of one core root's process tree used over `seconds` (bench_watch's idle time too)."""
    cpu, started = tree_cpu_seconds(root), time.perf_counter()
    time.sleep(seconds)
    return (tree_cpu_seconds(root) - cpu) / (time.perf_counter() - started)
