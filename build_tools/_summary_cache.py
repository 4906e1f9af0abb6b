"""The summary cache: data only, checked before it is trusted.

A cached summary is a folder `<run-id>-<input hash>/` holding one Parquet file per table (steps, phases,
events, each sampled series) and `entry.json` with the run's configuration, facts and warnings, the
sha256 of every Parquet file, and the sha256 of its own body. Nothing in it can run code when read (no
pickle); an entry whose hashes do not match, or that does not parse, is discarded with a warning and
the run is summarised again.

`validated.json` remembers every run that passed its checks, summarised or not: its input hash, run.yaml,
first and last record times and warnings, so that a run nobody reads is validated once, not at every check.
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ._exceptions import CacheChanged
from ._staging import temporary_prefix, write_atomic

FORMAT = 1
# Columns holding lists, tuples or mappings are stored as JSON text; these are read back as tuples.
TUPLE_COLUMNS = {"gpus"}


def entry_dir(cache_dir: Path, run_id: str, digest: str) -> Path:
    return cache_dir / f"{run_id}-{digest[:20]}"


def write_entry(cache_dir: Path, run_id: str, digest: str, frames: dict[str, pd.DataFrame],
                body: dict[str, Any]) -> None:
    """Write one entry whole (a unique temporary folder renamed into place), replacing older ones of the run."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=temporary_prefix(run_id), dir=cache_dir))  # swept if this process dies
    try:
        files = {}
        for index, (name, frame) in enumerate(sorted(frames.items())):
            file = f"{index:02d}.parquet"
            _write_frame(frame, tmp / file)
            files[file] = {"name": name, "sha256": _sha256(tmp / file)}
        content = {"format": FORMAT, "digest": digest, "files": files, **body}
        text = json.dumps(content, sort_keys=True, allow_nan=True)
        (tmp / "entry.json").write_text(json.dumps({"sha256": _sha256_text(text), "body": content},
                                                   sort_keys=True, allow_nan=True), encoding="utf-8")
        for stale in cache_dir.glob(f"{run_id}-*"):
            if stale.is_dir() and stale != tmp:
                shutil.rmtree(stale, ignore_errors=True)
        target = entry_dir(cache_dir, run_id, digest)
        try:
            tmp.rename(target)
        except OSError:  # another build wrote the same entry meanwhile: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_entry(cache_dir: Path, run_id: str, digest: str) -> tuple[Callable[[], dict[str, pd.DataFrame]],
                                                                    dict[str, Any]] | None:
    """(a function that reads the tables, body) of a valid entry; None when there is none; ValueError when one
    exists but is damaged. Every file's hash is checked here; the tables are decoded only when asked for,
    so a check that reads three runs does not decode a thousand."""
    folder = entry_dir(cache_dir, run_id, digest)
    if not folder.is_dir():
        return None
    try:
        wrapper = json.loads((folder / "entry.json").read_text(encoding="utf-8"))
        body = wrapper["body"]
        if _sha256_text(json.dumps(body, sort_keys=True, allow_nan=True)) != wrapper["sha256"]:
            raise ValueError("entry.json does not match its hash")
        if body.get("format") != FORMAT or body.get("digest") != digest:
            raise ValueError("another format or input")
        for file, info in body["files"].items():
            if _sha256(folder / Path(file).name) != info["sha256"]:
                raise ValueError(f"{file} does not match its hash")
    except (OSError, KeyError, TypeError, AttributeError, ValueError) as error:
        shutil.rmtree(folder, ignore_errors=True)
        raise ValueError(f"{folder.name}: {error}") from None
    # A partial, not a lambda: a summary holding it is pickled to the drawing workers, which decode it there.
    return functools.partial(_read_frames, folder, body), body


def _read_frames(folder: Path, body: dict[str, Any]) -> dict[str, pd.DataFrame]:
    frames = {}
    for file, info in body["files"].items():
        data = (folder / Path(file).name).read_bytes()
        if hashlib.sha256(data).hexdigest() != info["sha256"]:  # changed since it was checked: never trusted
            raise CacheChanged(folder)
        frames[info["name"]] = _read_frame(pa.BufferReader(data))
    return frames


def _write_frame(frame: pd.DataFrame, path: Path) -> None:
    frame = frame.copy()
    encoded = [column for column in frame.columns if frame[column].dtype == object
               and frame[column].map(lambda v: isinstance(v, list | tuple | dict)).any()]
    for column in encoded:
        frame[column] = frame[column].map(lambda v: json.dumps(v, sort_keys=True, allow_nan=True))
    table = pa.Table.from_pandas(frame, preserve_index=True)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           b"manual_json_columns": json.dumps(encoded).encode()})
    pq.write_table(table, path)


def _read_frame(source: Any) -> pd.DataFrame:
    table = pq.ParquetFile(source).read()  # one file: read_table would set up (and import) a whole dataset
    encoded = json.loads((table.schema.metadata or {}).get(b"manual_json_columns", b"[]"))
    frame: pd.DataFrame = table.to_pandas()
    for column in encoded:
        as_tuple = column in TUPLE_COLUMNS
        frame[column] = frame[column].map(
            lambda v, t=as_tuple: (tuple(json.loads(v)) if t else json.loads(v)) if isinstance(v, str) else v)
    return frame


# --- the runs that passed ---------------------------------------------------------------------

VALIDATED = "validated.json"


def read_validated(cache_dir: Path) -> dict[str, dict[str, Any]]:
    """What the cache remembers of every run that passed its checks, by run id: its input hash (`digest`), its
    run.yaml (`config`), the times of its first and last records (`start_ts`, `end_ts`) and its `warnings`.
    Empty when there is none; ValueError when the file exists but is damaged (then it is removed).

    The file is its body's sha256 on the first line and the body below it, so checking it costs one hash."""
    path = cache_dir / VALIDATED
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ValueError(f"{VALIDATED}: {error.strerror or error}") from None
    digest, _, text = data.partition(b"\n")
    try:
        if hashlib.sha256(text).hexdigest().encode() != digest:
            raise ValueError("does not match its hash")
        body = json.loads(text)
        if body.get("format") != FORMAT or not isinstance(body.get("runs"), dict):
            raise ValueError("another format")
    except (ValueError, AttributeError) as error:
        path.unlink(missing_ok=True)
        raise ValueError(f"{VALIDATED}: {error}") from None
    runs: dict[str, dict[str, Any]] = body["runs"]
    return runs


def write_validated(cache_dir: Path, runs: dict[str, dict[str, Any]]) -> None:
    text = json.dumps({"format": FORMAT, "runs": runs}, sort_keys=True, allow_nan=True).encode()
    write_atomic(cache_dir / VALIDATED, hashlib.sha256(text).hexdigest().encode() + b"\n" + text)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
