"""Issue 39, `manual watch` on hostile files: whatever a file holds or turns into, the watch stays under 300 MB,
ends when asked (--until-idle, Ctrl-C), exits 0, 2 or 7 (never 1), says each refused file in one line, and writes
no control character from the data and no line the data starts with `::`, in text, jsonl and github modes.

Each case runs the whole command in a process of its own, under a parent that measures its peak resident memory
(getrusage of its only child): a bound, not a timing. Samples: tests/samples/hostile-watch/ (the cases git can
keep); FIFOs, links to /dev/zero or out of the folder, and the 320 MiB line are made here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from build_tools.commands.watch.run import Watch
from tests.commands.watch.test_watch import ROOT, contract, record
from tests.conftest import MANUAL_AS_IN_A_TERMINAL, SAMPLES

CASES = SAMPLES / "hostile-watch"
MEMORY_BOUND_KB = 300 * 1000  # 300 MB resident, the bound
GUARD_S = 120.0  # a failure guard only: a watch that never ends fails here
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1
RUNNER_LINE = re.compile(r"^[ \t]*(::|##\[)", re.MULTILINE)
# Runs the watch as its only child, and says its exit code, output and peak resident memory (kB, Linux).
MEASURED = """
import json, resource, subprocess, sys
try:
    done = subprocess.run(sys.argv[1:], capture_output=True, timeout=100)
    code, out, err = done.returncode, done.stdout, done.stderr
except subprocess.TimeoutExpired as late:  # a watch that does not end: said, not a crash of this parent
    code, out, err = -1, late.stdout or b"", (late.stderr or b"") + b" TIMED OUT"
print(json.dumps({"code": code, "out": out.decode("utf-8", "surrogateescape"),
                  "err": err.decode("utf-8", "surrogateescape"),
                  "rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


@dataclass
class Watched:
    code: int
    out: str
    err: str
    rss_kb: int

    def warnings(self) -> list[str]:
        return [line.removeprefix("WARNING ") for line in self.err.splitlines() if line.startswith("WARNING ")]


def watch(folder: Path, *options: str, form: str = "jsonl", contract_file: Path | None = None) -> Watched:
    if contract_file is None:
        contract_file = folder.parent / "contract.json"
        contract_file.write_text(contract().model_dump_json(by_alias=True), encoding="utf-8")
    command = [sys.executable, "-m", "build_tools", "--root", str(ROOT), "watch", str(folder), "--format", form,
               "--contract", str(contract_file), *(options or ("--until-idle", "1"))]
    done = subprocess.run([sys.executable, "-c", MEASURED, *command], capture_output=True, text=True,
                          timeout=GUARD_S, check=True)
    return Watched(**json.loads(done.stdout))


def clean(result: Watched) -> None:
    """What every case must hold: no bug's exit, memory under the bound, nothing from the data a terminal or a
    CI runner would act on."""
    assert result.code in (0, 2, 7), result.err
    assert "Traceback" not in result.err
    assert result.rss_kb < MEMORY_BOUND_KB
    for stream in (result.out, result.err):
        assert not CONTROL.search(stream)
        assert not RUNNER_LINE.search(stream) or all(
            line.startswith(("::warning title=", "::error title=", "::notice title="))
            for line in stream.splitlines() if RUNNER_LINE.match(line))


def job(tmp_path: Path, case: str) -> Path:
    folder = tmp_path / "job"
    shutil.copytree(CASES / case, folder)
    return folder


# --- what a file holds -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("case", "said"), [
    ("int-400-digits-value", ["{job}/metrics.jsonl:2: rollout/raw_reward: a whole number of 400 digits, beyond a "
                              "double; line skipped"]),
    ("int-400-digits-step", ["{job}/metrics.jsonl:2: expected step a whole number from 0 to 9223372036854775807 "
                             "(64 bits), found 400 digits; line skipped"]),
    ("nested-100000-deep-line", ["{job}/metrics.jsonl:2: nested too deep for a metrics record; line skipped"]),
])
def test_a_line_the_watch_cannot_take_is_one_warning_and_the_watch_goes_on(case: str, said: list[str],
                                                                          tmp_path: Path) -> None:
    folder = job(tmp_path, case)
    result = watch(folder)
    clean(result)
    assert result.code == 0
    assert result.warnings() == [line.format(job=folder) for line in said]
    assert result.err.splitlines()[-2] == "0 went outside, 1 inside, 0 undecided, 0 not applicable"


UNUSED = "; the setup it gives is not used"


@pytest.mark.parametrize(("case", "said"), [
    ("int-400-digits-meta", "{job}/meta.json:1: not valid JSON: the integer 100000000000000000000000... is beyond "
                            "64 bits"),
    ("nested-100000-deep-meta", "{job}/meta.json:1: nested more than 8 levels deep, deeper than any Miles record"),
    ("alias-bomb-run-yaml", "{job}/run.yaml:1: b.0: YAML aliases (*name) are not allowed here; write the value out"),
    ("controls-in-meta", "{job}/meta.json: args.wandb_group: holds the unprintable character '\\n' at character 4: "
                         "expected printable text"),
    ("newline-in-model-name", "{job}/meta.json: args.hf_checkpoint: holds the unprintable character '\\n' at "
                              "character 17: expected printable text"),
])
def test_a_setup_file_the_loader_refuses_is_warned_of_and_not_used(case: str, said: str, tmp_path: Path) -> None:
    """meta.json and run.yaml are read by the loader's own rules before any value of them is used: a value holding
    `\\n::set-env` never reaches the output, in any mode."""
    folder = job(tmp_path, case)
    line = said.format(job=folder) + UNUSED
    for form, warned in (("jsonl", f"WARNING {line}"), ("github", f"::warning title=manual watch::{line}"),
                         ("live", f"WARNING {line}")):
        result = watch(folder, form=form)
        clean(result)
        assert result.code == 0
        assert result.err.splitlines()[0] == warned
        assert result.err.splitlines()[-2:] == ["0 went outside, 1 inside, 0 undecided, 0 not applicable",
                                                "  rollout/raw_reward: inside at rollout/step 1: 0.7 in 0.5 to 0.9"]
        assert "set-env" not in result.out + result.err and "add-mask" not in result.out + result.err


# --- what a file is, or turns into ----------------------------------------------------------------------------

REFUSED = "; not read, the watch goes on"
FIFO = "is a FIFO (named pipe), not a plain file; only plain files are read"
LINK_OUT = "is a symbolic link to outside the run; only files inside it are read: copy the file in instead"


@pytest.mark.parametrize("name", ["meta.json", "run.yaml", "metrics.jsonl"])
@pytest.mark.parametrize("kind", ["fifo", "dev zero", "link out"])
def test_a_file_that_is_not_a_plain_file_of_the_folder_is_one_line_and_the_watch_ends_when_asked(
        name: str, kind: str, tmp_path: Path) -> None:
    """Opened to wait for a writer, a FIFO would block the watch for good; /dev/zero read whole grew to 2.4 GiB."""
    folder = tmp_path / "job"
    folder.mkdir()
    (tmp_path / "secret.txt").write_text("OUTSIDE-SECRET\n", encoding="utf-8")
    if name != "metrics.jsonl":
        (folder / "metrics.jsonl").write_text(record(0, 0.6), encoding="utf-8")
    target = folder / name
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero" if kind == "dev zero" else tmp_path / "secret.txt")
    result = watch(folder)
    clean(result)
    assert result.code == 0
    assert result.warnings() == [f"{target}: {FIFO if kind == 'fifo' else LINK_OUT}{REFUSED}"]
    assert "OUTSIDE-SECRET" not in result.out + result.err


def test_a_320_mib_line_with_no_newline_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    """The line is never held whole: it was 802 MiB resident."""
    folder = tmp_path / "job"
    folder.mkdir()
    with (folder / "metrics.jsonl").open("wb") as handle:
        handle.truncate(320 * 1024 * 1024)  # sparse: 320 MiB of NUL bytes and no newline, no disk taken
    result = watch(folder)
    clean(result)
    assert result.code == 0
    assert result.warnings() == [f"{folder}/metrics.jsonl:1: longer than 1,048,576 bytes, no record Miles writes; "
                                 "line skipped"]
    print(f"peak RSS with a 320 MiB line: {result.rss_kb / 1000:.0f} MB")


def test_a_file_of_empty_lines_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """Lines are handed on a mebibyte at a time: 16 MiB of newlines is never 16 million strings at once (some 1 GB)."""
    folder = tmp_path / "job"
    folder.mkdir()
    with (folder / "metrics.jsonl").open("wb") as handle:
        for _ in range(16):
            handle.write(b"\n" * (1024 * 1024))
        handle.write(record(0, 0.6).encode())
    result = watch(folder)
    clean(result)
    assert result.code == 0 and result.warnings() == []
    changes = [json.loads(line) for line in result.out.splitlines()]
    assert [change["status"] for change in changes if change.get("kind") == "range"] == ["undecided", "inside"]
    print(f"peak RSS with 16 MiB of empty lines: {result.rss_kb / 1000:.0f} MB")


def test_a_long_line_is_skipped_and_the_records_after_it_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text(record(0, 0.6) + "x" * (3 * 1024 * 1024) + "\n" + record(2, 0.95),
                                          encoding="utf-8")
    result = watch(folder, "--until-idle", "1", "--fail-on", "outside")
    clean(result)
    assert result.code == 7  # the record after the long line was read, and is outside the band
    assert result.warnings() == [f"{folder}/metrics.jsonl:2: longer than 1,048,576 bytes, no record Miles writes; "
                                 "line skipped"]


def test_a_file_that_turns_into_a_fifo_and_back_is_said_once_and_read_again(tmp_path: Path) -> None:
    warnings: list[str] = []
    watched = Watch(tmp_path, contract(), lambda change: None, warnings.append)
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(record(0, 0.6), encoding="utf-8")
    assert watched.take(metrics)
    metrics.unlink()
    os.mkfifo(metrics)
    assert watched.take(metrics) and not watched.take(metrics)  # said once, not at every event
    metrics.unlink()
    metrics.write_text(record(0, 0.6) + record(1, 0.7), encoding="utf-8")
    assert watched.take(metrics)
    assert warnings == [f"{metrics}: {FIFO}{REFUSED}"]
    assert sorted(watched.steps) == [("rollout/step", 0), ("rollout/step", 1)]


# --- the contract and the options ------------------------------------------------------------------------------


def bad_contract(tmp_path: Path, change: str) -> Path:
    data = json.loads(contract().model_dump_json(by_alias=True))
    item = data["ranges"][0]
    if change == "nan band":
        text = json.dumps(data).replace('"low": 0.5', '"low": NaN')
    elif change == "infinite band":
        text = json.dumps(data).replace('"high": 0.9', '"high": Infinity')
    elif change == "400-digit band":
        text = json.dumps(data).replace('"high": 0.9', '"high": 1' + "0" * 400)
    elif change == "nested 100000 deep":
        text = json.dumps(data).replace('"ranges": [', '"x": ' + "[" * 100000 + "]" * 100000 + ', "ranges": [')
    else:
        if change == "c1 item":
            item["id"] = "rollout/raw_reward\u009b31m"
        elif change == "newline source":
            item["source"] = "Metrics page\n::add-mask::x"
        elif change == "400-digit decimals":
            item["decimals"] = 10**400
        text = json.dumps(data)
    (tmp_path / "c.json").write_text(text, encoding="utf-8")
    return tmp_path / "c.json"


@pytest.mark.parametrize(("change", "field"), [
    ("nan band", "ranges.0.low: Input should be a finite number"),
    ("infinite band", "ranges.0.high: Input should be a finite number"),
    ("c1 item", "ranges.0.id: holds the unprintable character '\\x9b' at character 19: expected printable text"),
    ("newline source", "ranges.0.source: holds the unprintable character '\\n' at character 13: expected printable "
                       "text"),
    ("400-digit decimals", "ranges.0.decimals: expected a whole number of decimals from 0 to 17"),
    ("400-digit band", "ranges.0.high: Input should be a finite number"),
    ("nested 100000 deep", ": Invalid JSON: recursion limit exceeded at line 1 column"),
])
def test_a_contract_the_manual_would_not_write_is_refused(change: str, field: str, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "metrics.jsonl").write_text(record(0, 0.6), encoding="utf-8")
    where = bad_contract(tmp_path, change)
    result = watch(folder, contract_file=where)
    clean(result)
    assert result.code == 2
    assert " ".join(result.err.split()).startswith(f"ERROR {where}: not a contract this manual reads: {field}")


@pytest.mark.parametrize("kind", ["fifo", "dev zero"])
def test_a_contract_that_is_no_plain_file_is_refused_unread(kind: str, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    where = tmp_path / "c.json"
    if kind == "fifo":
        os.mkfifo(where)
    else:
        where.symlink_to("/dev/zero")
    result = watch(folder, contract_file=where)
    clean(result)
    assert result.code == 2 and result.err.splitlines()[0] == f"ERROR {where}: no contract to watch against"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "\u0663", "1e999"])
def test_until_idle_must_be_a_finite_number_of_seconds(value: str, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    result = watch(folder, "--until-idle", value)
    clean(result)
    assert result.code == 2
    assert result.err.splitlines()[0] == (f"ERROR --until-idle: '{value}' is not a number of seconds, finite and not "
                                          "negative, e.g. --until-idle 30")


# --- data that names itself: file names and logged values ----------------------------------------------------


@pytest.mark.parametrize("form", ["jsonl", "github", "live"])
def test_a_file_name_holding_a_workflow_command_stays_on_its_warning_line(form: str, tmp_path: Path) -> None:
    folder = tmp_path / "job"
    (folder / "metrics").mkdir(parents=True)
    named = folder / "metrics" / "a\n::add-mask::x\u009b31m.jsonl"
    named.write_text("{not json\n" + record(0, 0.6), encoding="utf-8")
    result = watch(folder, form=form)
    clean(result)
    assert result.code == 0
    said = "x.jsonl:1: Expecting property name enclosed in double quotes: line 1 column 2 (char 1); line skipped"
    if form == "github":  # the runner decodes %0A inside the annotation: no line of the log starts there
        assert result.err.splitlines()[0] == f"::warning title=manual watch::{folder}/metrics/a%0A::add-mask::{said}"
    else:  # one line: its line break written \n, the 8-bit CSI removed whole
        assert result.warnings() == [f"{folder}/metrics/a\\n::add-mask::{said}"]


def test_a_logged_value_with_c1_controls_is_escaped_in_jsonl_and_removed_in_text(tmp_path: Path) -> None:
    """A log's argument dump is the setup of a job with no meta.json: its model name reaches the not-applicable
    reason, which the jsonl stream writes as JSON escapes (json.dumps(ensure_ascii=False) wrote U+009B raw)."""
    folder = tmp_path / "job"
    folder.mkdir()
    log = (SAMPLES / "sources" / "log" / "job.log").read_text(encoding="utf-8")
    (folder / "job.log").write_text(log.replace("Qwen/Qwen3-0.6B", "Qwen/Qwen3\u009b2J\u009d0;pwned\u009c-8B"),
                                    encoding="utf-8")
    result = watch(folder)
    clean(result)
    reasons = [json.loads(line).get("why", "") for line in result.out.splitlines()]
    assert any("Qwen3\u009b2J\u009d0;pwned\u009c-8B" in why for why in reasons)  # the data, read back whole
    assert "\\u009b2J\\u009d0;pwned\\u009c" in result.out
    text = watch(folder, form="live")
    clean(text)
    assert "(model: yours is Qwen3-8B, the manual's runs have Qwen3-0.6B)" in text.err  # each sequence removed whole


def test_ctrl_c_ends_a_watch_beside_a_fifo(tmp_path: Path) -> None:
    """Every wait is interruptible: with a FIFO as meta.json (which once blocked the watch for good), Ctrl-C ends it
    with its summary and exit 0."""
    import signal

    folder = tmp_path / "job"
    folder.mkdir()
    os.mkfifo(folder / "meta.json")
    (folder / "metrics.jsonl").write_text(record(0, 0.6), encoding="utf-8")
    (tmp_path / "c.json").write_text(contract().model_dump_json(by_alias=True), encoding="utf-8")
    watcher = subprocess.Popen([*MANUAL_AS_IN_A_TERMINAL, "--root", str(ROOT), "watch", str(folder),
                                "--format", "jsonl", "--contract", str(tmp_path / "c.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert watcher.stdout is not None
    assert json.loads(watcher.stdout.readline())["why"] == "no value yet"
    assert json.loads(watcher.stdout.readline())["status"] == "inside"  # past the FIFO: it has read the step
    watcher.send_signal(signal.SIGINT)
    _, err = watcher.communicate(timeout=GUARD_S)
    assert watcher.returncode == 0
    assert err.splitlines() == [f"WARNING {folder}/meta.json: {FIFO}{REFUSED}",
                                "Watched job against the manual's edition test (contract version 3): 1 rollout step "
                                "(0 to 0); ended: Ctrl-C",
                                "0 went outside, 1 inside, 0 undecided, 0 not applicable",
                                "  rollout/raw_reward: inside at rollout/step 0: 0.6 in 0.5 to 0.9"]


def test_a_meta_json_that_turns_into_a_link_to_dev_zero_is_said_once(tmp_path: Path) -> None:
    from tests.commands.watch.test_watch import meta

    warnings: list[str] = []
    watched = Watch(tmp_path, contract(), lambda change: None, warnings.append)
    path = tmp_path / "meta.json"
    path.write_text(meta(), encoding="utf-8")
    assert watched.take(path) and watched.judge.setup is not None
    path.unlink()
    path.symlink_to("/dev/zero")
    assert watched.take(path) and not watched.take(path)
    assert warnings == [f"{path}: {LINK_OUT}{REFUSED}"]
