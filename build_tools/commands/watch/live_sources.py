"""What a job writes besides the dump and the log, followed as it grows: TensorBoard event files, a wandb run's log
(`run-<id>.wandb`, offline or online: wandb writes it either way) and an MLflow file store.

Each is read with its batch reader's own parsing (build_tools/ingest/sources/: tensorboard.py, wandb.py,
mlflow.py), then checked by the same rules (`_common.checked`), so a value watch judges is the value `compare`
and `make` read from the finished file:

- TensorBoard: each TFRecord whose length and CRC are whole, from where the last read stopped; a record cut off
  at the end is a writer mid-append and waits for the rest (a record that fails its CRC is damage: a warning, and
  the file is no longer followed).
- MLflow: each metric file (`metrics/<key>`) is appended a line per value; complete lines are read as they
  come, by the reader's line rule, at the key the reader gives the file.
- wandb: its log is read only by wandb's own reader (`wandb leet inspect`), which reads a whole file: each time
  the file grew, it reads it again and takes the history records it had not seen (by their record number).

A form that cannot be followed is said once, in one line, and left: a gzipped file (a finished copy, for
`compare`), an MLflow database store (only mlflow reads it), a wandb log where wandb is not installed.
"""

from __future__ import annotations

import importlib.util
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from build_tools.commands.watch.records import Value
from build_tools.core._exceptions import Problem, display_path
from build_tools.ingest.sources import FILES, mlflow, tensorboard, wandb
from build_tools.ingest.sources._common import RENAMED, STEP_KEYS, Found, checked, logged_key
from build_tools.ingest.sources._json import loads

# TFRecord framing: an 8-byte length and its 4-byte CRC before the payload, the payload's 4-byte CRC after it.
_FRAME = 12 + 4
# What tensorboard.records says of a stream that stops inside a record: a writer mid-append, not damage.
_UNFINISHED = ("ends inside a record's length", "ends inside a record")


def form_of(path: Path) -> str | None:
    """Which live reader follows `path`: tensorboard, wandb, mlflow, or None for a file none of them reads."""
    name = path.name
    if FILES["tensorboard"].search(name):
        return "tensorboard"
    if name.startswith("run-") and name.removesuffix(".gz").endswith(".wandb"):
        return "wandb"
    if mlflow.DATABASE.search(name.removesuffix(".gz")) and "mlflow" in name.lower():
        return "mlflow"  # a database store: said once not to be followable
    folder = mlflow.run_folder(path) if "metrics" in path.parts else None
    if folder is not None and folder / "metrics" in path.parents:
        return "mlflow"
    return None


def followed(path: Path) -> bool:
    return form_of(path) is not None


@dataclass
class _Offset:
    inode: int
    offset: int = 0  # the bytes up to here were whole records (lines), read
    records: int = 0  # how many (a record's number stands for a line in messages)
    size: int = -1  # the file's size when last read: not opened again until it changes (reading it is an event too)


@dataclass
class LiveSources:
    """The positions of every live file; `take` returns the values newly written to one (None: not a live form),
    and `grew` says whether it read anything new (the watch's idle time counts from the last growth)."""

    warn: Callable[[str], None]
    grew: bool = False
    _tensorboard: dict[Path, _Offset] = field(default_factory=dict)
    _tags: dict[Path, dict[str, str]] = field(default_factory=dict)  # tag -> key, worked out once per file
    _mlflow: dict[Path, _Offset] = field(default_factory=dict)
    _wandb: dict[Path, tuple[int, int, int]] = field(default_factory=dict)  # inode, size read, last record taken
    _rows: dict[Path, wandb._Rows] = field(default_factory=dict)  # the step keys a log's rows held so far
    _left: set[Path] = field(default_factory=set)  # files said once not to be followable
    _said: set[str] = field(default_factory=set)  # a reader's warning is said once, not at every piece of a file

    def take(self, path: Path) -> list[Value] | None:
        form = form_of(path)
        if form is None:
            return None
        self.grew = False
        if path in self._left:
            return []
        if path.name.endswith(".gz"):
            return self._leave(path, f"a gzipped {form} file is a finished copy: `manual compare` reads it")
        try:
            if not stat.S_ISREG(path.lstat().st_mode):  # a link, a FIFO, a device: never opened (a FIFO blocks)
                return self._leave(path, "not a plain file (a link, a FIFO or a device); only a job's own files are "
                                   "read")
            return {"tensorboard": self._tensorboard_records, "wandb": self._wandb_history,
                    "mlflow": self._mlflow_lines}[form](path)
        except FileNotFoundError:  # gone between the event and the read: its successor has its own event
            return []

    def _leave(self, path: Path, why: str) -> list[Value]:
        self._left.add(path)
        self.warn(f"{display_path(path)}: cannot be followed: {why}")
        return []

    def _found(self, found: Found, problems: list[Problem], warnings: list[str]) -> list[Value]:
        """The values a batch reader's Found holds after its checks; its problems and warnings said."""
        checked(found, problems, warnings)
        for line in [*map(str, problems), *warnings]:
            if line not in self._said:
                self._said.add(line)
                self.warn(line)
        return list(_values(found))

    # --- TensorBoard ----------------------------------------------------------------------------------------

    def _tensorboard_records(self, path: Path) -> list[Value]:
        status = path.stat()
        known = self._tensorboard.get(path)
        if known is None or known.inode != status.st_ino or status.st_size < known.offset:
            known = self._tensorboard[path] = _Offset(status.st_ino)  # new, or written afresh: from its start
            self._tags[path] = {}
        if status.st_size == known.size:
            return []
        known.size, self.grew = status.st_size, True
        with path.open("rb") as handle:
            handle.seek(known.offset)
            data = handle.read()
        where = display_path(path)
        found, problems, warnings = Found("tensorboard", unit="record"), list[Problem](), list[str]()
        for payload in self._whole_records(path, data, known):
            self._event(payload, where, known.records, found, warnings, self._tags[path])
        return self._found(found, problems, warnings)

    def _whole_records(self, path: Path, data: bytes, known: _Offset) -> Iterator[bytes]:
        """Each whole record of `data` (the bytes after `known.offset`), moving the offset past it."""
        try:
            for payload in tensorboard.records(data):
                known.offset += _FRAME + len(payload)
                known.records += 1
                yield payload
        except tensorboard.Damaged as damage:
            if damage.why not in _UNFINISHED:
                self._leave(path, f"{damage.why} after {known.records} whole record(s) (a damaged file); `manual "
                            "compare` reads what it holds")

    def _event(self, payload: bytes, where: str, index: int, found: Found, warnings: list[str],
               keys: dict[str, str]) -> None:
        from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
        from tensorboard.compat.proto.event_pb2 import Event

        try:
            event = Event.FromString(payload)
        except DecodeError:
            warnings.append(f"{where}: record {index}: not a TensorBoard event; skipped")
            return
        if event.HasField("summary"):
            tensorboard._read_event(event, where, index, found, keys, warnings)

    # --- MLflow ---------------------------------------------------------------------------------------------

    def _mlflow_lines(self, path: Path) -> list[Value]:
        if mlflow.DATABASE.search(path.name):
            return self._leave(path, f"an MLflow database store, which only mlflow reads: {mlflow.FILE_STORE_HINT}")
        folder = mlflow.run_folder(path)
        if folder is None:
            return []
        status = path.stat()
        known = self._mlflow.get(path)
        if known is None or known.inode != status.st_ino or status.st_size < known.offset:
            known = self._mlflow[path] = _Offset(status.st_ino)
        if status.st_size == known.size:
            return []
        known.size, self.grew = status.st_size, True
        with path.open("rb") as handle:
            handle.seek(known.offset)
            data = handle.read()
        end = data.rfind(b"\n")
        if end < 0:
            return []  # half a line: wait for the rest
        lines = data[:end].decode("utf-8", errors="replace").split("\n")
        first, known.offset, known.records = known.records, known.offset + end + 1, known.records + len(lines)
        metrics = folder / "metrics"
        written_key = "/".join([*path.relative_to(metrics).parent.parts, path.name])
        where = display_path(path)
        found, problems, warnings = Found("mlflow"), list[Problem](), list[str]()
        key = logged_key(written_key, mlflow.miles_sanitized, warnings, where, "Miles' MLflow backend")
        mlflow._read_metric(key, lines, where, found, problems)
        for record in found.streams.get("metrics", []):  # the line in the file, not in this piece of it
            record.line += first
        return self._found(found, [replace(p, line=None if p.line is None else p.line + first) for p in problems],
                           warnings)

    # --- wandb ----------------------------------------------------------------------------------------------

    def _wandb_history(self, path: Path) -> list[Value]:
        if importlib.util.find_spec("wandb") is None:
            return self._leave(path, "a wandb run's log, which only wandb reads, and wandb is not installed here: "
                               f"install it (pip install {wandb.WANDB_PIN}) to follow it")
        status = path.stat()
        inode, read, taken = self._wandb.get(path, (status.st_ino, -1, 0))
        if inode != status.st_ino or status.st_size < read:  # written afresh (a restarted job): from its start
            read, taken = -1, 0
            self._rows.pop(path, None)
        if status.st_size == read:
            return []
        self.grew = True
        result = wandb._wandb_reader(path, b"")  # the file as it is now (no copy: wandb reads it by its path)
        self._wandb[path] = (status.st_ino, status.st_size, taken)
        if result.returncode != 0:
            return []  # not readable yet (wandb writes the log's header as the run starts): the next growth tells
        where = display_path(path)
        found, problems, warnings = Found("wandb"), list[Problem](), list[str]()
        rows = self._rows.setdefault(path, wandb._Rows(where))
        newest = taken
        for number, item in _history(result.stdout):
            if number > taken:
                rows.keys |= {key for key in item if key in STEP_KEYS}
                wandb._read_row(wandb._json_row(item, where, number, warnings), number, found, rows, warnings)
                newest = max(newest, number)
        self._wandb[path] = (status.st_ino, status.st_size, newest)
        # wandb's own warnings (the log's end cut off) are left out: a log still written always ends so.
        return self._found(found, problems, warnings)


def _history(stdout: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(record number, item) of each history record `wandb leet inspect --json` printed, as wandb.py reads them."""
    for text in stdout.splitlines():
        doc = loads(text) if text.startswith("{") else None
        if isinstance(doc, dict) and doc.get("type") == "history" and isinstance(doc.get("history"), dict):
            item = doc["history"].get("item")
            yield int(doc.get("num") or 0), item if isinstance(item, dict) else {}


def _values(found: Found) -> Iterator[Value]:
    """A Found's metric values as watch judges them: finite numbers, at their step key and step, under today's
    name (as records.py gives a dump's)."""
    import math

    for record in found.streams.get("metrics", []):
        data = record.data
        for key, number in data["metrics"].items():
            if key in STEP_KEYS or isinstance(number, bool) or not isinstance(number, int | float):
                continue
            if math.isfinite(number):
                yield Value(data["step_key"], data["step"], RENAMED.get(key, key), float(number))
