"""site/contract.odcs.json: the contract's ranges as an Open Data Contract Standard document, read by the standard's
own pydantic model and schema, and its SQL quality rules run on every example run give the contract's verdicts."""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
from importlib.resources import files
from pathlib import Path

import jsonschema
from open_data_contract_standard.model import OpenDataContractStandard

from tests import contract_reader


def test_the_odcs_export_is_a_document_the_standard_reads(built_manual: Path) -> None:
    document = json.loads((built_manual / "site" / "contract.odcs.json").read_text(encoding="utf-8"))
    schema = json.loads(files("open_data_contract_standard").joinpath("schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(document, schema)  # the standard's published JSON Schema
    model = OpenDataContractStandard.model_validate(document)  # and its own model
    assert model.apiVersion == "v3.1.0" and model.schema_ is not None
    contract = json.loads((built_manual / "site" / "contract.json").read_text(encoding="utf-8"))
    properties = model.schema_[0].properties or []
    assert [p.name for p in properties][2:] == [item["id"] for item in contract["ranges"]]


class Median:
    """MEDIAN, as the engines datacontract-cli runs (DuckDB, Spark, Snowflake) have it; SQLite has none."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def step(self, value: float | None) -> None:
        if value is not None:
            self.values.append(value)

    def finalize(self) -> float | None:
        return statistics.median(self.values) if self.values else None


def table_of(run: Path, metrics: list[str]) -> sqlite3.Connection:
    """The run's metrics records merged on (step_key, step), one column per metric, in SQLite."""
    records = contract_reader.records_of(run)
    db = sqlite3.connect(":memory:")
    db.create_aggregate("MEDIAN", 1, Median)  # type: ignore[arg-type]
    columns = ", ".join('"' + m.replace('"', '""') + '" REAL' for m in metrics)
    db.execute(f"CREATE TABLE metrics (step_key TEXT, step INTEGER, {columns})")
    for (key, step), values in records.items():
        row = [values.get(m) if isinstance(values.get(m), int | float) else None for m in metrics]
        db.execute(f"INSERT INTO metrics VALUES (?, ?, {', '.join('?' for _ in metrics)})", [key, step, *row])
    return db


def test_the_sql_rules_give_the_contracts_verdicts_on_every_example_run(built_manual: Path) -> None:
    """Where an item applies and the run logs it, its SQL rule holds exactly when the contract's reader says inside
    (the reader agrees with watch and compare: tests/checking/test_contract_reader.py)."""
    site = built_manual / "site"
    document = json.loads((site / "contract.odcs.json").read_text(encoding="utf-8"))
    properties = {p["name"]: p for p in document["schema"][0]["properties"][2:]}
    runs = sorted(path for path in (built_manual / "runs").iterdir() if (path / "dashboard").is_dir())
    judged = 0
    for run in runs:
        verdicts = contract_reader.read(site / "contract.json", run)
        db = table_of(run, [p["physicalName"] for p in properties.values()])
        for item, prop in properties.items():
            if verdicts[item] not in ("inside", "outside"):
                continue
            rule = prop["quality"][0]
            found = db.execute(rule["query"]).fetchone()[0]
            low, high = rule.get("mustBeBetween", [rule.get("mustBe"), rule.get("mustBe")])
            holds = found is not None and not math.isnan(found) and low <= found <= high
            assert holds == (verdicts[item] == "inside"), (run.name, item, found, rule)
            judged += 1
    assert judged > 200
