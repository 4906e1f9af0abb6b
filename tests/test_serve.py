"""`make serve` (build_tools/website/serve.py): an edit to a chapter reaches the page open in a browser by
itself, with no request outside the local server; what the build reads or Python caches does not start a rebuild."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import watchdog.events
from conftest import copy_project

from build_tools.website.serve import is_change


def test_only_a_written_file_is_a_change() -> None:
    assert is_change(watchdog.events.FileModifiedEvent("/p/docs/01-step.md"))
    assert is_change(watchdog.events.FileClosedEvent("/p/runs/a/run.yaml"))  # closed after writing
    assert is_change(watchdog.events.FileMovedEvent("/p/docs/.01-step.md.swp", "/p/docs/01-step.md"))
    assert is_change(watchdog.events.FileDeletedEvent("/p/figures/grad_norm.py"))
    # The build reads every input: an opened or read file is no change, nor a folder's own event.
    assert not is_change(watchdog.events.FileOpenedEvent("/p/docs/01-step.md"))
    assert not is_change(watchdog.events.FileClosedNoWriteEvent("/p/docs/01-step.md"))
    assert not is_change(watchdog.events.DirModifiedEvent("/p/docs"))
    # Python writes bytecode while the build imports figures/.
    assert not is_change(watchdog.events.FileCreatedEvent("/p/figures/__pycache__/grad_norm.cpython-311.pyc"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    root = copy_project(tmp_path / "project")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "build_tools", "--root", str(root), "serve", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 600  # the first build of a cold copy
        while True:
            try:
                urllib.request.urlopen(url + "01-step.html", timeout=5).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"make serve did not start:\n{server.stdout.read() if server.stdout else ''}")
                time.sleep(0.5)
        yield root, url
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.mark.slow
def test_a_sentence_added_to_a_chapter_appears_in_the_open_page(served) -> None:
    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM_ARGS, _chromium

    root, url = served
    sentence = "A sentence the author has just written."
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            page.goto(url + "01-step.html")
            assert sentence not in page.inner_text("body")
            chapter = root / "docs" / "01-step.md"
            chapter.write_text(chapter.read_text(encoding="utf-8") + f"\n{sentence}\n", encoding="utf-8")
            # No reload asked for: the page's live-reload script sees the rebuilt site and reloads itself.
            page.wait_for_function("text => document.body.innerText.includes(text)", arg=sentence, timeout=300_000)
        finally:
            browser.close()
    outside = [address for address in requested if not address.startswith(url)]
    assert outside == []  # the live-reload script is served inline by the local server
