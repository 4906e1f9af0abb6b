"""build_tools/fingerprint.py: one list of libraries whose versions matter, read by every cache key and the
edition's manifest; files hashed once per process while they stay as they were; key files read safely."""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import blake3
import pytest

from build_tools.core import _files
from build_tools.core._layout import PROJECT, Layout
from build_tools.core._settings import Settings
from build_tools.drawing import draw
from build_tools.editions import _manifest
from build_tools.ingest import stream_columns
from build_tools.store import fingerprint, run_hash, uptodate
from build_tools.store.fingerprint import LIBRARIES
from build_tools.summarise import _ray, summary
from build_tools.website import site
from tests.conftest import own_python_files

ROOT = Path(__file__).resolve().parents[2]
TINY_RUN = Path(__file__).resolve().parents[1] / "samples" / "load" / "good"


def test_the_versions_are_the_ones_importlib_finds() -> None:
    """Read from folder names (no import of importlib.metadata on a no-op `make`), yet the same answer; every
    listed library is installed, so no name in the list is misspelt."""
    from importlib import metadata

    assert fingerprint.library_versions() == {name: metadata.version(name) for name in LIBRARIES}


def test_the_manifest_records_python_and_every_listed_library(tmp_path: Path) -> None:
    manifest = _manifest.compute(tmp_path, edition={"edition": "2026.10", "date": "2026-10-01", "image": "i",
                                                    "branch": "b", "commit": "c", "commit_date": "d"},
                                 project_commit="p", source_date_epoch=0)
    assert list(manifest["tools"]) == ["python", *LIBRARIES]
    assert manifest["tools"]["python"] == platform.python_version()


def _project(tmp_path: Path) -> Layout:
    """A project of one run with a page and the project's mkdocs.yml: enough for every key to read something."""
    shutil.copytree(TINY_RUN / "tiny-run", tmp_path / "runs" / "tiny-run")
    (tmp_path / "build" / "docs").mkdir(parents=True)
    (tmp_path / "build" / "docs" / "index.md").write_text("# A page\n")
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    return Layout(tmp_path)


def _every_key(layout: Layout) -> dict[str, str]:
    run_hash.code_digest.cache_clear()  # kept for the process: recomputed under the versions of this test
    _ray.code_digest.cache_clear()
    manifest = _manifest.compute(layout.root, edition={"edition": "2026.10", "date": "2026-10-01", "image": "i",
                                                       "branch": "b", "commit": "c", "commit_date": "d"},
                                 project_commit="p", source_date_epoch=0)
    return {
        "no-op build": uptodate.inputs_key(layout, Settings()),
        "site": site.site_key(layout.mkdocs_yml, layout.pages, Settings()).hexdigest(),
        "figures": draw._shared_digest(PROJECT),  # the figure helpers, palette and style of this project
        "run summary": summary.input_hash(layout.runs / "tiny-run"),
        "ray worker": _ray.code_digest(),  # a worker with other library versions is refused
        "manifest": _manifest.dumps({"tools": manifest["tools"]}),
    }


# What each key is made with, as the build's code imports it (fingerprint.IMPORTED_BY): the no-op key, Ray's worker
# check and the manifest hold every library; the figures, the summaries and the site only theirs.
DRAWN_WITH = {"matplotlib", "numpy", "pandas", "pillow", "fonttools", "pydantic", "PyYAML", "pyarrow", "tensorboard"}
SUMMARISED_WITH = {"numpy", "pandas", "pydantic", "PyYAML", "pyarrow", "tensorboard"}
SITE_BUILT_WITH = {"mkdocs", "mkdocs-material", "Markdown", "pymdown-extensions", "Jinja2", "PyYAML"}


@pytest.mark.parametrize("library", LIBRARIES)
def test_each_cache_key_changes_with_the_libraries_its_code_imports(library: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    layout = _project(tmp_path)
    # The code digests are kept for the process (functools.cache): this test recomputes them in caches of its own,
    # and the session's are back untouched after it. Clearing the session's made every later test of the worker
    # hash the code as it is then, not as the session's built manual recorded it (a run's hash in its inputs.key).
    monkeypatch.setattr(run_hash, "code_digest", functools.cache(run_hash.code_digest.__wrapped__))
    monkeypatch.setattr(_ray, "code_digest", functools.cache(_ray.code_digest.__wrapped__))
    before = _every_key(layout)
    upgraded = {**fingerprint.library_versions(), library: "99.0"}
    monkeypatch.setattr(fingerprint, "library_versions", lambda: upgraded)
    after = _every_key(layout)
    changed = {name for name in before if before[name] != after[name]}
    expected = {"no-op build", "ray worker", "manifest"}
    expected |= {"figures"} if library in DRAWN_WITH else set()
    expected |= {"run summary"} if library in SUMMARISED_WITH else set()
    expected |= {"site"} if library in SITE_BUILT_WITH else set()
    assert changed == expected


def _figure_keys(blocks: list, root: Path) -> dict[str, str]:
    """Every figure's key as the build makes it, its runs' input hashes computed afresh (a summary holds the hash
    of the run it was made from; nothing else of it enters the key)."""
    run_hash.code_digest.cache_clear()
    fingerprint._libraries_of.clear()
    hashes = {run: SimpleNamespace(source_hash=summary.input_hash(root / "runs" / run))
              for block in blocks for run in block.runs}
    shared = draw._shared_digest(PROJECT)
    tables = {name: {} for block in blocks for name in block.tables}
    return {block.id: draw.figure_key(block, hashes, tables, PROJECT, shared).hexdigest() for block in blocks}


def test_installing_the_test_tools_or_an_unrelated_distribution_redraws_no_figure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Distributions installed as pip installs them (a `name-version.dist-info` folder first on sys.path): other
    versions of wandb and zensical (the test extra's), and a distribution the build never heard of, leave every
    figure's key as it was; another matplotlib changes every one."""
    from tests.conftest import manual_blocks

    monkeypatch.setattr(run_hash, "code_digest", functools.cache(run_hash.code_digest.__wrapped__))
    blocks = manual_blocks()
    before = _figure_keys(blocks, ROOT)
    installed = tmp_path / "site-packages"
    for folder in ("wandb-99.0.dist-info", "zensical-99.0.dist-info", "playwright-9.9.dist-info",
                   "an_unrelated_tool-1.0.dist-info"):
        (installed / folder).mkdir(parents=True)
    monkeypatch.syspath_prepend(str(installed))
    fingerprint.library_versions.cache_clear()
    try:
        assert fingerprint.library_versions()["wandb"] == "99.0"  # found, as pip's folder makes it
        assert _figure_keys(blocks, ROOT) == before
        (installed / "matplotlib-99.0.dist-info").mkdir()
        fingerprint.library_versions.cache_clear()
        after = _figure_keys(blocks, ROOT)
        assert [block for block in before if before[block] == after[block]] == []
    finally:
        monkeypatch.undo()
        fingerprint.library_versions.cache_clear()
        run_hash.code_digest.cache_clear()


def test_a_run_with_a_wandb_log_is_read_again_under_another_wandb(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """wandb reads a run's offline log as `python -m wandb`, never imported: only such a run's hash holds its
    version."""
    plain = tmp_path / "plain"
    shutil.copytree(TINY_RUN / "tiny-run", plain)
    logged = tmp_path / "logged"
    shutil.copytree(TINY_RUN / "tiny-run", logged)
    (logged / "run-abc.wandb").write_bytes(b"log")
    before = {run.name: summary.input_hash(run) for run in (plain, logged)}
    upgraded = {**fingerprint.library_versions(), "wandb": "99.0"}
    monkeypatch.setattr(fingerprint, "library_versions", lambda: upgraded)
    after = {run.name: summary.input_hash(run) for run in (plain, logged)}
    assert before["plain"] == after["plain"] and before["logged"] != after["logged"]


def test_no_module_but_the_fingerprint_reads_library_versions() -> None:
    """The list is one: no other module of the build asks for a version or keeps a list of libraries."""
    readers = []
    for path in own_python_files(ROOT / "build_tools"):
        text = path.read_text(encoding="utf-8")
        if path.name != "fingerprint.py" and any(word in text for word in ("metadata.version", ".dist-info",
                                                                            "LIBRARIES", "python_version")):
            readers.append(path.relative_to(ROOT).as_posix())
    assert readers == []


# --- files hashed once --------------------------------------------------------------------------------


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real: Callable = fingerprint._content_digest
    monkeypatch.setattr(fingerprint, "_content_digest", lambda path, size: reads.append(str(path)) or real(path, size))
    return reads


def test_a_cold_build_reads_each_run_file_once_for_its_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the run, the summary cache's key, then the no-op key the build records: each file of the run is
    read once, the keys made from the bytes the loader read (and the digests reused for the second)."""
    layout = _project(tmp_path)
    monkeypatch.setattr(fingerprint, "SETTLED_NS", -1)  # the copy was just written: count it settled
    monkeypatch.setattr(fingerprint, "_digests", {})
    reads = _count_reads(monkeypatch)
    real_open = _files._Input.__init__

    def counted_open(self: _files._Input, path: Path) -> None:
        reads.append(str(path))
        real_open(self, path)

    monkeypatch.setattr(_files._Input, "__init__", counted_open)
    real_small = stream_columns.read_small

    def counted_small(path: Path, most: int) -> bytes | None:  # a small file read whole in one call
        data = real_small(path, most)
        if data is not None:
            reads.append(str(path))
        return data

    monkeypatch.setattr(stream_columns, "read_small", counted_small)
    summary.summarise_runs(layout.runs, layout.cache / "summaries")
    uptodate.inputs_key(layout, Settings())
    run_files = sorted(str(p) for p in (layout.runs / "tiny-run").rglob("*") if p.is_file())
    assert sorted(r for r in reads if r.startswith(str(layout.runs))) == run_files


def _fake_stat(monkeypatch: pytest.MonkeyPatch, changed_ns: int) -> None:
    """Every file seems unchanged (same inode, size and times), changed last at changed_ns."""
    fake = SimpleNamespace(st_dev=1, st_ino=2, st_size=8, st_mtime_ns=changed_ns, st_ctime_ns=changed_ns)
    monkeypatch.setattr(os, "stat", lambda path: fake)


def test_a_file_rewritten_within_one_clock_tick_is_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file changed just now may change again without its size or times changing: its digest is not kept."""
    path = tmp_path / "run.yaml"
    path.write_text("seed: 1\n")
    _fake_stat(monkeypatch, time.time_ns())
    first = fingerprint.file_digest(path)
    path.write_text("seed: 2\n")
    assert fingerprint.file_digest(path) != first == blake3.blake3(b"seed: 1\n").digest()


def test_a_settled_file_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("seed: 1\n")
    _fake_stat(monkeypatch, time.time_ns() - 3_000_000_000)
    monkeypatch.setattr(fingerprint, "_digests", {})
    reads = _count_reads(monkeypatch)
    assert fingerprint.file_digest(path) == fingerprint.file_digest(path) == blake3.blake3(b"seed: 1\n").digest()
    assert reads == [str(path)]


def test_a_large_file_is_hashed_in_chunks_never_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "metrics.jsonl"
    data = bytes(range(256)) * 1200
    path.write_bytes(data)
    monkeypatch.setattr(fingerprint, "ONE_READ", 1000)

    def whole(self: Path) -> bytes:
        raise AssertionError(f"{self} read whole")

    monkeypatch.setattr(Path, "read_bytes", whole)
    assert fingerprint.file_digest(path) == blake3.blake3(data).digest()


# --- keys ---------------------------------------------------------------------------------------------


def test_a_key_tells_apart_what_plain_concatenation_would_not(tmp_path: Path) -> None:
    assert fingerprint.Key("k").add("ab", "c").hexdigest() != fingerprint.Key("k").add("a", "bc").hexdigest()
    (tmp_path / "a").write_text("same")
    (tmp_path / "b").write_text("same")
    named_a = fingerprint.Key("k").files(tmp_path, [tmp_path / "a"]).hexdigest()
    assert named_a != fingerprint.Key("k").files(tmp_path, [tmp_path / "b"]).hexdigest()  # a rename counts


@pytest.mark.parametrize("content", [b"\xff\xfe not text", b"[[[[", b"{\"key\": 5}", None])
def test_a_damaged_or_missing_key_file_is_no_key(content: bytes | None, tmp_path: Path) -> None:
    key_file = tmp_path / "build" / "inputs.key"
    if content is not None:
        key_file.parent.mkdir()
        key_file.write_bytes(content)
    assert fingerprint.recorded(key_file) is None
    assert not uptodate.is_current(Layout(tmp_path), Settings())


def test_a_remembered_key_is_read_back_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    first, second = fingerprint.Key("site").add("a"), fingerprint.Key("site").add("b")
    fingerprint.remember(tmp_path / "site.key", first)
    fingerprint.remember(tmp_path / "site.key", second)
    assert fingerprint.recorded(tmp_path / "site.key") == second.hexdigest() != first.hexdigest()
    assert [p.name for p in tmp_path.iterdir()] == ["site.key"]


def test_each_output_records_what_it_was_made_from(built_manual: Path) -> None:
    """build/inputs.key names every input file and every run with its digest, and the tools' versions."""
    record = json.loads((built_manual / "build" / "inputs.key").read_text())
    assert record["kind"] == "inputs" and record["tools"] == fingerprint.tool_versions()
    made_from = record["made_from"]
    assert made_from["runs/no-watchdog/"] == summary.input_hash(built_manual / "runs" / "no-watchdog")
    chapter = built_manual / "docs" / "01-step.md"
    assert made_from["docs/01-step.md"] == blake3.blake3(chapter.read_bytes()).hexdigest()
    assert "build_tools/store/fingerprint.py" in made_from
    site_record = json.loads((built_manual / "build" / "site.key").read_text())
    assert site_record["kind"] == "site" and "docs/index.md" in site_record["made_from"]


# --- code keys: derived from what each stage imports ----------------------------------------------------------

# Each key of a stage's code: the modules it starts from (and the project files whose imports count too), and the
# key computed over a given copy of build_tools/.
CODE_KEYS: dict[str, tuple[tuple[str, ...], Callable[[], list[Path]], Callable[[Path], str]]] = {
    "summary": ((run_hash.SUMMARY_MODULE,), list,
                lambda package: run_hash.code_digest.__wrapped__(package).hex()),
    "figures": ((draw.DRAWING_MODULE,), lambda: sorted((ROOT / "figures").glob("*.py")),
                lambda package: draw._shared_digest(PROJECT, package)),
    "site": (("build_tools.website.site", "build_tools.website.markdown_wbr", "build_tools.website.search_rows"), list,
             lambda package: site.site_key(PROJECT.mkdocs_yml, PROJECT.pages, Settings(), package).hexdigest()),
}


def _imported_at_run_time(modules: tuple[str, ...], also: list[Path]) -> set[Path]:
    """The package's files a fresh interpreter has loaded after importing the modules and the project files
    (Python's own answer, the lazy imports of functions aside, which code_files counts too)."""
    project = [".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__") for path in also]
    code = ("import importlib, sys\n"
            f"for name in {[*modules, *project]!r}: importlib.import_module(name)\n"
            "print('\\n'.join(m.__file__ for n, m in list(sys.modules.items())\n"
            "                 if n.split('.')[0] == 'build_tools' and getattr(m, '__file__', None)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return {Path(line) for line in done.stdout.splitlines()}


@pytest.mark.parametrize("name", CODE_KEYS)
def test_a_code_key_holds_every_module_its_stage_imports(name: str) -> None:
    modules, also, _ = CODE_KEYS[name]
    derived = set(fingerprint.code_files(*modules, also=also()))
    assert _imported_at_run_time(modules, also()) <= derived


def test_the_summary_key_holds_the_step_axes() -> None:
    """axes.py decides how step axes are joined: the summary stage imports it, so its key hashes it (the hand-kept
    list it replaced left it out, and every summary was served stale after an edit of it)."""
    assert fingerprint.PACKAGE / "ingest" / "axes.py" in fingerprint.code_files(run_hash.SUMMARY_MODULE)


@pytest.mark.parametrize("name", CODE_KEYS)
def test_a_code_key_changes_with_each_module_its_stage_imports(name: str, tmp_path: Path) -> None:
    """Each file the key is derived from, edited in a copy of build_tools/, changes the key; put back, the key is
    the one before."""
    modules, also, key_of = CODE_KEYS[name]
    package = tmp_path / "build_tools"
    shutil.copytree(fingerprint.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    files = fingerprint.code_files(*modules, package=package, also=also())
    assert [path.relative_to(package) for path in files] == [
        path.relative_to(fingerprint.PACKAGE) for path in fingerprint.code_files(*modules, also=also())]
    before = key_of(package)
    unchanged = []
    for path in files:
        original = path.read_bytes()
        path.write_bytes(original + b"\n# edited\n")
        if key_of(package) == before:
            unchanged.append(path.relative_to(package).as_posix())
        path.write_bytes(original)
    assert unchanged == []
    assert key_of(package) == before


def test_imports_are_read_in_every_form(tmp_path: Path) -> None:
    """Relative (one or more dots, from a package's __init__), absolute, several names, in parentheses over
    lines, inside a function; a name imported from a module that is a module itself is followed too."""
    package = tmp_path / "build_tools"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__", "a", "b", "c", "d", "e", "unused"):
        (package / f"{name}.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from . import inner\n")
    (package / "sub" / "inner.py").write_text("from ..e import thing  # a comment\n")
    (package / "sub" / "data.yml").write_text("read beside its module\n")
    (package / "a.py").write_text("from . import b, sub\nfrom .c import (\n    x,  # why\n    y,\n)\n"
                                  "def later():\n    import build_tools.d\n")
    found = [path.relative_to(package).as_posix() for path in fingerprint.code_files("build_tools.a",
                                                                                     package=package)]
    assert found == ["__init__.py", "a.py", "b.py", "c.py", "d.py", "e.py", "sub/__init__.py", "sub/data.yml",
                     "sub/inner.py"]


def test_the_figures_key_holds_every_helper_a_figure_module_imports(tmp_path: Path) -> None:
    """A helper of the project's figures/ that a figure module imports is part of every figure's key (a figure
    module itself is a part of its own figure's key alone)."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "figures", root / "figures", ignore=shutil.ignore_patterns("__pycache__"))
    layout = Layout(root)
    before = draw._shared_digest(layout)
    (root / "figures" / "_extra.py").write_text("SHADE = 0.5\n")
    assert draw._shared_digest(layout) == before  # imported by no figure yet
    module = root / "figures" / "reward_curves.py"
    module.write_text(module.read_text() + "\nfrom ._extra import SHADE  # noqa\n")
    with_helper = draw._shared_digest(layout)
    (root / "figures" / "_extra.py").write_text("SHADE = 0.6\n")
    edited = draw._shared_digest(layout)
    assert len({before, with_helper, edited}) == 3
    other = root / "figures" / "heat_pauses.py"
    other.write_text(other.read_text() + "\n# edited\n")
    assert draw._shared_digest(layout) == edited  # a figure module's edit is its own figure's
