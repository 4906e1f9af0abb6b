"""Where the build reads and writes, under one project root, and the names of the pages it renders; kept free
of heavy imports. Every file of a project is found through a Layout, so `--root` moves all of them."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import build_tools

# --- the files of a run folder (runs/README.md): what the loader and the source readers look for ---
JSONL = re.compile(r"^(?P<stream>[a-z_]+)\.jsonl(\.gz)?$")

# The streams of each folder of a run; Miles splits the high-rate ones into hourly files
# {stream}/{YYYYMMDD_HH}.jsonl, and an older flat {stream}.jsonl is the same stream as one partition.
DASHBOARD_STREAMS = ("metrics", "phases", "gpu_util", "gpu_processes", "engine_series", "trajectories",
                     "topology", "data_buffer")
PARTITIONED = frozenset({"phases", "gpu_util", "gpu_processes", "engine_series", "trajectories",
                         # `manual record` writes these two as Miles writes its high-rate streams
                         "host_memory", "gpu_temp"})
LAB_STREAMS = ("events", "host_memory", "gpu_temp", "held_memory", "sampling", "repeat_probe")
# Written once as whole JSON documents, not JSON Lines.
DASHBOARD_DOCUMENTS = ("meta.json", "lane_catalog.json")

# The pages the render stage writes into the pages folder (mkdocs' docs_dir).
CHAPTER = re.compile(r"^(?P<n>[0-9][0-9])-[\w.-]+\.md$")  # docs/NN-name.md: chapter NN
INDEX_PAGE = "index.md"  # the front matter
METRICS_PAGE = "06-metrics.md"  # chapter 6, generated
FIGURES_PAGE = "figures.md"  # the Index of figures, generated
MANIFEST_PAGE = "manifest.md"  # the edition's record: what it is built from
CHANGES_PAGE = "changes.md"  # the edition's record: what changed
RECORD_PAGES = (MANIFEST_PAGE, CHANGES_PAGE)
CLAIM_HEALTH_PAGE = "claim-health.md"  # every claim's margin; publishing adds the editions' history
SITE_SETTINGS = ".manual.yml"  # what the site stage adds to mkdocs.yml (a dotfile: mkdocs does not publish it)


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
    def data(self) -> Path:
        """docs/data/: the tables (metrics.yml, troubleshooting.yml, ...) the pages and figures read."""
        return self.docs / "data"

    @property
    def metrics_yml(self) -> Path:
        return self.data / "metrics.yml"

    @property
    def index_md(self) -> Path:
        return self.docs / INDEX_PAGE

    @property
    def templates(self) -> Path:
        return self.root / "templates"

    @property
    def overrides(self) -> Path:
        return self.root / "overrides"

    @property
    def figures_src(self) -> Path:
        """figures/: the figure modules, their helpers, the palette and the style."""
        return self.root / "figures"

    @property
    def palette_yml(self) -> Path:
        return self.figures_src / "palette.yml"

    @property
    def style_file(self) -> Path:
        return self.figures_src / "base.mplstyle"

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

    def page_source(self, page: str) -> str:
        """What a rendered page (`01-step.md`) is made from, as the author would edit it; "" when not known."""
        generated = {METRICS_PAGE: "templates/metrics.md.j2 and docs/data/metrics.yml",
                     FIGURES_PAGE: "templates/figures.md.j2 and the figure blocks"}
        return generated.get(page) or (f"docs/{page}" if (self.docs / page).is_file() else "")


# The project this code was installed from: what figure code and the tests read when no build says otherwise.
# Found from the package's own folder (its parent), wherever in the package this module is.
PROJECT = Layout(Path(build_tools.__file__).resolve().parent.parent)

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
