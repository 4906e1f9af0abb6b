"""The memo of run hashes trusts file metadata only as git's index does, and an edition's build trusts no memo.

A file rewritten with its size kept and its modification time put back (`touch -r`, `cp -p`, `tar x`,
`rsync -t`) must be read again: its ctime moved, and the memo keys on it (with inode and device)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import copy_project

from build_tools._exceptions import EXIT_BAD_INPUT, EXIT_CLAIM_FAILED, ClaimsFailed
from build_tools._files import scan_tree
from build_tools._settings import Settings
from build_tools.build import check
from build_tools.cli import main
from build_tools.store import fingerprint, run_hash

EVENTS = Path("runs/no-watchdog/lab/events.jsonl")
# Fig 1.3: the no-watchdog job left running 63 minutes; its end 400 s earlier makes it 69.9 (the claim fails).
KEPT, EARLIER = '"t0":1790949548.3,', '"t0":1790949148.3,'


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project whose files count as settled at once (the memo remembers them)."""
    monkeypatch.setattr(fingerprint, "SETTLED_NS", -1)
    return copy_project(tmp_path / "manual")


def rewrite_keeping_times(path: Path, old: str, new: str) -> None:
    """Replace old by new (same length) and put the file's times back, as `touch -r` does."""
    assert len(old) == len(new)
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_run_edited_with_its_size_and_mtime_kept_is_checked_again(project: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(project), "check"]) == 0
    assert main(["--root", str(project), "check"]) == 0
    assert "Nothing changed since the last check" in capsys.readouterr().err  # the memo and the report hold
    rewrite_keeping_times(project / EVENTS, KEPT, EARLIER)
    assert main(["--root", str(project), "check"]) == EXIT_CLAIM_FAILED
    out, err = capsys.readouterr()
    assert "Nothing changed" not in err
    assert ('fig 1.3 FAIL "left the job running for 63 minutes": idle 69.9 min, expected 63 +/- 0.5, 6.37 too high'
            in out)


def test_a_run_nothing_reads_is_validated_again_after_such_an_edit(project: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    copy = project / "runs" / "nondet-z"  # a copy of nondet-a that no figure names
    shutil.copytree(project / "runs" / "nondet-a", copy)
    for name in ("run.yaml", "dashboard/meta.json"):
        (copy / name).write_text((copy / name).read_text().replace("nondet-a", "nondet-z"))
    assert main(["--root", str(project), "check"]) == 0
    assert "1 run validated but not summarised" in capsys.readouterr().out
    rewrite_keeping_times(copy / "run.yaml", "commit: 08752a1", "commit: 1a2b3c4")
    assert main(["--root", str(project), "check"]) == EXIT_BAD_INPUT
    assert "nondet-z was made with Miles commit 1a2b3c4" in capsys.readouterr().err


def test_the_memo_keys_on_ctime_inode_and_device(project: Path) -> None:
    run = project / "runs" / "no-watchdog"
    files = scan_tree(run, run.resolve())[1]
    stat = next(entry for entry in files if entry[0] == "lab/events.jsonl")
    info = (run / "lab" / "events.jsonl").stat()
    assert stat == ("lab/events.jsonl", info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev)
    memo: dict = {}
    run_hash.input_hash(run, memo, files, key="run")
    rewrite_keeping_times(run / EVENTS.relative_to("runs/no-watchdog"), KEPT, EARLIER)
    assert run_hash.memo_stale(memo, "run", scan_tree(run, run.resolve())[1])


def test_a_racy_file_is_not_remembered(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose mtime or ctime is within the last two seconds could change again unseen: not remembered."""
    monkeypatch.setattr(fingerprint, "SETTLED_NS", 2_000_000_000)
    run = project / "runs" / "no-watchdog"
    (run / "run.yaml").touch()  # ctime and mtime: now
    memo: dict = {}
    run_hash.input_hash(run, memo, key="run")
    assert memo == {}


def _poison_memo(project: Path) -> None:
    """The memo vouches for the edited run with the old digest under the new file data: what a file system whose
    times cannot tell the edit apart would leave. An everyday check trusts it; an edition's must not."""
    memo_file = project / "build" / "cache" / "summaries" / run_hash.MEMO
    memo = json.loads(memo_file.read_text())
    run = project / "runs" / "no-watchdog"
    (key,) = [key for key in memo if key.endswith("/no-watchdog")]
    rewrite_keeping_times(project / EVENTS, KEPT, EARLIER)
    memo[key]["stats"] = run_hash.stats_of(scan_tree(run, run.resolve())[1])
    memo_file.write_text(json.dumps(memo))


def test_an_editions_build_trusts_no_memo_and_no_cache(project: Path) -> None:
    check(project, Settings(quiet=True))
    _poison_memo(project)
    check(project, Settings(quiet=True))  # everyday: the memo is trusted, the cached summary reused
    with pytest.raises(ClaimsFailed) as failed:
        check(project, Settings(quiet=True, trust_state=False))
    assert any("fig 1.3 FAIL" in line and "idle 69.9 min" in line for line in failed.value.report_lines)
