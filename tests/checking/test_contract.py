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
    schema = json.loads((site / contract.SCHEMA_FILE).read_text())
    assert schema == contract.schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema" and schema["$id"].endswith(
        "/contract.schema.json")
    assert {"format", "version", "rules", "ranges", "claims"} <= set(schema["required"])
    assert document.format == "miles-manual-contract" and document.version == 3
    assert json.loads((site / contract.CONTRACT_FILE).read_text())["$schema"] == schema["$id"]
    # Every valued row of the Metrics page, and every figure with checks, is an item.
    spec = json.loads(json.dumps(__import__("yaml").safe_load((built_manual / "docs/data/metrics.yml").read_text())))
    rows = [row["metric"] for table in spec["tables"] if table.get("column") for row in table["rows"]]
    assert [item.id for item in document.ranges] == rows  # every row has a band: every item can be decided
    raw = next(item for item in document.ranges if item.id == "rollout/raw_reward")
    # The page shows 0.53 to 0.87: the exact bounds are what rounds to that, written as the numbers compared.
    assert (raw.statistic, raw.low, raw.high, raw.link) == ("each_step", 0.525, 0.875, "06-metrics.html#rollout")
    medians = [item for item in document.ranges if item.statistic == "median"]
    assert medians and all(item.low < (item.expected or 0) < item.high for item in medians)
    assert {item.unit for item in medians} == {"s"}
    # Claims by the chapters' figure ids, their checks with typed parameters.
    shares = next(claim for claim in document.claims if claim.id == "fig-step-shares")
    about = next(check for check in shares.checks if check.check == "about")
    assert about.parameters["value"] == 2 and about.parameters["unit"] == "s" and about.tolerance == "2 +/- 0.5"
    assert {fact.fact for fact in raw.envelope} >= {"model", "prompts per step", "answers per prompt"}
    facts = {fact.fact: fact.values for fact in raw.envelope}  # typed: numbers as numbers, booleans as booleans
    assert (facts["prompts per step"], facts["colocated"], facts["model"]) == ([32], [True], ["Qwen3-0.6B"])
    assert document.claims and all(claim.envelope for claim in document.claims)
    # The document reads back to the same bytes: rebuilds are byte-identical.
    assert contract.dumps(document) == (site / contract.CONTRACT_FILE).read_text()


def test_a_document_outside_the_schema_is_refused(built_manual: Path) -> None:
    data = json.loads((built_manual / "site" / contract.CONTRACT_FILE).read_text())
    data["ranges"][0]["low"] = "0.5"  # a bound is a number, never text
    with pytest.raises(ValidationError, match="low"):
        contract.Contract.model_validate(data)
    data = json.loads((built_manual / "site" / contract.CONTRACT_FILE).read_text())
    del data["version"]  # required: a reader knows which rules it reads
    with pytest.raises(ValidationError, match="version"):
        contract.Contract.model_validate(data)


def test_the_metrics_page_links_the_contract_and_its_schema(built_manual: Path) -> None:
    page = (built_manual / "site" / "06-metrics.html").read_text(encoding="utf-8")
    assert 'href="contract.json"' in page and 'href="contract.schema.json"' in page
    assert "Its <code>version</code> changes when a field is removed or renamed" in page


def test_every_registered_kind_of_check_has_a_rule_or_says_why_not() -> None:
    """Derived from the registry: a kind of check a claim may judge one run by has its written rule
    (rules['check.<kind>']), or it compares the manual's runs (never judged on one), or the contract says why a
    reader cannot evaluate it; never two of these, and a kind added with none gets NO_RULE as its reason."""
    from build_tools.checking.checks import REGISTRY

    for kind in REGISTRY:
        homes = [kind in contract.CHECK_RULES, kind in contract.ACROSS_RUNS, kind in contract.NOT_SIMPLE]
        assert homes.count(True) == 1, (kind, homes)
        assert contract.RULES.get(f"check.{kind}") == contract.CHECK_RULES.get(kind)
    assert set(contract.CHECK_RULES) <= set(REGISTRY)
    assert contract._reason("a-kind-with-no-rule") == contract.NO_RULE
