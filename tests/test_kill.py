"""A publish killed at any point: the branch, the tag and `latest` are as before or all done, and the next
`publish` (which finishes or cleans up, saying so) and `verify` succeed. SIGINT and SIGTERM clean up at once.

The publish runs in a subprocess (tests/stubbed_manual.py: the command line with the stub build) that sends
itself the signal at a named point (MANUAL_TEST_KILL_AT, build_tools/core/_staging.py's checkpoint).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.cli import main
from build_tools.core._staging import KILL_AT
from build_tools.editions import edition
from tests.editions.test_edition import git, next_edition, refs, sha, show, tiny_project

DRIVER = Path(__file__).resolve().parent / "stubbed_manual.py"
# In the order a publish passes them: build (site swap), staging, mike on its work branch, the tag, the refs, push.
POINTS = ["locked", "staging-swap", "built", "staged", "work-branch", "deployed", "latest-moved", "tag-object",
          "refs-updated", "pushed"]
NEW = "2026.12"


def run_stubbed(root: Path, argv: list[str], kill_at: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, KILL_AT: kill_at}
    return subprocess.run([sys.executable, str(DRIVER), "--root", str(root), *argv], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, stubbed: pytest.MonkeyPatch) -> Path:
    """2026.10 published and pushed, 2026.12 committed and ready: the state every kill starts from."""
    base = tmp_path_factory.mktemp("kill")
    root = tiny_project(base / "manual")
    git(base, "init", "--quiet", "--bare", str(base / "remote.git"))
    git(root, "remote", "add", "origin", "../remote.git")
    edition.publish(root, "2026.10", push=True, quiet=True, say=lambda line: None)
    next_edition(root)
    return base


@pytest.fixture()
def project(published: Path, tmp_path: Path) -> Path:
    shutil.copytree(published, tmp_path / "copy", symlinks=True)
    return tmp_path / "copy" / "manual"


def leftovers(root: Path) -> list[str]:
    found = [p.name for p in root.iterdir() if p.name.startswith(".site-")]
    found += [p.name for p in (root / "build").iterdir() if p.name.startswith((".publish-", ".verify-", ".docs-"))]
    found += [line for line in git(root, "branch", "--list", "manual-publishing/*").splitlines()]
    return found


def state(root: Path) -> str:
    """'before' (2026.12 nowhere), 'done' (on the branch, latest, tagged at HEAD), or what else it is."""
    tag = sha(root, f"refs/tags/edition-{NEW}")
    versions = json.loads(show(root, "versions.json"))
    listed = [v["version"] for v in versions]
    if NEW not in listed and tag is None:
        return "before"
    if listed[0] == NEW and versions[0]["aliases"] == ["latest"] and sha(root, f"edition-{NEW}^{{commit}}") == sha(
            root, "main"):
        return "done"
    return f"half: versions {listed}, tag {tag}"


@pytest.mark.parametrize("point", POINTS)
def test_a_publish_killed_at_any_point_is_repaired_by_the_next(project: Path, point: str, stubbed: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    killed = run_stubbed(project, ["publish", NEW, "--push"], point)
    assert killed.returncode == -9, killed.stderr
    assert state(project) in ("before", "done")

    assert main(["--root", str(project), "publish", NEW, "--push"]) == 0
    out = capsys.readouterr()
    assert state(project) == "done"
    remote = project.parent / "remote.git"
    assert sha(remote, "refs/heads/gh-pages") == sha(project, "refs/heads/gh-pages")
    assert sha(remote, f"refs/tags/edition-{NEW}") == sha(project, f"refs/tags/edition-{NEW}")
    assert leftovers(project) == []
    if point in ("refs-updated", "pushed"):  # already published here: the second publish only pushes
        assert out.out.splitlines()[0] == (f"edition {NEW} is already published on gh-pages from this commit "
                                           f"({sha(project, 'main')[:7]}, tag edition-{NEW}): nothing to publish")
    elif point in ("work-branch", "deployed", "latest-moved", "tag-object"):
        assert out.out.splitlines()[0] == ("removed manual-publishing/gh-pages, the work branch of a publish that "
                                           "was killed: gh-pages was not changed")

    assert main(["--root", str(project), "verify", NEW]) == 0
    assert f"edition {NEW} rebuilt from tag edition-{NEW} is identical to its manifest" in capsys.readouterr().out


def test_a_kill_between_the_two_renames_of_the_site_leaves_the_old_site(project: Path) -> None:
    before = (project / "site" / "index.html").read_text()
    assert run_stubbed(project, ["publish", NEW], "staging-swap").returncode == -9
    assert not (project / "site").exists() and leftovers(project)  # the old site is set aside, the new one staged
    from build_tools.core._staging import clean_leftovers

    clean_leftovers(project)
    assert (project / "site" / "index.html").read_text() == before
    assert leftovers(project) == []


@pytest.mark.parametrize(("signal", "code", "word"), [("TERM", 143, "terminated"), ("INT", 130, "interrupted")])
def test_sigterm_and_sigint_remove_the_temporary_folders_and_the_work_branch(project: Path, signal: str, code: int,
                                                                            word: str) -> None:
    before = refs(project)
    done = run_stubbed(project, ["publish", NEW], f"deployed:{signal}")
    assert done.returncode == code and done.stderr.splitlines()[-1] == word
    assert refs(project) == before and leftovers(project) == []


def test_sigterm_during_verify_removes_its_clone(project: Path) -> None:
    done = run_stubbed(project, ["verify", "2026.10"], "verify-cloned:TERM")
    assert done.returncode == 143 and done.stderr.splitlines()[-1] == "terminated"
    assert leftovers(project) == []


def test_an_edition_left_on_the_branch_without_its_tag_is_finished(project: Path, stubbed: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """What older code left after a kill between mike and the tag: publish finishes it, verify then passes."""
    git(project, "tag", "--delete", "edition-2026.10")
    assert main(["--root", str(project), "verify", "2026.10"]) == 2
    assert "make publish EDITION=2026.10 finishes it" in capsys.readouterr().err
    git(project, "checkout", "--quiet", "main~1")  # the commit 2026.10 was published from
    assert main(["--root", str(project), "publish", "2026.10"]) == 0
    commit = sha(project, "HEAD")
    assert capsys.readouterr().out.splitlines()[:2] == [
        f"edition 2026.10 was on gh-pages without its tag (a publish was interrupted): finished it, tagged "
        f"edition-2026.10 at {commit[:7]}",
        f"edition 2026.10 is already published on gh-pages from this commit ({commit[:7]}, tag edition-2026.10): "
        "nothing to publish"]
    assert sha(project, "edition-2026.10^{commit}") == commit
    assert main(["--root", str(project), "verify", "2026.10"]) == 0


def test_latest_left_on_an_older_edition_is_moved(project: Path, stubbed: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Older code moved `latest` in a commit of its own after the edition's: a kill between left it behind."""
    edition.publish(project, NEW, quiet=True, say=lambda line: None)
    from mike import commands

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        commands.alias({"site_dir": str(project / "site"), "use_directory_urls": True}, "2026.10", ["latest"],
                       update_aliases=True, branch="gh-pages", message="latest back on 2026.10")
    assert main(["--root", str(project), "publish", NEW]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"latest was not on the newest edition of gh-pages (a publish was interrupted): moved it to {NEW}")
    assert state(project) == "done"


def test_replace_with_nothing_changed_says_so(project: Path, stubbed: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    edition.publish(project, NEW, quiet=True, say=lambda line: None)
    before = refs(project)
    assert main(["--root", str(project), "publish", NEW, "--replace"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        f"replacing edition {NEW}",
        f"nothing changed: edition {NEW} on gh-pages is already this build of {sha(project, 'main')[:7]}; nothing "
        "was replaced"]
    assert refs(project) == before


# --- make add-run: a kill at any point leaves either no runs/<id>/ or the whole one --------------------------

ADD_RUN_POINTS = ["add-run-copied", "staging-rename"]  # after the copies, and with run.yaml written too


def add_run_killed(root: Path, kill_at: str) -> subprocess.CompletedProcess[str]:
    log = Path(__file__).resolve().parent / "samples" / "sources" / "log" / "job.log"
    argv = [sys.executable, "-m", "build_tools", "--root", str(root), "add-run", str(log), "--id", "killed"]
    return subprocess.run(argv, cwd=Path(__file__).resolve().parent.parent, env={**os.environ, KILL_AT: kill_at},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("point", ADD_RUN_POINTS)
def test_an_add_run_killed_at_any_point_adds_nothing_and_its_leftover_is_swept(point: str, tmp_path: Path) -> None:
    from build_tools.core._staging import clean_leftovers
    from tests.conftest import copy_project

    root = copy_project(tmp_path / "manual")
    before = sorted(p.name for p in (root / "runs").iterdir())
    assert add_run_killed(root, point).returncode == -9
    (left,) = [p for p in (root / "runs").iterdir() if p.name not in before]
    assert left.name.startswith(".add-run-") and (left / "log" / "job.log.gz").is_file()
    assert clean_leftovers(root) == [left]
    assert sorted(p.name for p in (root / "runs").iterdir()) == before
    done = add_run_killed(root, "")
    assert done.returncode == 0 and done.stdout.startswith(f"Added {root}/runs/killed from ")
    assert sorted(p.relative_to(root / "runs" / "killed").as_posix()
                  for p in (root / "runs" / "killed").rglob("*")) == ["log", "log/job.log.gz", "run.yaml"]


def test_sigterm_during_add_run_removes_its_staging_folder(tmp_path: Path) -> None:
    from tests.conftest import copy_project

    root = copy_project(tmp_path / "manual")
    before = sorted(p.name for p in (root / "runs").iterdir())
    done = add_run_killed(root, "add-run-copied:TERM")
    assert done.returncode == 143 and done.stderr.splitlines()[-1] == "terminated"
    assert sorted(p.name for p in (root / "runs").iterdir()) == before
