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

    def __init__(self, *, quiet: bool = False, stages: int = 0) -> None:
        self.console = Console(stderr=True, highlight=False)
        self.quiet = quiet
        self.total = stages
        self.current = 0

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
        if not self.quiet:
            # A warning quotes the data (a phase name, a path): rich must not read it as markup.
            self.console.print(f"[yellow]WARNING[/yellow] {rich_escape(terminal_line(message))}", soft_wrap=True)

    def note(self, message: str) -> None:
        if not self.quiet:
            self.console.print(escape(message), soft_wrap=True)

    def done(self, message: str) -> None:
        if not self.quiet:
            self.console.print(f"[green]{escape(message)}[/green]")
