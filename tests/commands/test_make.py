"""make passes its variables as values, never as shell: a payload in any of them runs nothing, and the one-line
error names the variable; a failure says which outcome it was, since make turns every failure into exit 2."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from build_tools.commands import _make
from build_tools.core._exceptions import ManualError
from tests.conftest import ROOT

ERROR_EDITION = "is not an edition number: use YEAR.MONTH with a two-digit month, e.g. make publish EDITION=2026.10"
BAD_INPUT = ("manual exited 2: bad input (make turns every failure into exit 2; .venv/bin/manual returns the code "
             "itself)")


def make(*argv: str) -> subprocess.CompletedProcess[str]:
    """make in the project itself (-o: never reinstall the virtual environment from a test)."""
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "-C", str(ROOT), *argv],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize(("target", "variables", "error"), [
    ("publish", {"EDITION": "2026.10;touch {m}"}, "EDITION='2026.10;touch {m}' " + ERROR_EDITION),
    ("publish", {"EDITION": "2026.10 && touch {m}"}, "EDITION='2026.10 && touch {m}' " + ERROR_EDITION),
    ("publish", {"EDITION": "$(shell touch {m})"}, "EDITION='$(shell touch {m})' " + ERROR_EDITION),
    ("publish", {"EDITION": "`touch {m}`"}, "EDITION='`touch {m}`' " + ERROR_EDITION),
    ("publish", {"EDITION": "$$(touch {m})"}, "EDITION='$$(touch {m})' " + ERROR_EDITION),
    ("publish", {"EDITION": "2026.10 --branch=main"}, "EDITION='2026.10 --branch=main' " + ERROR_EDITION),
    ("publish", {"EDITION": "2026.10", "PUSH": "1;touch {m}"}, "PUSH='1;touch {m}' is not 1 or nothing: write "
                                                                "PUSH=1 to turn it on, or leave it out"),
    ("verify", {"EDITION": "2026.10", "BRANCH": "gh-pages;touch {m}"},
     "'gh-pages;touch {m}' is not a branch name git accepts (git check-ref-format): name the branch editions "
     "are published to, e.g. BRANCH=gh-pages"),
    ("diff", {"FROM": "2026.10", "TO": "2026.11|touch {m}"},
     "TO='2026.11|touch {m}' is not an edition number: use YEAR.MONTH with a two-digit month, e.g. make diff "
     "FROM=2026.10 TO=2026.11"),
    ("serve", {"PORT": "8000;touch {m}"},
     "PORT='8000;touch {m}' is not a port: write a whole number from 1 to 65535, e.g. make serve PORT=8001"),
    ("compare", {"RUN": "x;touch {m}"}, "1 problem in the run data:"),
    ("check", {"ALL": "1;touch {m}"}, "ALL='1;touch {m}' is not 1 or nothing: write ALL=1 to turn it on, or leave "
                                      "it out"),
])
def test_a_shell_payload_in_a_make_variable_runs_nothing(target: str, variables: dict[str, str], error: str,
                                                         tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = make(target, *(f"{name}={value.format(m=marker)}" for name, value in variables.items()))
    assert done.returncode == 2
    assert not marker.exists()
    lines = done.stderr.splitlines()
    assert lines[0] == f"ERROR {error.format(m=marker)}"
    assert BAD_INPUT in lines
    assert lines[-1].startswith("make: *** [Makefile:") and lines[-1].endswith(f"{target}] Error 2")


def test_a_remote_is_a_configured_name_not_a_url_or_an_option(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    done = make("publish", "EDITION=2026.10", "PUSH=1", f"REMOTE=--upload-pack=touch {marker}")
    assert done.returncode == 2 and not marker.exists()
    assert done.stderr.startswith(f"ERROR '--upload-pack=touch {marker}' is not a remote of this repository (remotes: ")


def test_a_valid_value_reaches_the_program_as_one_argument() -> None:
    done = make("diff", "FROM=2026.10", "TO=2026.11", "BRANCH=no-such-branch-of-the-tests")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        "ERROR no branch no-such-branch-of-the-tests in this repository: publish an edition first (make publish "
        "EDITION=...), or name the branch with --branch")


@pytest.mark.parametrize(("code", "outcome"), [(1, "a bug"), (2, "bad input"),
                                               (3, "a claim failed (or, with PROVE=1, was not shown able to fail)"),
                                               (4, "verify found a difference"),
                                               (6, "a claim's margin is below the warning threshold (STRICT=1)")])
def test_a_failure_says_which_outcome_it_was(code: int, outcome: str, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import build_tools.cli

    seen = []
    monkeypatch.setattr(build_tools.cli, "main", lambda argv: seen.append(argv) or code)
    assert _make.main(["verify"], {"EDITION": "2026.10", "BRANCH": "gh-pages"}) == code
    assert seen == [["verify", "--branch=gh-pages", "--", "2026.10"]]
    assert capsys.readouterr().err.splitlines() == [
        f"manual exited {code}: {outcome} (make turns every failure into exit 2; .venv/bin/manual returns the code "
        "itself)"]


def test_make_variables_become_single_arguments() -> None:
    env = {"EDITION": "2026.11", "BRANCH": "pages", "PUSH": "1", "REPLACE": "", "FROM": "2026.10", "TO": "2026.11",
           "RUN": "-odd name", "PORT": "8001"}
    assert _make.arguments("publish", env, ROOT) == ["publish", "--branch=pages", "--push", "--", "2026.11"]
    assert _make.arguments("diff", env, ROOT) == ["diff", "--branch=pages", "--", "2026.10", "2026.11"]
    assert _make.arguments("compare", env, ROOT) == ["compare", "--", "./-odd name"]
    assert _make.arguments("serve", env, ROOT) == ["serve", "--port=8001"]
    assert _make.arguments("build", env, ROOT) == ["build"]
    assert _make.arguments("check", env, ROOT) == ["check"]
    assert _make.arguments("check", {"ALL": "1", "RAY": "auto"}, ROOT) == ["check", "--ray=auto", "--all"]
    assert _make.arguments("check", {"ALL": ""}, ROOT) == ["check"]
    assert _make.arguments("check", {"WARN_MARGIN": "0.2", "STRICT": "1", "FORMAT": "github"}, ROOT) == [
        "check", "--warn-margin=0.2", "--strict", "--format=github"]
    assert _make.arguments("check", {"PROVE": "1", "ALL": "1"}, ROOT) == ["check", "--all", "--prove"]
    assert _make.arguments("build", {"PROVE": "1"}, ROOT) == ["build", "--prove"]
    assert _make.arguments("pdf", {"PROVE": "1"}, ROOT) == ["pdf"]  # the print edition proves only when published
    with pytest.raises(ManualError) as error:
        _make.arguments("check", {"FORMAT": "github --all"}, ROOT)
    assert str(error.value) == ("FORMAT='github --all' is not a report format: write FORMAT=github (workflow "
                                "commands for GitHub) or leave it out")


RAY_EXPECTED = "(expected HOST:PORT, ray://HOST:PORT, auto or local)"


@pytest.mark.parametrize(("value", "error"), [
    ("host:99999", f"RAY='host:99999' is not an address: port 99999 is not from 1 to 65535 {RAY_EXPECTED}"),
    ("10.0.0.5:0", f"RAY='10.0.0.5:0' is not an address: port 0 is not from 1 to 65535 {RAY_EXPECTED}"),
    ("ray://head_node:10001", "RAY='ray://head_node:10001' is not an address: 'head_node' is not a host name or "
                              f"an IP address {RAY_EXPECTED}"),
    ("300.1.1.1:6379", f"RAY='300.1.1.1:6379' is not an address: '300.1.1.1' is not a host name or an IP address "
                       f"{RAY_EXPECTED}"),
    ("-head:6379", "RAY='-head:6379' is not an address: '-head' is not a host name or an IP address "
                   f"{RAY_EXPECTED}"),
    ("head-node", f"RAY='head-node' is not an address {RAY_EXPECTED}"),
    ("head:６３７９", f"RAY='head:６３７９' is not an address {RAY_EXPECTED}"),
    ("head:63\u00b2", f"RAY='head:63\u00b2' is not an address {RAY_EXPECTED}"),
])
def test_a_ray_address_that_cannot_be_one_is_refused_before_anything_runs(
        value: str, error: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import build_tools.build

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(build_tools.build, "check", lambda *args, **kwargs: pytest.fail("the check ran"))
    assert _make.main(["check"], {"RAY": value}) == 2
    assert capsys.readouterr().err.splitlines() == [f"ERROR {error}", BAD_INPUT]


@pytest.mark.parametrize(("value", "host", "port"), [
    ("127.0.0.1:6379", "127.0.0.1", 6379), ("ray://head-1.example.com:10001", "head-1.example.com", 10001),
    ("[::1]:6379", "::1", 6379), ("localhost:65535", "localhost", 65535)])
def test_a_ray_address_of_the_right_form_is_taken(value: str, host: str, port: int) -> None:
    from build_tools.summarise import _ray

    assert _ray._host_port(value) == (host, port)
    assert callable(_ray.ray_summariser(value))  # the address is only checked: nothing is reached yet


# --- values that only look right -------------------------------------------------------------------------------

FLAG_TARGETS = {"PUSH": ("publish", {"EDITION": "2026.10"}), "REPLACE": ("publish", {"EDITION": "2026.10"}),
                "STRICT": ("check", {}), "ALL": ("check", {}), "PROVE": ("check", {})}


@pytest.mark.parametrize("name", sorted(FLAG_TARGETS))
@pytest.mark.parametrize("value", ["yes", "true", "on", "0", "no", "false", " 1", "1 ", "01", "１", "\u00b9", "1\n"])
def test_a_flag_is_exactly_1_or_nothing(name: str, value: str) -> None:
    """MAINTAINING.md: PUSH/REPLACE/ALL/STRICT take `1` or nothing; STRICT=yes was taken as --strict."""
    target, others = FLAG_TARGETS[name]
    with pytest.raises(ManualError) as error:
        _make.arguments(target, {**others, name: value}, ROOT)
    shown = value.encode("unicode_escape").decode("ascii") if not value.isprintable() else value
    assert str(error.value) == f"{name}='{shown}' is not 1 or nothing: write {name}=1 to turn it on, or leave it out"
    assert error.value.exit_code == 2


def test_strict_yes_through_make_is_one_line_and_checks_nothing() -> None:
    done = make("check", "STRICT=yes")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "ERROR STRICT='yes' is not 1 or nothing: write STRICT=1 to turn it on, or " \
                                          "leave it out"
    assert "Loading" not in done.stdout + done.stderr


@pytest.mark.parametrize("edition", ["２０２６.10", "2026.１０", "٢٠٢٦.10", "߂߀߂߆.10", "2026.\u0661\u0660"])
@pytest.mark.parametrize("name", ["EDITION", "FROM", "TO"])
def test_an_edition_of_other_digits_than_ascii_is_refused(name: str, edition: str) -> None:
    """\\d takes every Unicode digit; an edition is ASCII [0-9] (full-width ones passed, then publishing crashed)."""
    target = "publish" if name == "EDITION" else "diff"
    env = {"EDITION": "2026.10", "FROM": "2026.10", "TO": "2026.11", name: edition}
    example = "make publish EDITION=2026.10" if name == "EDITION" else "make diff FROM=2026.10 TO=2026.11"
    with pytest.raises(ManualError) as error:
        _make.arguments(target, env, ROOT)
    assert str(error.value) == (f"{name}='{edition}' is not an edition number: use YEAR.MONTH with a two-digit month, "
                                f"e.g. {example}")


def test_a_full_width_edition_through_make_is_one_line() -> None:
    done = make("publish", "EDITION=２０２６.10")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "ERROR EDITION='２０２６.10' " + ERROR_EDITION
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("port", ["８０００", "80\u00b2", "\u0668\u0660\u0660\u0660"])
def test_a_port_of_other_digits_than_ascii_is_refused(port: str) -> None:
    with pytest.raises(ManualError) as error:
        _make.arguments("serve", {"PORT": port}, ROOT)
    assert str(error.value) == f"PORT='{port}' is not a port: write a whole number from 1 to 65535, e.g. make serve " \
                               "PORT=8001"


@pytest.mark.parametrize(("target", "value"), [("check", "bogus"), ("check", "head:0"), ("check", "h:6379;touch x"),
                                               ("bench", "300.1.1.1:6379"), ("check", "ray://:10001")])
def test_a_wrong_ray_address_is_refused_before_ray_is_installed(target: str, value: str) -> None:
    stamp = ROOT / ".venv" / ".installed-ray"
    had_ray = stamp.exists()
    done = make(target, f"RAY={value}")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith(f"ERROR RAY='{value}' is not an address")
    assert done.stderr.splitlines()[0].endswith(RAY_EXPECTED)
    assert "Adding the pinned packages" not in done.stdout  # pip never ran
    assert stamp.exists() == had_ray
    assert done.stderr.splitlines()[-1].endswith("variables] Error 2")


def test_the_variables_step_checks_every_variable_of_its_goal_and_runs_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _make.main(["--variables", "check"], {"RAY": "auto", "ALL": "1", "STRICT": "1"}) == 0
    assert capsys.readouterr().err == ""
    assert _make.main(["--variables", "bench"], {"RAY": "local", "ALL": "yes"}) == 2
    assert capsys.readouterr().err.splitlines()[0] == ("ERROR ALL='yes' is not 1 or nothing: write ALL=1 to turn it "
                                                       "on, or leave it out")


def test_make_watch_takes_the_commands_choices() -> None:
    """FORMAT, FAIL_ON and UNTIL_IDLE reach `manual watch` as its options, each checked first; without RUN the hint
    names make watch, not make compare."""
    from build_tools.commands import _make
    from build_tools.core._exceptions import ManualError

    env = {"RUN": "job", "FORMAT": "github", "FAIL_ON": "outside", "UNTIL_IDLE": "2.5"}
    assert _make.arguments("watch", env, ROOT) == ["watch", "--format=github", "--fail-on=outside",
                                                   "--until-idle=2.5", "--", "job"]
    assert _make.arguments("watch", {"RUN": "job", "FORMAT": "jsonl"}, ROOT) == ["watch", "--format=jsonl", "--",
                                                                                "job"]
    refused = {"FORMAT": "text", "FAIL_ON": "inside", "UNTIL_IDLE": "٣"}  # an Arabic-Indic digit is no ASCII one
    for name, value in refused.items():
        with pytest.raises(ManualError, match=name):
            _make.arguments("watch", {"RUN": "job", name: value}, ROOT)
    with pytest.raises(ManualError) as missing:
        _make.arguments("watch", {}, ROOT)
    assert "make watch RUN=path/to/job" in str(missing.value) and "make compare" not in str(missing.value)
# What a command imports, run as make runs it (python -m MODULE ARGS, in the project folder): the modules loaded at
# its end, one a line on stderr's last line.
IMPORTS_OF = """
import runpy, sys
sys.argv = [sys.argv[1], *sys.argv[2:]]
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""
HEAVY = ("pandas", "numpy", "pyarrow", "pydantic", "matplotlib", "yaml", "rich")


def _imports(root: Path, module: str, *argv: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", IMPORTS_OF, module, *argv], cwd=root, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("MODULES "), done.stderr
    return set(last.split()[1:])


def test_a_no_op_make_check_imports_what_manual_check_imports_and_make_s_door(tmp_path: Path) -> None:
    """`make check` with nothing changed costs `manual check`'s replay plus make's door: it loads no module the
    replay does not (no pandas, numpy or pyarrow before they are needed), but for _make.py itself."""
    from tests.conftest import copy_project

    root = copy_project(tmp_path / "manual")
    _imports(root, "build_tools", "check")  # a cold check, which records its report
    manual = _imports(root, "build_tools", "check")
    door = _imports(root, "build_tools.commands._make", "check")
    assert not {name.split(".")[0] for name in door} & set(HEAVY), sorted(door)
    assert door - manual <= {"build_tools.commands", "build_tools.commands._make"}, sorted(door - manual)
    # RAY set: checking the address is what imports the Ray module (and the summaries' types with it).
    with_ray = subprocess.run([sys.executable, "-c", IMPORTS_OF, "build_tools.commands._make", "--variables",
                               "check"], cwd=root, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "RAY": "auto"})
    assert "build_tools.summarise._ray" in with_ray.stderr.splitlines()[-1].split()


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][a-z-]*):", text, re.M))


def _make_variables() -> set[str]:
    """The variables the Makefile reads: those it passes to the program (ARGUMENTS), and those of its own rules."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    passed = re.search(r"^ARGUMENTS := (.*)$", text, re.M)
    assert passed is not None
    return {*passed.group(1).split(), *re.findall(r"\$\(value ([A-Z_]+)\)", text), "SCALE"}


# `make TARGET NAME=VALUE ...` as a message or hint writes it; an option after make (`make --force`) is make's own.
MAKE_COMMAND = re.compile(r"\bmake((?: (?:[a-z][a-z-]*|[A-Z_]+=[^\s`'\")]*|--?[a-z-]+))+)")


def _quoted_make_commands() -> list[tuple[str, str]]:
    """Every make command the package's strings tell the user to type: (file, command)."""
    import ast

    found = []
    for path in sorted((ROOT / "build_tools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            parts = [node.value] if isinstance(node, ast.Constant) and isinstance(node.value, str) else (
                ["".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)]
                if isinstance(node, ast.JoinedStr) else [])
            for text in parts:
                found += [(path.name, match.group(0)) for match in MAKE_COMMAND.finditer(text)
                          if re.search(r"[A-Z_]+=|--?[a-z]", match.group(1))]
    return found


def test_every_make_command_a_message_names_works_as_typed() -> None:
    """A hint names a target of the Makefile and variables it reads, never an option of make's own (the no-op
    build said `--force rebuilds`, and `make --force` is refused by GNU make). Prose ("make passes ENGINE=")
    is told apart by its first word, which is no target."""
    targets, variables = _make_targets(), _make_variables()
    commands = _quoted_make_commands()
    assert any(where == "cli.py" and command.startswith("make FORCE=1 ") for where, command in commands)
    wrong = []
    for where, command in commands:
        words = command.split()[1:]
        if words[0].startswith("-"):
            wrong.append((where, command, "an option of make's own"))
            continue
        if "=" not in words[0] and words[0] not in targets:
            continue  # prose: "make passes ...", "make turns ..."
        for word in words[0 if "=" in words[0] else 1:]:
            if "=" not in word:
                break  # the sentence goes on
            if word.split("=")[0] not in variables:
                wrong.append((where, command, f"{word.split('=')[0]} is not a variable the Makefile reads"))
    assert wrong == []


def test_force_1_builds_again() -> None:
    assert _make.arguments("build", {"FORCE": "1"}, ROOT) == ["build", "--force"]
    assert _make.arguments("build", {}, ROOT) == ["build"]
    with pytest.raises(ManualError, match="FORCE='yes' is not 1 or nothing"):
        _make.arguments("build", {"FORCE": "yes"}, ROOT)


def test_no_message_tells_the_user_to_type_manual_which_is_not_on_their_path() -> None:
    """`manual` is .venv/bin/manual: typed as written it is not found unless the environment is activated. A hint
    names the make command instead (e.g. `make check WARN_MARGIN=0.2 STRICT=1`)."""
    import ast

    told = []
    for path in sorted((ROOT / "build_tools").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                told += [(path.name, found) for found in re.findall(r"(?:e\.g\.|run|type) `?manual [a-z-]+",
                                                                     node.value)]
    assert told == []
