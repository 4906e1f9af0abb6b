"""site/contract.json: the ranges and claims as one versioned document, valid against its published schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from build_tools.checking import contract


def test_every_build_writes_a_contract_its_schema_admits(built_manual: Path) -> None:
    site = built_manual / "site"
    document = contract.read_contract(site / contract.CONTRACT_FILE)  # the model is the schema's validation
    assert json.loads((site / contract.SCHEMA_FILE).read_text()) == contract.Contract.model_json_schema()
    assert document.format == "miles-manual-contract" and document.version == 1
    # Every valued row of the Metrics page, and every figure with checks, is an item.
    spec = json.loads(json.dumps(__import__("yaml").safe_load((built_manual / "docs/data/metrics.yml").read_text())))
    rows = [row["metric"] for table in spec["tables"] if table.get("column") for row in table["rows"]]
    assert [item.item for item in document.ranges] == rows
    raw = next(item for item in document.ranges if item.item == "rollout/raw_reward")
    assert raw.per_step and raw.band is not None and raw.band[0] < raw.band[1]
    assert {fact.fact for fact in raw.envelope} >= {"model", "prompts per step", "answers per prompt"}
    assert document.claims and all(claim.envelope for claim in document.claims)
    # The document reads back to the same bytes: rebuilds are byte-identical.
    assert contract.dumps(document) == (site / contract.CONTRACT_FILE).read_text()


def test_a_document_outside_the_schema_is_refused(built_manual: Path) -> None:
    data = json.loads((built_manual / "site" / contract.CONTRACT_FILE).read_text())
    data["ranges"][0]["band"] = [0.1]  # a band is [low, high]
    with pytest.raises(ValidationError, match="band"):
        contract.Contract.model_validate(data)
    data = json.loads((built_manual / "site" / contract.CONTRACT_FILE).read_text())
    data["version"] = 2
    with pytest.raises(ValidationError, match="version"):
        contract.Contract.model_validate(data)
