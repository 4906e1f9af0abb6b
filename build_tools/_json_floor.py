"""The floor of `make bench SCALE=...`'s cold check: pyarrow's JSON reader parsing every metrics and phases file of
the scaled set, nothing else (no checks, no hashing, no summary), on one process a core, as the check's pool reads
the runs. Run by `main` in a fresh process, timed like the measurements it is the floor of (bench_scale.py); it prints
how many files and rows it parsed.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from . import _workers

# The streams the cold check parses as columns in every scaled run (its telemetry run adds sampled streams).
STREAMS = ("metrics", "phases")


def stream_files(folder: Path) -> list[Path]:
    """Every metrics and phases file (plain or gzip, flat or hourly) of every run folder in folder, largest first
    (the last ones handed out are then small, and the processes end together)."""
    found = [path for run in sorted(folder.iterdir()) if (run / "dashboard").is_dir()
             for path in sorted((run / "dashboard").rglob("*.jsonl*"))
             if path.is_file() and (path.name.split(".")[0] in STREAMS or path.parent.name in STREAMS)]
    return sorted(found, key=lambda path: path.stat().st_size, reverse=True)


def parse(path: Path) -> int:
    """One file parsed as a table (a .gz file unpacked by pyarrow on the way); its rows."""
    import pyarrow.json as pajson

    return int(pajson.read_json(path, read_options=pajson.ReadOptions(use_threads=False)).num_rows)


def parse_all(folder: Path, workers: int | None = None) -> tuple[int, int]:
    """Every stream file of folder parsed on `workers` processes (default: one a core); the files and rows."""
    files = stream_files(folder)
    count = max(1, min(workers or os.cpu_count() or 1, len(files)))
    if count == 1:
        return len(files), sum(parse(path) for path in files)
    with ProcessPoolExecutor(count, mp_context=_workers.context(["pyarrow.json"])) as pool:
        rows = sum(pool.map(parse, files, chunksize=max(1, len(files) // (count * 8))))
    return len(files), rows


def main(folder: str) -> int:
    """Parse every stream file of folder and say how much (bench_scale.floor_command runs it in a fresh process)."""
    files, rows = parse_all(Path(folder))
    print(f"parsed {files} files, {rows} rows")
    return 0
