"""The Index of figures (figures.md): templates/figures.md.j2 filled with every figure's number, page and
claim, the palette legend, and where the figures' numbers come from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2

from build_tools.core._types import FigureBlock, RunSummary
from build_tools.pages.wording import provenance

from ._common import machine


def render_figure_index(env: jinja2.Environment, blocks: Sequence[FigureBlock],
                        summaries: Mapping[str, RunSummary], legend: Sequence[str]) -> str:
    read = sorted({run for block in blocks for run in block.runs if run in summaries})
    source = provenance({run: summaries[run].config for run in read})
    figures = [{"number": b.number, "page": Path(b.chapter_file).name, "id": b.id, "claim": b.claim}
               for b in blocks]
    return env.get_template("figures.md.j2").render(
        figures=figures, legend=legend, provenance_sentence=source.sentence(machine(summaries, read)))
