"""Stage 1: load every run directory under runs/, in every form Miles writes, and validate it.

Every file is checked against its schema (build_tools/ingest/schemas.py). All problems of all runs are
collected; the stage then fails once with the whole list.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime as dt
import itertools
import json
import math
import os
import re
import stat
import zlib
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from isal import igzip, isal_zlib

from build_tools.core import _workers
from build_tools.core._exceptions import InputProblem, Problem, RunDataError, display_path
from build_tools.core._files import (
    STREAM_LIMIT,
    FileStat,
    by_name,
    check_tree,
    check_utf8,
    decode_utf8,
    open_input,
    read_bytes,
    read_small,
    read_text,
    scan_runs,
)
from build_tools.core._layout import DASHBOARD_DOCUMENTS, DASHBOARD_STREAMS, JSONL, LAB_STREAMS, PARTITIONED
from build_tools.core._types import Columns, Record, RunData
from build_tools.core._yaml import parse_yaml
from build_tools.ingest import _columnar, schemas

RUN_ID = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
PARTITION = re.compile(r"^(?P<hour>[0-9]{8}_[0-9]{2})\.jsonl(\.gz)?$")
LAB_ONLY = "{}: only lab/, no Miles output (a dashboard dump, a log, ...): the run has no steps"
MAX_JSON_DEPTH = _columnar.MAX_JSON_DEPTH
# A run's records may start a little before the day its run.yaml names (a job launched before midnight).
DATE_SLACK = dt.timedelta(days=1)


def run_folders(runs_dir: Path, problems: list[Problem],
                listings: dict[str, list[FileStat]] | None = None) -> list[Path]:
    """The run directories under runs_dir, after checking that nothing in it leads outside the project.

    `listings`, when given, receives the plain files of each run folder found in that same walk (paths
    relative to the run folder, sizes, times, inodes): what a warm check compares instead of reading."""
    if not runs_dir.is_dir():
        problems.append(Problem(display_path(runs_dir), None, None, "no runs folder"))
        return []
    found, listed = scan_runs(runs_dir, runs_dir.resolve().parent)
    problems += found
    if listings is not None:
        listings.update(listed)
    bad = {Path(p.file) for p in problems}
    folders = [path for path in sorted(runs_dir.iterdir())
               if path.is_dir() and not (bad and Path(display_path(path)) in bad) and path.name != "__pycache__"]
    if not folders and not problems:
        problems.append(Problem(display_path(runs_dir), None, None, "no run directories found"))
    return folders


def load_runs(runs_dir: Path) -> list[RunData]:
    """Load every run under runs_dir; raise RunDataError listing every problem found in any of them."""
    problems: list[Problem] = []
    runs = [load_run(path, problems) for path in run_folders(runs_dir, problems)]
    if problems:
        raise RunDataError(problems)
    return runs


# Called with a run and the name of a sampled stream (_columnar.FLAT_STREAMS) as soon as the stream is read whole:
# summary._read_run makes its series and writes it to the cache entry there and then, so that one stream's
# samples at a time are in memory, not every stream's (the hook takes the stream: run.taken).
SampledHook = Callable[[RunData, str], None]


def load_run(root: Path, problems: list[Problem], *, keep: bool = True, columns_from: float | None = None,
             on_sampled: SampledHook | None = None) -> RunData:
    """Load one run directory, appending what is wrong with it to problems. Its streams are reached through
    `records` (every record) whichever reader read them; a run with other sources than the dump has its metrics
    and phases as records (sources.merge checks each against the other sources'). `keep=False` is for a run
    only validated: every line is checked, but of a sampled stream (_columnar.FLAT_STREAMS) only the time of its
    last sample is kept (memory bounded by a batch, not by the run's hours of telemetry). `columns_from`: the
    bytes of a stream from which it is read as columns (None: _columnar.FAST_FROM_BYTES; 0: every stream that
    can be; math.inf: none), the same records and problems either way. `on_sampled` (SampledHook) is called for
    each sampled stream as it is read while the run has no problem, in a run with no other sources than the dump
    (theirs are merged into the streams after)."""
    run_id = root.name
    if not RUN_ID.match(run_id):
        problems.append(Problem(display_path(root), None, None,
                                f"run id {run_id!r} is not a plain name (lower-case letters, digits, '.', '-')"))
    from build_tools.ingest import (
        sources,  # log/, tensorboard/, wandb/, ci_history/, events/ (build_tools/ingest/sources/)
    )

    config, lines = _load_run_yaml(root / "run.yaml", run_id, problems)
    # What `manual record` wrote, and no Miles output yet: read, and said.
    lab_only = (root / "lab").is_dir() and not (root / "dashboard").is_dir() and not sources.source_files(root)
    meta = _load_meta(root / "dashboard" / "meta.json", problems) if sources.has_dump(root) and not lab_only else {}
    run = RunData(run_id=run_id, root=root, config=config, meta=meta)
    if lab_only:
        run.warnings.append(LAB_ONLY.format(display_path(root)))
    _check_flags_agree(root, config, lines, meta, problems)
    others = bool(sources.source_files(root))
    by_line = _columnar.NESTED_STREAMS if others else ()
    _read_streams(run, {root / "dashboard": DASHBOARD_STREAMS, root / "lab": LAB_STREAMS}, problems, by_line, keep,
                  columns_from, None if others or not keep else on_sampled)
    sources.add_streams(run, problems)  # the other sources' streams, checked against the dump's
    return run


def load_dump(dashboard: Path, problems: list[Problem]) -> RunData:
    """A bare Miles dashboard dump (no run.yaml, no lab/), e.g. a reader's own run to compare with the manual.

    Its configuration is what Miles recorded: meta.json's args as the flags, provenance measured. Its metrics
    and phases are records (its readers read each one).
    """
    problems += check_tree(dashboard, dashboard)
    if problems:
        return RunData(run_id=dashboard.name, root=dashboard, config={}, meta={})
    meta = _load_meta(dashboard / "meta.json", problems)
    recorded = meta.get("args")
    args = recorded if isinstance(recorded, dict) else {}
    checkpoint = str(args.get("hf_checkpoint") or "").rstrip("/")
    config: dict[str, Any] = {"run_id": str(meta.get("run_name", dashboard.name)), "provenance": "measured", "tags": [],
              "model": {"name": checkpoint.rsplit("/", 1)[-1] or "not recorded"}, "flags": dict(args), "lab": {}}
    run = RunData(run_id=config["run_id"], root=dashboard, config=config, meta=meta)
    _read_streams(run, {dashboard: DASHBOARD_STREAMS}, problems, _columnar.NESTED_STREAMS)
    return run


@contextlib.contextmanager
def readable(path: Path) -> Iterator[None]:
    """A bare path the sources cannot be looked for in (/proc, a folder it may not enter) is one problem naming
    it and what could not be read, never a traceback (`manual show`, `make compare`)."""
    try:
        yield
    except OSError as error:
        what = display_path(error.filename) if error.filename else display_path(path)
        reason = error.strerror or type(error).__name__
        raise RunDataError([Problem(display_path(path), None, None,
                                    f"cannot read {what} ({reason}): expected a run id of runs/, a run folder, or "
                                    "a file or folder of Miles output that can be read")]) from None


MILES_OUTPUT = ("a dashboard dump (meta.json), a log (*.log, *.txt), a wandb export (*.csv, *.jsonl), TensorBoard "
                "event files, a CI history record, --dump-details event files, an MLflow run's folder "
                "(mlruns/<experiment id>/<run id>/), or a lab/ folder `manual record` wrote")


def nothing_read(path: Path, what: str = "record") -> Problem:
    """A bare path whose files gave no `what` (record, metric) a run is made of: an empty file, or files that hold
    none (`make add-run`, `make compare` refuse it rather than add or judge a run with nothing in it)."""
    empty = path.is_file() and path.stat().st_size == 0
    found = "empty" if empty else f"no {what} read from it"
    return Problem(display_path(path), None, None, f"{found}: expected {MILES_OUTPUT}")


def load_path(path: Path, problems: list[Problem]) -> tuple[RunData, dict[str, list[Path]]]:
    """A run folder (with run.yaml), a dashboard dump, or a bare path holding any of the sources, loaded."""
    from build_tools.ingest import sources

    warnings: list[str] = []
    if (path / "run.yaml").is_file():
        run = load_run(path, problems)
        found = {"dashboard": [path / "dashboard"]} if (path / "dashboard").is_dir() else {}
        found.update({k: v for k, v in sources.source_files(path).items() if v})
        return run, found
    found = sources.classify(path, warnings)
    lab = path / "lab" if path.is_dir() and (path / "lab").is_dir() else None  # what `manual record` writes
    if not found and lab is None:
        problems.append(Problem(display_path(path), None, None, f"found no Miles output: expected {MILES_OUTPUT}"))
        run = RunData(run_id=path.name, root=path, config=_bare_config(path.name, {}), meta={})
        return run, found
    if "dashboard" in found:
        run = load_dump(found["dashboard"][0], problems)
    else:
        run_id = path.name.split(".")[0] if path.is_file() else path.name
        run = RunData(run_id=run_id, root=path, config={}, meta={})
    run.warnings += warnings
    if lab is not None:
        _read_streams(run, {lab: LAB_STREAMS}, problems)
        if not found:
            run.warnings.append(LAB_ONLY.format(display_path(path)))
        found["lab"] = [lab]
    founds = [read(found[name], problems, run.warnings) for name, read in sources.READERS.items() if found.get(name)]
    sources.merge(run, founds, problems)
    if "dashboard" not in found:
        run.config = _bare_config(run.run_id, run.meta.get("args") or {})
    return run, found


def _bare_config(run_id: str, args: dict[str, Any]) -> dict[str, Any]:
    checkpoint = str(args.get("hf_checkpoint") or "").rstrip("/")
    return {"run_id": run_id, "provenance": "measured", "tags": [],
            "model": {"name": checkpoint.rsplit("/", 1)[-1] or "not recorded"}, "flags": dict(args), "lab": {}}


def records(run: RunData, stream: str) -> list[Record]:
    """Every record of a stream in file order, whichever reader read its lines: the one way to a run's records
    (`manual show`, the summary's record path). A file read as columns is read again line by line, so that each
    value is as written (an integer the columns hold as a float, the order of a line's metrics); the columns
    accepted its every line, so it has no problem to tell."""
    if stream in run.taken:  # a bug: its records are asked for after the summary freed them
        raise RuntimeError(f"the summary of {run.run_id} took its {stream} stream; read its records before")
    batches = run.tables.get(stream)
    kept = run.streams.get(stream, [])
    if not batches:
        return kept
    as_columns = {path for columns in batches for path in columns.files}
    by_file: dict[str, list[Record]] = {}
    for record in kept:
        by_file.setdefault(record.file, []).append(record)
    found: list[Record] = []
    for path in run.files.get(stream, []):
        found += _read_stream(path, stream, [], []) if path in as_columns else by_file.pop(display_path(path), [])
    return found + [record for records in by_file.values() for record in records]  # not from a file of its own


def stream_names(run: RunData) -> list[str]:
    """The streams the run has, however they were read, in the order they were read."""
    return list(dict.fromkeys([*run.streams, *run.tables]))


def time_problems(where: str, config: dict[str, Any], first: float, last: float,
                  latest: dt.date | None) -> list[Problem]:
    """A run whose records start days before its run.yaml date, or end after the edition's date."""
    problems = []
    date = config.get("date")
    if isinstance(date, str) and math.isfinite(first):
        start = dt.datetime.fromtimestamp(first, dt.UTC)
        if start.date() < dt.date.fromisoformat(date) - DATE_SLACK:
            problems.append(Problem(where, None, "date", f"is {date}, but the run's records start on "
                                                         f"{start:%Y-%m-%d %H:%M} UTC (expected the day it ran)"))
    if latest is not None and math.isfinite(last):
        end = dt.datetime.fromtimestamp(last, dt.UTC)
        if end.date() > latest + DATE_SLACK:
            problems.append(Problem(where, None, None, f"the run's records end on {end:%Y-%m-%d %H:%M} UTC, after "
                                                       f"the edition's date {latest} (edition.yml date)"))
    return problems


def _read_streams(run: RunData, folders: dict[Path, tuple[str, ...]], problems: list[Problem],
                  by_line: tuple[str, ...] = (), keep: bool = True, columns_from: float | None = None,
                  on_sampled: SampledHook | None = None) -> None:
    """Every stream of the folders into run: as columns where it can be (_columnar.py), else line by line; each
    sampled one handed to `on_sampled` once read."""
    fast_from = _columnar.FAST_FROM_BYTES if columns_from is None else columns_from
    for name, files in _stream_files(folders, problems):
        run.streams[name] = []
        run.files[name] = files
        if _columnar.columnar(name) and name not in by_line and math.isfinite(fast_from):
            _ColumnReader(run, name, problems, keep, fast_from).read(files)
        else:
            for path in files:
                run.streams[name] += _read_stream(path, name, problems, run.warnings)
        if not keep and name in _columnar.FLAT_STREAMS:
            _keep_last_sample(run, name)
        elif on_sampled is not None and name in _columnar.FLAT_STREAMS and not problems:
            on_sampled(run, name)  # (a run already refused keeps its streams: it is not summarised)


def _keep_last_sample(run: RunData, stream: str) -> None:
    """A sampled stream of a run only validated: its samples dropped, the time of its last one kept (the run's
    window, as its summary's facts give it, ends with it)."""
    times = [float(rec.data["ts"]) for rec in run.streams.pop(stream, []) if rec.data.get("ts") is not None]
    if stream in run.last_samples:
        times.append(run.last_samples[stream])
    times = [time for time in times if not math.isnan(time)]
    if times:
        run.last_samples[stream] = max(times)
    else:
        run.last_samples.pop(stream, None)


# --- streams as columns -----------------------------------------------------------------------


class _Unreadable(Exception):
    """A file the record path must read, to word why it cannot be read (gzip, size, UTF-8)."""


@dataclass
class _Piece:
    """Complete lines of one file: its bytes (no byte-order mark), the number of its first line, how many."""

    file: Path
    first_line: int
    data: bytes
    counted: int | None = None  # its lines, once told (by the batch's one pass over its newlines, _read_batch)

    @property
    def lines(self) -> int:
        if self.counted is None:
            self.counted = self.data.count(b"\n")
        return self.counted


class _ColumnReader:
    """One stream's files read as columns, a batch of lines at a time, so memory is bounded by a batch. Small
    files are joined into one batch; a large one is read in batches. A file the columns cannot accept whole is
    read line by line (which words its problems); so is a file that cannot be read (which words why). Problems
    and warnings come in file order, as the record path gives them. A nested stream (metrics, phases) is read
    all as columns or, if any file needs the record path, all line by line: its summary reads it in file order.
    Each byte is read once (hashed as it is read, when the run's input hash is wanted: _files.hashing_reads), and
    a batch's newlines are found in one pass that answers every question about its lines (_columnar.line_starts)."""

    def __init__(self, run: RunData, stream: str, problems: list[Problem], keep: bool = True,
                 fast_from: float = _columnar.FAST_FROM_BYTES) -> None:
        self.run, self.stream, self.problems, self.keep, self.fast_from = run, stream, problems, keep, fast_from
        self.pending: list[_Piece] = []
        self.pending_bytes = 0
        self.batches = 0  # batches given to the column reader
        self.fell_back = False
        # Batches being parsed in threads, oldest first, each checked in turn (_parse_ahead). The threads start
        # with a stream's second batch: a stream of one batch (most runs' streams) is parsed here, as it is used.
        self.parsing: collections.deque[tuple[list[_Piece], Future[_Parsed]]] = collections.deque()

    def read(self, files: list[Path]) -> None:
        marks = len(self.problems), len(self.run.warnings)
        try:
            for path in files:
                self._read_file(path)
            self._flush(final=True)
        finally:
            self._drop_parsing()
        batches = self.run.tables.get(self.stream, [])
        if len(batches) > 1 and self.stream in _columnar.FLAT_STREAMS:  # one run of memory per column: the
            batches[:] = [_joined(batches)]                             # summary's frame shares it, no copy
        if self.batches > 1:  # what parsing many batches used goes back to the system; what one used is reused
            pa.default_memory_pool().release_unused()  # by the next stream (returning it each time costs 25 %)
        if self.fell_back and self.stream in _columnar.NESTED_STREAMS:
            del self.problems[marks[0]:], self.run.warnings[marks[1]:]
            self.run.tables.pop(self.stream, None)
            self.run.streams[self.stream] = []
            for path in files:
                self.run.streams[self.stream] += _read_stream(path, self.stream, self.problems, self.run.warnings)

    def _read_file(self, path: Path) -> None:
        if not path.name.endswith(".gz"):  # most files: a plain file smaller than a batch, read in one call
            try:
                whole = read_small(path, min(_columnar.BATCH_BYTES, STREAM_LIMIT + 1))
            except OSError:
                whole = None  # read again below, and refused there: the record path words why
            if whole is not None:
                self._read_whole(path, whole)
                return
        with contextlib.closing(_blocks(path)) as blocks:  # closed at once: a file read whole counts as seen
            self._read_blocks(path, blocks)

    def _read_blocks(self, path: Path, blocks: Iterator[bytes]) -> None:
        try:
            first = next(blocks, b"")
            # Less than a batch is the whole file unless more follows (a file that grew after it was sized).
            more = next(blocks, None) if len(first) < _columnar.BATCH_BYTES else b""
        except _Unreadable:
            self._read_unreadable(path)
            return
        if more is None:
            self._read_whole(path, first)
            return
        self._flush(drain=True)
        kept = len(self.run.tables.get(self.stream, [])), len(self.run.streams[self.stream]), len(self.problems)
        try:
            self._read_large(first, itertools.chain((more,) if more else (), blocks), path)
        except _Unreadable:  # forget what was read of it: the record path reads it whole
            self._drop_parsing()
            del self.run.tables.get(self.stream, [])[kept[0]:]
            del self.run.streams[self.stream][kept[1]:], self.problems[kept[2]:]
            self._read_unreadable(path)

    def _read_whole(self, path: Path, data: bytes) -> None:
        """A whole file, in one piece, joined to the pending batch."""
        try:
            piece, tail = _split(data, path, 1)
            self._warn_tail(path, tail, lambda: 1 + piece.lines)
        except _Unreadable:
            self._read_unreadable(path)
            return
        if piece.data:
            self.pending.append(piece)
            self.pending_bytes += len(piece.data)
        if self.pending_bytes >= _columnar.BATCH_BYTES:
            self._flush()

    def _read_unreadable(self, path: Path) -> None:
        self._flush(drain=True)
        self.fell_back = True
        self.run.streams[self.stream] += _read_stream(path, self.stream, self.problems, self.run.warnings)

    def _read_large(self, first: bytes, blocks: Iterator[bytes], path: Path) -> None:
        """A file of several batches, read one batch at a time, each parsed ahead in a thread. The bytes are
        read, hashed and split here, in file order; a batch's first line is known once the one before it is
        checked (its lines are counted by the parse)."""
        carry, started, line = b"", False, 1
        for block in _chain(first, blocks):
            piece, carry = _split(carry + block, path, 0, bom=not started and not carry)
            if piece.data:
                started = True
                self._parse_ahead([piece])
                line = self._check_parsed(keep=PARSE_AHEAD, whole_file=True, line=line)
        line = self._check_parsed(keep=0, whole_file=True, line=line)
        self._warn_tail(path, carry, lambda: line)

    def _parse_ahead(self, pieces: list[_Piece]) -> None:
        data = pieces[0].data if len(pieces) == 1 else b"".join(piece.data for piece in pieces)
        parsers = _workers.threads("parse", PARSE_AHEAD)  # the process's, started at the first batch parsed ahead
        self.parsing.append((pieces, parsers.submit(_parsed_ahead, self.stream, data)))

    def _check_parsed(self, keep: int, whole_file: bool = False, line: int = 1) -> int:
        """Check the batches parsed ahead, oldest first, until `keep` are left. A batch of a large file
        (`whole_file`) gets its first line from `line`, and one the columns refuse makes the whole file go down
        the record path (_Unreadable); a batch of whole files that the columns refuse is read file by file.
        Returns the line after the batches checked."""
        while len(self.parsing) > keep:
            pieces, parsing = self.parsing.popleft()
            if whole_file:
                pieces[0].first_line = line
                if not self._read_batch(pieces, parsing.result()):
                    raise _Unreadable  # a batch the columns refuse: the file is read line by line, whole
                line += pieces[0].lines
            elif not self._read_batch(pieces, parsing.result()):
                self._read_file_by_file(pieces)
        return line

    def _drop_parsing(self) -> None:
        for _, parsing in self.parsing:
            parsing.cancel()
        self.parsing.clear()

    def _warn_tail(self, path: Path, tail: bytes, line: Callable[[], int]) -> None:
        """A last line without its newline is being written: skipped, as the record path does (`line`: its
        number, counted only then)."""
        try:
            text = tail.decode("utf-8")
        except UnicodeDecodeError:
            raise _Unreadable from None
        if text.strip():
            self.run.warnings.append(f"{display_path(path)}:{line()}: last line has no newline (a writer "
                                     "mid-append); skipped")

    def _flush(self, final: bool = False, drain: bool = False) -> None:
        """The pending whole files as one batch, parsed ahead in a thread unless it is the stream's last. Every
        batch parsed ahead is checked first when `final` or `drain`, so what follows (the last batch, another
        file's record path) sees what the batches before it left, in file order."""
        pieces, size, self.pending, self.pending_bytes = self.pending, self.pending_bytes, [], 0
        if pieces and not final:
            self._parse_ahead(pieces)
            pieces = []
        self._check_parsed(keep=0 if final or drain else PARSE_AHEAD)
        if not pieces:
            return
        if final and not self.run.tables.get(self.stream) and not self.fell_back and size < self.fast_from:
            for piece in pieces:  # too few lines to be worth the columns
                self._read_lines(piece)
            return
        if not self._read_batch(pieces):
            self._read_file_by_file(pieces)

    def _read_file_by_file(self, pieces: list[_Piece]) -> None:
        """A batch of whole files the columns refused: as columns, each file that can be (as one at a time);
        line by line, each that cannot."""
        for piece in pieces if len(pieces) > 1 else ():
            if not self._read_batch([piece]):
                self.fell_back = True
                self._read_lines(piece)
        if len(pieces) == 1:
            self.fell_back = True
            self._read_lines(pieces[0])

    def _read_batch(self, pieces: list[_Piece], parsed: _Parsed | None = None) -> bool:
        """The batch read as columns, if they accept it whole (`parsed`: _parsed_ahead's, when it ran ahead)."""
        if parsed is None:
            data = pieces[0].data if len(pieces) == 1 else b"".join(piece.data for piece in pieces)
            starts = _columnar.line_starts(data)  # the batch's one pass over its newlines: each piece's lines
        else:
            data, starts = parsed.data, parsed.starts
        ends = np.cumsum([len(piece.data) for piece in pieces])
        firsts = np.searchsorted(starts, [0, *ends.tolist()], side="right") - 1  # each piece's first row, then all
        for piece, count in zip(pieces, np.diff(firsts).tolist(), strict=True):
            piece.counted = count
        self.batches += 1
        table = (_columnar.read_frame(self.stream, data, len(starts) - 1, starts) if parsed is None
                 else _columnar.checked_frame(self.stream, parsed.table, len(starts) - 1))
        columns = None if table is None else Columns(table, [p.file for p in pieces], [p.first_line for p in pieces],
                                                     firsts[:-1].tolist())
        if columns is not None and self._suspects_hold(columns, data, starts):
            if not self.keep and self.stream in _columnar.FLAT_STREAMS:  # only validated: its last time kept
                last = pc.max(columns.table.column("ts")).as_py() if "ts" in columns.table.column_names else None
                if last is not None and not math.isnan(last):
                    self.run.last_samples[self.stream] = max(last, self.run.last_samples.get(self.stream, last))
                return True
            if self.stream in _columnar.FLAT_STREAMS:  # each distinct text kept once: a million samples, one node
                columns.table = _columnar.with_text_codes(table)
            self.run.tables.setdefault(self.stream, []).append(columns)
            return True
        return False

    def _suspects_hold(self, columns: Columns, data: bytes, starts: np.ndarray) -> bool:
        """The rows the columns cannot vouch for, each checked as the record path checks its line."""
        rows = _columnar.suspect_rows(self.stream, columns.table, data, starts)
        if not len(rows):
            return True
        for row in rows.tolist():
            where, line = columns.where(row)
            text = data[starts[row]:starts[row + 1]].decode("utf-8")
            try:
                value = _parse_json(text, where, line)
            except InputProblem:
                return False
            if not isinstance(value, dict) or schemas.validate_record(self.stream, value, where, line)[1]:
                return False
        return True

    def _read_lines(self, piece: _Piece) -> None:
        text = piece.data.decode("utf-8")
        self.run.streams[self.stream] += _records(text.split("\n")[:-1], display_path(piece.file), piece.first_line,
                                                  self.stream, self.problems)


def _joined(batches: list[Columns]) -> Columns:
    """The batches of a stream as one table, each column one contiguous array (the rows' files and lines kept)."""
    table = pa.concat_tables([columns.table for columns in batches], promote_options="permissive")
    files, first_lines, starts, offset = [], [], [], 0
    for columns in batches:
        files += columns.files
        first_lines += columns.first_lines
        starts += [offset + start for start in columns.starts]
        offset += columns.table.num_rows
    batches.clear()  # the batches' memory goes as each column is joined
    schema, joined = table.schema, []
    while table.num_columns:  # a column at a time: at most one column is held twice
        column, table = table.column(0), table.remove_column(0)
        joined.append(column.combine_chunks())
        del column
    return Columns(pa.Table.from_arrays(joined, schema=schema), files, first_lines, starts)


# How many batches are parsed at once in threads, beside the one being checked: one a core (each holds a
# batch's bytes and table, a few MB). pyarrow's parse releases the GIL, so a stream of many batches (a long
# run's telemetry) is parsed on every core while this thread checks, hashes and reads.
CORES = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
PARSE_AHEAD = CORES


def share_cores(processes: int) -> None:
    """This process is one of `processes` reading at once (a pool's worker, a Ray task): it parses ahead on its
    share of the cores, so that the pool's threads are not the cores' count times over."""
    global PARSE_AHEAD
    PARSE_AHEAD = max(1, CORES // max(1, processes))


@contextlib.contextmanager
def cores_shared(processes: int) -> Iterator[None]:
    """share_cores while a Ray task reads (a task may run in the driver's own process, as tests run it)."""
    global PARSE_AHEAD
    before = PARSE_AHEAD
    share_cores(processes)
    try:
        yield
    finally:
        PARSE_AHEAD = before


@dataclass(frozen=True)
class _Parsed:
    """A batch parsed ahead: its bytes, where its lines start, its table as pyarrow read it (None: unsafe to
    parse, or unparsable)."""

    data: bytes
    starts: np.ndarray
    table: pa.Table | None


def _parsed_ahead(stream: str, data: bytes) -> _Parsed:
    """What _ColumnReader._read_batch first does with a batch, done in a thread: find its lines, parse them."""
    starts = _columnar.line_starts(data)
    return _Parsed(data, starts, _columnar.parsed_lines(stream, data, len(starts) - 1, starts))


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _split(data: bytes, path: Path, first_line: int, bom: bool = True) -> tuple[_Piece, bytes]:
    """The complete lines of data as a piece (checked UTF-8, a leading byte-order mark dropped) and the rest."""
    start = 3 if bom and data.startswith(b"\xef\xbb\xbf") else 0
    end = data.rfind(b"\n") + 1
    lines = data[start:end] if start or end < len(data) else data
    try:
        if not lines.isascii():  # ASCII (the common case) is UTF-8, and is told at memory speed
            check_utf8(lines, "")
    except InputProblem:
        raise _Unreadable from None  # the record path words where
    return _Piece(path, first_line, lines), data[max(end, start):]


# What isal raises for data that does not inflate (its stub types it as an instance; it is the class).
_ISAL_ERROR = cast("type[Exception]", isal_zlib.error)


def _blocks(path: Path) -> Generator[bytes, None, None]:
    """The file's bytes (gunzipped when its name ends in .gz) a batch at a time; _Unreadable for anything
    read_bytes refuses, which the record path then words."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > STREAM_LIMIT:
            raise _Unreadable
        total = 0
        # isal's gzip reader, a port of the standard one, inflates 3 to 4 times faster: a long run's telemetry
        # is inflated in the thread that checks it. What it refuses, the record path (the standard gzip) words.
        plain = not path.name.endswith(".gz")
        # A plain file smaller than a batch (most files: an hour's phases) is read in one call, its size and one
        # byte more: a short read is its end (one more byte would say it grew meanwhile, and is read on).
        size = min(info.st_size + 1, _columnar.BATCH_BYTES) if plain else _columnar.BATCH_BYTES
        with open_input(path) as raw, (igzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[no-untyped-call]
                                       if not plain else contextlib.nullcontext(raw)) as handle:
            while block := handle.read(size):
                total += len(block)
                if total > STREAM_LIMIT:
                    raise _Unreadable
                yield block
                if plain and len(block) < size:
                    break
                size = _columnar.BATCH_BYTES
    except (OSError, EOFError, zlib.error, _ISAL_ERROR):  # gzip.BadGzipFile is an OSError
        raise _Unreadable from None


# --- run.yaml and meta.json -------------------------------------------------------------------


def _load_run_yaml(path: Path, run_id: str, problems: list[Problem]) -> tuple[dict[str, Any], Any]:
    """run.yaml as plain data, and where its keys are (for messages)."""
    where = display_path(path)
    if not path.is_file():
        problems.append(Problem(where, None, None, "missing: every run needs a run.yaml (see runs/README.md)"))
        return {}, None
    try:
        doc = parse_yaml(read_text(path), where)
    except InputProblem as error:
        problems.append(error.problem)
        return {}, None
    if not isinstance(doc.value, dict):
        problems.append(Problem(where, 1, None, "expected a mapping of fields (runs/README.md)"))
        return {}, None
    _, found = schemas.validate(schemas.RunYaml, doc.value, where, doc.line_of)
    problems += found
    if not found:
        problems += _dated_after_commit(doc.value, where, doc.line_of)
    if isinstance(doc.value.get("run_id"), str) and doc.value["run_id"] != run_id:
        problems.append(Problem(where, doc.line_of(("run_id",)), "run_id",
                                f"expected {run_id!r}, the name of the run's directory, "
                                f"found {doc.value['run_id']!r}"))
    return doc.value, doc


def _dated_after_commit(config: dict[str, Any], where: str, line_of: Any) -> list[Problem]:
    """A run cannot use a Miles commit from its future: its date is on or after miles.commit_date."""
    date, commit_date = str(config["date"]), str(config["miles"]["commit_date"])
    if dt.date.fromisoformat(date) >= dt.date.fromisoformat(commit_date):
        return []
    return [Problem(where, line_of(("date",)), "date", f"is {date}, before the date of the Miles commit it names "
                                                       f"({commit_date}, miles.commit_date): a run cannot use a "
                                                       "commit from its future")]


def _load_meta(path: Path, problems: list[Problem]) -> dict[str, Any]:
    """meta.json as written; its run_name is Miles' (`wandb_group or "miles-run"`), kept and shown, never the run
    id (the run's folder name)."""
    where = display_path(path)
    if not path.is_file():
        problems.append(Problem(where, None, None, "missing: copy the run's Miles dashboard dump into dashboard/"))
        return {}
    try:
        meta = _parse_json(read_text(path), where, 1)
    except InputProblem as error:
        problems.append(error.problem)
        return {}
    if not isinstance(meta, dict):
        problems.append(Problem(where, 1, None, "expected a JSON object"))
        return {}
    _, found = schemas.validate(schemas.Meta, meta, where, lambda loc: None)
    if isinstance(args := meta.get("args"), dict):  # the flags the manual reads, typed as in run.yaml
        _, wrong = schemas.validate(schemas.MilesArgs, args, where, lambda loc: None)
        found += [dataclasses.replace(problem, field=f"args.{problem.field}") for problem in wrong]
        found += schemas.arg_problems(args, where) + schemas.meta_key_problems(args, where)
    problems += found
    return meta if not found else {k: v for k, v in meta.items() if k != "start_ts" or _is_timestamp(v)}


def _is_timestamp(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _check_flags_agree(root: Path, config: dict[str, Any], doc: Any, meta: dict[str, Any],
                       problems: list[Problem]) -> None:
    """What Miles recorded (meta.json args) and what run.yaml says must agree: every shared flag, and the model."""
    flags, args = config.get("flags"), meta.get("args")
    where = display_path(root / "run.yaml")
    if isinstance(flags, dict):  # its flags become a launch command's too (pages/commands.py)
        for problem in schemas.arg_problems(flags, where):
            name = str(problem.field).removeprefix("args.")
            problems.append(replace(problem, field=f"flags.{name}", line=doc.line_of(("flags", name)) if doc else None))
    if not isinstance(flags, dict) or not isinstance(args, dict):
        return
    for name in sorted(set(flags) & set(args)):
        if not schemas.same_setting(flags[name], args[name]):
            problems.append(Problem(where, doc.line_of(("flags", name)) if doc else None, f"flags.{name}",
                                    f"is {flags[name]!r}, but dashboard/meta.json args say {args[name]!r}"))
    # A hub checkpoint name (owner/model, e.g. Qwen/Qwen3-0.6B) names the model; a local path need not.
    checkpoint = str(args.get("hf_checkpoint") or "")
    model = config["model"].get("name") if isinstance(config.get("model"), dict) else None
    if checkpoint.count("/") == 1 and isinstance(model, str) and checkpoint.split("/")[1] != model:
        problems.append(Problem(where, doc.line_of(("model", "name")) if doc else None, "model.name",
                                f"is {model!r}, but dashboard/meta.json args say hf_checkpoint {checkpoint!r}"))


# --- streams ----------------------------------------------------------------------------------


def _stream_files(folders: dict[Path, tuple[str, ...]], problems: list[Problem]) -> Iterator[tuple[str, list[Path]]]:
    """Every known stream of the folders with its files, hourly partitions and flat files alike."""
    found: dict[str, list[Path]] = {}
    for base, streams in folders.items():
        if not base.is_dir():
            continue
        for path in sorted(base.iterdir()):
            if streams is DASHBOARD_STREAMS and path.name in DASHBOARD_DOCUMENTS:
                continue
            stream = _stream_of(path, streams)
            if stream is None:
                problems.append(Problem(display_path(path), None, None,
                                        f"unknown stream; expected one of {sorted(streams)} (runs/README.md)"))
                continue
            found.setdefault(stream, []).extend(_partition_files(path, problems))
    for files in found.values():
        problems += _twins(files)
    for name in sorted(found):
        yield name, found[name]


def _twins(files: list[Path]) -> list[Problem]:
    """One stream, one file: `x.jsonl` beside `x.jsonl.gz` would be read twice."""
    by_plain: dict[str, list[Path]] = {}
    for path in files:
        by_plain.setdefault(str(path).removesuffix(".gz"), []).append(path)
    return [Problem(display_path(pair[-1]), None, None,
                    f"the same stream file twice: {pair[0].name} and {pair[1].name}; keep one of them")
            for pair in by_plain.values() if len(pair) > 1]


def _stream_of(path: Path, streams: tuple[str, ...]) -> str | None:
    if path.is_dir():
        return path.name if path.name in streams and path.name in PARTITIONED else None
    match = JSONL.match(path.name)
    return match["stream"] if match and match["stream"] in streams else None


def _partition_files(path: Path, problems: list[Problem]) -> list[Path]:
    if path.is_file():
        return [path]
    files = []
    # By name, the order Paths of one folder sort in, and cheaper: 19 against 110 us for two days of hourly files.
    for part in sorted(path.iterdir(), key=by_name):
        if PARTITION.match(part.name):
            files.append(part)
        else:
            problems.append(Problem(display_path(part), None, None,
                                    "unknown file in an hourly stream; expected YYYYMMDD_HH.jsonl"))
    return files


def _read_stream(path: Path, stream: str, problems: list[Problem], warnings: list[str]) -> Iterator[Record]:
    where = display_path(path)
    try:
        lines = decode_utf8(read_bytes(path, STREAM_LIMIT), where).split("\n")
    except InputProblem as error:
        problems.append(error.problem)
        return
    if lines[-1].strip():
        warnings.append(f"{where}:{len(lines)}: last line has no newline (a writer mid-append); skipped")
    yield from _records(lines[:-1], where, 1, stream, problems)


def _records(lines: list[str], where: str, first_line: int, stream: str, problems: list[Problem]) -> list[Record]:
    """Complete lines of a stream file, each parsed and checked: the valid records; problems at their lines."""
    parsed, numbers = [], []
    for number, text in enumerate(lines, start=first_line):
        if not text.strip():
            continue
        try:
            data = _parse_json(text, where, number)
        except InputProblem as error:
            problems.append(error.problem)
            continue
        if not isinstance(data, dict):
            problems.append(Problem(where, number, None, "expected a JSON object"))
            continue
        parsed.append(data)
        numbers.append(number)
    records, found = schemas.validate_records(stream, parsed, where, numbers)
    problems += found
    return [Record(record, where, number) for record, number in zip(records, numbers, strict=True)
            if record is not None]


# Python's json reads a bare NaN or Infinity (as it writes them); they are marked so that the schema can tell
# them from a number too large for a double, which json also reads as an infinity.
def _parse_int(text: str) -> int:
    if len(text) > 18 and not -(2**63) <= int(text[:4300]) < 2**63:
        raise ValueError(f"the integer {text[:24]}{'...' if len(text) > 24 else ''} is beyond 64 bits")
    return int(text)


_DECODER = json.JSONDecoder(parse_int=_parse_int,
                            parse_constant=lambda name: schemas.WrittenNonFinite(schemas.NON_FINITE[name]))


def _parse_json(text: str, where: str, line: int) -> Any:
    """One JSON value; bare NaN and Infinity (as Python's json writes them) stay non-finite floats. Its depth is
    told before it is parsed: a parser recurses once a level (pyarrow's crashes at 100,000)."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _columnar.nesting(text) > MAX_JSON_DEPTH:
        raise _too_deep(where, line)
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as err:
        raise InputProblem(Problem(where, line + err.lineno - 1, None, f"not valid JSON: {err.msg}")) from None
    except ValueError as err:
        raise InputProblem(Problem(where, line, None, f"not valid JSON: {err}")) from None
    except RecursionError:  # not reached: nesting() bounds the depth json recurses to
        raise _too_deep(where, line) from None


def _too_deep(where: str, line: int) -> InputProblem:
    return InputProblem(Problem(where, line, None,
                                f"nested more than {MAX_JSON_DEPTH} levels deep, deeper than any Miles record"))
