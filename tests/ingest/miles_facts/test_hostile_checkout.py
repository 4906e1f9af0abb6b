"""Issue 39, the maintainer's tools on a hostile checkout: `make miles-guidance` and `make miles-facts` check MILES=
(a path to a folder, never shell text) and every file they read of the checkout, and answer each problem with one
line naming the file and exit 2, never a traceback (the project's table reads exit 1 as a bug)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checking.test_miles_guidance import GUIDANCE, checkout
from tests.ingest.miles_facts.test_miles_facts import MIRROR, PINNED

ROOT = Path(__file__).resolve().parents[3]
EXPECTED = ("expected the path of a Miles checkout (a git work tree or git folder, or a copy with its commit in a "
            "COMMIT file)")
LINK_OUT = "is a symbolic link to outside the checkout; only files inside it are read: copy the file in instead"
FIFO = "is a FIFO (named pipe), not a plain file; only plain files are read"
ADVISORY = "miles/dashboard/advisory.py"
MONITORING = "docs/user-guide/monitoring.md"
ARGS = "miles/dashboard/args.py"


def run(module: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    assert "Traceback" not in done.stderr
    return done.returncode, done.stderr


# --- make miles-guidance ---------------------------------------------------------------------------------------


def guidance(tmp_path: Path, miles: Path | str) -> tuple[int, list[str]]:
    """The tool, run where it writes docs/data/miles_guidance.yml (a copy: a refused checkout writes nothing)."""
    (tmp_path / "docs" / "data").mkdir(parents=True, exist_ok=True)
    shutil.copy(GUIDANCE, tmp_path / "docs" / "data" / "miles_guidance.yml")
    code, err = run("build_tools.checking.miles_guidance", cwd=tmp_path, env={"MILES": str(miles)})
    assert (tmp_path / "docs" / "data" / "miles_guidance.yml").read_bytes() == GUIDANCE.read_bytes()
    return code, err.splitlines()


def spoil(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


@pytest.mark.parametrize(("name", "change", "said"), [
    ("advisory not UTF-8", lambda m: spoil(m / ADVISORY, b"TRUNCATED_FRAC_WARN", b"TRUNCATED_\xff_WARN"),
     "{m}/miles/dashboard/advisory.py:{line}: not UTF-8 text"),
    ("monitoring not UTF-8", lambda m: spoil(m / MONITORING, b"## What to watch", b"## What to \xe9atch"),
     "{m}/docs/user-guide/monitoring.md:{line}: not UTF-8 text"),
    ("syntax error", lambda m: spoil(m / ADVISORY, b"TRUNCATED_FRAC_WARN = 0.25", b"TRUNCATED_FRAC_WARN = = 0.25"),
     "{m}/miles/dashboard/advisory.py:{line}: not Python (invalid syntax)"),
    ("400-digit constant", lambda m: spoil(m / ADVISORY, b"TRUNCATED_FRAC_WARN = 0.25",
                                           b"TRUNCATED_FRAC_WARN = 1" + b"0" * 399),
     "{m}/miles/dashboard/advisory.py:{line}: TRUNCATED_FRAC_WARN: a whole number of 400 digits is no threshold: "
     "expected a finite number"),
    ("infinite constant", lambda m: spoil(m / ADVISORY, b"TRUNCATED_FRAC_WARN = 0.25", b"TRUNCATED_FRAC_WARN = 1e999"),
     "{m}/miles/dashboard/advisory.py:{line}: TRUNCATED_FRAC_WARN: inf is no threshold: expected a finite number"),
    ("advisory missing", lambda m: (m / ADVISORY).unlink(),
     f"{{m}}/miles/dashboard/advisory.py: missing: {EXPECTED} (Miles has miles/dashboard/advisory.py)"),
    ("advisory a FIFO", lambda m: ((m / ADVISORY).unlink(), os.mkfifo(m / ADVISORY)),
     f"{{m}}/miles/dashboard/advisory.py: {FIFO}"),
    ("monitoring a link out", lambda m: ((m / MONITORING).unlink(), (m / MONITORING).symlink_to("/etc/passwd")),
     f"{{m}}/docs/user-guide/monitoring.md: {LINK_OUT}"),
])
def test_a_checkout_miles_guidance_cannot_read_is_one_line(name: str, change, said: str, tmp_path: Path) -> None:
    miles = checkout(tmp_path / "miles")
    change(miles)
    code, lines = guidance(tmp_path, miles)
    line = _line_of(miles, name)
    assert (code, lines) == (2, ["ERROR " + said.format(m="miles", line=line)])


def _line_of(miles: Path, name: str) -> int | None:
    """The line of the spoiled text, counted in the file (the message names it)."""
    path, text = (miles / MONITORING, b"What to \xe9atch") if "monitoring" in name else (miles / ADVISORY,
                                                                                         b"TRUNCATED_")
    if not path.is_file() or path.is_symlink():
        return None
    data = path.read_bytes()
    return data[:data.find(text)].count(b"\n") + 1


@pytest.mark.parametrize(("miles", "said"), [
    ("", f"MILES is not set: {EXPECTED}, e.g. make miles-guidance MILES=../miles"),
    ("$(touch pwned)", f"MILES=$(touch pwned): not a folder: {EXPECTED}, e.g. make miles-guidance MILES=../miles"),
    ("miles; touch pwned", f"MILES=miles; touch pwned: not a folder: {EXPECTED}, e.g. make miles-guidance "
                           "MILES=../miles"),
    ("miles\n::set-env name=x::y", f"MILES='miles\\n::set-env name=x::y': holds a control character: {EXPECTED}, "
                                   "e.g. make miles-guidance MILES=../miles"),
])
def test_miles_guidance_takes_miles_as_a_path_never_as_shell_text(miles: str, said: str, tmp_path: Path) -> None:
    checkout(tmp_path / "miles")
    code, lines = guidance(tmp_path, miles)
    assert (code, lines) == (2, [f"ERROR {said}"])
    assert not (tmp_path / "pwned").exists()


def test_a_bare_git_folder_with_a_file_not_utf8_is_one_line(tmp_path: Path) -> None:
    work = checkout(tmp_path / "work")
    spoil(work / ADVISORY, b"TRUNCATED_FRAC_WARN", b"TRUNCATED_\xff_WARN")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "x"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(tmp_path / "bare.git")], check=True)
    code, lines = guidance(tmp_path, tmp_path / "bare.git")
    assert (code, lines) == (2, ["ERROR bare.git@HEAD:miles/dashboard/advisory.py:"
                                 f"{_line_of(work, 'advisory')}: not UTF-8 text"])


# --- make miles-facts ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def miles_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (MIRROR / "HEAD").exists():
        pytest.skip("the Miles snapshot is not on this machine")
    source = tmp_path_factory.mktemp("miles") / "miles"
    source.mkdir()
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", PINNED, "miles"], capture_output=True, check=True)
    subprocess.run(["tar", "x", "-C", str(source)], input=archive.stdout, check=True)
    (source / "COMMIT").write_text(PINNED + "\n")
    return source


def facts(tmp_path: Path, miles: Path | str) -> tuple[int, list[str]]:
    out = tmp_path / "miles_args.json"
    code, err = run("build_tools.ingest.miles_facts.extract", str(miles), str(out), cwd=tmp_path)
    assert not out.exists()  # refused: nothing written
    return code, err.splitlines()


def test_miles_facts_from_a_sound_copy_is_written(miles_tree: Path, tmp_path: Path) -> None:
    """The cases below are this copy with one thing wrong: the copy itself is read."""
    code, _ = run("build_tools.ingest.miles_facts.extract", str(miles_tree), str(tmp_path / "a.json"), cwd=tmp_path)
    assert code == 0 and (tmp_path / "a.json").is_file()


def _keys(expression: bytes):
    def change(m: Path) -> None:
        path = m / ARGS
        text = path.read_bytes()
        start = text.index(b"_SNAPSHOT_KEYS")
        end = text.index(b")", start) + 1
        path.write_bytes(text[:start] + b"_SNAPSHOT_KEYS = " + expression + text[end:])
    return change


@pytest.mark.parametrize(("name", "change", "said"), [
    ("no git and no COMMIT", lambda m: (m / "COMMIT").unlink(),
     f"{{m}}: no git work tree and no COMMIT file: {EXPECTED}"),
    ("COMMIT not a commit", lambda m: (m / "COMMIT").write_text("$(reboot)\n"),
     "{m}/COMMIT: expected the commit as 7 to 40 hex digits (git rev-parse HEAD), found '$(reboot)'"),
    ("args.py not UTF-8", lambda m: spoil(m / ARGS, b"_SNAPSHOT_KEYS", b"_SNAPSHOT_\xff"),
     "{m}/miles/dashboard/args.py:{line}: not UTF-8 text"),
    ("keys an expression", _keys(b'tuple(k for k in ("a", "b"))'),
     "{m}/miles/dashboard/args.py:{line}: _SNAPSHOT_KEYS is not a literal tuple of flag names ('wandb_group', ...): "
     "this tool reads it without running Miles"),
    ("keys a 400-digit constant", _keys(b"(1" + b"0" * 399 + b",)"),
     "{m}/miles/dashboard/args.py:{line}: _SNAPSHOT_KEYS is not a literal tuple of flag names ('wandb_group', ...): "
     "this tool reads it without running Miles"),
    ("parser module missing", lambda m: (m / "miles" / "utils" / "arguments.py").unlink(),
     f"{{m}}/miles/utils/arguments.py: missing: {EXPECTED} (Miles has miles/utils/arguments.py)"),
    ("parser syntax error", lambda m: spoil(m / "miles" / "utils" / "arguments.py", b"def ", b"def def "),
     "{m}/miles/utils/arguments.py:{line}: not Python (invalid syntax)"),
    ("parser raises", lambda m: spoil(m / "miles" / "utils" / "arguments.py", b"\ndef ",
                                      b"\nraise RuntimeError('no')\ndef "),
     "{m}/miles/utils/arguments.py:{line}: Miles' parser could not be built from this checkout (RuntimeError: no)"),
    ("imported module not UTF-8", lambda m: (m / "miles" / "utils" / "environ.py").write_bytes(
        (m / "miles" / "utils" / "environ.py").read_bytes() + b'\n_X = "\xff"\n'),
     "{m}/miles/utils/environ.py:{line}: not Python ((unicode error) 'utf-8' codec can't decode byte 0xff"),
])
def test_a_checkout_miles_facts_cannot_read_is_one_line(name: str, change, said: str, miles_tree: Path,
                                                         tmp_path: Path) -> None:
    miles = tmp_path / "miles"
    shutil.copytree(miles_tree, miles)
    change(miles)
    code, lines = facts(tmp_path, miles)
    assert code == 2 and len(lines) == 1, lines
    expected = "ERROR " + said.format(m="miles", line=_changed_line(miles, name))
    assert lines[0] == expected if "imported" not in name else lines[0].startswith(expected)


def _changed_line(miles: Path, name: str) -> int | None:
    marks = {"args.py not UTF-8": (ARGS, b"_SNAPSHOT_\xff"), "keys an expression": (ARGS, b"_SNAPSHOT_KEYS ="),
             "keys a 400-digit constant": (ARGS, b"_SNAPSHOT_KEYS ="),
             "parser syntax error": ("miles/utils/arguments.py", b"def def "),
             "parser raises": ("miles/utils/arguments.py", b"raise RuntimeError"),
             "imported module not UTF-8": ("miles/utils/environ.py", b'_X = "\xff"')}
    if name not in marks:
        return None
    data = (miles / marks[name][0]).read_bytes()
    return data[:data.index(marks[name][1])].count(b"\n") + 1


@pytest.mark.parametrize("miles", ["$(touch pwned)", "`touch pwned`", "x; touch pwned", "miles\u009b31m"])
def test_make_miles_facts_takes_miles_as_a_path_never_as_shell_text(miles: str, tmp_path: Path) -> None:
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "miles-facts", f"MILES={miles}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith(("ERROR MILES=", "ERROR MILES='"))
    assert not (tmp_path / "pwned").exists() and not (ROOT / "pwned").exists()
