"""A whole job for the watch tests: a copy of an example run whose dump is written again, step by step, by another
process, with one breach in the middle (rollout/raw_reward 0.21 at rollout step 10) and then a quiet end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

BREACH_STEP = 10
BREACH_VALUE = 0.21  # the Metrics page's range is 0.53 to 0.87

WRITER = """
import sys, time
from pathlib import Path
lines, target, pause = Path(sys.argv[1]).read_text().splitlines(True), Path(sys.argv[2]), float(sys.argv[3])
step = None
for line in lines:
    with target.open("a", encoding="utf-8") as handle:  # one append a line, as Miles' collector flushes them
        handle.write(line)
    if '"rollout/raw_reward"' in line:
        time.sleep(pause)  # the next step comes later
"""


def job(example: Path, folder: Path) -> Path:
    """The run's folder with everything but its metrics; the metrics to write, the breach in them, beside it."""
    shutil.copytree(example, folder)
    metrics = folder / "dashboard" / "metrics.jsonl"
    records = [json.loads(line) for line in metrics.read_text(encoding="utf-8").splitlines()]
    for record in records:
        if record["step"] == BREACH_STEP and "rollout/raw_reward" in record["metrics"]:
            record["metrics"]["rollout/raw_reward"] = BREACH_VALUE
    source = folder.parent / f"{folder.name}.to-write.jsonl"
    source.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    metrics.write_text("", encoding="utf-8")
    return source


def start_writer(source: Path, folder: Path, pause: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(source), str(folder / "dashboard" / "metrics.jsonl"),
                             str(pause)])
