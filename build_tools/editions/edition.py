"""Numbered editions: publish the built manual with mike, verify an edition by rebuilding it, diff two editions.

Publishing is a transaction over two refs, the mike branch and the edition's tag: every check that can
refuse runs before anything is written, and if anything fails after mike started writing, both refs are
put back where they were. mike commits with git fast-import, so the working tree is never touched.
"""

from __future__ import annotations

import calendar
import contextlib
import dataclasses
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from rich.console import Console

from build_tools.core import _lock
from build_tools.core._exceptions import (
    ClaimsFailed,
    ClaimsUnproven,
    PagesFileDamaged,
    already_published,
    bad_branch_name,
    branch_checked_out,
    branch_holds_source,
    edition_claims_failed,
    edition_claims_unproven,
    edition_file_differs,
    edition_not_published,
    footer_missing,
    no_edition_number,
    no_pages_branch,
    not_a_date,
    not_a_repository,
    not_an_edition_number,
    pages_file_damaged,
    push_failed,
    rebuild_failed,
    tag_exists,
    tag_missing,
    tag_not_a_commit,
    two_editions_needed,
    uncommitted_changes,
    unknown_remote,
)
from build_tools.core._layout import Layout
from build_tools.core._settings import EPOCH_ENV, PUBLISH_ENV, Settings
from build_tools.core._staging import checkpoint, clean_leftovers, temporary_prefix
from build_tools.core._types import Stamp
from build_tools.editions import _git as git
from build_tools.editions import _manifest as manifest_
from build_tools.editions._manifest import Manifest
from build_tools.editions.stamp import load_stamp
from build_tools.pages import claim_health, edition_pages

EDITION_NUMBER = re.compile(r"^([0-9]{4})\.(0[1-9]|1[0-2])$")
LATEST = "latest"

_out = Console(highlight=False, soft_wrap=True)
Say = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Published:
    edition: str
    branch: str
    tag: str
    commit: str
    latest: str
    pushed_to: str | None
    # published; unchanged (REPLACE with nothing changed); already (published from this very commit before)
    outcome: str = "published"


# --- small rules -------------------------------------------------------------------------------------------

def check_number(edition: str, command: str = "publish") -> None:
    """An edition number is YEAR.MONTH with a two-digit month (2026.10): it sorts and names a tag."""
    if not edition:
        raise no_edition_number(command)
    if not EDITION_NUMBER.match(edition):
        raise not_an_edition_number(edition, command)


def edition_key(edition: str) -> tuple[int, int]:
    """Editions order by number (2026.9 is no edition; 2026.09 < 2026.10), never by when they were published."""
    year, month = edition.split(".")
    return int(year), int(month)


def tag_name(edition: str) -> str:
    return f"edition-{edition}"


def source_date_epoch(date: str) -> int:
    """The edition date at midnight UTC: every timestamp the build writes is this one."""
    try:
        day = dt.date.fromisoformat(date)
    except ValueError:
        raise not_a_date(date) from None
    return calendar.timegm(day.timetuple())


# --- what is on the branch ---------------------------------------------------------------------------------

def published_editions(root: Path, branch: str) -> list[str]:
    """The editions listed in the branch's versions.json, oldest first; [] when there is no branch."""
    data = git.show(root, branch, "versions.json")
    if data is None:
        return []
    try:
        entries = manifest_.load_json(data)
        if not isinstance(entries, list) or not all(isinstance(e, dict) and "version" in e for e in entries):
            raise ValueError("not mike's list of versions")
    except ValueError as error:
        raise pages_file_damaged(branch, "versions.json", str(error)) from None
    versions = [str(entry["version"]) for entry in entries]
    return sorted((v for v in versions if EDITION_NUMBER.match(v)), key=edition_key)


def published_manifest(root: Path, branch: str, edition: str) -> Manifest | None:
    """An edition's manifest.json on the branch, None when there is none (PagesFileDamaged when unreadable)."""
    path = f"{edition}/manifest.json"
    data = git.show(root, branch, path)
    if data is None:
        return None
    try:
        return manifest_.loads(data)
    except ValueError as error:
        raise pages_file_damaged(branch, path, str(error), edition) from None


def _require_repository(root: Path) -> None:
    if not git.is_repository(root) or git.rev(root, "HEAD") is None:
        raise not_a_repository(root)


def _require_branch(root: Path, branch: str, command: str) -> None:
    if git.rev(root, f"refs/heads/{branch}") is None:
        raise no_pages_branch(branch, command)


def _require_manifest(root: Path, branch: str, edition: str) -> Manifest:
    manifest = published_manifest(root, branch, edition)
    if manifest is None:
        raise edition_not_published(edition, branch, published_editions(root, branch))
    return manifest


# --- publish -----------------------------------------------------------------------------------------------

def publish(root: Path, edition: str, *, branch: str = "gh-pages", remote: str | None = None,
            push: bool = False, replace: bool = False, quiet: bool = False, say: Say = _out.print,
            settings: Settings | None = None) -> Published:
    """Build the manual and publish it as an edition; refuse, changing nothing, when it should not be.

    mike writes on a work branch (manual-publishing/<branch>); the branch and the tag then move together in
    one git transaction. A publish killed at any point leaves them as they were or both done; the next one
    removes the work branch, and finishes an edition an older, killed publish left on the branch untagged.
    `settings` are the command line's (the engine, the site's address); publishing makes them an edition's.
    """
    root = root.resolve()
    check_number(edition)
    _require_repository(root)
    check_branch(root, branch)
    remote = check_remote(root, remote or "origin") if push else remote
    # One publish at a time in the repository (its refs), one build at a time in this folder.
    with _lock.hold(git.common_dir(root) / PUBLISH_LOCK, say, "another publish"), \
            _lock.build_lock(Layout(root).build, say):
        checkpoint("locked")
        _clean_leftovers(root, branch, say)
        stamp = _edition_file(root, edition)
        _require_pages_branch(root, branch)
        _require_clean(root)
        tag = tag_name(edition)
        done = _existing(root, branch, edition, tag, replace=replace, say=say)
        if done is not None:
            pushed_to = _push(root, remote or "origin", branch, tag, force_tag=replace) if push else None
            return dataclasses.replace(done, pushed_to=pushed_to)
        return _publish(root, edition, stamp, branch=branch, tag=tag, remote=remote, push=push, replace=replace,
                        quiet=quiet, settings=settings or Settings())


def _publish(root: Path, edition: str, stamp: Stamp, *, branch: str, tag: str, remote: str | None, push: bool,
             replace: bool, quiet: bool, settings: Settings) -> Published:
    epoch = source_date_epoch(stamp.date)
    _build(root, edition, edition_settings(settings, epoch, quiet=quiet))
    checkpoint("built")
    _require_footer(Layout(root).site, edition)

    commit = git.rev(root, "HEAD") or ""
    manifest = manifest_.compute(root, edition=_stamp_fields(stamp), project_commit=commit, source_date_epoch=epoch)
    previous = _previous_manifest(root, branch, edition)
    history = [*_older_manifests(root, branch, edition), manifest]
    branch_ref, tag_ref = f"refs/heads/{branch}", f"refs/tags/{tag}"
    before = {branch_ref: git.ref_sha(root, branch_ref), tag_ref: git.ref_sha(root, tag_ref)}
    # The temporary folder is in build/ under this process's id: removed on exit, SIGINT and SIGTERM, and by
    # the next build when a kill left it.
    with tempfile.TemporaryDirectory(prefix=temporary_prefix("publish"), dir=_build_dir(root)) as tmp:
        staged = _stage_site(Layout(root).site, Path(tmp) / "site", manifest, previous, history)
        checkpoint("staged")
        with _work_branch(root, branch) as work:
            changed = _deploy(root, staged, edition, work, commit)
            checkpoint("deployed")
            latest = _move_latest(root, staged, work)
            checkpoint("latest-moved")
            new_branch = git.ref_sha(root, f"refs/heads/{work}")
            tagged = git.rev(root, tag_ref) == commit and before[tag_ref] is not None
            if not changed and new_branch == before[branch_ref] and tagged:
                pushed_to = _push(root, remote or "origin", branch, tag, force_tag=replace) if push else None
                return Published(edition, branch, tag, commit, latest, pushed_to, outcome="unchanged")
            new_tag = before[tag_ref] if tagged and not changed else _tag(root, tag, commit, stamp)
            checkpoint("tag-object")
            # Everything above could refuse without touching a ref; from here on, a failure puts both back.
            with _transaction(root, [branch_ref, tag_ref]):
                git.update_refs(root, {branch_ref: (new_branch, before[branch_ref]),
                                       tag_ref: (new_tag, before[tag_ref]),
                                       f"refs/heads/{work}": (None, new_branch)})
                checkpoint("refs-updated")
                pushed_to = _push(root, remote or "origin", branch, tag, force_tag=replace) if push else None
                checkpoint("pushed")
    return Published(edition, branch, tag, commit, latest, pushed_to)


PUBLISH_LOCK = "manual-publish.lock"  # in the repository's git folder: shared by all its working trees
WORK_PREFIX = "manual-publishing/"


def _build_dir(root: Path) -> Path:
    folder = Layout(root).build
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _clean_leftovers(root: Path, branch: str, say: Say) -> None:
    """What killed builds and publishes left: staging folders, temporary files, the work branch of mike."""
    clean_leftovers(root)
    work = f"refs/heads/{WORK_PREFIX}{branch}"
    if git.ref_sha(root, work) is not None:
        git.restore_ref(root, work, None)
        say(f"removed {WORK_PREFIX}{branch}, the work branch of a publish that was killed: {branch} was not changed")


@contextlib.contextmanager
def _work_branch(root: Path, branch: str) -> Iterator[str]:
    """A branch where mike writes, starting where branch is; deleted when the block ends, however it ends."""
    work = f"{WORK_PREFIX}{branch}"
    start = git.ref_sha(root, f"refs/heads/{branch}")
    if start is not None:
        git.run(root, "update-ref", f"refs/heads/{work}", start)
    checkpoint("work-branch")
    try:
        yield work
    finally:
        git.restore_ref(root, f"refs/heads/{work}", None)


def _existing(root: Path, branch: str, edition: str, tag: str, *, replace: bool, say: Say) -> Published | None:
    """What is there of this edition already; None when it is to be (re)published.

    An edition on the branch whose tag is missing or names another commit than its manifest was left by a
    publish killed between the two (older versions of this code moved them one after the other): the tag
    is put on the commit the manifest names, saying so. A tag of ours without the edition on the branch is
    moved by publishing again.
    """
    head = git.rev(root, "HEAD") or ""
    tag_ref = f"refs/tags/{tag}"
    if edition in published_editions(root, branch):
        try:
            manifest = published_manifest(root, branch, edition) or {}
        except PagesFileDamaged:
            manifest = {}  # replacing the edition writes it again
        built_from = str(manifest.get("project_commit", ""))
        tagged = git.rev(root, tag_ref)
        if built_from and tagged != built_from and git.rev(root, built_from) == built_from:
            stamp = load_stamp_at(root, built_from)
            git.update_refs(root, {tag_ref: (_tag(root, tag, built_from, stamp), git.ref_sha(root, tag_ref))})
            state = "without its tag" if tagged is None else f"with its tag on {tagged[:7]}"
            say(f"edition {edition} was on {branch} {state} (a publish was interrupted): finished it, tagged {tag} "
                f"at {built_from[:7]}")
            tagged = built_from
        latest = _repair_latest(root, branch, say)
        if tagged == head and not replace:
            return Published(edition, branch, tag, head, latest, None, outcome="already")
        if not replace:
            raise already_published(edition, branch)
        say(f"replacing edition {edition}")
        return None
    if git.ref_sha(root, tag_ref) is not None:
        if replace:
            say(f"replacing edition {edition}")
        elif _our_tag(root, tag, edition):
            say(f"tag {tag} is there but edition {edition} is not on {branch} (a publish was interrupted): "
                "publishing it again")
        else:
            raise tag_exists(tag, edition)
    return None


def load_stamp_at(root: Path, commit: str) -> Stamp:
    """edition.yml as it was at commit: what the tag's message says."""
    data = git.show(root, commit, "edition.yml") or b""
    with tempfile.TemporaryDirectory(prefix=temporary_prefix("stamp"), dir=_build_dir(root)) as tmp:
        path = Path(tmp) / "edition.yml"
        path.write_bytes(data)
        return load_stamp(path)


def _our_tag(root: Path, tag: str, edition: str) -> bool:
    """An annotated tag this code wrote for the edition (a tag a person made is not taken over)."""
    done = git.run(root, "cat-file", "-p", f"refs/tags/{tag}", check=False)
    return done.returncode == 0 and f"\n\nEdition {edition} of " in done.stdout


def _repair_latest(root: Path, branch: str, say: Say) -> str:
    """`latest` on the newest edition and the default, as a killed older publish may not have left them."""
    with _work_branch(root, branch) as work:
        before = git.ref_sha(root, f"refs/heads/{work}")
        with tempfile.TemporaryDirectory(prefix=temporary_prefix("latest"), dir=_build_dir(root)) as tmp:
            latest = _move_latest(root, Path(tmp), work)
        after = git.ref_sha(root, f"refs/heads/{work}")
        if after != before:
            git.update_refs(root, {f"refs/heads/{branch}": (after, before), f"refs/heads/{work}": (None, after)})
            say(f"{LATEST} was not on the newest edition of {branch} (a publish was interrupted): moved it to {latest}")
    return latest


# --- names given on the command line -------------------------------------------------------------------------

SOURCE_MARKERS = ("build_tools", "pyproject.toml", "edition.yml", "runs")


def check_branch(root: Path, branch: str) -> None:
    """A branch name git accepts (`git check-ref-format`), never an option."""
    valid = bool(branch) and not branch.startswith("-") and branch.isprintable() and not branch.startswith(
        WORK_PREFIX) and git.run(root, "check-ref-format", f"refs/heads/{branch}", check=False).returncode == 0
    if not valid:
        raise bad_branch_name(branch)


def check_remote(root: Path, remote: str) -> str:
    """A remote configured in this repository (git remote), never a URL or an option typed on make's line."""
    remotes = git.run(root, "remote", check=False).stdout.split()
    if remote not in remotes:
        raise unknown_remote(remote, remotes)
    return remote


def _require_pages_branch(root: Path, branch: str) -> None:
    """mike rewrites the branch it publishes to: never the one checked out, never one holding the source."""
    if branch in git.checked_out_branches(root):
        raise branch_checked_out(branch)
    if git.ref_sha(root, f"refs/heads/{branch}") is not None:
        held = [name for name in SOURCE_MARKERS if git.has_path(root, f"refs/heads/{branch}", name)]
        if held:
            raise branch_holds_source(branch, held[0])


def _stamp_fields(stamp: Stamp) -> dict[str, str]:
    return dataclasses.asdict(stamp)


def _edition_file(root: Path, edition: str) -> Stamp:
    """edition.yml must name the edition being published: it is what every page's footer says."""
    stamp = load_stamp(root / "edition.yml")
    if stamp.edition != edition:
        raise edition_file_differs(stamp.edition, edition)
    return stamp


def _require_clean(root: Path) -> None:
    """An edition must be rebuildable from its tag, so everything it is built from must be committed."""
    dirty = git.dirty_paths(root)
    if dirty:
        raise uncommitted_changes(dirty)


def _build(root: Path, edition: str, settings: Settings) -> None:
    """The edition's build: every timestamp pinned to the edition date, and no earlier build's state trusted (every
    input byte hashed and read, nothing taken from a cache or memo); a false claim stops publishing."""
    try:
        run_build(root, settings)
    except ClaimsFailed as error:
        failed = _failed_claims(Layout(root).build / "claims.json")
        raise edition_claims_failed(edition, error.failed, error.total, failed) from None
    except ClaimsUnproven as error:
        raise edition_claims_unproven(edition, error) from None


def edition_settings(settings: Settings, epoch: int, *, quiet: bool) -> Settings:
    """An edition's build settings: dated epoch, the edition selector and print edition, no earlier state trusted."""
    return dataclasses.replace(settings, site=True, edition=True, epoch=epoch, trust_state=False, quiet=quiet)


def run_build(root: Path, settings: Settings) -> None:
    """The ordinary build (imported late: publishing needs the whole pipeline, verify and diff do not)."""
    from build_tools.build import build

    build(root, settings)


def _failed_claims(claims_json: Path) -> list[str]:
    claims = manifest_.claims_section(claims_json) if claims_json.is_file() else {}
    return [manifest_.claim_name(key, claim) for key, claim in claims.items() if claim["verdict"] == "fail"]


def _require_footer(site: Path, edition: str) -> None:
    """Every page with a footer must carry the edition being published (the stamp comes from edition.yml)."""
    expected = f"Edition {edition}"
    pages = [p for p in sorted(site.rglob("*.html")) if "<footer" in p.read_text(encoding="utf-8")]
    missing = [p.relative_to(site).as_posix() for p in pages if expected not in p.read_text(encoding="utf-8")]
    if not pages or missing:
        raise footer_missing(edition, missing)


def _previous_manifest(root: Path, branch: str, edition: str) -> Manifest | None:
    """The manifest of the newest published edition older than this one: what 'changes' is measured from."""
    older = [e for e in published_editions(root, branch) if edition_key(e) < edition_key(edition)]
    return published_manifest(root, branch, older[-1]) if older else None


def _older_manifests(root: Path, branch: str, edition: str) -> list[Manifest]:
    """The manifests of the published editions older than this one, oldest first (an edition without one: left out)."""
    older = [e for e in published_editions(root, branch) if edition_key(e) < edition_key(edition)]
    return [m for e in older if (m := published_manifest(root, branch, e)) is not None]


def _stage_site(site: Path, staged: Path, manifest: Manifest, previous: Manifest | None,
                history: Sequence[Manifest] = ()) -> Path:
    """The built site plus the edition's own pages: manifest.json, manifest.html and changes.html; and the
    Claim health page's margins across the editions (history: the published ones, oldest first, then this)."""
    shutil.copytree(site, staged, symlinks=True)
    (staged / "manifest.json").write_text(manifest_.dumps(manifest), encoding="utf-8")
    # The themed record pages the build made are filled in (edition_pages.py).
    title = f"Edition {manifest['edition']}: manifest"
    edition_pages.write_record(staged / "manifest.html", title, manifest_.manifest_markdown(manifest))
    if previous is not None:
        title = f"Edition {manifest['edition']}: what changed since {previous['edition']}"
        edition_pages.write_record(staged / "changes.html", title, manifest_.changes_markdown(previous, manifest))
    elif (staged / "changes.html").is_file():
        edition_pages.fill(staged / "changes.html", edition_pages.first_edition_changes(manifest["edition"]))
    editions = history or [manifest]
    edition_pages.fill(staged / "claim-health.html",
                       claim_health.history_markdown(editions) + claim_health.first_weakened_markdown(editions),
                       (claim_health.MARK_START, claim_health.MARK_END))
    return staged


@contextlib.contextmanager
def _transaction(root: Path, refs: list[str]) -> Iterator[None]:
    """Record where refs point (or that they are absent); on any failure, put every one of them back."""
    before = {ref: git.ref_sha(root, ref) for ref in refs}
    try:
        yield
    except BaseException:
        for ref, sha in before.items():
            git.restore_ref(root, ref, sha)
        raise


def _mike_config(site: Path) -> dict[str, object]:
    return {"site_dir": str(site), "use_directory_urls": True}


def _deploy(root: Path, site: Path, edition: str, branch: str, commit: str) -> bool:
    """mike's commit of the edition onto branch; False when the branch already held exactly this."""
    from mike import commands, git_utils

    # mike's git calls run in the current directory; an empty commit (nothing changed) is removed by mike.
    try:
        with contextlib.chdir(root), commands.deploy(_mike_config(site), edition, title=edition, branch=branch,
                                                     message=f"Publish edition {edition} from {commit[:7]}"):
            pass
    except git_utils.GitEmptyCommit:
        return False
    return True


def _move_latest(root: Path, site: Path, branch: str) -> str:
    """Point `latest` at the newest edition by number and make it the default; returns that edition."""
    from mike import commands, git_utils

    with contextlib.chdir(root):
        versions = commands.list_versions(branch)
        newest = max((str(info.version) for info in versions if EDITION_NUMBER.match(str(info.version))),
                     key=edition_key)
        if LATEST not in versions[newest].aliases:
            commands.alias(_mike_config(site), newest, [LATEST], update_aliases=True, branch=branch,
                           message=f"Move {LATEST} to edition {newest}")
        # mike refuses an empty commit and removes it: the default already being `latest` is no failure.
        with contextlib.suppress(git_utils.GitEmptyCommit):
            commands.set_default(LATEST, branch=branch, message=f"Default to {LATEST}")
    return newest


def _tag(root: Path, tag: str, commit: str, stamp: Stamp) -> str:
    """The annotated tag object for commit, not yet named by any ref (update_refs names it); returns its sha."""
    tagger = git.run(root, "var", "GIT_COMMITTER_IDENT").stdout.strip()
    body = (f"object {commit}\ntype commit\ntag {tag}\ntagger {tagger}\n\n"
            f"Edition {stamp.edition} of {stamp.date}\n")
    return git.run(root, "mktag", input=body).stdout.strip()


def _push(root: Path, remote: str, branch: str, tag: str, *, force_tag: bool) -> str:
    """Push the branch and the tag together (--atomic): the remote gets both or neither."""
    tag_spec = f"{'+' if force_tag else ''}refs/tags/{tag}:refs/tags/{tag}"
    done = git.run(root, "push", "--atomic", "--quiet", remote, f"refs/heads/{branch}:refs/heads/{branch}",
                   tag_spec, check=False)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        raise push_failed(remote, branch, tag, reason)
    return remote


# --- verify ------------------------------------------------------------------------------------------------

def verify(root: Path, edition: str, *, branch: str = "gh-pages",
           quiet: bool = False) -> tuple[Manifest, list[str], tuple[list[str], list[str]]]:
    """Rebuild an edition from its tag in a temporary folder: its published manifest, every difference from it, and
    the tools (Python, libraries) it was built with and the rebuild ran with where they differ."""
    root = root.resolve()
    check_number(edition, "verify")
    _require_repository(root)
    check_branch(root, branch)
    _require_branch(root, branch, "verify")
    published = _require_manifest(root, branch, edition)
    tag = tag_name(edition)
    if git.ref_sha(root, f"refs/tags/{tag}") is None:
        raise tag_missing(tag, edition)
    if git.rev(root, f"refs/tags/{tag}") is None:
        raise tag_not_a_commit(tag, git.object_type(root, f"refs/tags/{tag}^{{}}"))
    # In build/, named with this process's id: removed on exit, SIGINT and SIGTERM, and by the next build after a kill.
    with tempfile.TemporaryDirectory(prefix=temporary_prefix("verify"), dir=_build_dir(root)) as tmp:
        checkout = Path(tmp) / "manual"
        git.run(root, "clone", "--quiet", "--branch", tag, str(root), str(checkout))
        checkpoint("verify-cloned")
        stamp = load_stamp(checkout / "edition.yml")
        epoch = source_date_epoch(stamp.date)
        rebuild(checkout, epoch, quiet=quiet)
        rebuilt = manifest_.compute(checkout, edition=_stamp_fields(stamp),
                                    project_commit=git.rev(checkout, "HEAD") or "", source_date_epoch=epoch)
    return published, manifest_.differences(published, rebuilt), manifest_.tool_changes(published, rebuilt)


def rebuild(checkout: Path, epoch: int, *, quiet: bool) -> None:
    """Build a checkout with its own code (cwd first on sys.path), as on another machine with the same tools."""
    # The checkout's code reads its settings from the environment, as every edition's code since the first has.
    env = {**os.environ, EPOCH_ENV: str(epoch), PUBLISH_ENV: "1"}
    command = [sys.executable, "-m", "build_tools", "--root", str(checkout), "build"]
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=quiet, text=True)
    if done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-1:] if quiet else []
        raise rebuild_failed(done.returncode, tail[0] if tail else "")


# --- diff --------------------------------------------------------------------------------------------------

def diff(root: Path, old: str, new: str, *, branch: str = "gh-pages") -> str:
    """What changed between two published editions, read from their manifests on the branch."""
    root = root.resolve()
    if not old or not new:
        raise two_editions_needed()
    check_number(old, "diff")
    check_number(new, "diff")
    _require_repository(root)
    check_branch(root, branch)
    _require_branch(root, branch, "diff")
    return manifest_.changes_text(_require_manifest(root, branch, old), _require_manifest(root, branch, new))
