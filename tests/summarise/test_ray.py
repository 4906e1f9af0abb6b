"""`manual check --ray`: the runs summarised as Ray tasks give the local path's report, byte for byte."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from build_tools.benchmarks.bench_scale import _date_after, link_runs
from build_tools.checking import margins
from build_tools.cli import main
from build_tools.core._exceptions import RayError, RunDataError
from build_tools.core._types import ValidatedRun
from build_tools.store import summary_wire
from build_tools.summarise import _ray
from build_tools.summarise.summary import Job, Written, summarise_runs, summarise_serially
from examples._scaled import ends_by, write_scaled
from tests.conftest import ROOT, copy_project, manual_blocks

# What `--ray auto` sets before the command imports Ray (Ray reads it once, at import): loopback only.
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")


def test_a_summary_crosses_the_wire_unchanged(example_summaries: dict) -> None:
    for run_id, summary in example_summaries.items():
        back = summary_wire.decode(summary_wire.encode(summary))
        assert back.run_id == run_id and back.config == summary.config and back.warnings == summary.warnings
        assert json.dumps(back.facts, sort_keys=True) == json.dumps(summary.facts, sort_keys=True)
        assert back.facts["gpus_used"] == summary.facts["gpus_used"]  # tuples again, as the summary has them
        for name in ("steps", "phases", "events"):
            pd.testing.assert_frame_equal(getattr(back, name), getattr(summary, name), check_exact=True)
        assert list(back.series) == list(summary.series)
        for name, frame in summary.series.items():
            pd.testing.assert_frame_equal(back.series[name], frame, check_exact=True)


@pytest.fixture()
def short_tmp(monkeypatch: pytest.MonkeyPatch) -> Path:
    """A short temporary folder (Ray's socket paths under it must fit in 107 bytes), left empty by Ray. It is also
    Ray's default folder's parent ($TMPDIR/ray), which does not exist: the private instance neither needs nor
    leaves it (ray.init with _temp_dir looks for an address only in that folder)."""
    folder = Path(tempfile.mkdtemp(prefix="r", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.delenv("RAY_TMPDIR", raising=False)
    yield folder
    assert list(folder.iterdir()) == []  # the local Ray instance's files were removed
    folder.rmdir()


def _check(root: Path, args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) \
        -> tuple[int, str, str]:
    monkeypatch.chdir(root)
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_on_a_local_ray_gives_the_local_claims_byte_for_byte(
        tmp_path: Path, short_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    local, on_ray = copy_project(tmp_path / "local"), copy_project(tmp_path / "ray")
    by_address = copy_project(tmp_path / "address")
    code, local_out, _ = _check(local, [], monkeypatch, capsys)
    assert code == 0
    try:  # the private instance `--ray auto` starts: the pool's CPUs, no dashboard, a 100 MB object store, loopback
        with _ray._connected("auto"):
            assert ray.cluster_resources()["CPU"] == os.cpu_count()
            assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")
            code, ray_out, err = _check(on_ray, ["--ray", "auto"], monkeypatch, capsys)  # uses that instance
            assert code == 0, err
            # Another process, a driver connecting by the head's address (token authentication, as Ray's own).
            address = ray.get_runtime_context().gcs_address
            env = {**os.environ, "RAY_AUTH_MODE": "token"}
            other = subprocess.run([sys.executable, "-m", "build_tools", "check", "--ray", address], cwd=by_address,
                                   env=env, capture_output=True, text=True, timeout=300, check=False)
            assert other.returncode == 0, other.stderr
            # A broken run: the same problems, named the same way, as the local path gives.
            metrics = on_ray / "runs" / "baseline-seed1" / "dashboard" / "metrics.jsonl"
            metrics.write_text(metrics.read_text(encoding="utf-8") + '{"ts": 1, "step_key": "x"\n', encoding="utf-8")
            with pytest.raises(RunDataError) as on_workers:
                summarise_runs(Path("runs"), summariser=_ray.ray_summariser("auto"))
    except RayError as error:
        if "could not start a local Ray instance" in str(error):
            pytest.skip(f"Ray cannot start here: {error}")
        raise
    assert not ray.is_initialized()
    assert (on_ray / "build" / "claims.json").read_bytes() == (local / "build" / "claims.json").read_bytes()
    assert (on_ray / "build" / "claims.junit.xml").read_bytes() == (local / "build" / "claims.junit.xml").read_bytes()
    runs = [path for path in (local / "runs").iterdir() if path.is_dir()]
    closest = margins.closest_lines(margins.read_report(local / "build" / "claims.json"))  # the section that ends it
    assert closest and ray_out.endswith("\n".join(closest) + "\n")
    assert ray_out == local_out and len(ray_out.splitlines()) == len(runs) + len(manual_blocks(local)) + len(closest)
    assert (by_address / "build" / "claims.json").read_bytes() == (local / "build" / "claims.json").read_bytes()
    assert other.stdout == local_out
    with pytest.raises(RunDataError) as locally:
        summarise_runs(Path("runs"), summariser=summarise_serially)
    assert str(on_workers.value) == str(locally.value)
    assert "  runs/baseline-seed1/dashboard/metrics.jsonl:" in str(locally.value)


def _project_with_scaled_runs(target: Path, scaled: Path) -> Path:
    """A copy of the project whose runs/ holds the example runs and the scaled ones (hard links), dated after them."""
    root = copy_project(target)
    link_runs(scaled, root / "runs")
    _date_after(root / "edition.yml", ends_by(3, 20))
    return root


def _cache_files(root: Path) -> dict[str, bytes]:
    """The summary cache's files by path, but the memo (its keys are the runs' absolute paths, its stats inodes)."""
    cache = root / "build" / "cache" / "summaries"
    return {str(path.relative_to(cache)): path.read_bytes() for path in sorted(cache.rglob("*"))
            if path.is_file() and path.name != "input-hashes.json"}


def test_a_three_node_cluster_gives_the_pools_results_byte_for_byte(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A head with no CPU and two nodes of one CPU each (ray.cluster_utils.Cluster, all on this machine): the check,
    the check of every run (ALL=1), and those two checks with summaries sent back as bytes rather than written by the
    workers, each give what the local process pool gives, file for file in the summary cache."""
    from ray.cluster_utils import Cluster

    write_scaled(tmp_path / "scaled", 3, 20, workers=1)
    pool, shared, wire = (_project_with_scaled_runs(tmp_path / name, tmp_path / "scaled")
                          for name in ("pool", "shared", "wire"))
    outs = [_check(pool, args, monkeypatch, capsys) for args in ([], ["--all"])]
    assert [code for code, _, _ in outs] == [0, 0]
    temp_dir = tempfile.mkdtemp(prefix="rc", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    # Cluster writes the head's address into Ray's default folder whatever temp_dir says (cluster_utils calls
    # write_ray_address without it: $RAY_TMPDIR/ray, else $TMPDIR/ray, else /tmp/ray, ray/_common/utils.py
    # get_default_ray_temp_dir), a folder nothing creates: pointed into this test's own folder, and made.
    monkeypatch.setenv("RAY_TMPDIR", temp_dir)
    from ray._common.utils import get_ray_address_file

    address_file = Path(get_ray_address_file(None))
    address_file.parent.mkdir()
    node_args = {"object_store_memory": 80 * 1024 * 1024, "temp_dir": temp_dir, "node_ip_address": "127.0.0.1"}
    # The Cluster writes its address to <the user's temporary folder>/ray/, which only an earlier Ray start made:
    # with a fresh TMPDIR, and this test alone on its worker, the folder is not there yet.
    Path(tempfile.gettempdir(), "ray").mkdir(exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args={**node_args, "num_cpus": 0, "include_dashboard": False})
    try:
        assert address_file.read_text() == cluster.address  # in this test's folder, not in a leftover one
        workers = {cluster.add_node(num_cpus=1, **node_args).node_id for _ in range(2)}
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        ray_outs = [_check(shared, [*args, "--ray", cluster.address], monkeypatch, capsys) for args in ([], ["--all"])]
        # The same two checks again, every summary sent back as summary_wire bytes and written by the driver.
        summariser = _ray.RaySummariser(cluster.address, workers_write=False)
        monkeypatch.setattr(_ray, "ray_summariser", lambda address: summariser)
        wire_outs = [_check(wire, [*args, "--ray", cluster.address], monkeypatch, capsys) for args in ([], ["--all"])]
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert [(code, out) for code, out, _ in ray_outs] == [(0, out) for _, out, _ in outs], [e for *_, e in ray_outs]
    assert [(code, out) for code, out, _ in wire_outs] == [(0, out) for _, out, _ in outs]
    assert summariser.nodes == workers  # both nodes read runs, the head none
    assert (shared / "build" / "claims.json").read_bytes() == (pool / "build" / "claims.json").read_bytes()
    pool_files, wire_files = _cache_files(pool), _cache_files(wire)
    assert _cache_files(shared) == pool_files  # the probe file is gone; every entry as the pool wrote it
    monkeypatch.chdir(wire)  # every summary now from the cache the driver wrote
    summaries = summarise_runs(Path("runs"), wire / "build" / "cache" / "summaries")
    assert sorted(summaries) == sorted(path.name for path in (pool / "runs").iterdir() if path.is_dir())
    assert wire_files == pool_files
    pooled = summarise_runs(pool / "runs", pool / "build" / "cache" / "summaries")
    for run_id in ("baseline-seed1", "scale-0002"):
        assert summary_wire.encode(summaries[run_id]) == summary_wire.encode(pooled[run_id])


def test_an_unreachable_cluster_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_project(tmp_path / "manual")
    code, out, err = _check(root, ["--ray", "127.0.0.1:1"], monkeypatch, capsys)
    assert (code, out) == (2, "")
    assert err == ("ERROR --ray: could not connect to Ray at 127.0.0.1:1 (Connection refused)\n"
                   "hint: is the cluster's head running (`ray start --head`) and is this its address?\n")
    code, out, err = _check(root, ["--ray", "head-node"], monkeypatch, capsys)
    assert (code, out) == (2, "")
    assert err == "ERROR --ray: 'head-node' is not an address (expected HOST:PORT, ray://HOST:PORT, auto or local)\n"
    assert not ray.is_initialized()


def _fake_ray(get: object) -> SimpleNamespace:
    """Ray as _ray._gather calls it, with one CPU, each task's result given by `get`."""
    return SimpleNamespace(remote=lambda f: SimpleNamespace(remote=lambda *a: "ref"), get=get,
                           wait=lambda refs, num_returns: (refs[:num_returns], refs[num_returns:]),
                           cluster_resources=lambda: {"CPU": 1.0}, cancel=lambda ref: None,
                           exceptions=ray.exceptions)


def _jobs(*run_ids: str) -> list[Job]:
    return [Job(ROOT / "runs" / run_id, True, None, "0" * 64, None) for run_id in run_ids]


def test_the_driver_holds_a_few_tasks_and_hands_the_results_on_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks of several runs, at most two a CPU running, at most a few finished ones waiting for an earlier one; the
    reads in the order of the runs, whatever order the tasks end in."""
    monkeypatch.chdir(ROOT)
    jobs = [Job(ROOT / "runs" / f"run-{index:03d}", False, None, "0" * 64, None) for index in range(200)]
    submitted, fetched, most = [], [], {"running": 0, "held": 0}

    def remote(chunk: list[Job], *args: object) -> int:
        submitted.append(chunk)
        return len(submitted) - 1

    def wait(refs: list[int], num_returns: int) -> tuple[list[int], list[int]]:
        most["running"] = max(most["running"], len(refs))
        last = max(refs)  # the last one submitted ends first: every earlier one is still running
        return [last], [ref for ref in refs if ref != last]

    def get(ref: int) -> _ray._Done:
        fetched.append(ref)
        most["held"] = max(most["held"], len(submitted) - len(fetched))
        reads = [(ValidatedRun(job.path.name, {}, 0.0, 1.0), [], None) for job in submitted[ref]]
        return _ray._Done(_ray.code_digest(), "node", reads)

    fake = SimpleNamespace(remote=lambda f: SimpleNamespace(remote=remote), get=get, wait=wait,
                           cluster_resources=lambda: {"CPU": 2.0}, cancel=lambda ref: None, exceptions=ray.exceptions)
    nodes: set[str] = set()
    reads = list(_ray._gather(fake, jobs, None, nodes))
    assert [result.run_id for result, _, _ in reads] == [job.path.name for job in jobs]
    assert [len(chunk) for chunk in submitted] == [8] * 25  # 200 runs in tasks of 8 (CHUNK_MOST)
    assert fetched == list(range(25)) and nodes == {"node"}
    assert most["running"] <= 2 * 2 and most["held"] <= 2 * 2 * 3  # two a CPU in flight, twice that waiting


def test_a_lost_worker_is_one_line_naming_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    def lost(ref: object) -> None:
        raise ray.exceptions.WorkerCrashedError()

    with pytest.raises(RayError) as error:
        list(_ray._gather(_fake_ray(lost), _jobs("baseline-seed1"), None, set()))
    assert str(error.value).startswith("runs/baseline-seed1: the Ray worker summarising this run was lost "
                                       "(WorkerCrashedError: ")
    assert "\n" not in str(error.value)


def test_a_worker_without_build_tools_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    missing = ModuleNotFoundError("No module named 'build_tools'")

    def fails(ref: object) -> None:
        raise ray.exceptions.RayTaskError("_read_task", "Traceback ...", missing).as_instanceof_cause()

    with pytest.raises(RayError) as error:
        list(_ray._gather(_fake_ray(fails), _jobs("baseline-seed1"), None, set()))
    assert str(error.value) == ("runs/baseline-seed1: the Ray worker cannot import build_tools "
                                "(No module named 'build_tools')")


def test_a_worker_with_other_code_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    other = _fake_ray(lambda ref: _ray._Done("0" * 64, "node", []))
    with pytest.raises(RayError) as error:
        list(_ray._gather(other, _jobs("baseline-seed1", "baseline-seed2"), None, set()))
    assert str(error.value) == (f"runs/baseline-seed1: the Ray worker summarising this run has another version "
                                f"of build_tools or of its libraries (code and versions sha256 000000000000, "
                                f"here {_ray.code_digest()[:12]})")


def test_a_worker_with_other_code_reads_nothing(tmp_path: Path) -> None:
    """The digest is compared on the worker, before it writes a summary under keys our code would trust."""
    (tmp_path / "probe").touch()
    done = _ray._read_task([_jobs("baseline-seed1")[0]._replace(cache_dir=tmp_path)], str(ROOT),
                           str(tmp_path / "probe"), "0" * 64)
    assert (done.digest, done.reads) == (_ray.code_digest(), [])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["probe"]


def test_a_worker_writes_to_the_cache_it_sees_and_sends_bytes_otherwise(tmp_path: Path) -> None:
    """A worker that finds the driver's probe file writes the summary itself and sends back only that it did; one
    that does not (another machine, no shared storage) sends the summary as summary_wire bytes, written nowhere."""
    job = _jobs("baseline-seed1")[0]._replace(cache_dir=tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    with _ray._probe_file(tmp_path / "cache") as probe:
        assert probe is not None
        sees = _ray._read_task([job], str(ROOT), probe, _ray.code_digest())
        blind = _ray._read_task([job], str(ROOT), str(tmp_path / "elsewhere" / Path(probe).name), _ray.code_digest())
    assert [type(result) for result, _, _ in sees.reads] == [Written]
    assert [path.name for path in (tmp_path / "cache").iterdir()] == [f"baseline-seed1-{'0' * 20}"]
    (result, problems, hashed), = blind.reads
    assert isinstance(result, tuple) and (problems, hashed) == ([], None)
    back = summary_wire.decode(result)
    assert summary_wire.encode(back) == result and back.run_id == "baseline-seed1"


def test_a_worker_that_cannot_see_a_run_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    done = _ray._read_task(_jobs("baseline-seed1", "no-such-run"), str(ROOT), None, _ray.code_digest())
    assert done.unseen == str(ROOT / "runs" / "no-such-run")
    with pytest.raises(RayError) as error:
        list(_ray._gather(_fake_ray(lambda ref: done._replace(node="f" * 56)), _jobs("baseline-seed1"), None, set()))
    assert str(error.value) == "runs/no-such-run: the Ray worker on node ffffffffffff cannot see this run folder"


def test_nothing_to_summarise_needs_no_ray() -> None:
    assert list(_ray.ray_summariser("127.0.0.1:1")([])) == []


def _not_started(count: int, size: int) -> str:
    """The line `--ray auto` writes when the local pool reads the runs, as a user sees it."""
    return (f"Ray not started: these {count} runs ({size / 1e6:,.1f} MB) take the local pool under a second to read, "
            "too little for Ray's start-up (about 6 s here) to pay; the local pool reads them (--ray local, or make "
            "check RAY=local, starts Ray whatever the runs)")


def _run_folders_bytes(root: Path) -> tuple[int, int]:
    """How many run folders runs/ holds, and the bytes of their files."""
    runs = [path for path in (root / "runs").iterdir() if path.is_dir()]
    return len(runs), sum(file.stat().st_size for run in runs for file in run.rglob("*") if file.is_file())


def test_auto_reads_few_runs_with_the_pool_and_local_starts_ray_with_the_same_results(
        tmp_path: Path, short_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The 20 example runs are too few for Ray's start-up to pay: `auto` reads them with the local pool and says so
    in one line; `local` starts Ray for them all the same. Both give the pool's report, claims and cache, byte for
    byte; a warm check with `auto` has nothing to read, starts nothing and says nothing of Ray."""
    pool, auto, local = (copy_project(tmp_path / name) for name in ("pool", "auto", "local"))
    pool_code, pool_out, _ = _check(pool, [], monkeypatch, capsys)
    assert pool_code == 0
    real_connected = _ray._connected

    def not_started(address: str) -> object:
        raise AssertionError(f"Ray was started for {address}")

    monkeypatch.setattr(_ray, "_connected", not_started)
    for warm in (False, True):  # every run from the cache the second time
        auto_code, auto_out, auto_err = _check(auto, ["--ray", "auto"], monkeypatch, capsys)
        assert (auto_code, auto_out) == (0, pool_out)
        if not warm:
            assert _not_started(*_run_folders_bytes(pool)) in auto_err.splitlines()
            assert _cache_files(auto) == _cache_files(pool)
    assert "Ray not started" not in auto_err  # the warm check: nothing to read, nothing said
    assert not ray.is_initialized()
    monkeypatch.setattr(_ray, "_connected", real_connected)
    summariser = _ray.RaySummariser("local")
    monkeypatch.setattr(_ray, "ray_summariser", lambda address: summariser)
    try:
        local_code, local_out, local_err = _check(local, ["--ray", "local"], monkeypatch, capsys)
    except RayError as error:
        if "could not start a local Ray instance" in str(error):
            pytest.skip(f"Ray cannot start here: {error}")
        raise
    assert (local_code, local_out) == (0, pool_out) and "Ray not started" not in local_err
    assert len(summariser.nodes) == 1  # read by the private instance's one node
    assert not ray.is_initialized()
    for root in (auto, local):
        assert (root / "build" / "claims.json").read_bytes() == (pool / "build" / "claims.json").read_bytes()
        assert _cache_files(root) == _cache_files(pool)


def _big_jobs(size: int, summarise: bool, count: int = 2) -> list[Job]:
    """Example runs as the parent lists them, but for one file of `size` bytes each (what `auto` weighs)."""
    return [job._replace(summarise=summarise, listing=[("dashboard/metrics.jsonl", size, 0, 0, 0, 0)])
            for job in _jobs(*[f"baseline-seed{seed}" for seed in range(1, count + 1)])]


def test_auto_starts_ray_when_the_pool_would_read_long_enough_for_its_start_up_to_pay(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's start-up (RAY_START_SECONDS) at most RAY_SHARE of the pool's reading: the bytes from which that holds,
    at the pool's speed for summarising, or for validating (faster, so more bytes), on the CPUs it was measured on;
    a pool of twice the CPUs reads twice the bytes in that time."""
    monkeypatch.setattr(os, "cpu_count", lambda: _ray.MEASURED_ON_CPUS * 2)
    assert not _ray.worth_starting(_big_jobs(int(_ray.RAY_START_SECONDS / _ray.RAY_SHARE
                                                 * _ray.POOL_SUMMARISES_BYTES_PER_SECOND / 2) + 1, True))
    monkeypatch.setattr(os, "cpu_count", lambda: _ray.MEASURED_ON_CPUS)
    least = _ray.RAY_START_SECONDS / _ray.RAY_SHARE  # seconds of the pool's reading
    summarised = int(least * _ray.POOL_SUMMARISES_BYTES_PER_SECOND / 2) + 1  # two runs of this size
    validated = int(least * _ray.POOL_VALIDATES_BYTES_PER_SECOND / 2) + 1
    assert _ray.worth_starting(_big_jobs(summarised, True)) and not _ray.worth_starting(_big_jobs(summarised - 2, True))
    assert _ray.worth_starting(_big_jobs(validated, False))
    assert not _ray.worth_starting(_big_jobs(summarised, False))
    assert _ray.not_started_line(_big_jobs(500_000_000, True, count=1)) == (
        "Ray not started: this run (500.0 MB) takes the local pool about 11 s to read, too little for Ray's start-up "
        "(about 6 s here) to pay; the local pool reads it (--ray local, or make check RAY=local, starts Ray "
        "whatever the runs)")


def test_auto_reads_many_runs_on_ray_and_an_address_or_local_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which path the summariser takes: Ray (here a stand-in that records the address it was asked for) for `auto`
    with enough to read, for `local` and for a cluster's address with little; the local pool otherwise, with the
    results of the plain path."""
    asked: list[str] = []

    class Asked(Exception):
        pass

    @contextlib.contextmanager
    def connected(address: str) -> Iterator[None]:
        asked.append(address)
        raise Asked()
        yield

    monkeypatch.setattr(_ray, "_connected", connected)
    monkeypatch.setattr(os, "cpu_count", lambda: _ray.MEASURED_ON_CPUS)
    monkeypatch.chdir(ROOT)
    many = _big_jobs(int(_ray.RAY_START_SECONDS / _ray.RAY_SHARE * _ray.POOL_SUMMARISES_BYTES_PER_SECOND), True)
    few = _jobs("baseline-seed1", "baseline-seed2")
    for address, jobs in (("auto", many), ("local", few), ("127.0.0.1:6379", few)):
        with pytest.raises(Asked):
            list(_ray.RaySummariser(address)(jobs))
    assert asked == ["auto", "local", "127.0.0.1:6379"]
    reads = list(_ray.RaySummariser("auto")(few))
    assert asked == ["auto", "local", "127.0.0.1:6379"]  # not asked again
    plain = summarise_serially(few)
    assert [(summary_wire.encode(result), problems) for result, problems, _ in reads] == \
        [(summary_wire.encode(result), problems) for result, problems, _ in plain]


def test_a_task_parses_one_batch_ahead_and_leaves_its_process_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    """A task has one CPU of its node (and may run in this very process, as here)."""
    from build_tools.ingest import stream_columns

    before = stream_columns.PARSE_AHEAD
    monkeypatch.setattr(_ray, "_read_run", lambda job: (stream_columns.PARSE_AHEAD, [], None))
    assert _ray._read_on_worker(_jobs("baseline-seed1")[0]) == (1, [], None)
    assert stream_columns.PARSE_AHEAD == before
