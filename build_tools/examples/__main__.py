"""CLI: python -m build_tools.examples OUTDIR."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import build_all


def main(argv: list[str] | None = None) -> int:
    """Write the example runs into OUTDIR."""
    parser = argparse.ArgumentParser(prog="python -m build_tools.examples", description=__doc__)
    parser.add_argument("outdir", type=Path, help="where to write the runs (e.g. runs)")
    args = parser.parse_args(argv)
    for run_id in build_all(args.outdir):
        print(f"wrote {args.outdir / run_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
