"""A test figure with a bug."""

from __future__ import annotations

ALT = "Never drawn."


def draw(runs, tables):
    steps = len(runs) - 1
    return 1 / steps
