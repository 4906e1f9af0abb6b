"""The watch loop: follow the folder, judge each value as it arrives, hand each change of status on, and notice
the job's end: Miles' own end records (Ray's `Job '...' succeeded|failed|was stopped` in a followed log, the
`job_end` event `manual record --until-exit` writes into lab/events.jsonl) or a quiet period (--until-idle)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from build_tools.checking.contract import Contract
from build_tools.commands.watch.follow import Chunk, Follower, Watcher, followed
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
from build_tools.core._exceptions import Problem
from build_tools.core._files import LINE_LIMIT, confined
from build_tools.ingest.sources.log import EVENT_PATTERNS

SETUP_FILES = {"meta.json": setup_of_meta, "run.yaml": setup_of_run_yaml}
POLL_S = 0.25  # how often the loop looks up from the event queue: the idle clock, the live view's age of the data
END_GRACE_S = 1.0  # after an end record: the lines still on their way (another file's last flush) are read
EARLY_RETRY_S = 2.0  # a claim judged early is read again at most this often, while new steps come (early.py)
# figure id -> (holds, detail) of each claim `compare` checks on the run as it is now; None: not readable yet
ClaimVerdicts = Mapping[str, tuple[bool | None | str, str]]
JOB_END = [pattern for kind, pattern in EVENT_PATTERNS if kind == "job_end"]


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
    on_tick: Callable[[], None] | None = None  # after each read with news, and at every poll (the live view)
    claims_now: Callable[[], ClaimVerdicts | None] | None = None  # compare's claims on the run so far (early.py)
    judge: Judge = field(init=False)
    follower: Follower = field(init=False)
    live: LiveSources = field(init=False)
    steps: set[tuple[str, int]] = field(default_factory=set)
    ended: str | None = None  # why the watch ended: the job's end record, a quiet period, Ctrl-C
    last_data: float | None = None  # time.monotonic() of the last line with news
    run_name: str | None = None  # meta.json's run_name, run.yaml's run_id
    _log_arguments: dict[Path, LogArguments] = field(default_factory=dict)
    _lines_read: dict[Path, int] = field(default_factory=dict)  # for a warning's line number
    _early_tried: tuple[float, int] = (-EARLY_RETRY_S, 0)  # when the early claims were last judged, at how many steps

    def __post_init__(self) -> None:
        self.judge = Judge(self.contract)
        self.follower = Follower(self.root)
        self.live = LiveSources(self.warn)

    def run(self, until_idle: float | None = None, ready: Callable[[], None] | None = None) -> None:
        """Until the job's end is read (and END_GRACE_S more), or `until_idle` seconds pass with nothing new (or
        forever: Ctrl-C ends it)."""
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
            end_read: float | None = None
            while True:
                quiet = time.monotonic() - last
                if self.ended is not None and end_read is None:
                    end_read = time.monotonic()
                if end_read is not None and time.monotonic() - end_read >= END_GRACE_S and quiet >= END_GRACE_S / 2:
                    return
                if end_read is None and until_idle is not None and quiet >= until_idle:
                    self.ended = f"no new data for {until_idle:g} s"
                    return
                changed = watcher.next_path(POLL_S)
                if changed is not None and self.take_any(changed):
                    last = time.monotonic()
                self.judge_early()
                self._tick()

    def judge_early(self) -> None:
        """The claims that read only the run's setup (early.py), judged by `compare` on the run as it is, once the
        setup and a step are in; again at the next new step while compare cannot judge them yet."""
        if self.claims_now is None or self.judge.setup is None or not self.steps or not self.judge.early_claims():
            return
        tried, at_steps = self._early_tried
        if len(self.steps) == at_steps or time.monotonic() - tried < EARLY_RETRY_S:
            return
        self._early_tried = (time.monotonic(), len(self.steps))
        verdicts = self.claims_now()
        if verdicts is None:
            return
        wanted = {claim.id for claim in self.judge.early_claims()}
        self._emit(self.judge.close_claims({item: verdict for item, verdict in verdicts.items() if item in wanted}))

    def _tick(self) -> None:
        if self.on_tick is not None:
            self.on_tick()

    def take_any(self, path: Path) -> bool:
        if path.is_dir() and path.is_symlink():  # a link to a folder (wandb's latest-run): not entered, as the batch
            return False  # readers do; the files are read where they are
        if path.is_dir():  # a new folder: the files already in it (their own events may have come before it)
            return any([self.take(child) for child in sorted(path.rglob("*"))
                        if not child.is_dir() and followed(child)])
        return self.take(path)

    def take(self, path: Path) -> bool:
        """Read what is new in one file; True when there was something."""
        if (values := self.live.take(path)) is not None:  # a TensorBoard, wandb or MLflow file
            self._judge_values(values)
            if self.live.grew:
                self.last_data = time.monotonic()
                self._tick()
            return self.live.grew
        if path.name in SETUP_FILES:
            return self._take_setup(path)
        taken = False
        while (chunk := self.follower.read_new(path)) is not None:
            taken = True
            self._take_lines(chunk)
            if not chunk.more:
                break
        if taken:
            self.last_data = time.monotonic()
            self._tick()
        return taken

    def _take_setup(self, path: Path) -> bool:
        """meta.json or run.yaml, read and checked by the loader's own rules (its schemas, size and nesting limits,
        no YAML alias expanded past its bound); a value is used only from a file with no problem."""
        chunk = self.follower.whole_file(path)
        if chunk is None:
            return False
        if chunk.refused is not None:
            self.warn(f"{path}: {chunk.refused}; not read, the watch goes on")
            return True
        problems: list[Problem] = []
        with confined(self.root):
            setup = SETUP_FILES[path.name](path, problems)
        for problem in problems:
            self.warn(f"{problem}; the setup it gives is not used")
        if setup is not None and not problems:
            if setup.get("run_id"):
                self.run_name = str(setup["run_id"])
            self._emit(self.judge.set_setup(setup))
        return True

    def _take_lines(self, chunk: Chunk) -> None:
        path = chunk.path
        if chunk.refused is not None:
            self.warn(f"{path}: {chunk.refused}; not read, the watch goes on")
            return
        if chunk.restarted:
            self.warn(f"{path}: replaced or cut shorter (a rotated log or a restarted job): read again from its start")
        if path.name == "events.jsonl":
            self._events([line for line in chunk.lines if line is not None])
            return
        is_log = path.suffix != ".jsonl"
        arguments = self._log_arguments.setdefault(path, LogArguments())
        first = 1 if chunk.restarted else self._lines_read.get(path, 0) + 1
        self._lines_read[path] = first - 1 + len(chunk.lines)
        for number, line in enumerate(chunk.lines, start=first):
            if line is None:
                self.warn(f"{path}:{number}: longer than {LINE_LIMIT:,} bytes, no record Miles writes; line skipped")
                continue
            if is_log:
                message = log_message(line)
                if (setup := arguments.take(message)) is not None:
                    self._emit(self.judge.set_setup(setup))
                if any(pattern.search(message) for pattern in JOB_END):
                    self.ended = f"the job's end, in {path.name}: {message}"
            try:
                values = list((log_values if is_log else dump_values)(line))
            except ValueError as error:
                self.warn(f"{path}:{number}: {error}; line skipped")
                continue
            self._judge_values(values, path, number)

    def _events(self, lines: list[str]) -> None:
        """lab/events.jsonl: a `job_end` record (`manual record --until-exit` writes one) ends the watch."""
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("kind") == "job_end":
                self.ended = f"the job's end, in events.jsonl: {record.get('detail') or 'job_end'}"

    def _judge_values(self, values: list[Value], path: Path | None = None, number: int | None = None) -> None:
        for value in values:
            self.steps.add((value.step_key, value.step))
            self._emit(self.judge.value(value))
            if not math.isfinite(value.value):
                where = f" ({path.name}:{number})" if path is not None and number is not None else ""
                self.warn(f"{value.metric}: {value.value} at {value.step_key} {value.step}, not a finite number"
                          f"{where}; Miles' own gate fails a run on one")

    def _emit(self, changes: list[Change]) -> None:
        for change in changes:
            self.emit(change)
            if self.fail_on_outside and change.status == "outside":
                raise Breach(change)

