"""TensorBoard event files (`tensorboard/`: `events.out.tfevents.*`, plain or gzipped), each event parsed by
TensorBoard's own protobuf classes (never a home-made protobuf parser).

The file is a TFRecord stream: each record is its length (8 bytes, little-endian), the masked CRC-32C of the
length, the event, and the masked CRC-32C of the event. TensorBoard's own loader stops quietly at a record that
fails its check, so the framing is read here, with TensorBoard's CRC: a file that ends early or fails a check
is a warning naming it and how many records were read before, never a silent loss.

Miles writes every logged key with `add_scalar(key, value, step)`, the step being the value of the key's step
key (miles/utils/tracking_utils/tensorboard_utils.py). A scalar is a 32-bit float, read as the float64 of that
float32 exactly (its text the shortest that reads back as it, 0.5299999713897705 for 0.53): it agrees with
another source within half a float32 ulp of its value (the most the float64 Miles logged can lie from it), and
where another source holds the float64, that one is kept.

torch's SummaryWriter keeps a tag as written; tensorboardX's replaces each character outside `[-/\\w.]` by `_`
(`tensorboardX/summary.py`, `_clean_tag`): `passrate/pass@1` is written `passrate/pass_1`, and read back as the
key Miles logged (`_common.logged_key`), so a log and tensorboardX's files of one job give it once.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from build_tools.core._exceptions import Problem, display_path
from build_tools.ingest.sources._common import (
    STEP_KEYS,
    Found,
    MetricRecord,
    checked,
    float32_unit,
    logged_key,
    read_bytes,
    step_key_of,
    written,
)

# tensorboardX's _clean_tag (tensorboardX/summary.py, 2.6.5): what it replaces by `_`, then leading `/` dropped.
_TENSORBOARDX_INVALID = re.compile(r"[^-/\w\.]")


def tensorboardx_clean(key: str) -> str:
    return _TENSORBOARDX_INVALID.sub("_", key).lstrip("/")


class Damaged(Exception):
    """Where reading a TFRecord stream stopped: after how many whole records, and why."""

    def __init__(self, records: int, why: str) -> None:
        super().__init__(why)
        self.records, self.why = records, why


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("tensorboard", unit="record")
    for path in files:
        data = read_bytes(path, problems)  # gunzipped, size-limited
        if data is None:
            continue  # truncated, corrupt or too large: the problem names it
        where = display_path(path)
        found.read_file(where, not data)
        try:
            _read_events(data, where, found, warnings)
        except Damaged as damage:
            warnings.append(f"{where}: not a TensorBoard event file ({damage.why} at its first record); nothing read"
                            if not damage.records else f"{where}: {damage.why} after {damage.records} whole "
                            "record(s); only those are read (a file cut off or damaged)")
    problems += _two_jobs(found)
    return checked(found, problems, warnings)


def _two_jobs(found: Found) -> list[Problem]:
    """One problem per pair of event files that both hold a key at one step: Miles' writer opens one file per job,
    so the folder holds two jobs' files (a reused --tensorboard-dir), and which value is the run's cannot be told."""
    first: dict[tuple[str, str, int], tuple[str, int]] = {}
    clashes: dict[tuple[str, str], tuple[str, str, int, int]] = {}
    for record in found.streams.get("metrics", []):
        data = record.data
        for key in data["metrics"]:
            place = (key, data["step_key"], data["step"])
            seen = first.setdefault(place, (record.file, record.line))
            if seen[0] != record.file:
                clashes.setdefault((seen[0], record.file), (key, data["step_key"], data["step"], seen[1]))
    return [Problem(later, None, None, f"holds {key} at {step_key} {step}, as {earlier} does (record {line}): two "
                    "jobs wrote into one TensorBoard folder, and which value is this run's cannot be told; give each "
                    "job its own --tensorboard-dir and copy only this job's event file")
            for (earlier, later), (key, step_key, step, line) in clashes.items()]


def records(data: bytes) -> Iterator[bytes]:
    """The payload of each record of a TFRecord stream; Damaged where the stream ends early or fails a check."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    offset = count = 0
    while offset < len(data):
        header = data[offset:offset + 12]
        if len(header) < 12:
            raise Damaged(count, "ends inside a record's length")
        (length,) = struct.unpack("<Q", header[:8])
        if struct.unpack("<I", header[8:])[0] != masked_crc32c(header[:8]):
            raise Damaged(count, "a record's length fails its CRC check")
        body = data[offset + 12:offset + 12 + length + 4]
        if len(body) < length + 4:
            raise Damaged(count, "ends inside a record")
        if struct.unpack("<I", body[length:])[0] != masked_crc32c(body[:length]):
            raise Damaged(count, "a record fails its CRC check")
        yield body[:length]
        offset += 12 + length + 4
        count += 1


def _read_events(data: bytes, where: str, found: Found, warnings: list[str]) -> None:
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
    from tensorboard.compat.proto.event_pb2 import Event

    keys: dict[str, str] = {}  # tag -> the key Miles logged, worked out once per file (its warning once)
    for index, payload in enumerate(records(data), start=1):
        try:
            event = Event.FromString(payload)
        except DecodeError:
            raise Damaged(index - 1, "a record that is not a TensorBoard event") from None
        if event.HasField("summary"):
            _read_event(event, where, index, found, keys, warnings)


def _read_event(event: Any, where: str, index: int, found: Found, keys: dict[str, str], warnings: list[str]) -> None:
    ts = written(float(event.wall_time))  # a NaN wall time is written, not missing: the schema refuses it
    found.saw_time(ts)
    for item in event.summary.value:
        if item.tag not in keys:
            keys[item.tag] = logged_key(item.tag, tensorboardx_clean, warnings, where, "tensorboardX")
        key = keys[item.tag]
        step_key = None if key in STEP_KEYS else step_key_of(key)
        scalar = _scalar(item)
        if scalar is None or step_key is None:
            if scalar is not None and key not in STEP_KEYS:
                found.unplaced_key(where, key)
            continue
        data = {"ts": ts, "step_key": step_key, "step": int(event.step), "metrics": {key: scalar[0]}}
        units = {} if scalar[2] is None else {key: scalar[2]}
        # An event file has no lines: the event's position in the file stands for one.
        found.add("metrics", MetricRecord(data, where, index, {key: scalar[1]}, {"ts": "wall_time"}, units))


def _scalar(item: Any) -> tuple[float, str, float | None] | None:
    """A summary value's number, its text and half the unit it is stored with (None for a float64 or a whole
    number), or None for what is not one number (an image, a histogram)."""
    from tensorboard.util import tensor_util

    kind = item.WhichOneof("value")
    if kind == "simple_value":
        number = float(item.simple_value)
        return written(number), repr(number), float32_unit(number)
    if kind != "tensor":
        return None
    try:
        array = tensor_util.make_ndarray(item.tensor)
    except (TypeError, ValueError):
        return None
    if array.size != 1 or array.dtype.kind not in "biuf":
        return None
    value = array.reshape(()).item()
    text = repr(float(value)) if array.dtype.kind == "f" else str(value)
    lossy = array.dtype.kind == "f" and array.dtype.itemsize < 8 and math.isfinite(value)
    unit = float(np.spacing(np.abs(array.reshape(())))) / 2 if lossy else None
    return written(float(value)), text, unit
