"""The shipped example runs are exactly what the seeded generator writes."""

import datetime
from pathlib import Path

import pytest
import yaml

from examples import build_all
from examples._runs import RUNS
from tests.conftest import ROOT

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


@pytest.fixture
def edition(tmp_path, monkeypatch):
    """A copy of edition.yml the generator reads instead of the project's (its cache emptied around)."""
    from examples import _output

    copy = tmp_path / "edition.yml"
    copy.write_text((RUNS_DIR.parent / "edition.yml").read_text())
    monkeypatch.setattr(_output, "EDITION_YML", copy)
    _output.miles.cache_clear()
    yield copy
    _output.miles.cache_clear()


def test_the_runs_carry_the_editions_miles_build(edition, tmp_path):
    text = edition.read_text()
    edition.write_text(text.replace("commit: 08752a1", "commit: 1a2b3c4").replace("branch: main", "branch: next"))
    build_all(tmp_path / "runs")
    miles = yaml.safe_load((tmp_path / "runs" / RUNS[0].run_id / "run.yaml").read_text())["miles"]
    assert miles == {"image": "radixark/miles:latest", "branch": "next", "commit": "1a2b3c4",
                     "commit_date": datetime.date(2026, 10, 15)}


def test_a_bad_edition_file_is_named_and_replaces_no_run(edition, tmp_path, capsys):
    from examples.__main__ import main

    edition.write_text(edition.read_text().replace("  commit: 08752a1\n", ""))
    kept = tmp_path / "runs" / RUNS[0].run_id / "run.yaml"
    kept.parent.mkdir(parents=True)
    kept.write_text("provenance: example\n")
    assert main([str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "ERROR 1 problem in the edition file:",
        f"  {edition}:6: miles.commit: missing (expected text of 7 to 40 hex digits)"]
    assert kept.read_text() == "provenance: example\n"


def test_every_example_meta_json_names_the_run_and_a_one_gpu_launch():
    """Miles' dashboard names the run after --wandb-group (else miles-run); a one-GPU Spark launch: colocated, one
    GPU everywhere (its keys: test_examples_miles_writer)."""
    import json

    metas = sorted((ROOT / "runs").glob("*/dashboard/meta.json"))
    assert len(metas) == len(list((ROOT / "runs").glob("*/run.yaml")))
    for path in metas:
        meta = json.loads(path.read_text(encoding="utf-8"))
        args = meta["args"]
        assert meta["run_name"] == (args["wandb_group"] or "miles-run")
        assert (args["colocate"], args["num_gpus_per_node"], args["actor_num_nodes"],
                args["actor_num_gpus_per_node"], args["rollout_num_gpus"]) == (True, 1, 1, 1, 1), path
