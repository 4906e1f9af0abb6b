"""The edition as readers meet it: record pages in the site's theme (filled when published), no edition
selector in an unpublished build, and in published editions a selector that keeps the chapter and a banner
on an edition that is not the newest."""

from __future__ import annotations

import json
import shutil
from urllib.parse import urljoin

import pytest

from build_tools.core._settings import Settings
from build_tools.editions import _manifest
from build_tools.pages import edition_pages
from tests.website.test_browser import browser  # noqa: F401 (the browser fixture: Debian's Chromium)


def test_an_unpublished_build_has_no_edition_selector_and_record_pages_that_say_so(built_manual):
    site = built_manual / "site"
    assert not (site / "versions.json").exists()
    for page in sorted(site.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        assert '"version": null' in text and 'data-md-component="outdated"' not in text, page.name
    manifest = (site / "manifest.html").read_text(encoding="utf-8")
    assert 'class="md-header' in manifest  # a page of the site's theme
    assert "This build is not a published edition, so it has no manifest yet" in manifest
    home = (site / "index.html").read_text(encoding="utf-8")
    assert '<a href="manifest.html">what it is built from</a>' in home
    assert '<a href="changes.html">what changed since the previous edition</a>' in home
    assert "<loc>http://127.0.0.1:8000/05-heat.html</loc>" in (site / "sitemap.xml").read_text(encoding="utf-8")


def test_publishing_fills_the_themed_record_pages(built_manual, tmp_path):
    page = tmp_path / "manifest.html"
    shutil.copy2(built_manual / "site" / "manifest.html", page)
    manifest = _manifest.compute(built_manual, edition={"edition": "2026.10", "date": "2026-10-15",
                                                        "image": "img", "branch": "main", "commit": "08752a1",
                                                        "commit_date": "2026-10-15"},
                                 project_commit="abc", source_date_epoch=1)
    edition_pages.write_record(page, "Edition 2026.10: manifest", _manifest.manifest_markdown(manifest))
    text = page.read_text(encoding="utf-8")
    assert "not a published edition" not in text
    assert 'class="md-header' in text and "<h2>Runs</h2>" in text and "<h2>Metrics page rows</h2>" in text
    assert "<td>baseline-seed1</td>" in text
    # The everyday build did not prove its claims; an edition's build (make publish) always does.
    assert "<p>This edition's build did not show its claims able to fail.</p>" in text
    proven = _manifest.manifest_markdown({**manifest, "proof": {"shown": 18, "total": 18}})
    assert ("## Claims\n\n18 of 18 claims shown able to fail: for each check of each claim, a change of its data just "
            "past its edge fails it, every other claim checked again.\n") in proven
    assert text.count("<h1") == 1  # the record's own title gave way to the page's


def test_a_site_without_record_pages_gets_standalone_ones(tmp_path):
    page = tmp_path / "changes.html"
    edition_pages.write_record(page, "Edition x: what changed", "# Edition x: what changed\n\nNo change.\n")
    assert "<p>No change.</p>" in page.read_text(encoding="utf-8")


# --- published editions in the browser ---------------------------------------------------------------


@pytest.fixture(scope="module")
def editions(built_manual, tmp_path_factory):
    """Two editions as mike lays them out, built with an edition's settings, as `make publish` builds: 2026.11 the
    newest."""
    from build_tools.build import build

    root = tmp_path_factory.mktemp("published") / "manual"
    shutil.copytree(built_manual, root, ignore=shutil.ignore_patterns("site"))
    build(root, Settings(edition=True, quiet=True))
    branch = root.parent / "branch"
    for edition in ("2026.10", "2026.11"):
        shutil.copytree(root / "site", branch / edition)
    versions = [{"version": "2026.11", "title": "2026.11", "aliases": ["latest"]},
                {"version": "2026.10", "title": "2026.10", "aliases": []}]
    (branch / "versions.json").write_text(json.dumps(versions), encoding="utf-8")
    (branch / "index.html").write_text('<meta http-equiv="refresh" content="0; url=2026.11/">', encoding="utf-8")
    return branch


@pytest.fixture(scope="module")
def branch_server(editions):
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(editions)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def test_a_published_build_has_the_selector(editions):
    text = (editions / "2026.10" / "05-heat.html").read_text(encoding="utf-8")
    assert '"version": {"default": "latest", "provider": "mike"}' in text
    assert 'data-md-component="outdated"' in text


def test_switching_edition_keeps_the_chapter_and_an_older_one_points_to_the_newest(branch_server, browser):  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    page.goto(urljoin(branch_server, "2026.10/05-heat.html"), wait_until="load")
    banner = page.locator('[data-md-component="outdated"]')
    banner.wait_for(state="visible")
    assert banner.inner_text().strip() == ("You are reading edition 2026.10, which is not the newest. "
                                           "Read the newest edition.")
    assert banner.locator("a").evaluate("a => a.href") == branch_server  # the root opens the newest
    page.locator(".md-version__current").focus()  # the selector opens on focus, as on hover
    page.locator(".md-version__link", has_text="2026.11").click()
    page.wait_for_url("**/2026.11/05-heat.html")
    assert page.locator('[data-md-component="outdated"]').is_hidden()
    context.close()
