"""A Miles checkout that a maintainer's tool reads (`make miles-facts`, `make miles-guidance`), checked before and
while it is read: MILES= is a path to a folder (never shell text: it reaches the tool as one argument, and a
control character in it is refused), each file read is a plain UTF-8 file inside it (`_files.open_regular`), the
Python parsed (never run by these checks) and the commit known. Every problem is one line naming the file
(ManualError), which the tool prints as `ERROR ...` with exit 2: a checkout's content is never a traceback.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

from build_tools.core._escape import terminal_text
from build_tools.core._exceptions import InputProblem, ManualError, display_path
from build_tools.core._files import DOCUMENT_LIMIT, confined, read_text

COMMIT = re.compile(r"[0-9a-f]{7,40}")
EXPECTED = ("expected the path of a Miles checkout (a git work tree or git folder, or a copy with its commit in a "
            "COMMIT file)")


def checkout_of(text: str, target: str) -> Path:
    """MILES= as typed: the path of an existing folder."""
    example = f"e.g. make {target} MILES=../miles"
    if not text:
        raise ManualError(f"MILES is not set: {EXPECTED}, {example}")
    if any(unicodedata.category(char)[0] == "C" for char in text):
        raise ManualError(f"MILES={ascii(text)}: holds a control character: {EXPECTED}, {example}")
    path = Path(text)
    if not path.is_dir():
        raise ManualError(f"MILES={text}: not a folder: {EXPECTED}, {example}")
    return path


def source_text(checkout: Path, relative: str) -> str:
    """A text file of the checkout: a plain file inside it, within a document's size, UTF-8."""
    path = checkout / relative
    if not os.path.lexists(path):
        raise ManualError(f"{display_path(path)}: missing: {EXPECTED} (Miles has {relative})")
    try:
        with confined(checkout, "the checkout"):
            return read_text(path, DOCUMENT_LIMIT)
    except InputProblem as error:
        raise ManualError(str(error.problem)) from None


def python_of(source: str, where: str) -> ast.Module:
    """Python source parsed (not run); a syntax error or nesting past the parser's depth is one line."""
    try:
        return ast.parse(source, filename=where)
    except SyntaxError as error:
        raise ManualError(f"{where}:{error.lineno or 1}: not Python ({error.msg})") from None
    except (RecursionError, MemoryError, ValueError) as error:
        raise ManualError(f"{where}: not Python this tool can parse ({type(error).__name__})") from None


def git_commit(checkout: Path, *options: str) -> str | None:
    """HEAD of the checkout when it is the top of a git work tree or a git folder itself (not a folder that only
    lies inside another repository), as `git rev-parse` writes it; None otherwise (or with no git)."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, check=False, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
        out = done.stdout.decode("ascii", errors="replace").strip()
        return out if done.returncode == 0 and out else None

    top = git("rev-parse", "--show-toplevel")
    bare = git("rev-parse", "--is-bare-repository") == "true"
    if not bare and (top is None or os.path.realpath(top) != os.path.realpath(checkout)):
        return None
    commit = git("rev-parse", *options, "HEAD")
    return commit if commit is not None and COMMIT.fullmatch(commit) else None


def recorded_commit(checkout: Path) -> str:
    """The checkout's commit: git's HEAD, else the COMMIT file a copy carries (7 to 40 hex digits)."""
    commit = git_commit(checkout)
    if commit is not None:
        return commit
    where = checkout / "COMMIT"
    if not os.path.lexists(where):
        raise ManualError(f"{display_path(checkout)}: no git work tree and no COMMIT file: {EXPECTED}")
    text = source_text(checkout, "COMMIT").strip()
    if not COMMIT.fullmatch(text):
        raise ManualError(f"{display_path(where)}: expected the commit as 7 to 40 hex digits (git rev-parse HEAD), "
                          f"found {ascii(text[:50])}")
    return text


def refused(error: ManualError) -> int:
    """A problem of the checkout as the tool prints it: one line, exit 2."""
    print(f"ERROR {terminal_text(' '.join(str(error).splitlines()))}", file=sys.stderr)
    return 2
