"""Stage 6: render the pages the site is built from, into the staging folder `pages` (mkdocs' docs_dir).

- the chapters of docs/ (NN-*.md), each figure block replaced by its figure: anchor, zoomable SVG, the
  caption "Figure N.n. <claim>", the CSV behind it and a "checked against the runs" note; references
  resolved; the troubleshooting table where `<!-- troubleshooting-table -->` stands;
- the front matter (docs/index.md): its markers filled with the contents, the palette legend, where the
  data comes from and the runs;
- the Metrics page (06-metrics.md) from templates/metrics.md.j2 and docs/data/metrics.yml;
- the Index of figures (figures.md) from the blocks;
- `.manual.yml`, what the site stage adds to mkdocs.yml: the nav in chapter order, the edition stamp and
  the provenance note of the footer (a dotfile, so mkdocs does not publish it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import yaml

from . import claims, edition_pages, metrics_table, palette, reader_note
from ._escape import Markdown, html_text, md_code, md_part, md_text
from ._exceptions import ChapterError, Problem, display_path
from ._types import BuildResult, CheckResult, ClaimVerdict, DrawnFigure, FigureBlock, Stamp
from .stamp import load_stamp
from .summary import RunSummary
from .wording import Provenance, join, provenance, words

if TYPE_CHECKING:
    from ._layout import Layout

CHAPTER = re.compile(r"^(\d\d)-[\w.-]+\.md$")
METRICS_PAGE = "06-metrics.md"
FIGURES_PAGE = "figures.md"
SITE_SETTINGS = ".manual.yml"
FRONT_MATTER = "Front matter"  # the nav's name for index.md, whose heading repeats the site name
TROUBLESHOOTING_MARK = "<!-- troubleshooting-table -->"
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w-]*)")


@dataclass(frozen=True)
class Page:
    name: str  # file name in pages/
    title: str  # its first heading, for the nav


# --- the stage --------------------------------------------------------------------------------


def render_pages(layout: Layout, pages: Path, result: BuildResult, tables: Mapping[str, Any]) -> None:
    """Write every page into pages/ (the runs' Miles commits were checked against the stamp in stage 2)."""
    stamp = load_stamp(layout.edition_yml)
    configs = {run_id: summary.config for run_id, summary in result.summaries.items()}
    env = _environment(layout.root / "templates")
    legend = palette.legend_sentences()
    chapters = chapter_files(layout.docs)
    figures = {figure.block_id: figure for figure in result.figures}
    verdicts = {verdict.block.id: verdict for verdict in result.verdicts}

    written = []
    for path in chapters:
        text = render_chapter(path, result.blocks, figures, verdicts, tables, configs)
        written.append(_write(pages, path.name, numbered(text, path.name)))
    chapter_names = {int(path.name[:2]): path.name for path in chapters}  # "05-heat.md" is chapter 5
    metrics = render_metrics(env, layout.docs / "data" / "metrics.yml", result.summaries, chapter_names)
    written.append(_write(pages, METRICS_PAGE, numbered(metrics, METRICS_PAGE)))
    written.append(_write(pages, FIGURES_PAGE, render_figure_index(env, result.blocks, result.summaries,
                                                                   legend)))
    spec = metrics_table.load_spec(layout.docs / "data" / "metrics.yml")
    metrics_runs = [run.run_id for run in metrics_table.runs_read(spec, result.summaries)]
    index = _resolve(render_index(layout.docs / "index.md", result.summaries, legend, written,
                                  readers(result.blocks, metrics_runs), stamp.edition), result.blocks,
                     Path("index.md"))
    written.insert(0, _write(pages, "index.md", index))
    for name, text in edition_pages.record_pages(stamp.edition).items():
        written.append(_write(pages, name, text))
    (pages / "assets").mkdir(parents=True, exist_ok=True)
    (pages / "assets" / "palette.css").write_text(palette.css_variables(), encoding="utf-8")
    write_site_settings(pages, stamp, provenance(configs), _nav_order(written))


def _write(pages: Path, name: str, text: str) -> Page:
    pages.mkdir(parents=True, exist_ok=True)
    (pages / name).write_text(text, encoding="utf-8")
    return Page(name, FRONT_MATTER if name == "index.md" else page_title(text, name))


def page_title(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return Path(name).stem


def numbered(text: str, name: str) -> str:
    """A chapter's first heading with its number, as its figures are numbered: '# 5. Heat' in 05-heat.md."""
    match = CHAPTER.match(name)
    if not match:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("# "):
            lines[index] = f"# {int(match.group(1))}. {line[2:].strip()}"
            break
    return "\n".join(lines)


def _nav_order(written: Sequence[Page]) -> list[Page]:
    """index first, the chapters by number (the Metrics page is chapter 6), the Index of figures, then the
    edition's record pages (manifest, changes)."""
    def key(page: Page) -> tuple[int, str]:
        if page.name == "index.md":
            return (0, "")
        if page.name in edition_pages.PAGES:  # the edition's record: manifest, then changes
            return (3, str(edition_pages.PAGES.index(page.name)))
        return (2, page.name) if page.name == FIGURES_PAGE else (1, page.name)
    return sorted(written, key=key)


def chapter_files(docs: Path) -> list[Path]:
    """docs/NN-*.md in order; chapter 6 is generated, so a hand-written one is an error."""
    chapters = sorted(path for path in docs.glob("*.md") if CHAPTER.match(path.name))
    clash = [path for path in chapters if path.name.startswith("06-")]
    if clash:
        raise ChapterError([Problem(display_path(path), None, None,
                                    f"chapter 6 is the Metrics page, generated as {METRICS_PAGE} from "
                                    "docs/data/metrics.yml; rename or remove this file") for path in clash])
    return chapters


def _environment(templates: Path) -> jinja2.Environment:
    """The templates write Markdown: every value they print is escaped as Markdown text (`finalize`), unless
    it is already Markdown the build wrote (`_escape.Markdown`). HTML autoescape does not apply to Markdown."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, autoescape=False, finalize=md_text)
    env.filters["cell"] = md_text
    env.filters["md"] = md_text
    env.filters["metric"] = lambda text, code=True: md_code(text) if code else md_text(text)
    return env


def write_site_settings(pages: Path, stamp: Stamp, source: Provenance, nav: Sequence[Page]) -> None:
    """What the site stage merges into mkdocs.yml: computed, so it cannot live in the config file."""
    settings = {
        "copyright": stamp.text,
        "extra": {"provenance": source.kind, "provenance_note": source.footer(), "edition": stamp.edition,
                  **edition_pages.version_settings()},
        # Material prints nav titles into the HTML as they are: escaped here.
        "nav": [{html_text(page.title): page.name} for page in nav],
    }
    (pages / SITE_SETTINGS).write_text(yaml.safe_dump(settings, sort_keys=False, allow_unicode=True, width=1000),
                                       encoding="utf-8")


# --- chapters ---------------------------------------------------------------------------------


def figure_spans(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) 0-based lines of each ```figure fenced block, skipping other fenced blocks."""
    spans, index = [], 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, info = match.group(1), match.group(2)
        end = index + 1
        while end < len(lines) and not re.match(rf"^ {{0,3}}{fence[0]}{{{len(fence)},}}\s*$", lines[end]):
            end += 1
        if info == "figure":
            spans.append((index, min(end, len(lines) - 1)))
        index = end + 1
    return spans


def render_chapter(path: Path, blocks: Sequence[FigureBlock], figures: Mapping[str, DrawnFigure],
                   verdicts: Mapping[str, ClaimVerdict], tables: Mapping[str, Any],
                   configs: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """A chapter with its figure blocks replaced by figures, references resolved, data tables filled."""
    lines = path.read_text(encoding="utf-8").splitlines()
    mine = sorted((b for b in blocks if Path(b.chapter_file).name == path.name), key=lambda b: b.line)
    spans = figure_spans(lines)
    if len(spans) != len(mine):
        raise ChapterError([Problem(display_path(path), None, None,
                                    f"{len(spans)} figure blocks in the file, but {len(mine)} were read")])
    for (first, last), block in reversed(list(zip(spans, mine, strict=True))):
        markup = figure_markup(block, figures.get(block.id), verdicts.get(block.id), figure_source(block, configs))
        lines[first:last + 1] = markup.splitlines()
    text = "\n".join(lines) + "\n"
    text = _resolve(text, blocks, path)
    if TROUBLESHOOTING_MARK in text:
        text = text.replace(TROUBLESHOOTING_MARK, troubleshooting_table(tables))
    return text


def _resolve(text: str, blocks: Sequence[FigureBlock], path: Path) -> str:
    from . import blocks as blocks_stage

    return blocks_stage.resolve_references(text, list(blocks), f"docs/{path.name}")


def figure_source(block: FigureBlock, configs: Mapping[str, Mapping[str, Any]] | None) -> str:
    """What the runs a figure reads are: '3 synthesized example runs', '2 measured runs', ..."""
    if not block.runs or configs is None:
        return ""
    return provenance({run: configs.get(run, {}) for run in block.runs}).counted()


def figure_markup(block: FigureBlock, figure: DrawnFigure | None, verdict: ClaimVerdict | None,
                  source: str = "") -> str:
    """The figure as the reader sees it. Links and the image are Markdown, so mkdocs --strict checks them."""
    svg = f"figures/{figure.svg.name if figure else block.id + '.svg'}"
    csv = f"figures/{figure.csv.name if figure else block.id + '.csv'}"
    alt = md_text((figure.alt if figure else "") or block.alt or block.claim)
    return "\n".join([
        "",
        f'<figure class="manual-figure" id="{html_text(block.id)}" markdown="1">',
        "",
        f'[![{alt}]({svg})]({svg}){{ .manual-zoom title="Open Figure {block.number} full size" }}',
        "",
        f'<figcaption markdown="span"><strong>Figure {block.number}.</strong> {md_text(block.claim)} '
        f'<span class="manual-data">[data behind this figure]({csv})</span>'
        + (f' <span class="manual-source">{html_text(source)}</span>' if source else "") + "</figcaption>",
        "",
        checked_note(block, verdict),
        "",
        "</figure>",
        "",
    ])


def checked_note(block: FigureBlock, verdict: ClaimVerdict | None) -> str:
    """The small note of what the claim's checks found in the runs (raw HTML: messages are not Markdown)."""
    checks: Sequence[CheckResult] = verdict.checks if verdict else ()
    # Each check as: the words of the claim it proves, what the runs show, and what the words need.
    items = "".join(reader_note.check_item(claims.says(block, params), check.message, check.expected, params)
                    for params, check in zip(block.checks, checks, strict=False)) or "<li>no checks</li>"
    runs = ", ".join(html_text(run) for run in block.runs) or "none"
    status = "holds" if verdict and verdict.status == "pass" else "was not checked"
    return (f'<details class="manual-checked"><summary>Checked against the runs: the claim {status}'
            f"</summary><ul>{items}</ul><p>Runs: {runs}</p></details>")


def _code_spans(text: str) -> str:
    """Flags, paths and metric names as code, the rest escaped."""
    parts = re.split(r"(--[\w-]+|/?\w+(?:/\w+)+)", " ".join(str(text).split()))
    return Markdown("".join(md_code(part) if index % 2 else md_part(part) for index, part in enumerate(parts)))


def troubleshooting_table(tables: Mapping[str, Any]) -> str:
    """The symptoms of docs/data/troubleshooting.yml: one first check and one fix each."""
    data = tables.get("troubleshooting")
    rows = data.get("symptoms") if isinstance(data, Mapping) else data
    if not isinstance(rows, list) or not rows:
        raise ChapterError([Problem("docs/data/troubleshooting.yml", None, "symptoms",
                                    "expected a list of symptoms, each with symptom, check and fix")])
    lines = ["| Symptom | First check | Fix |", "|---|---|---|"]
    for row in rows:
        row = row if isinstance(row, Mapping) else getattr(row, "__dict__", {})
        lines.append(f"| {_code_spans(row.get('symptom', ''))} | {_code_spans(row.get('check', ''))}"
                     f" | {_code_spans(row.get('fix', ''))} |")
    return "\n".join(lines)


# --- the palette ------------------------------------------------------------------------------


def legend_markup(lines: Sequence[str]) -> str:
    """The legend as a list with a swatch of each colour (the colour comes from the generated palette.css)."""
    out = []
    for role, line in zip(palette.load_palette().roles, lines, strict=True):
        swatch = f'<span class="manual-swatch" style="background: var(--role-{role.name})"></span>'
        out.append(f"- {swatch} {md_text(line)}")
    return "\n".join(out)


# --- the Metrics page and the Index of figures ------------------------------------------------------


def render_metrics(env: jinja2.Environment, spec_file: Path, summaries: Mapping[str, RunSummary],
                   chapters: Mapping[int, str]) -> str:
    spec = metrics_table.load_spec(spec_file)
    where = display_path(spec_file)
    context = {f"chapter_{number}": name for number, name in chapters.items()}
    tables = metrics_table.build_tables(spec, summaries, where, context)
    intro = metrics_table.intro(spec, summaries, where)
    source = provenance({run.run_id: run.config for run in metrics_table.runs_read(spec, summaries)})
    return env.get_template("metrics.md.j2").render(tables=tables, intro=intro, source=source.source())


def _machine(summaries: Mapping[str, RunSummary], run_ids: Sequence[str] | None = None) -> str:
    ids = run_ids if run_ids is not None else list(summaries)
    names = sorted({str(summaries[r].config.get("hardware", {}).get("machine", "")) for r in ids if r in summaries})
    return join([name for name in names if name], "or") or "machine"


def render_figure_index(env: jinja2.Environment, blocks: Sequence[FigureBlock],
                        summaries: Mapping[str, RunSummary], legend: Sequence[str]) -> str:
    read = sorted({run for block in blocks for run in block.runs if run in summaries})
    source = provenance({run: summaries[run].config for run in read})
    figures = [{"number": b.number, "page": Path(b.chapter_file).name, "id": b.id, "claim": b.claim}
               for b in blocks]
    return env.get_template("figures.md.j2").render(
        figures=figures, legend=legend, provenance_sentence=source.sentence(_machine(summaries, read)))


# --- the front matter -------------------------------------------------------------------------


METRICS_READER = "the Metrics page"


def readers(blocks: Sequence[FigureBlock], metrics_runs: Sequence[str]) -> dict[str, list[str]]:
    """Which pages read each run: its figures' numbers, and the Metrics page."""
    found: dict[str, list[str]] = {}
    for block in blocks:
        for run in block.runs:
            found.setdefault(run, []).append(block.number)
    for run in metrics_runs:
        found.setdefault(run, []).append(METRICS_READER)
    return found


def render_index(path: Path, summaries: Mapping[str, RunSummary], legend: Sequence[str],
                 pages: Sequence[Page], read_by: Mapping[str, Sequence[str]] | None = None,
                 edition: str = "") -> str:
    """docs/index.md with its markers filled from the data."""
    text = path.read_text(encoding="utf-8") if path.is_file() else "# Miles on one DGX Spark\n"
    source = provenance({run_id: summary.config for run_id, summary in summaries.items()})
    fills = {
        "<!-- contents -->": contents(pages) + (f"\n\n{edition_links(edition)}" if edition else ""),
        "<!-- palette-legend -->": legend_markup(legend),
        "<!-- provenance -->": provenance_paragraph(source, _machine(summaries), read_by),
        "<!-- runs-table -->": runs_table(summaries, read_by),
    }
    for mark, fill in fills.items():
        text = text.replace(mark, fill)
    return text


def contents(pages: Sequence[Page]) -> str:
    """The chapters as a numbered list (each item's number is its chapter's, from the file name; the title
    without the number its heading carries), then the pages that are not chapters."""
    ordered = [page for page in _nav_order(pages) if page.name != "index.md"]
    items, others = [], []
    for page in ordered:
        match = CHAPTER.match(page.name)
        if match:
            number = int(match.group(1))
            title = re.sub(rf"^{number}\. ", "", page.title)
            items.append(f'<li value="{number}" markdown="span">[{md_text(title)}]({page.name})</li>')
        elif page.name not in edition_pages.PAGES:
            others.append(f"[{md_text(page.title)}]({page.name})")
    parts = ['<ol class="manual-contents" markdown="block">', *items, "</ol>"] if items else []
    if others:
        parts += ["", " · ".join(others)]
    return "\n".join(parts)


def edition_links(edition: str) -> str:
    """The home page's links to the edition's record and its print edition."""
    return (f"This is edition {edition}: [what it is built from]({edition_pages.MANIFEST_PAGE}) (the runs, "
            f"figures, claims and Metrics rows, with the hashes that let anyone rebuild and compare it) · "
            f"[what changed since the previous edition]({edition_pages.CHANGES_PAGE})"
            + (f' · <a href="{html_text(edition)}.pdf">the print edition (PDF)</a>' if edition_pages.published()
               else ""))


def _measured_readers(source: Provenance, read_by: Mapping[str, Sequence[str]]) -> str:
    """Which pages read a measured run, so the home page never credits measurements to pages that read none."""
    pages = sorted({page for run in source.measured for page in read_by.get(run, ())},
                   key=lambda p: (p == METRICS_READER, [int(x) for x in p.split(".")] if p[0].isdigit() else []))
    figures = [page for page in pages if page != METRICS_READER]
    parts = []
    if figures:
        noun = "Figure" if len(figures) == 1 else "Figures"
        verb = "reads a measured run" if len(figures) == 1 else "read measured runs"
        parts.append(f"{noun} {join(figures)} {verb}; every other figure reads only synthesized examples.")
    else:
        parts.append("No figure reads a measured run: every figure reads only synthesized examples.")
    metrics_reads = METRICS_READER in pages
    parts.append("The Metrics page reads measured runs." if metrics_reads
                 else "The Metrics page reads only synthesized examples.")
    return " ".join(parts)


def provenance_paragraph(source: Provenance, machine: str,
                         read_by: Mapping[str, Sequence[str]] | None = None) -> str:
    """Where the data comes from, true of the runs the manual was built from (Markdown: the values escaped)."""
    machine = md_text(machine)
    readme = "Each run is a folder of `runs/`; `runs/README.md` in the project documents every field."
    if source.kind == "measured":
        return (f"Every number comes from measured runs: Miles runs on one {machine}, each with the dashboard "
                f"dump Miles wrote and the lab's own records of what Miles does not log. {readme}")
    if source.kind == "example":
        return ('!!! warning "Synthesized example runs, not measurements"\n\n'
                f"    Every run this manual was built from is a synthesized example, written by a seeded "
                f"generator that models Miles GRPO runs on one {machine} (`make examples`); none is a "
                "measurement. The figures and tables show how the manual reads a run, not what the machine "
                "did. A measured run replaces them: copy its dashboard dump into `runs/` with a `run.yaml` "
                f"that says `provenance: measured`.\n\n{readme}")
    which = f" {_measured_readers(source, read_by)}" if read_by is not None else ""
    return (f'!!! warning "Some runs are synthesized examples"\n\n    This manual reads '
            f"{source.counted()}; the synthesized ones are not measurements.{which} The run table below "
            f"says which run is which and what reads it.\n\n{readme}")


def runs_table(summaries: Mapping[str, RunSummary], read_by: Mapping[str, Sequence[str]] | None = None) -> str:
    read_by = read_by if read_by is not None else {}
    lines = ["| Run | What it is | Model | Steps | Data | Figures that read it |", "|---|---|---|---|---|---|"]
    for run_id, summary in summaries.items():
        config = summary.config
        kind = "measured" if config.get("provenance") == "measured" else "synthesized example"
        read = list(read_by.get(run_id, ()))
        pages = [page for page in read if page != METRICS_READER] + \
            ["Metrics page" for page in read if page == METRICS_READER]
        model = config.get("model")
        lines.append(f"| {md_code(run_id)} | {md_text(config.get('title', ''))} | "
                     f"{md_text(model.get('name', '') if isinstance(model, Mapping) else '')} | "
                     f"{len(summary.steps)} | {kind} | {md_text(', '.join(pages) or 'no page')} |")
    count = len(summaries)
    return f"The manual reads {words(count)} run{'s' if count != 1 else ''}:\n\n" + "\n".join(lines)
