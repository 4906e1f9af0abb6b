"""The contract can be run by another tool: tests/contract_reader.py, written from the document's own rules and
imports nothing of build_tools, gives every verdict `manual watch` and `manual compare` give, on every item of
every example run: each Metrics range (per step, first value, whole-run median, logged share, or not applicable
by its envelope) and where each claim applies. A claim's own checks are the manual's registry's (rules.claims):
this reader does not re-implement them."""

from __future__ import annotations

from pathlib import Path

import contract_reader

WATCH_WORDS = {"inside": "inside", "outside": "outside", "not_applicable": "not_applicable"}


def test_an_independent_reader_agrees_with_watch_and_compare_on_every_example_run(built_manual: Path) -> None:
    from test_watch import finished

    from build_tools.checking.contract import read_contract
    from build_tools.commands import compare
    from build_tools.core._layout import Layout

    layout = Layout(built_manual)
    contract = built_manual / "site" / "contract.json"
    document = read_contract(contract)
    runs = sorted(path for path in (built_manual / "runs").iterdir() if (path / "dashboard").is_dir())
    verdicts: dict[str, int] = {}
    for run in runs:
        theirs = contract_reader.read(contract, run)
        _, rows = compare.compare(layout, compare.load_reader_run(run))
        by_compare = {row.metric: ("not_logged" if row.verdict.startswith("cannot compare") else
                                   "not_applicable" if row.verdict.startswith("not applicable") else
                                   "inside" if row.holds else "outside") for row in rows}
        watch = finished(run, document, built_manual)
        for item in document.ranges:
            status = watch.judge.status[("range", item.id)]
            by_watch = ("outside" if watch.judge.records[item.id].outside else
                        "not_logged" if status.status == "undecided" else status.status)
            assert theirs[item.id] == by_compare[item.id] == by_watch, (run.name, item.id, theirs[item.id],
                                                                        by_compare[item.id], by_watch)
            verdicts[theirs[item.id] or ""] = verdicts.get(theirs[item.id] or "", 0) + 1
        for claim in document.claims:  # a claim's envelope: the reader and watch agree on where it applies
            judged = watch.judge.status[("claim", claim.id)]
            envelope_says = theirs[claim.id] == "not_applicable"
            assert envelope_says == (judged.status == "not_applicable" and (judged.why or "").startswith(
                tuple(f"{fact.fact}: yours is" for fact in claim.envelope))), (run.name, claim.id)
    # Each kind of verdict is among them: the example runs hold rows, break others, and some are of another setup.
    assert set(verdicts) == {"inside", "outside", "not_applicable"}, verdicts
