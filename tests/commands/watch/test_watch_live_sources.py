"""`manual watch` following what a job writes besides the dump and the log (build_tools/commands/watch/
live_sources.py): TensorBoard event files, a wandb run's log and an MLflow file store, each written step by step by
the real library as Miles calls it (tests/miles_job.py) while the watch follows it. The reader's view at the end (the
statuses, the summary, the exit code) is what `compare` says of the finished files, and every value the watch judged
is the one the batch reader reads."""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from build_tools.checking.contract import ClaimItem, Contract
from build_tools.commands.watch.live_sources import LiveSources, form_of
from build_tools.commands.watch.records import Value
from build_tools.commands.watch.run import Watch
from tests.conftest import copy_project
from tests.ingest.sources.test_sources_real import read
from tests.miles_job import STEPS_PER_ROLLOUT, offline_env

TESTS = Path(__file__).resolve().parents[2]
GUARD_S = 120.0  # a failure guard only: a report that never comes fails here (wandb's reader starts in ~2 s)
IDLE_S = "20"  # the watch ends this long after the job's last write (wandb writes its log's end as it closes), or
# after its own start while the job has written nothing: the writer's start (importing its library) on a busy machine
HOLD = 2  # the job writes at least this many rollouts, then goes on until the watch has reported from its files
# The job, with the backend named, paced; once the test says `go` (the watch reported mid-job), it ends after the
# rollout it is writing (at most 200: a watch that never reports fails the test, it does not hang it).
WRITER = """
import sys, threading, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.miles_job import Job, write_mlflow

form, folder, hold = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
go = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), go.set()), daemon=True).start()


class Enough(Exception):
    pass


def between(rollout):
    time.sleep(0.3)
    if go.is_set() and rollout >= hold:
        raise Enough


if form == "mlflow":
    made = Job(folder, rollouts=200)
    made.run()  # the calls Miles makes, into no backend: write_mlflow gives each to mlflow as Miles' backend does
    try:
        write_mlflow(made, folder / "mlflow", between=lambda n: between(n // 7) if n % 7 == 6 else None)
    except Enough:
        import mlflow
        mlflow.end_run()
else:
    try:
        Job(folder, rollouts=200, **{form: True}).run(between=between)
    except Enough:
        pass
"""
STARTED = "0.0"  # the contract's stand-in claim: undecided at the start, its line says the watch is following


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_project(tmp_path_factory.mktemp("manual"))


def manual_contract(project: Path) -> Contract:
    """The manual's ranges, as the build puts them in site/contract.json (from the same runs, by the same code), and
    a stand-in claim that no chapter has."""
    from build_tools.checking import contract
    from build_tools.commands import compare
    from build_tools.core._layout import Layout
    from build_tools.pages import metrics_table

    layout = Layout(project)
    spec = metrics_table.load_spec(layout.metrics_yml)
    ours = compare._our_runs(layout, metrics_table.reads(spec))
    started = ClaimItem(id="fig-started", number=STARTED, says="a stand-in: the watch has started", source="tests",
                        link="", severity="warning", checks=[], envelope=[])
    return contract.contract_of("test", "", "", contract.range_items(spec, ours), [started])


class Recording(Watch):
    """The watch in this process, keeping every value it judged."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.values: dict[tuple[str, int, str], float] = {}

    def _judge_values(self, values: list[Value], path: Path | None = None, number: int | None = None) -> None:
        self.values.update({(v.step_key, v.step, v.metric): v.value for v in values})
        super()._judge_values(values, path, number)


class Lines:
    """A stream's lines as they come (a thread reads it to its end)."""

    def __init__(self, stream: Any) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        self.thread = threading.Thread(target=lambda: [self.queue.put(line) for line in stream], daemon=True)
        self.thread.start()

    def next(self) -> str:
        return self.queue.get(timeout=GUARD_S)

    def rest(self) -> list[str]:
        """Every line not taken yet, once the stream has ended."""
        self.thread.join(GUARD_S)
        return [self.queue.get() for _ in range(self.queue.qsize())]


@pytest.mark.slow  # a job of each form written by its library, about half a minute each
@pytest.mark.parametrize("form", ["tensorboard", "wandb", "mlflow"])
def test_watch_follows_what_the_library_writes_and_ends_where_compare_does(form: str, project: Path,
                                                                          tmp_path: Path) -> None:
    from build_tools.checking import contract
    from build_tools.commands import compare
    from build_tools.core._layout import Layout

    job = tmp_path / "job"
    job.mkdir()
    # The job's setup, as `make add-run` records it: the manual's own (a folder with none is not judged by compare).
    setup = (project / "runs" / "baseline-seed1" / "run.yaml").read_text(encoding="utf-8")
    (job / "run.yaml").write_text(setup.replace("run_id: baseline-seed1", "run_id: job"), encoding="utf-8")
    document = manual_contract(project)
    (tmp_path / "contract.json").write_text(contract.dumps(document), encoding="utf-8")
    env = {**os.environ, **offline_env(tmp_path / "wandb-home"), "MLFLOW_ALLOW_FILE_STORE": "true",
           "PYTHONPATH": str(TESTS.parent)}
    watcher = subprocess.Popen([sys.executable, "-m", "build_tools", "--root", str(project), "watch", str(job),
                                "--format", "jsonl", "--until-idle", IDLE_S,
                                "--contract", str(tmp_path / "contract.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    reports, said = Lines(watcher.stdout), Lines(watcher.stderr)
    started = next(change for change in map(json.loads, iter(reports.next, None))
                   if change.get("item") == "fig-started")
    # The watch in this process starts once the command's follows the folder: each one's quiet period counts from
    # its start, and the command's start (its imports) took longer than IDLE_S on a busy machine, so that this one
    # had ended, with no value, before the job wrote its first.
    here = Recording(job, document, lambda change: None, lambda line: None)
    ready = threading.Event()
    inside = threading.Thread(target=here.run, args=(float(IDLE_S), ready.set), daemon=True)
    inside.start()
    assert started["status"] == "undecided" and ready.wait(GUARD_S)  # both follow the folder
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(TESTS), form, str(job), str(HOLD)],
                              stdin=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        # a status from the files as they are mid-job: the first value judged
        first = next(change for change in map(json.loads, iter(reports.next, None))
                     if change.get("status", "undecided") != "undecided")
        assert writer.poll() is None and first["kind"] == "range"
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.close()
        assert writer.wait(GUARD_S) == 0
        assert watcher.wait(GUARD_S) == 7  # ended by --until-idle (the job is quiet); a range went outside
    finally:
        writer.kill()
        watcher.kill()
    inside.join(GUARD_S)
    changes = [started, first, *(json.loads(line) for line in reports.rest())]
    record = changes.pop()  # the jsonl stream ends with the watch's summary
    assert record["kind"] == "summary" and record["went_outside"]
    summary = "".join(said.rest()).splitlines()
    # wandb's own logs/debug-core.log is a link out of the run (to wandb's folder): named, never read
    unexpected = [line for line in summary if "Traceback" in line or (
        line.startswith("WARNING") and not line.endswith("debug-core.log: is a symbolic link to outside the run; "
                                                         "only files inside it are read: copy the file in instead; "
                                                         "not read, the watch goes on"))]
    assert not unexpected, unexpected

    # What the batch reader reads of the finished files: every value the watch judged, exactly.
    batch, problems, _ = read(job)
    assert problems == []
    assert here.values == {place: value for place, value in batch.items() if math.isfinite(value)}

    # What compare says of the finished files, row by row, the watch said as the job wrote them.
    _, rows = compare.compare(Layout(project), compare.load_reader_run(job))
    items = {item.id: item for item in document.ranges}
    judged = {change["item"] for change in changes
              if change["kind"] == "range" and change["status"] != "undecided"}
    outside = {change["item"] for change in changes if change.get("status") == "outside"}
    held = {row.metric for row in rows if row.holds is True}
    assert {row.metric for row in rows if row.holds is None}.isdisjoint(judged)
    per_step = [row for row in rows if items[row.metric].statistic == "each_step" and row.holds is not None]
    assert per_step and outside  # a breach in the middle
    assert {row.metric for row in per_step if row.metric not in held} == {
        metric for metric in outside if items[metric].statistic == "each_step"}
    compared = {row.metric: row for row in rows if row.holds is not None}
    assert {metric for metric in compared if metric in outside} == {  # whole-run rows: compare's verdict at the end
        metric for metric, row in compared.items() if row.holds is False}
    assert {row.metric for row in per_step} <= judged
    steps = len({(step_key, step) for step_key, step, _ in here.values})
    assert steps > HOLD * (1 + STEPS_PER_ROLLOUT)  # rollouts, training steps and evaluations, past the hold
    final = {(change["kind"], change["item"]): change["status"] for change in changes if "status" in change}
    assert {key: status for key, status in final.items()} == {
        tuple(key.split(":", 1)): status for key, status in record["statuses"].items()}  # type: ignore[misc]
    counts = {status: sum(s == status for s in final.values())
              for status in ("inside", "outside", "undecided", "not_applicable")}
    at = next(index for index, line in enumerate(summary) if line.startswith("Watched "))
    assert summary[at + 1] == (f"{counts['outside']} went outside, {counts['inside']} inside, {counts['undecided']} "
                          f"undecided, {counts['not_applicable']} not applicable")


def test_each_form_is_told_by_its_name() -> None:
    assert form_of(Path("tb/events.out.tfevents.1789999200.spark.1234.0")) == "tensorboard"
    assert form_of(Path("wandb/offline-run-20261001_120000-abc/run-abc.wandb")) == "wandb"
    assert form_of(Path("mlruns/mlflow.db")) == "mlflow"
    assert form_of(Path("job.log")) is None and form_of(Path("metrics.jsonl")) is None


@pytest.mark.parametrize(("name", "why"), [
    ("events.out.tfevents.1.h.gz", "a gzipped tensorboard file is a finished copy: `manual compare` reads it"),
    ("mlflow.db", "an MLflow database store, which only mlflow reads: log the run to a file store "
                  "(MLFLOW_TRACKING_URI=file:./mlruns, with MLFLOW_ALLOW_FILE_STORE=true where mlflow asks for it) and "
                  "copy its folder mlruns/<experiment id>/<run id>/"),
])
def test_a_form_that_cannot_be_followed_is_said_once_in_one_line(tmp_path: Path, name: str, why: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\x00" * 16)
    warnings: list[str] = []
    live = LiveSources(warnings.append)
    assert live.take(path) == [] and live.take(path) == []
    assert warnings == [f"{path}: cannot be followed: {why}"]


def test_a_wandb_log_where_wandb_is_not_installed_is_said_in_one_line(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    path = tmp_path / "run-abc.wandb"
    path.write_bytes(b":W&B\x00")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    warnings: list[str] = []
    assert LiveSources(warnings.append).take(path) == []
    assert warnings == [f"{path}: cannot be followed: a wandb run's log, which only wandb reads, and wandb is not "
                        "installed here: install it (pip install wandb==0.31.0) to follow it"]


def test_a_tensorboard_record_cut_off_waits_for_the_rest(tmp_path: Path) -> None:
    """The writer mid-append: a record's first bytes are no value, and no warning; the rest completes it."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    whole = tmp_path / "whole"
    with whole.open("wb") as handle:
        writer = RecordWriter(handle)
        for step, value in enumerate((0.25, 0.75)):
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="rollout/raw_reward",
                                                                           simple_value=value)])
            writer.write(event_pb2.Event(wall_time=1789999200.0, step=step, summary=summary).SerializeToString())
    data = whole.read_bytes()
    path = tmp_path / "events.out.tfevents.1789999200.spark"
    warnings: list[str] = []
    live = LiveSources(warnings.append)
    cut = len(data) - 5
    path.write_bytes(data[:cut])
    assert live.take(path) == [Value("rollout/step", 0, "rollout/raw_reward", 0.25)]
    with path.open("ab") as handle:
        handle.write(data[cut:])
    assert live.take(path) == [Value("rollout/step", 1, "rollout/raw_reward", 0.75)]
    assert warnings == []


def test_a_readers_warning_is_said_once_not_at_every_piece(tmp_path: Path) -> None:
    """A key under no prefix Miles gives a step key, in every piece of a growing MLflow metric file: one warning."""
    run = tmp_path / "mlruns" / "1" / "abc"
    (run / "metrics" / "custom").mkdir(parents=True)
    (run / "meta.yaml").write_text("run_id: abc\n", encoding="utf-8")
    metric = run / "metrics" / "custom" / "thing"
    warnings: list[str] = []
    live = LiveSources(warnings.append)
    for step in range(3):
        with metric.open("a", encoding="utf-8") as handle:
            handle.write(f"1789999200000 0.5 {step}\n")
        assert live.take(metric) == [] and live.grew
    assert warnings == [f"{metric}: 1 key(s) under no prefix Miles gives a step key (train/, rollout/, perf/, "
                        "multi_turn/, passrate/, eval/) not read: custom/thing"]


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_live_file_that_is_not_a_plain_file_is_never_opened(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "events.out.tfevents.1789999200.spark"
    if kind == "fifo":
        os.mkfifo(path)  # opening it would wait for a writer forever
    else:
        (tmp_path / "secret").write_bytes(b"\x00" * 64)
        path.symlink_to(tmp_path / "secret")
    warnings: list[str] = []
    assert LiveSources(warnings.append).take(path) == []
    assert warnings == [f"{path}: cannot be followed: not a plain file (a link, a FIFO or a device); only a job's own "
                        "files are read"]


# --- a claim judged as soon as what it reads is in (build_tools/commands/watch/early.py) -----------------------

EARLY_CLAIM = "Every answer is cut at the 1,024-token cap."


def project_with_a_setup_claim(project: Path, folder: Path) -> tuple[Path, Contract]:
    """A copy of the project whose fig-response-length claims only what the run's setup says (its cap), and a
    contract of that claim and of one that reads the whole run (fig-reward-curves), as the build writes them."""
    import shutil

    from build_tools.checking import blocks as blocks_stage
    from build_tools.checking.contract import ClaimCheck

    copy = folder / "manual"
    shutil.copytree(project, copy, symlinks=True)
    chapter = copy / "docs" / "01-step.md"
    text = chapter.read_text(encoding="utf-8")
    start = text.index("claim: The mean answer length falls")
    end = text.index("  - check: config_equals\n    says: the 1,024-token cap")
    alt = text[text.index("alt: ", start):text.index("checks:\n", start)]
    chapter.write_text(text[:start] + f"claim: {EARLY_CLAIM}\n{alt}checks:\n" + text[end:], encoding="utf-8")
    numbers = {block.id: block for block in blocks_stage.read_blocks(copy / "docs", copy / "figures", pages=False)}

    def item(figure: str, checks: list[ClaimCheck]) -> ClaimItem:
        block = numbers[figure]
        return ClaimItem(id=figure, number=block.number, says=block.claim, source="tests", link="", severity="error",
                         checks=checks, envelope=[])

    cap = ClaimCheck(check="config_equals", says="the 1,024-token cap",
                     parameters={"field": "flags.rollout_max_response_len", "value": 1024, "runs": None})
    trend = ClaimCheck(check="trend", says="the trend over 48 steps goes up for every seed",
                       parameters={"metric": "rollout/raw_reward", "direction": "up", "steps": "auto", "runs": None})
    from build_tools.checking import contract

    return copy, contract.contract_of("test", "", "", [], [item("fig-response-length", [cap]),
                                                           item("fig-reward-curves", [trend])])


@pytest.mark.slow  # a job written by tensorboard's writer, some twenty seconds
def test_a_claim_on_the_setup_is_judged_mid_job_and_a_whole_run_claim_at_its_end(project: Path,
                                                                                  tmp_path: Path) -> None:
    from build_tools.checking import contract
    from build_tools.commands import compare
    from build_tools.core._layout import Layout

    manual, document = project_with_a_setup_claim(project, tmp_path)
    job = tmp_path / "job"
    job.mkdir()
    setup = (project / "runs" / "baseline-seed1" / "run.yaml").read_text(encoding="utf-8")
    (job / "run.yaml").write_text(setup.replace("run_id: baseline-seed1", "run_id: job"), encoding="utf-8")
    (tmp_path / "contract.json").write_text(contract.dumps(document), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent)}
    watcher = subprocess.Popen([sys.executable, "-m", "build_tools", "--root", str(manual), "watch", str(job),
                                "--format", "jsonl", "--until-idle", IDLE_S,
                                "--contract", str(tmp_path / "contract.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    reports, said = Lines(watcher.stdout), Lines(watcher.stderr)
    opened = {change["item"]: change for change in (json.loads(reports.next()) for _ in range(2))}
    assert opened["fig-response-length"]["why"] == ("it reads only the run's setup: judged once the setup and the "
                                                    "first step are read")
    assert opened["fig-reward-curves"]["why"] == "a claim reads the whole run: judged when the run ends"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(TESTS), "tensorboard", str(job), str(HOLD)],
                              stdin=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        early = json.loads(reports.next())  # the next change: the setup claim's verdict, the job still writing
        assert (early["item"], early["status"]) == ("fig-response-length", "inside") and writer.poll() is None
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.close()
        assert writer.wait(GUARD_S) == 0
        code = watcher.wait(GUARD_S)
    finally:
        writer.kill()
        watcher.kill()
    record = json.loads(reports.rest()[-1])
    summary = "".join(said.rest()).splitlines()
    # At the end: each claim as compare judges the finished run; the whole-run claim decided only then.
    checked = {claim.number: claim for claim in compare.claims_on(Layout(manual), compare.load_reader_run(job))}
    words = {True: "inside", False: "outside", None: "undecided"}
    expected = {f"claim:{item.id}": words[checked[item.number].holds] for item in document.claims}
    assert expected["claim:fig-response-length"] == "inside"
    assert record["kind"] == "summary" and record["statuses"] == expected
    assert code == (7 if "outside" in expected.values() else 0)
    at = next(index for index, line in enumerate(summary) if line.startswith("Watched "))
    counts = {status: sum(s == status for s in expected.values()) for status in ("outside", "inside", "undecided")}
    assert summary[at + 1] == (f"{counts['outside']} went outside, {counts['inside']} inside, {counts['undecided']} "
                               "undecided, 0 not applicable")
