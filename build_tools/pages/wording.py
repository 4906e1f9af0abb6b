"""How the pages write numbers and say where the data comes from: shared by every rendered page."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from build_tools.core._numbers import join, number

__all__ = ["Provenance", "join", "number", "provenance", "words"]  # number: core's, the one way a page writes one

_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
          "twelve")


def words(count: int) -> str:
    """Small counts as words ('one GB10', 'the first two steps'), larger ones as digits."""
    return _WORDS[count] if 0 <= count < len(_WORDS) else number(count)


@dataclass(frozen=True)
class Provenance:
    """Which of a set of runs were measured and which are synthesized examples."""

    measured: tuple[str, ...]
    examples: tuple[str, ...]

    @property
    def kind(self) -> str:
        """'measured', 'example' or 'mixed'."""
        if self.measured and self.examples:
            return "mixed"
        return "measured" if self.measured else "example"

    def sentence(self, machine: str) -> str:
        """Where the numbers of a page come from, true of the runs it was built from."""
        if self.kind == "measured":
            return f"Every measured number in a figure comes from our runs on one {machine}."
        if self.kind == "example":
            return (f"Every number in a figure comes from synthesized example runs of one {machine}, "
                    "not from measurements.")
        return f"The numbers in the figures come from runs of one {machine}: {self._mix()}."

    def source(self) -> str:
        """What 'The ranges come from ...' ends with."""
        if self.kind == "measured":
            return "our lab runs"
        if self.kind == "example":
            return "synthesized example runs, not from measurements"
        return f"our runs: {self._mix()}"

    def footer(self) -> str:
        """The footer's note on the data, one short line: how many runs of each kind, never their ids."""
        return f"Built from {self.counted(built=True)}."

    def counted(self, built: bool = False) -> str:
        """'20 synthesized example runs', '12 measured and 8 synthesized example runs'; the footer's `built`
        form says that examples are not measurements."""
        measured, examples = len(self.measured), len(self.examples)
        example_words = "synthesized example run" + ("" if examples == 1 else "s")
        if self.kind == "measured":
            return f"{number(measured)} measured run{'' if measured == 1 else 's'}"
        if self.kind == "example":
            return f"{number(examples)} {example_words}" + (", not measurements" if built else "")
        return f"{number(measured)} measured and {number(examples)} {example_words}"

    def _mix(self) -> str:
        return (f"{_count(self.measured, 'measured run')} ({', '.join(self.measured)}) and "
                f"{_count(self.examples, 'synthesized example run')} ({', '.join(self.examples)}), "
                "which are not measurements")


def _count(ids: tuple[str, ...], noun: str) -> str:
    return f"{words(len(ids))} {noun}{'' if len(ids) == 1 else 's'}"


def provenance(configs: Mapping[str, Mapping[str, Any]]) -> Provenance:
    """Provenance of the runs by id: only `provenance: measured` counts as a measurement."""
    measured = tuple(sorted(rid for rid, cfg in configs.items() if cfg.get("provenance") == "measured"))
    examples = tuple(sorted(rid for rid in configs if rid not in measured))
    return Provenance(measured, examples)
