"""Synthesized example runs: a seeded, deterministic model of Miles GRPO runs on one DGX Spark.

`python -m build_tools.examples OUTDIR` writes every run into OUTDIR/<run-id>; regenerating gives
byte-identical files. The runs are examples, not measurements: run.yaml says `provenance: example`.
"""

from __future__ import annotations

from pathlib import Path

from ._build import prepare_all
from ._output import write_run
from ._runs import RUNS


def build_all(outdir: Path) -> list[str]:
    """Write all example runs into outdir, replacing the run directories this generator owns."""
    outdir.mkdir(parents=True, exist_ok=True)
    runs = prepare_all()
    for spec in RUNS:
        write_run(runs[spec.run_id], outdir)
    return [spec.run_id for spec in RUNS]
