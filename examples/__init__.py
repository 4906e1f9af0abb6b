"""Synthesized example runs: a seeded, deterministic model of Miles GRPO runs on one DGX Spark.

`python -m examples OUTDIR` (from the project root; `make examples` writes runs/) writes every run into
OUTDIR/<run-id>; regenerating gives byte-identical files. The runs are examples, not measurements: run.yaml
says `provenance: example`. The generator is a tool beside the manual, not part of its build: nothing in
build_tools/ imports it but `make bench`. What each run was is `_runs.py`; the numbers the runs must hit,
each with the caption or Metrics row that needs it, are `targets.py`; the Miles build is edition.yml's.
"""

from __future__ import annotations

from pathlib import Path

from . import _miles_dump
from ._build import prepare_all
from ._output import miles, write_run
from ._runs import RUNS


def build_all(outdir: Path) -> list[str]:
    """Write all example runs into outdir, replacing the run directories this generator owns."""
    miles()  # edition.yml is read first: a bad one stops the generator before any run is replaced
    outdir.mkdir(parents=True, exist_ok=True)
    runs = prepare_all()
    jobs = [write_run(runs[spec.run_id], outdir) for spec in RUNS]
    _miles_dump.write(jobs)  # every dashboard dump, by Miles' own writer
    return [spec.run_id for spec in RUNS]
