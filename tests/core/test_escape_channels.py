"""One escaping rule per output channel (issue 39): `terminal_text` for a terminal, `github_text` for the data of
a GitHub workflow command, `json_line` for a JSON stream. Whatever the data holds, no C0 or C1 control reaches the
output, and no line the data makes starts a workflow command (the runner reads stdout and stderr alike, after
trimming leading white space)."""

from __future__ import annotations

import json
import re

import pytest

from build_tools.core._escape import github_text, json_line, terminal_text, workflow_command

# What the data of issue 39 held: a newline that starts a workflow command, 8-bit CSI and OSC, 7-bit ESC.
HOSTILE = ("run\n::set-env name=LD_PRELOAD::/tmp/x.so\n  ::add-mask::secret\r\n##[set-env name=A]b"
           "\u009b31m\u009d0;title\u009c\x1b]52;c;AAAA\x07 \x1b[2J\x7f\x00\u2028end")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1
RUNNER_LINE = re.compile(r"^[ \t]*(::|##\[)", re.MULTILINE)


def test_terminal_text_keeps_no_control_and_no_runner_command() -> None:
    shown = terminal_text(HOSTILE)
    assert not CONTROL.search(shown)
    assert not RUNNER_LINE.search(shown)
    assert shown.splitlines() == ["run", "\\::set-env name=LD_PRELOAD::/tmp/x.so", "  \\::add-mask::secret",
                                  "\\##[set-env name=A]b end"]


@pytest.mark.parametrize(("text", "shown"), [
    ("::error::x", "\\::error::x"),  # at the very start too: the data may begin a line of output
    ("\t::warning::x", "\t\\::warning::x"),
    ("a::b", "a::b"),  # only at a line's start
    ("##vso[task.setvariable]x", "\\##vso[task.setvariable]x"),
    ("ordinary: text", "ordinary: text"),
])
def test_terminal_text_marks_a_line_a_runner_would_obey(text: str, shown: str) -> None:
    assert terminal_text(text) == shown


def test_github_text_stays_on_the_command_line() -> None:
    encoded = github_text(HOSTILE)
    assert "\n" not in encoded and "\r" not in encoded
    assert not CONTROL.search(encoded)
    assert encoded.startswith("run%0A::set-env name=LD_PRELOAD::/tmp/x.so%0A  ::add-mask::secret%0A##[")
    assert github_text("50% done") == "50%25 done"
    line = workflow_command("warning", HOSTILE, {"title": "a,b::c\nd"})
    assert line.startswith("::warning title=a%2Cb%3A%3Ac%0Ad::run%0A") and len(line.splitlines()) == 1


@pytest.mark.parametrize("value", [HOSTILE, {"item": HOSTILE, "nested": [HOSTILE, 1.5, None]}, "\ud800 lone",
                                   "\u0085 next line \u0080", "plain 中文 › °C"])
def test_json_line_writes_no_raw_control_and_reads_back_the_same(value: object) -> None:
    line = json_line(value)
    assert not re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]", line)
    assert json.loads(line) == value


def test_json_line_escapes_c1_as_json_escapes() -> None:
    assert json_line({"a": "\u009b31m"}) == '{"a": "\\u009b31m"}'
    assert json_line("中文") == '"中文"'  # other text stays as it is
