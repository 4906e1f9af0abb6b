"""Claims that prove they can fail (build_tools/checking/prove.py): every claim of the chapters is failed by a change of
its data just past its edge while the other claims keep their verdicts; a planted check that cannot fail (a tolerance
too wide, a statistic that ignores the data, a filter that selects no step) is named, with the exact message, and the
build stops with exit code 3."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from build_tools.checking import prove
from build_tools.checking.blocks import load_tables, read_blocks
from build_tools.checking.checks import REGISTRY, Outcome, register
from build_tools.checking.checks._perturb import PAST, PERTURBATIONS, PLAUSIBLE, Subject, derive
from build_tools.checking.checks._registry import COMMON
from build_tools.checking.claims import check_claims, report_lines
from build_tools.core._exceptions import EXIT_CLAIM_FAILED, ClaimsUnproven
from build_tools.core._types import FigureBlock
from tests.conftest import copy_project, manual_blocks

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = [block.number for block in manual_blocks()]  # the chapters' claims, counted from their blocks


@pytest.fixture(scope="module")
def blocks() -> list[FigureBlock]:
    return read_blocks(ROOT / "docs", ROOT / "figures")


@pytest.fixture(scope="module")
def tables() -> dict:
    return load_tables(ROOT / "docs" / "data")


@pytest.fixture(scope="module")
def proofs(blocks, example_summaries, tables) -> list[prove.ClaimProof]:
    return prove.prove_claims(check_claims(blocks, example_summaries, tables), example_summaries, tables)


def _evidence(block: FigureBlock, params: dict[str, Any]) -> tuple[Any, ...]:
    """What a check reads and compares, without its words: two claims with the same evidence fail together."""
    kept = {k: v for k, v in params.items() if k not in ("says", "binds", "label")}
    return (tuple(params.get("runs") or block.runs), json.dumps(kept, sort_keys=True))


@pytest.mark.parametrize("number", NUMBERS)
def test_every_claim_of_the_chapters_is_shown_able_to_fail(number, proofs, blocks) -> None:
    proof = next(p for p in proofs if p.block.number == number)
    assert proof.shown and [c.index for c in proof.checks] == list(range(len(proof.block.checks)))
    for check in proof.checks:
        assert check.fails and check.reason == "", check
        # Every other claim kept its verdict, unless it checks the very same evidence (then no change can spare it).
        mine = _evidence(proof.block, proof.block.checks[check.index])
        for other in check.also_fails:
            twin = next(b for b in blocks if b.number == other)
            assert mine in [_evidence(twin, params) for params in twin.checks], (number, check, other)


CHECKS = [(block.number, index, params["check"]) for block in manual_blocks()
          for index, params in enumerate(block.checks)]


@pytest.mark.parametrize(("number", "index", "kind"), CHECKS, ids=[f"{n}-{i + 1}-{k}" for n, i, k in CHECKS])
def test_a_moved_number_lands_a_tenth_of_its_margin_past_the_edge(number, index, kind, blocks, example_summaries,
                                                                   tables) -> None:
    """The margin tells how far: a lever's distance to its edge is the check's own margin, and the change leaves
    the check failing by a tenth of it (PAST); an exact comparison (no headroom), by a hair."""
    block = next(b for b in blocks if b.number == number)
    perturbation = derive(block, index, example_summaries, tables)
    if perturbation.headroom is None:  # a one-step change (a count, an order, a fact): no distance to move
        return
    subject = Subject(block, index, example_summaries, tables)
    before, after = subject.result().margin, subject.result(perturbation.false).margin
    assert before is not None and after is not None
    assert perturbation.headroom == pytest.approx(before.headroom, rel=1e-9)
    if before.headroom > 0:
        assert after.headroom == pytest.approx(-PAST * before.headroom, rel=1e-3)
    else:
        assert -1e-6 <= after.headroom < 0


def test_the_proof_says_how_many_claims_were_shown_able_to_fail(proofs) -> None:
    lines = prove.report_lines(proofs)
    assert lines == [
        f"{len(NUMBERS)} of {len(NUMBERS)} claims shown able to fail: a change of each check's data just past its "
        "edge fails it, every other claim checked again",
        "  docs/02-memory.md:6 fig 2.1 check 4 (series_at_event): the change also fails fig 2.3 (the same check on "
        "the same runs)",
        "  docs/02-memory.md:79 fig 2.3 check 3 (series_at_event): the change also fails fig 2.1 (the same check on "
        "the same runs)"]
    prove.raise_if_unproven(proofs)  # nothing to name
    assert prove.proof_data(proofs)["shown"] == prove.proof_data(proofs)["total"] == len(NUMBERS)


def test_the_proof_is_the_same_bytes_every_time(proofs, blocks, example_summaries, tables, tmp_path) -> None:
    again = prove.prove_claims(check_claims(blocks, example_summaries, tables), example_summaries, tables)
    first, second = prove.write_proof(proofs, tmp_path / "a"), prove.write_proof(again, tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()


def test_the_summaries_are_not_changed_by_the_proof(proofs, blocks, example_summaries, tables) -> None:
    verdicts = check_claims(blocks, example_summaries, tables)  # after the proof ran (the fixture): the same values
    assert [(v.status, [c.observed for c in v.checks]) for v in verdicts] == [
        ("pass", [c.observed for c in v.checks]) for v in check_claims(blocks, example_summaries, tables)]


# --- planted checks that cannot fail ---------------------------------------------------------------------------


def _planted(blocks: list[FigureBlock], number: str, index: int, **changes: Any) -> FigureBlock:
    block = next(b for b in blocks if b.number == number)
    checks = tuple({**c, **changes} if i == index else c for i, c in enumerate(block.checks))
    return dataclasses.replace(block, checks=checks)


def _unproven(block: FigureBlock, summaries: dict, tables: dict) -> list[str]:
    verdicts = check_claims([block], summaries, tables)
    assert verdicts[0].status == "pass"  # the planted check holds: only the proof can tell it proves nothing
    proofs = prove.prove_claims(verdicts, summaries, tables)
    with pytest.raises(ClaimsUnproven) as caught:
        prove.raise_if_unproven(proofs)
    assert caught.value.exit_code == EXIT_CLAIM_FAILED
    assert caught.value.hint == ("a check no change of the runs can fail proves nothing: narrow its tolerance or make "
                                 "it read the values its claim states (docs/README.md, \"Checks\")")
    return str(caught.value).splitlines()


def test_a_tolerance_too_wide_is_named(blocks, example_summaries, tables) -> None:
    block = _planted(blocks, "1.3", 1, tolerance=1000)
    assert _unproven(block, example_summaries, tables) == [
        "1 of 1 claims not shown able to fail:",
        "  docs/01-step.md:53 fig 1.3 check 2 (event_span) cannot be made to fail: its tolerance is too wide: 63.2 "
        f"would have to move to 1163, more than {PLAUSIBLE:g} times its own size"]
    # FORMAT=github: the same, on the caption's line of the pull request
    proofs = prove.prove_claims(check_claims([block], example_summaries, tables), example_summaries, tables)
    assert prove.unproven_commands(proofs) == [
        "::error file=docs/01-step.md,line=53,title=Fig 1.3::check 2 (event_span) cannot be made to fail: its "
        "tolerance is too wide: 63.2 would have to move to 1163, more than 10 times its own size"]


def test_a_tolerance_just_inside_the_plausible_is_shown_able_to_fail(blocks, example_summaries, tables) -> None:
    """The rule's other side: a tolerance of 5 (63 +/- 5) fails with a change of the span to about 68.5 min."""
    block = _planted(blocks, "1.3", 1, tolerance=5)
    [proof] = prove.prove_claims(check_claims([block], example_summaries, tables), example_summaries, tables)
    assert proof.shown


def test_a_statistic_that_ignores_the_data_is_named(blocks, example_summaries, tables, monkeypatch) -> None:
    """A kind of check whose observation is a constant, given the value checks' perturbation: it moves the data, and
    the check sees nothing of it."""
    monkeypatch.setitem(PERTURBATIONS, "planted_constant", PERTURBATIONS["about"])

    @register("planted_constant", "{label} is {value}", "a statistic that ignores the data", ("value",),
              **{k: v for k, v in REGISTRY["about"].params.items() if k not in COMMON})
    def planted_constant(ctx: Any, p: dict[str, Any]) -> Outcome:
        exp = ctx.expect("about", p["value"], p)
        return Outcome(exp.holds(p["value"]), float(p["value"]), exp.text, {"label": "constant", "value": p["value"]})

    try:
        block = _planted(blocks, "1.2", 1, check="planted_constant")
        assert _unproven(block, example_summaries, tables) == [
            "1 of 1 claims not shown able to fail:",
            "  docs/01-step.md:29 fig 1.2 check 2 (planted_constant) cannot be made to fail: changing the data it "
            "reads does not change what it observes"]
    finally:
        REGISTRY.pop("planted_constant", None)


def test_a_filter_that_selects_no_step_is_named(blocks, example_summaries, tables) -> None:
    """'No step had a reward above 1e9': the comparison selects no step, so the count of none holds whatever the
    runs say; the one-step flip that would fail it needs a reward no run comes near."""
    block = next(b for b in blocks if b.number == "3.3")
    counted = next(c for c in block.checks if c["check"] == "count_steps")
    planted = dataclasses.replace(block, claim="No step had a reward before the filter that high.", checks=(
        {**counted, "says": None, "binds": [], "right": 1e9, "count": "none", "of": None},))
    assert _unproven(planted, example_summaries, tables) == [
        "1 of 1 claims not shown able to fail:",
        "  docs/03-answers.md:69 fig 3.3 check 1 (count_steps) cannot be made to fail: its comparison is out of "
        "reach: a step's sampling.reward_before_filter would have to move from 0.596 to 1010000000, more than 10 "
        "times the largest value (0.756)"]


def test_an_empty_filter_fails_the_check_itself(blocks, example_summaries, tables) -> None:
    """A count over the clean steps of a run every step of which a heat pause touched: the check refuses it (no
    clean step to count), before any proof."""
    summaries = dict(example_summaries)
    hot = dataclasses.replace(summaries["dynamic-filter-seed1"])
    hot.steps = hot.steps.assign(heat_touched=True)
    summaries["dynamic-filter-seed1"] = hot
    block = next(b for b in blocks if b.number == "3.3")
    counted = next(c for c in block.checks if c["check"] == "count_steps")
    planted = dataclasses.replace(block, claim="On every clean step, the reward before the filter was higher.",
                                  checks=({**counted, "says": None, "binds": [], "count": "every", "of": None,
                                           "steps": "clean"},))
    assert report_lines(check_claims([planted], summaries, tables)) == [
        'docs/03-answers.md:69 fig 3.3 FAIL "On every clean step, the reward before the filter was higher": run '
        "dynamic-filter-seed1 has no clean steps with sampling.reward_before_filter (runs: dynamic-filter-seed1)"]


def test_a_claim_without_a_check_is_named(blocks, example_summaries, tables) -> None:
    block = next(b for b in blocks if b.number == "1.3")
    bare = dataclasses.replace(block, claim="Without a watchdog, a dead engine left the job running.", checks=())
    assert _unproven(bare, example_summaries, tables) == [
        "1 of 1 claims not shown able to fail:",
        "  docs/01-step.md:53 fig 1.3 the claim has no check, so nothing can fail it"]


def test_a_kind_of_check_without_a_perturbation_is_named(blocks, example_summaries, tables, monkeypatch) -> None:
    monkeypatch.delitem(PERTURBATIONS, "event_span")
    block = next(b for b in blocks if b.number == "1.3")
    assert _unproven(block, example_summaries, tables)[1] == (
        "  docs/01-step.md:53 fig 1.3 check 2 (event_span) cannot be made to fail: the kind of check 'event_span' "
        "registers no perturbation (@perturbation beside it)")


def test_an_edition_with_a_check_that_cannot_fail_is_not_published(tmp_path, monkeypatch) -> None:
    """Every published edition's build proves its claims: one that cannot fail stops publishing, named."""
    from build_tools.core._exceptions import EditionError
    from build_tools.editions import edition

    line = ("docs/01-step.md:53 fig 1.3 check 2 (event_span) cannot be made to fail: its tolerance is too wide: 63.2 "
            "would have to move to 1163, more than 10 times its own size")

    def unproven(root: Path, settings: Any) -> None:
        assert settings.edition  # an edition's build: build.py proves its claims (proving = prove or edition)
        raise ClaimsUnproven([line], 1, 18)

    monkeypatch.setattr(edition, "run_build", unproven)
    with pytest.raises(EditionError) as caught:
        edition._build(tmp_path, "2026.12", edition.edition_settings(edition.Settings(), 1, quiet=True))
    assert str(caught.value) == ("not publishing 2026.12: 1 of 18 claims not shown able to fail: run make check "
                                 f"PROVE=1, fix the checks, commit, and publish again\n  {line}")
    assert (caught.value.hint, caught.value.exit_code) == (
        "an edition is only published when every claim is shown able to fail", EXIT_CLAIM_FAILED)


# --- the command ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_make_check_prove_names_a_planted_check_and_exits_3(tmp_path) -> None:
    """A chapter's check given a tolerance so wide no data fails it: `manual check` passes, `manual check --prove`
    stops with exit 3 naming it (with `--format github`, also on the caption's line); the shipped chapter back,
    every claim is shown able to fail."""
    root = copy_project(tmp_path / "project")
    chapter = root / "docs" / "01-step.md"
    text = chapter.read_text(encoding="utf-8")
    chapter.write_text(text.replace("    value: 63\n    binds: [\"63\"]\n",
                                    "    value: 63\n    tolerance: 1000\n    binds: [\"63\"]\n", 1), encoding="utf-8")
    manual = [sys.executable, "-m", "build_tools", "--root", str(root), "check"]
    plain = subprocess.run(manual, capture_output=True, text=True, check=False, cwd=root)
    assert plain.returncode == 0, plain.stderr
    proving = subprocess.run([*manual, "--prove", "--format", "github"], capture_output=True, text=True, check=False,
                             cwd=root)
    assert proving.returncode == EXIT_CLAIM_FAILED
    assert proving.stdout.splitlines()[-1] == (
        "::error file=docs/01-step.md,line=53,title=Fig 1.3::check 2 (event_span) cannot be made to fail: its "
        "tolerance is too wide: 63.2 would have to move to 1163, more than 10 times its own size")
    errors = [line for line in proving.stderr.splitlines() if not line.startswith(("[", "WARNING"))]
    assert errors[:3] == [
        f"ERROR 1 of {len(NUMBERS)} claims not shown able to fail:",
        "  docs/01-step.md:53 fig 1.3 check 2 (event_span) cannot be made to fail: its tolerance is too wide: 63.2 "
        "would have to move to 1163, more than 10 times its own size",
        "hint: a check no change of the runs can fail proves nothing: narrow its tolerance or make it read the "
        "values its claim states (docs/README.md, \"Checks\")"], proving.stderr
    shutil.copy(ROOT / "docs" / "01-step.md", chapter)  # the shipped chapter: every claim shown able to fail
    fixed = subprocess.run([*manual, "--prove"], capture_output=True, text=True, check=False, cwd=root)
    assert fixed.returncode == 0, fixed.stderr
    assert f"{len(NUMBERS)} of {len(NUMBERS)} claims shown able to fail: " in fixed.stdout
    assert json.loads((root / "build" / "proof.json").read_text())["shown"] == len(NUMBERS)
