"""`make serve`: the author's loop. Build, serve site/ on 127.0.0.1, rebuild when an input changes, and reload
the reader's open page by itself.

The server is mkdocs' own live-reload server (what `mkdocs serve` runs): it adds a small script, served
inline from this server (no outside request), that asks it for the site's version and reloads the page once
a rebuild has finished; a page requested mid-build waits for it. Its file watching is replaced by
watchdog's native observer (inotify on Linux): the operating system reports the file that changed, where
mkdocs' default polls every watched file twice a second (runs/ holds thousands). A rebuild is the ordinary
incremental build: what did not change is taken from the caches, so a chapter edit renders pages and an edit
to a run summarises that run again and redraws the figures that read it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import watchdog.events
import watchdog.observers
from mkdocs.livereload import LiveReloadServer
from rich.console import Console
from rich.markup import escape

from build_tools.core._exceptions import ManualError
from build_tools.core._layout import Layout

HOST, PORT = "127.0.0.1", 8000
WATCHED = ("docs", "runs", "figures", "templates", "overrides", "mkdocs.yml", "edition.yml")
# What a write is: watchdog also reports a file opened or read (the build reads every input), never a change.
CHANGES = (watchdog.events.EVENT_TYPE_MODIFIED, watchdog.events.EVENT_TYPE_CREATED,
           watchdog.events.EVENT_TYPE_DELETED, watchdog.events.EVENT_TYPE_MOVED,
           watchdog.events.EVENT_TYPE_CLOSED)
IGNORED_PARTS = frozenset({"__pycache__"})  # Python writes these while the build imports figures/


def is_change(event: watchdog.events.FileSystemEvent) -> bool:
    """A file written, created, removed or moved under a watched input (not a folder, not a bytecode cache)."""
    if event.is_directory or event.event_type not in CHANGES:
        return False
    paths = [event.src_path, *([event.dest_path] if event.dest_path else [])]
    return not any(IGNORED_PARTS & set(Path(str(path)).parts) for path in paths)


class _Server(LiveReloadServer):
    """mkdocs' live-reload server, told of changes by the operating system instead of by polling."""

    def __init__(self, builder: Callable[[], None], host: str, port: int, root: str) -> None:
        super().__init__(builder, host, port, root)
        self.observer = watchdog.observers.Observer()  # type: ignore[assignment]  # same interface, no polling

    def watch(self, path: str, func: None = None, *, recursive: bool = True) -> None:
        server = self

        class _Handler(watchdog.events.FileSystemEventHandler):
            def on_any_event(self, event: watchdog.events.FileSystemEvent) -> None:
                if is_change(event):
                    with server._rebuild_cond:
                        server._want_rebuild = True
                        server._rebuild_cond.notify_all()

        self._watched_paths[path] = 1
        self._watch_refs[path] = self.observer.schedule(_Handler(), path, recursive=recursive)


def watched_folders(root: Path) -> list[Path]:
    """The inputs' folders, and the root itself (not recursively) for the input files at the top."""
    return [root / name for name in WATCHED if (root / name).is_dir()]


def serve(root: Path, rebuild: Callable[[], object], host: str = HOST, port: int = PORT) -> int:
    """Build (rebuild, the build the command line passes), serve site/ on host:port and rebuild when an input
    changes, reloading open pages; a failed build is reported and the last site stays served.
    Ctrl-C stops."""
    console = Console(stderr=True, highlight=False)
    rebuild()

    def build_again() -> None:
        try:
            rebuild()
        except ManualError as error:  # the last site stays served (a build never leaves half a site)
            console.print(f"[bold red]ERROR[/bold red] {escape(str(error))}")

    logging.getLogger("mkdocs.livereload").setLevel(logging.WARNING)  # no line per request or reload
    server = _Server(build_again, host, port, str(Layout(root).site))
    for folder in watched_folders(root):
        server.watch(str(folder))
    top_files = {str(root / name) for name in WATCHED if (root / name).is_file()}

    class _TopFiles(watchdog.events.FileSystemEventHandler):
        def on_any_event(self, event: watchdog.events.FileSystemEvent) -> None:
            if is_change(event) and ({str(event.src_path), str(event.dest_path)} & top_files):
                with server._rebuild_cond:
                    server._want_rebuild = True
                    server._rebuild_cond.notify_all()

    server.observer.schedule(_TopFiles(), str(root), recursive=False)
    console.print(f"Serving the manual on http://{host}:{port}/ (Ctrl-C stops; an open page reloads after an edit)")
    try:
        server.serve()  # type: ignore[no-untyped-call]
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        server.shutdown()
    return 0
