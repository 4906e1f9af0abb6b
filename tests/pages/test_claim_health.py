"""The Claim health page (build_tools/pages/claim_health.py): this build's margins, and, written when an edition
is published, every claim's margin across the editions with a chart, a shrunk margin marked."""

from __future__ import annotations

from pathlib import Path

from build_tools.checking.checks import validate
from build_tools.checking.claims import judge
from build_tools.core._types import FigureBlock
from build_tools.pages import claim_health, edition_pages
from tests.checking.test_margins import SPAN, with_events

CLAIM = "Without a watchdog, a dead engine left the job running for 63 minutes."


def verdict(span_s: float) -> object:
    block = FigureBlock(id="fig-dead-engine", number="1.3", chapter_file="docs/01-step.md", line=53,
                        module="demo", runs=("no-watchdog",), claim=CLAIM, checks=())
    checks = [{**SPAN, "says": "left the job running for 63 minutes"},
              {"check": "config_equals", "field": "flags.use_fault_tolerance", "value": False,
               "says": "Without a watchdog"}]
    params = tuple(validate(c, block, i + 1)[0] for i, c in enumerate(checks))
    block = FigureBlock(**{**block.__dict__, "checks": params})
    return judge(block, {"no-watchdog": with_events("no-watchdog", span_s)}, {})


def test_the_build_shows_each_check_with_its_margin() -> None:
    page = claim_health.render_claim_health([verdict(3792)])  # type: ignore[list-item]
    assert ("| [Fig 1.3](01-step.md#fig-dead-engine) | left the job running for 63 minutes | 0.3 min | 0.6 | "
            "63.2 min | 63 +/- 0.5 | 63.5 | no-watchdog | pass |") in page
    assert ("| [Fig 1.3](01-step.md#fig-dead-engine) | Without a watchdog | – | – | flags.use\\_fault\\_tolerance is "
            "false | false in every run | – | – | pass |") in page
    assert "This build is not a published edition" in page.split(claim_health.MARK_START)[1]
    assert ("This build did not show its claims able to fail: `make check PROVE=1` does, and every published "
            "edition's build.") in page.split("\n")


def test_the_page_says_how_many_claims_were_shown_able_to_fail() -> None:
    """After `make PROVE=1` (or an edition's build): the sentence, above the table, in the page's own words."""
    page = claim_health.render_claim_health([verdict(3792)], (18, 18))  # type: ignore[list-item]
    paragraph = ("**18 of 18 claims shown able to fail.** For each check of each claim, a change of the data it "
                 "reads just past its edge (a tenth of its headroom beyond it) makes it fail, and every claim is "
                 "checked again on the changed data.")
    assert paragraph in page.split("\n")
    assert page.index(paragraph) < page.index("| figure | claim |")


def manifest(edition: str, headroom: float | None, fraction: float | None) -> dict:
    margin = None if headroom is None else {"headroom": headroom, "edge": 63.5, "unit": "min", "fraction": fraction,
                                            "value": 63.5 - headroom, "worst": "no-watchdog"}
    checks = {"event_span": {"says": "left the job running for 63 minutes", "margin": margin}}
    return {"edition": edition, "claims": {"fig-dead-engine": {"number": "1.3", "claim": CLAIM, "checks": checks}}}


def test_history_marks_a_margin_that_shrank_in_the_newest_edition() -> None:
    text = claim_health.history_markdown([manifest("2026.10", 0.3, 0.6), manifest("2026.11", 0.1, 0.2)])
    header, rule, row = text.splitlines()
    assert header == "| figure | claim | edition 2026.10 | edition 2026.11 | fraction | newest |"
    assert row.startswith("| Fig 1.3 | left the job running for 63 minutes | 0.3 min | 0.1 min | <svg ")
    assert 'aria-label="margin fraction by edition: 0.6, 0.2"' in row and row.endswith("| shrank |")
    grown = claim_health.history_markdown([manifest("2026.10", 0.1, 0.2), manifest("2026.11", 0.3, 0.6)])
    assert grown.splitlines()[2].endswith("</svg> |  |")


def test_history_reads_an_edition_from_before_margins() -> None:
    older = {"edition": "2026.09", "claims": {"fig-dead-engine": {"number": "1.3", "observed": {}}}}
    row = claim_health.history_markdown([older, manifest("2026.10", 0.3, 0.6)]).splitlines()[2]
    assert row.startswith("| Fig 1.3 | left the job running for 63 minutes | – | 0.3 min |")
    assert "<svg" not in row  # one point is no line
    assert claim_health.history_markdown([older]) == "No published edition recorded margins.\n"


def test_publishing_fills_the_marked_place(tmp_path: Path) -> None:
    page = tmp_path / "claim-health.html"
    page.write_text(f"<h1>Claim health</h1>{claim_health.MARK_START}<p>not published</p>{claim_health.MARK_END}"
                    "<!-- edition-record --><!-- /edition-record -->", encoding="utf-8")
    history = claim_health.history_markdown([manifest("2026.10", 0.3, 0.6), manifest("2026.11", 0.1, 0.2)])
    assert edition_pages.fill(page, history, (claim_health.MARK_START, claim_health.MARK_END))
    text = page.read_text(encoding="utf-8")
    assert "not published" not in text and "<td>shrank</td>" in text and "<svg" in text
    assert "<!-- edition-record --><!-- /edition-record -->" in text  # the record pages' place is not touched


def test_the_edition_where_a_claim_first_weakened_is_named() -> None:
    editions = [manifest("2026.09", 0.3, 0.6), manifest("2026.10", 0.2, 0.4), manifest("2026.11", 0.4, 0.8),
                manifest("2026.12", 0.1, 0.2)]
    assert claim_health.first_weakened(editions) == {"fig-dead-engine": ("2026.10", 0.3, 0.2)}
    lines = claim_health.first_weakened_markdown(editions).splitlines()
    assert lines[1] == "### Where each claim first weakened"
    assert lines[-1] == f"| Fig 1.3 | {CLAIM} | edition 2026.10 | 0.3 | 0.2 |"
    # An edition without margins between two with margins: the headroom is compared with the last one recorded.
    gap = [manifest("2026.09", 0.3, 0.6), manifest("2026.10", None, None), manifest("2026.11", 0.3, 0.6)]
    assert claim_health.first_weakened(gap) == {"fig-dead-engine": None}
    assert claim_health.first_weakened_markdown(gap).splitlines()[-1] == f"| Fig 1.3 | {CLAIM} | never | – | – |"
    assert claim_health.first_weakened_markdown([]) == ""
