"""What watch writes: a JSON line per change, a GitHub annotation per change, or a table updated in place."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TextIO

from build_tools.commands.watch.judge import Change
from build_tools.core._escape import json_line, terminal_text, workflow_command
from build_tools.core._numbers import fmt

__all__ = ["Change", "LiveTable", "emitter", "github_line", "jsonl_line", "summary_lines", "words"]


def jsonl_line(change: Change) -> str:
    return json_line(change.as_json())


def words(change: Change) -> str:
    """One line in words: the item, its status, and why (the value and band, since which step, the fact)."""
    what = f"{change.item}" if change.kind == "range" else f"fig {change.item}"
    at = f" at {change.step_key} {change.step}" if change.step is not None else ""
    if change.status == "outside" and change.band is not None and change.value is not None:
        return (f"{what}: outside since step {change.since_step}{at}: {fmt(change.value)} is {fmt(change.by or 0)} "
                f"past the band {fmt(change.band[0])} to {fmt(change.band[1])} ({change.source})")
    if change.status == "inside" and change.value is not None and change.band is not None:
        return f"{what}: inside{at}: {fmt(change.value)} in {fmt(change.band[0])} to {fmt(change.band[1])}"
    return f"{what}: {change.status.replace('_', ' ')}{at}" + (f" ({change.why})" if change.why else "")


def github_line(change: Change) -> str | None:
    """An `::error` for an item outside, a `::notice` for one not applicable; nothing for the others."""
    kind = {"outside": "error", "not_applicable": "notice"}.get(change.status)
    if kind is None:
        return None
    return workflow_command(kind, words(change), {"title": f"watch {change.kind} {change.item}"})


def summary_lines(changes: Iterable[Change], steps: int) -> list[str]:
    """The last status of every item, as the watch ends."""
    final = list(changes)
    counts = {status: sum(c.status == status for c in final)
              for status in ("inside", "outside", "undecided", "not_applicable")}
    lines = [f"Watched {steps} steps: " + ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in counts.items())]
    lines += [f"  {words(change)}" for change in final]
    return lines


class LiveTable:
    """rich's Live: one row per item, updated in place as its status changes."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.live import Live

        self._rows: dict[tuple[str, str], Change] = {}
        self._live = Live(console=Console(file=stream), auto_refresh=False, transient=False)

    def __enter__(self) -> LiveTable:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._live.__exit__(*exc)

    def update(self, change: Change) -> None:
        from rich.table import Table

        self._rows[(change.kind, change.item)] = change
        table = Table("item", "status", "step", "value", "band")
        colour = {"inside": "green", "outside": "red", "undecided": "yellow", "not_applicable": "dim"}
        for row in self._rows.values():
            band = f"{fmt(row.band[0])} to {fmt(row.band[1])}" if row.band else ""
            table.add_row(terminal_text(row.item), f"[{colour[row.status]}]{row.status}[/]",
                          "" if row.step is None else str(row.step),
                          "" if row.value is None else fmt(row.value), band)
        self._live.update(table, refresh=True)


def emitter(form: str, write: Callable[[str], None], live: LiveTable | None) -> Callable[[Change], None]:
    def emit(change: Change) -> None:
        if form == "jsonl":
            write(jsonl_line(change))
        elif form == "github":
            if (line := github_line(change)) is not None:
                write(line)
        elif live is not None:
            live.update(change)
    return emit
