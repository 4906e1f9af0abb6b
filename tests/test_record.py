"""`manual record`: host memory and GPU readings beside a job, as lab/ streams the loader accepts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES

from build_tools import load
from build_tools.load import LAB_STREAMS

MEMINFO = SAMPLES / "record" / "meminfo"


def fake_nvidia_smi(folder: Path, body: str) -> dict[str, str]:
    """An environment whose PATH finds a fake nvidia-smi first."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT)}


def record(out: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
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
    result = record(tmp_path / "run", env, "--samples", "3")
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
    result = record(tmp_path / "run", env, "--samples", "4")
    assert result.returncode == 0
    said = [line for line in result.stderr.splitlines() if "GPU query" in line]
    assert said == ["the GPU query (nvidia-smi) failed: NVIDIA-SMI has failed; recording host memory only"]
    streams = streams_of(tmp_path / "run")
    assert len(streams["host_memory"]) == 4 and "gpu_temp" not in streams


def test_until_exit_records_the_job_end(tmp_path: Path) -> None:
    env = fake_nvidia_smi(tmp_path / "bin", 'echo "0, 47, 93, [N/A]"')
    job = subprocess.Popen([sys.executable, "-c", "pass"])
    job.wait()
    result = record(tmp_path / "run", env, "--until-exit", str(job.pid))
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
