"""The watch loop: follow the folder, judge each value as it arrives, hand each change of status on."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from build_tools.checking.contract import Contract
from build_tools.commands.watch.follow import Follower, Watcher, followed
from build_tools.commands.watch.judge import Change, Judge
from build_tools.commands.watch.live_sources import LiveSources
from build_tools.commands.watch.records import (
    LogArguments,
    Value,
    dump_values,
    log_message,
    log_values,
    setup_of_meta,
    setup_of_run_yaml,
)

SETUP_FILES = {"meta.json": setup_of_meta, "run.yaml": setup_of_run_yaml}
POLL_S = 0.25  # how often the loop looks up from the event queue to see whether it has been idle long enough


class Breach(Exception):
    """`--fail-on outside`: the first item outside its band."""

    def __init__(self, change: Change) -> None:
        super().__init__(change.item)
        self.change = change


@dataclass
class Watch:
    root: Path
    contract: Contract
    emit: Callable[[Change], None]
    warn: Callable[[str], None]
    fail_on_outside: bool = False
    judge: Judge = field(init=False)
    follower: Follower = field(init=False)
    live: LiveSources = field(init=False)
    steps: set[tuple[str, int]] = field(default_factory=set)
    _log_arguments: dict[Path, LogArguments] = field(default_factory=dict)
    _lines_read: dict[Path, int] = field(default_factory=dict)  # for a warning's line number

    def __post_init__(self) -> None:
        self.judge = Judge(self.contract)
        self.follower = Follower(self.root)
        self.live = LiveSources(self.warn)

    def run(self, until_idle: float | None = None, ready: Callable[[], None] | None = None) -> None:
        """Until `until_idle` seconds pass with nothing new (or forever: Ctrl-C ends it)."""
        with Watcher(self.root) as watcher:  # watching before the first read: nothing written between is lost
            existing = list(self.follower.existing())
            for path in existing:  # the setup first: a claim outside its envelope is never called undecided
                if path.name in SETUP_FILES:
                    self.take(path)
            self._emit(self.judge.start())
            for path in existing:
                self.take(path)
            if ready is not None:
                ready()
            last = time.monotonic()
            while until_idle is None or time.monotonic() - last < until_idle:
                changed = watcher.next_path(POLL_S)
                if changed is not None and self.take_any(changed):
                    last = time.monotonic()

    def take_any(self, path: Path) -> bool:
        if path.is_dir():  # a new folder: the files already in it (their own events may have come before it)
            return any([self.take(child) for child in sorted(path.rglob("*")) if child.is_file() and followed(child)])
        return self.take(path)

    def take(self, path: Path) -> bool:
        """Read what is new in one file; True when there was something."""
        if (values := self.live.take(path)) is not None:  # a TensorBoard, wandb or MLflow file
            self._judge_values(values)
            return self.live.grew
        if path.name in SETUP_FILES:
            chunk = self.follower.whole_file(path)
            if chunk is None:
                return False
            setup = SETUP_FILES[path.name](chunk.lines[0])
            if setup is not None:
                self._emit(self.judge.set_setup(setup))
            return True
        chunk = self.follower.read_new(path)
        if chunk is None:
            return False
        if chunk.restarted:
            self.warn(f"{path}: replaced or cut shorter (a rotated log or a restarted job): read again from its start")
        is_log = path.suffix != ".jsonl"
        arguments = self._log_arguments.setdefault(path, LogArguments())
        first = 1 if chunk.restarted else self._lines_read.get(path, 0) + 1
        self._lines_read[path] = first - 1 + len(chunk.lines)
        for number, line in enumerate(chunk.lines, start=first):
            if is_log and (setup := arguments.take(log_message(line))) is not None:
                self._emit(self.judge.set_setup(setup))
            try:
                values = list((log_values if is_log else dump_values)(line))
            except ValueError as error:
                self.warn(f"{path}:{number}: {error}; line skipped")
                continue
            self._judge_values(values)
        return True

    def _judge_values(self, values: list[Value]) -> None:
        for value in values:
            self.steps.add((value.step_key, value.step))
            self._emit(self.judge.value(value))

    def _emit(self, changes: list[Change]) -> None:
        for change in changes:
            self.emit(change)
            if self.fail_on_outside and change.status == "outside":
                raise Breach(change)
