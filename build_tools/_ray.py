"""Summarising runs as Ray tasks: `manual check --ray ADDRESS` (or `--ray auto`).

Each run folder the cache does not hold becomes one Ray task that reads and summarises it on a worker
(`summary.load_and_summarise`, the local path's own function) and sends the summary back as Parquet tables
and a JSON body (`summary_wire`); the driver rebuilds the summaries in the order of the folders, so the
claims are those of the local path, byte for byte. The workers must see the run folders at the same paths
(one machine, or shared storage).

`auto` starts a private Ray instance on this machine for the one command (two CPUs, no dashboard, a small
object store, only the loopback address, its files in a temporary folder removed afterwards); any other
value is the address of a running cluster (`HOST:PORT` of its head, or `ray://HOST:PORT`). A process
already connected to Ray (`ray.init` called before) uses that connection. Ray not installed, not
reachable, or a worker lost is one line (`RayError`), never a traceback; Ray is imported only here.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from ._exceptions import (
    Problem,
    RayBadAddress,
    RayNotInstalled,
    RayStartFailed,
    RayUnreachable,
    RayWorkerCannotImport,
    RayWorkerLost,
    RayWorkerOtherCode,
    display_path,
)
from ._types import RunSummary
from .store import fingerprint
from .summary import Summariser, load_and_summarise

AUTO = "auto"
LOCAL_CPUS = 2
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # Ray spills to disk past this; summaries are fetched one by one
CONNECT_TIMEOUT_S = 5.0  # Ray itself retries an unreachable head for minutes


def ray_summariser(address: str) -> Summariser:
    """A Summariser that runs one Ray task per run folder on the cluster at `address` (or `auto`)."""
    if address != AUTO:
        _host_port(address)  # a malformed address is refused even when the cache holds every run

    def summarise(paths: Sequence[Path]) -> list[tuple[RunSummary | None, list[Problem]]]:
        if not paths:  # everything came from the cache: no need for Ray at all
            return []
        with _connected(address) as ray:
            return _gather(ray, paths)

    return summarise


def _summarise_task(path: str, cwd: str) -> tuple[tuple[dict[str, bytes], str] | None, list[Problem], str]:
    """On a worker: one run to (its summary as bytes, or None; its problems; the worker's code digest)."""
    from .store import summary_wire

    if os.path.isdir(cwd):  # problems name files as the user typed them: relative to the driver's folder
        os.chdir(cwd)
    summary, problems = load_and_summarise(Path(path))
    return (None if summary is None else summary_wire.encode(summary)), problems, code_digest()


def code_digest() -> str:
    """A key of the build_tools code, the Python version and the pinned libraries' versions (`fingerprint`): a
    worker with other code, or other libraries, would cache other summaries under our keys."""
    here = Path(__file__).parent
    return fingerprint.Key("ray worker").files(here, sorted(here.rglob("*.py"))).hexdigest()


def _gather(ray: ModuleType, paths: Sequence[Path]) -> list[tuple[RunSummary | None, list[Problem]]]:
    from .store import summary_wire

    task = ray.remote(_summarise_task)
    refs = [task.remote(os.path.abspath(path), os.getcwd()) for path in paths]
    ours = code_digest()
    results: list[tuple[RunSummary | None, list[Problem]]] = []
    for index, path in enumerate(paths):
        try:
            encoded, problems, theirs = ray.get(refs[index])
        except ray.exceptions.RayTaskError as error:  # an exception in the manual's own code: a bug, as locally
            if isinstance(error, ImportError):  # ... unless the worker has no build_tools to run
                raise RayWorkerCannotImport(display_path(path),
                                            _first_line(getattr(error, "cause", None) or error)) from None
            raise
        except ray.exceptions.RayError as error:
            raise RayWorkerLost(display_path(path), type(error).__name__, _first_line(error)) from None
        refs[index] = None  # let Ray free the object
        if theirs != ours:
            raise RayWorkerOtherCode(display_path(path), theirs, ours)
        # A worker that could not enter the driver's folder wrote absolute paths: show them as the user would.
        problems = [Problem(display_path(p.file), p.line, p.field, p.message) if os.path.isabs(p.file) else p
                    for p in problems]
        results.append((None if encoded is None else summary_wire.decode(encoded), problems))
    return results


@contextmanager
def _connected(address: str) -> Iterator[ModuleType]:
    """Ray, connected to `address` (or a private local instance for `auto`); disconnected afterwards."""
    # Read by Ray when it is imported and passed on to the processes it starts: no usage report sent out,
    # and a local instance on the loopback address only.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address == AUTO:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise RayNotInstalled() from None
    if ray.is_initialized():
        yield ray
        return
    temp_dir = None
    if address != AUTO:
        _probe(address)
    try:
        if address == AUTO:
            temp_dir = tempfile.mkdtemp(prefix="manual-ray-")  # short: Ray's socket paths must fit 107 bytes
            ray.init(num_cpus=LOCAL_CPUS, include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES,
                     _temp_dir=temp_dir, _node_ip_address="127.0.0.1", log_to_driver=False,
                     logging_level=logging.ERROR)
        else:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except (Exception, SystemExit) as error:  # Ray exits the process when it gives up on a head
        _remove(temp_dir)
        raise RayStartFailed(address, address == AUTO, type(error).__name__, _first_line(error)) from None
    try:
        yield ray
    finally:
        ray.shutdown()
        _remove(temp_dir)


def _host_port(address: str) -> tuple[str, int]:
    """HOST:PORT (or ray://HOST:PORT, [IPv6]:PORT): a host name or IP address and a port from 1 to 65535."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayBadAddress(address)
    if not port.isascii() or not 1 <= int(port) <= 65535:
        raise RayBadAddress(address, f"port {port} is not from 1 to 65535")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not _is_host(bare):
        raise RayBadAddress(address, f"{host!r} is not a host name or an IP address")
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
        raise RayUnreachable(address, str(error.strerror or error)) from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "no message"


def _remove(folder: str | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
