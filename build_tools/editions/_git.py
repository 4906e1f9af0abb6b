"""The few git commands editions need, each run in the project root (never in the caller's directory)."""

from __future__ import annotations

import subprocess
from pathlib import Path

# The build writes only into these (git-ignored) folders; a change there never makes the tree dirty.
BUILD_OUTPUTS = ("build/", "site/")


class GitFailed(Exception):
    """A git command that should have worked did not (a bug or a broken repository, not a user mistake)."""


def run(root: Path, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `git args` in root; raise GitFailed with git's own words when check is set and it fails."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, input=input)
    if check and done.returncode != 0:
        raise GitFailed(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def is_repository(root: Path) -> bool:
    return run(root, "rev-parse", "--git-dir", check=False).returncode == 0


def rev(root: Path, ref: str) -> str | None:
    """The commit sha a ref points to, or None when it does not exist."""
    done = run(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return done.stdout.strip() or None


def object_type(root: Path, name: str) -> str:
    """What an object is (commit, tree, blob, tag), "" when there is no such object."""
    return run(root, "cat-file", "-t", name, check=False).stdout.strip()


def ref_sha(root: Path, full_ref: str) -> str | None:
    """The object a full ref (refs/heads/x, refs/tags/y) points to, without peeling; None when absent."""
    done = run(root, "rev-parse", "--verify", "--quiet", full_ref, check=False)
    return done.stdout.strip() or None


def restore_ref(root: Path, full_ref: str, sha: str | None) -> None:
    """Put a ref back where it was: to sha, or deleted when it did not exist."""
    if sha is None:
        if ref_sha(root, full_ref) is not None:
            run(root, "update-ref", "-d", full_ref)
    else:
        run(root, "update-ref", full_ref, sha)


def dirty_paths(root: Path) -> list[str]:
    """Paths with uncommitted changes, untracked files included, outside the build's own outputs."""
    lines = run(root, "status", "--porcelain", "--untracked-files=all").stdout.splitlines()
    paths = [line[3:] for line in lines if line.strip()]
    return [path for path in paths if not path.strip('"').startswith(BUILD_OUTPUTS)]


def show(root: Path, ref: str, path: str) -> bytes | None:
    """A file's bytes at ref, or None when ref or file does not exist."""
    done = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=root, capture_output=True)
    return done.stdout if done.returncode == 0 else None


def update_refs(root: Path, updates: dict[str, tuple[str | None, str | None]]) -> None:
    """Move several refs in one git transaction (all or none): {ref: (new sha or None to delete, old sha or None)}."""
    lines = ["start"]
    for ref, (new, old) in updates.items():
        if new is None:
            lines.append(f"delete {ref} {old or ''}".rstrip())
        elif old is None:
            lines.append(f"create {ref} {new}")
        else:
            lines.append(f"update {ref} {new} {old}")
    lines += ["prepare", "commit", ""]
    run(root, "update-ref", "--stdin", input="\n".join(lines))


def checked_out_branches(root: Path) -> list[str]:
    """The branches checked out in this repository's working trees (this one and every `git worktree`)."""
    lines = run(root, "worktree", "list", "--porcelain").stdout.splitlines()
    return [line.removeprefix("branch refs/heads/") for line in lines if line.startswith("branch refs/heads/")]


def common_dir(root: Path) -> Path:
    """The repository's own folder, shared by all its working trees (.git of the main one)."""
    path = Path(run(root, "rev-parse", "--git-common-dir").stdout.strip())
    return path if path.is_absolute() else (root / path).resolve()


def has_path(root: Path, ref: str, path: str) -> bool:
    return run(root, "cat-file", "-e", f"{ref}:{path}", check=False).returncode == 0
