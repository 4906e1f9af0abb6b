"""What watch writes: a JSON line per change, a GitHub annotation per change, or a live view made for a terminal;
and, as the watch ends, the record of every item (what went outside stays outside in it).

Every string that comes from the data or the contract reaches the terminal through core/_escape.py: terminal_text
for text, github_text inside a workflow command, json_line for a JSON line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from build_tools.checking.contract import RangeItem
from build_tools.commands.watch.judge import Change, Judge, distance
from build_tools.core._escape import json_line, terminal_text, workflow_command
from build_tools.core._numbers import fmt

__all__ = ["Change", "LiveView", "emitter", "github_line", "jsonl_line", "summary_json", "summary_lines", "words"]

NEAR_EDGE = 0.1  # inside, but within this share of the band's width of an edge: shown before the rest
STATUS_WORDS = {"inside": "inside", "outside": "OUTSIDE", "undecided": "waiting", "not_applicable": "not applicable"}
# The contract's statistics in the manual's words (contract.RULES has their definitions).
STATISTIC_WORDS = {"each_step": "at every step", "first_value": "at the first step", "median": "median",
                   "logged_share": "share of steps logged"}


def jsonl_line(change: Change) -> str:
    return json_line(change.as_json())


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return fmt(value) if math.isfinite(value) else str(value)


def _bound(value: float) -> str:
    """A bound as the contract holds it (six significant digits: 0.345, 148.562), not rounded to three."""
    return f"{value:.6g}"


def named(change: Change) -> str:
    """The item in the manual's words: a Metrics row's meaning with its metric, a figure with its caption."""
    if change.kind == "range":
        return f"{change.title} ({change.item})" if change.title else change.item
    return change.title or change.item


def words(change: Change) -> str:
    """One line in words: the item, its status, and why (the value and band, since which step, the fact)."""
    what = named(change)
    at = f" at {change.step_key} {change.step}" if change.step is not None else ""
    band = f"{_bound(change.band[0])} to {_bound(change.band[1])}" if change.band else ""
    if change.kind == "range" and change.value is None and change.why and change.status in ("inside", "outside"):
        return f"{what}: {change.why}"  # a whole-run statistic, judged at the end: compare's verdict in words
    if change.status == "outside" and change.value is not None and change.band is not None:
        past = f"{_number(change.by)} past the band " if change.by is not None else "not a number, outside the band "
        since = f"outside since step {change.since_step}" if change.since_step is not None else "outside"
        return f"{what}: {since}{at}: {_number(change.value)} is {past}{band} ({change.source})"
    if change.status == "inside" and change.value is not None and change.band is not None:
        return f"{what}: inside{at}: {_number(change.value)} in {band}"
    return f"{what}: {change.status.replace('_', ' ')}{at}" + (f" ({change.why})" if change.why else "")


def github_line(change: Change) -> str | None:
    """An `::error` for an item outside, a `::notice` for one not applicable; nothing for the others."""
    kind = {"outside": "error", "not_applicable": "notice"}.get(change.status)
    if kind is None:
        return None
    return workflow_command(kind, words(change), {"title": f"watch {change.kind} {change.item}"})


# --- the record, as the watch ends ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    run: str
    edition: str
    version: int
    steps: str  # "48 rollout steps (0 to 47)"
    ended: str


def heading_of(judge: Judge, steps: set[tuple[str, int]], run: str, ended: str | None) -> Heading:
    """What was watched: the run, the edition and contract, its steps by the rollout id, why the watch ended."""
    by_key: dict[str, list[int]] = {}
    for key, step in steps:
        by_key.setdefault(key, []).append(step)
    key = "rollout/step" if "rollout/step" in by_key else min(by_key, default="")
    numbers = sorted(by_key.get(key, []))
    shown = (f"{len(numbers)} {key.split('/')[0]} step{'s' if len(numbers) != 1 else ''} ({numbers[0]} to "
             f"{numbers[-1]})") if numbers else "no step"
    return Heading(run, judge.contract.edition, judge.contract.version, shown, ended or "stopped")


def final_status(judge: Judge, change: Change) -> str:
    """An item's status in the record: one that went outside at any step stays outside."""
    if change.kind == "range" and judge.records.get(change.item) is not None and judge.records[change.item].outside:
        return "outside"
    return change.status


def breach_line(judge: Judge, item: RangeItem) -> str:
    """A range that went outside: its first step, worst value, steps outside, last step outside, in words."""
    record = judge.records[item.id]
    band = (item.low, item.high)
    first, last, worst = record.first_outside(), record.last_outside(), record.worst(band)
    if first is None or last is None or worst is None:
        return ""
    if first[1] < 0:  # a whole-run statistic: no one step
        status = judge.status.get(("range", item.id))
        return f"{item.title} ({item.id}), {STATISTIC_WORDS[item.statistic]}: {status.why if status else ''}"
    count = len(record.outside)
    return (f"{item.title} ({item.id}): first outside at {first[0]} {first[1]}, worst {_number(worst[1])} at step "
            f"{worst[0]} (holds from {_bound(item.low)} to {_bound(item.high)}{_unit(item)}), {count} step"
            f"{'s' if count != 1 else ''} outside, last at step {last[1]}")


def _unit(item: RangeItem) -> str:
    return f" {item.unit}" if item.unit == "s" or item.unit == "tokens" else ""


def where_to_look(item: RangeItem, site: str = "") -> list[str]:
    """The row of the Metrics page to read (its link beside the contract: `site`), and Miles' own line for the
    metric where it draws one."""
    lines = [f"see {item.source}: {site}{item.link}"]
    if item.guidance is not None:
        side = "under" if item.guidance.direction == "below" else "over"
        lines.append(f"Miles: keep it {side} {fmt(item.guidance.threshold)} (\"{item.guidance.quote}\", "
                     f"{item.guidance.source})")
    return lines


def summary_lines(judge: Judge, heading: Heading, site: str = "") -> list[str]:
    """The record of every item, as the watch ends: breaches first, with where to look and what Miles says."""
    changes = list(judge.status.values())
    statuses = [final_status(judge, change) for change in changes]
    counts = {status: statuses.count(status) for status in ("outside", "inside", "undecided", "not_applicable")}
    lines = [f"Watched {terminal_text(heading.run)} against the manual's edition {terminal_text(heading.edition)} "
             f"(contract version {heading.version}): {heading.steps}; ended: "
             f"{terminal_text(heading.ended)}",
             f"{counts['outside']} went outside, {counts['inside']} inside, {counts['undecided']} undecided, "
             f"{counts['not_applicable']} not applicable"]
    for item in judge.contract.ranges:
        if judge.records[item.id].outside:
            lines.append(f"  OUTSIDE {terminal_text(breach_line(judge, item))}")
            lines += [f"          {terminal_text(line)}" for line in where_to_look(item, site)]
    for value in judge.non_finite:
        lines.append(f"  NOT A NUMBER {terminal_text(value.metric)}: {value.value} at {value.step_key} {value.step}")
    claims = {claim.id: claim for claim in judge.contract.claims}
    for change, status in zip(changes, statuses, strict=True):
        if change.kind == "claim" and status == "outside":
            link = claims[change.item].link if change.item in claims else ""
            lines.append(f"  OUTSIDE {terminal_text(words(change))}")
            lines.append(f"          see the figure: {terminal_text(site + link)}")
    for change, status in zip(changes, statuses, strict=True):
        if status != "outside":
            lines.append(f"  {terminal_text(words(change))}")
    return lines


def summary_json(judge: Judge, heading: Heading) -> str:
    """The record as one JSON line (`--format jsonl`'s last line)."""
    breaches = []
    for item in judge.contract.ranges:
        record = judge.records[item.id]
        first, last, worst = record.first_outside(), record.last_outside(), record.worst((item.low, item.high))
        if first is None or last is None or worst is None:
            continue
        breaches.append({"item": item.id, "first_step": first[1] if first[1] >= 0 else None,
                         "last_step": last[1] if last[1] >= 0 else None,
                         "worst": worst[1] if math.isfinite(worst[1]) else None,
                         "steps_outside": len(record.outside) if first[1] >= 0 else None, "link": item.link})
    statuses = {f"{change.kind}:{change.item}": final_status(judge, change) for change in judge.status.values()}
    return json_line({"kind": "summary", "run": heading.run, "edition": heading.edition, "version": heading.version,
                      "steps": heading.steps, "ended": heading.ended, "went_outside": judge.went_outside(),
                      "breaches": breaches, "statuses": statuses,
                      "not_finite": [{"metric": v.metric, "step_key": v.step_key, "step": v.step,
                                      "value": str(v.value)} for v in judge.non_finite]})


# --- the live view --------------------------------------------------------------------------------------------


def _order(judge: Judge, change: Change) -> tuple[int, str]:
    """Breaches first, then what is near an edge, then the rest (inside, waiting, not applicable)."""
    status = final_status(judge, change)
    if status == "outside":
        return 0, change.item
    record = judge.records.get(change.item)
    if change.kind == "range" and record is not None and record.last is not None and change.band is not None:
        if status == "inside" and near_edge(record.last.value, change.band):
            return 1, change.item
    rank = {"inside": 2, "undecided": 3, "not_applicable": 4}.get(status, 5)
    return rank, f"{change.kind != 'range'}{change.item}"  # within a rank, the ranges (judged live) first


class LiveView:
    """rich's Live, redrawn from the judge's state at every read and every poll: run, edition, contract, current
    step and age of the last data on top; breaches first with where to look, then what is near an edge, then the
    rest; as many rows as the terminal holds."""

    def __init__(self, stream: TextIO, height: int | None = None, width: int | None = None, site: str = "") -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console(file=stream, height=height, width=width)
        self._live = Live(console=self.console, auto_refresh=False, transient=False,
                          vertical_overflow="crop")
        self.site = site  # where the contract's links are relative to: the folder of contract.json
        self.frames = 0  # how many times the view was redrawn (the tests see it change)
        self.last_frame = ""

    def __enter__(self) -> LiveView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._live.__exit__(*exc)

    def update(self, judge: Judge, steps: set[tuple[str, int]], run: str, last_data: float | None) -> None:
        from rich.console import Group
        from rich.text import Text

        lines = self.lines(judge, steps, run, last_data)
        frame = "\n".join(lines)
        if frame == self.last_frame:
            return
        self.last_frame = frame
        self.frames += 1
        self._live.update(Group(*(Text(line, no_wrap=True, overflow="ellipsis",
                                       style=_style(line)) for line in lines)), refresh=True)

    def lines(self, judge: Judge, steps: set[tuple[str, int]], run: str, last_data: float | None) -> list[str]:
        """The frame as lines of text, at most the terminal's height and width."""
        height, width = self.console.size.height, self.console.size.width
        rollouts = sorted({step for key, step in steps if key == "rollout/step"})
        age = "no data yet" if last_data is None else f"last data {time.monotonic() - last_data:.0f} s ago"
        contract = judge.contract
        changes = sorted(judge.status.values(), key=lambda change: _order(judge, change))
        ranks = [_order(judge, change)[0] for change in changes]
        counts = [final_status(judge, change) for change in changes]
        top = [f"watch {terminal_text(run)} · edition {terminal_text(contract.edition)} · contract v{contract.version}",
               f"rollout step {rollouts[-1] if rollouts else '-'} · {len(rollouts)} rollout steps read · {age}",
               f"{counts.count('outside')} outside, {ranks.count(1)} near an edge, {counts.count('inside')} inside, "
               f"{counts.count('undecided')} waiting, {counts.count('not_applicable')} not applicable"]
        body: list[str] = []
        items = {item.id: item for item in contract.ranges}
        for change, rank in zip(changes, ranks, strict=True):
            if rank == 0 and change.item in items:
                body += self._breach(judge, items[change.item])
            else:
                body.append(self._row(judge, change, width, "near" if rank == 1 else None))
        room = max(height - len(top) - 1, 1)
        if len(body) > room:
            hidden = len(body) - room + 1
            body = body[:room - 1] + [f"… {hidden} more (inside, waiting or not applicable): all in the summary at "
                                      "the end"]
        return [_fit(line, width) for line in top + body]

    def _width(self) -> int:
        return self.console.size.width

    def _breach(self, judge: Judge, item: RangeItem) -> list[str]:
        """A range that went outside: what it is, its record, where to look, what Miles says."""
        record = judge.records[item.id]
        first, last, worst = record.first_outside(), record.last_outside(), record.worst((item.low, item.high))
        now = f"  now {_number(record.last.value)} at {record.last.step}" if record.last is not None else ""
        if first is not None and first[1] >= 0 and last is not None and worst is not None:
            count = len(record.outside)
            told = (f"{count} step{'s' if count != 1 else ''} outside, first {first[1]}, last {last[1]}, worst "
                    f"{_number(worst[1])}")
        else:
            told = STATISTIC_WORDS[item.statistic]
        return [f"OUTSIDE  {terminal_text(item.title or item.id)} ({terminal_text(item.id)}){now}",
                f"    {told}; holds {_bound(item.low)} to {_bound(item.high)}{_unit(item)}",
                *(_fit_tail(f"    {terminal_text(line)}", self._width()) for line in where_to_look(item, self.site))]

    def _row(self, judge: Judge, change: Change, width: int, label: str | None) -> str:
        status = label or STATUS_WORDS[final_status(judge, change)]
        record = judge.records.get(change.item) if change.kind == "range" else None
        now = ""
        if record is not None and record.last is not None:
            now = f"{_number(record.last.value)} at {record.last.step}"
        band = f"{_bound(change.band[0])} to {_bound(change.band[1])}" if change.band else ""
        item = judge.items.get(change.item) if change.kind == "range" else None
        if item is not None and item.statistic in ("median", "logged_share") and band:
            band = f"{STATISTIC_WORDS[item.statistic]} {band}"  # what the end will judge
        right = f"{now}  [{band}]" if now else f"[{band}]" if band else ""
        text = f"{status:<8} {terminal_text(named(change))}"
        room = width - len(right) - 1
        if len(text) > room:
            text = text[:max(room - 1, 10)] + "…"
        return f"{text:<{room}} {right}"


def _fit(line: str, width: int) -> str:
    return line if len(line) <= width else line[:width - 1] + "…"


def _fit_tail(line: str, width: int) -> str:
    """A line with a link: its end kept (the page and the row), its middle cut (a long folder)."""
    if len(line) <= width:
        return line
    head = line[:line.index(": ") + 2] if ": " in line[:width // 2] else "    "
    return head + "…" + line[len(line) - (width - len(head) - 1):]


def _style(line: str) -> str:
    if line.startswith("OUTSIDE"):
        return "bold red"
    if line.startswith("    "):
        return "red"
    if line.startswith("near"):
        return "yellow"
    if line.startswith("waiting") or line.startswith("not appl"):
        return "dim"
    return ""


def emitter(form: str, write: Callable[[str], None]) -> Callable[[Change], None]:
    """Each change as jsonl or a workflow command (the live view reads the judge's state instead)."""
    def emit(change: Change) -> None:
        if form == "jsonl":
            write(jsonl_line(change))
        elif form == "github":
            if (line := github_line(change)) is not None:
                write(line)
    return emit


def outside_now(judge: Judge) -> bool:
    """Whether anything went outside during the watch: the exit code says it, whatever the format."""
    return bool(judge.went_outside()) or bool(judge.non_finite)


def near_edge(value: float, band: tuple[float, float]) -> bool:
    width = band[1] - band[0]
    return distance(value, band) == 0 and width > 0 and min(value - band[0], band[1] - value) < NEAR_EDGE * width
