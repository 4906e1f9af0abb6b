"""The columnar fast path reads large telemetry files exactly as the line-by-line path does, and hands every
file it cannot fully accept to that path, so every problem keeps its file:line message."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from build_tools import _columnar
from build_tools._exceptions import RunDataError
from build_tools.summary import summarise_runs, summarise_serially

RUN = "baseline-seed1"


def summaries(runs: Path) -> dict:
    return summarise_runs(runs, None, summariser=summarise_serially)


def test_fast_and_line_by_line_paths_give_the_same_summaries(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    read: list[str] = []
    real = _columnar.read_frame
    monkeypatch.setattr(_columnar, "read_frame", lambda stream, *data: read.append(stream) or real(stream, *data))
    fast = summaries(tmp_path / "runs")[RUN]
    assert {"gpu_util", "host_memory", "gpu_temp", "held_memory"} <= set(read)  # the fast path was taken
    monkeypatch.setattr(_columnar, "FLAT_STREAMS", ())
    slow = summaries(tmp_path / "runs")[RUN]
    assert fast.steps.equals(slow.steps) and fast.facts == slow.facts
    assert fast.series.keys() == slow.series.keys()
    for name, frame in slow.series.items():
        assert fast.series[name].equals(frame), name
        assert fast.series[name].dtypes.equals(frame.dtypes), name


@pytest.mark.parametrize(("old", "new", "expected"), [
    (b'"util":', b'"utl":', "util: missing (expected a number >= 0 <= 100)"),
    (b'"util":', b'"util":"high","x":', "util: expected a number, found 'high'"),
    (b'"ts":', b'"ts":-', "ts: expected a time in seconds, finite and not negative, found -"),
])
def test_a_bad_line_in_a_large_file_is_reported_at_its_line(old: bytes, new: bytes, expected: str,
                                                            tmp_path: Path) -> None:
    shutil.copytree(ROOT / "runs" / RUN, tmp_path / "runs" / RUN)
    hour = sorted((tmp_path / "runs" / RUN / "dashboard" / "gpu_util").iterdir())[0]
    lines = gzip.decompress(hour.read_bytes()).split(b"\n")
    lines[1000] = lines[1000].replace(old, new, 1)
    hour.write_bytes(gzip.compress(b"\n".join(lines), mtime=0))
    with pytest.raises(RunDataError) as caught:
        summaries(tmp_path / "runs")
    found = [str(problem) for problem in caught.value.problems]
    assert found and all(f"{hour.name}:1001: " in line for line in found), found
    assert any(expected in line for line in found), found
