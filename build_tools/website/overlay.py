"""`make serve`'s error overlay: while the build is broken, every page the server sends carries the error over it
(file, line, what was found and expected, the hint), as a modern dev server's overlay does, and no claim on it
says it was checked; the next build that passes serves the pages as they are.

The server (serve.py) adds it to a page as it sends it; nothing of it is written into site/. It is plain HTML with
inline style, held to the manual's own boundary (allowlist.py; tests/website/test_overlay.py reads it with
boundary.page_refusals): no script, no address, nothing loaded. Every text in it (the error quotes the data: a
file name, a caption, a value) is escaped for HTML and stripped of control characters. Its colours are Material's
own variables, so it follows the reader's light or dark scheme.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from build_tools.core._escape import html_text, terminal_text
from build_tools.pages.reader_note import CHECKED_SUMMARY

OVERLAY_ID = "manual-build-error"
NOT_CHECKED = "Not checked: the last build failed (the error is shown above the page)"
TITLE_PREFIX = "Build failed · "

# A panel over a dimmed page (its shadow covers the rest of the window), scrolling when the error is long.
_BACKDROP = ("position: fixed; top: 0; right: 0; bottom: 0; left: 0; z-index: 10000; overflow: auto; "
             "padding: 4vh 0.8rem; background: rgba(0, 0, 0, 0.6); font-size: 16px; line-height: 1.45")
_PANEL = ("max-width: 56rem; margin: 0 auto; padding: 1rem 1.25rem; border-radius: 0.35rem; "
          "border-top: 0.4rem solid #c62828; background: var(--md-default-bg-color, #ffffff); "
          "color: var(--md-default-fg-color, #1f1f1f); font-family: var(--md-text-font-family, sans-serif); "
          "box-shadow: 0 0.5rem 2rem rgba(0, 0, 0, 0.5)")
_HEADING = "margin: 0 0 0.6rem 0; font-size: 1.15rem; font-weight: 700; color: #c62828"
_ERROR = ("margin: 0 0 0.8rem 0; padding: 0.75rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; "
          "font-family: var(--md-code-font-family, monospace); font-size: 0.85rem; "
          "background: var(--md-code-bg-color, #f5f5f5); color: var(--md-code-fg-color, #1f1f1f); "
          "border-left: 0.25rem solid #c62828")
_LINE = "margin: 0 0 0.5rem 0"
_FOOT = "margin: 0; font-size: 0.85rem; opacity: 0.8"


@dataclass(frozen=True)
class Failure:
    """A build that failed under make serve: what the terminal printed of it, and what set it off."""

    message: str  # the ERROR text (after `ERROR `), one or more lines
    hint: str  # "" when the error has none
    cause: str  # "docs/01-step.md changed", or "the first build"
    at: str  # the time of day it failed, HH:MM:SS


def _text(value: str) -> str:
    return html_text(terminal_text(value))


def overlay(failure: Failure) -> str:
    """The overlay's HTML: one element, every text escaped."""
    hint = (f'<p style="{_LINE}"><strong>hint:</strong> {_text(failure.hint)}</p>' if failure.hint else "")
    return (f'<div id="{OVERLAY_ID}" aria-label="The build failed" style="{_BACKDROP}">'
            f'<div style="{_PANEL}">'
            f'<p style="{_HEADING}">The build failed: this page is the last build that passed</p>'
            f'<pre style="{_ERROR}">ERROR {_text(failure.message)}</pre>'
            f"{hint}"
            f'<p style="{_FOOT}">Set off by {_text(failure.cause)}, at {_text(failure.at)}. The terminal running '
            f"make serve says the same; this page reloads by itself when the next build passes.</p>"
            "</div></div>")


_BODY_OPEN = re.compile(rb"<body\b[^>]*>", re.I)
_TITLE_OPEN = re.compile(rb"<title>", re.I)
_CHECKED = re.compile(re.escape(f"<summary>{CHECKED_SUMMARY}").encode() + rb"[^<]*</summary>")


def mark(page: bytes, failure: Failure) -> bytes:
    """A page of the last good site as the server sends it while the build is broken: the overlay first in its
    body, its title saying the build failed, and every claim's "Checked against the runs" marked not checked."""
    page = _CHECKED.sub(f"<summary>{html_text(NOT_CHECKED)}</summary>".encode(), page)
    page = _TITLE_OPEN.sub(f"<title>{html_text(TITLE_PREFIX)}".encode(), page, count=1)
    body = _BODY_OPEN.search(page)
    at = body.end() if body else 0
    return page[:at] + overlay(failure).encode("utf-8") + page[at:]


def page(failure: Failure) -> bytes:
    """A whole page holding only the overlay: what the server sends for a page no build has written yet."""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html_text(TITLE_PREFIX)}manual'
            f"</title></head><body>{overlay(failure)}</body></html>").encode()
