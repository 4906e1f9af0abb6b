"""`make serve` (build_tools/website/serve.py): an edit to a chapter reaches the page open in a browser by
itself, with no request outside the local server; what the build reads or Python caches does not start a rebuild."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import watchdog.events

from build_tools.website.serve import is_change
from tests.conftest import copy_project


def test_only_a_written_file_is_a_change() -> None:
    assert is_change(watchdog.events.FileModifiedEvent("/p/docs/01-step.md"))
    assert is_change(watchdog.events.FileClosedEvent("/p/runs/a/run.yaml"))  # closed after writing
    assert is_change(watchdog.events.FileMovedEvent("/p/docs/.01-step.md.swp", "/p/docs/01-step.md"))
    assert is_change(watchdog.events.FileDeletedEvent("/p/figures/grad_norm.py"))
    # The build reads every input: an opened or read file is no change, nor a folder's own event.
    assert not is_change(watchdog.events.FileOpenedEvent("/p/docs/01-step.md"))
    assert not is_change(watchdog.events.FileClosedNoWriteEvent("/p/docs/01-step.md"))
    assert not is_change(watchdog.events.DirModifiedEvent("/p/docs"))
    assert is_change(watchdog.events.DirDeletedEvent("/p/runs/old-run"))  # moved out of runs/: its only event
    assert is_change(watchdog.events.DirCreatedEvent("/p/runs/new-run"))
    assert is_change(watchdog.events.DirMovedEvent("/p/runs/a", "/p/runs/b"))
    assert not is_change(watchdog.events.DirCreatedEvent("/p/figures/__pycache__"))
    # Python writes bytecode while the build imports figures/.
    assert not is_change(watchdog.events.FileCreatedEvent("/p/figures/__pycache__/grad_norm.cpython-311.pyc"))


@contextlib.contextmanager
def _observed(folder: Path) -> Iterator[list[watchdog.events.FileSystemEvent]]:
    """Every event an observer scheduled as make serve schedules its own (serve.ASKED) reports under folder while
    the block runs; on leaving, waits up to 10 s for one that is a change."""
    import watchdog.observers

    from build_tools.website.serve import ASKED

    seen: list[watchdog.events.FileSystemEvent] = []

    class _Everything(watchdog.events.FileSystemEventHandler):
        def on_any_event(self, event: watchdog.events.FileSystemEvent) -> None:
            seen.append(event)

    observer = watchdog.observers.Observer()
    observer.schedule(_Everything(), str(folder), recursive=True, event_filter=ASKED)
    observer.start()
    try:
        yield seen
        deadline = time.monotonic() + 10
        while not any(is_change(event) for event in seen) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        observer.stop()
        observer.join()


def test_the_watcher_is_told_of_writes_only(tmp_path: Path) -> None:
    """The observer make serve schedules asks the operating system for writes only: a build opening, reading and
    listing thousands of watched files (runs/) sends it nothing to decode; a write still does."""
    (tmp_path / "run" / "dashboard").mkdir(parents=True)
    written = tmp_path / "run" / "run.yaml"
    written.write_text("title: a\n", encoding="utf-8")
    with _observed(tmp_path) as seen:
        for _ in range(3):  # what a build does to a run it takes from its cache
            written.read_bytes()
            list(os.scandir(tmp_path / "run"))
            list(os.scandir(tmp_path / "run" / "dashboard"))
        time.sleep(1.0)
        assert seen == []
        written.write_text("title: b\n", encoding="utf-8")
    assert any(is_change(event) and event.src_path == str(written) for event in seen)


def test_a_run_folder_moved_out_of_runs_is_a_change(tmp_path: Path) -> None:
    """`mv runs/old-run elsewhere/`: the operating system reports that folder deleted and nothing of its files, and
    that event sets off a rebuild (it used to set off none: the page kept the run until another edit)."""
    import shutil

    runs, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    (runs / "old-run" / "lab").mkdir(parents=True)
    (runs / "old-run" / "run.yaml").write_text("title: a\n", encoding="utf-8")
    elsewhere.mkdir()
    with _observed(runs) as seen:
        shutil.move(runs / "old-run", elsewhere / "old-run")
    assert [event.src_path for event in seen if is_change(event)][:1] == [str(runs / "old-run")]
    assert not any(isinstance(event, watchdog.events.FileDeletedEvent) for event in seen)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, Path]]:
    """make serve on a copy of the project: its root, its address and the file its terminal output goes to (a
    file, not a pipe no one reads, which would fill and stop the server). Each test undoes its edits."""
    root = copy_project(tmp_path_factory.mktemp("served") / "project")
    port = _free_port()
    log = root.parent / "serve.log"
    with log.open("wb") as output:
        server = subprocess.Popen([sys.executable, "-m", "build_tools", "--root", str(root), "serve", "--port",
                                   str(port)], stdout=output, stderr=subprocess.STDOUT,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "300"})
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 600  # the first build of a cold copy
        while True:
            try:
                urllib.request.urlopen(url + "01-step.html", timeout=5).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"make serve did not start:\n{log.read_text(errors='replace')}")
                time.sleep(0.5)
        yield root, url, log
    finally:
        server.terminate()
        server.wait(timeout=60)


@contextlib.contextmanager
def _open_chapter(url: str) -> Iterator[tuple[Any, list[str]]]:
    """A browser's page open at the first chapter, with every address it requested (to hold them to the server)."""
    from playwright.sync_api import sync_playwright

    from tests.website.test_browser import CHROMIUM_ARGS, _chromium

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            page.goto(url + "01-step.html")
            yield page, requested
        finally:
            browser.close()


@pytest.mark.slow
def test_a_sentence_added_to_a_chapter_appears_in_the_open_page(served) -> None:
    root, url, _ = served
    sentence = "A sentence the author has just written."
    with _open_chapter(url) as (page, requested):
        assert sentence not in page.inner_text("body")
        chapter = root / "docs" / "01-step.md"
        before = chapter.read_text(encoding="utf-8")
        chapter.write_text(before + f"\n{sentence}\n", encoding="utf-8")
        # No reload asked for: the page's live-reload script sees the rebuilt site and reloads itself.
        page.wait_for_function("text => document.body.innerText.includes(text)", arg=sentence, timeout=300_000)
        chapter.write_text(before, encoding="utf-8")
        page.wait_for_function("text => !document.body.innerText.includes(text)", arg=sentence, timeout=300_000)
    outside = [address for address in requested if not address.startswith(url)]
    assert outside == []  # the live-reload script is served inline by the local server


OVERLAY = "#manual-build-error"
HOLDS = "Checked against the runs: the claim holds"


def _bad_yaml(root: Path) -> tuple[Path, str, str]:
    """A run.yaml whose second line is no longer YAML: (the file, the text it had, the error the overlay shows)."""
    path = root / "runs" / "baseline-seed1" / "run.yaml"
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    lines[1] = lines[1].rstrip("\n") + ": [unclosed\n"
    path.write_text("".join(lines), encoding="utf-8")
    return path, text, "1 problem in the run data:"


def _false_claim(root: Path) -> tuple[Path, str, str]:
    """Fig 1.2's caption (and its check) changed to hand-offs of about 5 s, where the runs say 2.28 s."""
    path = root / "docs" / "01-step.md"
    text = path.read_text(encoding="utf-8")
    edited = (text.replace("and the hand-offs take about 2 s.", "and the hand-offs take about 5 s.", 1)
              .replace("says: the hand-offs take about 2 s\n", "says: the hand-offs take about 5 s\n", 1)
              .replace('    value: 2\n    unit: s\n    binds: ["2"]\n',
                       '    value: 5\n    unit: s\n    binds: ["5"]\n', 1))
    assert edited.count("about 5 s") == 2 and 'binds: ["5"]' in edited
    path.write_text(edited, encoding="utf-8")
    return path, text, ('1 of 18 claims failed:\ndocs/01-step.md:29 fig 1.2 FAIL "the hand-offs take about 5 s": '
                        "hand-offs (sleep + wake_up + update_weights) is 2.28 s, expected 5 +/- 0.5")


@pytest.mark.slow
@pytest.mark.parametrize(("edit", "changed", "where"),
                         [(_bad_yaml, "runs/baseline-seed1/run.yaml", "runs/baseline-seed1/run.yaml:2: not valid YAML"),
                          (_false_claim, "docs/01-step.md", "2.22 too low (runs: baseline-seed1..3)")],
                         ids=["bad YAML in a run", "a caption the runs do not support"])
def test_a_broken_build_shows_its_error_in_the_open_page_until_the_edit_is_undone(served, edit, changed,
                                                                                   where) -> None:
    """The author's page, open at the chapter: the edit breaks the build, the page reloads by itself to show the
    error over it (no claim on it marked checked); the edit undone, the page reloads to the manual, checked."""
    root, url, log = served
    with _open_chapter(url) as (page, requested):
        assert page.locator(OVERLAY).count() == 0 and HOLDS in page.inner_text("body")
        lines_before = len(log.read_text(encoding="utf-8").splitlines())
        path, text, error = edit(root)
        page.wait_for_selector(OVERLAY, timeout=300_000)
        shown = page.inner_text(OVERLAY)
        assert f"ERROR {error}" in shown and where in shown, shown
        assert "hint: " in shown and f"Set off by {changed} changed" in shown
        assert page.locator(OVERLAY).is_visible()
        assert "Checked against the runs" not in page.inner_text("body").replace(shown, "")
        assert page.title().startswith("Build failed · ")
        path.write_text(text, encoding="utf-8")
        page.wait_for_selector(OVERLAY, state="detached", timeout=300_000)
        page.wait_for_function("text => document.body.innerText.includes(text)", arg=HOLDS, timeout=300_000)
    assert [address for address in requested if not address.startswith(url)] == []
    whole = log.read_text(encoding="utf-8").splitlines()
    said = whole[lines_before:]
    assert f"Rebuilding: {changed} changed" in said
    # The first build's warnings (Miles' guidance) are not said again by a rebuild: one line counts them.
    first = whole[:next(n for n, line in enumerate(whole) if line.startswith("Serving the manual on"))]
    warned = [line for line in first if line.startswith("WARNING ")]
    assert warned and not [line for line in said if line.startswith("WARNING ")]
    assert f"{len(warned)} warnings shown before in this session still hold (not repeated)" in said
    assert "The open page shows this error until a build passes." in said
    assert said[-1] == "The build passes again: the open page shows the manual.", said
