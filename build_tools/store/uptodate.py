"""Whether site/, or the last check's report, is still that of the current inputs, decided before any heavy
import.

A no-op `make` or `make check` should cost no more than hashing the inputs: every file the build reads (runs,
chapters, figure code, templates, theme overrides, the build's own code), the Python and library versions
(`fingerprint`) and the build's settings (its date, engine, address, whether it is an edition's). A run counts
by its input hash, which the summary stage's memo keeps while its files keep their names, sizes, times (mtime
and ctime), inodes and devices (`run_hash`): a thousand unchanged runs are stat()ed, not read. The key is
written after a successful build (or check) and compared before the next one. An edition's build (settings
that trust no earlier state) neither reads nor writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from build_tools.core._files import loose_files, plain_files, scan_runs
from build_tools.core._layout import PROJECT_INPUTS, Layout
from build_tools.core._settings import Settings
from build_tools.core._staging import write_atomic

from . import fingerprint
from .run_hash import input_hash, read_memo

if TYPE_CHECKING:
    from build_tools.core._types import RunsRead  # its import (a dozen dataclasses) is not on the no-op path

KEY_FILE = "inputs.key"
# The last check that succeeded without a warning: its key (its inputs and whether it summarised every run),
# and what it printed. A check with warnings is always run again, so that they are always shown.
CHECK_KEY_FILE, CHECK_OUTPUT = "check.key", "check.out"
CODE = Path(__file__).resolve().parent.parent  # build_tools/


def inputs_key(layout: Layout, settings: Settings, read: RunsRead | None = None) -> str:
    return _inputs(layout, settings, read).hexdigest()


def _inputs(layout: Layout, settings: Settings, read: RunsRead | None = None) -> fingerprint.Key:
    """The key of the inputs; `read`: what the build that just ran found of runs/, taken instead of listing it
    again (the key is the same as from a fresh listing while nothing changed)."""
    key = fingerprint.Key("inputs").environment()  # any library's version: the stages' own keys tell what it changes
    # The date the outputs carry, a build for a published edition (edition selector), the served address (sitemap)
    # and the site engine change the pages.
    key.add(f"epoch={settings.epoch}", f"edition={settings.edition}", f"site_url={settings.site_url}",
            f"engine={settings.engine}", f"prove={settings.prove}")
    for base in [CODE, *(layout.root / name for name in PROJECT_INPUTS)]:
        if base == layout.runs:
            _add_runs(key, layout, read)
            continue
        # Regular files only, links never followed: a FIFO or a link out of the tree is the build's to refuse.
        files = plain_files(base) if base.exists() else []
        key.files(base.parent, [path for path in files if "__pycache__" not in path.parts])
    return key


def _add_runs(key: fingerprint.Key, layout: Layout, read: RunsRead | None) -> None:
    """Each run folder by its input hash (the one `read` holds, else from the summary stage's memo when its files
    are unchanged), any other file under runs/ by its bytes."""
    runs = layout.runs
    if not runs.is_dir():
        return
    listings = read.listings if read is not None else scan_runs(runs, runs.resolve().parent)[1]  # as load walks it
    known = read.digests if read is not None else {}
    key.files(runs.parent, [runs / name for name in loose_files(runs)])
    # The memo is read only for a run `read` did not hash (a folder the loader skips, such as __pycache__).
    memo = {} if known.keys() >= listings.keys() else read_memo(layout.cache / "summaries") or {}
    root = runs.resolve()
    for run_id in sorted(listings):
        digest = known.get(run_id) or input_hash(runs / run_id, memo, listings[run_id], key=f"{root}/{run_id}")
        key.named(f"{runs.name}/{run_id}/", digest)


def is_current(layout: Layout, settings: Settings) -> bool:
    """True when the last successful build had exactly these inputs and its outputs are all there. Never for a
    build that trusts no earlier state (an edition's)."""
    if not settings.trust_state:
        return False
    recorded = _recorded(layout.build / KEY_FILE, layout.site / "index.html", *_reports(layout))
    return recorded is not None and recorded == inputs_key(layout, settings)


def _recorded(key_file: Path, *outputs: Path) -> str | None:
    """The key recorded in key_file, when its outputs are all there."""
    recorded = fingerprint.recorded(key_file)
    return recorded if recorded is not None and all(path.is_file() for path in outputs) else None


def _reports(layout: Layout) -> tuple[Path, Path]:
    return layout.build / "claims.json", layout.build / "claims.junit.xml"


def record(layout: Layout, settings: Settings, read: RunsRead | None = None) -> None:
    """Remember the inputs of the build that just succeeded (`read`: what it found of runs/)."""
    fingerprint.remember(layout.build / KEY_FILE, _inputs(layout, settings, read))


def forget(layout: Layout) -> None:
    """A build is starting: until it succeeds, its outputs are not current."""
    (layout.build / KEY_FILE).unlink(missing_ok=True)


def _check_key(layout: Layout, settings: Settings, read: RunsRead | None = None) -> fingerprint.Key:
    return fingerprint.Key("check").named("inputs", inputs_key(layout, settings, read)).add(
        f"all_runs={settings.all_runs}")


@dataclass(frozen=True)
class LastCheck:
    """What the last recorded check printed, when it had exactly these inputs; and the key of these inputs when
    it was computed (there was a check to compare with), for recording the check about to run."""

    report: str | None
    key: fingerprint.Key | None


def last_check(layout: Layout, settings: Settings) -> LastCheck:
    """The last check's report when it had exactly these inputs; never for a check that trusts no earlier state."""
    if not settings.trust_state:
        return LastCheck(None, None)
    recorded = _recorded(layout.build / CHECK_KEY_FILE, layout.build / CHECK_OUTPUT, *_reports(layout))
    if recorded is None:  # no check to compare with: its inputs are not hashed now (a cold cache reads them all)
        return LastCheck(None, None)
    key = _check_key(layout, settings)
    try:
        report = (layout.build / CHECK_OUTPUT).read_text(encoding="utf-8") if recorded == key.hexdigest() else None
    except (OSError, UnicodeDecodeError):
        report = None
    return LastCheck(report, key)


def record_check(layout: Layout, settings: Settings, output: str, key: fingerprint.Key | None,
                 read: RunsRead | None = None) -> None:
    """Remember a check that just succeeded without a warning, and what it printed (the key last): under the key
    of its inputs as they were before it ran, when that was computed (a run changed meanwhile is checked again
    next time), else under the key of them as the check found them (`read`: its listing of runs/ and each run's
    input hash), else as they are now."""
    write_atomic(layout.build / CHECK_OUTPUT, output.encode("utf-8"))
    fingerprint.remember(layout.build / CHECK_KEY_FILE, key or _check_key(layout, settings, read))


def forget_check(layout: Layout) -> None:
    """A check or build is starting (its reports will be written again): the last check's is not current."""
    (layout.build / CHECK_KEY_FILE).unlink(missing_ok=True)
