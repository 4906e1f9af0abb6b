"""Shared fixtures: the example runs' summaries, and one manual built from a copy of the project."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# `manual` (python -m build_tools) as a terminal starts it, Ctrl-C raising KeyboardInterrupt: a shell that starts a
# job in the background (as a CI runner's may, or a script's `make test &`) starts it with SIGINT ignored, every
# process below inherits that, and Python then raises none (tests/stubbed_manual.py does the same).
MANUAL_AS_IN_A_TERMINAL = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, "
                           "signal.default_int_handler); from build_tools.cli import main; sys.exit(main())"]
SAMPLES = Path(__file__).resolve().parent / "samples"
# Miles' (and SGLang's) own code, copied verbatim into the package (make miles-code): not the project's code, so
# not held to its rules on imports, arguments and libraries; it runs only in its own process.
VENDORED = ROOT / "build_tools" / "miles_code" / "upstream"


def own_python_files(folder: Path) -> list[Path]:
    """The project's .py files under a folder, sorted: the copied Miles code left out."""
    return [path for path in sorted(folder.rglob("*.py")) if not path.is_relative_to(VENDORED)]
# Copies of ../shared/ kept with the tests (tests/samples/shared/README.md), so a bare clone can run them.
MILES_SAMPLES = SAMPLES / "shared" / "miles-dashboard-samples"
SEEDS = SAMPLES / "shared" / "seeds"


def manual_blocks(root: Path = ROOT) -> list:
    """The figure blocks of the chapters under root: the one list of the manual's figures that tests count
    (a figure added to a chapter is counted with no edit to any test)."""
    from build_tools.checking.blocks import read_blocks

    return read_blocks(root / "docs", root / "figures")


def copy_project(target: Path) -> Path:
    """A copy of the project's inputs in target, ready to build."""
    from build_tools.core._layout import copy_inputs

    return copy_inputs(ROOT, target)


@pytest.fixture(scope="session")
def example_summaries(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The summaries of the shipped example runs (read once per test session)."""
    from build_tools.summarise.summary import summarise_runs

    return summarise_runs(ROOT / "runs", tmp_path_factory.mktemp("summary-cache"))


@pytest.fixture(scope="session")
def built_manual(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole manual built once from a copy of the project; returns the copy's root."""
    from build_tools.build import build
    from build_tools.core._settings import Settings

    root = copy_project(tmp_path_factory.mktemp("manual"))
    build(root, Settings(quiet=True))
    return root


@pytest.fixture(scope="module")
def stubbed() -> Iterator[pytest.MonkeyPatch]:
    """Publishing with the build and the rebuild stubbed (tests/editions/test_edition.py's stub_build and
    stub_rebuild): the publishing and kill tests exercise git and mike, not the manual's build."""
    from build_tools.editions import edition
    from tests.editions.test_edition import stub_build, stub_rebuild

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(edition, "run_build", stub_build)
        patch.setattr(edition, "rebuild", stub_rebuild)
        yield patch


# Tests run on every core (pytest-xdist, `--dist loadgroup`, set by `make test`). Each test file is one group,
# on one worker, so its module-scoped fixtures (a built copy of the manual, summaries) are built once, not once
# per worker. Files that share something a test cannot have twice at once are one group across files:
SHARED_GROUPS = {
    # A local Ray cluster: two at once on a small machine starve each other (and each takes ~1 GB).
    "ray": ("test_ray.py", "test_bench_ray.py"),
}


# And the files that use the session's one built manual (`built_manual`, found in their source): one worker builds
# it once and runs them in file order. (Two failures once blamed on order came from build_tools/ being edited
# while the suite ran: a site built before the edit is rightly not current after it; and a test that cleared the
# process's code-digest caches, which now swaps in caches of its own.)
SHARES_THE_BUILT_MANUAL = "built_manual"


# The end-to-end files, marked `slow` (`make test-fast` leaves them out): each builds, publishes, drives a
# browser or starts Ray, 10 s to 2 min a test; `make test` runs them.
SLOW_FILES = ("test_bench.py", "test_bench_ray.py", "test_browser.py", "test_build.py", "test_concurrency.py",
              "test_edition.py", "test_edition_pages.py", "test_kill.py", "test_pdf.py", "test_ray.py",
              "test_zensical.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    if not config.pluginmanager.hasplugin("xdist"):
        return
    group_of = {name: group for group, names in SHARED_GROUPS.items() for name in names}
    uses_built_manual: dict[Path, bool] = {}
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            name = item.path.name
            if item.path not in uses_built_manual:
                uses_built_manual[item.path] = SHARES_THE_BUILT_MANUAL in item.path.read_text(encoding="utf-8")
            shared = SHARES_THE_BUILT_MANUAL if uses_built_manual[item.path] else name
            item.add_marker(pytest.mark.xdist_group(group_of.get(name, shared)))
