"""Claims that prove they can fail: for every check of every claim, a change of its data just past the edge its
margin names (checks/_perturb.py, registered beside each kind of check) must fail it, and every other claim must
keep its verdict, all claims checked again on the changed summaries.

A claim is shown able to fail when each of its checks is; a check that no change fails (a tolerance so wide, a
statistic that ignores the data, a filter that selects no rows) is named, and the build stops with exit code 3
(`ClaimsUnproven`). Only copies of the summaries are changed, never a file, and every step is deterministic: the
same inputs give the same proof, byte for byte (build/proof.json).

It costs a check of every claim per check (`make bench` measures it), so `make check PROVE=1` (`manual check
--prove`), `make PROVE=1` and every published edition's build run it; an everyday build does not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.checking.checks._perturb import CannotFail, Change, Perturbation, Subject, derive
from build_tools.checking.claims import judge
from build_tools.core._escape import workflow_command
from build_tools.core._exceptions import ClaimsUnproven, MissingValue
from build_tools.core._staging import write_atomic
from build_tools.core._types import ClaimVerdict, FigureBlock, RunSummary

PROOF_FILE = "proof.json"  # in build/: what the Claim health page and an edition's manifest say of it


@dataclass(frozen=True)
class CheckProof:
    """What one check's change showed: whether the check failed, which other claims changed verdict with it,
    and, when no change could be derived, why."""

    index: int  # the check's place in its block, from 0
    name: str
    fails: bool
    also_fails: tuple[str, ...] = ()  # numbers of the other figures whose verdict the change turned
    reason: str = ""


@dataclass(frozen=True)
class ClaimProof:
    block: FigureBlock
    checks: tuple[CheckProof, ...]

    @property
    def shown(self) -> bool:
        """Able to fail: it has checks, and a change fails each of them."""
        return bool(self.checks) and all(check.fails for check in self.checks)


def prove_claims(verdicts: Sequence[ClaimVerdict], summaries: dict[str, RunSummary],
                 tables: dict[str, Any]) -> list[ClaimProof]:
    """For every check of every claim (all of which hold), its change, and every claim checked again on it."""
    blocks = [verdict.block for verdict in verdicts]
    held = {verdict.block.number: verdict.status for verdict in verdicts}
    return [ClaimProof(block, tuple(_prove_check(block, index, blocks, held, summaries, tables)
                                    for index in range(len(block.checks))))
            for block in blocks]


NO_HANDLE = (MissingValue, LookupError, StopIteration, ValueError, ZeroDivisionError)  # the data offers nothing to move


def _prove_check(block: FigureBlock, index: int, blocks: list[FigureBlock], held: Mapping[str, str],
                 summaries: dict[str, RunSummary], tables: dict[str, Any]) -> CheckProof:
    """The check's change (or the first of its alternatives that turns no other claim) and what it turned."""
    name = str(block.checks[index]["check"])
    subject = Subject(block, index, summaries, tables)
    first: CheckProof | None = None
    try:
        for change in _changes(derive(block, index, summaries, tables)):
            data = subject.data(change)
            verdicts = [judge(data.block if other is block else other, data.summaries, data.tables)
                        for other in blocks]
            mine = next(v for v in verdicts if v.block.number == block.number).checks[index]
            also = tuple(v.block.number for v in verdicts
                         if v.block.number != block.number and v.status != held[v.block.number])
            found = CheckProof(index, name, mine.status == "fail", also,
                               "" if mine.status == "fail" else f"it still holds after the change: {mine.message}")
            if found.fails and not also:
                return found
            first = first or found
    except CannotFail as cannot:
        return first or CheckProof(index, name, False, reason=str(cannot))
    except NO_HANDLE as error:  # no clean step, no sample, no other value to move: nothing can fail it
        return first or CheckProof(index, name, False, reason=f"no change of its data could be made ({error})")
    assert first is not None  # the loop ran at least once: `false` is always there
    return first


def _changes(perturbation: Perturbation) -> Iterator[Change]:
    """The change, then each alternative derived in turn (one that cannot be derived is passed over)."""
    yield perturbation.false
    for alternative in perturbation.alternatives:
        try:
            yield alternative().false
        except CannotFail:
            continue


# --- what the proof says --------------------------------------------------------------------------------------


def sentence(proofs: Sequence[ClaimProof]) -> str:
    """'18 of 18 claims shown able to fail': the line the Claim health page, the edition and `make check` give."""
    return shown_sentence(sum(1 for proof in proofs if proof.shown), len(proofs))


def shown_sentence(shown: int, total: int) -> str:
    return f"{shown} of {total} claims shown able to fail"


def _where(block: FigureBlock) -> str:
    return f"{block.chapter_file}:{block.line} fig {block.number}"


def _check_name(check: CheckProof) -> str:
    return f"check {check.index + 1} ({check.name})"


def report_lines(proofs: Sequence[ClaimProof]) -> list[str]:
    """The proof for `make check PROVE=1`: its sentence, and a line for each change that turned another claim."""
    lines = [f"{sentence(proofs)}: a change of each check's data just past its edge fails it, every other claim "
             "checked again"]
    by_number = {proof.block.number: proof.block for proof in proofs}
    for proof in proofs:
        for check in proof.checks:
            if check.fails and check.also_fails:
                twins = [n for n in check.also_fails if n in by_number and _same_evidence(
                    proof.block, proof.block.checks[check.index], by_number[n])]
                why = " (the same check on the same runs)" if twins == list(check.also_fails) else ""
                lines.append(f"  {_where(proof.block)} {_check_name(check)}: the change also fails "
                             f"fig {', fig '.join(check.also_fails)}{why}")
    return lines


def evidence(block: FigureBlock, params: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
    """What a check reads and compares, without its words (says, binds, label): its runs and its parameters."""
    kept = {k: v for k, v in params.items() if k not in ("says", "binds", "label")}
    return tuple(params.get("runs") or block.runs), json.dumps(kept, sort_keys=True, default=str)


def _same_evidence(block: FigureBlock, params: Mapping[str, Any], other: FigureBlock) -> bool:
    """Whether another claim has a check of the same evidence: no change can fail one and spare the other."""
    return evidence(block, params) in [evidence(other, p) for p in other.checks]


NO_CHECK = "the claim has no check, so nothing can fail it"


def _unproven(proofs: Sequence[ClaimProof]) -> list[tuple[ClaimProof, str]]:
    """Each claim not shown able to fail, with what is wrong: a check and why no change fails it, or no check."""
    return [(proof, text) for proof in proofs
            for text in ([NO_CHECK] if not proof.checks else [
                f"{_check_name(check)} cannot be made to fail: {check.reason}"
                for check in proof.checks if not check.fails])]


def unproven_lines(proofs: Sequence[ClaimProof]) -> list[str]:
    """One line per check no change fails (or claim without a check): its place, the check, and why."""
    return [f"{_where(proof.block)} {text}" for proof, text in _unproven(proofs)]


def unproven_commands(proofs: Sequence[ClaimProof]) -> list[str]:
    """The same as `::error` workflow commands on each figure block's line (`FORMAT=github`)."""
    return [workflow_command("error", text, {"file": proof.block.chapter_file, "line": str(proof.block.line),
                                             "title": f"Fig {proof.block.number}"})
            for proof, text in _unproven(proofs)]


def raise_if_unproven(proofs: Sequence[ClaimProof]) -> None:
    """ClaimsUnproven (exit code 3) naming every check no change could fail, if any."""
    if not all(proof.shown for proof in proofs):
        raise ClaimsUnproven(unproven_lines(proofs), sum(1 for p in proofs if not p.shown), len(proofs),
                             unproven_commands(proofs))


def proof_data(proofs: Sequence[ClaimProof]) -> dict[str, Any]:
    """What build/proof.json holds."""
    return {"shown": sum(1 for p in proofs if p.shown), "total": len(proofs), "claims": [
        {"number": p.block.number, "id": p.block.id, "shown": p.shown, "checks": [
            {"check": c.index + 1, "name": c.name, "fails": c.fails, "also_fails": list(c.also_fails),
             "reason": c.reason} for c in p.checks]} for p in proofs]}


def write_proof(proofs: Sequence[ClaimProof], build_dir: Path) -> Path:
    path = build_dir / PROOF_FILE
    text = json.dumps(proof_data(proofs), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic(path, text.encode("utf-8"))
    return path


def forget(build_dir: Path) -> None:
    """No proof of earlier inputs is left to be read as this build's."""
    (build_dir / PROOF_FILE).unlink(missing_ok=True)
