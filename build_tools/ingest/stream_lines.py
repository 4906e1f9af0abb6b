"""A stream file read line by line: each line parsed as JSON (its depth told first, a bare NaN or Infinity kept
non-finite, an integer within 64 bits) and checked against its stream's record schema (schemas_dump.py). The
record path: what words every problem of a file, at its line (stream_columns.py falls back to it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import InputProblem, Problem, display_path
from build_tools.core._files import (
    STREAM_LIMIT,
    decode_utf8,
    read_bytes,
)
from build_tools.core._types import Record
from build_tools.ingest import _columnar, schemas, schemas_dump

MAX_JSON_DEPTH = _columnar.MAX_JSON_DEPTH


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
    records, found = schemas_dump.validate_records(stream, parsed, where, numbers)
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
