"""Fingerprints: how the build names what an output was made from, so it can tell an output is still current.

Every cache key (the no-op check in `uptodate.py`, the site in `site.py`, each figure in `draw.py`, each
run's summary in `summary.py`) is a `Key`: a sha256 that starts from its kind and the Python version and adds
the parts and files that output depends on. LIBRARIES is the one list of libraries whose versions can change an
output; an edition's manifest records the same list (`tool_versions`). A key holds the versions of the libraries
its code imports, not of every library installed: `Key.code` reads the imports of the files it hashes
(IMPORTED_BY: an import name and the libraries it stands for), so a new wandb or zensical (the test tools'
versions) draws no figure again, and a new matplotlib draws them all. A key whose output a library makes without
an import (a tool run as `python -m zensical`, wandb reading a run's .wandb log) names it (`Key.libraries`); the
no-op key and Ray's worker check hold them all (`Key.environment`). A stale key only rebuilds.

A file's bytes are hashed once per process while the file stays as it was, so a cold build that keys every
run's summary and then records the no-op key reads each input once. A key file is written whole (a killed
build leaves the old one or none) and an unreadable one counts as no key.

Kept free of heavy imports (no importlib.metadata): the no-op `make` hashes the inputs and stops.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from build_tools.core._files import content_hash, identity

# The libraries whose versions can change an output: the drawing (matplotlib and the PNG and font libraries it
# writes with, numpy, pandas), the reading and caching of runs (pydantic, PyYAML, pyarrow, tensorboard; wandb,
# whose presence decides whether an offline run's .wandb is read or refused), the pages and the site (Jinja2,
# Markdown and its extensions, mkdocs, its theme, zensical), the print edition (weasyprint) and the published
# editions (mike).
LIBRARIES = ("matplotlib", "numpy", "pandas", "pillow", "fonttools", "pydantic", "PyYAML", "pyarrow", "tensorboard",
             "wandb", "Jinja2", "Markdown", "pymdown-extensions", "mkdocs", "mkdocs-material", "zensical", "properdocs",
             "weasyprint",
             "mike")
# What an import of the build's code stands for: the libraries of LIBRARIES whose versions can change what the code
# that imports it makes. matplotlib draws with numpy and writes with Pillow and fontTools; pandas computes with
# numpy; mkdocs builds the site with its theme (Material, named in mkdocs.yml), Markdown, its extensions and Jinja2;
# WeasyPrint embeds fonts with fontTools and images with Pillow. An import not listed (the standard library,
# watchdog, rich ...) changes no output.
IMPORTED_BY: dict[str, tuple[str, ...]] = {
    "matplotlib": ("matplotlib", "numpy", "pillow", "fonttools"),
    "numpy": ("numpy",),
    "pandas": ("pandas", "numpy"),
    "PIL": ("pillow",),
    "fontTools": ("fonttools",),
    "pydantic": ("pydantic",),
    "yaml": ("PyYAML",),
    "pyarrow": ("pyarrow",),
    "tensorboard": ("tensorboard",),
    "wandb": ("wandb",),
    "jinja2": ("Jinja2",),
    "markdown": ("Markdown",),
    "pymdownx": ("pymdown-extensions",),
    "mkdocs": ("mkdocs", "mkdocs-material", "Markdown", "pymdown-extensions", "Jinja2"),
    "material": ("mkdocs-material",),
    "zensical": ("zensical",),
    "weasyprint": ("weasyprint", "fonttools", "pillow"),
    "mike": ("mike",),
}
ABSENT = "not installed"
# A file changed this recently may change again within one tick of the file system's clock without its size or
# times changing: its digest is not remembered (git's "racily clean" entries, the same rule).
SETTLED_NS = 2_000_000_000
# Files up to this size are hashed in one read; a larger one in chunks, never whole in memory.
ONE_READ = 1 << 20

# A file's identity as a listing keeps it after its name (_files.identity): size, mtime and ctime (ns), inode, device.
Identity = tuple[int, int, int, int, int]

_digests: dict[Identity, bytes] = {}  # by identity (_files.identity)


@functools.cache
def library_versions() -> dict[str, str]:
    """Each library's installed version, read from the names of the installed distributions' metadata folders
    (`name-version.dist-info`, the first on sys.path, as importlib.metadata finds it): nothing parsed, nothing
    imported."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            folders = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in folders:
            if folder.endswith(".dist-info"):
                name, _, version = folder[: -len(".dist-info")].rpartition("-")
                found.setdefault(_normal(name), version)
    return {name: found.get(_normal(name), ABSENT) for name in LIBRARIES}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def tool_versions() -> dict[str, str]:
    """The Python version and every library's, as an edition's manifest records them."""
    return {"python": sys.version.split()[0], **library_versions()}


def environment() -> str:
    """The Python version and every library's version, one `name==version` a line: what the no-op key and Ray's
    worker check hold (Key.environment)."""
    return "".join(f"{name}=={version}\n" for name, version in tool_versions().items())


def versions_of(names: Iterable[str]) -> str:
    """The versions of some of LIBRARIES, one `name==version` a line, in LIBRARIES' order."""
    versions, wanted = library_versions(), set(names)
    return "".join(f"{name}=={versions[name]}\n" for name in LIBRARIES if name in wanted)


def file_digest(path: Path) -> bytes:
    """The content_hash of the file's bytes; read once per process while the file keeps its inode, size and
    times."""
    return read_digest(path)[1]


def read_digest(path: Path) -> tuple[Identity | None, bytes]:
    """The file's identity (size, mtime and ctime in ns, inode, device: what a listing keeps of it after its name)
    and the content_hash of its bytes; identity None when the file changed while it was read (its digest then is of
    bytes no listing describes, and is not remembered)."""
    before = identity(os.stat(path))
    digest = _digests.get(before)
    if digest is None:
        digest = _content_digest(path, before[0])
        if identity(os.stat(path)) != before:  # written while read: its stats do not describe these bytes
            return None, digest
        note_digest(before, digest)
    return before, digest


def _content_digest(path: Path, size: int) -> bytes:
    if size <= ONE_READ:
        return content_hash(path.read_bytes()).digest()
    digest = content_hash()
    with open(path, "rb") as handle:
        while block := handle.read(ONE_READ):
            digest.update(block)
    return digest.digest()


def note_digest(identity: Identity, digest: bytes) -> None:
    """Remember, for this process, the digest of bytes read elsewhere (the loader's) while the file keeps this
    identity, unless it changed in the last SETTLED_NS (then it may change again, its stats unchanged)."""
    if time.time_ns() - max(identity[1], identity[2]) > SETTLED_NS:
        _digests[identity] = digest


# --- the code a key depends on: the package's own modules a stage imports -----------------------------------

PACKAGE = Path(__file__).resolve().parent.parent  # build_tools/
# Every import of one of the package's modules, at a module's top or inside a function (a stage's lazy imports
# run too): `from .x import a, b`, `from .. import y`, `from build_tools.z import c`, `import build_tools.w`. Read
# with a regular expression rather than compiled: ast takes 0.4 s over the package, this a few ms.
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.+[\w.]*|build_tools(?:\.[\w.]+)?)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
                     r"|import[ \t]+(build_tools(?:\.[\w.]+)?))", re.M)
# A file's imports (resolved from the package it is read in), while its stats hold.
_imports_of: dict[tuple[Path, str | None], tuple[Identity, tuple[str, ...]]] = {}


def code_files(*modules: str, package: Path = PACKAGE, also: Iterable[Path] = ()) -> list[Path]:
    """The files of the package (`package` is the folder of `build_tools`, or of another package such as a
    project's figures/) that the modules (dotted names, `build_tools.summarise.summary`), and the files `also` (a
    project's figure modules; themselves not counted), import, directly or through one another: each module's .py, the
    __init__.py of the packages it is in, and the files beside them that are not Python (checks/words.yml).
    Sorted: what a stage's code key hashes, derived from the code itself, so that no edit to what a stage runs is
    served stale. Each file's imports are read again only when its stats change."""
    found: set[Path] = set()
    pending = [name for name in modules]
    files = _modules(package)
    names = {path: name for name, path in files.items()}
    for path in also:  # a file of the package imports relative to its place; one outside, absolutely only
        name = names.get(path)
        pending += _imported(path, None if name is None else name if path.name == "__init__.py"
                             else name.rpartition(".")[0])
    while pending:
        name = pending.pop()
        module = files.get(name)
        if module is None or module in found:
            continue
        found.add(module)
        pending += _parents(name)
        pending += _imported(module, name if module.name == "__init__.py" else name.rpartition(".")[0])
    data = {other for folder in {path.parent for path in found} for other in folder.iterdir()
            if other.is_file() and other.suffix not in (".py", ".pyc")}
    return sorted(found | data)


def _modules(package: Path) -> dict[str, Path]:
    """Every module of the package by its dotted name (`build_tools.store.fingerprint`, `build_tools.store` for
    store/__init__.py): one walk, rather than a stat of every name an import names."""
    found: dict[str, Path] = {}
    for folder, dirs, names in os.walk(package):
        dirs[:] = sorted(name for name in dirs if name != "__pycache__")
        parts = [package.name, *Path(folder).relative_to(package).parts]
        for name in names:
            if name.endswith(".py"):
                dotted = parts if name == "__init__.py" else [*parts, name[:-3]]
                found[".".join(dotted)] = Path(folder) / name
    return found


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


_IMPORT_WORD = re.compile(r"import[ \t]")
# The top-level module of every import statement, at a module's top or inside a function: `import a.b, c`,
# `from a.b import c` (a relative import names none).
_TOP_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)[\w.]*[ \t]+import\b|import[ \t]+([^\n#;]+))", re.M)
# A file's libraries (IMPORTED_BY's), while its stats hold.
_libraries_of: dict[Path, tuple[Identity, frozenset[str]]] = {}


def libraries_imported(paths: Iterable[Path]) -> frozenset[str]:
    """The libraries of LIBRARIES the Python files import (IMPORTED_BY), each file read again only when its stats
    change."""
    found: set[str] = set()
    for path in paths:
        if path.suffix != ".py":
            continue
        stats = identity(os.stat(path))
        known = _libraries_of.get(path)
        if known is None or known[0] != stats:
            names: set[str] = set()
            for match in _TOP_IMPORT.finditer(path.read_text(encoding="utf-8")):
                source, plain = match.groups()
                tops = [source] if source else [part.split()[0].split(".")[0] for part in plain.split(",")
                                                if part.split()]
                names.update(library for top in tops for library in IMPORTED_BY.get(top, ()))
            known = _libraries_of[path] = stats, frozenset(names)
        found |= known[1]
    return frozenset(found)


def _imports_in(text: str) -> Iterator[re.Match[str]]:
    """The import statements of a module's text: _IMPORT tried only at the lines that hold the word (a literal
    search; the whole text through _IMPORT takes four times as long)."""
    last = -1
    for word in _IMPORT_WORD.finditer(text):
        start = text.rfind("\n", 0, word.start()) + 1
        if start != last and (match := _IMPORT.match(text, start)) is not None:
            yield match
        last = start


def _imported(path: Path, package: str | None) -> list[str]:
    """The package's modules a file imports (and the names it imports from them, each of which may be a module):
    its relative imports resolved from `package`, the package it is in (None: a file outside, as a figure's)."""
    stats = identity(os.stat(path))
    known = _imports_of.get((path, package))
    if known is not None and known[0] == stats:
        return list(known[1])
    names: list[str] = []
    for match in _imports_in(path.read_text(encoding="utf-8")):
        source, imported, plain = match.groups()
        if plain:
            names.append(plain)
            continue
        if source.startswith("."):
            if package is None:
                continue
            dots = len(source) - len(source.lstrip("."))
            base = package.split(".")[:len(package.split(".")) - (dots - 1)]
            source = ".".join([*base, *filter(None, source[dots:].split("."))])
        names.append(source)
        words = re.sub(r"#[^\n]*", "", imported).strip("() \n").split(",")
        names += [f"{source}.{word.split()[0]}" for word in words if word.split()]
    _imports_of[path, package] = stats, tuple(names)
    return names


class Key:
    """A cache key: sha256 of a kind, the environment, then the parts and files added, each length-prefixed so
    that no two different sequences of parts hash alike."""

    def __init__(self, kind: str) -> None:
        self._sha = hashlib.sha256()
        self.kind = kind
        self.made_from: dict[str, str] = {}  # each named part (a file, a run) and its digest: the output's record
        self.add(kind, f"python=={sys.version.split()[0]}")

    def libraries(self, *names: str) -> Key:
        """The versions of these libraries (of LIBRARIES): those the output is made with without an import."""
        return self.add("libraries", versions_of(names))

    def environment(self) -> Key:
        """Every library's version: a key that stands for the whole build (the no-op key, Ray's worker check)."""
        return self.add("environment", environment())

    def add(self, *parts: str | bytes) -> Key:
        for part in parts:
            data = part.encode() if isinstance(part, str) else part
            self._sha.update(len(data).to_bytes(8, "big") + data)
        return self

    def named(self, name: str, digest: str | bytes) -> Key:
        """A part with a name (a file, a run) and its digest, both hashed and kept in the record."""
        self.made_from[name] = digest.hex() if isinstance(digest, bytes) else digest
        return self.add(name, digest)

    def file(self, path: Path, name: str) -> Key:
        """The file's name as given (so a renamed file changes the key) and its contents."""
        return self.named(name, file_digest(path))

    def files(self, base: Path, paths: Iterable[Path]) -> Key:
        """Each file named by its path relative to base."""
        for path in paths:
            self.file(path, path.relative_to(base).as_posix())
        return self

    def code(self, *modules: str, package: Path = PACKAGE, also: Iterable[Path] = ()) -> Key:
        """Every file of the package the modules (and the files `also`) import (`code_files`), named relative to
        the package's folder, and the versions of the libraries those files import (`libraries_imported`)."""
        also = list(also)
        files = code_files(*modules, package=package, also=also)
        self.files(package, files)
        return self.libraries(*libraries_imported([*files, *also]))

    def digest(self) -> bytes:
        return self._sha.digest()

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def recorded(key_file: Path) -> str | None:
    """The key in the record key_file holds; None when there is none or it cannot be read (the output is rebuilt)."""
    try:
        record = json.loads(key_file.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    key = record.get("key") if isinstance(record, dict) else None
    return key if isinstance(key, str) else None


def record(key: Key) -> dict[str, Any]:
    """What a record says of an output: its kind and key, the tools' versions, and each named part it was made
    from with its digest (build/*.key; a figure's cache entry, draw.py, beside the hashes of its files)."""
    return {"kind": key.kind, "key": key.hexdigest(), "tools": tool_versions(), "made_from": key.made_from}


def remember(key_file: Path, key: Key) -> None:
    """Write the record of an output that was just made, whole or not at all: its key, and what it was made from
    (the tools' versions, and each named part with its digest), for a person asking why it was, or was not, made
    again."""
    from build_tools.core._staging import write_atomic  # after a build: not on the no-op path

    write_atomic(key_file, (json.dumps(record(key), indent=1, sort_keys=True) + "\n").encode("utf-8"))


def module_file(name: str) -> Path:
    """The source file of a module of the package, by dotted name: a key names code by module, not by a path
    beside its own file, so that a module moved to another folder is still found (and its path keyed)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(name)
    return Path(spec.origin)
