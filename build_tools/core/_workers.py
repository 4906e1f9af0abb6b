"""The local worker processes of the summary and drawing stages: forked from a fork server (a clean process,
unlike a fork of a build holding threads) that imported the stage's code once, not once per worker."""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

# This process's pools of threads, by name, with the process they were started in.
_THREADS: dict[str, tuple[int, ThreadPoolExecutor]] = {}


def threads(name: str, count: int) -> ThreadPoolExecutor:
    """This process's pool of `count` threads called `name`, started at its first use and kept: a thread's
    allocator keeps what it freed for the thread's next task (threads started afresh for each stream left their
    memory behind). A forked child starts its own (it has none of its parent's threads)."""
    started = _THREADS.get(name)
    if started is None or started[0] != os.getpid():
        started = _THREADS[name] = os.getpid(), ThreadPoolExecutor(max_workers=count, thread_name_prefix=name)
    return started[1]


# Below this many runs to read, starting worker processes costs more than it saves.
POOL_FROM = 24


def context(preload: Sequence[str]) -> multiprocessing.context.ForkServerContext:
    """The fork-server context, its server to import `preload` (unless one already runs: a build runs one)."""
    forkserver = multiprocessing.get_context("forkserver")
    forkserver.set_forkserver_preload(list(preload))
    return forkserver


def start_early(preload: Sequence[str], jobs: int) -> bool:
    """Start the fork server now when `jobs` runs are to be read in a pool of more than one worker (as the summary
    stage decides): its imports (pandas, pyarrow, pydantic: about a second) then run while this process makes
    its own, not after them. True when it was started."""
    if min(os.cpu_count() or 1, jobs) <= 1 or jobs < POOL_FROM:
        return False
    start_server(preload)
    return True


def start_server(preload: Sequence[str]) -> None:
    """The fork server started now, importing `preload` (a pool made later forks its workers from it)."""
    import multiprocessing.forkserver

    context(preload)
    multiprocessing.forkserver.ensure_running()
