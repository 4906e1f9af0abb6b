"""`make bench WHAT=serve`: `make serve` (build_tools/website/serve.py) against its anchor, bare `mkdocs serve`
rebuilding the same rendered pages, side by side in one run, on a throw-away copy of the project whose runs/
holds the 20 example runs and, beside them, 1,000 generated runs (bench_scale's scaled set, RUNS x SERVE_STEPS;
`SCALE=RUNSxSTEPS` picks another). Issue 43's goals are the ratios (absolute times on a shared machine are noise):

- a sentence added to a chapter reaches the open page within 1.5 times the time bare mkdocs serve takes to show
  the same sentence added to the rendered page (build/docs/01-step.md);
- a run's title changed in its run.yaml reaches the page that lists it (the front page's run table) within 1.5
  times the time bare mkdocs serve takes to show the same title changed in that rendered page;
- the idle server (that page still open, nothing written) uses under 2 % of a core (issue 34).

The server runs as `python -m build_tools --root COPY serve --port P` in a fresh process, as `make serve` does;
the anchor as `python -m mkdocs serve` on a copy of the rendered pages (build/docs) with the build's own config
(build/mkdocs.yml: the project's mkdocs.yml, its theme and Markdown extensions), in another. The browser is
Debian's Chromium driven by Playwright (the test extra; `make bench WHAT=serve` installs it), as
tests/website/test_serve.py drives it: each time is from the file written to the text found in the open page, which
reloads by itself (mkdocs' live-reload script, in both), each edit made once both servers have settled
(wait_quiet: no rebuild under way, as when an author types). The two take turns, TRIES edits each; the medians
are compared. The idle CPU is the user + system seconds of the server's process tree, read from /proc at the
start and end of IDLE_SECONDS, over that time.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
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
RATIO_GOAL = 1.5  # make serve's time over bare mkdocs serve's, for each kind of edit
TRIES = 3  # edits of each kind, to each server, in turns
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
    sentence_seconds: float | None  # chapter written -> sentence in the open page (median); None: never shown
    title_seconds: float | None  # run.yaml written -> new title in the open page (median)
    title_page: str
    idle_share: float  # of one core, the server's process tree, IDLE_SECONDS with nothing written
    peak_tree_pss_mib: float  # of the server's tree, as last sampled (shown, not judged)
    # bare mkdocs serve on the same rendered pages: the rendered chapter, the rendered page with the title (medians)
    anchor_sentence_seconds: float | None = None
    anchor_title_seconds: float | None = None
    sentence_times: tuple[float | None, ...] = ()  # each try, make serve's then the anchor's
    anchor_sentence_times: tuple[float | None, ...] = ()
    title_times: tuple[float | None, ...] = ()
    anchor_title_times: tuple[float | None, ...] = ()

    @property
    def sentence_ratio(self) -> float | None:
        return _ratio(self.sentence_seconds, self.anchor_sentence_seconds)

    @property
    def title_ratio(self) -> float | None:
        return _ratio(self.title_seconds, self.anchor_title_seconds)


def _ratio(ours: float | None, anchor: float | None) -> float | None:
    return None if ours is None or not anchor else round(ours / anchor, 2)


def _median(times: list[float | None]) -> float | None:
    """The median of the tries; None when any edit never showed (it is a failure, not an outlier)."""
    if not times or any(time is None for time in times):
        return None
    return round(statistics.median(t for t in times if t is not None), 3)


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
    record = {**asdict(results), "sentence_ratio": results.sentence_ratio, "title_ratio": results.title_ratio}
    history = bench_history.append(ROOT, "serve", load_before, load_after, record)
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
    lines += [f"{'a sentence in ' + CHAPTER + '.md to the open page: make serve':<60} {_seconds(r.sentence_seconds)}",
              f"{'  the same in the rendered page: bare mkdocs serve':<60} {_seconds(r.anchor_sentence_seconds)}",
              f"{'a title in run.yaml to ' + r.title_page + ': make serve':<60} {_seconds(r.title_seconds)}",
              f"{'  the same in the rendered page: bare mkdocs serve':<60} {_seconds(r.anchor_title_seconds)}"]
    goals = [Judged("a chapter's sentence, make serve over bare mkdocs serve", r.sentence_ratio, RATIO_GOAL, "x"),
             Judged("a run's title, make serve over bare mkdocs serve", r.title_ratio, RATIO_GOAL, "x"),
             Judged(f"idle server, {r.runs} runs, CPU of one core", round(r.idle_share * 100, 2),
                    IDLE_GOAL_SHARE * 100, "%", strict=True)]
    judged, code = verdict(goals, busy)
    return lines + judged, code


def _seconds(value: float | None) -> str:
    return "not shown" if value is None else f"{value:8.2f} s (median of {TRIES})"


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
    anchor: subprocess.Popen[bytes] | None = None
    anchor_log = (work.parent / "anchor.log").open("wb")
    try:
        _wait_served(server, url + f"{CHAPTER}.html", work.parent / "serve.log")
        start_seconds = time.perf_counter() - started
        print(f"served after {start_seconds:.1f} s; starting bare mkdocs serve on the same rendered pages ...",
              flush=True)
        run_yaml, title_page = _titled_run(work)
        rendered = _anchor_copy(work)
        anchor_port = _free_port()
        anchor_url = f"http://127.0.0.1:{anchor_port}/"
        anchor = subprocess.Popen([sys.executable, "-m", "mkdocs", "serve", "-f", str(rendered / "mkdocs.yml"),
                                   "-a", f"127.0.0.1:{anchor_port}"], cwd=rendered, stdout=anchor_log,
                                  stderr=subprocess.STDOUT, env=bench_history.users_environment())
        _wait_served(anchor, anchor_url + f"{CHAPTER}.html", work.parent / "anchor.log")
        print("measuring the edits, make serve and bare mkdocs serve in turns ...", flush=True)
        times: dict[str, list[float | None]] = {"sentence": [], "anchor sentence": [], "title": [],
                                                 "anchor title": []}
        settled: list[float] = []
        old_title = _title_of(run_yaml)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS)
            try:
                ours, bare = browser.new_page(), browser.new_page()
                for attempt in range(TRIES):
                    sentence = f"A sentence the benchmark wrote at {time.time():.0f}, try {attempt + 1}."
                    settled.append(_quiet(server, anchor))
                    ours.goto(url + f"{CHAPTER}.html")
                    times["sentence"].append(_shown(ours, sentence, lambda s=sentence: _append(
                        work / "docs" / f"{CHAPTER}.md", f"\n{s}\n")))
                    settled.append(_quiet(server, anchor))
                    bare.goto(anchor_url + f"{CHAPTER}.html")
                    times["anchor sentence"].append(_shown(bare, sentence, lambda s=sentence: _append(
                        rendered / "docs" / f"{CHAPTER}.md", f"\n{s}\n")))
                    title = f"Retitled by the benchmark at {time.time():.0f}, try {attempt + 1}"
                    settled.append(_quiet(server, anchor))
                    ours.goto(url + title_page)
                    times["title"].append(_shown(ours, title, lambda t=title: _retitle(run_yaml, t)))
                    settled.append(_quiet(server, anchor))
                    bare.goto(anchor_url + title_page)  # the same addresses (mkdocs.yml: use_directory_urls: false)
                    times["anchor title"].append(_shown(bare, title, lambda t=title, o=old_title: _replace_in(
                        rendered / "docs" / _source_of(title_page), o, t)))
                    old_title = title
                settled.append(wait_quiet(server.pid))
                ours.goto(url + title_page)
                print(f"measuring the idle server for {IDLE_SECONDS:.0f} s ...", flush=True)
                idle = idle_share(server.pid, IDLE_SECONDS)
            finally:
                browser.close()
    finally:
        sampler.stop()
        for process in (server, anchor):
            if process is not None:
                process.terminate()
                process.wait(timeout=60)
        log.close()
        anchor_log.close()
    print(f"settled before each edit and the idle time after {', '.join(f'{t:.1f}' for t in settled)} s", flush=True)
    runs = sum(1 for path in (work / "runs").iterdir() if (path / "run.yaml").is_file())
    return ServeResults(runs, round(start_seconds, 2), _median(times["sentence"]), _median(times["title"]),
                        title_page, round(idle, 4), round(sampler.peak_pss / bench_scale.MIB, 1),
                        _median(times["anchor sentence"]), _median(times["anchor title"]),
                        tuple(times["sentence"]), tuple(times["anchor sentence"]), tuple(times["title"]),
                        tuple(times["anchor title"]))


def _anchor_copy(work: Path) -> Path:
    """The anchor's project: a copy of the rendered pages (build/docs) and the build's config for them
    (build/mkdocs.yml, its docs_dir pointed at the copy), beside the bench's copy."""
    import yaml

    rendered = work.parent / "rendered"
    shutil.copytree(work / "build" / "docs", rendered / "docs")
    config_text = (work / "build" / "mkdocs.yml").read_text(encoding="utf-8")
    config = yaml.safe_load(config_text)
    config["docs_dir"] = str(rendered / "docs")
    config["site_dir"] = str(rendered / "site")
    (rendered / "mkdocs.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=1000),
                                         encoding="utf-8")
    return rendered


def _quiet(*servers: subprocess.Popen[bytes] | None) -> float:
    """wait_quiet for each server in turn: both settled before an edit to either."""
    return sum(wait_quiet(server.pid) for server in servers if server is not None)


def _title_of(run_yaml: Path) -> str:
    import yaml

    return str(yaml.safe_load(run_yaml.read_text(encoding="utf-8")).get("title", ""))


def _source_of(page: str) -> str:
    """The rendered Markdown page a page of the site is built from (index.html <- index.md)."""
    return page.removesuffix(".html") + ".md"


def _replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if old not in text:
        raise RuntimeError(f"{path.name} does not show {old!r}: the anchor's edit would change nothing")
    path.write_text(text.replace(old, new), encoding="utf-8")


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
