"""A figure module of the chapter samples: the block reader reads its declarations, and never runs it."""

from typing import Any

OPTIONS = {"split": "number", "label": "text"}


def draw(runs: Any, tables: Any, options: Any = None) -> Any:
    raise NotImplementedError
