"""Write an output folder as a whole or not at all: a failed stage never leaves half-written files.

Every temporary name carries the writing process's id (`.site-<pid>-<random>`, `.claims.json.<pid>-<random>.tmp`):
two processes never share one, and `sweep` can tell the leftovers of a killed process (its id no longer
runs) from the work of a live one.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from build_tools.core._layout import Layout

# .site-<pid>-<random>, .site-old-<pid>-<random>, .publish-<pid>-<random>, runs/.add-run-<pid>-<random>;
# files .name.<pid>-<random>[.svg].tmp
_TEMPORARY = re.compile(r"^\.[^/]*?-(?:old-)?([0-9]+)-[A-Za-z0-9_]+$"
                        r"|^\..*\.([0-9]+)-[A-Za-z0-9_]+(?:\.[A-Za-z0-9]+)?\.tmp$")


# The name of `add-run`'s staging folder in runs/ (never a run id: those start with a letter or digit).
ADD_RUN = "add-run"


def temporary_prefix(name: str) -> str:
    """The start of a temporary name for name, owned by this process."""
    return f".{name}-{os.getpid()}-"


# How many random names `new_folder` and `new_file` try before giving up (tempfile tries as many).
_ATTEMPTS = 100


def new_folder(parent: Path, prefix: str) -> Path:
    """A new folder in parent named prefix and 8 random characters, as tempfile.mkdtemp makes, but with the mode
    the user's umask gives (0777 & ~umask): mkdtemp's 0700 would become a site/ no web server could serve."""
    for _ in range(_ATTEMPTS):
        path = parent / f"{prefix}{secrets.token_hex(4)}"
        try:
            path.mkdir(mode=0o777)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no unused name {prefix}* in {parent}")


def new_file(parent: Path, prefix: str, suffix: str = "") -> Path:
    """A new empty file in parent, as tempfile.mkstemp makes, with the mode the umask gives (0666 & ~umask, where
    mkstemp's is 0600)."""
    for _ in range(_ATTEMPTS):
        path = parent / f"{prefix}{secrets.token_hex(4)}{suffix}"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no unused name {prefix}*{suffix} in {parent}")


@contextmanager
def staging(target: Path, *, name: str | None = None, replace: bool = True) -> Iterator[Path]:
    """Yield a temporary sibling of target (`.<name>-<pid>-<random>`, name defaulting to target's); it becomes
    target only when the block succeeded. `replace=False` never replaces a target that holds anything: the
    rename fails (OSError) and the temporary folder is removed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = new_folder(target.parent, temporary_prefix(name or target.name))
    try:
        yield tmp
        checkpoint("staging-rename")
        if not replace:
            # One rename: a non-empty target is never replaced (rename(2) fails), and a kill before it leaves
            # only the temporary folder, which `sweep` removes.
            tmp.rename(target)
            return
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # Two renames: a kill between them leaves no target but a complete .<name>-old-*, which `sweep` puts back.
    old = new_folder(target.parent, temporary_prefix(f"{target.name}-old"))
    if target.exists():
        old.rmdir()
        target.rename(old)
        checkpoint("staging-swap")
    tmp.rename(target)
    shutil.rmtree(old, ignore_errors=True)


# A test hook: the kill test (tests/test_kill.py) names a point, `point` or `point:TERM` (or `:INT`), and the
# process sends itself that signal there (SIGKILL by default: no cleanup of any kind, as `kill -9` at the worst
# moment). Unset in every ordinary run.
KILL_AT = "MANUAL_TEST_KILL_AT"


def checkpoint(name: str) -> None:
    """Send this process the signal the kill test asked for at this point; nothing otherwise."""
    point, _, signame = os.environ.get(KILL_AT, "").partition(":")
    if point == name:
        os.kill(os.getpid(), getattr(signal, f"SIG{signame or 'KILL'}"))


def clean_leftovers(root: Path) -> list[Path]:
    """Remove the staging folders and temporary files killed builds left in the project (hold the build lock)."""
    # In the project folder only site/'s staging folders are ours; everything in build/ is.
    # In runs/, only the staging folders of `add-run` (.add-run-<pid>-<random>).
    return [*sweep(root, legacy=("site",), only=("site",)),
            *sweep(Layout(root).build, recursive=True, legacy=("docs",)),
            *sweep(Layout(root).runs, only=(ADD_RUN,))]


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a uniquely named temporary file beside path (`.name.<pid>-<random>.tmp`) for the block to write; it
    replaces path in one rename when the block succeeds. A reader never sees half a file, and a failure or a
    kill at any moment leaves path as it was (the one way a file is replaced; `staging` replaces a folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = new_file(path.parent, f".{path.name}.{os.getpid()}-", ".tmp")
    try:
        yield tmp
        checkpoint("atomic-write")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: bytes) -> None:
    """Write data to path whole or not at all (`atomic_file`)."""
    with atomic_file(path) as tmp:
        tmp.write_bytes(data)


def process_alive(pid: int) -> bool:
    """Whether the process runs: this one does; one that ended but was not reaped yet (a zombie) has ended."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return status != "Z"


def _stale(path: Path, legacy: tuple[str, ...], only: tuple[str, ...] | None) -> bool:
    if only is not None and not path.name.startswith(tuple(f".{name}-" for name in only)):
        return False
    match = _TEMPORARY.match(path.name)
    if match:
        return not process_alive(int(match[1] or match[2]))
    # Staging folders of builds before names carried a process id: .site-<8 random characters>.
    return any(re.fullmatch(rf"\.{re.escape(name)}-[a-z0-9_]{{8}}", path.name) for name in legacy)


def sweep(folder: Path, *, recursive: bool = False, legacy: tuple[str, ...] = (),
          only: tuple[str, ...] | None = None) -> list[Path]:
    """Remove what killed processes left in folder (and, when recursive, below it); returns what was removed.

    A target that a kill left missing between the two renames of `staging` is first put back from its
    complete `.<name>-old-*` copy, so the site is as it was. Call it only while holding the project's lock
    when legacy names (leftovers without a process id) are given. `only` limits it to the temporary names
    of those targets (`.site-*`), in a folder that holds other people's files too.
    """
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for where, dirs, files in os.walk(folder):
        here = Path(where)
        # Every temporary name starts with '.': the thousands of other files (summaries of a thousand runs) are
        # passed over by name alone.
        for name in sorted(name for name in [*dirs, *files] if name.startswith(".")):
            path = here / name
            if not _stale(path, legacy, only):
                continue
            old = re.match(r"^\.(.+)-old-[0-9]+-[A-Za-z0-9_]+$", name)
            if old and path.is_dir() and any(path.iterdir()) and not (here / old[1]).exists():
                path.rename(here / old[1])
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
        # Never descend into temporary folders (a live one belongs to its process) unless asked to recurse.
        dirs[:] = [d for d in dirs if recursive and not d.startswith(".")]
    return removed
