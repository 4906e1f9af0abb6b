"""A run's summary as bytes: one Parquet file per table and a JSON body, as the summary cache stores it.

This is what a Ray task (`_ray.py`) sends back to the driver: data only (no pickle of pandas objects), in
the cache's own table format (`summary_cache`), so a summary that crossed the wire is the summary a warm
cache would give.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa

from build_tools.core._types import RunSummary

from . import summary_cache

# (tables by name: "steps", "phases", "events", "series/<stream>" -> Parquet bytes; the JSON body)
Encoded = tuple[dict[str, bytes], str]


def encode(summary: RunSummary) -> Encoded:
    frames, body = summary_cache.summary_parts(summary)
    tables = {}
    for name, frame in frames.items():
        buffer = io.BytesIO()
        summary_cache._write_frame(frame, buffer)  # pyarrow writes to any file
        tables[name] = buffer.getvalue()
    return tables, json.dumps(body, allow_nan=True)  # keys in the summary's order, as the cache keeps them


def decode(encoded: Encoded) -> RunSummary:
    tables, text = encoded
    frames = {name: summary_cache._read_frame(pa.BufferReader(data))
              for name, data in tables.items()}
    body: dict[str, Any] = json.loads(text)
    return RunSummary(body["run_id"], body["config"], frames["steps"], frames["phases"], frames["events"],
                      summary_cache.series_of(frames), facts=summary_cache.facts_of(body),
                      warnings=list(body["warnings"]), axes=summary_cache.axes_of(frames))
