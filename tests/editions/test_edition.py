"""Editions: publish with mike as a transaction, the manifest, verify by rebuilding from a tag, diff two editions.

Most tests run against a stub build (a tiny site and claims file written from one number in one run), so
the git and mike logic is exercised in seconds; one module-scoped fixture publishes the real manual twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from build_tools.checking import contract
from build_tools.cli import main
from build_tools.core._exceptions import EXIT_CLAIM_FAILED, EXIT_DIFFERS, ClaimsFailed, EditionError, push_failed
from build_tools.core._layout import PROJECT_INPUTS
from build_tools.core._settings import Settings, from_environment
from build_tools.core._staging import staging
from build_tools.editions import _git, _manifest, edition
from build_tools.editions.stamp import load_stamp
from build_tools.store.fingerprint import LIBRARIES
from tests.conftest import ROOT, SAMPLES, copy_project

# --- a tiny project and a stub build -----------------------------------------------------------------------

EDITION_YML = """edition: "{edition}"
date: {date}
miles:
  image: radixark/miles:latest
  branch: main
  commit: 08752a1
  commit_date: 2026-10-15
"""
RUN_YAML = "run_id: demo\nprovenance: example\ntitle: Demo\ndate: 2026-10-01\nseed: 1\n"
LIMIT = 10.0  # the stub's one claim: the demo run's value is below this


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def sha(root: Path, ref: str) -> str | None:
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", ref], cwd=root, capture_output=True, text=True)
    return done.stdout.strip() or None


def show(root: Path, path: str, ref: str = "gh-pages") -> str:
    return git(root, "show", f"{ref}:{path}")


def init_repository(root: Path) -> None:
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "config", "user.name", "Edition Tests")
    git(root, "config", "user.email", "editions@example.invalid")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "config", "tag.gpgsign", "false")


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "--all")
    git(root, "commit", "--quiet", "--message", message)
    return git(root, "rev-parse", "HEAD")


def write_edition(root: Path, number: str, date: str) -> None:
    (root / "edition.yml").write_text(EDITION_YML.format(edition=number, date=date), encoding="utf-8")


def set_value(root: Path, value: float) -> None:
    (root / "runs" / "demo" / "value.txt").write_text(f"{value}\n", encoding="utf-8")


def tiny_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "runs" / "demo").mkdir(parents=True)
    (root / "runs" / "demo" / "run.yaml").write_text(RUN_YAML, encoding="utf-8")
    set_value(root, 4.0)
    write_edition(root, "2026.10", "2026-10-15")
    (root / ".gitignore").write_text("build/\nsite/\n", encoding="utf-8")
    init_repository(root)
    commit_all(root, "the tiny manual")
    return root


def next_edition(root: Path) -> None:
    """A third edition, committed and ready to publish."""
    write_edition(root, "2026.12", "2026-12-15")
    set_value(root, 6.0)
    commit_all(root, "edition 2026.12")


def stub_build(root: Path, settings: Settings | None = None) -> None:
    """What the real build leaves behind, in miniature: claims.json, a figure, the Metrics page, a site."""
    value = float((root / "runs" / "demo" / "value.txt").read_text())
    status = "pass" if value < LIMIT else "fail"
    margin = {"headroom": LIMIT - value, "edge": LIMIT, "unit": "", "fraction": (LIMIT - value) / LIMIT,
              "value": value, "worst": "demo"}
    claims = {"figures": [{"id": "fig-demo", "number": "1.1", "claim": f"The value stays below {LIMIT:g}.",
                          "status": status, "checks": [{"name": "below", "status": status, "says": "stays below 10",
                                                        "observed": {"value": value}, "margin": margin}]}]}
    (root / "build" / "docs" / "figures").mkdir(parents=True, exist_ok=True)
    (root / "build" / "claims.json").write_text(json.dumps(claims), encoding="utf-8")
    if status == "fail":
        raise ClaimsFailed([f"fig-demo: value is {value}, expected below {LIMIT:g}"], 1, 1)
    epoch = settings.epoch if settings is not None and settings.epoch is not None else "unset"
    figures = root / "build" / "docs" / "figures"
    (figures / "fig-demo.svg").write_text(f"<svg><!-- {epoch} --><text>{value}</text></svg>\n", encoding="utf-8")
    (figures / "fig-demo.csv").write_text(f"value\n{value}\n", encoding="utf-8")
    (root / "build" / "docs" / "06-metrics.md").write_text(
        f"# Metrics\n\n## Rollout\n\n| Metric | Our range |\n|---|---|\n| demo/value | {value} |\n", encoding="utf-8")
    stamp = load_stamp(root / "edition.yml")
    footer = f"<footer>{stamp.text}</footer>"
    with staging(root / "site") as site:  # as the real build: site/ is replaced whole or not at all
        (site / "step").mkdir(parents=True, exist_ok=True)
        (site / "index.html").write_text(f"<html><body>value {value}{footer}</body></html>\n", encoding="utf-8")
        (site / "step" / "index.html").write_text(f"<html><body>{footer}</body></html>\n", encoding="utf-8")
        # The contract `watch --contract` reads, which the manifest hashes (with its schema).
        document = contract.contract_of(stamp.edition, stamp.date, stamp.commit, [])
        (site / contract.CONTRACT_FILE).write_text(contract.dumps(document), encoding="utf-8")
        (site / contract.SCHEMA_FILE).write_text(contract.schema_text(), encoding="utf-8")


def stub_rebuild(checkout: Path, epoch: int, *, quiet: bool) -> None:
    """verify's rebuild, in process: the stub build with the edition's SOURCE_DATE_EPOCH, as the checkout's command
    line would read it."""
    stub_build(checkout, from_environment({"SOURCE_DATE_EPOCH": str(epoch), "MANUAL_PUBLISH": "1"}))


# The real stages, kept before any test swaps in the stubs: the tests of the real manual put them back.
REAL_STAGES = {"run_build": edition.run_build, "rebuild": edition.rebuild}


@contextlib.contextmanager
def real_pipeline() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, stage in REAL_STAGES.items():
            patch.setattr(edition, name, stage)
        yield


@pytest.fixture(scope="module")
def two_editions(tmp_path_factory: pytest.TempPathFactory, stubbed: pytest.MonkeyPatch) -> Path:
    """A repository with 2026.10 published, then 2026.11 after one run changed; the branch is only read."""
    root = tiny_project(tmp_path_factory.mktemp("two") / "manual")
    edition.publish(root, "2026.10", quiet=True, say=lambda line: None)
    write_edition(root, "2026.11", "2026-11-15")
    set_value(root, 5.5)
    commit_all(root, "edition 2026.11: the demo run re-measured")
    edition.publish(root, "2026.11", quiet=True, say=lambda line: None)
    return root


@pytest.fixture()
def copy_of(two_editions: Path, tmp_path: Path) -> Path:
    """A private copy of the two-edition repository, for the tests that try to change it."""
    target = tmp_path / "manual"
    shutil.copytree(two_editions, target, symlinks=True)
    return target


def refs(root: Path) -> str:
    return git(root, "for-each-ref", "--format=%(refname) %(objectname)")


# --- the published branch ----------------------------------------------------------------------------------

def test_branch_has_one_directory_per_edition_versions_json_and_latest(two_editions: Path) -> None:
    top = git(two_editions, "ls-tree", "--name-only", "gh-pages").splitlines()
    assert sorted(top) == [".nojekyll", "2026.10", "2026.11", "index.html", "latest", "versions.json"]
    # latest is mike's symlink to the newest edition; the root page sends readers to latest.
    assert git(two_editions, "ls-tree", "gh-pages", "latest").split()[0] == "120000"
    assert show(two_editions, "latest") == "2026.11"
    assert "latest/" in show(two_editions, "index.html")


def test_versions_json_lists_every_edition_and_latest_is_the_newest(two_editions: Path) -> None:
    versions = json.loads(show(two_editions, "versions.json"))
    assert versions == [{"version": "2026.11", "title": "2026.11", "aliases": ["latest"]},
                        {"version": "2026.10", "title": "2026.10", "aliases": []}]


def test_each_edition_carries_its_own_footer_stamp(two_editions: Path) -> None:
    for number, date in (("2026.10", "2026-10-15"), ("2026.11", "2026-11-15")):
        page = show(two_editions, f"{number}/index.html")
        assert f"Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · {date} · Edition {number}" in page
        assert f"Edition {number}" in show(two_editions, f"{number}/step/index.html")


def test_each_edition_is_tagged_on_the_commit_it_was_built_from(two_editions: Path) -> None:
    assert sha(two_editions, "edition-2026.11^{commit}") == sha(two_editions, "main")
    assert sha(two_editions, "edition-2026.10^{commit}") == sha(two_editions, "main~1")


def test_manifest_records_edition_tools_runs_figures_claims_and_metrics(two_editions: Path) -> None:
    manifest = json.loads(show(two_editions, "2026.10/manifest.json"))
    assert manifest["edition"] == "2026.10" and manifest["date"] == "2026-10-15"
    assert manifest["miles"] == {"image": "radixark/miles:latest", "branch": "main", "commit": "08752a1",
                                 "commit_date": "2026-10-15"}
    assert manifest["project_commit"] == sha(two_editions, "edition-2026.10^{commit}")
    assert manifest["source_date_epoch"] == 1792022400  # 2026-10-15T00:00:00Z
    assert list(manifest["tools"]) == sorted(["python", *LIBRARIES])  # every library the cache keys read
    assert manifest["tools"]["mike"] == importlib.metadata.version("mike")  # the installed one, as pinned
    run = manifest["runs"]["demo"]
    assert run["files"] == 2 and len(run["sha256"]) == 64
    assert run["provenance"]["provenance"] == "example" and run["provenance"]["date"] == "2026-10-01"
    figure = manifest["figures"]["fig-demo"]
    assert len(figure["svg_sha256"]) == 64 and len(figure["csv_sha256"]) == 64
    assert manifest["claims"]["fig-demo"]["verdict"] == "pass"
    assert manifest["claims"]["fig-demo"]["observed"] == {"below": {"value": 4.0}}
    assert manifest["metrics"] == {"Rollout › demo/value": {"Our range": "4.0"}}
    assert set(manifest["pages"]) == {"index.html", "step/index.html"}
    published = {name: subprocess.run(["git", "-C", str(two_editions), "show", f"gh-pages:2026.10/{name}"],
                                      capture_output=True, check=True).stdout
                 for name in (contract.CONTRACT_FILE, contract.SCHEMA_FILE)}  # the bytes a reader's watch fetches
    assert manifest["contract"] == {name: hashlib.sha256(data).hexdigest() for name, data in published.items()}


def test_manifest_and_changes_have_readable_pages(two_editions: Path) -> None:
    page = show(two_editions, "2026.10/manifest.html")
    assert "Edition 2026.10: manifest" in page and "<table>" in page and "fig-demo" in page
    assert "changes.html" not in git(two_editions, "ls-tree", "--name-only", "gh-pages", "2026.10/")
    changes = show(two_editions, "2026.11/changes.html")
    assert "What changed from edition 2026.10 to 2026.11" in changes
    assert "run demo: value.txt changed" in changes and "4.0 → 5.5" in changes
    assert "headroom 6 -&gt; 4.5" in changes


def test_the_stub_build_saw_the_edition_date_as_source_date_epoch(two_editions: Path) -> None:
    assert "<!-- 1794700800 -->" in (two_editions / "build" / "docs" / "figures" / "fig-demo.svg").read_text()


# --- diff ----------------------------------------------------------------------------------------------------

def test_diff_names_the_changed_run_and_the_moved_claim_values(two_editions: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(two_editions), "diff", "2026.10", "2026.11"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "Edition 2026.10 → 2026.11"
    assert "  run demo: value.txt changed" in text
    assert "  Fig 1.1 'stays below 10': headroom 6 -> 4.5 (fraction 0.6 -> 0.45)" in text
    assert "  Fig 1.1 'stays below 10': below.value: 4.0 → 5.5" in text
    assert "  figure fig-demo: data (CSV) and image (SVG) changed" in text
    assert "  Metrics row Rollout › demo/value, Our range: 4.0 → 5.5" in text


def test_changes_list_added_and_removed_entries() -> None:
    old = {"edition": "1", "runs": {"a": {"sha256": "1"}}, "claims": {}, "figures": {}, "metrics": {}}
    new = {"edition": "2", "runs": {"b": {"sha256": "2"}}, "claims": {"fig-x": {"verdict": "pass"}},
           "figures": {}, "metrics": {}}
    found = _manifest.changes(old, new)
    assert found["runs"] == ["run b added", "run a removed"]
    assert found["claims"] == ["claim fig-x added"]


def test_a_figure_is_recorded_by_the_files_it_ships_its_png_only_when_it_has_one(tmp_path: Path) -> None:
    """Editions since issue 22 ship no PNG; one built before did, and verifying it rebuilds it with its own code,
    so its manifest, computed again, must still record that PNG and nothing for a figure without one."""
    for name, text in {"fig-new.svg": "<svg/>", "fig-new.dark.svg": "<svg id='d'/>", "fig-new.csv": "a\n1\n",
                       "fig-new.json": '{"description": "synthesized"}',
                       "fig-old.svg": "<svg/>", "fig-old.csv": "a\n2\n", "fig-old.png": "png bytes"}.items():
        (tmp_path / name).write_text(text)
    digest = {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in tmp_path.iterdir()}
    assert _manifest.figures_section(tmp_path) == {
        "fig-new": {"svg_sha256": digest["fig-new.svg"], "csv_sha256": digest["fig-new.csv"],
                    "json_sha256": digest["fig-new.json"], "dark_svg_sha256": digest["fig-new.dark.svg"]},
        "fig-old": {"svg_sha256": digest["fig-old.svg"], "csv_sha256": digest["fig-old.csv"],
                    "png_sha256": digest["fig-old.png"]}}


def _with_descriptors(figures: dict[str, dict[str, str]], **descriptors: str) -> dict[str, Any]:
    return {"figures": {name: {**entry, **({"json_sha256": descriptors[name]} if name in descriptors else {})}
                        for name, entry in figures.items()}}


FIGURES = {"fig-a": {"svg_sha256": "s1", "csv_sha256": "c1"}, "fig-b": {"svg_sha256": "s2", "csv_sha256": "c2"}}


def test_an_edition_published_before_descriptors_were_recorded_still_verifies() -> None:
    assert _manifest.differences(_with_descriptors(FIGURES), _with_descriptors(FIGURES, **{"fig-a": "j1",
                                                                                            "fig-b": "j2"})) == []


def test_a_changed_or_unpublished_descriptor_is_a_difference_once_descriptors_are_recorded() -> None:
    published = _with_descriptors(FIGURES, **{"fig-a": "j1"})
    assert _manifest.differences(published, _with_descriptors(FIGURES, **{"fig-a": "jX", "fig-b": "j2"})) == [
        "figures.fig-a.json_sha256: published j1, rebuilt jX",
        "figures.fig-b.json_sha256: not published, rebuilt j2"]
    assert _manifest.differences(published, _with_descriptors(FIGURES)) == [
        "figures.fig-a.json_sha256: published j1, missing from the rebuild"]


def test_changes_name_a_changed_descriptor_only_where_both_editions_record_one() -> None:
    old, new = _with_descriptors(FIGURES, **{"fig-a": "j1"}), _with_descriptors(FIGURES, **{"fig-a": "j9",
                                                                                           "fig-b": "j2"})
    assert _manifest._figure_changes(old["figures"], new["figures"]) == ["figure fig-a: descriptor (JSON) changed"]
    assert _manifest._figure_changes(_with_descriptors(FIGURES)["figures"], new["figures"]) == []


# --- verify --------------------------------------------------------------------------------------------------

def test_verify_rebuilds_the_tag_identically(two_editions: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(two_editions), "verify", "2026.10"]) == 0
    assert "edition 2026.10 rebuilt from tag edition-2026.10 is identical to its manifest" in capsys.readouterr().out



def _verify_rebuilt_by(rebuild: Any, copy_of: Path, stubbed: pytest.MonkeyPatch) -> int:
    """`manual verify 2026.10` with the edition rebuilt by `rebuild` (the stub restored after)."""
    stubbed.setattr(edition, "rebuild", rebuild)
    try:
        return main(["--root", str(copy_of), "verify", "2026.10"])
    finally:
        stubbed.setattr(edition, "rebuild", stub_rebuild)


def test_verify_reports_every_difference(copy_of: Path, stubbed: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    def drifting(checkout: Path, epoch: int, *, quiet: bool) -> None:
        stub_rebuild(checkout, epoch + 1, quiet=quiet)  # a rebuild that ignores the edition date

    assert _verify_rebuilt_by(drifting, copy_of, stubbed) == EXIT_DIFFERS
    out = capsys.readouterr().out
    assert "differs from its manifest in 1 places:" in out
    assert "  fig 1.1 (figures.fig-demo.svg_sha256): published " in out


def test_verify_rebuilt_by_another_python_says_so_in_one_warning(copy_of: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from build_tools.store import fingerprint

    built = json.loads(show(copy_of, "2026.10/manifest.json"))["tools"]
    monkeypatch.setattr(fingerprint, "tool_versions", lambda: {**built, "python": "3.99.0"})  # the rebuild's Python
    assert main(["--root", str(copy_of), "verify", "2026.10"]) == 0
    captured = capsys.readouterr()
    assert "edition 2026.10 rebuilt from tag edition-2026.10 is identical to its manifest" in captured.out
    assert captured.err == (f"WARNING edition 2026.10 was built with Python {built['python']} and is rebuilt here "
                            "with Python 3.99.0: its bytes are identical all the same\n")


def test_verify_rebuilt_by_another_python_with_other_bytes_differs(copy_of: Path, stubbed: pytest.MonkeyPatch,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from build_tools.store import fingerprint

    built = json.loads(show(copy_of, "2026.10/manifest.json"))["tools"]
    monkeypatch.setattr(fingerprint, "tool_versions", lambda: {**built, "python": "3.99.0", "pandas": "9.0"})

    def drifting(checkout: Path, epoch: int, *, quiet: bool) -> None:
        stub_rebuild(checkout, epoch + 1, quiet=quiet)

    assert _verify_rebuilt_by(drifting, copy_of, stubbed) == EXIT_DIFFERS
    captured = capsys.readouterr()
    assert "differs from its manifest in 1 places:" in captured.out and "tools." not in captured.out
    assert captured.err == (f"WARNING edition 2026.10 was built with Python {built['python']}, pandas "
                            f"{built['pandas']} and is rebuilt here with Python 3.99.0, pandas 9.0: the differences "
                            "below may come from them\n")


def test_tool_changes_name_a_tool_an_older_manifest_did_not_record() -> None:
    assert _manifest.tool_changes({}, {"tools": {"python": "3.12.1", "numpy": "2.4.6"}}) == (
        ["Python (not recorded)", "numpy (not recorded)"], ["Python 3.12.1", "numpy 2.4.6"])
    assert _manifest.tool_changes({"tools": {"python": "3.12.1"}}, {"tools": {"python": "3.12.1"}}) == ([], [])


def test_verify_reports_a_contract_that_differs(copy_of: Path, stubbed: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def other_contract(checkout: Path, epoch: int, *, quiet: bool) -> None:
        stub_rebuild(checkout, epoch, quiet=quiet)
        with (checkout / "site" / contract.CONTRACT_FILE).open("a", encoding="utf-8") as handle:
            handle.write("\n")  # what `watch --contract` would read is not what was published

    assert _verify_rebuilt_by(other_contract, copy_of, stubbed) == EXIT_DIFFERS
    out = capsys.readouterr().out
    assert "differs from its manifest in 1 places:" in out
    assert f"  contract.{contract.CONTRACT_FILE}: published " in out


def test_verify_names_a_claim_that_differs_as_make_check_does() -> None:
    published = {"claims": {"fig-dead-engine": {"number": "1.3", "verdict": "pass"}, "fig-old": {"verdict": "pass"}}}
    rebuilt = {"claims": {"fig-dead-engine": {"number": "1.3", "verdict": "fail"}, "fig-old": {"verdict": "fail"}}}
    assert _manifest.differences(published, rebuilt) == [
        "fig 1.3 (claims.fig-dead-engine.verdict): published pass, rebuilt fail",
        "claims.fig-old.verdict: published pass, rebuilt fail"]  # a claim recorded without its number: its path


# --- refusals: one line that says what to do, nothing changed ---------------------------------------------

def refuse(root: Path, argv: list[str], capsys: pytest.CaptureFixture[str], code: int = 2) -> str:
    before = refs(root)
    assert main(["--root", str(root), *argv]) == code
    assert refs(root) == before  # the branch and the tags are untouched
    error = capsys.readouterr().err.splitlines()
    assert error[0].startswith("ERROR ")
    return error[0].removeprefix("ERROR ")


@pytest.mark.parametrize("number", ["2026.13", "2026.1", "26.10", "2026-10", "latest"])
def test_malformed_edition_number_is_refused(copy_of: Path, number: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert refuse(copy_of, ["publish", number], capsys) == (
        f"'{number}' is not an edition number: use YEAR.MONTH with a two-digit month, e.g. make publish "
        "EDITION=2026.10")


def test_missing_edition_number_is_refused(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refuse(copy_of, ["publish"], capsys) == (
        "no edition number given: name one as YEAR.MONTH, e.g. make publish EDITION=2026.10")


def test_dirty_tree_is_refused(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_edition(copy_of, "2026.12", "2026-12-15")
    assert refuse(copy_of, ["publish", "2026.12"], capsys) == (
        "the working tree has uncommitted changes (1 path: edition.yml): commit or stash them, then publish again")


def test_untracked_file_makes_the_tree_dirty_but_build_output_does_not(copy_of: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (copy_of / "notes.txt").write_text("draft\n")
    assert "(1 path: notes.txt)" in refuse(copy_of, ["publish", "2026.11", "--replace"], capsys)
    (copy_of / "notes.txt").unlink()
    (copy_of / "site" / "stray.html").write_text("x")
    assert _git.dirty_paths(copy_of) == []


def test_edition_file_must_name_the_edition(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refuse(copy_of, ["publish", "2026.12"], capsys) == (
        "edition.yml is edition 2026.11, not 2026.12: set edition (and date) in edition.yml to 2026.12, commit, "
        "and publish again")


def test_edition_already_published_is_refused(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (copy_of / "runs" / "demo" / "note.txt").write_text("re-measured\n")
    commit_all(copy_of, "a note after publishing")
    assert refuse(copy_of, ["publish", "2026.11"], capsys) == (
        "edition 2026.11 is already published on gh-pages: pass --replace to replace it "
        "(make publish EDITION=2026.11 REPLACE=1), or publish a new number")


def test_existing_tag_is_refused(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    next_edition(copy_of)
    git(copy_of, "tag", "edition-2026.12")
    assert refuse(copy_of, ["publish", "2026.12"], capsys) == (
        "tag edition-2026.12 already exists: pass --replace to move it and replace the edition "
        "(make publish EDITION=2026.12 REPLACE=1), or publish a new number")


def test_failing_claim_is_refused_with_exit_3(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_edition(copy_of, "2026.12", "2026-12-15")
    set_value(copy_of, 12.0)
    commit_all(copy_of, "a run that breaks the claim")
    assert refuse(copy_of, ["publish", "2026.12"], capsys, code=3) == (
        "not publishing 2026.12: 1 of 1 claims failed (fig 1.1): run make check, fix the runs or the captions, "
        "commit, and publish again")


@pytest.mark.parametrize("argv", [["verify", "2026.10"], ["diff", "2026.10", "2026.11"]])
def test_missing_branch_is_refused(copy_of: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert refuse(copy_of, [*argv, "--branch", "pages"], capsys) == (
        "no branch pages in this repository: publish an edition first (make publish EDITION=...), or name the "
        "branch with --branch")


def test_unpublished_edition_is_refused_by_diff(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert refuse(copy_of, ["diff", "2026.10", "2026.12"], capsys) == (
        "edition 2026.12 is not published on gh-pages (published: 2026.10, 2026.11): name a published edition")


def test_verify_needs_the_tag(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git(copy_of, "tag", "--delete", "edition-2026.10")
    assert refuse(copy_of, ["verify", "2026.10"], capsys) == (
        "no tag edition-2026.10 in this repository: fetch the tags (git fetch --tags) and verify again; if the "
        "publish of 2026.10 was interrupted, make publish EDITION=2026.10 finishes it")


# --- the transaction -----------------------------------------------------------------------------------------

def test_failure_in_the_middle_leaves_branch_and_tags_untouched(copy_of: Path, stubbed: pytest.MonkeyPatch) -> None:
    next_edition(copy_of)
    before = refs(copy_of)
    branch = sha(copy_of, "refs/heads/gh-pages")

    def broken_tag(*args: object, **kwargs: object) -> None:
        # mike has written, on its work branch only: the branch itself moves later, together with the tag.
        assert sha(copy_of, "refs/heads/manual-publishing/gh-pages") not in (None, branch)
        assert sha(copy_of, "refs/heads/gh-pages") == branch
        raise RuntimeError("disk full while tagging")

    # mike has already committed the edition and moved latest when the tagging step fails.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(edition, "_tag", broken_tag)
        with pytest.raises(RuntimeError, match="disk full"):
            edition.publish(copy_of, "2026.12", quiet=True, say=lambda line: None)
    assert sha(copy_of, "refs/heads/gh-pages") == branch
    assert refs(copy_of) == before
    assert git(copy_of, "status", "--porcelain") == ""


def test_failure_after_tagging_removes_the_new_tag(copy_of: Path) -> None:
    next_edition(copy_of)
    before = refs(copy_of)

    def broken_push(*args: object, **kwargs: object) -> str:
        raise push_failed("origin", "gh-pages", "edition-2026.12", "rejected")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(edition, "_push", broken_push)
        with pytest.raises(EditionError):
            edition.publish(copy_of, "2026.12", push=True, quiet=True, say=lambda line: None)
    assert sha(copy_of, "refs/tags/edition-2026.12") is None
    assert refs(copy_of) == before


def test_failure_on_the_first_publish_leaves_no_branch(tmp_path: Path, stubbed: pytest.MonkeyPatch) -> None:
    root = tiny_project(tmp_path / "manual")

    def broken_move(*args: object, **kwargs: object) -> str:
        raise RuntimeError("interrupted")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(edition, "_move_latest", broken_move)
        with pytest.raises(RuntimeError):
            edition.publish(root, "2026.10", quiet=True, say=lambda line: None)
    assert sha(root, "refs/heads/gh-pages") is None and sha(root, "refs/tags/edition-2026.10") is None


def test_failed_push_restores_the_branch(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    next_edition(copy_of)
    git(copy_of, "remote", "add", "nowhere", str(copy_of.parent / "no-such-repository.git"))
    message = refuse(copy_of, ["publish", "2026.12", "--push", "--remote", "nowhere"], capsys)
    assert message.startswith("pushing gh-pages and edition-2026.12 to nowhere failed (")


def test_an_unknown_remote_is_refused(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    next_edition(copy_of)
    assert refuse(copy_of, ["publish", "2026.12", "--push", "--remote", "--upload-pack=touch x"], capsys) == (
        "'--upload-pack=touch x' is not a remote of this repository (remotes: none): add it with git remote add, "
        "or name one with REMOTE=")
    assert not (copy_of / "x").exists()


# --- replacing, older editions, pushing -------------------------------------------------------------------

def test_replace_says_so_and_republishes(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old_tag = sha(copy_of, "refs/tags/edition-2026.11")
    (copy_of / "runs" / "demo" / "note.txt").write_text("re-measured\n")
    commit_all(copy_of, "a note")
    assert main(["--root", str(copy_of), "publish", "2026.11", "--replace"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "replacing edition 2026.11"
    assert sha(copy_of, "refs/tags/edition-2026.11") != old_tag
    assert sha(copy_of, "edition-2026.11^{commit}") == sha(copy_of, "main")
    manifest = json.loads(show(copy_of, "2026.11/manifest.json"))
    assert manifest["runs"]["demo"]["files"] == 3
    assert json.loads(show(copy_of, "versions.json"))[0]["aliases"] == ["latest"]


def test_latest_follows_the_number_not_the_publishing_order(copy_of: Path) -> None:
    write_edition(copy_of, "2026.09", "2026-09-15")
    commit_all(copy_of, "a late September edition")
    edition.publish(copy_of, "2026.09", quiet=True, say=lambda line: None)
    versions = json.loads(show(copy_of, "versions.json"))
    assert [v["version"] for v in versions] == ["2026.11", "2026.10", "2026.09"]
    assert versions[0]["aliases"] == ["latest"] and show(copy_of, "latest") == "2026.11"


def test_push_sends_the_branch_and_the_tag(copy_of: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(remote))
    git(copy_of, "remote", "add", "origin", str(remote))
    next_edition(copy_of)
    result = edition.publish(copy_of, "2026.12", push=True, quiet=True, say=lambda line: None)
    assert result.pushed_to == "origin" and result.latest == "2026.12"
    assert sha(remote, "refs/heads/gh-pages") == sha(copy_of, "refs/heads/gh-pages")
    assert sha(remote, "refs/tags/edition-2026.12") == sha(copy_of, "refs/tags/edition-2026.12")


def test_nothing_is_pushed_unless_asked(two_editions: Path) -> None:
    assert git(two_editions, "remote") == ""


def test_metrics_tables_are_parsed_by_heading_and_first_cell() -> None:
    page = ("# Metrics\n\n## Rollout\n\n| Metric | Meaning | Our range |\n|:---|---|--:|\n"
            "| `rollout/raw_reward` | mean reward | 0.12 to 0.80 |\n| a \\| b | x | 1 |\n\ntext | not a table\n")
    assert _manifest.parse_tables(page) == {
        "Rollout › `rollout/raw_reward`": {"Meaning": "mean reward", "Our range": "0.12 to 0.80"},
        "Rollout › a | b": {"Meaning": "x", "Our range": "1"},
    }


# --- the real manual, published twice ----------------------------------------------------------------------

# What a checkout of the project holds: the build's inputs and its own code (verify rebuilds with the tag's code).
CHECKOUT_FILES = (*PROJECT_INPUTS, "build_tools", "pyproject.toml", "README.md", "Makefile")


def real_project(root: Path) -> Path:
    copy_project(root)
    for name in CHECKOUT_FILES:
        source, target = ROOT / name, root / name
        if source.is_dir() and not target.exists():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.is_file() and not target.exists():
            shutil.copy2(source, target)
    (root / ".gitignore").write_text("build/\nsite/\n__pycache__/\n", encoding="utf-8")
    init_repository(root)
    commit_all(root, "the manual")
    return root


NUDGED_RUN, NUDGED_METRIC = "baseline-seed1", "rollout/response_lengths"


def nudge_a_run(root: Path) -> None:
    """Lengthen the first answers of one run by 10 tokens: every claim still holds, its observed values move."""
    path = root / "runs" / NUDGED_RUN / "dashboard" / "metrics.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for index, line in enumerate(lines):
        record = json.loads(line)
        if record.get("step") == 0 and NUDGED_METRIC in record.get("metrics", {}):
            record["metrics"][NUDGED_METRIC] = round(record["metrics"][NUDGED_METRIC] + 10, 3)
            lines[index] = json.dumps(record, separators=(",", ":")) + "\n"
            break
    else:
        raise AssertionError(f"no {NUDGED_METRIC} at step 0 in {path}")
    path.write_text("".join(lines), encoding="utf-8")


def stop_later(root: Path, seconds: float) -> None:
    """The no-watchdog job stopped `seconds` later: fig 1.3's dead engine left it running that much longer."""
    path = root / "runs" / "no-watchdog" / "lab" / "events.jsonl"
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    end = round(events[1]["t0"] + seconds, 3)
    events[0]["t1"], events[1]["t0"], events[1]["t1"] = end, end, end
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events), encoding="utf-8")


def write_edition_file(root: Path, number: str, date: str) -> None:
    """Change the edition and its date in the real edition.yml, keeping its comments and Miles fields."""
    path = root / "edition.yml"
    text = re.sub(r"(?m)^edition: .*$", f'edition: "{number}"', path.read_text(encoding="utf-8"))
    path.write_text(re.sub(r"(?m)^date: .*$", f"date: {date}", text), encoding="utf-8")


@pytest.fixture(scope="module")
def real_editions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real manual published as 2026.10, then as 2026.11 after one run moved a little and the no-watchdog job
    stopped 12 s later (two full builds)."""
    root = real_project(tmp_path_factory.mktemp("real") / "manual")
    with real_pipeline():
        edition.publish(root, "2026.10", quiet=True, say=lambda line: None)
        write_edition_file(root, "2026.11", "2026-11-15")
        nudge_a_run(root)
        stop_later(root, 12)
        commit_all(root, f"edition 2026.11: {NUDGED_RUN} re-measured, no-watchdog stopped 12 s later")
        edition.publish(root, "2026.11", quiet=True, say=lambda line: None)
    return root


def test_real_editions_are_laid_out_with_their_footers(real_editions: Path) -> None:
    top = git(real_editions, "ls-tree", "--name-only", "gh-pages").splitlines()
    assert sorted(top) == [".nojekyll", "2026.10", "2026.11", "index.html", "latest", "versions.json"]
    assert [v["version"] for v in json.loads(show(real_editions, "versions.json"))] == ["2026.11", "2026.10"]
    for number, date in (("2026.10", "2026-10-15"), ("2026.11", "2026-11-15")):
        stamp = f"Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · {date} · Edition {number}"
        for page in ("index.html", "06-metrics.html"):
            assert stamp in show(real_editions, f"{number}/{page}")


def test_real_manifest_covers_every_run_figure_claim_and_metrics_row(real_editions: Path) -> None:
    manifest = json.loads(show(real_editions, "2026.10/manifest.json"))
    checkout = git(real_editions, "ls-tree", "--name-only", "edition-2026.10", "runs/").splitlines()
    assert sorted(manifest["runs"]) == sorted(Path(p).name for p in checkout if not p.endswith(".md"))
    claims = json.loads((real_editions / "build" / "claims.json").read_text())["figures"]
    assert sorted(manifest["claims"]) == sorted(c["id"] for c in claims) == sorted(manifest["figures"])
    assert {c["verdict"] for c in manifest["claims"].values()} == {"pass"}
    # An edition's build shows every claim able to fail (checking/prove.py), and its manifest page says so.
    assert manifest["proof"] == {"shown": len(claims), "total": len(claims)}
    assert f"{len(claims)} of {len(claims)} claims shown able to fail: " in show(real_editions, "2026.10/manifest.html")
    health = show(real_editions, "2026.10/claim-health.html")
    assert f"<strong>{len(claims)} of {len(claims)} claims shown able to fail.</strong>" in health
    assert f"Rollout › `{NUDGED_METRIC}`" in manifest["metrics"]
    assert "index.html" in manifest["pages"] and "06-metrics.html" in manifest["pages"]
    assert "fig-response-length" in show(real_editions, "2026.10/manifest.html")
    # every file of a figure the edition ships is recorded by its hash (its CSV's .json descriptor too), no PNG
    shipped = git(real_editions, "ls-tree", "--name-only", "gh-pages", "2026.10/figures/").splitlines()
    recorded = {f"{figure}.{field.removesuffix('_sha256').replace('_', '.')}"
                for figure, entry in manifest["figures"].items() for field in entry}
    assert sorted(Path(p).name for p in shipped) == sorted(recorded)
    assert not [p for p in shipped if p.endswith(".png")]


def test_real_diff_names_the_nudged_run_and_the_moved_claim(real_editions: Path) -> None:
    text = edition.diff(real_editions, "2026.10", "2026.11")
    assert f"  run {NUDGED_RUN}: dashboard/metrics.jsonl changed" in text
    assert "  run no-watchdog: lab/events.jsonl changed" in text
    assert "  Fig 1.3 'left the job running for 63 minutes': headroom 0.3 -> 0.1 min (fraction 0.6 -> 0.2)" in text
    moved = re.search(r"  Fig 1\.5 'falls from about 720 to about 460 tokens': falls_from\.first: (720\.\d+) → "
                      r"(721\.\d+)\n", text)
    assert moved, text
    assert "  figure fig-response-length: data (CSV) and image (SVG) changed" in text
    assert re.search(rf"  Metrics row Rollout › `{NUDGED_METRIC}`, Our range: \d+ to 787 → \d+ to 791\n", text)
    assert "run baseline-seed2" not in text and "fig-reward-curves" not in text  # only what moved is listed
    page = show(real_editions, "2026.11/changes.html")
    assert f"falls_from.first: {moved[1]} → {moved[2]}" in page
    health = show(real_editions, "2026.11/claim-health.html")  # margins across the editions, filled by publishing
    assert "<th>edition 2026.10</th>" in health and "<th>edition 2026.11</th>" in health
    row = next(r for r in health.split("<tr>") if "left the job running for 63 minutes" in r and "<svg" in r)
    assert "<td>0.3 min</td>" in row and "<td>0.1 min</td>" in row and "<td>shrank</td>" in row
    weakened = next(r for r in health.split("<tr>") if "Fig 1.3" in r and "edition 2026.11" in r and "<svg" not in r)
    assert "<td>0.3</td>" in weakened and "<td>0.1</td>" in weakened  # the edition where it first weakened
    assert "This build is not a published edition" not in health.split("<h2")[-1]


def test_real_edition_rebuilds_byte_identically_from_its_tag(real_editions: Path) -> None:
    with real_pipeline():  # a clone of the tag, built by its own code in a subprocess
        published, found, _ = edition.verify(real_editions, "2026.10", quiet=True)
    assert found == []
    assert published["figures"] and published["pages"]


# --- the branch and the remote are names, checked before anything happens ---------------------------------

def test_publishing_to_the_checked_out_branch_is_refused(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    next_edition(copy_of)
    assert refuse(copy_of, ["publish", "2026.12", "--branch", "main"], capsys) == (
        "branch main is checked out: publishing would rewrite the branch you work on; publish to a branch of its "
        "own, e.g. BRANCH=gh-pages (the default)")


def test_publishing_to_a_source_branch_is_refused(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    next_edition(copy_of)
    git(copy_of, "branch", "release")
    assert refuse(copy_of, ["publish", "2026.12", "--branch", "release"], capsys) == (
        "branch release holds the project's source (edition.yml): publishing would replace it with the site; "
        "publish to a branch of its own, e.g. BRANCH=gh-pages (the default)")


@pytest.mark.parametrize("branch", ["--upload-pack=touch x", "gh pages", "a..b", "x~1", "", "manual-publishing/x"])
def test_a_branch_git_refuses_is_refused(copy_of: Path, branch: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert refuse(copy_of, ["verify", "2026.10", f"--branch={branch}"], capsys) == (
        f"'{branch}' is not a branch name git accepts (git check-ref-format): name the branch editions are "
        "published to, e.g. BRANCH=gh-pages")


def test_real_editions_hold_their_print_edition_and_themed_record_pages(real_editions: Path) -> None:
    import hashlib

    manifest = json.loads(show(real_editions, "2026.10/manifest.json"))
    pdf = git_bytes(real_editions, "2026.10/2026.10.pdf")
    assert manifest["print"] == {"2026.10.pdf": hashlib.sha256(pdf).hexdigest()}
    home = show(real_editions, "2026.10/index.html")
    assert '<a href="2026.10.pdf">the print edition (PDF)</a>' in home
    assert '<a href="manifest.html">what it is built from</a>' in home
    page = show(real_editions, "2026.10/manifest.html")
    assert 'class="md-header' in page and "<h2>Runs</h2>" in page and "not a published edition" not in page
    assert "This is the first published edition" in show(real_editions, "2026.10/changes.html")
    assert '"version": {"default": "latest", "provider": "mike"}' in home


def git_bytes(root: Path, path: str) -> bytes:
    import subprocess

    return subprocess.run(["git", "show", f"gh-pages:{path}"], cwd=root, capture_output=True, check=True).stdout


def test_publishing_builds_with_an_editions_settings_trusting_no_earlier_state(tmp_path: Path,
                                                                             stubbed: pytest.MonkeyPatch) -> None:
    """No memo, cache or replayed report can stand in for the data at publishing (tests/store/test_run_hash.py shows
    what such a build does with a memo that vouches for stale data); the build is dated, and is an edition's."""
    root = tiny_project(tmp_path / "manual")
    seen: list[Settings] = []

    def recording(root: Path, settings: Settings) -> None:
        seen.append(settings)
        stub_build(root, settings)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(edition, "run_build", recording)
        edition.publish(root, "2026.10", quiet=True, say=lambda line: None, settings=Settings(engine="mkdocs"))
    assert [(s.trust_state, s.edition, s.epoch, s.site) for s in seen] == [(False, True, 1792022400, True)]


# --- damaged files on the pages branch, a tag that names no commit --------------------------------------------

def replace_on_branch(root: Path, path: str, data: bytes, branch: str = "gh-pages") -> None:
    """One file of the branch replaced by a new commit on it, as a person or a broken tool could."""
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, input=data, capture_output=True,
                          check=True).stdout.decode().strip()
    env = {**os.environ, "GIT_INDEX_FILE": str(root / ".git" / "test-index")}
    for args in (["read-tree", branch], ["update-index", "--add", "--cacheinfo", f"100644,{blob},{path}"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    tree = subprocess.run(["git", "write-tree"], cwd=root, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()
    commit = git(root, "commit-tree", tree, "-p", branch, "-m", f"damage {path}")
    git(root, "update-ref", f"refs/heads/{branch}", commit)


MANIFESTS = SAMPLES / "manifests"
DAMAGED = "edition 2026.10: gh-pages:2026.10/manifest.json is damaged ({}): restore it from the history of " \
          "gh-pages, or publish the edition again (make publish EDITION=2026.10 REPLACE=1)"


@pytest.mark.parametrize(("sample", "reason"), [
    ("truncated.json", "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 33"),
    ("nested-100000", "nested more than 32 levels deep"),
    ("nested-in-observed.json", "nested more than 32 levels deep"),
    ("not-utf8.json", "not UTF-8 text"),
    ("a-list.json", "not a JSON object"),
    ("no-edition.json", "its edition is missing or not text"),
    ("runs-a-list.json", "its runs is not a mapping"),
    ("claim-not-a-mapping.json", "its claims.fig-demo is not a mapping"),
    ("pages-a-number.json", "its pages is not a mapping"),
])
def test_a_damaged_manifest_is_one_line_naming_the_edition(sample: str, reason: str, copy_of: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    data = b"[" * 100_000 + b"]" * 100_000 if sample == "nested-100000" else (MANIFESTS / sample).read_bytes()
    replace_on_branch(copy_of, "2026.10/manifest.json", data)
    for argv in (["diff", "2026.10", "2026.11"], ["verify", "2026.10"]):
        assert refuse(copy_of, argv, capsys) == DAMAGED.format(reason)


def test_a_damaged_versions_json_is_one_line(copy_of: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replace_on_branch(copy_of, "versions.json", (MANIFESTS / "versions-without-version.json").read_bytes())
    assert refuse(copy_of, ["diff", "2026.10", "2026.12"], capsys) == (
        "gh-pages:versions.json is damaged (not mike's list of versions): restore it from the history of gh-pages")


@pytest.mark.parametrize("kind", ["tree", "blob"])
def test_verify_refuses_a_tag_that_names_no_commit(kind: str, copy_of: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    target = "edition-2026.10^{tree}" if kind == "tree" else "edition-2026.10:edition.yml"
    git(copy_of, "tag", "--force", "edition-2026.10", git(copy_of, "rev-parse", target))
    assert refuse(copy_of, ["verify", "2026.10"], capsys) == (
        f"tag edition-2026.10 names a {kind}, not a commit: an edition's tag names the commit it was built from "
        "(project_commit in its manifest): point it there (git tag -f edition-2026.10 COMMIT) and verify again")


def test_an_edit_with_its_mtime_put_back_is_never_published_stale(real_editions: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case: no-watchdog's end moved 400 s (fig 1.3 then fails), its size kept and its mtime put back,
    with the memo made to vouch for the old data as well; an everyday check trusts the memo, publishing does not."""
    from build_tools.store import fingerprint, run_hash
    from tests.store.test_run_hash import EARLIER, EVENTS, KEPT, rewrite_keeping_times

    root = tmp_path / "manual"
    shutil.copytree(real_editions, root, symlinks=True)
    monkeypatch.setattr(fingerprint, "SETTLED_NS", -1)
    assert main(["--root", str(root), "check"]) == 0
    memo_file = root / "build" / "cache" / "summaries" / run_hash.MEMO
    memo = json.loads(memo_file.read_text())
    rewrite_keeping_times(root / EVENTS, KEPT, EARLIER)
    run = root / EVENTS.parents[1]
    (key,) = [key for key in memo if key.endswith("/no-watchdog")]
    memo[key]["stats"] = run_hash.stats_of(run_hash.scan_tree(run, run.resolve())[1])
    memo_file.write_text(json.dumps(memo))
    write_edition_file(root, "2026.12", "2026-12-15")
    commit_all(root, "edition 2026.12: no-watchdog stopped earlier")
    before = refs(root)
    with real_pipeline(), pytest.raises(EditionError) as failed:
        edition.publish(root, "2026.12", quiet=True, say=lambda line: None)
    said = str(failed.value)
    # Named as make check names it ("fig 1.3"), not by its id.
    assert said.startswith("not publishing 2026.12: 1 of ") and " claims failed (fig 1.3): " in said
    assert failed.value.exit_code == EXIT_CLAIM_FAILED and refs(root) == before
