"""`manual record RUN_FOLDER`: record beside a Miles job what Miles does not, as the run's `lab/` streams.

Every second: host memory from /proc/meminfo (MemTotal, MemAvailable: the numbers Ray's memory monitor reads)
into `lab/host_memory/`, and each GPU's temperature, utilisation and power from `nvidia-smi` into
`lab/gpu_temp/`. Like Miles' dashboard writer, streams are append-only JSON Lines split into hourly files
(`{stream}/{YYYYMMDD_HH}.jsonl`, UTC) and only complete lines are written, every few seconds, so a kill loses
at most the last flush interval. SIGINT and SIGTERM stop it cleanly (a last flush). When nvidia-smi fails, it
says so once, quoting nvidia-smi's own message, and goes on recording host memory; a GPU whose temperature
it reports as "[N/A]" is a warning, its samples left out and counted. `--until-exit PID` stops it when that
process ends and records the job's end in `lab/events.jsonl`.

What it writes, the next `make check` accepts: each record is checked against the lab schema (the loader's own
rules, build_tools/ingest/schemas_dump.py) before it is written, and an impossible reading (NaN, infinite, out of range,
more memory available than there is) is recorded as missing, null where the schema allows, else the sample
left out, counted in the closing summary. A half line a killed recorder left at the end of a file is dropped
(with a warning) before the next append, so every record starts on a line of its own.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from build_tools.core._escape import terminal_text
from build_tools.core._exceptions import Problem, cannot_record, display_path
from build_tools.core._staging import process_alive
from build_tools.ingest import schemas_dump

GPU_QUERY = ("--query-gpu=index,temperature.gpu,utilization.gpu,power.draw", "--format=csv,noheader,nounits")


@dataclass
class Recorder:
    out: Path  # the run folder; streams go to out/lab/
    meminfo: Path = Path("/proc/meminfo")
    nvidia_smi: str = "nvidia-smi"
    interval: float = 1.0
    flush_every: float = 5.0
    until_exit: int | None = None
    samples: int | None = None  # stop after this many samples (for tests and short checks)
    say: Callable[[str], None] = field(default=lambda text: print(terminal_text(text), file=sys.stderr, flush=True))
    clock: Callable[[], float] = time.time  # the time of each sample (a test fixes it)
    stop: threading.Event = field(default_factory=threading.Event)
    _pending: dict[Path, list[str]] = field(default_factory=dict)
    _gpu_failed: bool = False
    _missing: Counter[str] = field(default_factory=Counter)  # "stream.field" -> impossible readings
    _unreported: Counter[str] = field(default_factory=Counter)  # "gpu_temp.temp_c of GPU n" -> samples left out

    def run(self) -> int:
        lab = self.out / "lab"
        with _writing(lab):
            lab.mkdir(parents=True, exist_ok=True)
        self.say(f"recording host memory and GPUs into {lab} every {self.interval:g} s (Ctrl-C stops)")
        last_flush, taken = time.monotonic(), 0
        try:
            while not self.stop.is_set():
                ts = self.clock()
                self.sample(ts)
                taken += 1
                if self.until_exit is not None and not process_alive(self.until_exit):
                    self._append(lab / "events.jsonl", "events",
                                 {"kind": "job_end", "t0": ts, "t1": ts,
                                  "detail": f"process {self.until_exit} ended (manual record --until-exit)"})
                    self.say(f"process {self.until_exit} ended: recorded job_end, stopping")
                    break
                if self.samples is not None and taken >= self.samples:
                    break
                if time.monotonic() - last_flush >= self.flush_every:
                    self.flush()
                    last_flush = time.monotonic()
                self.stop.wait(min(max(0.0, self.interval - (self.clock() - ts)), threading.TIMEOUT_MAX))
        finally:
            self.flush()
        self.say(f"stopped after {taken} samples{self._missing_summary()}")
        return 0

    def _missing_summary(self) -> str:
        """'; 3 impossible readings recorded as missing (gpu_temp.power_w 2, ...)', the samples left out for want
        of a temperature, or nothing."""
        said = ""
        if total := sum(self._missing.values()):
            counts = ", ".join(f"{name} {count}" for name, count in sorted(self._missing.items()))
            said += f"; {total} impossible reading{'s' if total != 1 else ''} recorded as missing ({counts})"
        if total := sum(self._unreported.values()):
            counts = ", ".join(f"{name.removeprefix('gpu_temp.temp_c of ')} {count}"
                               for name, count in sorted(self._unreported.items()))
            said += f"; {total} GPU sample{'s' if total != 1 else ''} without a temperature left out ({counts})"
        return said

    def sample(self, ts: float) -> None:
        lab = self.out / "lab"
        hour = dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y%m%d_%H")
        memory = read_meminfo(self.meminfo)
        if memory is not None:
            self._append(lab / "host_memory" / f"{hour}.jsonl", "host_memory", {"ts": ts, **memory})
        for gpu in self.query_gpus():
            self._append(lab / "gpu_temp" / f"{hour}.jsonl", "gpu_temp", {"ts": ts, **gpu})

    def query_gpus(self) -> list[dict[str, Any]]:
        try:
            result = subprocess.run([self.nvidia_smi, *GPU_QUERY], capture_output=True, text=True, timeout=5,
                                    check=False)
            if result.returncode != 0:
                raise OSError(_failure(result))
            gpus = [_gpu_line(line) for line in result.stdout.splitlines() if line.strip()]
        except (OSError, subprocess.TimeoutExpired, ValueError) as err:
            if not self._gpu_failed:
                self.say(f"the GPU query ({self.nvidia_smi}) failed: {err}; recording host memory only")
                self._gpu_failed = True
            return []
        for gpu in gpus:
            if gpu["temp_c"] is None:
                self._no_temperature(gpu)
        return [gpu for gpu in gpus if gpu["temp_c"] is not None]

    def _no_temperature(self, gpu: dict[str, Any]) -> None:
        """A GPU whose temperature nvidia-smi does not report ("[N/A]"): its sample is left out, said once per GPU
        and counted in the closing summary (temp_c is what gpu_temp records)."""
        name = f"gpu_temp.temp_c of GPU {gpu['gpu']}"
        if not self._unreported[name]:
            self.say(f"WARNING {name}: nvidia-smi reports {gpu['temp_text']!r}, not a temperature; the sample is left "
                     "out (the closing summary counts every one)")
        self._unreported[name] += 1

    def _append(self, path: Path, stream: str, record: dict[str, Any]) -> None:
        kept = self._checked(stream, record)
        if kept is not None:
            self._pending.setdefault(path, []).append(json.dumps(kept, separators=(",", ":")) + "\n")

    def _checked(self, stream: str, record: dict[str, Any]) -> dict[str, Any] | None:
        """The record as the loader will accept it: each impossible reading null where the lab schema allows
        one, else the whole sample left out (None); every one counted, the first of each field said."""
        problems = schemas_dump.validate_record(stream, record, stream, 0)[1]
        if not problems:
            return record
        for problem in problems:
            self._impossible(stream, problem)
        nulled = {**record, **{p.field: None for p in problems if p.field in record}}
        return None if schemas_dump.validate_record(stream, nulled, stream, 0)[1] else nulled

    def _impossible(self, stream: str, problem: Problem) -> None:
        name = f"{stream}.{problem.field or 'record'}"
        if not self._missing[name]:
            self.say(f"WARNING {name}: recorded as missing, an impossible reading ({problem.message}); the closing "
                     "summary counts every one")
        self._missing[name] += 1

    def flush(self) -> None:
        """Append every pending line, whole lines only, in one write per file, each starting a line."""
        pending, self._pending = self._pending, {}
        for path, lines in pending.items():
            if lines:
                with _writing(path):
                    path.parent.mkdir(parents=True, exist_ok=True)
                    with path.open("a+b") as handle:
                        self._drop_half_line(handle, path)
                        _write(handle, "".join(lines).encode("utf-8"))

    def _drop_half_line(self, handle: BinaryIO, path: Path) -> None:
        """A last line without its newline (a recorder killed mid-write) is cut off: an append onto it would
        make one line of two records, which the loader refuses."""
        size = handle.seek(0, os.SEEK_END)
        keep = _after_last_newline(handle, size)
        if keep == size:
            return
        handle.seek(keep)
        dropped = handle.read(min(size - keep, 40))
        handle.truncate(keep)
        shown = repr(dropped.decode("utf-8", errors="replace")) + ("..." if size - keep > 40 else "")
        self.say(f"WARNING {display_path(path)}: dropped its last {size - keep} bytes, a half line a killed "
                 f"recorder left ({shown}); recording goes on from a fresh line")


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """A stream that cannot be written (the run folder a file, a read-only or full disk) is one line, exit 2."""
    try:
        yield
    except OSError as error:
        where = display_path(os.fsdecode(error.filename)) if error.filename else display_path(path)
        raise cannot_record(where, error.strerror or type(error).__name__) from None


def _after_last_newline(handle: BinaryIO, size: int, block: int = 65536) -> int:
    """The offset just after the file's last newline (0 when it has none); size when it ends with one."""
    end = size
    while end > 0:
        start = max(0, end - block)
        handle.seek(start)
        found = handle.read(end - start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def _write(handle: BinaryIO, data: bytes) -> None:
    handle.write(data)
    handle.flush()
    os.fsync(handle.fileno())


def read_meminfo(path: Path) -> dict[str, int] | None:
    """MemTotal and MemAvailable in KiB, as /proc/meminfo prints them ("MemTotal:  127535876 kB")."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in ("MemTotal", "MemAvailable") and rest.split() and rest.split()[0].isdigit():
            values[name] = int(rest.split()[0])
    if len(values) != 2:
        return None
    return {"total_kib": values["MemTotal"], "available_kib": values["MemAvailable"]}


def _failure(result: subprocess.CompletedProcess[str]) -> str:
    """What a failing nvidia-smi said: it prints its own errors ("Failed to initialize NVML: Driver/library version
    mismatch") on standard output, others on standard error; every line of both, and the exit status."""
    said = [line.strip() for line in (result.stderr + "\n" + result.stdout).splitlines() if line.strip()]
    return f"{'; '.join(said)} (exit status {result.returncode})" if said else f"exit status {result.returncode}"


def _gpu_line(line: str) -> dict[str, Any]:
    """One line of `nvidia-smi --query-gpu=index,temperature.gpu,utilization.gpu,power.draw`; "[N/A]" is None (a
    missing temperature keeps its text, temp_text, for the warning; the caller leaves that sample out)."""
    cells = [cell.strip() for cell in line.split(",")]
    if len(cells) != 4:
        raise ValueError(f"unexpected line {line!r}")

    def number(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:
            return None  # "[N/A]", "[Not Supported]"

    temp = number(cells[1])
    if temp is None:
        return {"gpu": int(cells[0]), "temp_c": None, "temp_text": cells[1]}
    return {"gpu": int(cells[0]), "temp_c": temp, "util": number(cells[2]), "power_w": number(cells[3])}


def main(recorder: Recorder) -> int:
    def stop(signum: int, _frame: Any) -> None:
        recorder.say(f"got {signal.Signals(signum).name}: flushing and stopping")
        recorder.stop.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    return recorder.run()
