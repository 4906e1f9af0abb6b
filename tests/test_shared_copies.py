"""The copies of ../shared/ that the tests read are the files the user wrote, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MILES_SAMPLES, ROOT, SEEDS

SHARED = ROOT.parent / "shared"
COPIES = {SEEDS: SHARED / "seeds", MILES_SAMPLES: SHARED / "reference" / "miles-dashboard-samples"}


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("copy", list(COPIES), ids=lambda p: p.name)
def test_copy_matches_the_shared_original(copy: Path) -> None:
    original = COPIES[copy]
    if not original.is_dir():
        pytest.skip(f"no {original} beside this clone to compare with")
    assert files(copy) == files(original)
