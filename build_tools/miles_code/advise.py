"""Miles' own advisor (miles/dashboard/advisory.py), run over each run as it would have run live: in Miles' process
(run.py's task `advise`, which __init__.follow_dumps asks), Miles' pinned code with the inert stand-ins.

A run's dashboard dump is replayed into an empty folder line by line, each line when it was written (a metrics
record at its time, a phase when it opened and when it closed, a topology snapshot at its time), and Miles'
MetricStore follows the folder as its dashboard server does (`follow()`: the appended lines). After each rollout
completes, and once more at the end of the dump, Miles' compute_advisories answers with what it had then, as a
reader asking its dashboard at that moment would have read. Its rollout checks read the newest completed rollout
through a DumpReader; the stand-in below answers them from what the run logged of each rollout (the share of its
samples that were truncated, the metric whose key the request names), as Miles' reader would from the rollout
dump that --dump-details writes; a run that logged no per-group rewards has no groups to judge.

Request: {"task": "advise", "runs": [{"run_id", "dashboard": folder, "truncated_key": "rollout/truncated",
"series": [metric, ...]}]}.
Answer: {run_id: {"said": [{"step": rollout id or null (the end), "ts", "advisories": [{"level", "message"}]}],
"series": {metric: [[step, value], ...]}}}: each metric as Miles' MetricStore reads it against its own step key.
"""

from __future__ import annotations

import importlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any


class Column:
    """A polars column's stand-in, for the operations advisory._rollout_advisories applies."""

    def __init__(self, values: list[Any]) -> None:
        self.values = values

    def cast(self, kind: type) -> Column:
        return Column([kind(value) for value in self.values])

    def mean(self) -> float | None:
        return sum(self.values) / len(self.values) if self.values else None

    def sum(self) -> float:
        return float(sum(self.values))

    def any(self) -> bool:
        return any(self.values)


class Frame:
    """A polars DataFrame's stand-in: named columns of equal length."""

    def __init__(self, columns: dict[str, list[Any]]) -> None:
        self.data = columns
        self.columns = list(columns)

    def __getitem__(self, name: str) -> Column:
        return Column(self.data[name])

    def __len__(self) -> int:
        return len(next(iter(self.data.values()), []))


class TruncatedMean(Column):
    """The rollout's `truncated` column as far as the advisor reads it: its mean, the share the run logged."""

    def __init__(self, share: float) -> None:
        super().__init__([])
        self.share = share

    def cast(self, kind: type) -> Column:
        return self

    def mean(self) -> float | None:
        return self.share


class RolloutSummary:
    """A rollout's per-sample summary (DumpReader.summary) as far as the advisor reads it: its truncated share."""

    columns = ["truncated"]

    def __init__(self, share: float) -> None:
        self.share = share

    def __getitem__(self, name: str) -> Column:
        return TruncatedMean(self.share)


class LoggedRollouts:
    """DumpReader's stand-in for the rollouts completed so far: their ids, no groups (no per-group rewards were
    logged), and each one's summary as far as the advisor reads it (the truncated share)."""

    def __init__(self) -> None:
        self.shares: dict[int, float] = {}

    def rollout_ids(self) -> Any:
        return _Ids(train=sorted(self.shares))

    def groups(self, rollout_id: int) -> Any:
        return _NoGroups()

    def summary(self, rollout_id: int) -> RolloutSummary:
        return RolloutSummary(self.shares[rollout_id])


class _Ids:
    def __init__(self, train: list[int]) -> None:
        self.train = train


class _NoGroups(Frame):
    def __init__(self) -> None:
        super().__init__({"reward_mean": [], "zero_std": []})

    def filter(self, mask: Any) -> _NoGroups:
        return self

    def __getitem__(self, name: str) -> Any:
        return _Null()


class _Null(Column):
    def __init__(self) -> None:
        super().__init__([])

    def is_not_null(self) -> _Null:
        return self


def _lines(path: Path) -> list[str]:
    """The file's complete lines: a last line without its newline is a writer mid-append, which Miles' store
    leaves for later (MetricStore.follow) and the manual's loader skips, saying so."""
    *complete, _ = path.read_bytes().split(b"\n")  # by newline only, as Miles' store splits them
    return [line.decode("utf-8") + "\n" for line in complete]


def _written(dump: Path) -> list[tuple[float, int, str, str]]:
    """Every line of the dump with when it was written: (time, order, file relative to the dump, line)."""
    found: list[tuple[float, int, str, str]] = []
    for name in ("metrics.jsonl", "topology.jsonl"):
        if (dump / name).exists():
            found += [(float(json.loads(line)["ts"]), len(found), name, line) for line in _lines(dump / name)]
    for hour in sorted((dump / "phases").glob("*.jsonl")):
        for line in _lines(hour):
            record = json.loads(line)
            when = record["t0"] if record["t1"] == -1.0 else record["t1"]
            found.append((float(when), len(found), f"phases/{hour.name}", line))
    return sorted(found)


def follow_run(run: dict[str, Any]) -> dict[str, Any]:
    """What Miles' advisor says after each completed rollout of the run, and at the end of its dump; the metrics
    asked for, as Miles' store reads them."""
    advisory = importlib.import_module("miles.dashboard.advisory")
    store_module = importlib.import_module("miles.dashboard.store")
    dump = Path(run["dashboard"])
    live = Path(tempfile.mkdtemp(prefix="live-dump-"))
    try:
        shutil.copyfile(dump / "meta.json", live / "meta.json")
        store = store_module.MetricStore.load(live)
        reader = LoggedRollouts()
        said = []
        lines = _written(dump)
        for index, (when, _, name, line) in enumerate(lines):
            target = live / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("a", encoding="utf-8") as out:
                out.write(line)
            record = json.loads(line)
            completed = name == "metrics.jsonl" and run["truncated_key"] in record["metrics"]
            if completed:
                reader.shares[int(record["step"])] = float(record["metrics"][run["truncated_key"]])
            if completed or index == len(lines) - 1:
                store.follow()
                found = advisory.compute_advisories(store, reader, mfu=advisory.mfu_summary(store))
                said.append({"step": int(record["step"]) if completed else None, "ts": when,
                             "advisories": [{"level": a.level, "message": a.message} for a in found]})
        return {"said": said, "series": {metric: _series(store, metric) for metric in run.get("series", [])}}
    finally:
        shutil.rmtree(live)


def _series(store: Any, metric: str) -> list[list[float]]:
    """A metric against the step key it is logged with (the first record holding it says which)."""
    metrics = importlib.import_module("miles.dashboard.store").Stream.METRICS
    keys = [record.step_key for record in store.records[metrics] if metric in record.metrics]
    if not keys:
        return []
    found = store.metric_series([metric], x_key=keys[0])[metric]
    return [[x, y] for x, y in zip(found["x"], found["y"], strict=True)]

