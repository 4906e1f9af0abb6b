"""`make bench`'s figure for watch: how long from a metrics line written to its change reported (no goal)."""

from __future__ import annotations

import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from build_tools.checking.contract import contract_of, range_item
from build_tools.commands.watch.run import Watch

STEPS = 20


def measure(steps: int = STEPS) -> list[float]:
    """Seconds from each write to its step judged and handed to the view (the live view redraws then; jsonl and
    github write a line when the status changes, which the first value and the first breach do)."""
    contract = contract_of("bench", "", "", [range_item("rollout/raw_reward", 0.5, 0.9, source="bench")])
    reported: dict[int, float] = {}
    arrived = threading.Condition()
    watch: Watch

    def judged() -> None:
        last = watch.judge.records["rollout/raw_reward"].last
        with arrived:
            if last is not None and last.step not in reported:
                reported[last.step] = time.perf_counter()
            arrived.notify_all()

    latencies = []
    with tempfile.TemporaryDirectory(prefix="manual-watch-bench-") as tmp:
        folder = Path(tmp)
        ready = threading.Event()
        watch = Watch(folder, contract, lambda change: None, lambda line: None, on_tick=judged)
        thread = threading.Thread(target=watch.run, args=(2.0, ready.set), daemon=True)
        thread.start()
        ready.wait(30)
        for step in range(steps):
            line = {"ts": 0.0, "step_key": "rollout/step", "step": step,
                    "metrics": {"rollout/raw_reward": 0.6 if step % 2 else 0.2}}
            written = time.perf_counter()
            with (folder / "metrics.jsonl").open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
            with arrived:
                arrived.wait_for(lambda s=step: s in reported, timeout=30)  # type: ignore[misc]
            latencies.append(reported.get(step, float("inf")) - written)
        thread.join(30)
    return latencies


def line(found: list[float]) -> str:
    return (f"watch: a written step reported in {statistics.median(found) * 1000:.1f} ms median, "
            f"{max(found) * 1000:.1f} ms at most, over {len(found)} steps (no goal)")


if __name__ == "__main__":
    print(line(measure()))
