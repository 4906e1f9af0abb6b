"""Every string from data or configuration reaches the site escaped: an HTML payload and a Markdown payload in
every free-text field of every input are shown as text, never run, never turned into markup, and leave no
stray backslash; an input the payload makes invalid stops the build with a one-line error, not a traceback."""

from __future__ import annotations

import json
import random
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import markdown
import pytest
import yaml

from build_tools.cli import main
from build_tools.core._escape import csv_cell, html_text, md_code, md_text, xml_text
from build_tools.core._exceptions import EXIT_BAD_INPUT
from tests.conftest import SAMPLES, copy_project, manual_blocks

# No digit (a claim binds every number it holds), no `$` (matplotlib would read mathtext in a drawn table).
HTML_PAYLOAD = ('<img src=x onerror=alert(document.domain)><script>alert(document.cookie)</script>'
                '<a href="javascript:alert(document.domain)">html-link</a>" onmouseover="alert(document.domain)')
MD_PAYLOAD = ('[md-link](javascript:alert(document.domain)) ![md-img](javascript:x) *md-em* _md-u_ **md-strong** '
              '`md-code` | md-pipe # md-head {: onclick="alert(document.domain)" } <https://evil.example/> '
              r'C:\temp\*x* &amp; &lt;b&gt;')
PAYLOADS = (HTML_PAYLOAD, MD_PAYLOAD)
BOTH = f"{HTML_PAYLOAD} {MD_PAYLOAD}"
# Texts the payloads hold that must never become the text of an element of their own.
INNER = {"html-link", "md-link", "md-img", "md-em", "md-u", "md-strong", "md-code", "md-head"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "xlink:href", "data", "poster"}
EXTENSIONS = ["admonition", "attr_list", "md_in_html", "tables", "toc"]  # as mkdocs.yml


# --- what a page shows, and what in it is live --------------------------------------------------------------


class _Page(HTMLParser):
    """The text a reader sees (outside script and style) and every payload that became markup."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.live: list[str] = []
        self.alts: list[str] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.live.append(f"<{tag} {name}={value!r}>")
            if name in URL_ATTRIBUTES and (re.sub(r"\s", "", value).lower().startswith("javascript:")
                                           or "evil.example" in value):
                self.live.append(f"<{tag} {name}={value!r}>")
            if name == "alt":
                self.alts.append(value)
                if value in INNER:
                    self.live.append(f"<{tag} alt={value!r}>")
        if tag not in {"br", "img", "meta", "link", "input", "hr", "source", "wbr"}:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        current = self.stack[-1] if self.stack else ""
        if current in {"script", "style"}:
            if "alert(" in data:
                self.live.append(f"<{current}> {data.strip()[:60]!r}")
            return
        if data.strip() in INNER:
            self.live.append(f"<{current}>{data.strip()}</{current}>")
        self.text.append(data)


def read_page(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def shown(page: _Page) -> str:
    return " ".join("".join(page.text).split())


# --- the escaping functions, through Python-Markdown with the site's extensions ------------------------------


def _render(source: str) -> str:
    return markdown.markdown(source, extensions=EXTENSIONS)


CONTEXTS = {
    "paragraph": "{}",
    "heading": "## {}",
    "table cell": "| a | b |\n|---|---|\n| {} | x |",
    "link text": "- [{}](page.md)",
    "figure caption": '<figure markdown="1">\n\n<figcaption markdown="span"><strong>F</strong> {}</figcaption>\n\n'
                      "</figure>",
    "after a list item": "- x\n\n{}",
}
TRICKY = [*PAYLOADS, "- a list?", "+ or this", "1. numbered", "= underline", "---", "> quote", "#", "[ref]: /x",
          "{#anchor .class}", "snake_case_name", "0.53 to 0.87", "a \\| b", "\\", "&copy; &#60;"]


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("text", TRICKY)
def test_md_text_shows_the_text_as_written(context: str, text: str) -> None:
    page = read_page(_render(CONTEXTS[context].format(md_text(text))))
    assert page.live == []
    assert " ".join(text.split()) in shown(page)


@pytest.mark.parametrize("text", TRICKY)
def test_md_text_in_alt_text_is_the_alt_text(text: str) -> None:
    page = read_page(_render(f"[![{md_text(text)}](a.svg)](a.svg){{ .zoom }}"))
    assert page.live == [] and page.alts == [" ".join(text.split())]


@pytest.mark.parametrize("text", [*PAYLOADS, "`", "a ``b`` c", "x | y"])
def test_md_code_is_one_code_span_in_a_table(text: str) -> None:
    html = _render(f"| a | b |\n|---|---|\n| {md_code(text)} | x |")
    assert html.count("<code>") == 1 and html.count("<td>") == 2
    assert read_page(html).live == [] and text in shown(read_page(html))


# Random strings of the characters Markdown and HTML give a meaning to, from fixed seeds (the same every run).
_PIECES = [*"\\`*_{}[]()#+-.!|<>&\"'=:~^;/ \tab1", "&amp;", "&#60;", "javascript:", "http://x.y", "<b>", "1. ",
           "- ", "{: .c}", "]:", "\n"]


def _random_texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    texts = ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 14))) for _ in range(count)]
    return [text for text in texts if text.strip()]


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_md_text_shows_random_text_as_written(context: str) -> None:
    for text in _random_texts(1, 400):
        page = read_page(_render(CONTEXTS[context].format(md_text(text))))
        assert page.live == [] and " ".join(text.split()) in shown(page), repr(text)


def test_md_text_and_md_code_keep_random_text_in_alt_text_and_code() -> None:
    for text in _random_texts(2, 400):
        want = " ".join(text.split())
        page = read_page(_render(f"[![{md_text(text)}](a.svg)](a.svg){{ .zoom }}"))
        assert page.live == [] and page.alts == [want], repr(text)
        html = _render(f"| a | b |\n|---|---|\n| {md_code(text)} | x |")
        assert html.count("<td>") == 2 and want in shown(read_page(html)), repr(text)


def test_escaping_is_done_once() -> None:
    assert md_text(md_text(MD_PAYLOAD)) == md_text(MD_PAYLOAD)
    assert md_text("Qwen3-0.6B on GSM8K") == "Qwen3-0.6B on GSM8K"  # plain text is left as written
    assert html_text('<a title="x">') == "&lt;a title=&quot;x&quot;&gt;"


# --- every input of a whole build --------------------------------------------------------------------------


def _yaml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a YAML double-quoted scalar


def _poison_run(root: Path) -> None:
    """A copy of a baseline run, every free-text field of its run.yaml carrying both payloads."""
    source, target = root / "runs" / "baseline-seed1", root / "runs" / "payload-run"
    shutil.copytree(source, target)
    config = yaml.safe_load((target / "run.yaml").read_text(encoding="utf-8"))
    config["run_id"] = "payload-run"
    config["title"] = BOTH
    config["dataset"] = BOTH
    config["tags"] = [*config["tags"], HTML_PAYLOAD, MD_PAYLOAD]
    config["hardware"]["machine"] = BOTH
    config["hardware"]["chip"] = BOTH
    config["model"]["size"] = BOTH
    config["miles"]["image"] = BOTH
    config["miles"]["branch"] = BOTH
    # Not a second run before the heat guard: the Metrics page's medians read exactly one.
    config["lab"]["heat_guard"] = True
    (target / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    meta = target / "dashboard" / "meta.json"
    meta.write_text(meta.read_text(encoding="utf-8").replace('"baseline-seed1"', '"payload-run"'), encoding="utf-8")


def _poison_metrics(root: Path) -> None:
    braced = BOTH.replace("{", "{{").replace("}", "}}")  # wording and notes are filled: a brace is written twice
    path = root / "docs" / "data" / "metrics.yml"
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    first = spec["tables"][0]
    first["title"] = f"Rollout {BOTH}"
    first["column"] = f"Our range {BOTH}"
    first["rows"][0]["meaning"] = BOTH
    first["rows"][0]["wording"] = "{low} to {high} " + braced
    time = next(table for table in spec["tables"] if table.get("after"))
    time["after"] = f"{braced} [{HTML_PAYLOAD}]({{chapter_5}}) {braced}"
    plain = spec["tables"][-1]
    plain["after"] = braced
    plain["rows"].append({"metric": BOTH, "meaning": BOTH})
    plain["rows"].append({"metric": BOTH, "meaning": BOTH, "code": False})
    path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _poison_edition(root: Path) -> None:
    path = root / "edition.yml"
    text = path.read_text(encoding="utf-8")
    text = text.replace("image: radixark/miles:latest", f"image: {_yaml_string(BOTH)}")
    path.write_text(text.replace("branch: main", f"branch: {_yaml_string(BOTH)}"), encoding="utf-8")


def _poison_chapter(root: Path) -> None:
    """The first figure block's claim (the payloads after the claimed sentence), its alt text, a check's label."""
    path = root / "docs" / "01-step.md"
    text = path.read_text(encoding="utf-8")
    claim = re.search(r"^claim: (.*)$", text, flags=re.M)
    alt = re.search(r"^alt: (.*)$", text, flags=re.M)
    assert claim is not None and alt is not None and claim.start() < alt.start()
    text = (text[:claim.start()] + f"claim: {_yaml_string(claim.group(1) + ' ' + BOTH)}" + text[claim.end():alt.start()]
            + f"alt: {_yaml_string(BOTH)}" + text[alt.end():])
    # A check's label is in its message, which the "Checked against the runs" note shows.
    text = text.replace("  - check: gpu_count\n", f"  - check: gpu_count\n    label: {_yaml_string(BOTH)}\n", 1)
    path.write_text(text, encoding="utf-8")


def _poison_troubleshooting(root: Path) -> None:
    path = root / "docs" / "data" / "troubleshooting.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for row in data["symptoms"]:
        for key in ("symptom", "check", "fix"):
            row[key] = f"{row[key]} {BOTH}"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The manual built from a copy of the project with the payloads in every input."""
    root = copy_project(tmp_path_factory.mktemp("poisoned"))
    for poison in (_poison_run, _poison_metrics, _poison_edition, _poison_chapter, _poison_troubleshooting):
        poison(root)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        assert main(["build"]) == 0
    return root


def _pages(root: Path) -> dict[str, str]:
    site = root / "site"
    return {path.relative_to(site).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(site.rglob("*.html"))}


def test_no_payload_is_live_in_any_page(poisoned: Path) -> None:
    pages = _pages(poisoned)
    assert len(pages) >= 10
    live = {name: read_page(html).live for name, html in pages.items()}
    assert {name: found for name, found in live.items() if found} == {}


# Where each input is shown: page -> how many times both payloads appear, as text, at least.
SHOWN_ON = {
    "index.html": 3,  # the run's title in the run table, its machine in the provenance note, the stamp
    "06-metrics.html": 12,  # intro facts, a table's title, column, meaning and cell, notes and metric names
    "01-step.html": 3,  # the claim in the caption, a check's label in the note of its checks, the stamp
    "figures.html": 2,  # the claim in the Index of figures, the stamp
    "07-troubleshooting.html": 15,  # three cells of five rows
}


@pytest.mark.parametrize("name", sorted(SHOWN_ON))
def test_the_payloads_are_shown_as_text(poisoned: Path, name: str) -> None:
    page = read_page((poisoned / "site" / name).read_text(encoding="utf-8"))
    text = shown(page)
    for payload in PAYLOADS:
        assert text.count(" ".join(payload.split())) >= SHOWN_ON[name], payload
    rest = text
    for payload in PAYLOADS:
        rest = rest.replace(" ".join(payload.split()), "")
    rest = rest.replace(" \\ --", " --")  # a launch command's line continuations (pages/commands.py) are shell
    assert "\\" not in rest  # the payloads' own backslashes were shown, and no escape is left visible


def test_no_payload_is_live_in_a_figure(poisoned: Path) -> None:
    """A figure's SVG opens on its own (the zoom link's target without JavaScript): text drawn from the
    troubleshooting rows is text there too."""
    figures = sorted((poisoned / "site" / "figures").glob("*.svg"))
    assert len(figures) == 4 * len(manual_blocks(poisoned))  # each figure's phone and dark variants too
    for svg in figures:
        text = svg.read_text(encoding="utf-8")
        assert "<script" not in text.lower() and read_page(text).live == [], svg.name


def test_the_alt_text_is_the_payload(poisoned: Path) -> None:
    page = read_page((poisoned / "site" / "01-step.html").read_text(encoding="utf-8"))
    assert BOTH in page.alts


def test_the_stamp_is_escaped_in_every_page(poisoned: Path) -> None:
    for name, html in _pages(poisoned).items():
        if name.startswith(("404", "search")):
            continue
        assert shown(read_page(html)).count(" ".join(BOTH.split())) >= 1, name


def test_no_payload_is_live_in_the_search_index(poisoned: Path) -> None:
    index = json.loads((poisoned / "site" / "search" / "search_index.json").read_text(encoding="utf-8"))
    found, seen = [], 0
    for doc in index["docs"]:
        for field in ("title", "text"):
            page = read_page(str(doc.get(field, "")))
            found += [f"{doc['location']} {field}: {live}" for live in page.live]
            seen += shown(page).count(" ".join(MD_PAYLOAD.split()))
    assert found == []
    assert seen >= 10  # the payloads are searchable text


# --- payloads that make an input invalid ---------------------------------------------------------------------


def _edit_run(root: Path, change: dict[str, str]) -> None:
    path = root / "runs" / "baseline-seed1" / "run.yaml"
    text = path.read_text(encoding="utf-8")
    for old, new in change.items():
        assert old in text
        text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")


INVALID = {
    "run id": lambda root: _edit_run(root, {"run_id: baseline-seed1": f"run_id: {_yaml_string(HTML_PAYLOAD)}"}),
    "Miles commit": lambda root: _edit_run(root, {"commit: 08752a1": f"commit: {_yaml_string(MD_PAYLOAD)}"}),
    "a flag": lambda root: _edit_run(root, {"train_backend: fsdp": f"train_backend: {_yaml_string(MD_PAYLOAD)}"}),
    "model name": lambda root: _edit_run(root, {"name: Qwen3-0.6B": f"name: {_yaml_string(HTML_PAYLOAD)}"}),
    "metric name": lambda root: (root / "docs" / "data" / "metrics.yml").write_text(
        (root / "docs" / "data" / "metrics.yml").read_text(encoding="utf-8").replace(
            "metric: rollout/raw_reward", f"metric: {_yaml_string(HTML_PAYLOAD)}", 1), encoding="utf-8"),
    "figure id": lambda root: (root / "docs" / "01-step.md").write_text(
        re.sub(r"^id: fig-[\w-]+$", f"id: {_yaml_string(HTML_PAYLOAD)}",
               (root / "docs" / "01-step.md").read_text(encoding="utf-8"), count=1, flags=re.M), encoding="utf-8"),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_a_payload_that_makes_an_input_invalid_is_one_clean_error(name: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_project(tmp_path / "manual")
    INVALID[name](root)
    monkeypatch.chdir(root)
    # `make check` stops before the pages; the Metrics page spec is read when the pages are rendered.
    assert main(["build" if name == "metric name" else "check"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert re.search(r"^ERROR ", err, flags=re.M), err
    where = {"metric name": "docs/data/metrics.yml", "figure id": "docs/01-step.md:"}
    assert where.get(name, "runs/baseline-seed1/run.yaml") in err


def test_a_spec_text_fills_only_plain_names(example_summaries, tmp_path: Path) -> None:
    """A brace in the Metrics spec's wording is a placeholder or an error naming the row, never a traceback, and
    never a way into an object (`{low.__class__}`) or a format spec (`{low:>999999999}`)."""
    from build_tools.core._exceptions import MetricsSpecError
    from build_tools.pages._common import environment
    from build_tools.pages.metrics import render_metrics
    from build_tools.pages.metrics_table import load_spec

    spec = tmp_path / "metrics.yml"
    source = (Path(__file__).resolve().parents[2] / "docs" / "data" / "metrics.yml").read_text(encoding="utf-8")
    wordings = ['"{low} to {high} {: onclick }"', '"{low.__class__}"', '"{low:>999999999}"', '"a { b"']
    for wording in wordings:
        source = source.replace('wording: "{low} to {high}"\n', f"wording: {wording}\n", 1)
    spec.write_text(source, encoding="utf-8")
    env = environment(Path(__file__).resolve().parents[2] / "templates")
    with pytest.raises(MetricsSpecError) as caught:
        render_metrics(env, load_spec(spec), "docs/data/metrics.yml", example_summaries, {5: "05-heat.md"})
    lines = str(caught.value).splitlines()
    assert lines[0] == "4 problems in the Metrics page spec:"
    assert lines[1].endswith("rollout/response_lengths: the text uses {: onclick }, which is not a plain {name} "
                             "(write {{ and }} for a brace)")
    assert "the text uses {low.__class__}" in lines[2] and "the text uses {low:>999999999}" in lines[3]
    assert "expected '}' before end of string (write {{ and }} for a brace)" in lines[4]


def test_the_palette_legend_and_the_nav_titles_are_escaped(tmp_path: Path) -> None:
    from build_tools.core._layout import SITE_SETTINGS
    from build_tools.core._types import Stamp
    from build_tools.drawing import palette
    from build_tools.pages.front_matter import legend_markup
    from build_tools.pages.nav import Page, write_site_settings
    from build_tools.pages.wording import provenance

    legend = legend_markup(palette.load_palette().roles, [BOTH] * 7)
    for line in legend.splitlines():
        page = read_page(_render(line))
        assert page.live == [] and " ".join(BOTH.split()) in shown(page)
    stamp = Stamp("2026.10", "2026-10-15", BOTH, BOTH, "08752a1", "2026-10-15")
    write_site_settings(tmp_path, stamp, provenance({}), [Page("01-x.md", HTML_PAYLOAD)])
    settings = yaml.safe_load((tmp_path / SITE_SETTINGS).read_text(encoding="utf-8"))
    (title,) = settings["nav"][0]  # Material prints a nav title into the HTML as it is
    assert read_page(title).live == [] and shown(read_page(title)) == HTML_PAYLOAD


def test_a_warning_that_quotes_the_data_is_printed_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    from build_tools.core._progress import Progress

    Progress().warn("phase '[/yellow][bold]x[/]' opened at 1 never closed; dropped")
    assert capsys.readouterr().err == "WARNING phase '[/yellow][bold]x[/]' opened at 1 never closed; dropped\n"


def test_the_manifest_pages_show_the_payloads_as_text() -> None:
    """manifest.html and changes.html, written at publish time from run.yaml, edition.yml and the pages."""
    from build_tools.editions import _manifest

    def manifest(edition: str, value: str) -> dict:
        return {"edition": edition, "date": "2026-10-15", "project_commit": "abc", "source_date_epoch": 1,
                "miles": {"image": BOTH, "branch": BOTH, "commit": "08752a1", "commit_date": "2026-10-15"},
                "tools": {"mkdocs": "1"}, "figures": {"fig-x": {"svg_sha256": "s", "csv_sha256": "c"}},
                "runs": {"run-a": {"provenance": {"provenance": BOTH, "title": BOTH}, "files": 2, "sha256": value}},
                "claims": {"fig-x": {"number": "1.1", "claim": BOTH, "verdict": "pass", "observed": {"v": BOTH}}},
                "metrics": {f"Rollout › `{MD_PAYLOAD}`": {"Our range": md_text(BOTH)}}}

    old, new = manifest("2026.10", "a"), manifest("2026.11", "b")
    new["claims"]["fig-x"]["observed"] = {"v": HTML_PAYLOAD}
    new["metrics"] = {f"Rollout › `{MD_PAYLOAD}`": {"Our range": md_text(HTML_PAYLOAD)}}
    for title, text in ((f"Edition {BOTH}", _manifest.manifest_markdown(new)),
                        ("changes", _manifest.changes_markdown(old, new))):
        page = read_page(_manifest.html_page(title, text))
        assert page.live == [], page.live
        assert HTML_PAYLOAD in shown(page)
    assert "Rollout › " + MD_PAYLOAD in shown(read_page(_manifest.html_page("m", _manifest.manifest_markdown(new))))


# --- XML (build/claims.junit.xml) ------------------------------------------------------------------------------

# Every class of code point XML 1.0 cannot hold (its Char production), as a string may carry them.
NOT_XML = "\x00\x01\x08\x0b\x0c\x0e\x1b\x1f\ud800\udfff\ufffe\uffff"


def test_xml_text_writes_every_code_point_xml_cannot_hold_as_its_escape() -> None:
    assert xml_text("a" + NOT_XML + "\t\n\r\x7f\u0085\ufffd\U0001f600 <&>\"") == (
        "a\\x00\\x01\\x08\\x0b\\x0c\\x0e\\x1b\\x1f\\ud800\\udfff\\ufffe\\uffff\t\n\r\x7f\u0085\ufffd\U0001f600 <&>\"")
    element = ET.Element("case", name=xml_text(NOT_XML))
    element.text = xml_text(NOT_XML)
    parsed = ET.fromstring(ET.tostring(element, encoding="utf-8"))  # expat: a real parser
    assert parsed.text == parsed.get("name") == "\\x00\\x01\\x08\\x0b\\x0c\\x0e\\x1b\\x1f\\ud800\\udfff\\ufffe\\uffff"


def test_a_claim_with_characters_xml_cannot_hold_leaves_the_junit_report_xml(tmp_path: Path) -> None:
    """The claim of tests/samples/escape/claim_not_xml.txt (YAML escapes of every class a chapter can carry: C0
    controls, ESC, U+FFFE, U+FFFF; a lone surrogate YAML refuses) passes, and the report parses."""
    project = copy_project(tmp_path / "project")
    chapter = project / "docs" / "01-step.md"
    line = "claim: Training and rollout take almost all of a step, and the hand-offs take about 2 s."
    hostile = (SAMPLES / "escape" / "claim_not_xml.txt").read_text(encoding="utf-8").strip()
    chapter.write_text(chapter.read_text(encoding="utf-8").replace(line, hostile), encoding="utf-8")
    assert main(["--root", str(project), "check"]) == 0
    root = ET.parse(project / "build" / "claims.junit.xml").getroot()
    claims = [case.findtext("system-out") for case in root.iter("testcase")]
    assert ("Training and rollout take almost all of a step, and the hand-offs take about 2 s. "
            "\\x00\\x01\\x08\\x0b\\x0c\\x0e\\x1b\\x1f\\ufffe\\uffff\x7f") in claims


# --- CSV injection (figures' CSVs, manual show --csv) ----------------------------------------------------------


@pytest.mark.parametrize(("cell", "written"), [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"), ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
    ("@SUM(1+1)*cmd|' /C calc'!A0", "'@SUM(1+1)*cmd|' /C calc'!A0"),
    ("\t=1+1", "'\t=1+1"), ("\r=1+1", "'\r=1+1"), ("--use-fault-tolerance", "'--use-fault-tolerance"), ("=", "'="),
    ("-0.5", "-0.5"), ("+3e-4", "+3e-4"), ("-inf", "-inf"), ("-NaN", "-NaN"), ("-.5", "-.5"), ("-1.", "-1."),
    ("-٣", "'-٣"), ("plain", "plain"), ("a=b", "a=b"), ("", ""), (" =1", " =1"),
    (-0.5, -0.5), (-3, -3), (None, None), (True, True),
])
def test_csv_cell_neutralises_a_formula_and_leaves_numbers(cell: object, written: object) -> None:
    assert csv_cell(cell) == written


def test_a_figure_csv_has_no_formula_and_its_numbers_as_they_were() -> None:
    import csv
    import io

    import pandas as pd

    from build_tools.drawing.draw import _csv_text

    data = pd.DataFrame({"run": ["=cmd|' /C calc'!A0", "@x", "-y", "ok", "-0.5"],
                         "value": [-0.5, 1.0, -3e-05, 2.5, 0.0], "steps": [-1, 2, 3, 4, 5],
                         "=HYPERLINK(\"http://x\")": ["a", "b", "+c", "\tq", "d"]})
    rows = list(csv.reader(io.StringIO(_csv_text(data, {}))))
    assert rows == [
        ["run", "value", "steps", "'=HYPERLINK(\"http://x\")"],
        ["'=cmd|' /C calc'!A0", "-0.5", "-1", "a"],
        ["'@x", "1", "2", "b"],
        ["'-y", "-3e-05", "3", "'+c"],
        ["ok", "2.5", "4", "'\tq"],
        ["-0.5", "0", "5", "d"],
    ]
    assert _csv_text(pd.DataFrame({"a": [1.5, -2.0], "b": ["x", "y"]}), {}) == "a,b\n1.5,x\n-2,y\n"  # untouched
