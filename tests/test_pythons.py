"""The Pythons the manual supports (CPython 3.11 to 3.13) are one list: the Makefile's PYTHON_VERSIONS, which `make`
finds an interpreter among; pyproject.toml's requires-python; the lowest, which ruff and mypy check the code for. And
requirements.lock has a wheel of every pin for Linux on arm64 (a DGX Spark) and x86-64 on each (`make lock-check`)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from tests.conftest import ROOT, SAMPLES

MAKE = "/usr/bin/make"
LOCKS = SAMPLES / "lock"


def _make_variable(name: str) -> str:
    match = re.search(rf"^{name} := (.*)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert match, name
    return match[1]


SUPPORTED = _make_variable("PYTHON_VERSIONS").split()
PLATFORMS = _make_variable("LOCK_PLATFORMS").split()


def test_pyproject_accepts_exactly_the_pythons_make_looks_for() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    accepted = SpecifierSet(project["project"]["requires-python"])
    assert SUPPORTED == ["3.11", "3.12", "3.13"]
    assert all(f"{version}.0" in accepted for version in SUPPORTED)
    lowest_minor = int(SUPPORTED[0].split(".")[1])
    highest_minor = int(SUPPORTED[-1].split(".")[1])
    assert f"3.{lowest_minor - 1}.99" not in accepted and f"3.{highest_minor + 1}.0" not in accepted
    # The code is checked for the lowest supported Python: what it may use runs on every one.
    assert project["tool"]["ruff"]["target-version"] == "py" + SUPPORTED[0].replace(".", "")
    assert project["tool"]["mypy"]["python_version"] == SUPPORTED[0]
    assert _make_variable("PYTHONS").split() == [f"python{v}" for v in reversed(SUPPORTED)] + ["python3"]


def _fake_bin(folder: Path, **scripts: str) -> Path:
    """A folder for PATH holding only the named interpreters, each a shell script."""
    folder.mkdir()
    for name, body in scripts.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def _which_python(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHON", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run([MAKE, "-s", "-C", str(ROOT), "which-python", *args], env={**env, "PATH": str(path)},
                          capture_output=True, text=True)


# make's own line after a failed recipe: `make: ***`, or `make[1]: ***` when the tests run under `make test`.
MAKES_OWN = re.compile(r"make(\[[0-9]+\])?: \*\*\* ")
REAL = f'exec {sys.executable} "$@"'
# A pyenv shim of a version that is not selected: found on PATH, but it does not run.
SHIM = 'echo "pyenv: $0: command not found" >&2; exit 127'


def test_make_takes_the_newest_python_that_runs(tmp_path: Path) -> None:
    folder = _fake_bin(tmp_path / "bin", **{"python3.13": SHIM, "python3.12": REAL, "python3.11": REAL})
    done = _which_python(folder)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"python3.12: {'.'.join(map(str, sys.version_info[:3]))}\n"


def test_make_takes_python3_when_it_is_a_supported_version(tmp_path: Path) -> None:
    done = _which_python(_fake_bin(tmp_path / "bin", python3=REAL))
    assert done.stdout.startswith("python3: 3.") and done.returncode == 0


def test_make_says_in_one_line_which_python_to_install(tmp_path: Path) -> None:
    # python3 runs, but says it is not a supported CPython (the check's own exit status)
    folder = _fake_bin(tmp_path / "bin", **{"python3.13": SHIM, "python3": "exit 1"})
    done = _which_python(folder)
    assert done.returncode == 2 and done.stdout == ""
    ours = [line for line in done.stderr.splitlines() if not MAKES_OWN.match(line)]
    assert ours == ["ERROR no CPython 3.11, 3.12, 3.13 found (tried python3.13 python3.12 python3.11 python3): "
                    "install one, e.g. Python 3.12 (Ubuntu 24.04: apt install python3-venv), or name yours: "
                    "make PYTHON=..."]


def test_a_named_python_that_is_not_supported_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = _fake_bin(tmp_path / "bin", python3=REAL, python2="exit 1")
    done = _which_python(folder, "PYTHON=python2")
    ours = [line for line in done.stderr.splitlines() if not MAKES_OWN.match(line)]
    assert done.returncode == 2 and ours == [
        "ERROR PYTHON=python2 does not run as CPython 3.11, 3.12, 3.13: install one of them and name it, e.g. "
        "make PYTHON=python3.12"]


def test_the_supported_check_reads_the_real_interpreter() -> None:
    """The Makefile's test of an interpreter, run by this one (a supported CPython): it passes, and fails once the
    version is not in the list."""
    program = re.search(r"^SUPPORTED = \$\(1\) -c '([^']+)'", (ROOT / "Makefile").read_text(encoding="utf-8"),
                        re.MULTILINE)
    assert program
    assert "$(PYTHON_VERSIONS)" in program[1]
    listed = program[1].replace("$(PYTHON_VERSIONS)", " ".join(SUPPORTED))
    assert subprocess.run([sys.executable, "-c", listed]).returncode == 0
    others = program[1].replace("$(PYTHON_VERSIONS)", "3.9 3.10")
    assert subprocess.run([sys.executable, "-c", others]).returncode == 1


# --- the lock on every platform and Python -----------------------------------------------------------------

def _lock_check(lock: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MAKE, "-s", "-C", str(ROOT), "lock-check", f"LOCK={lock}"], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_every_pin_of_the_lock_has_a_wheel_for_linux_arm64_on_each_python() -> None:
    done = _lock_check(ROOT / "requirements.lock")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if "every pin" in line]
    assert lines == [f"{ROOT / 'requirements.lock'}: every pin has a wheel for {platform}, CPython {version}"
                     for platform in PLATFORMS for version in SUPPORTED]
    assert "aarch64-manylinux_2_28" in PLATFORMS


@pytest.mark.slow
def test_a_pin_without_an_arm64_wheel_fails_the_lock_check() -> None:
    lock = LOCKS / "windows-only.lock"  # pywin32: wheels for Windows only
    done = _lock_check(lock)
    assert done.returncode != 0
    for platform in PLATFORMS:
        for version in SUPPORTED:
            assert f"ERROR {lock}: a pin has no wheel for {platform}, CPython {version} (uv's reason above)" \
                in done.stderr
    assert "pywin32" in done.stderr


@pytest.mark.slow
def test_a_pin_for_newer_pythons_only_fails_on_the_oldest() -> None:
    lock = LOCKS / "numpy-from-3.12.lock"  # numpy 2.5 requires Python 3.12
    done = _lock_check(lock)
    failed = re.findall(r"^ERROR .*: a pin has no wheel for (\S+), CPython (\S+) ", done.stderr, re.MULTILINE)
    assert sorted(failed) == sorted((platform, SUPPORTED[0]) for platform in PLATFORMS)
    assert done.stdout.count("every pin has a wheel") == len(PLATFORMS) * (len(SUPPORTED) - 1)
