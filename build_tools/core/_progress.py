"""The terminal display of the build: which stage it is in, how long each took, and warnings."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape as rich_escape

from build_tools.core._escape import terminal_line, terminal_text


def escape(message: str) -> str:
    """A message that quotes the data, printed as it is: no rich markup, no terminal control."""
    return rich_escape(terminal_text(message))


class Progress:
    """Prints `[n/N] stage ... done in 1.2 s` to stderr; a spinner while a stage runs on a terminal."""

    def __init__(self, *, quiet: bool = False, stages: int = 0, shown: set[str] | None = None) -> None:
        self.console = Console(stderr=True, highlight=False)
        self.quiet = quiet
        self.total = stages
        self.current = 0
        # make serve's session: the warnings shown by its earlier builds (None: show every warning)
        self.shown = shown
        self.repeated = 0  # warnings left out as shown before

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.current += 1
        label = f"[{self.current}/{self.total}] {name}"
        start = time.perf_counter()
        if self.quiet:
            yield
            return
        with self.console.status(label + " ..."):
            yield
        self.console.print(f"{label} [dim]done in {time.perf_counter() - start:.1f} s[/dim]")

    def warn(self, message: str) -> None:
        if self.shown is not None:
            if message in self.shown:
                self.repeated += 1
                return
            self.shown.add(message)
        if not self.quiet:
            # A warning quotes the data (a phase name, a path): rich must not read it as markup.
            self.console.print(f"[yellow]WARNING[/yellow] {rich_escape(terminal_line(message))}", soft_wrap=True)

    def note(self, message: str) -> None:
        if not self.quiet:
            self.console.print(escape(message), soft_wrap=True)

    def done(self, message: str) -> None:
        if self.repeated and not self.quiet:
            self.note(f"{self.repeated} warning{'s' if self.repeated > 1 else ''} shown before in this session "
                      f"still hold{'s' if self.repeated == 1 else ''} (not repeated)")
        if not self.quiet:
            self.console.print(f"[green]{escape(message)}[/green]")
