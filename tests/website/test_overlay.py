"""`make serve`'s error overlay (build_tools/website/overlay.py) and the lines of the loop (serve.py): the overlay
is held to the manual's own boundary and escapes what the error quotes; a page served while the build is broken
says no claim was checked; a rebuild names the file that set it off, and a busy port is one line before any build."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from build_tools.website import boundary, overlay, serve
from tests.conftest import ROOT

FAILURE = overlay.Failure(
    "1 of 18 claims failed:\ndocs/01-step.md:29 fig 1.2 FAIL \"the hand-offs take about 5 s\": hand-offs is 2.28 s, "
    "expected 5 +/- 0.5, 2.22 too low (runs: baseline-seed1..3)",
    "the data no longer supports these captions: change the claim or look at the runs", "docs/01-step.md changed",
    "12:03:04")


def test_the_overlay_holds_only_what_a_page_of_the_manual_may_hold() -> None:
    html = overlay.overlay(FAILURE)
    assert boundary.page_refusals(html) == []
    assert boundary.html_scripts(html) == [] and boundary.html_addresses(html) == []
    # The page sent when no build has written one yet: a document's frame (<meta>, <title>) around it, no more.
    alone = overlay.page(FAILURE).decode()
    assert boundary.html_scripts(alone) == [] and boundary.html_addresses(alone) == []


def test_the_overlay_shows_the_error_its_hint_and_what_set_it_off() -> None:
    html = overlay.overlay(FAILURE)
    assert ('<pre style="' in html and "ERROR 1 of 18 claims failed:\ndocs/01-step.md:29 fig 1.2 FAIL &quot;the "
            "hand-offs take about 5 s&quot;: hand-offs is 2.28 s, expected 5 +/- 0.5, 2.22 too low (runs: "
            "baseline-seed1..3)</pre>" in html)
    assert ("<strong>hint:</strong> the data no longer supports these captions: change the claim or look at the "
            "runs</p>") in html
    assert "Set off by docs/01-step.md changed, at 12:03:04." in html


def test_what_the_error_quotes_is_escaped_and_stripped_of_controls() -> None:
    hostile = overlay.Failure('runs/<script>alert(1)</script>/run.yaml:2: "\x1b[31mred\x1b[0m" & <img src=x>',
                              "<b>hint</b>", "runs/<i>x</i>/run.yaml changed", "00:00:00")
    html = overlay.overlay(hostile)
    assert "<script" not in html and "<img" not in html and "<b>" not in html and "<i>" not in html
    assert "\x1b" not in html
    assert "runs/&lt;script&gt;alert(1)&lt;/script&gt;/run.yaml:2: &quot;red&quot; &amp; &lt;img src=x&gt;" in html
    assert boundary.page_refusals(html) == []


def test_a_page_served_while_broken_has_the_overlay_first_and_no_claim_checked(built_manual: Path) -> None:
    page = (built_manual / "site" / "01-step.html").read_bytes()
    assert page.count(b"<summary>Checked against the runs: the claim holds</summary>") == 5
    marked = overlay.mark(page, FAILURE).decode()
    assert "Checked against the runs" not in marked
    assert marked.count(f"<summary>{overlay.NOT_CHECKED}</summary>") == 5
    body = marked.index("<body")
    assert marked.index(f'<div id="{overlay.OVERLAY_ID}"') == marked.index(">", body) + 1
    assert "<title>Build failed · " in marked


def test_a_rebuild_names_the_file_that_set_it_off(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    chapter, other = tmp_path / "docs" / "01-step.md", tmp_path / "docs" / "02-memory.md"
    chapter.write_text("x")
    other.write_text("y")
    gone = tmp_path / "docs" / "sedAbC123"  # sed -i's temporary file, renamed over the chapter
    assert serve.cause([str(chapter)], tmp_path) == "docs/01-step.md changed"
    assert serve.cause([str(gone), str(chapter), str(chapter)], tmp_path) == "docs/01-step.md changed"
    assert serve.cause([str(chapter), str(other)], tmp_path) == "docs/01-step.md and 1 other file changed"
    assert serve.cause([str(chapter), str(other), str(tmp_path / "docs" / "gone.md"), str(tmp_path / "x")],
                       tmp_path) == "docs/01-step.md and 1 other file changed"
    assert serve.cause([str(gone)], tmp_path) == "docs/sedAbC123 changed"  # a removed file is named when alone


def test_a_busy_port_is_one_line_before_any_build(tmp_path: Path) -> None:
    """The port held by another program: one line with a port that is free, exit 2, and nothing built (the folder
    given as the project holds no manual at all: a build would fail otherwise)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "build_tools", "--root", str(tmp_path), "serve", "--port",
                               str(port)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                              env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 2 and done.stdout == ""
    free = serve.free_port("127.0.0.1", port)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0] in (f"ERROR port {port} on 127.0.0.1 is in use (another server, or make serve already running): "
                        f"make serve PORT={candidate} serves on another" for candidate in (free, port + 1, port + 2))
    assert list(tmp_path.iterdir()) == []  # no build/, no site/


def test_a_warning_shown_before_in_the_session_is_counted_not_repeated(capsys) -> None:
    from build_tools.core._progress import Progress

    shown: set[str] = set()
    first = Progress(shown=shown)
    first.warn("runs/a/run.yaml: a warning")
    first.done("Built")
    again = Progress(shown=shown)
    again.warn("runs/a/run.yaml: a warning")
    again.warn("runs/a/run.yaml: a warning that changed")
    again.done("Built")
    assert capsys.readouterr().err.splitlines() == [
        "WARNING runs/a/run.yaml: a warning", "Built",
        "WARNING runs/a/run.yaml: a warning that changed",
        "1 warning shown before in this session still holds (not repeated)", "Built"]
    alone = Progress()  # outside make serve: every build shows all of its warnings
    alone.warn("runs/a/run.yaml: a warning")
    assert capsys.readouterr().err == "WARNING runs/a/run.yaml: a warning\n"


def test_a_page_no_build_wrote_is_the_overlay_once_with_the_reload_script(tmp_path: Path) -> None:
    """The first build failed and site/ holds nothing: any page asked for is the overlay alone, which reloads when a
    build passes; once one passed, a missing page is mkdocs' own 404."""
    state = serve.BuildState()
    server = serve._Server(lambda: None, "127.0.0.1", 0, str(tmp_path), state)
    try:
        server._watched_paths["x"] = 1
        assert server._error_page(404) is None
        state.set(FAILURE)
        page = server._error_page(404)
        assert page is not None
        text = page.decode()
        assert text.count(f'id="{overlay.OVERLAY_ID}"') == 1 and "livereload(" in text
        assert server._error_page(500) is None
    finally:
        server.server_close()
