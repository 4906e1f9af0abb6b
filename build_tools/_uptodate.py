"""Whether site/ is still the build of the current inputs, decided before any heavy import.

A no-op `make` should cost no more than hashing the inputs: every file the build reads (runs, chapters,
figure code, templates, theme overrides, the build's own code), the Python and library versions (`_fingerprint`)
and SOURCE_DATE_EPOCH. The key is written after a successful build and checked before the next one.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import _fingerprint
from ._files import plain_files
from ._layout import PROJECT_INPUTS, Layout

KEY_FILE = "inputs.key"
CODE = Path(__file__).resolve().parent  # build_tools/


def inputs_key(layout: Layout) -> str:
    key = _fingerprint.Key("inputs")
    # A build for a published edition (edition selector), the served address (sitemap) and the site engine
    # change the pages.
    for name in ("SOURCE_DATE_EPOCH", "MANUAL_PUBLISH", "MANUAL_SITE_URL", "MANUAL_ENGINE"):
        key.add(f"{name}={os.environ.get(name, '')}")
    for base in [CODE, *(layout.root / name for name in PROJECT_INPUTS)]:
        # Regular files only, links never followed: a FIFO or a link out of the tree is the build's to refuse.
        files = plain_files(base) if base.exists() else []
        key.files(base.parent, [path for path in files if "__pycache__" not in path.parts])
    return key.hexdigest()


def is_current(layout: Layout) -> bool:
    """True when the last successful build had exactly these inputs and its outputs are all there."""
    recorded = _fingerprint.recorded(layout.build / KEY_FILE)
    outputs = (layout.site / "index.html", layout.build / "claims.json", layout.build / "claims.junit.xml")
    return recorded is not None and all(p.is_file() for p in outputs) and recorded == inputs_key(layout)


def record(layout: Layout) -> None:
    """Remember the inputs of the build that just succeeded."""
    _fingerprint.remember(layout.build / KEY_FILE, inputs_key(layout))


def forget(layout: Layout) -> None:
    """A build is starting: until it succeeds, its outputs are not current."""
    (layout.build / KEY_FILE).unlink(missing_ok=True)
