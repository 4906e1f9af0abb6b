"""The Claim health page (claim-health.md): every check of every claim with its observed value, its tolerance and
its margin (build_tools/checking/checks/_margin.py), from this build's verdicts; and, across the published editions,
each margin edition by edition with a small chart, a claim whose margin shrank in the newest edition marked.

The history comes from the editions' manifests on the pages branch, so it is written when an edition is
published, into a marked place of the built page (as the record pages are, build_tools/pages/edition_pages.py): the
build itself reads nothing but its inputs, and rebuilds byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from build_tools.checking.claims import says
from build_tools.checking.prove import shown_sentence
from build_tools.core._escape import Markdown, html_text, md_text
from build_tools.core._numbers import fmt
from build_tools.core._types import ClaimVerdict, Margin

MARK_START, MARK_END = "<!-- claim-history -->", "<!-- /claim-history -->"
SHRANK = "shrank"  # the mark of a margin smaller in the newest edition than in the one before
TABLE_CLASS = "manual-claim-health"  # the block around this build's table, which the stylesheets fit to the page
SCROLL_HINT_CLASS = "manual-scroll-hint"  # shown only where the table is wider than the screen (a phone)


def _unit(margin: Margin) -> str:
    return f" {margin.unit}" if margin.unit else ""


def _row(verdict: ClaimVerdict, index: int) -> str:
    block, result = verdict.block, verdict.checks[index]
    words = says(block, block.checks[index])
    link = f"[Fig {md_text(block.number)}]({Path(block.chapter_file).name}#{block.id})"
    m = result.margin
    # The margin first: on a narrow screen the table scrolls sideways, and what the page is for stays in view.
    cells = [link, md_text(words)]
    if m is None:
        cells += ["–", "–", md_text(result.message), md_text(result.expected), "–", "–"]
    else:
        cells += [md_text(f"{fmt(m.headroom)}{_unit(m)}"), md_text("none" if m.fraction is None else fmt(m.fraction)),
                  md_text(f"{fmt(m.value)}{_unit(m)}"), md_text(result.expected), md_text(fmt(m.edge)),
                  md_text(m.worst or "pooled")]
    return "| " + " | ".join([*cells, md_text(result.status)]) + " |"


def proof_paragraph(proven: tuple[int, int] | None) -> str:
    """Whether this build showed its claims able to fail (checking/prove.py), in one paragraph."""
    if proven is None:
        return ("This build did not show its claims able to fail: `make check PROVE=1` does, and every published "
                "edition's build.")
    return (f"**{shown_sentence(*proven)}.** For each check of each claim, a change of the data "
            "it reads just past its edge (a tenth of its headroom beyond it) makes it fail, and every claim is "
            "checked again on the changed data.")


def render_claim_health(verdicts: Sequence[ClaimVerdict], proven: tuple[int, int] | None = None) -> str:
    """The page as the build writes it: this build's margins, whether its claims were shown able to fail, and the
    place publishing fills with the history."""
    rows = [_row(v, i) for v in verdicts for i in range(len(v.checks))]
    return "\n".join([
        "# Claim health", "",
        "How far each claim of this build is from failing. For every check of every figure's claim: the value the "
        "runs show (at the worst run, step or sample where there are several), what the claim's words allow, and "
        "the margin: the headroom, how far the value can move before the check fails (negative when it fails); "
        "the edge, where it fails; and the fraction, the headroom over the tolerance (over the limit for a "
        "one-sided one), 0 at the edge. An exact count and a limit of 0 have no fraction; a setting has no "
        "margin. `make check` lists the five claims with the smallest fractions.", "",
        proof_paragraph(proven), "",
        # In a block of its own class: the stylesheets (overrides' manual.css, pdf.py's) fit its columns to a
        # desktop's column and to A4, and show a phone's reader that it scrolls.
        f'<div class="{TABLE_CLASS}" markdown>', "",
        f'<p class="{SCROLL_HINT_CLASS}">Scroll the table sideways to see all its columns.</p>', "",
        "| figure | claim | headroom | fraction | observed | allowed | edge | worst | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows, "", "</div>", "",
        "## Across the published editions", "",
        MARK_START, "",
        "This build is not a published edition: `make publish` writes here each claim's margin in every "
        "published edition, from their manifests.", "",
        MARK_END, ""])


# --- the history, written when an edition is published ----------------------------------------------------


def _margins(manifest: Mapping[str, Any]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(claim id, check key) -> margin, from a manifest's claims (a manifest from before margins: none)."""
    found = {}
    for claim, entry in manifest.get("claims", {}).items():
        checks = entry.get("checks") if isinstance(entry, Mapping) else None
        for key, check in (checks.items() if isinstance(checks, Mapping) else []):
            margin = check.get("margin") if isinstance(check, Mapping) else None
            if isinstance(margin, Mapping) and isinstance(margin.get("headroom"), int | float):
                found[(claim, key)] = margin
    return found


def sparkline(values: Sequence[float | None]) -> str:
    """An inline SVG of a margin's fraction edition by edition (no outside request: drawn here, in the page)."""
    points = [(i, v) for i, v in enumerate(values) if v is not None]
    label = "margin fraction by edition: " + ", ".join("none" if v is None else fmt(v) for v in values)
    if len(points) < 2:
        return ""
    width, height, pad = 80.0, 16.0, 2.0
    low, high = min(min(v for _, v in points), 0.0), max(v for _, v in points)
    span = (high - low) or 1.0

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * i / max(len(values) - 1, 1)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * (v - low) / span

    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in points)
    return (f'<svg class="manual-sparkline" width="{width:g}" height="{height:g}" viewBox="0 0 {width:g} {height:g}" '
            f'role="img" aria-label="{html_text(label)}"><line x1="0" x2="{width:g}" y1="{y(0.0):.1f}" '
            f'y2="{y(0.0):.1f}" stroke="currentColor" stroke-opacity="0.3"/><polyline points="{line}" fill="none" '
            'stroke="currentColor" stroke-width="1.5"/></svg>')


def history_markdown(manifests: Sequence[Mapping[str, Any]]) -> Markdown:
    """Each check's margin in every published edition (oldest first, the one being published last), a chart of
    its fraction, and a mark where the newest edition's margin is smaller than the one before it."""
    if not manifests:
        return Markdown("No edition is published yet.\n")
    editions = [str(m.get("edition", "")) for m in manifests]
    margins = [_margins(m) for m in manifests]
    newest = manifests[-1].get("claims", {})
    keys = sorted({key for found in margins for key in found},
                  key=lambda k: (_number_key(newest.get(k[0], {}).get("number")), k[0], k[1]))
    if not keys:
        return Markdown("No published edition recorded margins.\n")
    header = ["figure", "claim", *(f"edition {md_text(e)}" for e in editions), "fraction", "newest"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for claim, key in keys:
        entry: Mapping[str, Any] = next((m["claims"][claim] for m in reversed(manifests)
                                         if claim in m.get("claims", {})), {})
        says = (entry.get("checks", {}).get(key, {}) or {}).get("says") or entry.get("claim") or claim
        cells = [m.get((claim, key)) for m in margins]
        shown = ["–" if c is None else md_text(f"{fmt(c['headroom'])}{' ' + c['unit'] if c.get('unit') else ''}")
                 for c in cells]
        chart = sparkline([c.get("fraction") if c is not None else None for c in cells])
        last, before = cells[-1], cells[-2] if len(cells) > 1 else None
        mark = SHRANK if last is not None and before is not None and last["headroom"] < before["headroom"] else ""
        number = entry.get("number")
        lines.append("| " + " | ".join([md_text(f"Fig {number}" if number else claim), md_text(says), *shown,
                                         chart, mark]) + " |")
    return Markdown("\n".join(lines) + "\n")


def _number_key(number: Any) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in str(number).split("."))
    except ValueError:
        return (10**6,)


# --- where each claim first weakened (a section of its own below the history table) ---------------------------


def first_weakened(manifests: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, float, float] | None]:
    """Claim id -> (the first edition where one of its checks had less headroom than in the edition before that
    recorded it, the headroom before, after), or None when no check of it ever lost headroom."""
    margins = [_margins(m) for m in manifests]
    claims = sorted({claim for found in margins for claim, _ in found})
    found: dict[str, tuple[str, float, float] | None] = {}
    for claim in claims:
        found[claim] = None
        keys = sorted({key for margin in margins for c, key in margin if c == claim})
        for index in range(1, len(manifests)):
            drops = []
            for key in keys:
                before = next((m[(claim, key)] for m in reversed(margins[:index]) if (claim, key) in m), None)
                after = margins[index].get((claim, key))
                if before is not None and after is not None and after["headroom"] < before["headroom"]:
                    drops.append((float(before["headroom"]), float(after["headroom"])))
            if drops:
                found[claim] = (str(manifests[index].get("edition", "")), *drops[0])
                break
    return found


def first_weakened_markdown(manifests: Sequence[Mapping[str, Any]]) -> Markdown:
    """The section under the history: for each claim, the edition where it first weakened, if ever."""
    weakened = first_weakened(manifests)
    if not weakened:
        return Markdown("")
    newest = manifests[-1].get("claims", {}) if manifests else {}
    lines = ["", "### Where each claim first weakened", "",
             "The first published edition in which a check of the claim had less headroom than in the edition before.",
             "", "| figure | claim | first weakened | headroom before | headroom then |", "|---|---|---|---|---|"]
    for claim in sorted(weakened, key=lambda c: (_number_key(newest.get(c, {}).get("number")), c)):
        entry: Mapping[str, Any] = next((m["claims"][claim] for m in reversed(manifests)
                                         if claim in m.get("claims", {})), {})
        number = entry.get("number")
        when = weakened[claim]
        cells = ["never", "–", "–"] if when is None else [md_text(f"edition {when[0]}"), md_text(fmt(when[1])),
                                                          md_text(fmt(when[2]))]
        lines.append("| " + " | ".join([md_text(f"Fig {number}" if number else claim),
                                         md_text(entry.get("claim") or claim), *cells]) + " |")
    return Markdown("\n".join(lines) + "\n")
