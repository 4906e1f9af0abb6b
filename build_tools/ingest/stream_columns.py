"""A stream's files read as columns (_columnar.py), a batch of lines at a time, each batch parsed ahead in a thread:
the same records and problems as the record path (stream_lines.py), which reads what the columns refuse.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import math
import os
import stat
import zlib
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from isal import igzip, isal_zlib

from build_tools.core import _workers
from build_tools.core._exceptions import InputProblem, Problem, display_path
from build_tools.core._files import (
    STREAM_LIMIT,
    check_utf8,
    open_input,
    read_small,
)
from build_tools.core._types import Columns, RunData
from build_tools.ingest import _columnar, schemas_dump
from build_tools.ingest.stream_lines import _parse_json, _read_stream, _records

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
            except (OSError, InputProblem):
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
            if not isinstance(value, dict) or schemas_dump.validate_record(self.stream, value, where, line)[1]:
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
    except (OSError, EOFError, zlib.error, _ISAL_ERROR, InputProblem):  # gzip.BadGzipFile is an OSError
        raise _Unreadable from None
