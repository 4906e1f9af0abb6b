"""The built site in a real browser: Debian's Chromium, driven by Playwright, opens every page from a local
server and checks what a reader gets: figures that load, no console error, no request to any other host,
the stamp in the footer, and Index links that land on their figures."""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from build_tools.pages.chapters import shown_as_text
from tests.conftest import manual_blocks

STAMP = "Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · 2026-10-15 · Edition 2026.10"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HOST = "127.0.0.1"


# The function each script waits for an image with: until it is loaded and shown, failing after 20 s (a test
# fails, never hangs).
WAIT_FOR_LOAD = """
    const waitForLoad = async img => {
        for (let waited = 0; !img.complete || !img.currentSrc; waited += 50) {
            if (waited > 20000) throw new Error('not loaded in 20 s: ' + img.outerHTML.slice(0, 200));
            await new Promise(done => setTimeout(done, 50));
        }
    };"""

def _chromium() -> str:
    """Debian's Chromium (make test installs it); Playwright cannot download its own browser here."""
    found = os.environ.get("MANUAL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(found).is_file():
        pytest.fail("Chromium not found: `make test` installs Debian's chromium package")
    return found


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def server(built_manual: Path) -> Iterator[str]:
    """The built site on 127.0.0.1 at a free port, in a thread, shut down after the module."""
    handler = functools.partial(_Quiet, directory=str(built_manual / "site"))
    httpd = http.server.ThreadingHTTPServer((HOST, 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://{HOST}:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def visit(browser: object) -> Iterator[object]:
    """A fresh page whose every request is recorded; a request to any host but 127.0.0.1 is aborted."""
    context = browser.new_context()  # type: ignore[attr-defined]
    record: dict[str, list[str]] = {"outside": [], "errors": []}

    def route(route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about") or parts.hostname == HOST:
            route.continue_()  # type: ignore[attr-defined]
        else:
            record["outside"].append(url)
            route.abort()  # type: ignore[attr-defined]

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda message: message.type == "error" and record["errors"].append(message.text))
    page.on("pageerror", lambda error: record["errors"].append(str(error)))
    page.record = record  # type: ignore[attr-defined]
    yield page
    context.close()


def _pages(site: Path) -> list[str]:
    return sorted(p.name for p in site.glob("*.html") if p.name != "404.html")


def test_every_page_loads_cleanly(built_manual, server, visit):
    site = built_manual / "site"
    names = _pages(site)
    assert "index.html" in names and "figures.html" in names and "06-metrics.html" in names
    figures_seen = 0
    for name in names:
        visit.goto(urljoin(server, name), wait_until="load")
        _scroll_through_the_shown_images(visit)
        images = visit.evaluate("""() => Array.from(document.images).map(img => ({
            src: img.currentSrc || img.src, complete: img.complete, width: img.naturalWidth,
            shown: img.getClientRects().length > 0, lazy: img.loading === 'lazy',
            figure: !!img.closest('figure.manual-figure') && img.getClientRects().length > 0}))""")
        broken = [image["src"] for image in images if image["shown"] and (not image["complete"] or image["width"] == 0)]
        assert broken == [], f"{name}: images that did not load"
        # The dark scheme's figures, lazy and not shown, are never fetched on a light page (nor the light ones on
        # a dark page: test_a_reader_fetches_only_the_figures_of_their_scheme_and_width).
        assert all(image["lazy"] and image["width"] == 0 for image in images if not image["shown"]), name
        figures_seen += sum(image["figure"] for image in images)  # the one shown of each figure
        footer = visit.locator("footer .md-copyright").inner_text()
        assert STAMP in footer, name
        assert "synthesized example runs" in footer, name
    assert visit.record["errors"] == []
    assert visit.record["outside"] == []
    as_text = sum(shown_as_text(block) for block in manual_blocks())  # 7.1: its rows as a table of text
    assert figures_seen == len(manual_blocks()) - as_text
    assert len(manual_blocks()) == len(list((site / "figures").glob("*.phone.dark.svg")))  # drawn all the same


def test_the_copied_notice_of_a_copy_button_is_announced(server, visit):
    """The notice a copy button shows is a live region (role=status) that a screen reader reads out, and says
    the command was copied."""
    visit.context.grant_permissions(["clipboard-read", "clipboard-write"])
    visit.goto(urljoin(server, "01-step.html"), wait_until="load")
    notice = visit.locator(".md-dialog")
    assert (notice.get_attribute("role"), notice.get_attribute("aria-atomic")) == ("status", "true")
    button = visit.locator("button.md-code__button[data-md-type=copy]").first
    button.scroll_into_view_if_needed()
    button.click()
    visit.locator(".md-dialog.md-dialog--active").wait_for(state="visible", timeout=5_000)
    assert notice.inner_text().strip() == "Copied to clipboard"
    assert visit.evaluate("() => navigator.clipboard.readText()").startswith(
        visit.locator("pre code").first.inner_text().strip().splitlines()[0])
    assert visit.record["errors"] == []


def test_index_links_land_on_their_figures(server, visit):
    visit.goto(urljoin(server, "figures.html"), wait_until="load")
    links = visit.evaluate("""() => Array.from(document.querySelectorAll('table a[href*="#fig-"]'))
        .map(a => ({text: a.textContent.trim(), href: a.href}))""")
    assert len(links) == len(manual_blocks())
    for link in links:
        visit.goto(link["href"], wait_until="load")
        target = urlsplit(link["href"]).fragment
        found = visit.evaluate("""id => { const e = document.getElementById(id);
            return e && {tag: e.tagName, caption: (e.querySelector('figcaption') || {}).textContent || ''}; }""",
                               target)
        assert found is not None, link["href"]
        assert found["tag"] == "FIGURE", link["href"]
        assert found["caption"].startswith(f"Figure {link['text']}."), link["href"]
    assert visit.record["errors"] == [] and visit.record["outside"] == []


def test_a_figure_zooms_and_closes(server, visit):
    visit.goto(urljoin(server, "01-step.html"), wait_until="load")
    visit.locator("figure.manual-figure a.manual-zoom").first.click()
    overlay = visit.locator("dialog.manual-zoom-dialog img")
    overlay.wait_for(state="visible")
    visit.wait_for_function("() => document.querySelector('dialog.manual-zoom-dialog img').naturalWidth > 0")
    assert visit.url.endswith("01-step.html")  # the page stayed; the figure opened over it
    visit.get_by_role("button", name="Close Figure 1.1").click()
    assert visit.locator("dialog.manual-zoom-dialog").count() == 0


WIDTHS = {"desktop": (1440, 900), "phone": (390, 844)}


@pytest.fixture(params=sorted(WIDTHS))
def sized(request, browser):
    """A fresh page at a desktop's or a phone's width (no outside request, as in `visit`)."""
    width, height = WIDTHS[request.param]
    context = browser.new_context(viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    context.route("**/*", lambda route: route.continue_() if urlsplit(route.request.url).hostname == HOST
                  else route.abort())
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def test_the_zoom_by_keyboard_fits_the_screen_and_gives_focus_back(server, sized):
    sized.goto(urljoin(server, "02-memory.html"), wait_until="load")
    count = sized.locator("a.manual-zoom").count()
    assert count >= 2
    for index in range(count):
        link = sized.locator("a.manual-zoom").nth(index)
        link.focus()
        sized.keyboard.press("Enter")
        dialog = sized.get_by_role("dialog", name=re.compile(r"^Figure \d"))
        dialog.wait_for(state="visible")
        sized.wait_for_function("() => document.querySelector('dialog.manual-zoom-dialog img').naturalWidth > 0")
        state = sized.evaluate("""() => { const d = document.querySelector('dialog.manual-zoom-dialog');
            const img = d.querySelector('img').getBoundingClientRect(), box = d.getBoundingClientRect();
            const label = document.getElementById(d.getAttribute('aria-labelledby'));
            return {open: d.open, focused: document.activeElement.textContent, label: label.textContent,
                    img: [img.width, img.height], box: [box.width, box.height], view: [innerWidth, innerHeight],
                    natural: d.querySelector('img').naturalWidth}; }""")
        number = f"{2}.{index + 1}"
        assert state["open"] and state["focused"] == "Close", number
        assert state["label"].startswith(f"Figure {number}. "), state["label"]
        assert state["box"] == state["view"], number  # the dialog is the whole screen
        width, height = state["img"]
        # Fitted to the screen: filling its width or its height, and larger than the SVG's own size.
        assert width >= state["view"][0] - 40 or height >= state["view"][1] * 0.6, state
        assert width > state["natural"], state
        # Wider than a phone's screen, the frame scrolls sideways, and says so; on a desktop it fits, silently.
        hint = sized.evaluate("""() => { const d = document.querySelector('dialog.manual-zoom-dialog');
            const frame = d.querySelector('.manual-zoom-dialog__frame');
            const hint = d.querySelector('.manual-zoom-dialog__hint');
            return {scrolls: frame.scrollWidth > frame.clientWidth + 1, shown: !hint.hidden,
                    text: hint.textContent}; }""")
        assert hint == {"scrolls": width > state["view"][0], "shown": width > state["view"][0],
                        "text": "Scroll sideways to see the whole figure."}, number
        sized.keyboard.press("Escape")
        assert sized.locator("dialog.manual-zoom-dialog").count() == 0
        assert sized.evaluate("i => document.activeElement === document.querySelectorAll('a.manual-zoom')[i]",
                              index)
    assert sized.errors == []


def test_the_claim_health_table_fits_a_desktop_and_says_it_scrolls_on_a_phone(server, sized):
    """At 1440 px all nine columns are in view, without a sideways scroll; on a phone, where they cannot be, the
    line above the table says it scrolls sideways, and it does."""
    sized.goto(urljoin(server, "claim-health.html"), wait_until="load")
    state = sized.evaluate("""() => { const table = document.querySelector('.manual-claim-health table');
        const frame = table.closest('.md-typeset__scrollwrap') || table.parentElement;
        const hint = document.querySelector('.manual-claim-health .manual-scroll-hint');
        return {columns: table.querySelectorAll('thead th').length, scrolls: frame.scrollWidth > frame.clientWidth + 1,
                hint: hint.getClientRects().length > 0 ? hint.textContent : null,
                phone: window.innerWidth < 720}; }""")
    assert state["columns"] == 9
    if state["phone"]:
        assert state == {"columns": 9, "scrolls": True, "hint": "Scroll the table sideways to see all its columns.",
                         "phone": True}
    else:
        assert state == {"columns": 9, "scrolls": False, "hint": None, "phone": False}
    assert sized.errors == []


def test_search_finds_a_metric_by_any_part(server, sized):
    sized.goto(urljoin(server, "index.html"), wait_until="load")
    for query, page in (("grad_norm", "06-metrics.html"), ("sleep_time", "06-metrics.html"),
                        ("ppo_kl", "06-metrics.html"), ("OOM", "07-troubleshooting.html")):
        opener = sized.locator("label.md-header__button[for='__search']")  # shown on the phone only
        if opener.is_visible():
            opener.click()
        search = sized.locator("input.md-search__input")
        search.wait_for(state="visible")
        search.fill("")
        search.focus()  # not click(): on the phone the header's drawer button overlaps it mid-transition
        sized.keyboard.type(query, delay=20)
        sized.locator(f".md-search-result__item a[href*='{page}']").first.wait_for(state="attached",
                                                                                   timeout=15_000)
        sized.keyboard.press("Escape")
        # Escape closes the search with a transition: wait until it is closed, or the next query's
        # opener click lands on a half-closed overlay.
        sized.wait_for_function("() => !document.getElementById('__search').checked")
    assert sized.errors == []


def test_no_metrics_cell_breaks_inside_a_word(server, sized):
    """Every line of a metric name's cell ends at a `/` or `_` (or the name's end), never mid-word."""
    sized.goto(urljoin(server, "06-metrics.html"), wait_until="load")
    lines = sized.evaluate("""() => Array.from(document.querySelectorAll('table td:first-child code')).map(code => {
        const range = document.createRange(), text = code.textContent, rows = [];
        let top = null, line = '';
        const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          for (let i = 0; i < node.length; i++) {
            range.setStart(node, i); range.setEnd(node, i + 1);
            const y = Math.round(range.getClientRects()[0].top);
            if (top !== null && y > top + 2) { rows.push(line); line = ''; }
            top = y; line += node.data[i];
          }
        }
        rows.push(line);
        return {text, rows};
    })""")
    assert len(lines) >= 15
    for cell in lines:
        assert "".join(cell["rows"]) == cell["text"]
        for row in cell["rows"][:-1]:
            assert row.endswith(("/", "_")), cell
    size = sized.evaluate("""() => [getComputedStyle(document.querySelector('table td')).fontSize,
                                    getComputedStyle(document.querySelector('.md-typeset p')).fontSize]""")
    assert size[0] == size[1]  # the table's text at body size


def _scroll_through_the_shown_images(page: object) -> list[str]:
    """Each image the page shows scrolled into view and waited for (every figure loads lazily, when shown),
    then the page scrolled back to its top; the images' addresses, as loaded."""
    return page.evaluate("""async () => {""" + WAIT_FOR_LOAD + """
        const loaded = [];
        for (const img of document.images) {
            if (!img.getClientRects().length) continue;  // not shown: the other scheme's
            img.scrollIntoView();
            await waitForLoad(img);
            loaded.push(img.currentSrc);
        }
        window.scrollTo(0, 0);
        return loaded;
    }""")


@pytest.mark.parametrize("scheme", ["light", "dark", "dark, chosen with the toggle"])
@pytest.mark.parametrize("width", [1440, 390])
def test_a_reader_fetches_only_the_figures_of_their_scheme_and_width(server, browser, width, scheme):
    """Every figure is served in two schemes and two layouts; a reader's browser fetches one of the four, the
    one it shows, and each image has its room before it loads (its width and height given). A dark reader's
    scheme is their system's on a first visit (set as soon as the header is, overrides/main.html), or the one
    they chose with the toggle on an earlier page (Material remembers it)."""
    system = "dark" if scheme == "dark" else "light"
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=system)  # type: ignore[attr-defined]
    if scheme == "dark, chosen with the toggle":
        earlier = context.new_page()
        earlier.goto(urljoin(server, "index.html"), wait_until="load")
        earlier.locator("label.md-header__button[for^='__palette']:visible").first.click()
        assert earlier.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == "slate"
        earlier.close()
    page = context.new_page()
    # Material's script comes last and late on a slow connection: the page is laid out, and the figures in view
    # asked for, before it runs.
    page.route("**/assets/javascripts/bundle.*.js", lambda route: (time.sleep(1.0), route.continue_()))
    fetched: list[str] = []
    page.on("request", lambda request: "/figures/" in request.url and request.url.endswith(".svg")
            and fetched.append(request.url))
    page.goto(urljoin(server, "08-on-policy.html"), wait_until="load")
    before = page.evaluate("""() => Array.from(document.querySelectorAll('figure.manual-figure img'))
        .filter(img => img.getClientRects().length).map(img => img.getBoundingClientRect().height)""")
    shown = [url for url in _scroll_through_the_shown_images(page) if "/figures/" in url]
    context.close()
    ending = ("" if width == 1440 else ".phone") + ("" if scheme == "light" else ".dark") + ".svg"
    names = [url.rpartition("/")[2] for url in shown]
    assert names and all(name.endswith(ending) and name.count(".") == ending.count(".") for name in names)
    assert sorted(set(fetched)) == sorted(set(shown))
    assert len(before) == len(shown) and min(before) > 100  # the room of each, kept before it loaded


def test_scheme_toggle_and_search_work_offline(server, visit):
    visit.goto(urljoin(server, "index.html"), wait_until="load")
    before = visit.evaluate("() => document.body.getAttribute('data-md-color-scheme')")
    visit.locator("label.md-header__button[for^='__palette']:visible").first.click()
    after = visit.evaluate("() => document.body.getAttribute('data-md-color-scheme')")
    assert {before, after} == {"default", "slate"}
    search = visit.locator("input.md-search__input")  # in the header at desktop width
    search.click()
    visit.keyboard.type("heat guard", delay=30)  # key events, as a reader types
    visit.locator(".md-search-result__item").first.wait_for(state="visible", timeout=15_000)
    assert visit.record["errors"] == [] and visit.record["outside"] == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1440, 390, 360])
def test_figure_text_is_at_least_12_px_at_every_width_in_both_schemes(built_manual, server, browser, width, scheme):
    """Figure text as Chromium draws it at a 1440 px, a 390 px and a 360 px window, in the scheme a reader's system asks
    for: each SVG text's font size times the width the page shows the image at, over the SVG's viewBox width
    (the SVG is an <img>, so its text is scaled with it); each page shows the variant of its width and scheme."""
    from build_tools.drawing import legibility, variants

    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)  # type: ignore[attr-defined]
    page = context.new_page()
    measured = []
    for name in _pages(built_manual / "site"):
        if not name[:2].isdigit():
            continue
        page.goto(urljoin(server, name), wait_until="load")
        measured += page.evaluate("""async () => {""" + WAIT_FOR_LOAD + """
            const out = [];
            for (const img of document.querySelectorAll('figure.manual-figure img')) {
                if (!img.getClientRects().length) continue;  // the other scheme's
                img.loading = 'eager';  // measured here, not how it loads (the fetch test checks that)
                img.scrollIntoView();
                await waitForLoad(img);
                const text = await (await fetch(img.currentSrc)).text();
                const svg = new DOMParser().parseFromString(text, 'image/svg+xml');
                const viewBox = svg.documentElement.getAttribute('viewBox').split(/[ ,]+/).map(Number);
                const column = img.closest('.md-content__inner').getBoundingClientRect().width;
                const shown = img.getBoundingClientRect().width;
                for (const text of svg.querySelectorAll('text')) {
                    const size = parseFloat((text.getAttribute('style') || '').match(/font-size:\\s*([\\d.]+)px/)[1]);
                    out.push({figure: img.currentSrc.split('/').pop(), text: text.textContent, column: column,
                              px: size * shown / viewBox[2]});
                }
            }
            return out;
        }""")
    context.close()
    shown = {m["figure"] for m in measured}
    screen = variants.DESKTOP if width == 1440 else variants.PHONE
    ending = variants.suffix(screen, scheme)
    assert len(shown) == len([block for block in manual_blocks() if not shown_as_text(block)])
    assert {name for name in shown if not name.endswith(ending) or name.count(".") != ending.count(".")} == set()
    assert min(m["column"] for m in measured) >= screen.content_px  # the width the build assumes
    small = [(m["figure"], m["text"], round(m["px"], 2)) for m in measured if m["px"] < legibility.MIN_TEXT_PX]
    assert small == []


def test_the_scheme_toggle_swaps_every_figure_and_its_zoom(server, visit):
    """The reader's own choice of scheme (Material's toggle, not the system's) shows the dark figures."""
    visit.goto(urljoin(server, "08-on-policy.html"), wait_until="load")

    def shown() -> list[str]:
        return visit.evaluate("""async () => {""" + WAIT_FOR_LOAD + """
            const out = [];
            for (const img of document.querySelectorAll('figure.manual-figure img')) {
                if (!img.getClientRects().length) continue;
                img.scrollIntoView();  // a lazy image (the dark scheme's) loads when shown
                await waitForLoad(img);
                out.push(img.currentSrc.split('/').pop());
            }
            window.scrollTo(0, 0);
            return out;
        }""")

    light = shown()
    assert light and all(name.endswith(".svg") and ".dark." not in name for name in light)
    visit.locator("label.md-header__button[for^='__palette']:visible").first.click()
    assert visit.evaluate("() => document.body.getAttribute('data-md-color-scheme')") == "slate"
    assert shown() == [name.replace(".svg", ".dark.svg") for name in light]
    visit.locator("figure.manual-figure a.manual-zoom").first.click()
    visit.locator("dialog.manual-zoom-dialog img").wait_for(state="visible")
    assert visit.evaluate("() => document.querySelector('dialog.manual-zoom-dialog img').src").endswith(
        light[0].replace(".svg", ".dark.svg"))
    assert visit.record["errors"] == [] and visit.record["outside"] == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_accessibility_violation(built_manual, server, browser, scheme):
    """axe-core (WCAG 2.1 A and AA rules, and axe's best practices: the search dialog's name, one name per code
    block's copy bar) on every page, in both colour schemes, with a figure zoomed."""
    from axe_playwright_python.sync_playwright import Axe

    context = browser.new_context(color_scheme=scheme)  # type: ignore[attr-defined]
    page = context.new_page()
    axe = Axe()
    options = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}}
    found = []
    for name in _pages(built_manual / "site"):
        page.goto(urljoin(server, name), wait_until="load")
        assert page.evaluate("() => document.body.dataset.mdColorScheme") == (
            "slate" if scheme == "dark" else "default")
        if name == "01-step.html":
            page.locator("a.manual-zoom").first.click()
            page.locator("dialog.manual-zoom-dialog img").wait_for(state="visible")
        for violation in axe.run(page, options=options).response["violations"]:
            # Every serious or critical violation, and any best-practice one at all (landmark-unique is moderate).
            if violation["impact"] in ("serious", "critical") or "best-practice" in violation["tags"]:
                found += [f"{name}: {violation['id']} {node['target']}" for node in violation["nodes"]]
    context.close()
    assert found == []
