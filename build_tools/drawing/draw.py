"""Stage 5: draw every figure from the summaries of the runs it names, into SVG and CSV.

A figure's files come from the cache when nothing it depends on changed (what it read of its runs when it was
last drawn, part by part: the tables, series and run.yaml fields draw() asked for, reads.py; its module, the
palette and style, this code, the library versions): a run retitled in its run.yaml redraws only a figure that
shows its title. When something did, its module's draw() is
called (cheap) and the result is keyed on what it returned and drew: the numbers of its CSV, its texts,
the data of its lines, collections and patches, its axes' limits, with the code, palette and style. Only
when that drawing key differs from the cached one is the figure rendered (the expensive part), so a
changed metric that no figure plots redraws nothing. The desktop's figure is laid out once, without
rendering (_lay_out), and its SVG drawn at those positions. No PNG is made: the pages, the zoom link and the
PDF all show the SVGs, and a PNG was a second full render. Figures are drawn in parallel (a cold build starts
the workers' fork server while the runs are summarised: start_workers_early), and every problem of every figure
is collected before the stage fails once.

Every figure has variants (build_tools/drawing/variants.py): draw() is called once per screen (the desktop's layout,
then the phone's: panels stacked, fewer ticks, the same numbers, which is checked), and each SVG has a dark
variant, the same drawing with every colour replaced by its dark shade (palette.yml), made from the light
SVG's text without laying anything out again. Each variant is checked at the width the page shows it at, and
no label of any screen's layout may overlap another or leave the figure.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import inspect
import io
import json
import os
import re
import shutil
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from build_tools.core import _workers
from build_tools.core._escape import csv_cell
from build_tools.core._exceptions import FigureError, FigureFilesError, MissingValue, Problem, display_path
from build_tools.core._layout import Layout
from build_tools.core._staging import atomic_file, write_atomic
from build_tools.core._types import DrawnFigure, FigureBlock, RunSummary
from build_tools.drawing import _figure_modules, legibility, palette, palette_check, reads, variants
from build_tools.store import fingerprint

if TYPE_CHECKING:  # imported where a figure is drawn: a build whose figures are cached never needs them
    import pandas as pd
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

PACKAGE = "figures"
_Measured = TypeVar("_Measured")  # what screen_measures measures of a figure
# The figure's own files (.json: the CSV's provenance, _sidecar_text), then its other variants' SVGs
# (variants.suffix: dark, phone, phone in the dark).
OUTPUTS = (".svg", ".csv", ".json", *variants.variant_suffixes()[1:])
# The desktop figure's layout is made as Agg measures its text at this resolution (that of the PNG the build
# made until issue 22, which laid the figure out): the SVG's positions follow from it, so it stays.
LAYOUT_DPI = 200
CSV_FLOAT_FORMAT = "%.10g"
# Same bytes on every build: no dates, no creator string with a version in it.
SVG_METADATA = {"Date": None, "Creator": None}
# While a laid-out figure is saved, the rc's default layout engine is none: savefig puts back the engine it found
# (None) with set_layout_engine(None), which under the style (constrained layout) would lay the figure out anew.
NO_DEFAULT_LAYOUT: dict[RcKeyType, bool] = {"figure.autolayout": False, "figure.constrained_layout.use": False}
# What else a drawing depends on besides its module, its runs and its tables: this module and every module of
# the package it and the project's figure modules import (fingerprint.code_files: readers.py, palette.py,
# checks/words.yml ...), and the project's figure helpers, palette and style (figure_files).
DRAWING_MODULE = __name__


@dataclasses.dataclass(frozen=True)
class _Job:
    """One figure to draw, with exactly the runs and tables it reads (pickled to a worker)."""

    block: FigureBlock
    runs: dict[str, RunSummary]
    tables: dict[str, Any]
    stem: Path  # cache_dir / block.id; the outputs are stem + suffix
    module_file: Path  # figures/<module>.py, loaded from this file and no other
    layout: Layout  # the project: its figures/ package, palette and style
    shared: str = ""  # _shared_digest(): the code, palette, style and libraries every drawing depends on
    cached_drawing: str | None = None  # the drawing key of the cache's intact files of this figure, if any


@dataclasses.dataclass(frozen=True)
class _Outcome:
    block_id: str
    alt: str  # the module's default alt text
    error: str | None  # what went wrong, after "fig N (id): "
    drawing: str = ""  # the drawing key: what draw() returned and drew, with the code it depends on
    rendered: bool = True  # False when the cache's files already are this drawing (nothing was saved)
    reads: dict[str, list[list[Any]]] | None = None  # what draw() read of each run (reads.as_lists)


# make serve's rebuilds draw this many figures or fewer in their own process (an edit to a run redraws the few that
# read it): starting workers and sending them the summaries costs more than drawing them, and the serving process
# keeps matplotlib imported from one rebuild to the next.
IN_PROCESS_UP_TO = 4


def draw_figures(blocks: Sequence[FigureBlock], summaries: Mapping[str, RunSummary], tables: Mapping[str, Any],
                 out_dir: Path, cache_dir: Path, jobs: int | None = None,
                 warnings: list[str] | None = None, *, layout: Layout, epoch: int | None = None,
                 serving: bool = False) -> list[DrawnFigure]:
    """Draw (or take from the cache) every figure with the modules, palette and style of layout's figures/,
    then check its colours; FigureError lists every problem. The files put into out_dir are dated `epoch` when
    given (an edition's SOURCE_DATE_EPOCH). `serving`: a rebuild of make serve, which draws a few figures in its
    own process (IN_PROCESS_UP_TO).

    A damaged cache entry is redrawn and said in `warnings`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    problems = _shared_problems(layout)
    if problems:
        raise FigureFilesError(problems)
    shared = _shared_digest(layout)
    to_draw: list[tuple[_Job, dict[str, Any] | None]] = []
    ready: dict[str, bool] = {}  # block id -> redrawn
    for block in blocks:
        missing = _missing_inputs(block, summaries, tables, layout)
        if missing:
            problems += [_problem(block, message) for message in missing]
            continue
        stem = cache_dir / block.id

        def key_of(read: object, block: FigureBlock = block) -> str:
            """The key of the figure's inputs now, under what its cache entry says it read."""
            return figure_key(block, summaries, tables, layout, shared,
                              reads.from_lists(read, block.runs)).hexdigest()

        entry = _cache_holds(stem, key_of, warnings if warnings is not None else [])
        if entry is not None and entry["key"] == key_of(entry.get("reads")):
            ready[block.id] = False
            continue
        job = _Job(block, {rid: summaries[rid] for rid in block.runs}, {name: tables[name] for name in block.tables},
                   stem, _module_file(layout, block.module) or Path(), layout, shared,
                   entry.get("drawing") if entry is not None else None)
        to_draw.append((job, entry))

    workers = 1 if serving and len(to_draw) <= IN_PROCESS_UP_TO else jobs
    for (job, entry), outcome in zip(to_draw, _draw_all([job for job, _ in to_draw], workers), strict=True):
        if outcome.error is not None:
            problems.append(_problem(job.block, outcome.error))
            continue
        # keyed on what draw() read this time: the parts of its runs it asked for, each with its digest now
        made = figure_key(job.block, summaries, tables, layout, shared, reads.from_lists(outcome.reads, job.block.runs))
        if not outcome.rendered and entry is not None:
            # draw() returned and drew exactly what the cached files show: they stay, under the new inputs' key
            _write_text(job.stem.with_suffix(".key"), json.dumps({**entry, **fingerprint.record(made),
                                                                 "reads": outcome.reads}, sort_keys=True))
            ready[job.block.id] = False
            continue
        # The palette and legibility checks run on every new drawing; only a figure that passed gets a cache
        # key, so a figure taken from the cache was checked against this same palette (the key includes it).
        off_palette = _check_variants(job.block, job.stem, palette.load_palette(layout.palette_yml))
        if off_palette:
            problems += off_palette
            continue
        # last: a key means complete, checked outputs, with the hash of each
        _write_text(job.stem.with_suffix(".key"), _cache_entry(job.stem, made, outcome.drawing, outcome.reads))
        ready[job.block.id] = True

    drawn = [_publish(block, cache_dir / block.id, out_dir, ready[block.id], epoch)
             for block in blocks if block.id in ready]
    if problems:
        raise FigureError(problems)
    return drawn


# --- inputs and the cache ------------------------------------------------------------------------


def _check_variants(block: FigureBlock, stem: Path, role_palette: palette.Palette) -> list[Problem]:
    """The palette and legibility checks of every variant: its scheme's colours (the first variant with a
    colour off the palette is reported, the others being drawn alike), its text at the width the page shows
    it at (a dark variant has its light one's text). A problem names the variant when it is not the figure's
    own SVG ("phone", "dark scheme")."""
    problems: list[Problem] = []
    for screen in variants.SCREENS:
        light = stem.with_suffix(variants.suffix(screen, "light"))
        problems += legibility.check_figures([(block, light)], screen.content_px,
                                             variant=variants.describe(screen, "light"))
    for screen in variants.SCREENS:
        for scheme in palette.SCHEMES:
            off = palette_check.check_figures([(block, stem.with_suffix(variants.suffix(screen, scheme)))],
                                              role_palette, scheme, variant=variants.describe(screen, scheme))
            if off:
                return problems + off
    return problems


def _missing_inputs(block: FigureBlock, summaries: Mapping[str, RunSummary], tables: Mapping[str, Any],
                    layout: Layout) -> list[str]:
    missing = [f"run {run_id} is not in runs/ (the figure reads it)"
               for run_id in block.runs if run_id not in summaries]
    missing += [f"table {name} is not in docs/data/ (the figure reads it)" for name in block.tables
                if name not in tables]
    if _module_file(layout, block.module) is None:
        missing.append(f"no figure module {PACKAGE}/{block.module}.py")
    return missing


def _module_file(layout: Layout, module: str) -> Path | None:
    """figures/<module>.py of this project: never a module found elsewhere on Python's path."""
    return _figure_modules.module_file(layout.figures_src, module)


def figure_files(layout: Layout) -> tuple[Path, ...]:
    """What every figure of a project draws with besides its own module: the package's helpers, the palette
    and the style."""
    return (layout.figures_src / "__init__.py", layout.figures_src / "_common.py", layout.palette_yml,
            layout.style_file)


def _shared_problems(layout: Layout) -> list[Problem]:
    """What every figure is drawn with, checked before any of it is hashed: a file that is not there is one line
    naming it (palette.py words what is wrong with the palette), not a crash while a figure's key is made."""
    problems = [Problem(display_path(path), None, None, "file not found: every figure is drawn with it")
                for path in figure_files(layout) if path != layout.palette_yml and not path.is_file()]
    try:
        palette.load_palette(layout.palette_yml)
    except FigureError as error:
        problems += error.problems
    return problems


@contextmanager
def _figures_package(figures_dir: Path) -> Iterator[None]:
    """The package `figures` (so `figures._common`, which figure modules import) as figures_dir holds it.

    The one Python imports is this project's own; a build of another project's folder (`--root`) gets that
    folder's for the time of its drawing, and the imported one is put back after.
    """
    try:
        imported = [Path(folder).resolve() for folder in importlib.import_module(PACKAGE).__path__]
    except ImportError:
        imported = []
    if imported == [figures_dir.resolve()]:
        yield
        return
    ours = [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]
    saved = {name: sys.modules.pop(name) for name in ours}
    try:
        spec = importlib.util.spec_from_file_location(PACKAGE, figures_dir / "__init__.py",
                                                      submodule_search_locations=[str(figures_dir)])
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {figures_dir / '__init__.py'}")
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
        yield
    finally:
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def _load(name: str, path: Path) -> ModuleType:
    """The module figures.<name> from its file in figures/ (what Python's path or the package's __path__ would
    find is not asked); its imports of figures._common and the like are the package's."""
    module_name = f"{PACKAGE}.{name}"
    loaded = sys.modules.get(module_name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == path.resolve():
        return loaded
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def _shared_digest(layout: Layout, package: Path = fingerprint.PACKAGE) -> str:
    """Hash of what every figure depends on: the drawing code (the package's modules this one and the figure
    modules import; `package`, another copy of build_tools/), the project's figure helpers, palette and style,
    Python and library versions."""
    figure_modules = sorted(layout.figures_src.glob("*.py")) if layout.figures_src.is_dir() else []
    key = fingerprint.Key("figures").code(DRAWING_MODULE, package=package, also=figure_modules)
    # The project's helpers: what the figure modules import of their own package (each module itself is a part
    # of its own figure's key alone), with the helpers every figure is drawn with, the palette and the style.
    helpers = fingerprint.code_files(package=layout.figures_src, also=figure_modules) if figure_modules else []
    for path in sorted({*helpers, *figure_files(layout)}):
        key.file(path, path.name)
    return key.hexdigest()


def figure_key(block: FigureBlock, summaries: Mapping[str, RunSummary], tables: Mapping[str, Any],
               layout: Layout, shared: str | None = None,
               read: Mapping[str, Sequence[reads.Read]] | None = None) -> fingerprint.Key:
    """The key of everything one figure's files depend on, each part named with its digest (the record its cache
    entry keeps, as build/*.key do: what the figure was drawn from).

    `read`: what the figure's draw() read of each run (reads.py), each part keyed with its digest now; without it,
    each run whole (its input hash)."""
    key = fingerprint.Key("figure").named("drawing code, figure helpers, palette and style",
                                                 shared or _shared_digest(layout))
    module_file = _module_file(layout, block.module)
    key.named(f"figures/{block.module}.py", fingerprint.file_digest(module_file) if module_file else "no module")
    for run_id in block.runs:
        if read is None:
            key.named(f"run {run_id}", summaries[run_id].source_hash)
            continue
        key.add(f"run {run_id}", str(len(read[run_id])))  # the parts read of this run, each named below
        for part in read[run_id]:  # the part itself, then by its name (the record's) with its digest
            key.add(json.dumps(part)).named(f"run {run_id}: {reads.describe(part)}",
                                            reads.read_digest(summaries[run_id], part))
    for name in block.tables:
        key.named(f"table {name}", _text_digest(json.dumps(tables[name], sort_keys=True, default=str)))
    settings = {"id": block.id, "module": block.module, "runs": block.runs, "options": block.options, "alt": block.alt}
    return key.named("the figure block", _text_digest(json.dumps(settings, sort_keys=True, default=str)))


def _text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cache_holds(stem: Path, key_of: Callable[[object], str], warnings: list[str]) -> dict[str, Any] | None:
    """The cache's entry of this figure when every file is as it was written, else None.

    The entry's `key` says which inputs it was drawn from (the cache holds this figure when it is key_of(the
    entry's `reads`), the key of its inputs now), its `reads` what draw() read of its runs, its `drawing` what
    draw() returned and drew. The key file records the sha256 of each output, so a cached SVG replaced or damaged
    since is noticed (and redrawn, with a warning when the inputs are the same) rather than copied into the site.
    """
    key_file = stem.with_suffix(".key")
    entry: Any = None
    try:
        text = key_file.read_text(encoding="utf-8")
        if re.fullmatch(r"[0-9a-f]{64}", text):
            return None  # a key written before entries carried hashes: stale, redrawn without a word
        entry = json.loads(text)
        if isinstance(entry, dict) and all(_sha256(stem.with_suffix(suffix)) == digest
                                           for suffix, digest in entry["sha256"].items()) \
                and set(entry["sha256"]) == {*OUTPUTS, ".alt"} and isinstance(entry["key"], str):
            return entry
    except FileNotFoundError:
        if not key_file.exists():
            return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    if isinstance(entry, dict) and entry.get("key") != key_of(entry.get("reads")):
        return None  # inputs changed anyway: redrawn without a word, as a figure whose runs changed
    warnings.append(f"build/cache: the cached files of {stem.name} do not match their hashes; redrawn")
    return None


def _cache_entry(stem: Path, made: fingerprint.Key, drawing: str, read: dict[str, list[list[Any]]] | None) -> str:
    return json.dumps({**fingerprint.record(made), "drawing": drawing, "reads": read,
                       "sha256": {suffix: _sha256(stem.with_suffix(suffix)) for suffix in (*OUTPUTS, ".alt")}},
                      sort_keys=True)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _publish(block: FigureBlock, stem: Path, out_dir: Path, redrawn: bool, epoch: int | None) -> DrawnFigure:
    """Copy a figure's files from the cache into the pages; dated epoch when given."""
    paths = {}
    for suffix in OUTPUTS:
        target = out_dir / f"{block.id}{suffix}"
        shutil.copyfile(stem.with_suffix(suffix), target)
        if epoch is not None:
            os.utime(target, (epoch, epoch))
        paths[suffix] = target
    alt = block.alt or stem.with_suffix(".alt").read_text(encoding="utf-8")
    return DrawnFigure(block.id, block.number, paths[".svg"], paths[".csv"], alt, redrawn)


def _problem(block: FigureBlock, message: str) -> Problem:
    return Problem(block.chapter_file, block.line, None, f"fig {block.number} ({block.id}): {message}")


def _write_text(path: Path, text: str) -> None:
    write_atomic(path, text.encode("utf-8"))


# --- drawing ------------------------------------------------------------------------------------


# What the drawing's workers import, once, in their fork server (matplotlib and pandas among it).
WORKER_PRELOAD = (__name__, f"{PACKAGE}._common")


def _draw_all(jobs: list[_Job], workers: int | None) -> list[_Outcome]:
    """Draw every job: in this process when one worker suffices, else in a pool of fresh processes."""
    count = min(workers or os.cpu_count() or 1, len(jobs))
    if count <= 1:
        return [draw_one(job) for job in jobs]
    # forkserver: workers start from a clean process (matplotlib is not fork-safe with threads around),
    # with the drawing code imported once in the server rather than once per worker.
    with ProcessPoolExecutor(count, mp_context=_workers.context(WORKER_PRELOAD)) as pool:
        return list(pool.map(draw_one, jobs, chunksize=1))


def start_workers_early(blocks: Sequence[FigureBlock], cache_dir: Path, workers: int | None,
                        also: Sequence[str] = ()) -> bool:
    """Start the fork server of the drawing's workers now, when at least two figures have nothing in the cache
    (a cold build) and more than one worker would draw them: its imports (about 1.5 CPU seconds) then run
    while this process summarises the runs, not before the first figure. `also`: the modules the summary
    stage's workers import from the same server (a build has one). True when it was started."""
    if min(workers or os.cpu_count() or 1, len(blocks)) <= 1:
        return False
    if sum(not (cache_dir / f"{block.id}.key").is_file() for block in blocks) < 2:
        return False
    _workers.start_server([*also, *WORKER_PRELOAD])
    return True


def draw_one(job: _Job) -> _Outcome:
    """Draw one figure into the cache; never raises for a problem of the figure, reports it instead. Its
    module, the helpers it imports, the palette and the style are all the project's (job.layout)."""
    with _figures_package(job.layout.figures_src), palette.using(job.layout):
        return _draw_one(job)


def _draw_one(job: _Job) -> _Outcome:
    from matplotlib import rc_context


    module_name = f"{PACKAGE}.{job.block.module}"
    # The module reads its runs through recordings: what it read of each is the figure's cache key (reads.py).
    recorded_runs, read = reads.recording(job.runs)
    job = dataclasses.replace(job, runs=recorded_runs)
    try:
        module = _load(job.block.module, job.module_file)
        alt = str(getattr(module, "ALT", "")).strip()
        with rc_context(palette.rc_params(job.layout)):
            provenance = _provenance(job)
            figures, data = _draw_screens(module, job, provenance)
            csv, sidecar = _csv_text(data, provenance), _sidecar_text(job.block, data, provenance)
            drawing = drawing_key(job, csv + sidecar, figures, alt)
            rendered = drawing != job.cached_drawing
            clashes = None
            if rendered:
                _save(figures, csv, job.stem, palette.load_palette(job.layout.palette_yml))
                clashes = _collisions(figures)
    except MissingValue as error:
        return _Outcome(job.block.id, "", str(error))
    except OSError as error:
        if error.filename and Path(error.filename).parent == job.stem.parent:
            raise  # the cache folder cannot be written (read-only, full): no figure's fault, the CLI names it
        return _Outcome(job.block.id, "", _describe(error, job))
    except Exception as error:  # any failure of figure code is the figure's problem: reported, not raised
        return _Outcome(job.block.id, "", _describe(error, job))
    if clashes:
        return _Outcome(job.block.id, "", clashes)
    if rendered:
        _write_text(job.stem.with_suffix(".alt"), alt)
        _write_text(job.stem.with_suffix(".json"), sidecar)
    return _Outcome(job.block.id, alt, None if alt or job.block.alt else f"{module_name} has no ALT text", drawing,
                    rendered, reads.as_lists(read))


def _collisions(figures: Mapping[str, Figure]) -> str | None:
    """Every label of a drawn figure that overlaps another or leaves the figure, on every screen, in one line;
    None when there is none (legibility.collisions; a dark variant has its light one's layout)."""
    found = [f"{'' if screen == variants.DESKTOP.name else f'on the {screen}, '}{collision}"
             for screen, figure in figures.items() for collision in legibility.collisions(figure)]
    return "; ".join(found) or None


def _draw_screens(module: ModuleType, job: _Job, provenance: dict[str, str]) -> tuple[dict[str, Figure], pd.DataFrame]:
    """The module's figure for every screen (variants.SCREENS), by name, and the numbers it plots, which must
    be the same on every screen."""
    figures: dict[str, Figure] = {}
    data: pd.DataFrame | None = None
    for screen in variants.SCREENS:
        with variants.showing(screen):
            figure, numbers = _call(module, job)
        if screen.ticks is not None:
            _fewer_ticks(figure, screen.ticks)
        _mark_synthesized(figure, provenance)
        if data is not None and not numbers.equals(data):
            raise ValueError(f"draw() plots other numbers for the {screen.name} than for the desktop")
        figures[screen.name], data = figure, numbers if data is None else data
    assert data is not None
    return figures, data


def _fewer_ticks(figure: Figure, most: int) -> None:
    """At most about `most` ticks on each axis whose ticks are numbers: matplotlib's own choice, or every
    k-th of the ticks a module set; ticks a module named (categories) stay."""
    from matplotlib.ticker import AutoLocator, FixedFormatter, FixedLocator, MaxNLocator

    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            locator = axis.get_major_locator()
            if isinstance(locator, AutoLocator) or type(locator) is MaxNLocator:
                axis.set_major_locator(MaxNLocator(nbins=most, steps=[1, 2, 5, 10]))
            elif isinstance(locator, FixedLocator) and not isinstance(axis.get_major_formatter(), FixedFormatter):
                ticks = list(locator())  # its locations
                if len(ticks) > most + 1:
                    every = -(-len(ticks) // most)
                    axis.set_major_locator(FixedLocator(ticks[::every]))


def drawing_key(job: _Job, csv: str, figures: Mapping[str, Figure], alt: str) -> str:
    """Hash of what one drawing shows, known before it is rendered: the numbers of its CSV and what the
    figure holds on each screen (texts, line data, collections, patches, axes limits), with the code, palette
    and style."""
    key = fingerprint.Key("figure drawing").add(job.shared or _shared_digest(job.layout))
    module_file = _module_file(job.layout, job.block.module)
    key.add(module_file.read_bytes() if module_file else b"no module")
    block = job.block
    settings = {"id": block.id, "module": block.module, "runs": block.runs, "options": block.options,
                "alt": block.alt, "module_alt": alt}
    key.add(json.dumps(settings, sort_keys=True, default=str), csv)
    for screen, figure in figures.items():
        key.add(f"screen {screen}")
        for part in _figure_contents(figure):
            key.add(part if isinstance(part, bytes) else repr(part))
    return key.hexdigest()


def _figure_contents(figure: Any) -> list[Any]:
    """What every artist of a figure holds, in a fixed order, without laying it out or rendering it."""
    import numpy as np
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.collections import Collection
    from matplotlib.image import AxesImage
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    def array(values: Any) -> bytes:
        masked: np.ma.MaskedArray[Any, Any] = np.ma.asarray(values, dtype=float)
        return np.ascontiguousarray(np.ma.filled(masked, np.nan)).tobytes()

    def walk(artist: Any) -> Any:
        # An axis' ticks follow from its limits, scale, locator and formatter: asking for them would create them
        yield artist
        children = [artist.label] if isinstance(artist, Axis) else artist.get_children()
        for child in children:
            yield from walk(child)

    parts: list[Any] = [tuple(figure.get_size_inches())]
    for artist in walk(figure):
        parts += [type(artist).__name__, artist.get_visible(), artist.get_gid(), artist.get_zorder()]
        if isinstance(artist, Text):
            parts += [artist.get_text(), artist.get_color(), artist.get_fontsize(), artist.get_fontweight(),
                      artist.get_rotation(), artist.get_horizontalalignment(), artist.get_verticalalignment(),
                      artist.get_position()]
        elif isinstance(artist, Line2D):
            parts += [array(artist.get_xydata()), artist.get_color(), artist.get_linestyle(),
                      artist.get_linewidth(), artist.get_marker(), artist.get_markersize(), artist.get_alpha(),
                      str(artist.get_markerfacecolor()), str(artist.get_drawstyle())]
        elif isinstance(artist, Collection):
            parts += [array(artist.get_offsets()), array(artist.get_facecolor()), array(artist.get_edgecolor()),
                      array(artist.get_linewidth()), array(artist.get_sizes() if hasattr(artist, "get_sizes")
                                                           else [])]
            parts += [array(path.vertices) for path in artist.get_paths()]
        elif isinstance(artist, Patch):
            parts += [array(artist.get_path().vertices), array(artist.get_patch_transform().get_matrix()),
                      artist.get_facecolor(), artist.get_edgecolor(), artist.get_linewidth(), artist.get_hatch(),
                      artist.get_alpha()]
        elif isinstance(artist, AxesImage):
            parts += [array(artist.get_array()), artist.get_extent()]
        elif isinstance(artist, Axes):
            parts += [artist.get_xlim(), artist.get_ylim(), artist.get_xscale(), artist.get_yscale(),
                      artist.get_position().bounds, artist.get_aspect()]
        elif isinstance(artist, Axis):
            parts += [artist.get_scale(), type(artist.get_major_locator()).__name__,
                      type(artist.get_major_formatter()).__name__, artist.get_inverted()]
    return parts


def _call(module: ModuleType, job: _Job) -> tuple[Figure, pd.DataFrame]:
    """Call the module's draw; a `options` parameter, when it has one, gets the block's options."""
    from matplotlib.figure import Figure
    from pandas import DataFrame

    draw = module.draw
    takes = "options" in inspect.signature(draw).parameters
    if job.block.options and not takes:  # the block reader let them through: the module declares them
        raise TypeError("the module declares OPTIONS, but draw() has no options parameter")
    extra = {"options": dict(job.block.options)} if takes else {}
    result = draw(job.runs, job.tables, **extra)
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], Figure)
            and isinstance(result[1], DataFrame)):
        raise TypeError("draw() must return (matplotlib.figure.Figure, pandas.DataFrame)")
    if result[1].empty:
        raise ValueError("draw() returned no numbers for the CSV")
    return result[0], result[1]


def _provenance(job: _Job) -> dict[str, str]:
    """Run id -> `measured` or `example`, for every run the figure reads."""
    return {run_id: str(summary.config.get("provenance", "unknown")) for run_id, summary in job.runs.items()}


def _mark_synthesized(figure: Figure, provenance: dict[str, str]) -> None:
    """Data that was synthesized says so in the image too, since an image travels without its caption."""
    if "example" in provenance.values():
        # As the figure's suptitle, for which constrained layout makes room above the axes and their titles;
        # in the style's text colour and size (figure.titlesize), a neutral of the palette.
        figure.suptitle("synthesized example data, not measured", x=0.99, ha="right")


def _csv_text(data: pd.DataFrame, provenance: dict[str, str]) -> str:
    """The figure's CSV: one header row, then the numbers it plots (its provenance is beside it, in .json). Its text
    (headers, run ids, labels: data can name them) passes through _escape.csv_cell, so no cell is a formula."""
    return _no_formulas(data).to_csv(index=False, float_format=CSV_FLOAT_FORMAT, lineterminator="\n")


def _no_formulas(data: pd.DataFrame) -> pd.DataFrame:
    """The frame with every header and every cell of a text column through csv_cell; a column of numbers, booleans
    or dates is written by pandas as it is (so -0.5 stays a number)."""
    import pandas as pd
    from pandas.api.types import is_bool_dtype, is_datetime64_any_dtype, is_numeric_dtype

    columns = [column if is_numeric_dtype(column) or is_bool_dtype(column) or is_datetime64_any_dtype(column)
               else column.astype(object).map(csv_cell) for _, column in data.items()]
    safe = pd.concat(columns, axis=1, ignore_index=True) if columns else data.copy()
    safe.columns = pd.Index([csv_cell(name) for name in data.columns])
    return safe


def _sidecar_text(block: FigureBlock, data: pd.DataFrame, provenance: dict[str, str]) -> str:
    """Beside each CSV, a Frictionless tabular data resource (JSON; no library reads or writes it for us): what
    the figure claims, the runs behind the numbers and whether they were measured, and the CSV's columns."""
    synthesized = "example" in provenance.values()
    types = {"i": "integer", "u": "integer", "f": "number", "b": "boolean", "M": "datetime"}
    resource = {
        "profile": "tabular-data-resource", "name": block.id, "path": f"{block.id}.csv", "format": "csv",
        "mediatype": "text/csv", "encoding": "utf-8", "title": f"Figure {block.number}. {block.claim}",
        "description": ("synthesized example data, not measured" if synthesized else "measured data")
        + ": the numbers the figure plots, read from the runs listed in sources",
        "synthesized": synthesized,
        "sources": [{"title": run_id, "provenance": kind} for run_id, kind in sorted(provenance.items())],
        "schema": {"fields": [{"name": str(name), "type": types.get(data[name].dtype.kind, "string")}
                              for name in data.columns]},
    }
    return json.dumps(resource, indent=1, ensure_ascii=False) + "\n"


def _save(figures: Mapping[str, Figure], csv: str, stem: Path, role_palette: palette.Palette) -> None:
    """SVGs and CSV, each written to a temporary name first so the cache never holds half a file.

    The desktop's figure is laid out first (_lay_out), its SVG then drawn at those positions; the phone's
    figure is laid out by its SVG's rendering; each dark variant is its light SVG's text with the dark shades
    (palette.Palette.to_dark).
    """
    from matplotlib import rc_context

    svgs: dict[str, str] = {}

    def write_svg(path: Path, screen: variants.Screen) -> None:
        buffer = io.StringIO()
        figures[screen.name].savefig(buffer, format="svg", metadata=SVG_METADATA)
        svgs[screen.name] = buffer.getvalue()
        path.write_text(svgs[screen.name], encoding="utf-8")

    writers: dict[str, Callable[[Path], object]] = {".csv": lambda path: path.write_text(csv, encoding="utf-8")}
    for screen in variants.SCREENS:
        writers[variants.suffix(screen, "light")] = functools.partial(write_svg, screen=screen)
        writers[variants.suffix(screen, "dark")] = functools.partial(
            lambda path, name: path.write_text(role_palette.to_dark(svgs[name]), encoding="utf-8"),
            name=screen.name)
    with rc_context(NO_DEFAULT_LAYOUT):
        _lay_out(figures[variants.DESKTOP.name])
        for suffix, write in writers.items():
            with atomic_file(stem.with_suffix(suffix)) as tmp:  # a name of this process only: never shared
                write(tmp)


def _lay_out(figure: Figure) -> None:
    """Lay the figure out once, its text measured by Agg at LAYOUT_DPI, drawing nothing (what savefig does
    before it renders), then take its layout engine away so that every later drawing keeps these positions.

    Away, not "none": savefig gives a figure with any engine, even the placeholder "none" leaves, one more pass
    through every artist before it draws (to run the engine), which for a laid-out figure changes nothing. Under
    NO_DEFAULT_LAYOUT only: set_layout_engine(None) means the rc's default engine."""
    dpi = figure.dpi
    figure.dpi = LAYOUT_DPI
    try:
        figure.draw_without_rendering()
    finally:
        figure.dpi = dpi
    figure.set_layout_engine(None)
    if figure.get_layout_engine() is not None:
        raise RuntimeError("a laid-out figure kept a layout engine: _lay_out runs under NO_DEFAULT_LAYOUT")


def _describe(error: Exception, job: _Job) -> str:
    """What a failing figure module did, at the line of figure code where it failed."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if Path(frame.filename).parent.name == PACKAGE]
    where = (f"{PACKAGE}/{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames
             else f"{PACKAGE}/{job.block.module}.py")
    runs = f" (reading {', '.join(job.block.runs)})" if job.block.runs else ""
    if isinstance(error, KeyError):
        return f"{where} found no {error.args[0]!r}{runs}"
    return f"{where} raised {type(error).__name__}: {error}{runs}"


def screen_collisions(block: FigureBlock, summaries: Mapping[str, RunSummary], tables: Mapping[str, Any],
                      layout: Layout) -> dict[str, list[legibility.Collision]]:
    """Each screen's labels of one figure that overlap or leave the figure (legibility.collisions), its
    layout as the build draws it; the dark variants have their light one's layout."""
    return screen_measures(block, summaries, tables, layout, legibility.collisions)


def screen_measures(block: FigureBlock, summaries: Mapping[str, RunSummary], tables: Mapping[str, Any],
                    layout: Layout, measure: Callable[[Figure], _Measured]) -> dict[str, _Measured]:
    """`measure` of one figure drawn for each screen, by the screen's name, the figure drawn and measured in the
    build's style and palette (matplotlib reads its settings again when it lays a figure out)."""
    job = _Job(block, {rid: summaries[rid] for rid in block.runs}, {name: tables[name] for name in block.tables},
               Path(), _module_file(layout, block.module) or Path(), layout)
    from matplotlib import rc_context

    with _figures_package(layout.figures_src), palette.using(layout), rc_context(palette.rc_params(layout)):
        figures, _ = _draw_screens(_load(block.module, job.module_file), job, _provenance(job))
        return {screen: measure(figure) for screen, figure in figures.items()}
