"""Where the build reads and writes, under one project root; kept free of heavy imports."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    """Where the build reads and writes, all under one project root."""

    root: Path

    @property
    def runs(self) -> Path:
        return self.root / "runs"

    @property
    def docs(self) -> Path:
        return self.root / "docs"

    @property
    def figures_src(self) -> Path:
        return self.root / "figures"

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def cache(self) -> Path:
        return self.build / "cache"

    @property
    def pages(self) -> Path:
        return self.build / "docs"

    @property
    def site(self) -> Path:
        return self.root / "site"

    @property
    def mkdocs_yml(self) -> Path:
        return self.root / "mkdocs.yml"

    @property
    def edition_yml(self) -> Path:
        return self.root / "edition.yml"


# Everything a build reads, relative to the project root; a copy of these builds the same manual.
PROJECT_INPUTS = ("runs", "docs", "figures", "templates", "overrides", "mkdocs.yml", "edition.yml")


def copy_inputs(root: Path, target: Path) -> Path:
    """Copy the project's inputs (no build/, no site/) into target, where a first build is cold."""
    target.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_INPUTS:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.is_file():
            shutil.copy2(source, target / name)
    return target
