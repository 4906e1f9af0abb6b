"""Every string that comes from data or configuration enters a page through one of these functions.

- `md_text`: text that Python-Markdown (with the site's extensions) shows exactly as written, on one line:
  no raw HTML (`<`, `>`, `&` and `"` become entities), no Markdown construct (links, images, emphasis, code,
  headings, lists, table pipes, attribute lists `{: ...}`). Only characters Python-Markdown accepts a
  backslash escape for are backslash-escaped, so no backslash is left visible on the page.
- `md_part`: `md_text` of a part of a line that is joined to other parts (its edge spaces kept).
- `md_code`: text as a Markdown code span, whatever backticks it holds.
- `html_text`: text for raw HTML that Markdown does not read (element content or a quoted attribute), such as
  a raw-HTML block of a page or a theme template.
- `html_attribute`: text for a quoted attribute of a raw HTML tag that Markdown reads (a figure's <img> alt).
- `terminal_text`: text for a terminal, without the control characters and escape sequences a log line or a
  file name may carry (OSC 52 writes the clipboard, CSI moves the cursor, CR overwrites a line), and with no
  line that a CI runner reads as a command (`::set-env`, `##[`): every output of the command line passes through
  it (cli.py's consoles, build warnings, `manual record`, `manual watch`'s text).
- `terminal_line`: terminal_text of a line that must stay one (a warning): the data's line breaks written `\\n`.
- `github_text`: data inside a GitHub workflow command: terminal_text, percent-encoded (`%`, CR, LF) so that it
  stays one line; `workflow_command` builds a whole command (`manual check --format github`, `manual watch`).
- `json_line`: an object as one JSON line for a stream a terminal shows (`manual watch --format jsonl`): no raw
  C0 or C1 control, DEL, line separator or lone surrogate, each written as its JSON escape (`\\u009b`).
- `csv_cell`: a text cell of a CSV that people open in a spreadsheet (a figure's CSV, `manual show --csv`): one
  a spreadsheet would read as a formula (starting `=`, `+`, `-`, `@`, tab or CR) gets a leading `'` (OWASP's
  rule against CSV injection); a number, or text that writes one (`-0.5`), is left as it is.
- `xml_text`: text for an XML element or attribute (build/claims.junit.xml): every code point XML 1.0 cannot
  hold (C0 controls but tab, newline and CR; lone surrogates; U+FFFE, U+FFFF) written as its Python escape.

The return type `Markdown` marks text that is already safe Markdown, so escaping twice changes nothing; the
page templates escape every value that is not (build_tools/pages/render.py, `finalize`).
"""

from __future__ import annotations

import html
import json
import re
from typing import Any


class Markdown(str):
    """Markdown that is safe as it is: written by the build or already escaped."""

    __slots__ = ()


# Characters of Python-Markdown's backslash escapes (markdown.Markdown.ESCAPED_CHARS, and `|` from the tables
# extension) that begin a construct anywhere in a line; a backslash before any other character stays visible.
# (`(`, `)` and `!` need none: no link or image can start without an unescaped `[`.)
_BACKSLASHED = re.compile(r"([\\`*_{}\[\]#|])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}
_ENTITY = re.compile("[&<>\"]")
# At the start of a line, "- x", "+ x" and "1. x" begin a list, and a line of "-" or "=" underlines
# the line before it as a heading.
# `\d`, not [0-9], on purpose: Python-Markdown's ordered list (OListProcessor) starts with `\d+\.`, which takes
# any Unicode digit ("٣. x" is a list too).
_LIST_START = re.compile(r"^(\d+)\.(?=\s|$)")
_REFERENCE = re.compile(r"(\\\][ \t]*):")


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def md_text(value: Any) -> Markdown:
    """Text Markdown shows as written, on one line (safe in a paragraph, a heading, a table cell, alt text)."""
    if isinstance(value, Markdown):
        return value
    text = _ENTITY.sub(lambda match: _ENTITIES[match.group(0)], _one_line(value))
    text = _BACKSLASHED.sub(r"\\\1", text)
    # "[x\]: y" after a "[" of the page still reads as a link reference definition: its ":" as a reference.
    text = _REFERENCE.sub(r"\1&#58;", text)
    if text.startswith(("-", "+", "=")):
        text = "&#61;" + text[1:] if text[0] == "=" else "\\" + text
    return Markdown(_LIST_START.sub(r"\1\\.", text))


def md_part(value: Any) -> Markdown:
    """md_text of a part of a line, keeping one space at an edge where it had any: the parts join as words."""
    text = str(value)
    if not text.strip():
        return Markdown(" " if text else "")
    return Markdown((" " if text[0].isspace() else "") + md_text(text) + (" " if text[-1].isspace() else ""))


def md_code(value: Any) -> Markdown:
    """Text as one Markdown code span; Markdown escapes its HTML itself. A fence longer than any run of
    backticks in the text, with spaces inside when the text starts or ends with one."""
    text = _one_line(value)
    if not text:
        return Markdown("")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    # A `|` inside a code span does not end a table cell (the tables extension skips code spans).
    return Markdown(f"{fence}{pad}{text}{pad}{fence}")


def html_text(value: Any) -> str:
    """Text for HTML that no Markdown reads: element content or a double-quoted attribute."""
    return html.escape(str(value), quote=True)


# Characters of the inline patterns Python-Markdown applies before it keeps a raw HTML tag as it is (code
# spans, backslash escapes, links and images), as numeric references: an attribute is then one tag to it.
_BEFORE_RAW_HTML = {"`": "&#96;", "\\": "&#92;", "[": "&#91;", "]": "&#93;"}


def html_attribute(value: Any) -> str:
    """Text for a double-quoted attribute of a raw HTML tag that Markdown reads (inside a `markdown="1"`
    block): html_text, with the characters Markdown would act on inside the tag as references, which the
    browser reads back as the characters (so an alt text is the text, whole)."""
    text = html_text(_one_line(value))
    return "".join(_BEFORE_RAW_HTML.get(character, character) for character in text)


# What a terminal acts on rather than shows: escape sequences, 7-bit (ESC ...) and 8-bit (C1), whole, then any
# control character left. A string sequence (OSC, DCS, SOS, PM, APC) runs to BEL or ST, or to the next escape
# or line end when it is never ended; CSI to its final byte. Tab and newline are layout and stay.
_TERMINAL_CONTROL = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # string sequences
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"  # CSI
    r"|\x1b[ -/]*[0-~]?"  # any other escape
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]"  # the other C0 and C1 controls, DEL, line and paragraph separators
)


_WORKFLOW_DATA = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_WORKFLOW_PROPERTY = {**_WORKFLOW_DATA, ":": "%3A", ",": "%2C"}

# A line the GitHub runner reads as a workflow command: `::name ...::` (v2) or `##[name ...]` (v1), after any
# leading white space (the runner trims it; it reads stdout and stderr alike). Azure's `##vso[` starts the same.
_RUNNER_COMMAND = re.compile(r"^([ \t]*)(?=::|##\[|##vso\[)", re.MULTILINE)


def _encoded(text: str, table: dict[str, str]) -> str:
    return "".join(table.get(ch, ch) for ch in text)


def workflow_command(kind: str, message: Any, properties: dict[str, str]) -> str:
    """A GitHub workflow command line, `::error file=docs/01-step.md,line=53,title=Fig 1.3::message`: the message
    and the properties percent-encoded as the runner reads them (a newline, a comma or a `::` in data cannot end
    the command or add a property), and terminal controls removed."""
    props = ",".join(f"{key}={_encoded(_controls_removed(value), _WORKFLOW_PROPERTY)}"
                     for key, value in properties.items())
    return f"::{kind}{' ' + props if props else ''}::{github_text(message)}"


def github_text(value: Any) -> str:
    """Data for the message of a GitHub workflow command (`::warning::` + github_text(s)): terminal controls
    removed, then `%`, CR and LF percent-encoded as the runner decodes them, so that the data stays on the
    command's one line and no line of the log starts where the data says."""
    return _encoded(_controls_removed(value), _WORKFLOW_DATA)


def _controls_removed(value: Any) -> str:
    return _TERMINAL_CONTROL.sub("", str(value))


def terminal_text(value: Any) -> str:
    """Text a terminal shows as written: control characters and escape sequences removed, tab and newline kept,
    and a line that a CI runner would read as a command (`::add-mask::`, `##[set-env]`, after any spaces) marked
    with a leading backslash, so that it is shown and not obeyed. The command line's own workflow commands
    (`workflow_command`) are written without it."""
    return _RUNNER_COMMAND.sub(r"\1\\", _controls_removed(value))


def terminal_line(value: Any) -> str:
    """terminal_text of one line that quotes data (a warning naming a file, a summary quoting a value): the data's
    line breaks written as `\\n` and `\\r`, so that the line stays one and says what the data held."""
    return terminal_text(str(value).replace("\r", "\\r").replace("\n", "\\n"))


# What json.dumps(ensure_ascii=False) leaves raw and a terminal acts on or a reader splits a line at: the C0
# controls it escapes already, DEL and the C1 controls (U+009B is an 8-bit CSI, U+009D an 8-bit OSC), the Unicode
# line and paragraph separators, and lone surrogates (which no UTF-8 stream can even hold).
_NOT_JSON_LINE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def json_line(obj: Any) -> str:
    """obj as one line of JSON a terminal shows as written: other text as it is (UTF-8), every control character
    as its `\\uXXXX` escape, which any JSON reader reads back as the same string."""
    text = json.dumps(obj, ensure_ascii=False)
    return _NOT_JSON_LINE.sub(lambda match: f"\\u{ord(match.group(0)):04x}", text)


# What XML 1.0 cannot hold (its Char production): C0 controls but tab, LF and CR, lone surrogates, U+FFFE and
# U+FFFF. ElementTree writes them as they are, and the file no parser reads (a surrogate cannot even be encoded).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: Any) -> str:
    """Text any XML parser reads back: each code point XML 1.0 cannot hold becomes its Python escape as text
    (U+0001 is `\\x01`, U+FFFE `\\ufffe`, a lone surrogate `\\ud800`), so the file stays XML and the reader still
    sees which character the data held; ElementTree escapes `<`, `&` and quotes itself."""
    return _NOT_XML.sub(lambda match: match.group(0).encode("unicode_escape", "backslashreplace").decode("ascii"),
                        str(value))


# CSV injection (OWASP): a spreadsheet reads a cell starting with one of these as a formula (`=cmd|' /C calc'!A0`,
# `@SUM(...)`, `+1+cmd|...`); tab and CR start one after the spreadsheet strips them.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CSV_NUMBER = re.compile(r"[-+]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE)


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as written: text starting a formula gets a leading `'` (which the
    spreadsheet hides); anything but text, and text that is a number in ASCII digits (`-0.5`, `+3e-4`, `-inf`),
    stays."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _CSV_NUMBER.fullmatch(value):
        return "'" + value
    return value
