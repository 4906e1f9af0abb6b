"""The contract's ranges in an established format: an Open Data Contract Standard (ODCS) v3.1 document
(site/contract.odcs.json), for tools that run data contracts (datacontract-cli and others).

One schema object, the run's per-step metrics table as a Miles dump's metrics.jsonl holds it (a row per step key
and step, a column per metric); each range a property with one quality rule of type `sql`, whose `query` computes
the contract's statistic and whose `mustBe` or `mustBeBetween` holds its exact bounds. The claims read whole runs
through the manual's registry of checks, which no SQL states: they are left out, and the document says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from build_tools.checking.contract import Contract, RangeItem

ODCS_FILE = "contract.odcs.json"
API_VERSION = "v3.1.0"
TABLE = "metrics"  # the per-step table: step_key, step, and a column per metric


def _column(metric: str) -> str:
    """A metric key as an SQL identifier (double quotes doubled)."""
    return '"' + metric.replace('"', '""') + '"'


def quality_of(item: RangeItem) -> dict[str, Any]:
    """The item's statistic as an SQL quality rule, its bounds the contract's exact numbers."""
    column, at = _column(item.metric), f"step_key = '{item.step_key}'"
    base: dict[str, Any] = {"type": "sql", "dimension": "accuracy", "severity": item.severity, "unit": item.unit,
                            "description": f"{item.title}: as contract.json's rules.{item.statistic} judges it",
                            "customProperties": [{"property": "statistic", "value": item.statistic},
                                                 {"property": "link", "value": item.link}]}
    if item.statistic == "each_step":
        query = (f"SELECT COUNT(*) FROM {TABLE} WHERE {at} AND {column} IS NOT NULL AND NOT ({column} BETWEEN "
                 f"{item.low!r} AND {item.high!r})")
        return {**base, "query": query, "mustBe": 0}
    if item.statistic == "first_value":
        query = (f"SELECT {column} FROM {TABLE} WHERE {at} AND {column} IS NOT NULL ORDER BY step LIMIT 1")
    elif item.statistic == "median":
        query = f"SELECT MEDIAN({column}) FROM {TABLE} WHERE {at}"
    else:  # logged_share
        query = f"SELECT CAST(COUNT({column}) AS DOUBLE) / COUNT(*) FROM {TABLE} WHERE {at}"
    if item.low == item.high:  # one value holds (the standard's mustBeBetween wants two different bounds)
        return {**base, "query": query, "mustBe": item.low}
    return {**base, "query": query, "mustBeBetween": [item.low, item.high]}


def odcs_of(contract: Contract) -> dict[str, Any]:
    """The ODCS document of the contract's ranges."""
    properties = [{"name": item.id, "physicalName": item.metric, "logicalType": "number", "physicalType": "double",
                   "description": item.title, "quality": [quality_of(item)]} for item in contract.ranges]
    return {
        "apiVersion": API_VERSION, "kind": "DataContract", "id": f"miles-manual-{contract.edition}",
        "name": "The Miles field manual's ranges", "version": f"{contract.version}.0.0", "status": "active",
        "description": {"purpose": "What a Miles RL run on one DGX Spark should log, step by step, from the manual's "
                                   f"edition {contract.edition}",
                        "limitations": "Only for a run inside each range's envelope (contract.json); the claims "
                                       "are judged by the manual's own checks and are not here."},
        "schema": [{"name": TABLE, "physicalName": "metrics.jsonl", "logicalType": "object",
                    "description": "a Miles dashboard dump's metrics records merged on step_key and step",
                    "properties": [{"name": "step_key", "logicalType": "string", "required": True},
                                   {"name": "step", "logicalType": "integer", "required": True}, *properties]}],
    }


def odcs_text(contract: Contract) -> str:
    """Byte-identical across rebuilds: sorted keys, fixed indentation, a final newline."""
    return json.dumps(odcs_of(contract), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_odcs(pages: Path, contract: Contract) -> None:
    """contract.odcs.json beside the pages (and so in site/, in every edition)."""
    (pages / ODCS_FILE).write_text(odcs_text(contract), encoding="utf-8")
