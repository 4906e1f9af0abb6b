"""Reading runs as Ray tasks: `manual check --ray ADDRESS` (or `--ray auto`, `--ray local`).

The runs the cache does not hold are handed out in tasks of a few runs each (as the local pool hands out
chunks); a task runs the local pool's own function on each (`summary._read_run`: the run hashed when the cache
knows nothing of it, then summarised or only validated), so the results are the local path's, byte for byte.
Every run is read where a worker is; what travels is paths out and little back:

- a worker that sees the driver's cache folder (one machine, or shared storage: it finds a probe file the
  driver wrote there for this command) writes each summary to the cache itself, and sends back only that it
  did, with the run's problems, its validated facts and its memo entry;
- a worker that cannot see it sends the summary back as bytes (`summary_wire`: Parquet tables and a JSON
  body, no pickle of pandas objects), and the driver writes it to the cache, one at a time.

The driver keeps a bounded number of tasks in flight (two a CPU of the cluster), learns of finished ones with
`ray.wait` and hands the results on in the order of the runs as they come, so it never holds more than a few
tasks' results: with the cache, the summaries are read back from it lazily, as on the local path. The workers
must see the run folders at the driver's paths; a worker that cannot is one line naming the run and its node.
Each task first compares its code's digest with the driver's and reads nothing when they differ.

`local` starts a private Ray instance on this machine for the one command (a CPU for each of the pool's workers,
no dashboard, a small object store, only the loopback address, its files in a temporary folder removed
afterwards). `auto` does so only when there is enough to read for Ray's start-up to pay (`worth_starting`: about
6 s here, more than the pool's whole check of the 20 example runs); with less, the local pool reads the runs, as
without `--ray`, and one line on stderr says so. Any other value is the address of a running cluster
(`HOST:PORT` of its head, or `ray://HOST:PORT`), always used. A process already connected to Ray (`ray.init`
called before) uses that connection, whatever the runs. Ray not installed, not reachable, or a worker lost is
one line (`RayError`), never a traceback; Ray is imported only here.
"""

from __future__ import annotations

import collections
import functools
import ipaddress
import logging
import os
import re
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from build_tools.core._exceptions import (
    Problem,
    display_path,
    ray_bad_address,
    ray_not_installed,
    ray_start_failed,
    ray_unreachable,
    ray_worker_cannot_import,
    ray_worker_cannot_see_run,
    ray_worker_lost,
    ray_worker_other_code,
)
from build_tools.core._staging import temporary_prefix
from build_tools.core._types import RunSummary
from build_tools.store import fingerprint
from build_tools.summarise.summary import Job, Read, _read_run, chunk_size, summarise_in_pool

AUTO = "auto"  # a private instance when the runs to read are many enough (worth_starting), else the local pool
LOCAL = "local"  # a private instance, whatever the runs
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # Ray spills to disk past this; results are fetched a task at a time
CONNECT_TIMEOUT_S = 5.0  # Ray itself retries an unreachable head for minutes
# Tasks in flight per CPU of the cluster: each worker has its next task waiting when one ends.
IN_FLIGHT_PER_CPU = 2
# Finished tasks waiting for an earlier one (results are handed on in the order of the runs), at most this many
# times the tasks in flight: a slow task does not let the others' results pile up in the driver.
WAITING_PER_IN_FLIGHT = 2

# When `auto` starts Ray: what a private instance adds to a check, and how fast the local pool reads, on this
# 2-core machine. Ray's start-up (its head's processes, then two workers importing pandas) took 5.7 s: bench_ray,
# the 20 example runs (1.6 MB, nearly nothing to read) on a quiet machine, 7.8 s on Ray against the pool's 2.1 s.
# The pool validates a run at about 176 MB/s (the 1000x1000 set's 1.85 GB: 12.6 s against 2.1 s without them,
# issue 22) and summarises one at about 45 MB/s (the same set with ALL=1: 42.9 s, bench_ray at load 1.4-2.5).
# Elsewhere the pool, and the private instance, have as many workers as CPUs: its speed is taken to grow with them.
RAY_START_SECONDS = 5.7
POOL_VALIDATES_BYTES_PER_SECOND = 176e6
POOL_SUMMARISES_BYTES_PER_SECOND = 45e6
MEASURED_ON_CPUS = 2
# Ray is started when its start-up is at most this share of the pool's reading: issue 22's "within 1.3x of the
# pool" as a rule of when Ray pays on one machine (where it reads no faster than the pool, on the same cores).
RAY_SHARE = 0.3
# The first words of the line `auto` writes when it reads with the local pool (bench_ray looks for them).
NOT_STARTED = "Ray not started:"


class RaySummariser:
    """A Summariser (summary.py) that reads the runs as Ray tasks on the cluster at `address` (or `auto`).

    `workers_write=False` makes every worker send its summaries back as bytes, as a worker that cannot see the
    cache does (the tests use it on one machine); `nodes` collects the Ray nodes that ran a task."""

    def __init__(self, address: str, *, workers_write: bool = True) -> None:
        check_address(address)  # a malformed address is refused even when the cache holds every run
        self.address, self.workers_write = address, workers_write
        self.nodes: set[str] = set()

    def __call__(self, jobs: Sequence[Job]) -> Iterator[Read]:
        if not jobs:  # everything came from the cache: no need for Ray at all
            return
        if self.address == AUTO and not _connected_already() and not worth_starting(jobs):
            sys.stderr.write(not_started_line(jobs) + "\n")
            yield from summarise_in_pool(jobs)  # the path without --ray: its results, byte for byte
            return
        cache_dir = jobs[0].cache_dir
        with _connected(self.address) as ray, _probe_file(cache_dir if self.workers_write else None) as probe:
            yield from _gather(ray, jobs, probe, self.nodes)


def ray_summariser(address: str) -> RaySummariser:
    """The Summariser of `--ray ADDRESS`."""
    return RaySummariser(address)


def pool_seconds(jobs: Sequence[Job]) -> float:
    """About how long the local pool takes to read the jobs' runs here (their bytes at its measured speeds)."""
    seconds = sum(_run_bytes(job) / (POOL_SUMMARISES_BYTES_PER_SECOND if job.summarise else
                                     POOL_VALIDATES_BYTES_PER_SECOND) for job in jobs)
    return seconds * MEASURED_ON_CPUS / local_cpus()


def local_cpus() -> int:
    """The CPUs of a private instance: as many as the local pool has workers (summary._in_pool), so that on one
    machine Ray reads with what the pool reads with."""
    return os.cpu_count() or 1


def worth_starting(jobs: Sequence[Job]) -> bool:
    """Whether a private Ray instance pays for its start-up on reading these runs (RAY_SHARE)."""
    return RAY_START_SECONDS <= RAY_SHARE * pool_seconds(jobs)


def not_started_line(jobs: Sequence[Job]) -> str:
    """What `auto` says when the local pool reads the runs."""
    size = sum(_run_bytes(job) for job in jobs)
    one = len(jobs) == 1
    runs = f"this run ({_megabytes(size)}) takes" if one else f"these {len(jobs)} runs ({_megabytes(size)}) take"
    return (f"{NOT_STARTED} {runs} the local pool {_duration(pool_seconds(jobs))} to read, too little for Ray's "
            f"start-up (about {RAY_START_SECONDS:.0f} s here) to pay; the local pool reads {'it' if one else 'them'} "
            "(--ray local, or make check RAY=local, starts Ray whatever the runs)")


def _duration(seconds: float) -> str:
    return "under a second" if seconds < 1 else f"about {seconds:.0f} s"


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def _run_bytes(job: Job) -> int:
    """The bytes of a run's files: as the parent listed them, or (a run the cache knows) as they are now."""
    if job.listing is not None:
        return sum(stat[1] for stat in job.listing)
    return sum(os.lstat(os.path.join(folder, name)).st_size
               for folder, _, names in os.walk(job.path) for name in names)


def _connected_already() -> bool:
    """Whether this process is connected to Ray (without importing Ray when nothing did)."""
    ray = sys.modules.get("ray")
    return ray is not None and bool(ray.is_initialized())


class _Done(NamedTuple):
    """What a task sends back: the worker's code digest and node, and each run's Read (a summary as
    summary_wire bytes when the worker could not write it to the cache); `unseen`, a run folder it could not see."""

    digest: str
    node: str
    reads: list[tuple[Any, list[Problem], dict[str, str] | None]]
    unseen: str | None = None


def _read_task(jobs: list[Job], cwd: str, probe: str | None, ours: str) -> _Done:
    """On a worker: the runs read as the local pool reads them; nothing read when its code is not the driver's."""
    theirs, node = code_digest(), _node()
    if theirs != ours:  # nothing written to the cache under keys our code would trust
        return _Done(theirs, node, [])
    if os.path.isdir(cwd):  # problems name files as the user typed them: relative to the driver's folder
        os.chdir(cwd)
    # The driver's cache folder is this worker's too (and it may write there): it writes the summaries itself.
    writes = probe is not None and os.path.isfile(probe) and os.access(os.path.dirname(probe), os.W_OK)
    reads = []
    for job in jobs:
        if not os.path.isdir(job.path):
            return _Done(theirs, node, [], str(job.path))
        reads.append(_read_on_worker(job if writes else job._replace(cache_dir=None)))
    return _Done(theirs, node, reads)


def _node() -> str:
    """The Ray node this runs on (get_node_id would start Ray in a process not yet in it)."""
    import ray

    return str(ray.get_runtime_context().get_node_id()) if ray.is_initialized() else "outside Ray"


def _read_on_worker(job: Job) -> tuple[Any, list[Problem], dict[str, str] | None]:
    from build_tools.ingest import stream_columns
    from build_tools.store import summary_wire

    with stream_columns.cores_shared(stream_columns.CORES):  # a task has one CPU of its node: it parses one batch ahead
        result, problems, hashed = _read_run(job)
    return (summary_wire.encode(result) if isinstance(result, RunSummary) else result), problems, hashed


@functools.cache
def code_digest() -> str:
    """A key of the build_tools code, the Python version and the pinned libraries' versions (`fingerprint`): a
    worker with other code, or other libraries, would cache other summaries under our keys."""
    here = fingerprint.module_file("build_tools").parent  # the whole package, wherever this module is in it
    return fingerprint.Key("ray worker").environment().files(here, sorted(here.rglob("*.py"))).hexdigest()


def _gather(ray: ModuleType, jobs: Sequence[Job], probe: str | None, nodes: set[str]) -> Iterator[Read]:
    """Every job's Read, in their order: tasks of a few runs each, a bounded number in flight."""
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    size = chunk_size(len(jobs), cpus)
    chunks = iter([_absolute(jobs[at:at + size]) for at in range(0, len(jobs), size)])
    task, ours, cwd = ray.remote(_read_task), code_digest(), os.getcwd()
    in_flight, most = cpus * IN_FLIGHT_PER_CPU, cpus * IN_FLIGHT_PER_CPU * (1 + WAITING_PER_IN_FLIGHT)
    submitted: collections.deque[tuple[list[Job], Any]] = collections.deque()  # in the order of the runs
    running: set[Any] = set()
    try:
        while True:
            while len(running) < in_flight and len(submitted) < most and (chunk := next(chunks, None)) is not None:
                ref = task.remote(chunk, cwd, probe, ours)
                submitted.append((chunk, ref))
                running.add(ref)
            if not submitted:
                return
            chunk, ref = submitted[0]
            if ref in running:  # the next results are not in yet: wait for any task to end, and top up
                done, _ = ray.wait(list(running), num_returns=1)
                running.difference_update(done)
                continue
            submitted.popleft()
            yield from _results(_fetched(ray, ref, chunk), chunk, ours, nodes)
            del ref  # let Ray free the object
    finally:  # a check stopped by an error leaves no task reading on the cluster
        for ref in running:
            ray.cancel(ref)


def _absolute(jobs: Sequence[Job]) -> list[Job]:
    """Jobs naming absolute paths: a worker that cannot enter the driver's folder still finds them."""
    return [job._replace(path=Path(os.path.abspath(job.path)),
                         cache_dir=None if job.cache_dir is None else Path(os.path.abspath(job.cache_dir)))
            for job in jobs]


def _fetched(ray: ModuleType, ref: Any, chunk: list[Job]) -> _Done:
    try:
        done: _Done = ray.get(ref)
    except ray.exceptions.RayTaskError as error:  # an exception in the manual's own code: a bug, as locally
        if isinstance(error, ImportError):  # ... unless the worker has no build_tools to run
            raise ray_worker_cannot_import(_where(chunk), _first_line(getattr(error, "cause", None) or error)) from None
        raise
    except ray.exceptions.RayError as error:
        raise ray_worker_lost(_where(chunk), type(error).__name__, _first_line(error)) from None
    return done


def _results(done: _Done, chunk: list[Job], ours: str, nodes: set[str]) -> Iterator[Read]:
    from build_tools.store import summary_wire

    if done.digest != ours:
        raise ray_worker_other_code(_where(chunk), done.digest, ours)
    if done.unseen is not None:
        raise ray_worker_cannot_see_run(display_path(done.unseen), done.node)
    nodes.add(done.node)
    for result, problems, hashed in done.reads:
        # A worker that could not enter the driver's folder wrote absolute paths: show them as the user would.
        shown = [Problem(display_path(p.file), p.line, p.field, p.message) if os.path.isabs(p.file) else p
                 for p in problems]
        yield (summary_wire.decode(result) if isinstance(result, tuple) else result), shown, hashed


def _where(chunk: list[Job]) -> str:
    """The runs of a task, as the user would type the first one."""
    first = display_path(chunk[0].path)
    return first if len(chunk) == 1 else f"{first} (one of the {len(chunk)} runs of a task)"


@contextmanager
def _probe_file(cache_dir: Path | None) -> Iterator[str | None]:
    """A file of a unique name in the cache folder, for the command: a worker that finds it at the same path
    shares the cache, and writes its summaries there itself. None without a cache (every summary sent back)."""
    if cache_dir is None:
        yield None
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    probe = cache_dir / f"{temporary_prefix('ray-probe')}{uuid.uuid4().hex}"
    probe.touch()
    try:
        yield os.path.abspath(probe)
    finally:
        probe.unlink(missing_ok=True)


@contextmanager
def _connected(address: str) -> Iterator[ModuleType]:
    """Ray, connected to `address` (or a private local instance for `auto` and `local`); disconnected afterwards."""
    # Read by Ray when it is imported and passed on to the processes it starts: no usage report sent out,
    # and a local instance on the loopback address only.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    private = address in (AUTO, LOCAL)
    if private:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise ray_not_installed() from None
    if ray.is_initialized():
        yield ray
        return
    temp_dir = None
    if not private:
        _probe(address)
    try:
        if private:
            temp_dir = tempfile.mkdtemp(prefix="manual-ray-")  # short: Ray's socket paths must fit 107 bytes
            ray.init(num_cpus=local_cpus(), include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES,
                     _temp_dir=temp_dir, _node_ip_address="127.0.0.1", log_to_driver=False,
                     logging_level=logging.ERROR)
        else:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except (Exception, SystemExit) as error:  # Ray exits the process when it gives up on a head
        _remove(temp_dir)
        raise ray_start_failed(address, private, type(error).__name__, _first_line(error)) from None
    try:
        yield ray
    finally:
        ray.shutdown()
        _remove(temp_dir)


def check_address(address: str, variable: str | None = None) -> None:
    """auto, local or HOST:PORT, else a RayError saying why (naming make's `variable` when given); imports no Ray:
    make checks RAY with it before it installs Ray."""
    if address not in (AUTO, LOCAL):
        _host_port(address, variable)


def _host_port(address: str, variable: str | None = None) -> tuple[str, int]:
    """HOST:PORT (or ray://HOST:PORT, [IPv6]:PORT): a host name or IP address and a port from 1 to 65535."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not (port.isascii() and port.isdigit()):  # isdigit alone takes "２" and "²"
        raise ray_bad_address(address, variable=variable)
    if not 1 <= int(port) <= 65535:
        raise ray_bad_address(address, f"port {port} is not from 1 to 65535", variable)
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not _is_host(bare):
        raise ray_bad_address(address, f"{host!r} is not a host name or an IP address", variable)
    return bare, int(port)


_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def _is_host(host: str) -> bool:
    """An IP address, or a host name of RFC 1123 (letters, digits and '-' in dot-separated labels, the last
    not all digits: 300.1.1.1 is no address)."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    return (len(host) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels)
            and not labels[-1].isdigit())


def _probe(address: str) -> None:
    """Fail within seconds when nothing listens at HOST:PORT (Ray would retry for minutes, then exit)."""
    try:
        socket.create_connection(_host_port(address), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        raise ray_unreachable(address, str(error.strerror or error)) from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "no message"


def _remove(folder: str | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
