"""`manual watch`: a job still writing, followed file by file and judged against the contract as steps arrive."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from build_tools.checking.contract import Contract, EnvelopeFact, contract_of, range_item
from build_tools.commands.watch.follow import Follower
from build_tools.commands.watch.judge import Change
from build_tools.commands.watch.run import Watch
from tests.conftest import MANUAL_AS_IN_A_TERMINAL

ROOT = Path(__file__).resolve().parents[3]
GUARD_S = 30.0  # a failure guard only: a report that never comes fails here, not a latency goal
ENVELOPE = [EnvelopeFact(fact="model", field="model.name", values=["Qwen3-0.6B"], enforced=True),
            EnvelopeFact(fact="prompts per step", field="flags.rollout_batch_size", values=[32], enforced=True)]
BAND = [0.5, 0.9]


def contract() -> Contract:
    """A contract of one range: the mean reward between 0.5 and 0.9 per step, on Qwen3-0.6B with 32 prompts."""
    item = range_item("rollout/raw_reward", *BAND, ENVELOPE, source="Metrics page, Rollout")
    return contract_of("test", "2026-10-15", "08752a1", [item])


def meta(batch: int = 32) -> str:
    return json.dumps({"run_name": "r", "start_ts": 1.0, "schema_version": 1,
                       "args": {"hf_checkpoint": "/models/Qwen3-0.6B", "rollout_batch_size": batch}}, indent=2)


def record(step: int, reward: float) -> str:
    return json.dumps({"ts": 1.0 + step, "step_key": "rollout/step", "step": step,
                       "metrics": {"rollout/raw_reward": reward}}) + "\n"


def log_line(step: int, reward: float) -> str:
    return f"[2026-10-15 10:00:{step:02d}] rollout.py:1 - rollout {step}: {{'rollout/raw_reward': {reward}}}\n"


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


# --- the whole command, with the job writing in another process ---------------------------------------------

WRITER = """
import json, sys
from pathlib import Path
dump = Path(sys.argv[1])
for line in sys.stdin:  # the test says when to write the next step, once the last is reported
    with (dump / "metrics.jsonl").open("a") as handle:
        handle.write(line)
        handle.flush()
"""


def test_a_value_leaving_its_range_is_reported_as_it_is_written(tmp_path: Path) -> None:
    dump = tmp_path / "dashboard"
    dump.mkdir()
    (dump / "meta.json").write_text(meta())
    (tmp_path / "contract.json").write_text(contract().model_dump_json(by_alias=True))
    watcher = subprocess.Popen([sys.executable, "-m", "build_tools", "--root", str(ROOT), "watch", str(dump),
                                "--format", "jsonl", "--until-idle", "20",
                                "--contract", str(tmp_path / "contract.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(dump)], stdin=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in watcher.stdout or []], daemon=True).start()
    assert writer.stdin is not None
    try:
        assert json.loads(lines.get(timeout=GUARD_S))["why"] == "no value yet"  # before the job's first step
        rewards = [0.6, 0.7, 0.8, 0.95]  # the last leaves the band
        for step, reward in enumerate(rewards):
            writer.stdin.write(record(step, reward))
            writer.stdin.flush()
            if step in (0, 3):  # a report comes only when the status changes: first inside, then outside
                report = json.loads(lines.get(timeout=GUARD_S))
                assert report["step"] == step and report["value"] == reward
                assert report["status"] == ("inside" if step == 0 else "outside")
        assert report == {"item": "rollout/raw_reward", "kind": "range", "status": "outside",
                          "step_key": "rollout/step", "step": 3, "value": 0.95, "band": BAND,
                          "source": "Metrics page, Rollout", "since_step": 3, "by": 0.05}
    finally:
        writer.stdin.close()
        writer.wait(GUARD_S)
        watcher.terminate()
        _, err = watcher.communicate(timeout=GUARD_S)
    assert "Traceback" not in err


def test_fail_on_outside_exits_7_at_the_first_breach(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text(meta())
    (tmp_path / "metrics.jsonl").write_text(record(0, 0.6) + record(1, 0.2) + record(2, 0.6))
    (tmp_path / "c.json").write_text(contract().model_dump_json(by_alias=True))
    done = subprocess.run([sys.executable, "-m", "build_tools", "--root", str(ROOT), "watch", str(tmp_path),
                           "--format", "github", "--fail-on", "outside", "--until-idle", "5",
                           "--contract", str(tmp_path / "c.json")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 7
    assert done.stdout.splitlines() == [
        "::error title=watch range rollout/raw_reward::rollout/raw_reward: outside since step 1 at rollout/step 1: "
        "0.2 is 0.3 past the band 0.5 to 0.9 (Metrics page, Rollout)"]


# --- following: the watch in this process, the files written by the test ------------------------------------


class Running:
    """Watch.run in a thread, its changes in a queue."""

    def __init__(self, folder: Path) -> None:
        self.changes: queue.Queue[Change] = queue.Queue()
        self.warnings: list[str] = []
        self.watch = Watch(folder, contract(), self.changes.put, self.warnings.append)
        ready = threading.Event()
        self.thread = threading.Thread(target=self.watch.run, args=(3.0, ready.set), daemon=True)
        self.thread.start()
        assert ready.wait(GUARD_S)

    def wait_for_step(self, step: int, value: float | None = None) -> None:
        """Until the watch has judged `step` (with `value`, if given) (guarded): changes come only when a status
        changes, so the judge's latest is read."""
        for _ in range(int(GUARD_S / 0.05)):
            latest = self.watch.judge.status.get(("range", "rollout/raw_reward"))
            if latest is not None and latest.step == step and value in (None, latest.value):
                return
            threading.Event().wait(0.05)
        raise AssertionError(f"step {step} never judged")

    def finish(self) -> list[Change]:
        self.thread.join(GUARD_S)
        assert not self.thread.is_alive()
        found = []
        while not self.changes.empty():
            found.append(self.changes.get())
        return found


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "meta.json").write_text(meta())
    yield tmp_path


def steps_judged(running: Running) -> list[int]:
    return sorted(step for _, step in running.watch.judge.judged["rollout/raw_reward"])


def test_a_line_written_in_two_pieces_is_waited_for(folder: Path) -> None:
    running = Running(folder)
    line = record(0, 0.6)
    append(folder / "metrics.jsonl", line[:20])
    append(folder / "metrics.jsonl", line[20:] + record(1, 0.7))
    running.wait_for_step(1)
    assert [c.status for c in running.finish() if c.kind == "range" and c.why != "no value yet"] == ["inside"]
    assert steps_judged(running) == [0, 1] and not running.warnings


def test_the_follower_hands_on_only_complete_lines(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    follower = Follower(tmp_path)
    path.write_text('{"step": 0')
    assert follower.read_new(path) is None  # half a line waits
    append(path, ', "x": 1}\n{"st')
    chunk = follower.read_new(path)
    assert chunk is not None and chunk.lines == ['{"step": 0, "x": 1}'] and not chunk.restarted


def test_new_hourly_files_are_taken_up_as_they_appear(folder: Path) -> None:
    running = Running(folder)
    hourly = folder / "metrics"
    hourly.mkdir()
    append(hourly / "20261015_10.jsonl", record(0, 0.6) + record(1, 0.6))
    running.wait_for_step(1)
    append(hourly / "20261015_11.jsonl", record(2, 0.3))
    running.wait_for_step(2)
    changes = [c for c in running.finish() if c.kind == "range" and c.why != "no value yet"]
    assert [(c.status, c.step) for c in changes] == [("inside", 0), ("outside", 2)]
    assert steps_judged(running) == [0, 1, 2]


def test_a_rotated_log_is_followed_without_a_lost_step(folder: Path) -> None:
    running = Running(folder)
    log = folder / "train.log"
    append(log, log_line(0, 0.6) + log_line(1, 0.6))
    running.wait_for_step(1)
    os.rename(log, folder / "train.log.1")  # rotated: a new file takes its name
    append(log, log_line(2, 0.7) + log_line(3, 0.95))
    running.wait_for_step(3)
    changes = [c for c in running.finish() if c.kind == "range" and c.why != "no value yet"]
    assert [(c.status, c.step) for c in changes] == [("inside", 0), ("outside", 3)]
    assert steps_judged(running) == [0, 1, 2, 3]


def test_a_restarted_job_is_taken_up(folder: Path) -> None:
    running = Running(folder)
    metrics = folder / "metrics.jsonl"
    append(metrics, record(0, 0.6) + record(1, 0.2) + record(2, 0.2))
    running.wait_for_step(2)
    metrics.write_text(record(0, 0.6))  # the job restarted from scratch: the file is written afresh, shorter
    append(metrics, record(1, 0.7))
    running.wait_for_step(1, 0.7)
    changes = [c for c in running.finish() if c.kind == "range" and c.why != "no value yet"]
    # Step 1 written again inside replaces its breach; step 2's, not written again yet, stays in the record.
    assert [(c.status, c.step) for c in changes] == [("inside", 0), ("outside", 1)]
    assert running.watch.judge.status[("range", "rollout/raw_reward")].value == 0.7
    assert running.warnings == [f"{metrics}: replaced or cut shorter (a rotated log or a restarted job): read again "
                                "from its start"]
    assert running.watch.judge.outside["rollout/raw_reward"] == {("rollout/step", 2)}


def test_a_run_with_another_batch_is_not_applicable_naming_it(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text(meta(batch=64))
    (tmp_path / "metrics.jsonl").write_text(record(0, 0.2))
    running = Running(tmp_path)
    changes = [c for c in running.finish() if c.kind == "range" and c.why != "no value yet"]
    assert [(c.status, c.why) for c in changes] == [
        ("not_applicable", "prompts per step: yours is 64, the manual's runs have 32")]


def test_make_watch_passes_run_as_one_path() -> None:
    from build_tools.commands import _make
    from build_tools.core._exceptions import ManualError

    assert _make.arguments("watch", {"RUN": "-odd name"}, ROOT) == ["watch", "--", "./-odd name"]
    with pytest.raises(ManualError):
        _make.arguments("watch", {}, ROOT)


def finished(run: Path, document: Contract, root: Path) -> Watch:
    """A watch that has read the whole run, then closed it as the command does when the job ends."""
    from build_tools.cli import _end_verdicts

    watch = Watch(run, document, lambda change: None, lambda line: None)
    for path in watch.follower.existing():
        watch.take(path)
    watch.judge.start()
    claims, ranges = _end_verdicts(root, run)
    watch.judge.close_ranges(ranges)
    watch.judge.close_claims(claims)
    watch.judge.close_unread()
    return watch


def test_compare_and_watch_agree_on_every_item_of_a_finished_run(built_manual: Path) -> None:
    """Over every example run with a dump: each Metrics row `compare` judges, `watch` judges alike: the per-step
    ones value by value as they arrive (inside at every step, outside at some), the first value at its step, the
    whole-run ones at the end; not applicable naming the same fact. Nothing is left undecided without a reason."""
    from build_tools.checking.contract import read_contract
    from build_tools.commands import compare
    from build_tools.core._layout import Layout

    layout = Layout(built_manual)
    document = read_contract(built_manual / "site" / "contract.json")
    runs = sorted(path for path in (built_manual / "runs").iterdir() if (path / "dashboard").is_dir())
    assert len(runs) >= 10
    seen: dict[str, int] = {}
    for run in runs:
        _, comparisons = compare.compare(layout, compare.load_reader_run(run))
        watch = finished(run, document, built_manual)
        for row in comparisons:
            judged = watch.judge.status[("range", row.metric)]
            if row.verdict.startswith("cannot compare"):
                assert judged.status == "undecided" and "never logged" in (judged.why or ""), (run.name, row.metric)
                continue
            if row.verdict.startswith("not applicable"):
                assert (judged.status, f"not applicable: {judged.why}") == ("not_applicable", row.verdict)
                seen["not applicable"] = seen.get("not applicable", 0) + 1
                continue
            went_outside = bool(watch.judge.records[row.metric].outside)
            assert row.holds is not None and row.holds == (not went_outside), (run.name, row.metric, row.verdict)
            seen[f"holds {row.holds}"] = seen.get(f"holds {row.holds}", 0) + 1
        undecided = [change for change in watch.judge.status.values() if change.status == "undecided"]
        assert all(change.why and change.why != "no value yet" for change in undecided), run.name
    # The example runs hold some rows, break others, and some are of another model or answers per prompt.
    assert set(seen) == {"holds True", "holds False", "not applicable"}, seen


def test_at_the_end_the_claims_take_compares_verdicts(built_manual: Path) -> None:
    from build_tools.checking.contract import read_contract
    from build_tools.commands import compare
    from build_tools.core._layout import Layout

    run = built_manual / "runs" / "baseline-seed1"
    document = read_contract(built_manual / "site" / "contract.json")
    watch = finished(run, document, built_manual)
    checked = compare.claims_on(Layout(built_manual), compare.load_reader_run(run))
    ids = {claim.number: claim.id for claim in document.claims}
    closed = {item: change for (kind, item), change in watch.judge.status.items() if kind == "claim"}
    words = {True: "inside", False: "outside", None: "undecided"}
    assert checked
    for claim in checked:
        assert (closed[ids[claim.number]].status, closed[ids[claim.number]].why) == (words[claim.holds], claim.detail)
    # The claims of another model stay not applicable, naming the fact; one that sets the manual's runs against
    # one another says it has nothing to judge on one run.
    assert closed["fig-trainer-state-4b"].status == "not_applicable"
    assert closed["fig-trainer-state-4b"].why == "model: yours is Qwen3-0.6B, the manual's runs have Qwen3-4B"
    assert closed["fig-sampling-replay"].status == "not_applicable"
    assert closed["fig-sampling-replay"].why == ("none of its checks (compare_runs, config_equals) judges one run "
                                                 "alone: they set the manual's runs against one another, or read a "
                                                 "table: nothing in it to judge on one run")


def test_the_bench_figure_sees_every_step_reported() -> None:
    import math

    from build_tools.commands.watch import latency

    found = latency.measure(4)
    assert len(found) == 4 and all(math.isfinite(seconds) and seconds >= 0 for seconds in found)


def test_a_damaged_contract_is_bad_input_naming_the_field(tmp_path: Path) -> None:
    data = json.loads(contract().model_dump_json(by_alias=True))
    data["ranges"][0]["low"] = "half"
    (tmp_path / "c.json").write_text(json.dumps(data))
    done = subprocess.run([sys.executable, "-m", "build_tools", "--root", str(ROOT), "watch", str(tmp_path),
                           "--contract", str(tmp_path / "c.json")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'c.json'}: not a contract this manual reads: ranges.0.low: Input should be a valid number " \
           "hint: rebuild it" in " ".join(done.stderr.split())


def test_ctrl_c_ends_the_watch_with_a_summary(folder: Path) -> None:
    import signal

    (folder / "metrics.jsonl").write_text(record(0, 0.6))
    (folder / "c.json").write_text(contract().model_dump_json(by_alias=True))
    watcher = subprocess.Popen([*MANUAL_AS_IN_A_TERMINAL, "--root", str(ROOT), "watch", str(folder),
                                "--format", "jsonl", "--contract", str(folder / "c.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert watcher.stdout is not None
    assert json.loads(watcher.stdout.readline())["why"] == "no value yet"
    assert json.loads(watcher.stdout.readline())["status"] == "inside"  # it has read the step
    watcher.send_signal(signal.SIGINT)
    out, err = watcher.communicate(timeout=GUARD_S)
    assert watcher.returncode == 0 and "Traceback" not in err
    assert err.splitlines()[:3] == [
        "Watched r against the manual's edition test (contract version 3): 1 rollout step (0 to 0); ended: Ctrl-C",
        "0 went outside, 1 inside, 0 undecided, 0 not applicable",
        "  rollout/raw_reward: inside at rollout/step 0: 0.6 in 0.5 to 0.9"]
    assert json.loads(out.splitlines()[-1])["went_outside"] == []


def test_a_logs_argument_dump_gives_the_setup(tmp_path: Path) -> None:
    """A job with only its log: the argument dump Megatron prints names the answers per prompt (8, not 16)."""
    from tests.conftest import SAMPLES

    wanted = EnvelopeFact(fact="answers per prompt", field="flags.n_samples_per_prompt", values=[16], enforced=True)
    item = range_item("rollout/raw_reward", *BAND, [ENVELOPE[0], wanted], source="Metrics page, Rollout")
    document = contract_of("test", "", "", [item])
    log = (SAMPLES / "sources" / "log" / "job.log").read_text(encoding="utf-8")
    watch = Watch(tmp_path, document, lambda change: None, lambda line: None)
    (tmp_path / "job.log").write_text(log, encoding="utf-8")
    watch.take(tmp_path / "job.log")
    judged = watch.judge.status[("range", "rollout/raw_reward")]
    assert (judged.status, judged.why) == ("not_applicable",
                                           "answers per prompt: yours is 8, the manual's runs have 16")
    assert watch.judge.setup is not None and watch.judge.setup["model"] == {"name": "Qwen3-0.6B"}


def test_a_line_that_is_no_record_is_warned_of_with_its_line_number(folder: Path) -> None:
    warnings: list[str] = []
    watch = Watch(folder, contract(), lambda change: None, warnings.append)
    metrics = folder / "metrics.jsonl"
    metrics.write_text(record(0, 0.6) + "{not json\n" + '{"step_key": "rollout/step", "step": "one", "metrics": {}}\n')
    watch.take(metrics)
    append(metrics, record(1, 0.7))
    watch.take(metrics)
    assert warnings[0].startswith(f"{metrics}:2: Expecting property name enclosed in double quotes")
    assert warnings[1:] == [f"{metrics}:3: expected step_key a text and step a whole number; line skipped"]
    assert sorted(watch.steps) == [("rollout/step", 0), ("rollout/step", 1)]


# --- the job's end: Miles' own end records, read as they come ----------------------------------------------------


@pytest.mark.parametrize(("file", "line", "said"), [
    ("job.log", "Job 'raysubmit_abc' succeeded\n", "the job's end, in job.log: Job 'raysubmit_abc' succeeded"),
    ("lab/events.jsonl", json.dumps({"kind": "job_end", "t0": 2.0, "t1": 2.0,
                                     "detail": "process 4242 ended (manual record --until-exit)"}) + "\n",
     "the job's end, in events.jsonl: process 4242 ended (manual record --until-exit)"),
])
def test_the_jobs_end_record_ends_the_watch(folder: Path, file: str, line: str, said: str) -> None:
    """No --until-idle: Ray's job line (a followed log) or the job_end `manual record --until-exit` writes ends the
    watch by itself, which then judges what waits for the finished run."""
    append(folder / "metrics.jsonl", record(0, 0.6) + record(1, 0.2))
    watch = Watch(folder, contract(), lambda change: None, lambda text: None)
    ready = threading.Event()
    thread = threading.Thread(target=watch.run, args=(None, ready.set), daemon=True)
    thread.start()
    assert ready.wait(GUARD_S)
    (folder / file).parent.mkdir(exist_ok=True)
    append(folder / file, line)
    thread.join(GUARD_S)
    assert not thread.is_alive() and watch.ended == said
    assert watch.judge.went_outside() == ["rollout/raw_reward"]  # and the breach at step 1 is in the record


def test_reading_a_file_is_no_event_the_watch_takes(tmp_path: Path) -> None:
    """Each read of run.yaml made two events (opened, closed unwritten) that read it again, without end: the queue
    held nothing else and a job's files written meanwhile went unread. Only a write is an event."""
    from build_tools.commands.watch.follow import Watcher

    (tmp_path / "run.yaml").write_text("run_id: job\n")
    with Watcher(tmp_path) as watcher:
        (tmp_path / "run.yaml").read_text()
        assert watcher.next_path(0.5) is None
        append(tmp_path / "metrics.jsonl", record(0, 0.6))
        assert watcher.next_path(GUARD_S) == tmp_path / "metrics.jsonl"


def test_a_link_to_a_file_not_there_yet_waits_for_it(folder: Path) -> None:
    """wandb links wandb/debug-internal.log to its run's log before writing it: no warning, and read once there;
    a link out of the folder is still refused, whether its file exists or not."""
    (folder / "logs").mkdir()
    (folder / "train.log").symlink_to(folder / "logs" / "train.log")
    (folder / "out.log").symlink_to(folder.parent / "missing.log")
    warnings: list[str] = []
    watch = Watch(folder, contract(), lambda change: None, warnings.append)
    assert not watch.take(folder / "train.log")
    append(folder / "logs" / "train.log", log_line(0, 0.6))
    assert watch.take(folder / "train.log") and watch.steps == {("rollout/step", 0)}
    assert watch.take(folder / "out.log")
    assert warnings == [f"{folder}/out.log: is a symbolic link to outside the run; only files inside it are read: "
                        "copy the file in instead; not read, the watch goes on"]


def test_the_checks_judged_early_read_only_the_setup() -> None:
    """early.SETUP_ONLY names registered checks, none of which has a parameter naming what a job logs (a metric,
    its steps, a series, an event, a phase): every check with one waits for the whole run."""
    from build_tools.checking.checks import REGISTRY
    from build_tools.commands.watch.early import SETUP_ONLY

    logged = {"metric", "steps", "series", "event", "from", "to", "order", "parts", "whole", "left", "right"}
    assert SETUP_ONLY <= set(REGISTRY)
    assert all(not logged & set(REGISTRY[name].params) for name in SETUP_ONLY)
    reads_the_run = {name for name, spec in REGISTRY.items() if logged & set(spec.params)}
    assert reads_the_run and not reads_the_run & SETUP_ONLY
