"""_exceptions.display_path: its string fast path gives what Path.relative_to gives, wherever the path lies."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from build_tools.core import _exceptions
from build_tools.core._exceptions import display_path

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


@pytest.mark.parametrize("error", [
    _exceptions.bad_option("--interval", "x", "a number of seconds above 0", "--interval 1"),
    _exceptions.margins_below(2, 0.2),
    _exceptions.edition_claims_failed("2026.12", 1, 18, ["fig 1.3"]),
    _exceptions.pages_file_damaged("gh-pages", "versions.json", "not JSON"),
    _exceptions.ray_worker_lost("runs/a", "OutOfMemoryError", "killed"),
    _exceptions.RunDataError([_exceptions.Problem("runs/a/run.yaml", 3, "seed", "expected a whole number")]),
    _exceptions.ClaimsFailed(["fig-x: false"], 1, 18),
    _exceptions.ClaimsUnproven(["fig 1.3 check 2 (event_span) cannot be made to fail: ..."], 1, 18, ["::error::x"]),
    _exceptions.edition_claims_unproven("2026.12", _exceptions.ClaimsUnproven(["fig 1.3 ..."], 1, 18)),
])
def test_an_error_pickled_from_a_worker_is_the_same_error(error: _exceptions.ManualError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.hint, copy.exit_code) == (type(error), str(error), error.hint,
                                                                   error.exit_code)


def test_a_refusal_carries_its_message_hint_and_exit_code() -> None:
    refused = _exceptions.edition_claims_failed("2026.12", 1, 18, ["fig 1.3"])
    assert isinstance(refused, _exceptions.EditionError)
    assert str(refused) == ("not publishing 2026.12: 1 of 18 claims failed (fig 1.3): run make check, fix "
                            "the runs or the captions, commit, and publish again")
    assert (refused.hint, refused.exit_code) == ("an edition is only published when every claim holds",
                                                 _exceptions.EXIT_CLAIM_FAILED)
    plain = _exceptions.not_a_port("80; ls")
    assert (str(plain), plain.hint, plain.exit_code) == (
        "PORT='80; ls' is not a port: write a whole number from 1 to 65535, e.g. make serve PORT=8001", "",
        _exceptions.EXIT_BAD_INPUT)
    # the class's hint stays the class's: an error made with none does not blank it for the others
    assert _exceptions.RunDataError([]).hint == "fix the files named above; runs/README.md documents every field"
