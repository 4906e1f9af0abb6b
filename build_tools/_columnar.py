"""The fast path for the high-rate flat streams (telemetry): a whole file read by pyarrow's JSON reader and
checked column by column against the same schema the record-by-record path uses (schemas.STREAM_RECORDS).

A column check never reports: when any column does not pass, the file goes down the record-by-record path,
which finds the offending lines and words the problems. So the fast path can only accept what the slow path
would accept, and every message still names its file and line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, NotRequired, get_args, get_origin

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson
from pydantic import AfterValidator, PlainValidator

from . import schemas

# The streams whose records are flat (no lists or mappings): one row each, a column per field.
FLAT_STREAMS = ("gpu_util", "gpu_processes", "host_memory", "gpu_temp", "held_memory", "data_buffer", "sampling",
                "repeat_probe")
# Smaller files are not worth the reader's set-up.
FAST_FROM_BYTES = 64 * 1024

ColumnCheck = Callable[[pa.ChunkedArray], bool]


def read_table(stream: str, data: bytes | memoryview, lines: int) -> pa.Table | None:
    """The complete `lines` lines of a flat stream file (UTF-8 bytes, ending in a newline) as a table, or None when any
    line needs the record path. Read straight from the bytes: no text copy of a file of a hundred MB."""
    if stream not in FLAT_STREAMS:
        return None
    try:
        table = pajson.read_json(pa.BufferReader(data),
                                 read_options=pajson.ReadOptions(block_size=1 << 22, use_threads=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    checks = _CHECKS[stream]
    if not set(table.column_names) <= set(checks) or table.num_rows != lines:
        return None
    for name, (required, check) in checks.items():
        if name not in table.column_names:
            if required:
                return None
            continue
        column = table.column(name)
        if (required and column.null_count) or not check(column):
            return None
    return table


# --- column checks, compiled from the record schemas -----------------------------------------------


def _numbers(column: pa.ChunkedArray) -> np.ndarray | None:
    """The column's values as floats (nulls dropped), or None when it is not numeric."""
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_null(column.type)):
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
    return bool(pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
                or pa.types.is_null(column.type))


def _non_empty_text(column: pa.ChunkedArray) -> bool:
    return _text(column) and not any(not str(v).strip() for v in column.drop_null().to_pylist())


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
    return lambda column: _text(column) and set(column.drop_null().to_pylist()) <= set(allowed)


def _compile(annotation: Any) -> tuple[bool, ColumnCheck]:
    """(required and not null, a check of the whole column) for one field's annotation."""
    required = True
    if get_origin(annotation) is NotRequired:
        required, annotation = False, get_args(annotation)[0]
    args = [a for a in get_args(annotation) if a is not type(None)]
    if type(None) in get_args(annotation) and get_origin(annotation) is not Annotated:
        required, annotation = False, args[0]
    bounds: list[tuple[str, float]] = []
    check: ColumnCheck | None = None
    while get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        for meta in metadata:
            for inner in getattr(meta, "metadata", None) or [meta]:
                for kind in ("ge", "gt", "le", "lt"):
                    if type(inner).__name__ == kind.capitalize():
                        bounds.append((kind, float(getattr(inner, kind))))
            if isinstance(meta, PlainValidator | AfterValidator) and check is None:
                check = _VALIDATOR_CHECKS.get(meta.func)
        annotation = base
    if check is None:
        check = _plain_check(annotation)
    return required, _bounded(check, bounds) if bounds else check


def _plain_check(annotation: Any) -> ColumnCheck:
    if annotation is int:
        return _whole
    if annotation is str:
        return _text
    if get_origin(annotation) is Literal:
        return _choices(get_args(annotation))
    return lambda column: False  # anything else goes down the record path


def _time(column: pa.ChunkedArray) -> bool:
    values = _numbers(column)
    return values is not None and bool(np.isfinite(values).all() and (values >= 0).all())


_VALIDATOR_CHECKS: dict[Callable[..., Any], ColumnCheck] = {
    schemas._number: _finite_number, schemas._time: _time, schemas._non_empty: _non_empty_text,
}


def _rules_hold(stream: str, table: pa.Table) -> bool:
    """The rules across fields, applied to whole columns (each rule is written so that it can be); only the
    numeric columns become pandas."""
    rules = schemas.RECORD_RULES.get(stream, ())
    if not rules:
        return True
    numeric = [field.name for field in table.schema if pa.types.is_integer(field.type)
               or pa.types.is_floating(field.type)]
    frame = table.select(numeric).to_pandas()
    try:
        return all(bool(np.all(rule(frame))) for rule, _, _ in rules)
    except (TypeError, ValueError, KeyError):  # a rule that only reads one record at a time: the record path
        return False


_CHECKS: dict[str, dict[str, tuple[bool, ColumnCheck]]] = {
    stream: {name: _compile(annotation) for name, annotation in schemas.STREAM_RECORDS[stream].__annotations__.items()}
    for stream in FLAT_STREAMS
}


def read_frame(stream: str, data: bytes | memoryview, lines: int) -> pa.Table | None:
    """read_table, then the rules across fields (available <= total); None sends the file down the record path.
    The table stays in Arrow's memory until the summary joins a stream's files into one frame."""
    if len(data) < FAST_FROM_BYTES:
        return None
    table = read_table(stream, data, lines)
    if table is None or not _rules_hold(stream, table):
        return None
    return table
