"""A run's input hash: every file of the run, the code that reads it and the library versions. Imports
nothing heavy, so that a warm check or a no-op build decides, before importing pandas, whether anything changed.

A memo (`input-hashes.json`, in the summary cache) keeps each run's hash with what git's index keeps of its files
when it was hashed (names, sizes, mtime and ctime in ns, inodes, devices): a run whose files have not changed is not
read again. Only everyday builds use it: an edition hashes every byte (`make publish`, `make verify`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from build_tools.core._files import FileStat, Seen, scan_tree
from build_tools.core._staging import write_atomic

from . import fingerprint

# The module that reads and summarises a run: its key hashes every module of the package it imports.
SUMMARY_MODULE = "build_tools.summarise.summary"


@functools.cache
def code_digest(package: Path = fingerprint.PACKAGE) -> bytes:
    """The code that reads and summarises a run (every module of the package the summary stage imports, the
    readers of log/, tensorboard/, wandb/ ... and axes.py among them: fingerprint.code_files), and the library
    versions: a change makes every cached summary stale. `package`: another copy of build_tools/ (the tests')."""
    return fingerprint.Key("summary code").code(SUMMARY_MODULE, package=package).digest()


def input_hash(run_dir: Path, memo: dict[str, Any] | None = None, listing: list[FileStat] | None = None,
               key: str | None = None, seen: Mapping[str, Seen] | None = None) -> str:
    """Hash of every file of the run, of the code that reads it and of the library versions (`fingerprint`).

    With a memo (kept in the cache folder), a run whose files have the same names, sizes, times (mtime and
    ctime), inodes and devices as when it was last hashed is not read again: a warm check stats files instead of
    hashing gigabytes. A run with a file changed (mtime or ctime) in the last two seconds is not remembered: it
    could change again within one tick of the file system's clock, its size and times unchanged (git's "racily
    clean" entries).
    `listing` is the run's files as load.run_folders found them (default: listed here), `key` the run's
    name in the memo (default: its resolved path). `seen`: the files the loader read whole, hashed as it read
    them (_files.hashing_reads), which are not read again; the others (read by a library that opens them itself,
    or by nobody) are read here. A file whose bytes were read with other stats than the listing's (rewritten
    between listing and reading) makes the run not remembered: the memo never pairs stats with other bytes.
    """
    files = listing if listing is not None else scan_tree(run_dir, run_dir.resolve())[1]
    stats = stats_of(files)
    key, code = key or str(run_dir.resolve()), run_code(files)
    if memo is not None and _holds(memo, key, stats, code):
        return str(memo[key]["digest"])
    hashed = fingerprint.Key("run").add(code)
    as_listed = True
    seen, base = seen or {}, str(run_dir)
    for name, *listed in files:
        found = seen.get(f"{base}/{name}")  # str(run_dir / name), as the loader names what it read
        identity, digest = (found.identity, found.digest) if found is not None else fingerprint.read_digest(
            run_dir / name)
        if identity is not None and found is not None:
            fingerprint.note_digest(identity, digest)  # the no-op key of this process reads it no more
        as_listed = as_listed and identity == tuple(listed)
        hashed.named(name, digest)
    digest_hex = hashed.hexdigest()
    if memo is not None and as_listed and _settled(files):
        memo[key] = {"stats": stats, "code": code, "digest": digest_hex}
    return digest_hex


def run_code(files: list[FileStat]) -> str:
    """What reads this run: the summary code (code_digest), and for a run holding a wandb offline log, the wandb
    that reads it (run as `python -m wandb`, never imported: no other run's hash holds its version)."""
    code = code_digest().hex()
    if any(name.removesuffix(".gz").endswith(".wandb") for name, *_ in files):
        code += " " + fingerprint.versions_of(["wandb"]).strip()
    return code


def _settled(files: list[FileStat]) -> bool:
    """No file of the run was written or had its times set in the last two seconds (its mtime and ctime)."""
    newest = max((max(mtime, ctime) for _, _, mtime, ctime, _, _ in files), default=0)
    return _now() - newest > fingerprint.SETTLED_NS


def _now() -> int:
    return time.time_ns()


def stats_of(files: list[FileStat]) -> str:
    """The names, sizes, times (mtime and ctime), inodes and devices, in a few bytes: the sha256 of the listing
    pickled, which costs a third of its repr() at a thousand runs. Equal bytes are equal listings (they load back
    to them); a listing pickles to the same bytes each time (no name in it is there twice, so no string is
    pickled as a reference to an earlier one)."""
    return hashlib.sha256(pickle.dumps(files, protocol=5)).hexdigest()


def memo_stale(memo: dict[str, Any], key: str, files: list[FileStat]) -> bool:
    """Whether the memo lacks the run's input hash for these files and this code."""
    return not _holds(memo, key, stats_of(files), run_code(files))


def _holds(memo: dict[str, Any], key: str, stats: str, code: str) -> bool:
    entry = memo.get(key, {})
    return bool(entry.get("stats") == stats and entry.get("code") == code)


MEMO = "input-hashes.json"


def read_memo(cache_dir: Path | None) -> dict[str, Any] | None:
    """The memo of input hashes; empty when absent or unreadable (it is only ever a shortcut)."""
    if cache_dir is None:
        return None
    try:
        memo = json.loads((cache_dir / MEMO).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    # An entry of another shape (a damaged or hand-edited memo) is dropped: the run is hashed again.
    return {key: entry for key, entry in memo.items() if _well_formed(entry)} if isinstance(memo, dict) else {}


def _well_formed(entry: object) -> bool:
    return isinstance(entry, dict) and all(isinstance(entry.get(name), str) for name in ("stats", "code", "digest"))


def write_memo(cache_dir: Path | None, memo: dict[str, Any] | None) -> None:
    if cache_dir is None or memo is None:
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(cache_dir / MEMO, json.dumps(memo, sort_keys=True).encode())


def present(memo: dict[str, Any], root: Path, paths: Sequence[Path]) -> dict[str, Any]:
    """The memo without the runs that are gone."""
    present = {f"{root}/{path.name}" for path in paths}
    return {key: value for key, value in memo.items() if key in present}
