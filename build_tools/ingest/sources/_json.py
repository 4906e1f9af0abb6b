"""JSON with every number kept as the text it was written with (for the agreement check between sources)."""

from __future__ import annotations

import json
from typing import Any

from build_tools.ingest import schemas

NON_FINITE = {name: schemas.WrittenNonFinite(number) for name, number in schemas.NON_FINITE.items()}


class Number(str):
    """A number as written in JSON; float(self) is its value."""

    __slots__ = ()


def loads(text: str) -> Any:
    """json.loads, numbers as Number; NaN and Infinity (Python's json writes them) are accepted."""
    return json.loads(text, parse_float=Number, parse_int=Number, parse_constant=Number)


def value(item: Any) -> tuple[Any, str] | None:
    """A number (or the markers "NaN", "Infinity", "-Infinity", kept as written non-finite numbers) and its text;
    None for anything else. A number too large for a double reads as a plain infinity, which the schema refuses."""
    if isinstance(item, str) and item in NON_FINITE:
        return NON_FINITE[item], str(item)
    if isinstance(item, Number):
        text = str(item)
        return (whole(text) if text.lstrip("-").isdigit() else float(text)), text
    if isinstance(item, bool):
        return item, str(int(item))
    return None


class TooLong(int):
    """A whole number too long for Python to convert (4300 digits): as far beyond 64 bits as the schema's check
    needs to refuse it, and shown by its length."""

    digits: int

    def __new__(cls, text: str) -> TooLong:
        number = super().__new__(cls, -(2**64) if text.startswith("-") else 2**64)
        number.digits = len(text.lstrip("-"))
        return number

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def whole(text: str) -> int:
    """A whole number's text as an int."""
    return int(text) if len(text) <= 4000 else TooLong(text)


def plain(item: Any) -> Any:
    """The same document with Numbers as int or float."""
    if isinstance(item, Number):
        found = value(item)
        return found[0] if found else str(item)
    if isinstance(item, dict):
        return {k: plain(v) for k, v in item.items()}
    if isinstance(item, list):
        return [plain(v) for v in item]
    return item
