"""The shipped example runs are exactly what the seeded generator writes."""

from pathlib import Path

import pytest
import yaml

from build_tools.examples import build_all
from build_tools.examples._runs import RUNS

RUNS_DIR = Path(__file__).resolve().parents[1] / "runs"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("examples")
    build_all(out)
    return out


def _files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("run_id", [spec.run_id for spec in RUNS])
def test_regenerating_gives_identical_bytes(regenerated, run_id):
    shipped, fresh = _files(RUNS_DIR / run_id), _files(regenerated / run_id)
    assert sorted(shipped) == sorted(fresh), "the set of files differs"
    changed = [name for name in fresh if fresh[name].read_bytes() != shipped[name].read_bytes()]
    assert not changed, f"files differ from a fresh regeneration: {changed}"


@pytest.mark.parametrize("run_id", [spec.run_id for spec in RUNS])
def test_run_yaml_says_example(run_id):
    config = yaml.safe_load((RUNS_DIR / run_id / "run.yaml").read_text())
    assert config["provenance"] == "example"
    assert config["run_id"] == run_id


def test_generator_replaces_only_its_own_runs(tmp_path):
    foreign = tmp_path / "measured-run" / "run.yaml"
    foreign.parent.mkdir()
    foreign.write_text("provenance: measured\n")
    stale = tmp_path / RUNS[0].run_id / "dashboard" / "stale.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}\n")
    build_all(tmp_path)
    assert foreign.read_text() == "provenance: measured\n"
    assert not stale.exists()
