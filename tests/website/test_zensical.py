"""The same pages built with Zensical (`make site ENGINE=zensical`): every page, no cache folder left in the
project, and the reader's checks of the browser test: pages load offline, the zoom by keyboard, axe-core, a metric
found by search."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from urllib.parse import urljoin

import pytest

from build_tools.core._settings import Settings
from build_tools.website import site as site_stage
from tests.website.test_browser import HOST, STAMP, _pages, browser  # noqa: F401 (the browser fixture)

pytest.importorskip("zensical")


@pytest.fixture(scope="module")
def zensical_manual(built_manual, tmp_path_factory):
    """The manual of the shared build, its site rebuilt by Zensical (the figures come from the copied cache)."""
    from build_tools.build import build

    root = tmp_path_factory.mktemp("zensical") / "manual"
    shutil.copytree(built_manual, root, ignore=shutil.ignore_patterns("site", "inputs.key", "site.key"))
    build(root, Settings(engine="zensical", quiet=True))
    return root


@pytest.fixture(scope="module")
def zensical_server(zensical_manual):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    handler = functools.partial(Quiet, directory=str(zensical_manual / "site"))
    httpd = http.server.ThreadingHTTPServer((HOST, 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://{HOST}:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def test_zensical_builds_every_page_and_leaves_no_cache_in_the_project(built_manual, zensical_manual):
    assert _pages(zensical_manual / "site") == _pages(built_manual / "site")
    assert not (zensical_manual / ".cache").exists()
    assert not (zensical_manual / "build" / site_stage.ZENSICAL_SITE).exists()
    config = (zensical_manual / "build" / site_stage.ZENSICAL_CONFIG).read_text(encoding="utf-8")
    assert "docs_dir: docs\n" in config and "INHERIT: ../mkdocs.yml\n" in config
    metrics = (zensical_manual / "site" / "06-metrics.html").read_text(encoding="utf-8")
    assert '<code><span class="manual-nobreak">perf/</span><wbr' in metrics  # break points (markdown_wbr.py)


def test_an_unknown_engine_is_refused_before_anything_is_built(tmp_path, capsys):
    from build_tools.cli import main

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MANUAL_ENGINE", "hugo")
        assert main(["--root", str(tmp_path), "build"]) == 2
    err = capsys.readouterr().err
    assert "ERROR ENGINE='hugo': unknown site engine (expected one of mkdocs, properdocs, zensical)" in err
    assert not (tmp_path / "build").exists()  # refused before the lock, the build folder or any stage


def test_zensical_pages_in_the_browser(zensical_manual, zensical_server, browser):  # noqa: F811
    from axe_playwright_python.sync_playwright import Axe

    options = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}
    found, errors, outside = [], [], []
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme)
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(zensical_server)
                      else (outside.append(route.request.url), route.abort()))
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        for name in _pages(zensical_manual / "site"):
            page.goto(urljoin(zensical_server, name), wait_until="load")
            assert STAMP in page.locator("footer").inner_text(), name
            for violation in Axe().run(page, options=options).response["violations"]:
                if violation["impact"] in ("serious", "critical"):
                    found += [f"{scheme} {name}: {violation['id']} {node['target']}" for node in violation["nodes"]]
        page.goto(urljoin(zensical_server, "01-step.html"), wait_until="load")
        page.locator("a.manual-zoom").first.focus()
        page.keyboard.press("Enter")
        page.locator("dialog.manual-zoom-dialog img").wait_for(state="visible")
        page.keyboard.press("Escape")
        assert page.locator("dialog.manual-zoom-dialog").count() == 0
        context.close()
    assert found == [] and errors == [] and outside == []


def test_zensicals_search_finds_a_metric_by_its_row(zensical_manual, zensical_server, browser):  # noqa: F811
    """Each table row is an entry of Zensical's index, as of MkDocs': a metric's name finds its row."""
    items = json.loads((zensical_manual / "site" / "search.json").read_text(encoding="utf-8"))["items"]
    by_location = {item["location"]: item for item in items}
    assert by_location["06-metrics.html#row-perf-step-time"]["title"] == "perf/step_time"
    assert by_location["06-metrics.html#row-perf-step-time"]["path"] == by_location["06-metrics.html"]["path"]
    assert len(by_location) == len(items)
    page = browser.new_page()
    page.goto(urljoin(zensical_server, "index.html"), wait_until="load")
    page.locator("input.md-search__input").first.click()
    page.keyboard.type("grad_norm", delay=20)
    found = page.locator("a[href*='06-metrics.html'][href$='#row-train-grad-norm']")  # in Zensical's search element
    found.first.wait_for(state="attached", timeout=15_000)
    page.close()
