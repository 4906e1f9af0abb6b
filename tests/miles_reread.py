"""Miles' own dashboard store reads a dump and writes every record of it again (tests only): run as
`python -I -B tests/miles_reread.py DUMP OUT` in a process of its own, Miles' pinned code with the inert stand-ins.

MetricStore.load parses each line into Miles' record class (a line of another shape is refused there), and
append + write_meta + flush write them back as Miles writes them: equal bytes mean the dump is, record for record,
what Miles' writer produces from the same records."""

from __future__ import annotations

import importlib
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # -I leaves the script's folder off the path

from build_tools.miles_code import UPSTREAM, stand_ins  # noqa: E402


def main(dump: Path, out: Path) -> int:
    stand_ins.install(UPSTREAM)
    store_module = importlib.import_module("miles.dashboard.store")  # Miles' own, from upstream/
    Meta, MetricStore, Stream = store_module.Meta, store_module.MetricStore, store_module.Stream  # noqa: N806

    store = MetricStore.load(dump)
    again = MetricStore(out)
    assert store.meta is not None, f"{dump}: no meta.json"
    again.write_meta(Meta(**asdict(store.meta)))
    for stream in (Stream.METRICS, Stream.TOPOLOGY, Stream.DATA_BUFFER):
        for record in store.records[stream]:
            again.append(record)
    for event in store.phase_events():
        again.append(event)
    again.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
