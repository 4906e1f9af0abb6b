"""build_tools/ingest/miles_facts: Miles' launch parser as data, read from the pinned Miles source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.ingest.miles_facts import extract
from tests.conftest import ROOT

DATA = ROOT / "build_tools" / "ingest" / "miles_facts" / "miles_args.json"
MIRROR = Path("/work/.mirror/radixark+miles/repo")
PINNED = "31f1ca961a94cb860cec3b2dea34ec332bfa8f76"


def facts() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_the_data_names_its_commit_and_how_to_regenerate_it():
    data = facts()
    assert data["miles_commit"] == PINNED
    assert data["regenerate"] == "make miles-facts MILES=/path/to/miles-checkout"


def test_flags_read_by_hand_from_the_source():
    """Checked against miles/utils/arguments.py and miles/backends/fsdp_utils/arguments.py at the pinned commit."""
    flags = facts()["flags"]
    assert flags["actor_num_gpus_per_node"] == {"options": ["--actor-num-gpus-per-node"], "action": "store",
                                                "type": "int", "nargs": None, "choices": None, "default": 8,
                                                "required": False}
    assert flags["train_backend"]["choices"] == ["megatron", "fsdp"] and flags["train_backend"]["default"] == "megatron"
    assert flags["rollout_batch_size"]["required"] is True and flags["rollout_batch_size"]["type"] == "int"
    assert flags["colocate"]["action"] == "store_true" and flags["colocate"]["default"] is False
    assert flags["offload_train"]["options"] == ["--offload-train", "--no-offload-train"]
    assert flags["offload_rollout_level"]["nargs"] == "+"
    assert flags["offload_rollout_level"]["default"] == ["kv_cache", "weight"]
    # FSDPArgs' dataclass fields become flags too (bool ones as --x/--no-x); Miles resets --lr to 1e-6 (reset_arg).
    assert flags["deterministic_mode"]["action"] == "boolean_optional" and flags["lr"]["default"] == 1e-6


def test_the_meta_json_keys_are_miles_snapshot_keys():
    keys = facts()["snapshot_keys"]
    assert len(keys) == 23 and keys[:2] == ["wandb_group", "wandb_team"] and "actor_num_gpus_per_node" in keys


@pytest.mark.skipif(not (MIRROR / "HEAD").exists() and not (MIRROR / ".git").exists(),
                    reason="the Miles snapshot is not on this machine")
def test_regenerating_from_the_pinned_commit_gives_the_committed_data(tmp_path):
    source = tmp_path / "miles"
    source.mkdir()
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", PINNED, "miles"], capture_output=True, check=True)
    subprocess.run(["tar", "x", "-C", str(source)], input=archive.stdout, check=True)
    (source / "COMMIT").write_text(PINNED + "\n")
    out = tmp_path / "miles_args.json"
    # A fresh interpreter: the extraction replaces outside modules by stand-ins for its own process.
    done = subprocess.run([sys.executable, "-m", "build_tools.ingest.miles_facts.extract", str(source), str(out)],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == DATA.read_text(encoding="utf-8")


def test_the_extraction_refuses_a_wrong_call(capsys):
    assert extract.main([]) == 2
    assert "usage:" in capsys.readouterr().err


def test_without_a_checkout_the_copy_in_the_repository_is_read(tmp_path):
    """`make miles-facts` with no MILES reads build_tools/miles_code/upstream/: the same data, its commit named."""
    out = tmp_path / "miles_args.json"
    done = subprocess.run([sys.executable, "-m", "build_tools.ingest.miles_facts.extract", "", str(out)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == DATA.read_text(encoding="utf-8")
