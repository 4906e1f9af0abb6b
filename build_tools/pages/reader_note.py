"""The "checked against the runs" note in words a reader follows.

A check reports for its authors (build/claims.json keeps that, unchanged): configuration keys
(`flags.use_fault_tolerance`, `lab.ray_memory_usage_threshold`), tolerances as `720 +/- 36`, arrows. The
note under a figure says the same thing in plain words: a Miles flag as the flag a reader types
(`--use-fault-tolerance`), a lab field by what it is ("Ray's memory limit"), a tolerance as the range of
values the words allow ("between 684 and 756 tokens"), with the unit the observation carries. The words
here are only rewordings: every number still comes from the check.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

# What a field of run.yaml or a lab stream is, for a reader (runs/README.md documents each).
FIELDS: Mapping[str, str] = {
    "lab.ray_memory_usage_threshold": "Ray's memory limit",
    "lab.heat_guard": "the heat guard",
    "lab.sampling_replay": "top-p and top-k replay",
    "model.size": "the model size",
    "hardware.chip": "the chip",
    "hardware.memory_pools": "the number of memory pools",
    "hardware.gpus": "the number of GPUs",
    "sampling.batches": "the over-sampling batches drawn",
    "sampling.reward_before_filter": "the mean reward before the filter",
    "host_memory used_frac": "the share of host memory in use",
    "gpu_util util": "GPU use",
    "ray_oom_kill": "Ray's out-of-memory (OOM) kill",
    "drop_zero_std": "the groups dropped",
}
# The phases of a step, as the captions name them.
PHASES: Mapping[str, str] = {
    "log_probs": "log probabilities",
    "actor_train": "training",
    "update_weights": "weight update",
    "wake_up": "wake-up",
    "train_wait": "the trainer's wait",
}
# Units an observation may carry after a number; the range a tolerance allows takes the same unit.
_UNITS = ("tokens", "min", "ms", "s", "GiB", "GB", "%")
_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
_TOLERANCE = re.compile(rf"({_NUMBER}) \+/- ({_NUMBER})(?: \((?:tolerance set|near: {_NUMBER} %)\))?")
_FLAG = re.compile(r"\bflags\.([a-z0-9_]+)")
_KEY = re.compile(r"\b(?:lab|model|hardware|sampling|miles)\.[a-z0-9_]+")

# How each figure's note of its claim begins (chapters.py); `make serve` marks these not checked while the build is
# broken (build_tools/website/overlay.py).
CHECKED_SUMMARY = "Checked against the runs:"


def _places(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def _number(value: Decimal, places: int) -> str:
    text = f"{value:,.{places}f}"
    return text[1:] if text.startswith("-") and Decimal(text[1:].replace(",", "")) == 0 else text


def allowed_range(centre: str, tolerance: str, unit: str = "") -> str:
    """'720', '36' -> 'between 684 and 756' (+ the unit): the values a word such as "about" allows."""
    try:
        middle, half = Decimal(centre), Decimal(tolerance)
    except InvalidOperation:
        return f"{centre} give or take {tolerance}"
    places = max(_places(centre), _places(tolerance))
    low, high = _number(middle - half, places), _number(middle + half, places)
    suffix = "" if not unit else (unit if unit == "%" else f" {unit}")
    return f"between {low} and {high}{suffix}"


def unit_of(text: str) -> str:
    """The first unit written after a number in an observation ('is 721 tokens' -> 'tokens')."""
    match = re.search(rf"[0-9]\s?({'|'.join(re.escape(u) for u in _UNITS)})(?![\w])", text)
    return match.group(1) if match else ""


def _flag(match: re.Match[str]) -> str:
    return f"the flag \0--{match.group(1).replace('_', '-')}\1"


def plain(text: str, unit: str = "") -> str:
    """A check's message or expectation in plain words, as HTML (flags as code, everything else escaped)."""
    text = _TOLERANCE.sub(lambda m: allowed_range(m.group(1), m.group(2), unit), text)
    text = text.replace(" -> ", " → ").replace(" <= ", " at most ").replace(" >= ", " at least ")
    for key, words in sorted(FIELDS.items(), key=lambda item: -len(item[0])):
        text = text.replace(key, words)
    text = _FLAG.sub(_flag, text)
    text = _KEY.sub(lambda m: m.group(0).split(".", 1)[1].replace("_", " "), text)
    for key, words in PHASES.items():
        text = re.sub(rf"(?<![\w/]){key}(?![\w/])", words, text)
    # What is left in snake_case is a metric's name, as the Metrics page and the dashboard write it.
    text = re.sub(r"(?<![\w/\0-])([a-z0-9]+(?:_[a-z0-9]+)+)(?![\w/])", "\0\\1\1", text)
    escaped = html.escape(text)
    return escaped.replace("\0", "<code>").replace("\1", "</code>")


def check_item(says: str, message: str, expected: str, params: Mapping[str, Any]) -> str:
    """One check as a list item: the claim's words, what the runs show, what the words need."""
    unit = str(params.get("unit") or "") or unit_of(message)
    return (f"<li><q>{html.escape(says)}</q>: {plain(message, unit)} "
            f'<span class="manual-needs">(the claim needs {plain(expected, unit)})</span></li>')
