"""`manual watch` as a reader lives it: a whole job written step by step by another process, a breach in the middle
(rollout/raw_reward 0.21 at rollout step 10; the Metrics page's range is 0.53 to 0.87), then a quiet end. What
the reader sees last (the summary, the exit code) in every format, and a live view that keeps changing to the
last step."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from build_tools.core._exceptions import EXIT_OUTSIDE
from tests.watch_job import BREACH_STEP, BREACH_VALUE, job, start_writer

GUARD_S = 120.0  # a failure guard only
PAUSE_S = 0.1  # between two steps of the job
QUIET_S = 2.0  # --until-idle: the job's quiet end
BREACH_LINE = ("  OUTSIDE the mean reward of the step (rollout/raw_reward): first outside at rollout/step 10, worst "
               "0.21 at step 10 (holds from 0.525 to 0.875), 1 step outside, last at step 10")
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def watched(root: Path, folder: Path, source: Path, form: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """The watch started on the job's folder, the job written under it, the watch left to end by itself."""
    env = {**os.environ, "COLUMNS": "80", "LINES": "24"}  # an 80x24 terminal, for the live view
    if form == "live":
        env["FORCE_COLOR"] = "1"  # rich draws in place only on a terminal: this says the pipe is one
    watcher = subprocess.Popen([sys.executable, "-m", "build_tools", "--root", str(root), "watch", str(folder),
                                "--format", form, "--until-idle", str(QUIET_S), *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert watcher.stdout is not None and watcher.stderr is not None
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=stream, to=into: to.extend(iter(lambda: s.read(1), "")), daemon=True)
               for stream, into in ((watcher.stdout, out), (watcher.stderr, err))]
    for reader in readers:
        reader.start()
    # The job starts once the watch follows its folder: its first words out (the live view's first frame, the
    # jsonl stream's first line), or a while for github, which writes nothing before a breach.
    deadline = time.monotonic() + (GUARD_S if form != "github" else 5.0)
    while not out and time.monotonic() < deadline:
        time.sleep(0.05)
    writer = start_writer(source, folder, PAUSE_S)
    assert writer.wait(GUARD_S) == 0
    watcher.wait(GUARD_S)
    for reader in readers:
        reader.join(GUARD_S)
    return subprocess.CompletedProcess(watcher.args, watcher.returncode, "".join(out), "".join(err))


@pytest.fixture
def the_job(built_manual: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    folder = tmp_path / "my-job"
    return built_manual, folder, job(built_manual / "runs" / "baseline-seed1", folder)


def summary_of(err: str) -> list[str]:
    lines = err.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("Watched ")):]


def test_the_breach_is_kept_to_the_end_in_jsonl(the_job: tuple[Path, Path, Path]) -> None:
    done = watched(*the_job, "jsonl")
    assert done.returncode == EXIT_OUTSIDE and "Traceback" not in done.stderr
    summary = summary_of(done.stderr)
    assert summary[0] == ("Watched baseline-seed1 against the manual's edition 2026.10 (contract version 3): 48 "
                          "rollout steps (0 to 47); ended: no new data for 2 s")
    assert summary[1].startswith("1 went outside, ")
    assert summary[2] == BREACH_LINE
    assert summary[3].startswith("          see Metrics page, Rollout: ") and summary[3].endswith(
        "site/06-metrics.html#rollout")
    # The stream: the breach as it came, then back inside is never said; the last line is the record.
    changes = [json.loads(line) for line in done.stdout.splitlines()]
    reward = [c for c in changes if c.get("item") == "rollout/raw_reward" and c["status"] != "undecided"]
    assert [(c["status"], c["step"], c["value"]) for c in reward] == [("inside", 0, reward[0]["value"]),
                                                                      ("outside", BREACH_STEP, BREACH_VALUE)]
    last = changes[-1]
    assert last["kind"] == "summary" and last["went_outside"] == ["rollout/raw_reward"]
    assert last["breaches"] == [{"item": "rollout/raw_reward", "first_step": 10, "last_step": 10, "worst": 0.21,
                                 "steps_outside": 1, "link": "06-metrics.html#rollout"}]
    # After the end, nothing undecided without a reason: every whole-run row has its verdict.
    assert all(status != "undecided" for item, status in last["statuses"].items() if item.startswith("range:"))


def test_github_fails_its_job_on_the_breach(the_job: tuple[Path, Path, Path]) -> None:
    done = watched(*the_job, "github")
    assert done.returncode == EXIT_OUTSIDE  # a red annotation on a red job
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert errors == ["::error title=watch range rollout/raw_reward::the mean reward of the step "
                      "(rollout/raw_reward): outside since step 10 at rollout/step 10: 0.21 is 0.315 past the band "
                      "0.525 to 0.875 (Metrics page, Rollout)"]
    assert summary_of(done.stderr)[2] == BREACH_LINE


def test_the_live_view_shows_the_breach_until_the_last_step(the_job: tuple[Path, Path, Path]) -> None:
    done = watched(*the_job, "live")
    assert done.returncode == EXIT_OUTSIDE and "Traceback" not in done.stderr
    screen = CSI.sub("", done.stdout)
    # Every redraw starts with the run, edition and contract; it kept changing as steps came, to the last one.
    frames = [frame for frame in screen.split("watch baseline-seed1 · edition 2026.10 · contract v3\n")[1:]]
    shown = [int(match[1]) for frame in frames if (match := re.match(r"rollout step (\d+) ", frame))]
    # A redraw per read of new lines (several steps may come in one read on a busy machine).
    assert shown[0] <= 1 and shown[-1] == 47 and len(set(shown)) >= 24 and shown == sorted(shown)
    last = frames[-1].splitlines()
    assert len(last) + 1 <= 24 and all(len(line) <= 80 for line in last)  # an 80x24 terminal
    assert last[0].startswith("rollout step 47 · 48 rollout steps read · last data ")
    assert last[1].startswith("1 outside, ")
    # The breach first, with its record, where to look, and no code word for a statistic.
    assert re.fullmatch(r"OUTSIDE  the mean reward of the step \(rollout/raw_reward\)  now 0\.\d+ at 47", last[2])
    assert last[3] == "    1 step outside, first 10, last 10, worst 0.21; holds 0.525 to 0.875"
    assert last[4].startswith("    see Metrics page, Rollout: ") and last[4].endswith("06-metrics.html#rollout")
    assert not re.search(r"median_head|every_step|first_step|all_zero", screen)
    # Still there at step 11 and after: the breach never gave way to an 'inside' of the same row.
    after = [frame for frame in frames if re.match(r"rollout step (\d+) ", frame)
             and int(re.match(r"rollout step (\d+) ", frame)[1]) > BREACH_STEP]  # type: ignore[index]
    assert after and all("OUTSIDE  the mean reward of the step" in frame for frame in after)
    assert summary_of(done.stderr)[2] == BREACH_LINE


def test_a_non_finite_value_is_reported_the_moment_it_arrives(the_job: tuple[Path, Path, Path]) -> None:
    root, folder, source = the_job
    records = [json.loads(line) for line in source.read_text().splitlines()]
    for record in records:
        if record["step_key"] == "train/step" and record["step"] == 12:
            record["metrics"]["train/grad_norm"] = float("nan")
    source.write_text("".join(json.dumps(record) + "\n" for record in records))  # NaN, as Python's json writes it
    done = watched(root, folder, source, "jsonl")
    assert done.returncode == EXIT_OUTSIDE
    assert ("WARNING train/grad_norm: nan at train/step 12, not a finite number (metrics.jsonl:"
            in " ".join(done.stderr.split()))
    changes = [json.loads(line) for line in done.stdout.splitlines()]
    grad = [change for change in changes if change.get("item") == "train/grad_norm"]
    assert ("outside", 12, "NaN") in [(c["status"], c["step"], c["value"]) for c in grad]
    assert "  NOT A NUMBER train/grad_norm: nan at train/step 12" in done.stderr.splitlines()
