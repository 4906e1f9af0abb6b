"""The manual's contract: its Metrics ranges and its claims, with their bands, envelopes and the edition, as one
versioned JSON document (site/contract.json) with a published JSON Schema (site/contract.schema.json).

The schema is generated from the pydantic model below, and validation is the model: the build writes the
document only through `Contract.model_validate`, so a document that does not fit its schema is never written.
`manual watch` and `manual compare` evaluate it; any tool can read it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo
from pydantic_core import PydanticCustomError

from build_tools.core._types import ClaimVerdict, FigureBlock, Stamp
from build_tools.ingest.schemas_dump import value_problem_of_arg
from build_tools.pages import metrics_table
from build_tools.readers import dotted_field

FORMAT: Literal["miles-manual-contract"] = "miles-manual-contract"
VERSION: Literal[1] = 1
CONTRACT_FILE = "contract.json"
SCHEMA_FILE = "contract.schema.json"

# The setup a range or claim was measured on: (fact, run.yaml field, enforced). An enforced fact that differs
# in a reader's run makes the item not_applicable; the others are recorded so a reader can see them.
ENVELOPE_FACTS: tuple[tuple[str, str, bool], ...] = (
    ("model", "model.name", True),
    ("answers per prompt", "flags.n_samples_per_prompt", True),
    ("prompts per step", "flags.rollout_batch_size", True),
    ("length limit", "flags.rollout_max_response_len", True),
    ("colocated", "flags.colocate", True),
    ("attention backend", "flags.sglang_attention_backend", False),
    ("hardware", "hardware.chip", False),
    ("Miles commit", "miles.commit", False),
)


def _printable(value: str, info: ValidationInfo) -> str:
    """A contract read (`read_contract`: watch's --contract) holds text as the loader takes a recorded value: no
    control, format or surrogate character (schemas_dump.value_problem_of_arg). The build's own contract is not
    held to it (a caption may hold what its chapter allows; every output channel escapes it)."""
    if info.context and info.context.get("read") and (wrong := value_problem_of_arg(value)) is not None:
        raise PydanticCustomError("unprintable", wrong)
    return value


def _decimals(value: int) -> int:
    """The rounding a band compares at: what a double holds (round() of a 400-digit count is an OverflowError)."""
    if not 0 <= value <= MOST_DECIMALS:
        raise PydanticCustomError("decimals", "expected a whole number of decimals from 0 to {most}",
                                  {"most": MOST_DECIMALS})
    return value


MOST_DECIMALS = 17
# Text, numbers and roundings a contract may hold; the checks are validators, so the published schema is unchanged.
Text = Annotated[str, AfterValidator(_printable)]
Finite = Annotated[float, Field(allow_inf_nan=False)]  # a band of NaN or Infinity judges nothing
Decimals = Annotated[int, AfterValidator(_decimals)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvelopeFact(_Strict):
    fact: Text = Field(description="the fact in words, as `watch` names it")
    field: Text = Field(description="the dotted run.yaml field (a dump's meta.json args give the flags)")
    values: list[Text] = Field(description="the values the manual's runs have, as text, sorted")
    enforced: bool = Field(description="a reader's run with another value is not_applicable")


class RangeItem(_Strict):
    item: Text = Field(description="the metric, e.g. rollout/raw_reward")
    kind: Literal["range"] = "range"
    stat: Text = Field(description="the Metrics page's statistic: range, all_zero, median, ...")
    per_step: bool = Field(description="judged at every step (a band); else only over a whole run")
    band: list[Finite] | None = Field(None, min_length=2, max_length=2, description="[low, high], per-step")
    decimals: Decimals = Field(description="values and band compare at this rounding, as the page shows them")
    source: Text = Field(description="the page and table it comes from")
    envelope: list[EnvelopeFact]


class ClaimItem(_Strict):
    item: Text = Field(description="the figure number, e.g. 1.3")
    kind: Literal["claim"] = "claim"
    says: str = Field(description="the caption, verbatim")
    source: Text = Field(description="the chapter file and figure")
    checks: list[Text] = Field(description="the checks that prove it, by registered name")
    headroom: Finite | None = Field(None, description="the closest check's headroom in this edition")
    fraction: Finite | None = Field(None, description="that headroom over the tolerance's half-width")
    envelope: list[EnvelopeFact]


class Contract(_Strict):
    format: Literal["miles-manual-contract"] = FORMAT
    version: Literal[1] = VERSION
    edition: Text
    edition_date: Text
    miles_commit: Text
    ranges: list[RangeItem]
    claims: list[ClaimItem]


# --- building it ------------------------------------------------------------------------------------------


def envelope_of(configs: Sequence[Mapping[str, Any]]) -> list[EnvelopeFact]:
    """The setup facts of the runs an item was measured on: each fact's values across them."""
    return [EnvelopeFact(fact=fact, field=dotted, enforced=enforced,
                         values=sorted({_text(dotted_field(config, dotted)) for config in configs}))
            for fact, dotted, enforced in ENVELOPE_FACTS]


def _text(value: Any) -> str:
    """A fact as text, numbers compared as numbers (32 and 32.0 are one value)."""
    if value is None:
        return "not recorded"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


PER_STEP_STATS = ("range", "all_zero")


def range_items(spec: Mapping[str, Any], runs: Mapping[str, metrics_table.Run]) -> list[RangeItem]:
    """One item per valued row of the Metrics page: its band (per-step stats) over the rows' runs."""
    sets = spec.get("run_sets") or {}
    items = []
    for table in spec["tables"]:
        if not table.get("column"):
            continue
        for row in table.get("rows") or []:
            ours = metrics_table.select(runs, sets.get(row.get("runs")) or {})
            metric = str(row["metric"])
            facts = [metrics_table.facts_of(run, metric, heat_rule=True) for run in ours if _logs(run, metric)]
            if not facts:
                continue
            stat = str(row.get("stat"))
            band = None
            if stat == "all_zero":  # as `compare` judges it: every value 0
                band = [0.0, 0.0]
            elif stat in PER_STEP_STATS:
                lows = [f.low for f in facts if f.low is not None]
                highs = [f.high for f in facts if f.high is not None]
                if lows and highs and math.isfinite(min(lows)) and math.isfinite(max(highs)):
                    band = [float(min(lows)), float(max(highs))]
            items.append(RangeItem(item=metric, stat=stat, per_step=band is not None, band=band,
                                   decimals=int(row.get("decimals", 2)),
                                   source=f"Metrics page, {table.get('title')}",
                                   envelope=envelope_of([run.config for run in ours])))
    return items


def _logs(run: metrics_table.Run, metric: str) -> bool:
    try:
        facts = metrics_table.facts_of(run, metric, heat_rule=True)
    except RuntimeError:
        return False
    return facts.present > 0


def claim_items(blocks: Sequence[FigureBlock], verdicts: Sequence[ClaimVerdict],
                configs: Mapping[str, Mapping[str, Any]]) -> list[ClaimItem]:
    """One item per figure with a claim: its checks, this edition's closest headroom, its runs' envelope."""
    from build_tools.checking.checks._margin import worst

    by_block = {verdict.block.id: verdict for verdict in verdicts}
    items = []
    for block in blocks:
        if not block.checks:
            continue
        verdict = by_block.get(block.id)
        closest = worst(check.margin for check in verdict.checks) if verdict else None
        items.append(ClaimItem(item=block.number, says=block.claim, source=f"{block.chapter_file}, fig {block.number}",
                               checks=[str(check["check"]) for check in block.checks],
                               headroom=_finite(closest.headroom) if closest else None,
                               fraction=_finite(closest.fraction) if closest else None,
                               envelope=envelope_of([configs[run] for run in block.runs if run in configs])))
    return items


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def build_contract(stamp: Stamp, spec: Mapping[str, Any], runs: Mapping[str, metrics_table.Run],
                   blocks: Sequence[FigureBlock], verdicts: Sequence[ClaimVerdict]) -> Contract:
    configs = {run_id: run.config for run_id, run in runs.items()}
    document = {"edition": stamp.edition, "edition_date": stamp.date, "miles_commit": stamp.commit,
                "ranges": range_items(spec, runs), "claims": claim_items(blocks, verdicts, configs)}
    return Contract.model_validate(document)  # validation is the model: the schema is generated from it


def dumps(model: BaseModel) -> str:
    """Byte-identical across rebuilds: sorted keys, fixed indentation, a final newline."""
    return json.dumps(model.model_dump(mode="json"), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def schema_text() -> str:
    return json.dumps(Contract.model_json_schema(), indent=1, sort_keys=True) + "\n"


def write_contract(pages: Path, contract: Contract) -> None:
    """contract.json and its schema beside the pages: mkdocs copies them into site/, so every edition has them."""
    text = dumps(contract)
    Contract.model_validate_json(text)  # what is written reads back as valid
    (pages / CONTRACT_FILE).write_text(text, encoding="utf-8")
    (pages / SCHEMA_FILE).write_text(schema_text(), encoding="utf-8")


def read_contract(path: Path) -> Contract:
    """The contract at path, read as every input is (_files.read_bytes: a plain file, within a document's size
    limit; InputProblem) and validated by the model (ValueError)."""
    from build_tools.core._files import read_bytes

    return Contract.model_validate_json(read_bytes(path), context={"read": True})
