"""What a figure reads of its runs, recorded while it draws, so that its cache key holds only that.

A figure's module draws from the summaries of its block's runs (readers.py's functions and the summary's own
attributes). While draw.py calls it, each summary is handed over inside a `Recording`, which notes every part the
code asks for: a table (steps, phases, events, a sampled series, a step axis), a field of run.yaml or of the facts
by its path, the keys of a mapping the code walks through, the warnings. The figure's cache entry keeps that list
(`reads`), and its key is made of the digest of each part listed (`read_digest`), with its module, its block and
what every figure draws with. A run's title is in the key of a figure that shows it, and of no other: retitling a
run in its run.yaml redraws nothing that does not show the title.

Why this is as safe as keying on the whole run: draw() is a function of what it reads (the build checks that its
figures draw the same bytes every time). While every part it read holds the value it had, it reads the same parts
again, takes the same way through its code and draws the same figure; when one of them changed, the key changed.
Anything the recording cannot name part by part (an attribute it does not know, a key that is neither text nor a
whole number) is read as the whole run: the run's input hash, the key the figure had before.

A table's digest is the one its cache entry records (the hash of its Parquet file, summary_cache), so keying a figure
decodes no table; a summary not read from the cache (an edition's build) has its tables hashed the same way, in
memory (summary_cache.frame_digest).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from build_tools.core._types import RunSummary
from build_tools.store import summary_cache

# One thing read of a run: (part, kind, *path). kind "value": the value at the path (a table, a field; of a mapping,
# only that it is one); "keys": the keys of the mapping at the path, in order (the code walked through it); "all":
# the mapping at the path, all of it (the code copied it).
Read = tuple[Any, ...]
VALUE, KEYS, ALL = "value", "keys", "all"
TABLES = ("steps", "phases", "events")  # each a table of the summary, read whole
NESTED = ("config", "facts")  # mappings the code walks down by path (run.yaml; what the summary found)
TABLE_MAPPINGS = {"series": "series/", "axes": "axis/"}  # mappings of tables, by the prefix of their cache names
WHOLE = "source_hash"  # the whole run: its input hash
PARTS = (*TABLES, *NESTED, *TABLE_MAPPINGS, "warnings", WHOLE)
ABSENT = "absent"  # what a path the run does not have reads as
MAPPING = "a mapping"  # what a path to a mapping reads as: what is read inside it is recorded on its own
# The summary's attributes that need no record: the run id is in the figure block's key (its `runs`), and
# clean_steps is a property that reads steps (recorded when it does).
UNRECORDED = {"run_id", "clean_steps"}


def recording(runs: Mapping[str, RunSummary]) -> tuple[dict[str, RunSummary], dict[str, set[Read]]]:
    """Each summary inside a Recording, and the sets its reads are noted in, by run id."""
    reads: dict[str, set[Read]] = {run_id: set() for run_id in runs}
    return {run_id: Recording(summary, reads[run_id]) for run_id, summary in runs.items()}, reads


def as_lists(reads: Mapping[str, set[Read]]) -> dict[str, list[list[Any]]]:
    """The reads as the cache entry keeps them (JSON): each run's sorted."""
    return {run_id: [list(read) for read in sorted(found, key=_order)] for run_id, found in reads.items()}


def _order(read: Read) -> str:
    return json.dumps(read)


def from_lists(value: object, run_ids: tuple[str, ...]) -> dict[str, list[Read]] | None:
    """The reads a cache entry holds, or None when they are not of the shape as_lists writes, or are not of
    exactly these runs (the entry is then redrawn: nothing of the cache is trusted unchecked)."""
    if not isinstance(value, dict) or sorted(value) != sorted(run_ids):
        return None
    found: dict[str, list[Read]] = {}
    for run_id, listed in value.items():
        if not isinstance(listed, list) or not all(_well_formed(read) for read in listed):
            return None
        found[run_id] = [tuple(read) for read in listed]
    return found


def _well_formed(read: object) -> bool:
    if not isinstance(read, list) or len(read) < 2 or read[0] not in PARTS or read[1] not in (VALUE, KEYS, ALL):
        return False
    return all(isinstance(step, str) or (isinstance(step, int) and not isinstance(step, bool)) for step in read[2:])


def read_digest(summary: RunSummary, read: Read) -> str:
    """The digest of one part a figure read, as the summary holds it now."""
    part, kind, *path = read
    if part == WHOLE:
        return summary.source_hash
    if part in TABLES:
        return table_digest(summary, part)
    if part in TABLE_MAPPINGS:
        prefix = TABLE_MAPPINGS[part]
        if kind == KEYS:
            return _digest([name.removeprefix(prefix) for name in table_names(summary) if name.startswith(prefix)])
        return table_digest(summary, prefix + str(path[0])) if len(path) == 1 else ABSENT
    if part == "warnings":
        return _digest(summary.warnings)
    node: Any = getattr(summary, part)
    for step in path:
        if not isinstance(node, Mapping) or step not in node:
            return ABSENT
        node = node[step]
    if kind == KEYS:
        return _digest(list(node)) if isinstance(node, Mapping) else ABSENT
    if kind == ALL:
        return _digest(node)
    return MAPPING if isinstance(node, Mapping) else _digest(node)


def describe(read: Read) -> str:
    """A read as a cache entry's record names it: `config flags.n_samples_per_prompt`, `series gpu_util`,
    `keys of config flags`."""
    part, kind, *path = read
    named = f"{part} {'.'.join(str(step) for step in path)}".rstrip()
    return f"keys of {named}" if kind == KEYS else f"all of {named}" if kind == ALL else named


def table_names(summary: RunSummary) -> list[str]:
    """The names of the summary's tables as its cache entry has them (summary_cache.summary_parts), in order."""
    stored = _stored(summary)
    return list(stored) if stored is not None else list(summary_cache.summary_parts(summary)[0])


def table_digest(summary: RunSummary, name: str) -> str:
    """The digest of one of the summary's tables: its cache entry's, else its Parquet encoding's, made now."""
    stored = _stored(summary)
    if stored is not None:
        return stored.get(name, ABSENT)
    frame = summary_cache.summary_parts(summary)[0].get(name)
    return ABSENT if frame is None else summary_cache.frame_digest(frame)


def _stored(summary: RunSummary) -> dict[str, str] | None:
    """The table digests a summary read from the cache carries (summary._read_cache), by table name."""
    stored = vars(summary).get(summary_cache.TABLE_DIGESTS)
    return stored if isinstance(stored, dict) else None


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(_canonical(value), allow_nan=True).encode("utf-8")).hexdigest()


def _canonical(value: Any) -> Any:
    """A value as JSON with each thing's type beside it, in its own order: two values with one canonical form are
    alike to any code reading them (a tuple is not a list, 1 is not 1.0 nor True, a mapping's order counts)."""
    if isinstance(value, Mapping):
        return ["mapping", [[_canonical(key), _canonical(item)] for key, item in value.items()]]
    if isinstance(value, list | tuple):
        return [type(value).__name__, [_canonical(item) for item in value]]
    if value is None or isinstance(value, bool | int | str):
        return [type(value).__name__, value]
    return [f"{type(value).__module__}.{type(value).__qualname__}", repr(value)]


class Recording(RunSummary):
    """A summary that notes what is read of it; otherwise the summary itself (every value is the summary's own)."""

    def __init__(self, summary: RunSummary, reads: set[Read]) -> None:  # no field of its own: it reads summary's
        object.__setattr__(self, "_summary", summary)
        object.__setattr__(self, "_reads", reads)

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__") and name != "__dict__" or name in ("_summary", "_reads"):
            return object.__getattribute__(self, name)
        summary: RunSummary = object.__getattribute__(self, "_summary")
        reads: set[Read] = object.__getattribute__(self, "_reads")
        if name == "clean_steps":
            return object.__getattribute__(self, name)  # the property, which reads steps through this
        if name in UNRECORDED:
            return getattr(summary, name)
        if name in TABLES or name == "warnings":
            reads.add((name, VALUE))
            return getattr(summary, name)
        if name in NESTED or name in TABLE_MAPPINGS:
            return RecordingMapping(getattr(summary, name), name, (), reads)
        reads.add((WHOLE, VALUE))  # anything else: the whole run
        return getattr(summary, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a figure may not change its run's summary (it set {name})")


class RecordingMapping(Mapping[Any, Any]):
    """A mapping of a summary (run.yaml, the facts, the series, the step axes) that notes each key looked up and
    each walk through its keys; a mapping inside it is handed out recording too (for run.yaml and the facts)."""

    def __init__(self, data: Mapping[Any, Any], part: str, path: tuple[Any, ...], reads: set[Read]) -> None:
        self._data, self._part, self._path, self._reads = data, part, path, reads

    def __getitem__(self, key: Any) -> Any:
        nameable = isinstance(key, str) or (isinstance(key, int) and not isinstance(key, bool))
        self._reads.add((self._part, VALUE, *self._path, key) if nameable else (WHOLE, VALUE))
        value = self._data[key]
        if nameable and self._part in NESTED and isinstance(value, Mapping):
            return RecordingMapping(value, self._part, (*self._path, key), self._reads)
        return value

    def __iter__(self) -> Iterator[Any]:
        self._reads.add((self._part, KEYS, *self._path))
        return iter(self._data)

    def __len__(self) -> int:
        self._reads.add((self._part, KEYS, *self._path))
        return len(self._data)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        """A copy (copy.deepcopy, dataclasses.asdict) reads all of it: a plain dict of its own."""
        import copy

        self._reads.add((self._part, ALL, *self._path) if self._part in NESTED else (WHOLE, VALUE))
        return copy.deepcopy(dict(self._data), memo)

    def __copy__(self) -> dict[Any, Any]:
        return self.__deepcopy__({})

    def __reduce_ex__(self, protocol: Any) -> Any:  # pickled: what is pickled is all of it
        return dict, (self.__deepcopy__({}),)
