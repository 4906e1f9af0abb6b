"""The claim checks: a registry of small named, typed checks, and the approximate words they share.

`validate` checks a block's check parameters when the chapters are read; `evaluate` runs one on the run
summaries. The modules below register the checks on import.
"""

from __future__ import annotations

from build_tools.checking.checks import config, steps, timeline, values  # noqa: F401  (each registers its checks)
from build_tools.checking.checks._data import runs_text
from build_tools.checking.checks._numbers import NUMBER_WORDS, Token, claim_numbers, masked_spans, parse_number
from build_tools.checking.checks._registry import REGISTRY, CheckSpec, Ctx, Outcome, Param, evaluate, register, validate
from build_tools.checking.checks._words import expect, fmt, half_unit, words

__all__ = [
    "NUMBER_WORDS", "REGISTRY", "CheckSpec", "Ctx", "Outcome", "Param", "Token", "claim_numbers",
    "evaluate", "expect", "fmt", "half_unit", "masked_spans", "parse_number", "register", "runs_text",
    "validate", "words",
]
