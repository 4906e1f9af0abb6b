"""The fast path for the JSON Lines streams: a batch of lines read by pyarrow's JSON reader and checked column by
column against the same schema the record-by-record path uses (schemas_dump.STREAM_RECORDS).

A column check never reports: when any column does not pass, the batch goes down the record-by-record path,
which finds the offending lines and words the problems. So the fast path can only accept what the slow path
would accept, and every message still names its file and line. Where a column alone cannot tell (a null read
where the key may be missing, a value the reader may have read differently from Python's json), the rows in
doubt are handed back as suspects, and the loader checks just those lines the slow way (stream_columns.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, get_args, get_origin

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
from pydantic import AfterValidator, PlainValidator

from build_tools.ingest import schemas, schemas_dump

# The streams whose records are flat (no lists or mappings): one row each, a column per field.
FLAT_STREAMS = ("gpu_util", "gpu_processes", "host_memory", "gpu_temp", "held_memory", "data_buffer", "sampling",
                "repeat_probe")
# Streams with a list or a mapping in each record, read as columns too (a list column, a struct of metrics).
NESTED_STREAMS = ("metrics", "phases")
# Less than this many bytes of a stream is not worth the reader's set-up: read line by line.
FAST_FROM_BYTES = 16 * 1024
# Lines are read this many bytes at a time: memory is bounded by a batch, not by the file.
BATCH_BYTES = 4 * 1024 * 1024
# A double at or beyond 2**63 may have been written as an integer beyond 64 bits, which Python's json refuses.
BEYOND_INT64 = 2.0**63
# Deeper than any record Miles writes (topology: engines -> engine -> gpus -> [node, gpu]).
MAX_JSON_DEPTH = 8
# A line this short opens at most this many lists and mappings: pyarrow parses it without recursing deep enough to
# crash (its parser crashed at 10,000 levels here); the longest line Miles writes is a few hundred bytes.
SHORT_LINE = 1024
# What tells a JSON text's nesting: a bracket, a quote opening or closing a string, an escaped character.
_NESTING = re.compile(r'\\.|["\[\]{}]', re.DOTALL)

ColumnCheck = Callable[[pa.ChunkedArray], bool]


def _never(column: pa.ChunkedArray) -> bool:
    """A field the columns cannot check (a pattern, a validator of its own): the record path checks it."""
    return False


@dataclass(frozen=True)
class Field:
    """How a field of a record is checked as a column."""

    presence: str  # "required" (present, not null), "key" (present, may be null), "optional" (may be left out)
    check: ColumnCheck


def columnar(stream: str) -> bool:
    """Whether the stream may be read as columns (tests switch streams off to compare with the record path)."""
    return stream in FLAT_STREAMS or stream in NESTED_STREAMS


def read_frame(stream: str, data: bytes, lines: int, starts: np.ndarray | None = None) -> pa.Table | None:
    """`lines` complete lines of a stream (UTF-8 bytes ending in a newline, no byte-order mark) as a table that
    passed every column check and rule, or None when the batch must go down the record path. Rows in doubt are
    left to suspect_rows(). `starts`: line_starts(data), when the caller has it (one pass over the bytes finds
    the newlines, and every question about the lines is answered from them)."""
    starts = line_starts(data) if starts is None else starts
    return checked_frame(stream, parsed_lines(stream, data, lines, starts), lines)


def parsed_lines(stream: str, data: bytes, lines: int, starts: np.ndarray) -> pa.Table | None:
    """read_frame's first half: the batch as pyarrow parses it, when it is safe to parse (None when it is not, or
    does not parse). It holds the GIL little, so a stream's next batches are parsed in threads while this one
    is checked (stream_columns._ColumnReader)."""
    if not columnar(stream):
        return None
    if len(starts) - 1 != lines or not _one_object_per_line(data, starts) or not _shallow(data, starts):
        return None
    try:
        return _parse(data)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, UnicodeDecodeError):
        return None


def checked_frame(stream: str, table: pa.Table | None, lines: int) -> pa.Table | None:
    """read_frame's second half: the parsed table if it passes every column check and rule, else None."""
    if table is None:
        return None
    fields = _FIELDS[stream]
    if table.num_rows != lines or not set(table.column_names) <= set(fields) or _row_depth(table) > MAX_JSON_DEPTH:
        return None
    for name, field in fields.items():
        if name not in table.column_names:
            if field.presence == "optional":
                continue
            return None  # no line has the field: the record path says which lines miss it
        column = table.column(name)
        if (field.presence == "required" and column.null_count) or not field.check(column):
            return None
    return table if _rules_hold(stream, table) else None


def with_text_codes(table: pa.Table) -> pa.Table:
    """The table with its text columns dictionary-encoded (each distinct text stored once); the summary turns
    them back into text (summary_phases._series)."""
    for index, kind in enumerate(table.schema.types):
        if _is_text(kind):
            table = table.set_column(index, table.field(index).name, table.column(index).dictionary_encode())
    return table


def _parse(data: bytes) -> pa.Table:
    return pajson.read_json(pa.BufferReader(data), read_options=pajson.ReadOptions(block_size=1 << 22,
                                                                                   use_threads=False))


def suspect_rows(stream: str, table: pa.Table, data: bytes, starts: np.ndarray | None = None) -> np.ndarray:
    """The rows a column check passed but cannot vouch for, to be checked line by line: a null in a field that
    must be present (null or left out read the same), an explicit null inside a mapping, and a number Python's
    json may read differently (NaN, an infinity, or beyond 64 bits). `starts` as read_frame's."""
    rows = np.zeros(table.num_rows, dtype=bool)
    for name, field in _FIELDS[stream].items():
        if field.presence != "key" or name not in table.column_names or not table.column(name).null_count:
            continue
        # In a flat record that passed, `"name":` can only be the key itself: one per line means none is missing.
        if stream in FLAT_STREAMS and data.count(b'"' + name.encode() + b'":') == table.num_rows:
            continue
        rows |= table.column(name).is_null().to_numpy(zero_copy_only=False)
    floats = [column for column in _numeric_columns(table) if pa.types.is_floating(column.type)]
    doubles = all(column.type == pa.float64() for column in floats)  # as pyarrow's JSON reader makes them
    if floats and not (doubles and pc.all(_within_int64(pa.chunked_array(  # all columns at once: the common case
            [chunk for column in floats for chunk in column.chunks], type=pa.float64()))).as_py()):
        for column in floats:
            within = _within_int64(column)
            if not pc.all(within).as_py():
                rows |= pc.fill_null(pc.invert(within), False).to_numpy(zero_copy_only=False)
    if any(pa.types.is_struct(kind) for kind in table.schema.types) and holds_null(data):
        # a null inside the mapping reads as a key left out
        rows[_lines_holding(data, b"null", line_starts(data) if starts is None else starts)] = True
    return np.flatnonzero(rows)


# `null` read as one little-endian 4-byte word.
_NULL_WORD = int.from_bytes(b"null", "little")


def holds_null(data: bytes) -> bool:
    """Whether `null` is in data (`b"null" in data`, 3 to 4 times faster): the data read as 4-byte words from each
    of the first four bytes, each compared with the word `null` at memory speed."""
    return len(data) >= 4 and any(
        bool((np.frombuffer(data, dtype="<u4", offset=start, count=(len(data) - start) // 4) == _NULL_WORD).any())
        for start in range(4))


def _within_int64(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Whether each number is finite and within 64 bits: false for NaN and the infinities, null where null."""
    return pc.less(pc.abs(column), BEYOND_INT64)


def line_starts(data: bytes) -> np.ndarray:
    """Where each line of complete lines starts (and, last, where the data ends): the one pass over a batch's
    bytes that finds its newlines. They are looked for 8 bytes at a time, in words of the comparison's bytes: a
    word that holds one newline (lines of 8 bytes or more) says where by its value alone, a power of two, and
    numpy skips the words without one 4 times faster than it scans the bytes (0.3 ms a MB here, against 0.75)."""
    newline = np.frombuffer(data, dtype=np.uint8) == ord("\n")
    whole = len(newline) // 8 * 8
    words = newline[:whole].view("<u8")
    found = np.flatnonzero(words != 0)
    held = words[found]
    if bool(((held & (held - np.uint64(1))) == 0).all()):  # one newline in each: byte k of the word is 2 ** (8 k)
        ends = found * 8 + ((np.frexp(held.astype(np.float64))[1] - 1) >> 3)
    else:  # lines shorter than a word: byte by byte
        ends = np.flatnonzero(newline[:whole])
    ends = np.concatenate((ends, np.flatnonzero(newline[whole:]) + whole))
    starts = np.empty(len(ends) + 1, dtype=np.int64)
    starts[0] = 0
    np.add(ends, 1, out=starts[1:])
    return starts


def _lines_holding(data: bytes, word: bytes, starts: np.ndarray) -> np.ndarray:
    found = np.fromiter((match.start() for match in re.finditer(re.escape(word), data)), dtype=np.int64)
    return np.unique(np.searchsorted(starts, found, side="right") - 1)


def nesting(text: str) -> int:
    """How deep a JSON text nests lists and mappings (brackets inside a string are text), told in one pass without
    parsing it, as far as one level beyond MAX_JSON_DEPTH: the record path refuses a line deeper than that before
    a parser, which recurses once a level, sees it."""
    depth = deepest = 0
    in_string = False
    for token in _NESTING.finditer(text):
        mark = token[0]
        if mark == '"':
            in_string = not in_string
        elif in_string or len(mark) > 1:
            continue
        elif mark in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                break
        else:
            depth -= 1
    return deepest


def _shallow(data: bytes, starts: np.ndarray) -> bool:
    """pyarrow may parse the batch without recursing deep enough to crash (it recurses once a level: a line
    10,000 deep crashed the process): every line is at most SHORT_LINE bytes (it cannot open more lists and
    mappings than it has bytes), or none opens more than MAX_JSON_DEPTH. How deep a line parsed nests is then
    told by the table's types (_row_depth); a batch with a long line that opens more goes down the record path,
    which tells its depth exactly."""
    if len(starts) < 2 or int(np.diff(starts).max()) <= SHORT_LINE:
        return True
    lines = len(starts) - 1
    if data.count(b"[") + data.count(b"{") - lines < MAX_JSON_DEPTH:  # every line opens one mapping
        return True
    codes = np.frombuffer(data, dtype=np.uint8)
    opens = np.flatnonzero((codes | 0x20) == ord("{"))  # "[" is "{" but for the 0x20 bit: one comparison for both
    per_line = np.bincount(np.searchsorted(starts, opens, side="right") - 1)
    return bool(per_line.max(initial=0) <= MAX_JSON_DEPTH)


def _one_object_per_line(data: bytes, starts: np.ndarray) -> bool:
    """Every line starts with `{`: no blank line, so the reader's rows are the lines one to one (a line holding
    two objects would add a row)."""
    return bool((np.frombuffer(data, dtype=np.uint8)[starts[:-1]] == ord("{")).all())


def _row_depth(table: pa.Table) -> int:
    """How deep the table's rows may nest, as JSON counts it (the row's mapping is one level): every row parsed
    fits its columns' types, so none nests deeper."""
    return 1 + max((_type_depth(kind) for kind in table.schema.types), default=0)


def _type_depth(kind: pa.DataType) -> int:
    if pa.types.is_struct(kind):
        return 1 + max((_type_depth(kind.field(index).type) for index in range(kind.num_fields)), default=0)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return 1 + _type_depth(kind.value_type)
    return 0


def _numeric_columns(table: pa.Table) -> list[pa.ChunkedArray]:
    """Every number column, the fields of a struct (the metrics mapping) included."""
    found = []
    for column in table.columns:
        if pa.types.is_struct(column.type):
            found += [_child(column, index) for index in range(column.type.num_fields)
                      if _is_number(column.type.field(index).type)]
        elif _is_number(column.type):
            found.append(column)
    return found


def _child(column: pa.ChunkedArray, index: int) -> pa.ChunkedArray:
    return pa.chunked_array([chunk.field(index) for chunk in column.chunks], type=column.type.field(index).type)


def _is_number(kind: pa.DataType) -> bool:
    return bool(pa.types.is_integer(kind) or pa.types.is_floating(kind))


# --- column checks, compiled from the record schemas -----------------------------------------------


def _numbers(column: pa.ChunkedArray) -> np.ndarray | None:
    """The column's values as floats (nulls dropped), or None when it is not numeric."""
    if not (_is_number(column.type) or pa.types.is_null(column.type)):
        return None
    values: np.ndarray = column.drop_null().to_numpy(zero_copy_only=False).astype(float)
    return values


def _finite_number(column: pa.ChunkedArray) -> bool:
    # A non-finite value may be a written NaN or a number too large for a double: the record path tells.
    values = _numbers(column)
    return values is not None and bool(np.isfinite(values).all())


def _whole(column: pa.ChunkedArray) -> bool:
    return bool(pa.types.is_integer(column.type) or pa.types.is_null(column.type))


def _text(column: pa.ChunkedArray) -> bool:
    return _is_text(column.type) or pa.types.is_null(column.type)


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _distinct(column: pa.ChunkedArray) -> list[Any]:
    values: list[Any] = pc.unique(column.drop_null()).to_pylist()
    return values


def _non_empty_text(column: pa.ChunkedArray) -> bool:
    return _text(column) and all(value.strip() for value in _distinct(column))


def _bounded(check: ColumnCheck, bounds: list[tuple[str, float]]) -> ColumnCheck:
    def bounded(column: pa.ChunkedArray) -> bool:
        if not check(column):
            return False
        values = _numbers(column)
        if values is None:
            return False
        tests = {"ge": np.greater_equal, "gt": np.greater, "le": np.less_equal, "lt": np.less}
        return all(bool(tests[kind](values, limit).all()) for kind, limit in bounds)
    return bounded


def _choices(allowed: tuple[Any, ...]) -> ColumnCheck:
    return lambda column: _text(column) and set(_distinct(column)) <= set(allowed)


def _list_of(item: Field) -> ColumnCheck:
    """A list column whose items all pass item's check (no null item: list[int] refuses one)."""
    def list_of(column: pa.ChunkedArray) -> bool:
        if pa.types.is_null(column.type):
            return True
        if not pa.types.is_list(column.type):
            return False
        items = pa.chunked_array([chunk.flatten() for chunk in column.chunks], type=column.type.value_type)
        return not items.null_count and item.check(items)
    return list_of


def _scalars(column: pa.ChunkedArray) -> bool:
    """A mapping of names to numbers, strings or true/false (schemas._scalar): a struct of such fields. A string
    field holding a non-finite marker is a number the record path reads, one holding a number written as a string
    is one it refuses (schemas.number_in_text); a null is left to suspect_rows."""
    if not pa.types.is_struct(column.type):
        return False
    for index in range(column.type.num_fields):
        kind = column.type.field(index).type
        if _is_number(kind) or pa.types.is_boolean(kind) or pa.types.is_null(kind):
            continue
        if not _is_text(kind) or any(text in schemas.NON_FINITE or schemas.number_in_text(text)
                                        for text in _distinct(_child(column, index))):
            return False
    return True


def _time(column: pa.ChunkedArray) -> bool:
    values = _numbers(column)
    return values is not None and bool(np.isfinite(values).all() and (values >= 0).all()
                                       and (values < schemas.LATEST_TIME).all())


def _phase_end(column: pa.ChunkedArray) -> bool:
    values = _numbers(column)
    return values is not None and bool(np.isfinite(values).all() and ((values >= 0) | (values == -1)).all()
                                       and (values < schemas.LATEST_TIME).all())


_VALIDATOR_CHECKS: dict[Callable[..., Any], ColumnCheck] = {
    schemas._number: _finite_number, schemas._time: _time, schemas._non_empty: _non_empty_text,
    schemas._phase_end: _phase_end,
}


def _compile(annotation: Any) -> Field:
    """How one field's annotation is checked as a column; a rule the columns cannot express never passes."""
    presence = "required"
    if get_origin(annotation) is NotRequired:
        presence, annotation = "optional", get_args(annotation)[0]
    args = [a for a in get_args(annotation) if a is not type(None)]
    if type(None) in get_args(annotation) and get_origin(annotation) is not Annotated:
        presence, annotation = ("key" if presence == "required" else presence), args[0]
    bounds: list[tuple[str, float]] = []
    check: ColumnCheck | None = None
    while get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        for meta in metadata:
            if isinstance(meta, PlainValidator | AfterValidator):
                check = _VALIDATOR_CHECKS.get(meta.func, _never) if check is None else check
                continue
            for inner in getattr(meta, "metadata", None) or [meta]:
                kind = type(inner).__name__.lower()
                if kind not in ("ge", "gt", "le", "lt"):
                    return Field(presence, _never)  # a pattern or any other constraint: the record path
                bounds.append((kind, float(getattr(inner, kind))))
        annotation = base
    if check is None:
        check = _plain_check(annotation)
    return Field(presence, _bounded(check, bounds) if bounds else check)


def _plain_check(annotation: Any) -> ColumnCheck:
    if annotation is int:
        return _whole
    if annotation is str:
        return _text
    if get_origin(annotation) is Literal:
        return _choices(get_args(annotation))
    if get_origin(annotation) is list:
        return _list_of(_compile(get_args(annotation)[0]))
    if get_origin(annotation) is dict and get_args(annotation) == (str, schemas.Scalar):
        return _scalars
    return _never


def _rules_hold(stream: str, table: pa.Table) -> bool:
    """The rules across fields, applied to whole columns (each rule is written so that it can be)."""
    rules = schemas_dump.RECORD_RULES.get(stream, ())
    if not rules:
        return True
    columns = {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names
               if _is_number(table.column(name).type)}
    try:
        return all(bool(np.all(rule(columns))) for rule, _, _ in rules)
    except (TypeError, ValueError, KeyError):  # a rule that only reads one record at a time: the record path
        return False


_FIELDS: dict[str, dict[str, Field]] = {
    stream: {name: _compile(annotation)
             for name, annotation in schemas_dump.STREAM_RECORDS[stream].__annotations__.items()}
    for stream in FLAT_STREAMS + NESTED_STREAMS
}
