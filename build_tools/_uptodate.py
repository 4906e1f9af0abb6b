"""Whether site/ is still the build of the current inputs, decided before any heavy import.

A no-op `make` should cost no more than hashing the inputs: every file the build reads (runs, chapters,
figure code, templates, theme overrides, the build's own code), the library versions and
SOURCE_DATE_EPOCH. The key is written after a successful build and checked before the next one.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

from ._files import plain_files
from ._layout import PROJECT_INPUTS, Layout

KEY_FILE = "inputs.key"
CODE = Path(__file__).resolve().parent  # build_tools/
LIBRARIES = ("matplotlib", "numpy", "pandas", "mkdocs", "mkdocs-material", "Jinja2", "PyYAML",
             "pydantic", "pyarrow", "tensorboard", "weasyprint", "zensical", "Markdown", "pymdown-extensions")


def inputs_key(layout: Layout) -> str:
    digest = hashlib.sha256()
    digest.update(f"python {sys.version}\nSOURCE_DATE_EPOCH={os.environ.get('SOURCE_DATE_EPOCH', '')}\n".encode())
    # A build for a published edition (edition selector), the served address (sitemap) and the site engine
    # change the pages.
    for name in ("MANUAL_PUBLISH", "MANUAL_SITE_URL", "MANUAL_ENGINE"):
        digest.update(f"{name}={os.environ.get(name, '')}\n".encode())
    for line in library_versions():
        digest.update(f"{line}\n".encode())
    for base in [CODE, *(layout.root / name for name in PROJECT_INPUTS)]:
        # Regular files only, links never followed: a FIFO or a link out of the tree is the build's to refuse.
        for path in plain_files(base) if base.exists() else []:
            if "__pycache__" in path.parts:
                continue
            digest.update(f"\0{path.relative_to(base.parent).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def library_versions() -> list[str]:
    """`name==version` of each library, read from the names of the installed distributions' metadata folders
    (`name-version.dist-info`, the first on sys.path, as importlib.metadata finds it): nothing parsed, nothing
    imported, so that a no-op `make` stays well under 0.14 s."""
    wanted = {_normal(name): name for name in LIBRARIES}
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            folders = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in folders:
            if folder.endswith(".dist-info"):
                name, _, version = folder[: -len(".dist-info")].rpartition("-")
                found.setdefault(_normal(name), version)
    return [f"{wanted[key]}=={found.get(key, 'absent')}" for key in wanted]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def is_current(layout: Layout) -> bool:
    """True when the last successful build had exactly these inputs and its outputs are all there."""
    key_file = layout.build / KEY_FILE
    outputs = (layout.site / "index.html", layout.build / "claims.json", layout.build / "claims.junit.xml")
    return key_file.is_file() and all(p.is_file() for p in outputs) and key_file.read_text() == inputs_key(layout)


def record(layout: Layout) -> None:
    """Remember the inputs of the build that just succeeded."""
    (layout.build / KEY_FILE).write_text(inputs_key(layout), encoding="utf-8")


def forget(layout: Layout) -> None:
    """A build is starting: until it succeeds, its outputs are not current."""
    (layout.build / KEY_FILE).unlink(missing_ok=True)
