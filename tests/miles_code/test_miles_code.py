"""build_tools/miles_code: Miles' own code, copied verbatim at the pinned commit, run in a process of its own."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.miles_code import MANIFEST, UPSTREAM, judge_launches, manifest, miles_commit, refresh, sources
from tests.conftest import ROOT

MIRROR = Path("/work/.mirror/radixark+miles/repo")
PINNED = "31f1ca961a94cb860cec3b2dea34ec332bfa8f76"
has_mirror = pytest.mark.skipif(not (MIRROR / "HEAD").exists(), reason="the Miles snapshot is not on this machine")


def _without(words: list[str], flag: str) -> list[str]:
    at = words.index(flag)
    return words[:at] + words[at + 2:]


def test_the_copy_names_its_commit_and_every_file_matches_its_hash():
    assert miles_commit() == PINNED
    data = manifest()
    for part in ("miles", "sglang", "sglang_router"):
        for name, digest in data[part]["files"].items():
            assert hashlib.sha256((UPSTREAM / name).read_bytes()).hexdigest() == digest, name
    listed = {name for part in ("miles", "sglang", "sglang_router") for name in data[part]["files"]}
    on_disk = {path.relative_to(UPSTREAM).as_posix() for path in UPSTREAM.rglob("*.py")}
    assert on_disk == listed
    assert {name.replace(".", "/") + ".py" for name in sources.MILES_ENTRIES} <= set(data["miles"]["files"])
    assert (UPSTREAM / "LICENSE").read_text(encoding="utf-8").lstrip().startswith("Apache License")
    assert "copied unmodified" in (UPSTREAM / "README.md").read_text(encoding="utf-8")


@has_mirror
def test_every_miles_file_is_the_pinned_commit_s_own():
    for name in manifest()["miles"]["files"]:
        original = subprocess.run(["git", "-C", str(MIRROR), "show", f"{PINNED}:{name}"], capture_output=True,
                                  check=True).stdout
        assert (UPSTREAM / name).read_bytes() == original, name


@has_mirror
def test_make_miles_code_copies_the_same_files_again(tmp_path, monkeypatch):
    checkout = tmp_path / "miles"
    checkout.mkdir()
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", PINNED], capture_output=True, check=True)
    subprocess.run(["tar", "x", "-C", str(checkout)], input=archive.stdout, check=True)
    (checkout / "COMMIT").write_text(PINNED + "\n")
    before = {p.relative_to(UPSTREAM).as_posix(): p.read_bytes() for p in UPSTREAM.rglob("*") if p.is_file()}
    # Into a copy of upstream/, so that a failure leaves the repository's own alone.
    copy = tmp_path / "miles_code" / "upstream"
    copy.parent.mkdir()
    subprocess.run(["cp", "-r", str(UPSTREAM), str(copy)], check=True)
    monkeypatch.setattr(refresh, "UPSTREAM", copy)
    monkeypatch.setattr(refresh, "MANIFEST", copy / MANIFEST.name)
    refresh.refresh(checkout, None, None)
    after = {p.relative_to(copy).as_posix(): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert after == before


def test_make_miles_code_without_a_checkout_says_what_it_needs():
    done = subprocess.run([sys.executable, "-m", "build_tools.miles_code.refresh"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "MILES": ""}, check=False)
    assert done.returncode == 2
    assert done.stderr == "ERROR make miles-code needs MILES=/path/to/a/miles/checkout (a folder holding miles/)\n"


def test_miles_starts_a_whole_launch_and_stops_one_without_batch_accounting():
    whole = refresh.SAMPLE_LAUNCH
    verdicts = judge_launches([whole, _without(whole, "--num-steps-per-rollout")])
    # rollout_batch_size 4 x n_samples_per_prompt 2 // num_steps_per_rollout 1; x num_rollout 2 // 8
    assert verdicts[0] == {"stopped": False, "global_batch_size": 8, "train_iters": 2}
    # The finding: the FSDP actor's LR scheduler divides by a global batch size that was never set.
    assert verdicts[1] == {"stopped": True, "where": "miles/backends/fsdp_utils/lr_scheduler.py:170",
                           "message": "TypeError: unsupported operand type(s) for //: 'int' and 'NoneType'"}


def test_miles_own_validators_and_parser_speak():
    whole = refresh.SAMPLE_LAUNCH
    verdicts = judge_launches([[*whole, "--global-batch-size", "3"], [*whole, "--no-such-flag"],
                               [*whole, "--sglang-mem-fraction-static", "lots"],
                               _without(whole, "--dump-details"), [*whole, "--lr-warmup-iters", "5"]])
    assert verdicts[0]["where"] == "miles/utils/arguments.py:3434"
    assert verdicts[0]["message"] == ("AssertionError: global_batch_size 3 is not equal to rollout_batch_size 4 * "
                                      "n_samples_per_prompt 2 // num_steps_per_rollout 1")
    assert verdicts[1]["message"] == "SystemExit(2): unrecognized arguments: --no-such-flag"
    # SGLang's own flag definitions (its ServerArgs, copied from its wheel) type the --sglang-* flags.
    assert verdicts[2]["message"] == "SystemExit(2): argument --sglang-mem-fraction-static: invalid float value: 'lots'"
    assert verdicts[3]["where"].startswith("miles/dashboard/args.py:")
    assert verdicts[3]["message"].startswith("AssertionError: --use-miles-dashboard writes telemetry under")
    # FSDPLRScheduler's own assertion (lr_warmup_steps < lr_decay_steps): 5 warm-up steps of 2.
    assert verdicts[4] == {"stopped": True, "where": "miles/backends/fsdp_utils/lr_scheduler.py:65",
                           "message": "AssertionError"}


def test_the_build_s_process_imports_neither_miles_nor_a_stand_in():
    judge_launches([refresh.SAMPLE_LAUNCH])
    assert not [name for name in sys.modules if name.split(".")[0] in ("miles", "sglang", "sglang_router", "torch")]
    assert not [finder for finder in sys.meta_path if type(finder).__name__ == "InertFinder"]
