"""The numbers of a claim: every one must be bound by a check or a run-configuration fact."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

NUMBER_WORDS: dict[str, float] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "half": 0.5, "both": 2,
}
# Digits, with thousands commas and decimals, optionally glued to a unit (4B, 0.6B, 45s). Not digits inside
# an identifier: nothing word-like or a dot right before (GB10, Qwen3, v1.2), nor a word and a dash (Qwen3-4B);
# and the token must end at a word boundary (so 3B5 is no number).
DIGITS = re.compile(r"(?<![\w.])(?<!\w-)(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?(?:[A-Za-z]+)?(?![\w])")
WORDS = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Token:
    """One number of the claim text, as written."""

    text: str  # "1,024", "0.6B", "one" (number words in lower case)
    value: float
    start: int
    end: int


def parse_number(text: str) -> float | None:
    """The value of a number as written ('1,024' -> 1024, '4B' -> 4, 'half' -> 0.5); None if not one."""
    word = NUMBER_WORDS.get(text.strip().lower())
    if word is not None:
        return float(word)
    match = re.fullmatch(r"(-?[0-9,]*\.?[0-9]+)\s*[A-Za-z%]*", text.strip())
    if not match:
        return None
    try:
        return float(match.group(1).replace(",", ""))
    except ValueError:
        return None


def as_number(value: Any) -> float | None:
    """A check parameter as a number, if it is one (bools are not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return parse_number(value)
    return None


def masked_spans(claim: str, prose: Iterable[str]) -> list[tuple[int, int]]:
    """Where the block's idioms sit in the claim: number words inside them are prose, not quantities."""
    spans = []
    lower = claim.lower()
    for phrase in prose:
        start = lower.find(phrase.lower())
        while start >= 0:
            spans.append((start, start + len(phrase)))
            start = lower.find(phrase.lower(), start + 1)
    return spans


def claim_numbers(claim: str, prose: Iterable[str] = ()) -> list[Token]:
    """Every number of the claim, in order, except those inside a declared idiom."""
    spans = masked_spans(claim, prose)
    tokens = [Token(m.group(0), parse_number(m.group(0)) or 0.0, m.start(), m.end()) for m in DIGITS.finditer(claim)]
    tokens += [Token(m.group(0).lower(), NUMBER_WORDS[m.group(0).lower()], m.start(), m.end())
               for m in WORDS.finditer(claim)]
    kept = [t for t in tokens if not any(a <= t.start and t.end <= b for a, b in spans)]
    return sorted(kept, key=lambda t: t.start)


def same_number(token: Token, value: Any) -> bool:
    """Whether a check's expected value is the number the claim writes."""
    if isinstance(value, str) and value.strip().lower() == token.text.lower():
        return True
    number = as_number(value)
    return number is not None and math.isclose(number, token.value, rel_tol=1e-9, abs_tol=1e-12)
