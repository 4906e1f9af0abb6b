"""TensorBoard event files (`tensorboard/`: `events.out.tfevents.*`, plain or gzipped), read with TensorBoard's
own event reader (never a home-made protobuf parser).

Miles writes every logged key with `add_scalar(key, value, step)`, the step being the value of the key's step
key (miles/utils/tracking_utils/tensorboard_utils.py). A scalar is a 32-bit float: its text, for the agreement
check, is the shortest text that reads back as that float32.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from .._exceptions import Problem, display_path
from ._common import STEP_KEYS, Found, MetricRecord, read_bytes, step_key_of


def read(files: list[Path], problems: list[Problem], warnings: list[str]) -> Found:
    found = Found("tensorboard")
    for path in files:
        where = display_path(path)
        found.files.append(where)
        unpacked = read_bytes(path, problems) if path.name.endswith(".gz") else None
        if path.name.endswith(".gz") and unpacked is None:
            continue  # truncated, corrupt or too large: the problem names it
        try:
            _read_file(path, where, found, warnings, unpacked)
        except Exception as err:  # noqa: BLE001 - a damaged file is a problem to report, never a crash
            problems.append(Problem(where, None, None, f"not a readable TensorBoard event file: {err}"))
    return found


def _read_file(path: Path, where: str, found: Found, warnings: list[str], unpacked: bytes | None) -> None:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    with tempfile.TemporaryDirectory() as tmp:
        source = path
        if unpacked is not None:  # TensorBoard's reader takes a file: the unpacked bytes of a .gz go to one
            source = Path(tmp) / path.name.removesuffix(".gz")
            source.write_bytes(unpacked)
        for index, event in enumerate(EventFileLoader(str(source)).Load(), start=1):
            if not event.HasField("summary"):
                continue
            found.saw_time(float(event.wall_time))
            for item in event.summary.value:
                key = item.tag
                step_key = None if key in STEP_KEYS else step_key_of(key)
                if step_key is None:
                    continue
                kind = item.WhichOneof("value")
                if kind == "simple_value":
                    number = float(item.simple_value)
                    text = repr(float(str(np.float32(item.simple_value))))  # the float32's shortest text
                elif kind == "tensor":
                    array = tensor_util.make_ndarray(item.tensor)
                    if array.size != 1:
                        continue
                    scalar = array.reshape(()).item()
                    number = float(scalar)
                    text = repr(float(str(array.reshape(())))) if array.dtype.kind == "f" else str(scalar)
                else:
                    continue
                data = {"ts": float(event.wall_time), "step_key": step_key, "step": int(event.step),
                        "metrics": {key: number}}
                # An event file has no lines: the event's position in the file stands for one.
                found.add("metrics", MetricRecord(data, where, index, {key: text}))
