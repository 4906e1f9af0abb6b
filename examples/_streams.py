"""Writers: every file goes through here so that bytes are the same on every regeneration."""

from __future__ import annotations

import gzip
import io
import json
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml


def dumps(record: dict[str, Any]) -> str:
    """One compact JSON line, as Miles writes its dump."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def write_bytes(path: Path, data: bytes) -> None:
    """Write data, gzip-compressed when the name ends in .gz (no name, no mtime: stable bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
            gz.write(data)
        data = buf.getvalue()
    path.write_bytes(data)


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """JSON Lines, every line ending in a newline (a complete line, by the loader's rule)."""
    write_bytes(path, "".join(dumps(r) + "\n" for r in records).encode())


def write_meta(path: Path, meta: dict[str, Any]) -> None:
    """meta.json as Miles writes it: indented by one space, no final newline."""
    write_bytes(path, json.dumps(meta, indent=1, ensure_ascii=False).encode())


def write_yaml(path: Path, data: dict[str, Any]) -> None:
    """run.yaml in the key order of the dict (built in a fixed order)."""
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=110)
    write_bytes(path, text.encode())


def hour_key(ts: float) -> str:
    """The UTC hour partition of a time, YYYYMMDD_HH."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y%m%d_%H")


def write_hourly(folder: Path, rows: Iterable[tuple[float, dict[str, Any]]], gz: bool) -> None:
    """Split (hour time, record) rows into hourly files; rows keep their given order."""
    parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for ts, record in rows:
        parts[hour_key(ts)].append(record)
    suffix = ".jsonl.gz" if gz else ".jsonl"
    for key in sorted(parts):
        write_jsonl(folder / f"{key}{suffix}", parts[key])
