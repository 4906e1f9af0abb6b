"""`manual record`: host memory and GPU readings beside a job, as lab/ streams the loader accepts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.cli import main
from build_tools.commands import record
from build_tools.core._exceptions import EXIT_BAD_INPUT
from build_tools.ingest import load
from build_tools.ingest.load import LAB_STREAMS
from tests.conftest import ROOT, SAMPLES

MEMINFO = SAMPLES / "record" / "meminfo"


def fake_nvidia_smi(folder: Path, body: str) -> dict[str, str]:
    """An environment whose PATH finds a fake nvidia-smi first."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}


def run_record(out: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "build_tools", "record", str(out), "--meminfo", str(MEMINFO),
               "--interval", "0.01", "--flush", "0", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def streams_of(run: Path) -> dict[str, list]:
    problems: list = []
    data = load.RunData("x", run, {}, {})
    load._read_streams(data, {run / "lab": LAB_STREAMS}, problems)
    assert problems == [] and data.warnings == []
    return {name: load.records(data, name) for name in load.stream_names(data)}  # however each was read


def test_it_writes_hourly_lab_streams_the_loader_accepts(tmp_path: Path) -> None:
    env = fake_nvidia_smi(tmp_path / "bin", 'echo "0, 47, 93, 31.20"')
    result = run_record(tmp_path / "run", env, "--samples", "3")
    assert result.returncode == 0, result.stderr
    streams = streams_of(tmp_path / "run")
    memory = [r.data for r in streams["host_memory"]]
    assert [(m["total_kib"], m["available_kib"]) for m in memory] == [(127535876, 98304512)] * 3
    gpus = [r.data for r in streams["gpu_temp"]]
    assert [(g["gpu"], g["temp_c"], g["util"], g["power_w"]) for g in gpus] == [(0, 47.0, 93.0, 31.2)] * 3
    assert all(p.parent.name in ("host_memory", "gpu_temp") for p in (tmp_path / "run" / "lab").rglob("*.jsonl"))
    assert result.stderr.splitlines()[-1] == "stopped after 3 samples"


def test_a_failing_gpu_query_is_said_once_and_host_memory_goes_on(tmp_path: Path) -> None:
    env = fake_nvidia_smi(tmp_path / "bin", 'echo "NVIDIA-SMI has failed" >&2; exit 9')
    result = run_record(tmp_path / "run", env, "--samples", "4")
    assert result.returncode == 0
    said = [line for line in result.stderr.splitlines() if "GPU query" in line]
    assert said == ["the GPU query (nvidia-smi) failed: NVIDIA-SMI has failed (exit status 9); recording host "
                    "memory only"]
    streams = streams_of(tmp_path / "run")
    assert len(streams["host_memory"]) == 4 and "gpu_temp" not in streams


def test_nvidia_smis_own_message_on_standard_output_is_kept(tmp_path: Path) -> None:
    """nvidia-smi prints its own failure on standard output (a driver updated under a running system)."""
    env = fake_nvidia_smi(tmp_path / "bin", 'echo "Failed to initialize NVML: Driver/library version mismatch"; '
                                            'echo "NVML library version: 580.95"; exit 18')
    result = run_record(tmp_path / "run", env, "--samples", "2")
    assert result.returncode == 0
    assert [line for line in result.stderr.splitlines() if "GPU query" in line] == [
        "the GPU query (nvidia-smi) failed: Failed to initialize NVML: Driver/library version mismatch; NVML library "
        "version: 580.95 (exit status 18); recording host memory only"]


def test_a_gpu_without_a_temperature_is_a_warning_and_counted(tmp_path: Path) -> None:
    env = fake_nvidia_smi(tmp_path / "bin", 'echo "0, [N/A], 93, 31.20"; echo "1, 47, 90, [N/A]"')
    result = run_record(tmp_path / "run", env, "--samples", "3")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[1:] == [
        "WARNING gpu_temp.temp_c of GPU 0: nvidia-smi reports '[N/A]', not a temperature; the sample is left out (the "
        "closing summary counts every one)",
        "stopped after 3 samples; 3 GPU samples without a temperature left out (GPU 0 3)"]
    gpus = [(g["gpu"], g["temp_c"], g["util"], g["power_w"]) for g in
            (r.data for r in streams_of(tmp_path / "run")["gpu_temp"])]
    assert gpus == [(1, 47.0, 90.0, None)] * 3


def test_until_exit_records_the_job_end(tmp_path: Path) -> None:
    env = fake_nvidia_smi(tmp_path / "bin", 'echo "0, 47, 93, [N/A]"')
    job = subprocess.Popen([sys.executable, "-c", "pass"])
    job.wait()
    result = run_record(tmp_path / "run", env, "--until-exit", str(job.pid))
    assert result.returncode == 0
    (event,) = [r.data for r in streams_of(tmp_path / "run")["events"]]
    assert event["kind"] == "job_end" and event["t0"] == event["t1"]
    assert event["detail"] == f"process {job.pid} ended (manual record --until-exit)"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_it_cleanly_with_whole_lines(tmp_path: Path, sig: signal.Signals) -> None:
    env = fake_nvidia_smi(tmp_path / "bin", 'echo "0, 47, 93, 31.20"')
    command = [sys.executable, "-m", "build_tools", "record", str(tmp_path / "run"), "--meminfo", str(MEMINFO),
               "--interval", "0.01", "--flush", "0"]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    process.stderr.readline()  # "recording ... into ..." : it has started
    while not list((tmp_path / "run" / "lab").rglob("*.jsonl")):
        assert process.poll() is None
    process.send_signal(sig)
    assert process.wait(timeout=60) == 0
    assert f"got {sig.name}: flushing and stopping" in process.stderr.read()
    for path in (tmp_path / "run" / "lab").rglob("*.jsonl"):
        text = path.read_text()
        assert text.endswith("\n") and all(json.loads(line) for line in text.splitlines())


def test_an_append_after_a_kill_mid_line_starts_on_a_fresh_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) \
        -> None:
    """A recorder killed mid-write left a half line; the next one cuts it off, says so, and the run loads."""
    monkeypatch.chdir(tmp_path)
    hour_file = Path("run/lab/host_memory/20261002_14.jsonl")
    hour_file.parent.mkdir(parents=True)
    half = (SAMPLES / "record" / "half-line.jsonl").read_bytes()
    hour_file.write_bytes(half)
    Path("run/lab/events.jsonl").write_bytes(b'{"kind":"job_end","t0":1790949')  # no newline at all
    job = subprocess.Popen([sys.executable, "-c", "pass"])
    job.wait()
    said: list[str] = []
    recorder = record.Recorder(Path("run"), meminfo=MEMINFO, nvidia_smi=str(tmp_path / "no-nvidia-smi"),
                               interval=0.01, flush_every=0, until_exit=job.pid, say=said.append,
                               clock=lambda: 1790949602.0)
    assert recorder.run() == 0
    assert said[-4:-1] == [
        f"process {job.pid} ended: recorded job_end, stopping",
        "WARNING run/lab/host_memory/20261002_14.jsonl: dropped its last 35 bytes, a half line a killed recorder "
        "left ('{\"ts\":1790949601.0,\"total_kib\":1275'); recording goes on from a fresh line",
        "WARNING run/lab/events.jsonl: dropped its last 30 bytes, a half line a killed recorder left "
        "('{\"kind\":\"job_end\",\"t0\":1790949'); recording goes on from a fresh line",
    ]
    assert said[-1] == "stopped after 1 samples"
    assert hour_file.read_bytes() == (half[:half.index(b"\n") + 1]
                                      + b'{"ts":1790949602.0,"total_kib":127535876,"available_kib":98304512}\n')
    streams = streams_of(Path("run"))
    assert [r.data["ts"] for r in streams["host_memory"]] == [1790949600.0, 1790949602.0]
    assert [r.data["kind"] for r in streams["events"]] == ["job_end"]


def test_an_impossible_reading_is_recorded_as_missing_and_counted(tmp_path: Path) -> None:
    """NaN, infinite power, 500 °C, a utilisation of 150 % and more memory available than there is: null where
    the lab schema allows it, else the sample left out; never a value the loader refuses."""
    env = fake_nvidia_smi(tmp_path / "bin", f"cat {SAMPLES / 'record' / 'nvidia-smi-impossible.csv'}")
    command = [sys.executable, "-m", "build_tools", "record", str(tmp_path / "run"), "--meminfo",
               str(SAMPLES / "record" / "meminfo-available-above-total"), "--interval", "0.01", "--flush", "0",
               "--samples", "2"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[1:] == [
        "WARNING host_memory.available_kib: recorded as missing, an impossible reading (is 227535876, above "
        "total_kib 127535876 (expected available <= total)); the closing summary counts every one",
        "WARNING gpu_temp.temp_c: recorded as missing, an impossible reading (expected a value >= -50, found nan); "
        "the closing summary counts every one",
        "WARNING gpu_temp.power_w: recorded as missing, an impossible reading (is a number beyond the range of a "
        "double, found inf); the closing summary counts every one",
        "WARNING gpu_temp.util: recorded as missing, an impossible reading (expected a value <= 100, found 150.0); "
        "the closing summary counts every one",
        "stopped after 2 samples; 10 impossible readings recorded as missing (gpu_temp.power_w 2, gpu_temp.temp_c 4, "
        "gpu_temp.util 2, host_memory.available_kib 2)",
    ]
    streams = streams_of(tmp_path / "run")
    assert "host_memory" not in streams
    gpus = [(g["gpu"], g["temp_c"], g["util"], g["power_w"]) for g in (r.data for r in streams["gpu_temp"])]
    assert gpus == [(1, 47.0, 93.0, None), (3, 47.0, None, 30.0)] * 2
    written = "".join(path.read_text() for path in (tmp_path / "run" / "lab").rglob("*.jsonl"))
    assert "NaN" not in written and "Infinity" not in written


@pytest.mark.parametrize(("option", "value", "error"), [
    ("--interval", "-1", "--interval: '-1' is not a number of seconds above 0, e.g. --interval 1"),
    ("--interval", "0", "--interval: '0' is not a number of seconds above 0, e.g. --interval 1"),
    ("--interval", "nan", "--interval: 'nan' is not a number of seconds above 0, e.g. --interval 1"),
    ("--interval", "inf", "--interval: 'inf' is not a number of seconds above 0, e.g. --interval 1"),
    ("--interval", "soon", "--interval: 'soon' is not a number of seconds above 0, e.g. --interval 1"),
    ("--interval", "１", "--interval: '１' is not a number of seconds above 0, e.g. --interval 1"),
    ("--interval", "1_0", "--interval: '1_0' is not a number of seconds above 0, e.g. --interval 1"),
    ("--flush", "-5", "--flush: '-5' is not a number of seconds, 0 or more, e.g. --flush 5"),
    ("--flush", "٥", "--flush: '٥' is not a number of seconds, 0 or more, e.g. --flush 5"),
    ("--samples", "0", "--samples: '0' is not a number of samples (a whole number from 1), e.g. --samples 10"),
    ("--until-exit", "-1", "--until-exit: '-1' is not a process id (a whole number from 1), e.g. --until-exit 4242"),
])
def test_an_impossible_option_is_refused_in_one_line(option: str, value: str, error: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", str(tmp_path / "run"), f"{option}={value}"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == f"ERROR {error}\n"
    assert not (tmp_path / "run").exists()  # nothing ran


def test_a_run_folder_that_cannot_be_written_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(SAMPLES / "record")
    assert main(["record", "meminfo", "--samples", "1"]) == EXIT_BAD_INPUT  # a file, not a run folder
    assert capsys.readouterr().err == ("ERROR meminfo/lab: cannot write (Not a directory): manual record writes the "
                                       "lab/ streams of a run folder, which must be a folder it can write\n")
