"""`make serve`'s rebuilds: the last summarise_runs of this process, served again when nothing it read changed.

A chapter edit rebuilds the site, but runs/ is as it was: walking it (which a rebuild must do, to know) finds every
file with the stats it had, and the cache files the last call wrote are as it left them. Then the summaries, the
validated runs, the input hashes and the warnings are those the last call returned, and reading the memo of input
hashes and validated.json again, replaying a thousand records and opening the summarised runs' cache entries would
make the same objects at a third of a second's cost (1,000 runs).

Kept only where the build says (`make serve`, which trusts its state; never an edition's build, which trusts
none). Stats stand for content only where no write can hide behind them (git's "racily clean" entries): a file
changed at most a clock tick before the call started could have been written again, its size and times the same,
after the call read it; such an outcome is not kept. A file changed earlier that is written after the call started
gets a later ctime, which no user can set back. The cache's files are taken by the stats the call left them with:
only a build writes them, under the build lock this call holds, so no other write can fall within its tick.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.core._files import FileStat, identity
from build_tools.core._types import RunSummary, ValidatedRun
from build_tools.store import summary_cache
from build_tools.store.run_hash import MEMO

# Beyond the file system's clock tick (its times are the kernel's coarse clock: 1 to 10 ms behind).
TICK_NS = 50_000_000


@dataclass(frozen=True)
class Outcome:
    """What a summarise_runs returned and said: its summaries, the runs it only validated, each run's input hash,
    and the warnings it added."""

    summaries: dict[str, RunSummary]
    validated: dict[str, ValidatedRun]
    digests: dict[str, str]
    warnings: list[str]


_last: tuple[tuple[Any, ...], Outcome] | None = None
now = time.time_ns  # the clock a call's start is read from


def key(runs_dir: Path, cache_dir: Path | None, folders: list[Path], listings: dict[str, list[FileStat]],
        asked: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What a call read: the walk of runs/ (its folders, each file's stats), the cache's files as they stand now,
    and what it was asked (`asked`: the runs wanted, the edition's date); None when nothing is cached."""
    if cache_dir is None:
        return None
    stats: list[tuple[int, int, int, int, int] | None] = []
    for path in (cache_dir, cache_dir / MEMO, cache_dir / summary_cache.VALIDATED):
        try:
            stats.append(identity(os.stat(path)))
        except FileNotFoundError:
            stats.append(None)
        except OSError:
            return None
    listed = tuple((name, tuple(files)) for name, files in sorted(listings.items()))
    return str(runs_dir.resolve()), str(cache_dir), tuple(path.name for path in folders), listed, tuple(stats), asked


def served(found: tuple[Any, ...] | None) -> Outcome | None:
    """The last call's outcome when it read what `found` describes."""
    return _last[1] if found is not None and _last is not None and _last[0] == found else None


def keep(found: tuple[Any, ...] | None, outcome: Outcome, started: int) -> None:
    """Remember a call's outcome with what it read (`found`, its cache files' stats taken after its writes), unless
    a run's file changed too near the call's start (`started`, from now()) to be told apart by its stats."""
    global _last
    _last = None if found is None or _newest(found) >= started - TICK_NS else (found, outcome)


def forget() -> None:
    global _last
    _last = None


def _newest(found: tuple[Any, ...]) -> int:
    """The latest mtime or ctime of a run's file in a key (ns)."""
    listed = found[3]
    return max((max(file[2], file[3]) for _, files in listed for file in files), default=0)


def asked(wanted: Any, latest: dt.date | None) -> tuple[Any, ...]:
    return wanted, latest


class Held:
    """make serve's rebuilds, run by run: each summary and validated run the last call made, by its run's input hash
    (its files' content and the code that reads them). A run whose hash is unchanged is the same summary, its
    tables decoded once for the session, and the same validated run, its facts taken once; a call that reads the
    runs again (one run.yaml retitled) takes every other run from here. What a call did not use is let go."""

    def __init__(self) -> None:
        self._summaries: dict[tuple[str, str], RunSummary] = {}
        self._validated: dict[tuple[str, str, tuple[str, ...]], ValidatedRun] = {}
        self._used: set[tuple[Any, ...]] = set()

    def summary(self, run_id: str, digest: str) -> RunSummary | None:
        self._used.add((run_id, digest))
        return self._summaries.get((run_id, digest))

    def hold_summary(self, run_id: str, digest: str, summary: RunSummary) -> RunSummary:
        self._summaries[run_id, digest] = summary
        self._used.add((run_id, digest))
        return summary

    def validated(self, run_id: str, digest: str, metrics: tuple[str, ...]) -> ValidatedRun | None:
        self._used.add((run_id, digest, metrics))
        return self._validated.get((run_id, digest, metrics))

    def hold_validated(self, run_id: str, digest: str, metrics: tuple[str, ...], run: ValidatedRun) -> ValidatedRun:
        self._validated[run_id, digest, metrics] = run
        self._used.add((run_id, digest, metrics))
        return run

    def let_go_of_unused(self) -> None:
        self._summaries = {key: value for key, value in self._summaries.items() if key in self._used}
        self._validated = {key: value for key, value in self._validated.items() if key in self._used}
        self._used = set()


held = Held()
