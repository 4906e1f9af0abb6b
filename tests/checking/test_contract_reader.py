"""The contract can be run by another tool: tests/contract_reader.py, written from the document's own rules and
imports nothing of build_tools, gives every verdict `manual watch` and `manual compare` give, on every item of
every example run: each Metrics range (per step, first value, whole-run median under the heat rule, logged share,
or not applicable by its envelope) and each claim (inside, outside, undecided, not applicable), by evaluating the
claim's checks from the rules the contract writes for each kind. A check the contract gives a reason for (a reader
of the run's files cannot evaluate it simply) is counted, not skipped silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests import contract_reader

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "heat-rule"
COMPARE_WORDS = {True: "inside", False: "outside", None: "undecided"}


def _verdicts(run: Path, contract: Path, root: Path) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """The reader's, compare's and watch's verdict on every item (ranges and claims) of one run."""
    from build_tools.checking.contract import read_contract
    from build_tools.commands import compare
    from build_tools.core._layout import Layout
    from tests.commands.watch.test_watch import finished

    layout = Layout(root)
    document = read_contract(contract)
    theirs = contract_reader.read(contract, run)
    yours = compare.load_reader_run(run)
    _, rows = compare.compare(layout, yours)
    by_compare = {row.metric: ("not_logged" if row.verdict.startswith("cannot compare") else
                               "not_applicable" if row.verdict.startswith("not applicable") else
                               "inside" if row.holds else "outside") for row in rows}
    numbers = {claim.number: claim.id for claim in document.claims}
    judged = {numbers[claim.number]: COMPARE_WORDS[claim.holds] for claim in compare.claims_on(layout, yours)}
    by_compare |= {claim.id: judged.get(claim.id, "not_applicable") for claim in document.claims}
    watch = finished(run, document, root)
    by_watch = {}
    for item in document.ranges:
        status = watch.judge.status[("range", item.id)]
        by_watch[item.id] = ("outside" if watch.judge.records[item.id].outside else
                             "not_logged" if status.status == "undecided" else status.status)
    by_watch |= {claim.id: watch.judge.status[("claim", claim.id)].status for claim in document.claims}
    return theirs, by_compare, by_watch


def test_an_independent_reader_agrees_with_watch_and_compare_on_every_example_run(built_manual: Path) -> None:
    contract = built_manual / "site" / "contract.json"
    document = json.loads(contract.read_text(encoding="utf-8"))
    runs = sorted(path for path in (built_manual / "runs").iterdir() if (path / "dashboard").is_dir())
    assert len(runs) == 20
    seen: dict[str, int] = {}
    with_reason: set[tuple[str, str]] = set()
    for run in runs:
        theirs, by_compare, by_watch = _verdicts(run, contract, built_manual)
        for item in [*document["ranges"], *document["claims"]]:
            if theirs[item["id"]] is None:  # a claim with a check the contract says a reader cannot evaluate
                with_reason.add((run.name, item["id"]))
                assert by_compare[item["id"]] == by_watch[item["id"]], (run.name, item["id"])
                continue
            assert theirs[item["id"]] == by_compare[item["id"]] == by_watch[item["id"]], (
                run.name, item["id"], theirs[item["id"]], by_compare[item["id"]], by_watch[item["id"]])
            seen[f"{item.get('kind')} {theirs[item['id']]}"] = seen.get(f"{item.get('kind')} {theirs[item['id']]}",
                                                                         0) + 1
    # Every kind of verdict is among them: the example runs hold rows and claims, break others, leave some claims
    # undecided (the run lacks what they read), and some are of another setup.
    assert set(seen) == {f"{kind} {verdict}" for kind in ("range", "claim")
                         for verdict in ("inside", "outside", "not_applicable")} | {"claim undecided"}, seen
    # Every claim of the contract, all 18, is evaluated by the reader: none has a check the contract gives a reason
    # for (a reader of the run's files could not evaluate it simply). Were one added, it is counted here.
    reasoned = {claim["id"] for claim in document["claims"]
                if any(check["one_run"] and check["reason"] for check in claim["checks"])}
    assert len(document["claims"]) == 18 and reasoned == set() and with_reason == set(), sorted(reasoned)
    judged = {claim["id"] for claim in document["claims"] if any(check["one_run"] for check in claim["checks"])}
    assert len(judged) == 12, sorted(judged)  # the other 6 set the manual's runs against one another


def test_the_contract_writes_a_rule_for_every_kind_of_check_a_reader_evaluates(built_manual: Path) -> None:
    """Derived from the contract: each check judged on one run has rules['check.<kind>'] (the reader evaluates
    every such kind), or a reason; and the words' tolerances are resolved into intervals."""
    document = json.loads((built_manual / "site" / "contract.json").read_text(encoding="utf-8"))
    one_run = [check for claim in document["claims"] for check in claim["checks"] if check["one_run"]]
    kinds = {check["check"] for check in one_run if check["reason"] is None}
    assert kinds and all(f"check.{kind}" in document["rules"] for kind in kinds)
    assert kinds <= set(contract_reader.CHECKS)
    assert all(f"check.{check['check']}" not in document["rules"] for check in one_run if check["reason"])
    assert {key.removeprefix("check.") for key in document["rules"] if key.startswith("check.")} <= set(
        contract_reader.CHECKS)  # every kind the contract writes a rule for, this reader evaluates
    about = next(check for check in one_run if check["check"] == "about")
    assert about["interval"] == {"low": 1.5, "high": 2.5, "strict": False, "slack": True}  # "about 2": +/- 0.5


def test_the_heat_rule_decides_a_median_as_watch_and_compare_do(built_manual: Path) -> None:
    """A run whose heat-guard pauses touched six of its twelve steps, each 45 s longer (tests/samples/heat-rule):
    the reader leaves those steps out of the perf/step_time median (rules.heat_touched), as `compare` and `watch`
    do, and gets inside; the median of every step would be outside."""
    contract = built_manual / "site" / "contract.json"
    run = SAMPLES / "det-triton-heat"
    theirs, by_compare, by_watch = _verdicts(run, contract, built_manual)
    for item in theirs:
        if theirs[item] is not None:
            assert theirs[item] == by_compare[item] == by_watch[item], (item, theirs[item], by_compare[item],
                                                                        by_watch[item])
    assert theirs["perf/step_time"] == "inside"
    document = json.loads(contract.read_text(encoding="utf-8"))
    item = next(item for item in document["ranges"] if item["id"] == "perf/step_time")
    read = contract_reader.read_run(run)
    assert sorted(read.touched) == [1, 3, 5, 7, 9, 11]
    read.touched = set()  # the rule ignored: every step's median
    assert contract_reader.judge_range(item, read) == "outside"


def _each_check(root: Path, runs: dict[str, Path]) -> dict[str, set[str]]:
    """Every check of every claim that has a written rule, on each run alone: the reader's result (pass, fail, or
    lacks what it reads) asserted equal to the registered check's; the results seen, by kind of check."""
    from build_tools.checking import blocks as blocks_stage
    from build_tools.checking.checks import evaluate, validate
    from build_tools.commands import compare
    from build_tools.core._layout import Layout
    from build_tools.core._types import FigureBlock

    layout = Layout(root)
    document = json.loads((root / "site" / "contract.json").read_text(encoding="utf-8"))
    blocks = {block.id: block for block in blocks_stage.read_blocks(layout.docs, layout.figures_src, pages=False)}
    tables = blocks_stage.load_tables(layout.data)
    results: dict[str, set[str]] = {}
    for name, folder in runs.items():
        summary, read = compare.load_reader_run(folder), contract_reader.read_run(folder)
        for claim in document["claims"]:
            block = blocks[claim["id"]]
            for index, check in enumerate(claim["checks"]):
                if f"check.{check['check']}" not in document["rules"]:
                    continue
                params = {key: value for key, value in block.checks[index].items() if key != "runs"}
                alone = FigureBlock(**{**block.__dict__, "runs": (summary.run_id,), "checks": ()})
                found = evaluate(validate(params, alone, 1)[0], alone, {summary.run_id: summary}, tables, block.prose)
                theirs = "lacks" if found.status == "fail" and found.observed is None else found.status
                assert contract_reader.check_result(check, read) == theirs, (claim["id"], check["check"], name,
                                                                            theirs, found.message)
                results.setdefault(f"{claim['id']} {check['check']}", set()).add(theirs)
    return results


def test_each_check_by_its_rule_gives_the_registry_s_result_on_every_run(built_manual: Path) -> None:
    """Finer than a claim's verdict (where one failing check hides another): every check of every claim that has a
    written rule, on each of the 20 example runs alone, gives by the reader what the registered check gives (pass,
    fail, or the run lacks what it reads), the checks a claim makes of named runs (`runs:`, such as
    repeats_identical) included."""
    document = json.loads((built_manual / "site" / "contract.json").read_text(encoding="utf-8"))
    runs = {path.name: path for path in sorted((built_manual / "runs").iterdir()) if (path / "dashboard").is_dir()}
    results: dict[str, set[str]] = {}
    for check, found in _each_check(built_manual, runs).items():
        results.setdefault(check.split()[1], set()).update(found)
    used = {check["check"] for claim in document["claims"] for check in claim["checks"]}
    assert set(results) == {kind for kind in used if f"check.{kind}" in document["rules"]}
    # Every check passes somewhere; 11 kinds also fail on some run and 9 find a run lacking what they read.
    assert all("pass" in found for found in results.values())
    assert sum("fail" in found for found in results.values()) >= 11, results
    assert sum("lacks" in found for found in results.values()) >= 9, results


def test_checks_no_example_run_breaks_fail_alike_on_a_broken_run(built_manual: Path) -> None:
    """phase_order and share pass on every example run; on a run where one step's phases overlap and the train time
    is halved (tests/samples/claims-broken), they fail by the reader's rules as by the registry, and every verdict
    is compare's and watch's."""
    run = Path(__file__).resolve().parents[1] / "samples" / "claims-broken" / "det-triton-broken"
    results = _each_check(built_manual, {run.name: run})
    assert results["fig-step-phases phase_order"] == results["fig-step-shares share"] == {"fail"}
    theirs, by_compare, by_watch = _verdicts(run, built_manual / "site" / "contract.json", built_manual)
    assert all(theirs[item] == by_compare[item] == by_watch[item] for item in theirs), [
        (item, theirs[item], by_compare[item], by_watch[item]) for item in theirs
        if not theirs[item] == by_compare[item] == by_watch[item]]
    assert (theirs["fig-step-phases"], theirs["fig-step-shares"]) == ("outside", "outside")


def test_a_run_on_more_gpus_than_a_claim_s_runs_is_not_judged_by_it(built_manual: Path) -> None:
    """A run that shows two GPUs (tests/samples/claims-broken/det-triton-two-gpus): `compare` and `watch` judge no
    claim on it, and by the contract's rules.claims (each claim's gpus and nodes) the reader neither; without that
    rule it would judge some."""
    contract = built_manual / "site" / "contract.json"
    run = Path(__file__).resolve().parents[1] / "samples" / "claims-broken" / "det-triton-two-gpus"
    theirs, by_compare, by_watch = _verdicts(run, contract, built_manual)
    assert all(theirs[item] == by_compare[item] == by_watch[item] for item in theirs)
    document = json.loads(contract.read_text(encoding="utf-8"))
    assert {theirs[claim["id"]] for claim in document["claims"]} == {"not_applicable"}
    read = contract_reader.read_run(run)
    assert len(contract_reader.gpus_shown(read)) == 2
    blind = [{**claim, "gpus": [], "nodes": []} for claim in document["claims"]]  # the rule ignored
    assert {contract_reader.judge_claim(claim, read) for claim in blind} > {"not_applicable"}
    # Its checks, each on the run alone, still agree with the registry: gpu_count (1) fails by both.
    assert _each_check(built_manual, {run.name: run})["fig-step-phases gpu_count"] == {"fail"}


def test_a_run_not_colocated_is_judged_by_no_claim_by_any_of_the_three(built_manual: Path) -> None:
    """Colocation is an enforced fact of the contract's envelope: a run alike but for `colocate: false`
    (tests/samples/claims-broken/det-triton-not-colocated) is judged by no claim, by the reader, compare and watch
    alike (compare used to judge it, its setup list lacking the fact)."""
    contract = built_manual / "site" / "contract.json"
    run = Path(__file__).resolve().parents[1] / "samples" / "claims-broken" / "det-triton-not-colocated"
    theirs, by_compare, by_watch = _verdicts(run, contract, built_manual)
    assert all(theirs[item] == by_compare[item] == by_watch[item] for item in theirs), [
        (item, theirs[item], by_compare[item], by_watch[item]) for item in theirs
        if not theirs[item] == by_compare[item] == by_watch[item]]
    document = json.loads(contract.read_text(encoding="utf-8"))
    assert {theirs[claim["id"]] for claim in document["claims"]} == {"not_applicable"}
