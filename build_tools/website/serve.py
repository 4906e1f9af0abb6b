"""`make serve`: the author's loop. Build, serve site/ on 127.0.0.1, rebuild when an input changes, and reload
the reader's open page by itself.

The server is mkdocs' own live-reload server (what `mkdocs serve` runs): it adds a small script, served
inline from this server (no outside request), that asks it for the site's version and reloads the page once
a rebuild has finished; a page requested mid-build waits for it. Its file watching is replaced by
watchdog's native observer (inotify on Linux): the operating system reports the file that changed, where
mkdocs' default polls every watched file twice a second (runs/ holds thousands). A rebuild is the ordinary
incremental build: what did not change is taken from the caches, so a chapter edit renders pages and an edit
to a run summarises that run again and redraws the figures that read it.

The port is taken before anything is built: a busy one is one line with another to use. Each rebuild says which
file set it off. A build that fails is reported in the terminal and, until a build passes again, over every page
the server sends (overlay.py): the open page reloads to show it, and no claim on it says it was checked.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchdog.events
import watchdog.observers
from mkdocs.livereload import LiveReloadServer
from rich.console import Console

from build_tools.core._exceptions import ManualError, port_not_allowed, port_taken
from build_tools.core._layout import Layout
from build_tools.core._progress import escape
from build_tools.website import overlay

HOST, PORT = "127.0.0.1", 8000
WATCHED = ("docs", "runs", "figures", "templates", "overrides", "mkdocs.yml", "edition.yml")
# What a write is: watchdog also reports a file opened or read (the build reads every input), never a change.
CHANGES = (watchdog.events.EVENT_TYPE_MODIFIED, watchdog.events.EVENT_TYPE_CREATED,
           watchdog.events.EVENT_TYPE_DELETED, watchdog.events.EVENT_TYPE_MOVED,
           watchdog.events.EVENT_TYPE_CLOSED)
# The events asked of the operating system: only writes. Unasked, inotify also reports every file and folder the
# build opens and closes unwritten (it walks runs/: thousands a rebuild), each decoded by the observer's thread while
# the build runs, which made a rebuild of 1,000 runs a second slower.
ASKED = [watchdog.events.FileModifiedEvent, watchdog.events.FileCreatedEvent, watchdog.events.FileDeletedEvent,
         watchdog.events.FileMovedEvent, watchdog.events.FileClosedEvent, watchdog.events.DirCreatedEvent,
         watchdog.events.DirDeletedEvent, watchdog.events.DirMovedEvent]
IGNORED_PARTS = frozenset({"__pycache__"})  # Python writes these while the build imports figures/
FIRST_BUILD = "the first build"
NEARBY_PORTS = 50  # a busy port's message names the first free one after it, among these


# A folder's own events that change what is read: a run folder moved out of runs/ is reported as that folder
# deleted and nothing else (no event for the files in it), one moved in as created. A folder "modified" is only an
# entry of it changed, which that entry's own event reports.
FOLDER_CHANGES = (watchdog.events.EVENT_TYPE_CREATED, watchdog.events.EVENT_TYPE_DELETED,
                  watchdog.events.EVENT_TYPE_MOVED)


def is_change(event: watchdog.events.FileSystemEvent) -> bool:
    """A file written, created, removed or moved under a watched input, or a folder created, removed or moved (not
    a bytecode cache)."""
    if event.event_type not in (FOLDER_CHANGES if event.is_directory else CHANGES):
        return False
    paths = [event.src_path, *([event.dest_path] if event.dest_path else [])]
    return not any(IGNORED_PARTS & set(Path(str(path)).parts) for path in paths)


def changed_path(event: watchdog.events.FileSystemEvent) -> str:
    """The file or folder an event made what it is: a moved one's new name (an editor saves by renaming), else its
    own."""
    return os.fsdecode(event.dest_path or event.src_path)


def cause(paths: list[str], root: Path) -> str:
    """What set off a rebuild, as its line says: `docs/01-step.md changed`, `docs/01-step.md and 2 other files
    changed` (paths relative to the project, in the order they changed). A file that is gone again (an editor's
    or sed's temporary file, renamed over the one edited) is not named beside one that is there."""
    named = list(dict.fromkeys(paths))
    shown = [os.path.relpath(path, root) for path in [path for path in named if os.path.lexists(path)] or named]
    if not shown:
        return "a change"  # only a flood of events the observer could not name
    if len(shown) == 1:
        return f"{shown[0]} changed"
    others = len(shown) - 1
    return f"{shown[0]} and {others} other file{'s' if others > 1 else ''} changed"


def free_port(host: str, taken: int) -> int | None:
    """The first port after `taken` that can be bound on host now; None when none of the next NEARBY_PORTS can."""
    for port in range(taken + 1, min(taken + 1 + NEARBY_PORTS, 65536)):
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
            return port
    return None


class BuildState:
    """The last build's outcome as the pages are served: a Failure while the build is broken, else None."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failure: overlay.Failure | None = None

    @property
    def failure(self) -> overlay.Failure | None:
        with self._lock:
            return self._failure

    def set(self, failure: overlay.Failure | None) -> None:
        with self._lock:
            self._failure = failure


class _Server(LiveReloadServer):
    """mkdocs' live-reload server, told of changes by the operating system instead of by polling, keeping the files
    that changed, and sending the overlay with every page while the build is broken."""

    def __init__(self, builder: Callable[[], None], host: str, port: int, root: str, state: BuildState) -> None:
        super().__init__(builder, host, port, root)
        self.observer = watchdog.observers.Observer()  # type: ignore[assignment]  # same interface, no polling
        self.state = state
        self.changed: list[str] = []  # since the last rebuild started; guarded by _rebuild_cond
        self.error_handler = self._error_page

    def open(self, host: str, port: int) -> None:
        """Take the port (before any build): a ManualError when it is busy or not allowed."""
        try:
            self.server_bind()
            self.server_activate()
        except OSError as error:
            self.server_close()
            if error.errno == errno.EADDRINUSE:
                raise port_taken(host, port, free_port(host, port)) from None
            if error.errno in (errno.EACCES, errno.EPERM):
                raise port_not_allowed(host, port, error.strerror or "refused") from None
            raise

    def run(self) -> None:
        """mkdocs' serve() without its bind (open() took the port): watch, answer requests, rebuild on changes."""
        if self._watched_paths:
            self.observer.start()
        self.serve_thread.start()
        self._build_loop()  # type: ignore[no-untyped-call]

    def changes_taken(self) -> list[str]:
        with self._rebuild_cond:
            taken, self.changed = self.changed, []
        return taken

    def note_change(self, path: str) -> None:
        with self._rebuild_cond:
            self.changed.append(path)
            self._want_rebuild = True
            self._rebuild_cond.notify_all()

    def watch(self, path: str, func: None = None, *, recursive: bool = True) -> None:
        server = self

        class _Handler(watchdog.events.FileSystemEventHandler):
            def on_any_event(self, event: watchdog.events.FileSystemEvent) -> None:
                if is_change(event):
                    server.note_change(changed_path(event))

        self._watched_paths[path] = 1
        self._watch_refs[path] = self.observer.schedule(_Handler(), path, recursive=recursive, event_filter=ASKED)

    def _inject_js_into_html(self, content: bytes, epoch: int) -> bytes:
        page: bytes = super()._inject_js_into_html(content, epoch)  # type: ignore[no-untyped-call]
        failure = self.state.failure
        return page if failure is None else overlay.mark(page, failure)

    def _error_page(self, code: int) -> bytes | None:
        """A page no build has written (the first build failed): the overlay alone, with the reload script."""
        failure = self.state.failure
        if failure is None or code != 404:
            return None
        script_added: bytes = LiveReloadServer._inject_js_into_html(  # type: ignore[no-untyped-call]
            self, overlay.page(failure), self._visible_epoch)
        return script_added


def serve(root: Path, rebuild: Callable[[], object], host: str = HOST, port: int = PORT,
          bug: Callable[[BaseException], str] | None = None) -> int:
    """Take host:port, build (rebuild, the build the command line passes), serve site/ and rebuild when an input
    changes, reloading open pages. A failed build is reported, in the terminal and over every page served, and the
    last site stays served; `bug` saves a crash's traceback and returns its one line. Ctrl-C stops."""
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    state = BuildState()

    def attempt(why: str) -> None:
        failed = state.failure
        try:
            rebuild()
        except ManualError as error:  # the last site stays served (a build never leaves half a site)
            console.print(f"[bold red]ERROR[/bold red] {escape(str(error))}")
            if error.hint:
                console.print(f"[dim]hint:[/dim] {escape(error.hint)}")
            state.set(overlay.Failure(str(error), error.hint, why, time.strftime("%H:%M:%S")))
            console.print("The open page shows this error until a build passes.")
            return
        except Exception as error:  # a bug: its line (the traceback saved) over the page too
            line = bug(error) if bug else f"internal error (a bug): {type(error).__name__}: {error}"
            state.set(overlay.Failure(line, "", why, time.strftime("%H:%M:%S")))
            return
        state.set(None)
        if failed is not None:
            console.print("The build passes again: the open page shows the manual.")

    logging.getLogger("mkdocs.livereload").setLevel(logging.WARNING)  # no line per request or reload
    server = _Server(lambda: None, host, port, str(Layout(root).site), state)
    server.open(host, port)  # before any build: a busy port is said at once
    try:
        attempt(FIRST_BUILD)

        def build_again() -> None:
            why = cause(server.changes_taken(), root)
            console.print(f"Rebuilding: {escape(why)}")
            attempt(why)

        server.builder = build_again
        for folder in watched_folders(root):
            server.watch(str(folder))
        top_files = {str(root / name) for name in WATCHED if (root / name).is_file()}

        class _TopFiles(watchdog.events.FileSystemEventHandler):
            def on_any_event(self, event: watchdog.events.FileSystemEvent) -> None:
                if is_change(event) and ({str(event.src_path), str(event.dest_path)} & top_files):
                    server.note_change(changed_path(event))

        server.observer.schedule(_TopFiles(), str(root), recursive=False, event_filter=ASKED)
        console.print(f"Serving the manual on http://{host}:{port}/ (Ctrl-C stops; an open page reloads after an "
                      "edit)")
        server.run()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        server.shutdown()
    return 0


def watched_folders(root: Path) -> list[Path]:
    """The inputs' folders, and the root itself (not recursively) for the input files at the top."""
    return [root / name for name in WATCHED if (root / name).is_dir()]

