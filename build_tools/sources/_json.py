"""JSON with every number kept as the text it was written with (for the agreement check between sources)."""

from __future__ import annotations

import json
import math
from typing import Any


class Number(str):
    """A number as written in JSON; float(self) is its value."""

    __slots__ = ()


def loads(text: str) -> Any:
    """json.loads, numbers as Number; NaN and Infinity (Python's json writes them) are accepted."""
    return json.loads(text, parse_float=Number, parse_int=Number, parse_constant=Number)


def value(item: Any) -> tuple[Any, str] | None:
    """A number (or the markers "NaN", "Infinity", "-Infinity") and its text; None for anything else."""
    if isinstance(item, Number):
        text = str(item)
        if text in ("NaN", "Infinity", "-Infinity"):
            return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[text], text
        number = float(text)
        return (int(text) if number.is_integer() and "." not in text and "e" not in text.lower() else number), text
    if isinstance(item, bool):
        return item, str(int(item))
    if isinstance(item, str) and item in ("NaN", "Infinity", "-Infinity"):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[item], item
    return None


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
