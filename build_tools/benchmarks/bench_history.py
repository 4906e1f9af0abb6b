"""The benchmarks' history: every `make bench` appends one line to bench/history.jsonl, with the machine, its load
and the commit measured, so that results are data to compare rather than a diary kept by hand in a document."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from build_tools.store import fingerprint

HISTORY = Path("bench") / "history.jsonl"  # under the project's root; one JSON object a line, appended


def machine() -> dict[str, Any]:
    """What the numbers depend on besides the code: the processor, its cores and memory, the system, and the
    versions of Python and the libraries (the fingerprint's one list)."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:  # not Linux
        model = platform.processor()
    pages = os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(pages * os.sysconf("SC_PAGE_SIZE") / 2**30, 1),
            "system": f"{platform.system()} {platform.release()}", "tools": fingerprint.tool_versions()}


def commit(root: Path) -> str:
    """The commit measured, `+` when the work tree differs from it; "" outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def append(root: Path, bench: str, load_before: float, load_after: float, results: dict[str, Any],
           when: dt.datetime | None = None) -> Path:
    """Add one measurement to the history (the file and its folder are made on first use); returns its path."""
    record = {"date": (when or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"), "bench": bench,
              "commit": commit(root), "machine": machine(),
              "load_average": {"before": round(load_before, 2), "after": round(load_after, 2)}, "results": results}
    path = root / HISTORY
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as history:
        history.write(json.dumps(record, sort_keys=True) + "\n")
    return path


def users_environment() -> dict[str, str]:
    """This environment as a user's make has it: without PYTHONDONTWRITEBYTECODE (which some sandboxes and CI
    images set), so that a build caches the build's compiled code as a user's does, not compiling it anew each
    time (about 0.05 s of every no-op)."""
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
