"""Follow files that are still being written: each read from where the last read stopped.

A line is complete only when it ends in a newline (a writer may be mid-append): the piece after the last newline
waits for the rest. A file that shrank or was replaced (a new inode: rotated, or a restarted job writing afresh)
is read again once from its start. New files (a new hourly file, a new log) are taken up as they appear.

Every file is opened through `_files.open_regular`: a plain file inside the watched folder, opened without
waiting; one that is (or turns into) a FIFO, a device or a link out is refused with one line, and the watch goes on.
Memory is bounded whatever a file holds: a read takes READ_LIMIT bytes at most, and a line longer than
_files.LINE_LIMIT is skipped as it is read, never held whole.
"""

from __future__ import annotations

import os
import queue
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from build_tools.core._exceptions import InputProblem
from build_tools.core._files import LINE_LIMIT, open_regular

# What one read takes of a file at most: a file written faster than it is read is read on at once (Chunk.more),
# and memory stays bounded by this and by one line (_files.LINE_LIMIT), whatever the file holds: a mebibyte of
# empty lines is a million strings, some 60 MB.
READ_LIMIT = 1024 * 1024
BLOCK = 256 * 1024


@dataclass
class _Position:
    inode: int
    offset: int  # the bytes up to here were handed on as complete lines (or skipped: a line too long)
    restarts: int = 0
    skipping: bool = False  # inside a line too long to keep: what follows, to its newline, is dropped


@dataclass
class Chunk:
    """Complete lines newly read from one file; `restarted` when the file was read again from its start. A line
    longer than _files.LINE_LIMIT is None (skipped, never held whole); `more` when there is more to read now;
    `refused` what the file is instead of a plain file inside the watched folder (then no lines)."""

    path: Path
    lines: list[str | None]
    restarted: bool = False
    more: bool = False
    refused: str | None = None


def followed(path: Path) -> bool:
    """The files watch reads: a dump's metrics stream (flat or hourly) and meta.json, a run.yaml, logs, the lab's
    events, and what live_sources.py follows (TensorBoard event files, a wandb run's log, an MLflow file store)."""
    name = path.name
    if name in ("metrics.jsonl", "meta.json", "run.yaml"):
        return True
    if path.parent.name == "metrics" and name.endswith(".jsonl"):  # an hourly-split metrics stream
        return True
    if name == "events.jsonl" and path.parent.name == "lab":  # `manual record`'s events: a job_end ends the watch
        return True
    if name.endswith((".log", ".out", ".txt")):
        return True
    from build_tools.commands.watch.live_sources import followed as live  # TensorBoard, wandb, MLflow files

    return live(path)


@dataclass
class Follower:
    root: Path
    _positions: dict[Path, _Position] = field(default_factory=dict)
    _refused: dict[Path, str] = field(default_factory=dict)  # said once, until the file is readable again

    def _open(self, path: Path) -> tuple[int, os.stat_result] | Chunk | None:
        """The file opened (`_files.open_regular`: a plain file inside the watched folder, never waited on), a
        Chunk saying once what it is instead, or None when it is gone (its successor gets its own event)."""
        if not os.path.lexists(path):
            return None
        try:
            opened = open_regular(path, self.root)
        except InputProblem as error:
            if _dangling(path, self.root):  # a link to a file not there yet (wandb's debug-internal.log as a
                return None  # run starts) or gone: the file's own event reads it where it is
            if self._refused.get(path) == error.problem.message:
                return None
            self._refused[path] = error.problem.message
            self._positions.pop(path, None)  # once a plain file again, it is read from its start
            return Chunk(path, [], refused=error.problem.message)
        self._refused.pop(path, None)
        return opened

    def read_new(self, path: Path) -> Chunk | None:
        """The complete lines written to `path` since the last read (None when nothing new), at most READ_LIMIT
        bytes of them (then `more`)."""
        opened = self._open(path)
        if not isinstance(opened, tuple):
            return opened
        handle, status = opened
        try:
            return self._read_lines(path, handle, status)
        finally:
            os.close(handle)

    def _read_lines(self, path: Path, handle: int, status: os.stat_result) -> Chunk | None:
        known = self._positions.get(path)
        restarted = False
        if known is None:
            known = self._positions[path] = _Position(status.st_ino, 0)
        elif known.inode != status.st_ino or status.st_size < known.offset:
            known.inode, known.offset, known.skipping, restarted = status.st_ino, 0, False, True
            known.restarts += 1
        if status.st_size == known.offset and not restarted:
            return None
        lines: list[str | None] = []
        pending = b""  # the start of a line whose newline has not been read yet
        start = known.offset
        while known.offset - start < READ_LIMIT:  # each turn hands on a line or drops a long one's piece, or ends
            block = os.pread(handle, BLOCK, known.offset + len(pending))
            if not block:
                break
            pending += block
            *complete, pending = pending.split(b"\n")
            for line in complete:
                known.offset += len(line) + 1
                if known.skipping:
                    known.skipping = False  # the end of a line too long: it was said when it began
                elif len(line) > LINE_LIMIT:
                    lines.append(None)
                else:
                    lines.append(line.decode("utf-8", errors="replace"))
            if len(pending) > LINE_LIMIT:  # a line too long to keep, still without its end: dropped as it is read
                if not known.skipping:
                    lines.append(None)
                known.offset += len(pending)
                known.skipping, pending = True, b""
        more = known.offset - start >= READ_LIMIT
        if not lines and not restarted and not more:
            return None  # half a line: wait for the rest
        return Chunk(path, lines, restarted, more)

    def whole_file(self, path: Path) -> Chunk | None:
        """A file read whole (meta.json, run.yaml: written once, not line by line), when it changed: a Chunk
        without lines (the loader reads it, with its own checks), or one saying what it is instead of a plain
        file."""
        opened = self._open(path)
        if not isinstance(opened, tuple):
            return opened
        handle, status = opened
        os.close(handle)
        known = self._positions.get(path)
        if known is not None and known.inode == status.st_ino and known.offset == status.st_size:
            return None
        self._positions[path] = _Position(status.st_ino, status.st_size)
        return Chunk(path, [])

    def existing(self) -> Iterator[Path]:
        """The files already there when the watch starts, in a fixed order (metadata first, then by name); what is
        not a plain file is among them, to be refused with a line."""
        found = sorted((p for p in self.root.rglob("*") if not _is_folder(p) and followed(p)),
                       key=lambda p: (p.name not in ("meta.json", "run.yaml"), str(p)))
        yield from found


def _dangling(path: Path, root: Path) -> bool:
    """A link inside root to a file inside root that does not exist (a link loop, or one out, is refused)."""
    if not Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root)):
        return False
    try:
        os.stat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _is_folder(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


# The events that say something was written, made, moved or removed. A file opened or closed unwritten
# (watchdog's FileOpenedEvent, FileClosedNoWriteEvent) is a read: the watch's own reads among them, so that each
# read of run.yaml made two events that read it again, doubling without end, and the queue held nothing else (a
# job's files went unread). Two watches of one folder fed each other the same way.
WRITES: list[type[FileSystemEvent]] = [FileCreatedEvent, FileModifiedEvent, FileClosedEvent, FileMovedEvent,
                                       FileDeletedEvent, DirCreatedEvent, DirModifiedEvent, DirMovedEvent,
                                       DirDeletedEvent]
WRITE_KINDS = {kind.event_type for kind in WRITES}


class _Events(FileSystemEventHandler):
    def __init__(self, paths: queue.Queue[Path]) -> None:
        self._paths = paths

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in WRITE_KINDS:  # a read, not a write (an observer that does not filter)
            return
        if event.is_directory:
            if event.event_type == "created":  # a new folder (an hourly stream's first hour): its files
                self._paths.put(Path(os.fsdecode(event.src_path)))
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                path = Path(os.fsdecode(raw))
                if followed(path):
                    self._paths.put(path)


class Watcher:
    """watchdog's observer over the folder: the paths that changed, as they change."""

    def __init__(self, root: Path) -> None:
        # watchdog warns (a RuntimeWarning holding its whole watch table) when a new folder's watch is registered
        # twice, its folder event racing its recursive scan, as when wandb makes offline-run-*/logs: the same
        # callback is put back and nothing is lost. It reached the reader's terminal mid-watch.
        warnings.filterwarnings("ignore", message="Callback with id .* already exists for watch",
                                category=RuntimeWarning)
        self.paths: queue.Queue[Path] = queue.Queue()
        self._observer = Observer()
        self._observer.schedule(_Events(self.paths), str(root), recursive=True, event_filter=WRITES)

    def __enter__(self) -> Watcher:
        self._observer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._observer.stop()
        self._observer.join()

    def next_path(self, timeout: float) -> Path | None:
        try:
            return self.paths.get(timeout=timeout)
        except queue.Empty:
            return None
