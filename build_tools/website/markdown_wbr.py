"""A Python-Markdown extension (named in mkdocs.yml): metric names in table cells break only after `/` and `_`.

A metric name such as `train/train_rollout_logprob_abs_diff` is one long word to a browser; left to itself
it breaks anywhere (`perf/rollout_tim|e`). This splits inline code in a table cell after every `/` and
`_` into pieces the stylesheet keeps unbroken (`.manual-nobreak`), with a <wbr> (a place the line may
break, invisible and not copied) between them. The Markdown the build writes is unchanged (the seed pages
compare it word for word); only the HTML gets the break points, so the site and the PDF read from it both
have them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from markdown import Extension, Markdown
from markdown.treeprocessors import Treeprocessor
from markdown.util import AtomicString

_BREAK_AFTER = re.compile(r"(?<=[/_])(?=.)")
NOBREAK = "manual-nobreak"


def break_points(text: str) -> list[str]:
    """'perf/step_time' -> ['perf/', 'step_', 'time']: the pieces between which a line may break."""
    return _BREAK_AFTER.split(text)


class _CellCode(Treeprocessor):
    def run(self, root: ET.Element) -> None:
        for cell in root.iter():
            if cell.tag not in ("td", "th"):
                continue
            for code in cell.iter("code"):
                if len(code) or not code.text:
                    continue
                pieces = break_points(code.text)
                if len(pieces) < 2:
                    continue  # not a metric name: the browser's own breaks (after a `-`) are fine
                code.text = None
                for index, piece in enumerate(pieces):
                    if index:
                        ET.SubElement(code, "wbr")
                    # Each piece unbroken (a `-` of a run's name included); the lines break at the <wbr>s.
                    span = ET.SubElement(code, "span", {"class": NOBREAK})
                    span.text = AtomicString(piece)


class WbrExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:  # noqa: N802 (Python-Markdown's name)
        # After inline parsing (priority 20), before mkdocs' link rewriting and the toc.
        md.treeprocessors.register(_CellCode(md), "manual_wbr", 15)


def makeExtension(**kwargs: object) -> WbrExtension:  # noqa: N802 (Python-Markdown's entry point)
    return WbrExtension(**kwargs)
