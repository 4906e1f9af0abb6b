"""Each item of the contract, judged as values arrive: its status, and a Change whenever the status changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from build_tools.checking.contract import ClaimItem, Contract, EnvelopeFact, RangeItem
from build_tools.commands.watch.records import Value
from build_tools.readers import dotted_field

Status = Literal["inside", "outside", "undecided", "not_applicable"]


@dataclass(frozen=True)
class Change:
    item: str
    kind: str
    status: Status
    step_key: str | None
    step: int | None
    value: float | None
    band: tuple[float, float] | None
    source: str
    since_step: int | None = None  # outside: the step it left its band
    by: float | None = None  # outside: how far past the nearer edge
    why: str | None = None  # not_applicable: the fact that differs; undecided: what it waits for

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"item": self.item, "kind": self.kind, "status": self.status,
                                "step_key": self.step_key, "step": self.step, "value": self.value,
                                "band": list(self.band) if self.band else None, "source": self.source}
        for name in ("since_step", "by", "why"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        return data


def step_key_of(metric: str) -> str:
    from build_tools.ingest.sources._common import STEP_KEY_OF_PREFIX

    return STEP_KEY_OF_PREFIX.get(metric.split("/", 1)[0], "rollout/step")


def outside_envelope(envelope: Sequence[EnvelopeFact], setup: Mapping[str, Any] | None) -> str | None:
    """The first enforced fact the reader's run records with a value the manual's runs lack, in words."""
    from build_tools.checking.contract import _text

    if setup is None:
        return None
    for fact in envelope:
        value = dotted_field(setup, fact.field)
        if not fact.enforced or not fact.values or value is None or _text(value) in fact.values:
            continue
        return f"{fact.fact}: yours is {_text(value)}, the manual's runs have {' or '.join(fact.values)}"
    return None


def band_status(value: float, band: Sequence[float], decimals: int) -> tuple[bool, float]:
    """Inside the band at the rounding the page shows (as `compare`), and how far outside the nearer edge."""
    rounded, low, high = round(value, decimals), round(band[0], decimals), round(band[1], decimals)
    if rounded < low:
        return False, round(low - rounded, decimals)
    if rounded > high:
        return False, round(rounded - high, decimals)
    return True, 0.0


class Judge:
    """The statuses of every item; `value`, `setup` and `claims` return the changes they cause."""

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.setup: dict[str, Any] | None = None
        self.status: dict[tuple[str, str], Change] = {}  # each item's latest judgement
        # The steps each range was judged and found outside at: `compare`'s verdict over a finished run.
        self.judged: dict[str, set[tuple[str, int]]] = {}
        self.outside: dict[str, set[tuple[str, int]]] = {}
        self._ranges: dict[str, list[RangeItem]] = {}
        for item in contract.ranges:
            self._ranges.setdefault(item.item, []).append(item)

    def _set(self, change: Change) -> list[Change]:
        key = (change.kind, change.item)
        old = self.status.get(key)
        self.status[key] = change
        return [change] if old is None or old.status != change.status else []

    def start(self) -> list[Change]:
        """Every claim, before any step: undecided (they read whole runs) or not_applicable (its envelope)."""
        return [change for claim in self.contract.claims for change in self._set(self._claim_open(claim))]

    def _claim_open(self, claim: ClaimItem) -> Change:
        why = outside_envelope(claim.envelope, self.setup)
        if why:
            return Change(claim.item, "claim", "not_applicable", None, None, None, None, f"fig {claim.item}", why=why)
        return Change(claim.item, "claim", "undecided", None, None, None, None, f"fig {claim.item}",
                      why="a claim reads the whole run: judged when the run ends")

    def set_setup(self, setup: dict[str, Any]) -> list[Change]:
        self.setup = setup
        return self.start()

    def value(self, value: Value) -> list[Change]:
        changes = []
        for item in self._ranges.get(value.metric, []):
            if step_key_of(item.item) != value.step_key:
                continue
            change = self._judged(item, value)
            place = (value.step_key, value.step)
            self.judged.setdefault(item.item, set()).add(place)
            if change.status == "outside":
                self.outside.setdefault(item.item, set()).add(place)
            else:  # a restarted job's new value at a step replaces the old one
                self.outside.get(item.item, set()).discard(place)
            changes += self._set(change)
        return changes

    def close_claims(self, checked: Mapping[str, tuple[bool | None, str]]) -> list[Change]:
        """The run has ended: each claim still undecided that `compare` checked on it (figure number -> holds,
        detail) takes that verdict."""
        changes = []
        for claim in self.contract.claims:
            now = self.status.get(("claim", claim.item))
            if claim.item in checked and (now is None or now.status == "undecided"):
                changes += self._set(claim_closed(claim, *checked[claim.item]))
        return changes

    def _judged(self, item: RangeItem, value: Value) -> Change:
        band = (item.band[0], item.band[1]) if item.band else None
        base = dict(item=item.item, kind="range", step_key=value.step_key, step=value.step, value=value.value,
                    band=band, source=item.source)
        if why := outside_envelope(item.envelope, self.setup):
            return Change(status="not_applicable", why=why, **base)  # type: ignore[arg-type]
        if band is None:
            return Change(status="undecided", why=f"a {item.stat} over the whole run", **base)  # type: ignore[arg-type]
        inside, by = band_status(value.value, band, item.decimals)
        if inside:
            return Change(status="inside", **base)  # type: ignore[arg-type]
        old = self.status.get(("range", item.item))
        since = old.since_step if old is not None and old.status == "outside" else value.step
        return Change(status="outside", since_step=since, by=by, **base)  # type: ignore[arg-type]


def claim_closed(claim: ClaimItem, holds: bool | None, detail: str) -> Change:
    """A claim judged on the finished run (as `compare` checks it on a reader's run): held, failed, or unknown."""
    status: Status = "inside" if holds else "outside" if holds is False else "undecided"
    return Change(claim.item, "claim", status, None, None, None, None, f"fig {claim.item}", why=detail)
