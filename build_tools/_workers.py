"""The local worker processes of the summary and drawing stages: forked from a fork server (a clean process,
unlike a fork of a build holding threads) that imported the stage's code once, not once per worker."""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
from collections.abc import Sequence
from pathlib import Path

# Below this many runs to read, starting worker processes costs more than it saves.
POOL_FROM = 24


def context(preload: Sequence[str]) -> multiprocessing.context.ForkServerContext:
    """The fork-server context, its server to import `preload` (unless one already runs: a build runs one)."""
    forkserver = multiprocessing.get_context("forkserver")
    forkserver.set_forkserver_preload(list(preload))
    return forkserver


def start_early(preload: Sequence[str], runs: Path, cache: Path) -> bool:
    """Start the fork server now, before this process imports the stage's code itself, when a check is to read
    many runs afresh: nothing cached under `cache` (a first or `make clean` check), at least POOL_FROM folders in
    `runs`, and more than one core. The server's imports (about 1.5 CPU seconds) then run beside this process's
    own, not after them. True when it was started."""
    if (os.cpu_count() or 1) <= 1 or cache.exists():
        return False
    try:
        with os.scandir(runs) as entries:
            folders = sum(entry.is_dir(follow_symlinks=False) for entry in entries)
    except OSError:  # the check words what is wrong with runs/
        return False
    if folders < POOL_FROM:
        return False
    import multiprocessing.forkserver

    context(preload)
    multiprocessing.forkserver.ensure_running()
    return True
