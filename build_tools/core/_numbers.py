"""Numbers for people: one way to write a number in every message, report and page (no pandas imported, so
that a check with nothing changed can print its margins without loading the build)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


def fmt(x: Any) -> str:
    """A number for a message: three significant digits, no trailing zeros, big numbers whole."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    size = abs(x)
    text = f"{x:.0f}" if size >= 100 else f"{x:.1f}" if size >= 10 else f"{x:.2f}" if size >= 1 else f"{x:.3g}"
    if "." in text and "e" not in text:
        text = text.rstrip("0").rstrip(".")
    return text


def number(value: float, decimals: int = 0) -> str:
    """A number at fixed decimals with a thousands separator: 1024 -> '1,024', 0.00063 (5) -> '0.00063'."""
    text = f"{value:,.{decimals}f}"
    # Rounding a small negative value must not print "-0.00".
    return text[1:] if text.startswith("-") and float(text[1:].replace(",", "")) == 0 else text


def join(items: Iterable[str], last: str = "and") -> str:
    """'a', 'a and b', 'a, b and c': the words of a message or a page (here, below the checks and the pages)."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"
