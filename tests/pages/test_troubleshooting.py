"""build_tools/pages/troubleshooting.py: the troubleshooting table comes from docs/data/troubleshooting.yml."""

from __future__ import annotations

from build_tools.pages.troubleshooting import troubleshooting_table
from tests.conftest import ROOT


def test_troubleshooting_table_comes_from_the_data():
    import yaml

    data = yaml.safe_load((ROOT / "docs" / "data" / "troubleshooting.yml").read_text(encoding="utf-8"))
    table = troubleshooting_table({"troubleshooting": data})
    rows = table.splitlines()
    assert rows[0] == "| Symptom | First check | Fix |"
    assert len(rows) == 2 + len(data["symptoms"]) == 7
    assert "| Launch with `--use-fault-tolerance` so the watchdog ends a job whose engine died |" in table
    assert "Read MemTotal - MemAvailable from `/proc/meminfo` against" in table  # words and code stay apart
