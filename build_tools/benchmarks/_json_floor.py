"""The floor of `make bench SCALE=...`'s cold check: pyarrow's JSON reader parsing every metrics and phases file of
the scaled set, nothing else (no checks, no hashing, no summary), on one process a core, as the check's pool reads
the runs. Each run's stream is parsed as the loader batches it (its files' bytes joined, up to
_columnar.BATCH_BYTES a parse: an hour's file of phases is a few kB, and a parser set up for each would measure
the set-up), so the floor is what the check cannot do without: read the same bytes and parse them once. Run by
`main` in a fresh process, timed like the measurements it is the floor of (bench_scale.py); it prints how many
files and rows it parsed.
"""

from __future__ import annotations

import gzip
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from build_tools.core import _workers

# The streams the cold check parses as columns in every scaled run (its telemetry run adds sampled streams).
STREAMS = ("metrics", "phases")
# As _columnar.BATCH_BYTES (not imported: this process imports pyarrow's JSON reader and nothing else).
BATCH_BYTES = 4 * 1024 * 1024


def stream_files(folder: Path) -> list[Path]:
    """Every metrics and phases file (plain or gzip, flat or hourly) of every run folder in folder."""
    return [path for files in run_streams(folder) for path in files]


def run_streams(folder: Path) -> list[list[Path]]:
    """The files of each run's metrics and of its phases, a list a stream, in the order the loader reads them."""
    found = []
    for run in sorted(folder.iterdir()):
        dashboard = run / "dashboard"
        for stream in STREAMS:
            flat = sorted(dashboard.glob(f"{stream}.jsonl*"))
            hourly = sorted((dashboard / stream).glob("*.jsonl*"))  # none when there is no such folder
            if flat or hourly:
                found.append([*flat, *hourly])
    return found


def parse(files: list[Path]) -> int:
    """One stream's files read and parsed, their bytes joined up to BATCH_BYTES a parse; its rows."""
    import pyarrow as pa
    import pyarrow.json as pajson

    options = pajson.ReadOptions(block_size=1 << 22, use_threads=False)
    rows, pending, size = 0, [], 0
    for path in [*files, None]:
        if path is not None:
            data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
            pending.append(data if data.endswith(b"\n") or not data else data + b"\n")
            size += len(pending[-1])
        if pending and (path is None or size >= BATCH_BYTES):
            rows += pajson.read_json(pa.BufferReader(b"".join(pending)), read_options=options).num_rows
            pending, size = [], 0
    return rows


def parse_all(folder: Path, workers: int | None = None) -> tuple[int, int]:
    """Every stream of folder parsed on `workers` processes (default: one a core); the files and rows."""
    streams = sorted(run_streams(folder), key=lambda files: -sum(path.stat().st_size for path in files))
    count = max(1, min(workers or os.cpu_count() or 1, len(streams)))
    files = sum(len(stream) for stream in streams)
    if count == 1:
        return files, sum(parse(stream) for stream in streams)
    with ProcessPoolExecutor(count, mp_context=_workers.context(["pyarrow.json"])) as pool:
        rows = sum(pool.map(parse, streams, chunksize=max(1, len(streams) // (count * 8))))
    return files, rows


def main(folder: str) -> int:
    """Parse every stream file of folder and say how much (bench_scale.floor_command runs it in a fresh process)."""
    files, rows = parse_all(Path(folder))
    print(f"parsed {files} files, {rows} rows")
    return 0
