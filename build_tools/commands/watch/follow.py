"""Follow files that are still being written: each read from where the last read stopped.

A line is complete only when it ends in a newline (a writer may be mid-append): the piece after the last newline
waits for the rest. A file that shrank or was replaced (a new inode: rotated, or a restarted job writing afresh)
is read again once from its start. New files (a new hourly file, a new log) are taken up as they appear.
"""

from __future__ import annotations

import os
import queue
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer


@dataclass
class _Position:
    inode: int
    offset: int  # the bytes up to here were handed on as complete lines
    restarts: int = 0


@dataclass
class Chunk:
    """Complete lines newly read from one file; `restarted` when the file was read again from its start."""

    path: Path
    lines: list[str]
    restarted: bool = False


def followed(path: Path) -> bool:
    """The files watch reads: a dump's metrics stream (flat or hourly) and meta.json, a run.yaml, logs, and
    what live_sources.py follows (TensorBoard event files, a wandb run's log, an MLflow file store)."""
    name = path.name
    if name in ("metrics.jsonl", "meta.json", "run.yaml"):
        return True
    if path.parent.name == "metrics" and name.endswith(".jsonl"):  # an hourly-split metrics stream
        return True
    if name.endswith((".log", ".out", ".txt")):
        return True
    from build_tools.commands.watch.live_sources import followed as live  # TensorBoard, wandb, MLflow files

    return live(path)


@dataclass
class Follower:
    root: Path
    _positions: dict[Path, _Position] = field(default_factory=dict)

    def read_new(self, path: Path) -> Chunk | None:
        """The complete lines written to `path` since the last read (None when nothing new)."""
        try:
            status = path.stat()
        except OSError:  # gone between the event and the read (rotated away): its successor gets its own event
            return None
        known = self._positions.get(path)
        restarted = False
        if known is None:
            known = self._positions[path] = _Position(status.st_ino, 0)
        elif known.inode != status.st_ino or status.st_size < known.offset:
            known.inode, known.offset, restarted = status.st_ino, 0, True
            known.restarts += 1
        if status.st_size == known.offset and not restarted:
            return None
        with path.open("rb") as handle:
            handle.seek(known.offset)
            data = handle.read()
        end = data.rfind(b"\n")
        if end < 0:
            return Chunk(path, [], restarted) if restarted else None  # half a line: wait for the rest
        known.offset += end + 1
        lines = data[:end].decode("utf-8", errors="replace").split("\n")
        return Chunk(path, lines, restarted)

    def whole_file(self, path: Path) -> Chunk | None:
        """A file read whole (meta.json, run.yaml: written once, not line by line), when it changed."""
        try:
            status = path.stat()
        except OSError:
            return None
        known = self._positions.get(path)
        if known is not None and known.inode == status.st_ino and known.offset == status.st_size:
            return None
        self._positions[path] = _Position(status.st_ino, status.st_size)
        return Chunk(path, [path.read_text(encoding="utf-8", errors="replace")])

    def existing(self) -> Iterator[Path]:
        """The files already there when the watch starts, in a fixed order (metadata first, then by name)."""
        found = sorted((p for p in self.root.rglob("*") if p.is_file() and followed(p)),
                       key=lambda p: (p.name not in ("meta.json", "run.yaml"), str(p)))
        yield from found


class _Events(FileSystemEventHandler):
    def __init__(self, paths: queue.Queue[Path]) -> None:
        self._paths = paths

    def on_any_event(self, event: FileSystemEvent) -> None:
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
        self._observer.schedule(_Events(self.paths), str(root), recursive=True)

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
