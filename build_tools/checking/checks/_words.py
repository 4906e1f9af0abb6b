"""The approximate words (words.yml) and the comparisons every check shares: one meaning per word."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from build_tools.core._numbers import fmt as fmt  # re-exported: the checks write numbers with it
from build_tools.core._yaml import load_yaml

WORDS_FILE = Path(__file__).with_name("words.yml")


@cache
def words() -> dict[str, dict[str, Any]]:
    """The definitions in words.yml, read once."""
    definitions: dict[str, dict[str, Any]] = load_yaml(WORDS_FILE.read_text(encoding="utf-8"))
    return definitions


def setting(word: str, key: str, overrides: dict[str, Any]) -> Any:
    """A number of a word's definition, unless the check overrides it."""
    value = overrides.get(key)
    return words()[word][key] if value is None else value


def half_unit(written: str) -> float:
    """Half a unit of the last digit written: '720' -> 0.5, '0.015' -> 0.0005; a number word -> 0."""
    digits = re.match(r"[0-9,]*\.?[0-9]*", written.replace(",", ""))
    text = digits.group(0) if digits else ""
    if not any(ch.isdigit() for ch in text):
        return 0.0
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0 ** (-decimals)


@dataclass(frozen=True)
class Expectation:
    """What a claim needs of one number: an interval (ends included unless strict) and its words."""

    low: float
    high: float
    text: str  # "720 +/- 36", "above 0", "at least 0.9 (almost all)"
    strict: bool = False

    def holds(self, x: float) -> bool:
        if x is None or not math.isfinite(x):
            return False
        if self.strict:
            return self.low < x < self.high
        # A hair of slack for binary floats: 63.5 written as 63.49999999 must not flip a rounding.
        eps = 0.0 if self.low == self.high else 1e-9 * max(1.0, abs(x))  # "exactly" has no slack
        return self.low - eps <= x <= self.high + eps

    def off_by(self, x: float) -> str:
        """By how much x misses the interval, past its nearer end ("11 too low"); empty when it holds."""
        if self.holds(x) or x is None or not math.isfinite(x):
            return ""
        if x <= self.low:
            return f"{fmt(self.low - x)} too low"
        return f"{fmt(x - self.high)} too high"


def expect(word: str, value: float, written: str, overrides: dict[str, Any], unit: str = "") -> Expectation:
    """The interval `word value` stands for; `written` is the number as the claim writes it."""
    shown = written if written and any(ch.isdigit() for ch in written) else fmt(value)
    unit_text = ""  # the observation carries the unit: "is 655 tokens, expected 720 +/- 36"
    if overrides.get("tolerance") is not None and word in ("about", "near", "rounds"):
        tol = float(overrides["tolerance"])
        return Expectation(value - tol, value + tol, f"{shown} +/- {fmt(tol)}{unit_text} (tolerance set)")
    if word == "about":
        tol = max(setting("about", "relative", overrides) * abs(value), half_unit(written))
        return Expectation(value - tol, value + tol, f"{shown} +/- {fmt(tol)}{unit_text}")
    if word == "near":
        rel = setting("near", "relative", overrides)
        tol = rel * abs(value)
        return Expectation(value - tol, value + tol, f"{shown} +/- {fmt(tol)}{unit_text} (near: {fmt(rel * 100)} %)")
    if word == "rounds":
        tol = half_unit(written if written else repr(value))
        return Expectation(value - tol, value + tol, f"{shown} +/- {fmt(tol)}{unit_text}")
    if word == "exactly":
        return Expectation(value, value, f"exactly {shown}{unit_text}")
    if word == "above":
        return Expectation(value, math.inf, f"above {shown}{unit_text}", strict=True)
    if word == "below":
        return Expectation(-math.inf, value, f"below {shown}{unit_text}", strict=True)
    if word == "at_least":
        return Expectation(value, math.inf, f"at least {shown}{unit_text}")
    if word == "at_most":
        return Expectation(-math.inf, value, f"at most {shown}{unit_text}")
    if word == "almost_all":
        share = setting("almost_all", "at_least", overrides)
        return Expectation(share, math.inf, f"at least {fmt(share)} (almost all)")
    raise ValueError(f"unknown comparison word {word!r}")
