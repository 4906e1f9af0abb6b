"""Each item of the contract, judged as values arrive: its status, a Change whenever the status changes, and a
Record of every range that never forgets a breach (first step, worst value, steps outside, last step outside).

The rules are the contract's own (contract.RULES): a value holds when low <= value <= high, no rounding; a
per-step item is judged at every value, a first-value item at its first step, a claim that reads only the run's
setup once the setup and the first step are in (early.py), a whole-run statistic and any other claim when the run
has ended.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from build_tools.checking.contract import ClaimItem, Contract, EnvelopeFact, RangeItem, _text, same_fact
from build_tools.commands.watch import early
from build_tools.commands.watch.records import Value
from build_tools.readers import dotted_field

Status = Literal["inside", "outside", "undecided", "not_applicable"]


@dataclass(frozen=True)
class Change:
    item: str  # the contract's id: a metric key, or a chapter's figure id
    kind: str  # range or claim
    status: Status
    step_key: str | None
    step: int | None
    value: float | None
    band: tuple[float, float] | None
    source: str
    since_step: int | None = None  # outside: the first step it left its band
    by: float | None = None  # outside: how far past the nearer edge
    why: str | None = None  # not_applicable: the fact that differs; undecided: what it waits for; a claim's detail
    title: str = ""  # the manual's words for it: a Metrics row's meaning, a figure's number and caption

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"item": self.item, "kind": self.kind, "status": self.status,
                                "step_key": self.step_key, "step": self.step, "value": _json_number(self.value),
                                "band": list(self.band) if self.band else None, "source": self.source}
        for name in ("since_step", "by", "why"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        return data


def _json_number(value: float | None) -> float | str | None:
    """A value for JSON: a non-finite one as the text Miles' CI records write ("NaN", "Infinity")."""
    if value is None or math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


@dataclass
class Record:
    """What a range has been over the whole watch: the steps outside stay outside until the end."""

    outside: dict[tuple[str, int], float] = field(default_factory=dict)  # (step key, step) -> the value
    judged: set[tuple[str, int]] = field(default_factory=set)
    last: Value | None = None  # the latest value judged

    def first_outside(self) -> tuple[str, int] | None:
        return min(self.outside, key=lambda place: place[1]) if self.outside else None

    def last_outside(self) -> tuple[str, int] | None:
        return max(self.outside, key=lambda place: place[1]) if self.outside else None

    def worst(self, band: tuple[float, float]) -> tuple[int, float] | None:
        """The step and value furthest outside the band (a non-finite value is the worst there is)."""
        if not self.outside:
            return None
        return max(((place[1], value) for place, value in self.outside.items()),
                   key=lambda pair: distance(pair[1], band))


def distance(value: float, band: Sequence[float]) -> float:
    """How far past the nearer edge (0 inside; a NaN is infinitely far)."""
    if math.isnan(value):
        return math.inf
    return max(band[0] - value, value - band[1], 0.0)


def holds(value: float, band: Sequence[float]) -> bool:
    """The contract's rule: low <= value <= high, as written, no rounding; NaN never holds."""
    return band[0] <= value <= band[1]


def outside_envelope(envelope: Sequence[EnvelopeFact], setup: Mapping[str, Any] | None) -> str | None:
    """The first enforced fact the reader's run records with a value the manual's runs lack, in words."""
    if setup is None:
        return None
    for fact in envelope:
        value = dotted_field(setup, fact.field)
        if not fact.enforced or not fact.values or value is None or same_fact(value, fact.values):
            continue
        return f"{fact.fact}: yours is {_text(value)}, the manual's runs have {' or '.join(map(_text, fact.values))}"
    return None


WHEN = {"median": "its median is judged when the run ends",
        "logged_share": "whether it is logged at every step is judged when the run ends",
        "first_value": "judged at its first step"}


class Judge:
    """The statuses of every item; `value`, `set_setup` and `close` return the changes they cause."""

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.setup: dict[str, Any] | None = None
        self.status: dict[tuple[str, str], Change] = {}  # each item's latest judgement
        self.records: dict[str, Record] = {item.id: Record() for item in contract.ranges}
        self.non_finite: list[Value] = []  # every value that was no finite number, as it came
        self.items = {item.id: item for item in contract.ranges}
        self._by_metric: dict[str, list[RangeItem]] = {}
        for item in contract.ranges:
            self._by_metric.setdefault(item.metric, []).append(item)

    # The steps each range was judged and found outside at (`compare`'s verdict over a finished run reads them).
    @property
    def judged(self) -> dict[str, set[tuple[str, int]]]:
        return {item: record.judged for item, record in self.records.items() if record.judged}

    @property
    def outside(self) -> dict[str, set[tuple[str, int]]]:
        return {item: set(record.outside) for item, record in self.records.items() if record.outside}

    def _set(self, change: Change) -> list[Change]:
        key = (change.kind, change.item)
        old = self.status.get(key)
        self.status[key] = change
        return [change] if old is None or old.status != change.status else []

    def _replace(self, change: Change) -> Change:
        """A new reason for the same status: kept, and handed on (the end's reasons are news to a reader)."""
        self.status[(change.kind, change.item)] = change
        return change

    def start(self) -> list[Change]:
        """Every item before any value: undecided (what it waits for) or not_applicable (its envelope)."""
        changes = []
        for item in self.contract.ranges:
            if self.status.get(("range", item.id)) is None or self.status[("range", item.id)].status in (
                    "undecided", "not_applicable"):
                changes += self._set(self._range_open(item))
        for claim in self.contract.claims:
            now = self.status.get(("claim", claim.id))
            if now is None or now.status in ("undecided", "not_applicable"):
                changes += self._set(self._claim_open(claim))
        return changes

    def _range_open(self, item: RangeItem) -> Change:
        base = _range_base(item)
        if why := outside_envelope(item.envelope, self.setup):
            return Change(status="not_applicable", why=why, **base)
        waits = WHEN.get(item.statistic, "no value yet")
        return Change(status="undecided", why=waits if item.statistic != "each_step" else "no value yet",
                      **base)

    def _claim_open(self, claim: ClaimItem) -> Change:
        base = _claim_base(claim)
        if why := outside_envelope(claim.envelope, self.setup):
            return Change(status="not_applicable", why=why, **base)
        return Change(status="undecided", why=early.waits_for(claim), **base)

    def set_setup(self, setup: dict[str, Any]) -> list[Change]:
        self.setup = setup
        return self.start()

    def value(self, value: Value) -> list[Change]:
        if not math.isfinite(value.value):
            self.non_finite.append(value)
        changes = []
        for item in self._by_metric.get(value.metric, []):
            if item.step_key != value.step_key or item.statistic not in ("each_step", "first_value"):
                continue
            changes += self._judge(item, value)
        return changes

    def _judge(self, item: RangeItem, value: Value) -> list[Change]:
        record = self.records[item.id]
        place = (value.step_key, value.step)
        base = {**_range_base(item), "step_key": value.step_key, "step": value.step, "value": value.value}
        if why := outside_envelope(item.envelope, self.setup):
            record.last = value
            return self._set(Change(status="not_applicable", why=why, **base))
        if item.statistic == "first_value":
            first = min((p[1] for p in record.judged), default=None)
            if first is not None and value.step > first:
                return []  # only the first step counts
            record.judged.clear()
            record.outside.clear()
        record.judged.add(place)
        record.last = value
        band = (item.low, item.high)
        if holds(value.value, band):
            record.outside.pop(place, None)  # a restarted job's new value at a step replaces the old one
        else:
            record.outside[place] = value.value
        if not record.outside:
            return self._set(Change(status="inside", **base))
        first_out = record.first_outside()
        by = distance(value.value, band) if not holds(value.value, band) else 0.0
        return self._set(Change(status="outside", since_step=first_out[1] if first_out else value.step,
                                by=round(by, 12) if math.isfinite(by) else None, **base))

    def close_ranges(self, verdicts: Mapping[str, tuple[bool | None, str]]) -> list[Change]:
        """The run has ended: each whole-run statistic (a median, logged at every step) still undecided takes the
        verdict `compare` gave on the finished run (metric -> holds, detail); one it could not give says why."""
        changes = []
        for item in self.contract.ranges:
            now = self.status.get(("range", item.id))
            if item.statistic in ("each_step", "first_value") or (now is not None and now.status != "undecided"):
                continue
            holds_, detail = verdicts.get(item.id, (None, "the finished run could not be compared"))
            status: Status = "inside" if holds_ else "outside" if holds_ is False else "undecided"
            if status == "outside":
                self.records[item.id].outside[(item.step_key, -1)] = math.nan  # whole run: no one step
            changes.append(self._replace(Change(status=status, why=detail, **_range_base(item))))
        return changes

    def close_claims(self, checked: Mapping[str, tuple[bool | None | str, str]]) -> list[Change]:
        """The run has ended: each claim still undecided that `compare` checked on it (figure id -> holds,
        detail) takes that verdict; "not_applicable" (and why) for one it does not judge on one run."""
        changes = []
        for claim in self.contract.claims:
            now = self.status.get(("claim", claim.id))
            if claim.id in checked and (now is None or now.status == "undecided"):
                change = claim_closed(claim, *checked[claim.id])
                changes += self._set(change) if change.status != "undecided" else [self._replace(change)]
        return changes

    def early_claims(self) -> list[ClaimItem]:
        """The claims still undecided that can be judged before the end (early.py), once a step is in."""
        return [claim for claim in self.contract.claims if early.judged_early(claim)
                and (now := self.status.get(("claim", claim.id))) is not None and now.status == "undecided"]

    def close_unread(self) -> list[Change]:
        """The run has ended: a range still without a value says so (the run never logged it at its step key)."""
        changes = []
        for item in self.contract.ranges:
            now = self.status.get(("range", item.id))
            if now is not None and now.status == "undecided" and now.why == "no value yet":
                changes += [self._replace(Change(status="undecided", why=f"your run never logged it at "
                                                 f"{item.step_key}", **_range_base(item)))]
        return changes

    def stopped(self, why: str) -> list[Change]:
        """The watch ended before the job did (Ctrl-C, the first breach): each item still undecided says so."""
        return [self._replace(Change(**{**change.__dict__, "why": f"the watch ended ({why}) before the job did"}))
                for change in list(self.status.values()) if change.status == "undecided"]

    def waiting_for_the_end(self) -> bool:
        """Whether an item waits for the finished run (a whole-run statistic, a claim): only then is it read whole."""
        return any(change.status == "undecided" and (change.kind == "claim" or self.items[change.item].statistic
                                                     in ("median", "logged_share"))
                   for change in self.status.values())

    def went_outside(self) -> list[str]:
        """Every item that was outside at any time (the record), ranges then claims."""
        ranges = [item for item, record in self.records.items() if record.outside]
        claims = [item for (kind, item), change in self.status.items()
                  if kind == "claim" and change.status == "outside"]
        return ranges + claims


def _range_base(item: RangeItem) -> dict[str, Any]:
    return {"item": item.id, "kind": "range", "step_key": None, "step": None, "value": None,
            "band": (item.low, item.high), "source": item.source, "title": item.title}


def _claim_base(claim: ClaimItem) -> dict[str, Any]:
    return {"item": claim.id, "kind": "claim", "step_key": None, "step": None, "value": None, "band": None,
            "source": f"fig {claim.number}", "title": f"fig {claim.number} \"{claim.says}\""}


def claim_closed(claim: ClaimItem, holds_: bool | None | str, detail: str) -> Change:
    """A claim judged on the finished run (as `compare` checks it on a reader's run): held, failed, or unknown;
    or not applicable to one run ("not_applicable")."""
    status: Status = ("not_applicable" if holds_ == "not_applicable" else "inside" if holds_ is True
                      else "outside" if holds_ is False else "undecided")
    return Change(status=status, why=detail, **_claim_base(claim))
