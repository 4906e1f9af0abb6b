"""One build at a time in a project folder, one publish at a time in a repository: locks from `filelock`.

A second build waits for the first, saying so in one line, then finds the site up to date or rebuilds it (one
whose site is current before it waits says so at once: cli._cmd_build);
the lock is the operating system's (flock), so a killed build never leaves it held.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from build_tools.core._exceptions import display_path

LOCK_FILE = ".lock"  # in build/
_held: dict[Path, int] = {}
_guard = threading.Lock()


@contextmanager
def hold(lock_file: Path, waiting: Callable[[str], None], what: str) -> Iterator[None]:
    """Hold lock_file for the block; re-entrant within this process (a publish builds under its own lock)."""
    lock_file = lock_file.resolve()
    with _guard:
        depth = _held.get(lock_file, 0)
        if depth:
            _held[lock_file] = depth + 1
    if depth:
        try:
            yield
        finally:
            with _guard:
                _held[lock_file] -= 1
        return
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(lock_file), thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        waiting(f"waiting: {what} is running in this project ({display_path(lock_file)} is held by another "
                "process); this one starts when it ends")
        lock.acquire()
    with _guard:
        _held[lock_file] = 1
    try:
        yield
    finally:
        with _guard:
            _held.pop(lock_file, None)
        lock.release()


def build_lock(build_dir: Path, waiting: Callable[[str], None]) -> AbstractContextManager[None]:
    """The lock of a project folder's outputs (build/, site/): one build at a time."""
    return hold(build_dir / LOCK_FILE, waiting, "another build")

