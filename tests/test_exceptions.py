"""_exceptions.display_path: its string fast path gives what Path.relative_to gives, wherever the path lies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from build_tools import _exceptions
from build_tools._exceptions import display_path

PARTS = st.lists(st.sampled_from(["a", "b", "runs", ".", "..", "", "x y", "é"]), min_size=0, max_size=5)


@pytest.mark.parametrize("where", ["/", "deep"])
@given(parts=PARTS, absolute=st.booleans())
def test_display_path_is_relative_to_s(tmp_path_factory: pytest.TempPathFactory, where: str, parts: list[str],
                                       absolute: bool) -> None:
    here = Path("/") if where == "/" else tmp_path_factory.getbasetemp()
    before = os.getcwd()
    os.chdir(here)
    try:
        written = "/".join(parts) or "."
        path = str(here / written) if absolute else written
        assert display_path(path) == _exceptions._display_path(path)
        assert display_path(Path(path)) == _exceptions._display_path(Path(path))
    finally:
        os.chdir(before)


def test_display_path_words() -> None:
    here = Path.cwd()
    assert display_path(here / "runs" / "a" / "run.yaml") == "runs/a/run.yaml"
    assert display_path(here) == "."
    assert display_path("/elsewhere/file") == "/elsewhere/file"
