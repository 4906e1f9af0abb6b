"""CLI: python -m examples OUTDIR (from the project root)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from build_tools.core._exceptions import ManualError

from . import build_all


def main(argv: list[str] | None = None) -> int:
    """Write the example runs into OUTDIR."""
    parser = argparse.ArgumentParser(prog="python -m examples", description=__doc__)
    parser.add_argument("outdir", type=Path, help="where to write the runs (e.g. runs)")
    args = parser.parse_args(argv)
    try:
        written = build_all(args.outdir)
    except ManualError as error:  # edition.yml unreadable: one line, as the build says it
        print(f"ERROR {error}", file=sys.stderr)
        return error.exit_code
    for run_id in written:
        print(f"wrote {args.outdir / run_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
