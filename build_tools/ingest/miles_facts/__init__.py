"""Facts about Miles read from its own source, kept as data with the commit they come from: its launch parser's
flags and the keys its dashboard writes to meta.json (miles_args.json beside this file, `make miles-facts`)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "miles_args.json"


@cache
def _facts() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def snapshot_keys() -> tuple[str, ...]:
    """The args keys Miles' dashboard writes to meta.json (miles/dashboard/args.py _SNAPSHOT_KEYS)."""
    return tuple(_facts()["snapshot_keys"])


def flags() -> dict[str, dict[str, Any]]:
    """Every flag of Miles' launch parser (train.py, --train-backend fsdp), by its dest."""
    found: dict[str, dict[str, Any]] = _facts()["flags"]
    return found


def commit() -> str:
    return str(_facts()["miles_commit"])
