"""The memo of run hashes trusts file metadata only as git's index does, and an edition's build trusts no memo.

A file rewritten with its size kept and its modification time put back (`touch -r`, `cp -p`, `tar x`,
`rsync -t`) must be read again: its ctime moved, and the memo keys on it (with inode and device)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import blake3
import pytest

from build_tools.build import check
from build_tools.cli import main
from build_tools.core import _files
from build_tools.core._exceptions import EXIT_BAD_INPUT, EXIT_CLAIM_FAILED, ClaimsFailed
from build_tools.core._files import hashing_reads, open_input, scan_tree
from build_tools.core._settings import Settings
from build_tools.ingest import load
from build_tools.store import fingerprint, run_hash
from build_tools.summarise import summary
from tests.conftest import copy_project

EVENTS = Path("runs/no-watchdog/lab/events.jsonl")
# Fig 1.3: the no-watchdog job left running 63 minutes; its end 400 s earlier makes it 69.9 (the claim fails).
KEPT, EARLIER = '"t0":1792032068.3,', '"t0":1792031668.3,'


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


def test_the_stats_of_a_listing_are_its_value_and_every_field_counts(project: Path) -> None:
    """Equal listings give equal stats, however their strings were made (listed again, handed to a worker through
    a pipe); a listing that differs in any field, in order or in length gives other stats."""
    import pickle

    run = project / "runs" / "no-watchdog"
    files = scan_tree(run, run.resolve())[1]
    stats = run_hash.stats_of(files)
    remade = [("".join(list(name)), *rest) for name, *rest in files]
    assert run_hash.stats_of(scan_tree(run, run.resolve())[1]) == stats == run_hash.stats_of(remade)  # type: ignore
    assert run_hash.stats_of(pickle.loads(pickle.dumps(files))) == stats
    for index in range(6):
        changed = [*files[:1], tuple(field if at != index else (field + "x" if index == 0 else field + 1)
                                     for at, field in enumerate(files[1])), *files[2:]]
        assert run_hash.stats_of(changed) != stats  # type: ignore[arg-type]
    assert run_hash.stats_of(files[::-1]) != stats and run_hash.stats_of(files[:-1]) != stats


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


# --- the input hash from the bytes the loader reads ------------------------------------------------

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
EXAMPLE_RUNS = sorted(path for path in (Path(__file__).resolve().parents[2] / "runs").iterdir() if path.is_dir())
SAMPLE_RUNS = sorted(run for kind in ("hostile", "load") for scenario in (SAMPLES / kind).iterdir()
                     if scenario.is_dir() for run in scenario.iterdir() if run.is_dir())


def _hashed_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files input_hash reads itself (those the loader did not read whole)."""
    reads: list[str] = []
    real = fingerprint._content_digest
    monkeypatch.setattr(fingerprint, "_content_digest", lambda path, size: reads.append(str(path)) or real(path, size))
    return reads


@pytest.mark.parametrize("run", EXAMPLE_RUNS + SAMPLE_RUNS, ids=lambda run: run.relative_to(run.parents[2]).as_posix())
def test_the_hash_of_the_bytes_the_loader_read_is_the_plain_input_hash(run: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every example run and every hostile sample (a broken gzip, a file not UTF-8, a link-free tree): the
    same key as hashing every file afresh, and no file the loader read whole is read again for it."""
    listing = scan_tree(run, run.resolve())[1]
    monkeypatch.setattr(fingerprint, "_digests", {})
    reads = _hashed_reads(monkeypatch)
    with hashing_reads() as seen:
        load.load_run(run, [])
    from_loader = run_hash.input_hash(run, None, listing, seen=seen)
    assert seen and str(run / "run.yaml") in seen
    assert not set(reads) & {path for path, found in seen.items() if found.identity is not None}
    monkeypatch.setattr(fingerprint, "_digests", {})
    assert run_hash.input_hash(run, None, listing) == from_loader


def test_a_gzip_stream_is_hashed_as_its_compressed_bytes(tmp_path: Path) -> None:
    """The key names the file as it is on disk (the same key as before the loader hashed), not what it unpacks to."""
    run = SAMPLES / "load" / "good" / "tiny-run"
    with hashing_reads() as seen:
        assert load.load_run(run, []).run_id == "tiny-run"
    path = run / "dashboard" / "metrics.jsonl.gz"
    assert seen[str(path)].digest == blake3.blake3(path.read_bytes()).digest()
    assert seen[str(path)].identity == scan_tree(path, path)[1][0][1:]


def test_a_file_read_in_part_is_not_taken_as_seen(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"{}\n" * 1000)
    with hashing_reads() as seen, open_input(path) as handle:
        handle.read(10)
    assert seen == {}


def _tiny_run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "tiny-run"
    shutil.copytree(SAMPLES / "load" / "good" / "tiny-run", run)
    return run


def _read_job(run: Path) -> summary.Job:
    return summary.Job(run, False, scan_tree(run, run.resolve())[1], None, None)


def test_a_run_read_as_listed_is_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_hash, "_now", lambda: time.time_ns() + 10 * fingerprint.SETTLED_NS)  # all settled
    run = _tiny_run(tmp_path)
    job = _read_job(run)
    result, problems, hashed = summary._read_run(job)
    assert problems == [] and hashed is not None
    assert hashed["stats"] == run_hash.stats_of(job.listing or [])
    monkeypatch.setattr(fingerprint, "_digests", {})
    assert hashed["digest"] == run_hash.input_hash(run)


def test_a_file_rewritten_between_listing_and_reading_is_not_remembered(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The run is listed, then its run.yaml rewritten just before the loader reads it: the digest is of the
    bytes read (what its summary is made from), and the memo gets no entry pairing the old stats with them."""
    monkeypatch.setattr(run_hash, "_now", lambda: time.time_ns() + 10 * fingerprint.SETTLED_NS)  # all settled
    run = _tiny_run(tmp_path)
    job = _read_job(run)
    listed_digest = run_hash.input_hash(run, None, job.listing)
    real_load = summary.load_and_validate

    def rewritten_then_loaded(path: Path, metrics: tuple[str, ...] = ()) -> object:
        run_yaml = path / "run.yaml"
        run_yaml.write_text(run_yaml.read_text().replace("A tiny run", "A small run"))
        return real_load(path, metrics)

    monkeypatch.setattr(summary, "load_and_validate", rewritten_then_loaded)
    result, problems, hashed = summary._read_run(job)
    assert problems == [] and hashed is not None
    assert "stats" not in hashed
    monkeypatch.setattr(fingerprint, "_digests", {})
    assert hashed["digest"] == run_hash.input_hash(run) != listed_digest


def test_a_file_changed_while_read_is_not_seen_as_its_stats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written to between the loader's opening it and its last byte: its digest is kept (it names the bytes read)
    but no identity, so no memo pairs its stats with them."""
    monkeypatch.setattr(run_hash, "_now", lambda: time.time_ns() + 10 * fingerprint.SETTLED_NS)
    run = _tiny_run(tmp_path)
    listing = scan_tree(run, run.resolve())[1]
    path = run / "lab" / "events.jsonl"
    real_read = _files._Input.read

    def read_then_touched(self: _files._Input, size: int = -1, /) -> bytes:
        data = real_read(self, size)
        if self.path == path:
            os.utime(path, ns=(1, 1))
        return data

    monkeypatch.setattr(_files._Input, "read", read_then_touched)
    with hashing_reads() as seen:
        load.load_run(run, [])
    assert seen[str(path)].identity is None
    memo: dict = {}
    run_hash.input_hash(run, memo, listing, key="run", seen=seen)
    assert memo == {}


def test_an_edition_hashes_every_byte_of_every_run_it_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No cache and no memo (an edition's summarise_runs): each file of the run is hashed whole, by the loader as
    it reads it or, for the files the loader does not read whole, read for the hash; the key is the plain one."""
    run = _tiny_run(tmp_path)
    (run / "notes.txt").write_text("a file no reader opens\n")
    monkeypatch.setattr(fingerprint, "_digests", {})
    hashed_whole: list[str] = []
    real_note = _files._note_seen  # a file read whole, by read_small or through open_input

    def note(name: str, opened: os.stat_result, read: os.stat_result, digest: bytes) -> None:
        hashed_whole.append(name)
        real_note(name, opened, read, digest)

    monkeypatch.setattr(_files, "_note_seen", note)
    reads = _hashed_reads(monkeypatch)
    validated: dict = {}
    summary.summarise_runs(run.parent, None, wanted=summary.Wanted(), validated=validated)
    assert list(validated) == ["tiny-run"]
    files = {str(path) for path in run.rglob("*") if path.is_file()}
    read_here = {path for path in [*hashed_whole, *reads] if path.startswith(f"{run}/")}
    assert read_here == files and str(run / "notes.txt") in reads
