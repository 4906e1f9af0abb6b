"""The summary cache: data only, checked before it is trusted.

A cached summary is a folder `<run-id>-<input hash>/` holding one Parquet file per table (steps, phases,
events, each sampled series) and `entry.json` with the run's configuration, facts and warnings, the BLAKE3 hash
of every Parquet file (`_files.content_hash`, as every byte the build reads is hashed), and the sha256 of its own
body. Nothing in it can run code when read (no pickle); an entry whose hashes do not match, or that does not
parse, is discarded with a warning and the run is summarised again.

`validated.json` remembers every run that passed its checks, summarised or not: its input hash, run.yaml,
first and last record times, warnings, the rows of its per-step table and the facts of the metrics the Metrics
page named when it was validated (a run summarised takes none, and keeps those known of the same input), so that
a run nobody reads, or only the Metrics page reads, is validated once, not at every check.

A record's facts are keyed by metric and computed over every step, unrounded: of the Metrics spec they depend
only on which metrics it names, so a record is replayed only when it holds every metric the spec names now (a
changed wording, rounding, run set or statistic changes nothing of them; a metric added is taken by validating
the run again). FACTS_FORMAT names what the facts are: a record of another is dropped, its run validated again.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import io
import json
import shutil
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from build_tools.core import _workers
from build_tools.core._exceptions import cache_changed
from build_tools.core._files import content_hash
from build_tools.core._staging import new_folder, temporary_prefix, write_atomic
from build_tools.core._types import MetricFacts, RunSummary

FORMAT = 2  # 2: each Parquet file's hash is BLAKE3 (`blake3`), not sha256
FACTS_FORMAT = 1
# pyarrow's rows per Parquet row group (pq.write_table's default).
ROW_GROUP = 1024 * 1024
# Columns holding lists, tuples or mappings are stored as JSON text; these are read back as tuples.
TUPLE_COLUMNS = {"gpus"}
# A summary read from the cache carries its tables' hashes under this name (table name -> its file's hash), so that a
# figure is keyed on the tables it reads without decoding them (build_tools/drawing/reads.py).
TABLE_DIGESTS = "_table_digests"


def summary_parts(summary: RunSummary) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """A summary as the cache and the Ray wire hold it: a frame per table (each series as `series/<name>`) and
    a JSON body of the rest."""
    frames = {"steps": summary.steps, "phases": summary.phases, "events": summary.events,
              **{f"series/{name}": frame for name, frame in summary.series.items()},
              **{f"axis/{key}": frame for key, frame in summary.axes.items()}}
    body = {"run_id": summary.run_id, "config": summary.config, "facts": summary.facts,
            "warnings": summary.warnings}
    return frames, body


def facts_of(body: dict[str, Any]) -> dict[str, Any]:
    """The facts of a body, with what JSON turned into lists made tuples again."""
    facts = dict(body["facts"])
    facts["gpus_used"] = [tuple(pair) for pair in facts["gpus_used"]]
    return facts


def series_of(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The sampled series among a summary's frames (summary_parts), by name."""
    return {name.removeprefix("series/"): frame for name, frame in frames.items() if name.startswith("series/")}


def axes_of(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The step axes among a summary's frames (summary_parts), by step key."""
    return {name.removeprefix("axis/"): frame for name, frame in frames.items() if name.startswith("axis/")}


def entry_dir(cache_dir: Path, run_id: str, digest: str) -> Path:
    return cache_dir / f"{run_id}-{digest[:20]}"


def write_entry(cache_dir: Path, run_id: str, digest: str, frames: dict[str, pd.DataFrame],
                body: dict[str, Any]) -> None:
    """Write one entry whole (a unique temporary folder renamed into place), replacing older ones of the run."""
    with EntryWriter(cache_dir, run_id) as entry:
        for name, frame in frames.items():
            entry.add(name, frame)
        entry.commit(digest, body)


class EntryWriter:
    """One entry written a table at a time, so that a summary of millions of samples need never hold all its
    series at once (summary._read_run writes each sampled stream's series as soon as it is read, then drops it):
    each table goes to a file of the entry's temporary folder as it is added, and `commit` gives the files their
    names (their place among the tables' names sorted, as write_entry always named them), writes entry.json and
    renames the folder into place. Left without a commit (a run with problems, an exception), the folder is
    removed: no half-written entry is ever seen. Nothing is made on disk before the first table."""

    def __init__(self, cache_dir: Path, run_id: str) -> None:
        self.cache_dir, self.run_id = cache_dir, run_id
        self._tmp: Path | None = None
        self.written: dict[str, tuple[Path, str]] = {}  # table name -> its file (not yet named), its hash
        # The table being written in the writer thread, while the caller reads on (its hash when done).
        self._writing: tuple[str, Future[str]] | None = None

    @property
    def tmp(self) -> Path:
        if self._tmp is None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            self._tmp = new_folder(self.cache_dir, temporary_prefix(self.run_id))  # swept if this dies
        return self._tmp

    def __enter__(self) -> EntryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._writing is not None:  # the folder is removed once nothing writes in it; the entry is dropped,
            concurrent.futures.wait([self._writing[1]])  # so a failed write has nothing left to spoil
        if self._tmp is not None:  # after a commit, only a folder another build won the race to
            shutil.rmtree(self._tmp, ignore_errors=True)

    def add(self, name: str, frame: pd.DataFrame) -> None:
        """The table written to the entry's folder in the writer thread, while the caller goes on (Parquet's
        encoding releases the GIL): a long run's next stream is read meanwhile. One table is written at a time,
        so at most one is held for writing; the caller must not change the frame after."""
        if name in self.written:
            raise ValueError(f"the table {name} was added twice")
        self._written()
        file = self.tmp / f"table-{len(self.written)}"
        self.written[name] = file, ""
        self._writing = name, _workers.threads("write", 1).submit(_write_and_hash, frame, file)

    def _written(self) -> None:
        """Wait for the table being written (its error raised here) and keep its hash."""
        if self._writing is not None:
            (name, writing), self._writing = self._writing, None
            self.written[name] = self.written[name][0], writing.result()

    def commit(self, digest: str, body: dict[str, Any]) -> None:
        self._written()
        files = {}
        for index, name in enumerate(sorted(self.written)):
            file, sha = self.written[name]
            named = f"{index:02d}.parquet"
            file.rename(self.tmp / named)
            files[named] = {"name": name, "blake3": sha}
        content = {"format": FORMAT, "digest": digest, "files": files, **body}
        text = json.dumps(content, sort_keys=True, allow_nan=True)
        # The body in its own order (a run.yaml's, the facts'), so that it reads back as the summary had it; its
        # hash is of its keys sorted.
        (self.tmp / "entry.json").write_text(json.dumps({"sha256": _sha256_text(text), "body": content},
                                                        allow_nan=True), encoding="utf-8")
        for stale in self.cache_dir.glob(f"{self.run_id}-*"):
            if stale.is_dir() and stale != self.tmp:
                shutil.rmtree(stale, ignore_errors=True)
        try:
            self.tmp.rename(entry_dir(self.cache_dir, self.run_id, digest))
        except OSError:  # another build wrote the same entry meanwhile: keep theirs (__exit__ removes ours)
            pass


def _write_and_hash(frame: pd.DataFrame, file: Path) -> str:
    """EntryWriter.add's work, in the writer thread: the table written, what it used given back, its hash."""
    _write_frame(frame, file)
    del frame
    pa.default_memory_pool().release_unused()
    return _file_hash(file)


def read_entry(cache_dir: Path, run_id: str, digest: str) -> tuple[Callable[[Callable[[str], bool]],
                                                                             dict[str, pd.DataFrame]],
                                                                    dict[str, Any]] | None:
    """(a function that reads the tables whose names it is asked for, body) of a valid entry; None when there
    is none; ValueError when one exists but is damaged. Every file's hash is checked here; a table is decoded
    only when asked for, so a check that reads three runs does not decode a thousand, and a page that reads
    a thousand runs' steps does not decode their phases."""
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
            if _file_hash(folder / Path(file).name) != info["blake3"]:
                raise ValueError(f"{file} does not match its hash")
    except (OSError, KeyError, TypeError, AttributeError, ValueError, RecursionError) as error:
        shutil.rmtree(folder, ignore_errors=True)
        raise ValueError(f"{folder.name}: {error}") from None
    # A partial, not a lambda: a summary holding it is pickled to the drawing workers, which decode it there.
    return functools.partial(_read_frames, folder, body), body


def _read_frames(folder: Path, body: dict[str, Any], wanted: Callable[[str], bool]) -> dict[str, pd.DataFrame]:
    frames = {}
    for file, info in body["files"].items():
        if not wanted(info["name"]):
            continue
        data = (folder / Path(file).name).read_bytes()
        if content_hash(data).hexdigest() != info["blake3"]:  # changed since it was checked: never trusted
            raise cache_changed(folder)
        frames[info["name"]] = _read_frame(pa.BufferReader(data))
    return frames


def table_digests(body: dict[str, Any]) -> dict[str, str]:
    """The hash of each table of an entry read_entry gave (checked against its file there), by table name."""
    return {info["name"]: info["blake3"] for info in body["files"].values()}


def frame_digest(frame: pd.DataFrame) -> str:
    """The hash the cache records of a table (its Parquet file's, as _write_frame writes it), made in memory: a
    summary that is not from the cache (an edition's build) is keyed by its tables as one from the cache is."""
    buffer = io.BytesIO()
    _write_frame(frame, buffer)
    return content_hash(buffer.getvalue()).hexdigest()


def _write_frame(frame: pd.DataFrame, path: Path | io.BytesIO) -> None:
    encoded = [column for column, dtype in frame.dtypes.items()
               if pd.api.types.is_object_dtype(dtype) and _holds_containers(frame[column])]
    if encoded:  # copied only then: a frame of millions of samples is written as it is
        frame = frame.copy()
    for column in encoded:
        frame[column] = _as_json(frame[column].to_numpy())
    json_columns = {b"manual_json_columns": json.dumps(encoded).encode()}
    if len(frame) <= ROW_GROUP or not isinstance(frame.index, pd.RangeIndex) or not _write_by_row_groups(
            frame, path, json_columns):
        table = pa.Table.from_pandas(frame)  # a RangeIndex as metadata (read back a RangeIndex), any other as a column
        pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **json_columns}), path,
                       **_parquet_options(table.schema))


def _parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """How the cache writes Parquet: a dictionary for text only (numbers rarely repeat: building one for a million
    floats, to drop it, was a sixth of the writing), and no statistics (the cache reads a file whole, never
    filtering on them)."""
    text = [field.name for field in schema if pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
            or pa.types.is_dictionary(field.type)]
    return {"use_dictionary": text, "write_statistics": False}


def _write_by_row_groups(frame: pd.DataFrame, path: Any, metadata: dict[bytes, bytes]) -> bool:
    """A frame of millions of samples written one row group at a time (the rows pq.write_table puts in each), so
    it is never in Arrow's memory whole; the file is byte for byte the one pq.write_table writes. The schema is
    the first row group's, its index stretched to the whole frame; False (nothing written) when a column of
    objects holds other kinds of values later than in its first row group (None at first, then text)."""
    head = frame.iloc[:ROW_GROUP]
    for name, dtype in frame.dtypes.items():
        kinds = {pd.api.types.infer_dtype(part[name], skipna=True) for part in (frame, head)}
        if pd.api.types.is_object_dtype(dtype) and not (kinds == {"string"} or kinds == {"empty"}):
            return False
    first = pa.Table.from_pandas(head)
    pandas = json.loads(first.schema.metadata[b"pandas"])
    for index in pandas["index_columns"]:
        if isinstance(index, dict) and index.get("kind") == "range":
            index["stop"] = cast(pd.RangeIndex, frame.index).stop
    schema = first.schema.with_metadata({**first.schema.metadata, b"pandas": json.dumps(pandas).encode(), **metadata})
    with pq.ParquetWriter(path, schema, **_parquet_options(schema)) as writer:
        writer.write_table(first)
        del first
        for start in range(ROW_GROUP, len(frame), ROW_GROUP):
            part = pa.Table.from_pandas(frame.iloc[start:start + ROW_GROUP], schema=schema)
            writer.write_table(part)
            del part
            pa.default_memory_pool().release_unused()
    return True


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the index of each distinct object's first row, each row's number among them): distinct by identity, so
    the summary's shared tuples (one per distinct list of GPUs) are looked at once, not once per row."""
    ids = np.fromiter(map(id, values), dtype=np.int64, count=len(values))
    _, first, at = np.unique(ids, return_index=True, return_inverse=True)
    return first, at


def _holds_containers(column: pd.Series) -> bool:
    """Whether a column of objects holds a list, tuple or mapping (a column of text is told at C speed)."""
    if pd.api.types.infer_dtype(column, skipna=True) in ("string", "empty"):
        return False
    values = column.to_numpy()
    return any(isinstance(values[row], list | tuple | dict) for row in _distinct(values)[0])


def _as_json(values: np.ndarray) -> np.ndarray:
    first, at = _distinct(values)
    texts = np.array([json.dumps(values[row], allow_nan=True) for row in first], dtype=object)  # keys kept in order
    encoded: np.ndarray = texts[at]
    return encoded


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
    run.yaml (`config`), the times of its first and last records (`start_ts`, `end_ts`), its `warnings`, the rows
    of its per-step table (`steps`) and the facts of metrics by name (`metrics`: facts_record).
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
    matches = hashlib.sha256(text).hexdigest().encode() == digest
    if matches and _written is not None and _written[0] == digest:
        return {run_id: record for run_id, record in _written[1].items() if run_id in _written[2]}
    try:
        if not matches:
            raise ValueError("does not match its hash")
        body = json.loads(text)
        if body.get("format") != FORMAT or not isinstance(body.get("runs"), dict):
            raise ValueError("another format")
    except (ValueError, AttributeError, RecursionError) as error:
        path.unlink(missing_ok=True)
        raise ValueError(f"{VALIDATED}: {error}") from None
    # A record of another shape (a damaged or hand-edited file whose hash was recomputed) is dropped: that run is
    # validated again. The same bytes hold the same records: a process that read them before (make serve's
    # rebuilds) takes which were well formed from then.
    kept = _well_formed_in.get(digest)
    if kept is None:
        kept = _well_formed_in[digest] = frozenset(run_id for run_id, record in body["runs"].items()
                                                   if _well_formed(record))
    return {run_id: record for run_id, record in body["runs"].items() if run_id in kept}


_well_formed_in: dict[bytes, frozenset[str]] = {}  # validated.json's hash line -> its well-formed records' ids
# The file this process wrote last, by its hash line: its records as json.loads would give them (those it was
# written with from the file read before, the same objects; the others through json once each) and which of them
# are well formed. A `make serve` rebuild after a run's title changed reads the file the last one wrote: its hash
# names the same bytes, and parsing and checking a thousand records again would give what is held here.
_written: tuple[bytes, dict[str, Any], frozenset[str]] | None = None


def _well_formed(record: object) -> bool:
    return (isinstance(record, dict) and isinstance(record.get("digest"), str)
            and isinstance(record.get("config"), dict) and isinstance(record.get("warnings"), list)
            and all(isinstance(warning, str) for warning in record["warnings"])
            and all(_number(record.get(name)) for name in ("start_ts", "end_ts"))
            and _count(record.get("steps")) and record.get("facts_format") == FACTS_FORMAT
            and isinstance(record.get("metrics"), dict)
            and all(_facts_well_formed(facts) for facts in record["metrics"].values()))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def facts_record(facts: MetricFacts) -> dict[str, Any]:
    """A metric's facts as validated.json holds them."""
    return {"logged": facts.logged, "steps": facts.steps, "present": facts.present, "low": facts.low,
            "high": facts.high, "zeros": facts.zeros, "first": facts.first, "first_step": facts.first_step,
            "non_finite": dict(facts.non_finite)}


def facts_from_record(record: dict[str, Any]) -> MetricFacts:
    """facts_record's record as the facts again (read_validated checked its shape)."""
    return MetricFacts(record["logged"], record["steps"], record["present"], record["low"], record["high"],
                       record["zeros"], record["first"], record["first_step"], dict(record["non_finite"]))


def _facts_well_formed(record: object) -> bool:
    if not isinstance(record, dict) or set(record) != FACT_FIELDS:
        return False
    non_finite = record["non_finite"]
    return (isinstance(record["logged"], bool) and all(_count(record[name]) for name in ("steps", "present", "zeros"))
            and all(record[name] is None or _number(record[name]) for name in ("low", "high", "first"))
            and (record["first_step"] is None or (isinstance(record["first_step"], int)
                                                  and not isinstance(record["first_step"], bool)))
            and isinstance(non_finite, dict)
            and all(isinstance(step, str) and isinstance(marker, str) for step, marker in non_finite.items()))


FACT_FIELDS = {"logged", "steps", "present", "low", "high", "zeros", "first", "first_step", "non_finite"}


def write_validated(cache_dir: Path, runs: dict[str, dict[str, Any]],
                    read: Mapping[str, dict[str, Any]] | None = None) -> None:
    """validated.json with these records; `read`, the records read_validated gave before (those written again as
    they were are held as read, for the next reading in this process: _written)."""
    global _written
    text = json.dumps({"format": FORMAT, "runs": runs}, allow_nan=True).encode()  # each run.yaml in its own order
    digest = hashlib.sha256(text).hexdigest().encode()
    write_atomic(cache_dir / VALIDATED, digest + b"\n" + text)
    read = read or {}
    parsed = {run_id: record if record is read.get(run_id) else json.loads(json.dumps(record, allow_nan=True))
              for run_id, record in runs.items()}
    _written = digest, parsed, frozenset(run_id for run_id, record in parsed.items()
                                         if record is read.get(run_id) or _well_formed(record))


def _file_hash(path: Path) -> str:
    return content_hash(path.read_bytes()).hexdigest()


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
