"""Reading input files safely: nothing outside the project, nothing that is not a plain file, bytes that are
what they claim to be (UTF-8 text, whole gzip), and nothing larger than the stated limits.

The tree is checked before anything in it is read, so a link to /etc/passwd, a FIFO or /dev/zero is an
error naming the path, never a file that was opened.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import errno
import gzip
import io
import operator
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import blake3

from build_tools.core._exceptions import InputProblem, Problem, display_path

# A YAML or JSON document a person writes or Miles writes once (run.yaml, meta.json, a chapter).
DOCUMENT_LIMIT = 4 * 1024 * 1024
# One stream file, after decompression: an hour of 1 Hz telemetry is a few MB; a whole metrics.jsonl of
# ten thousand steps is tens of MB.
STREAM_LIMIT = 256 * 1024 * 1024
# One line of a file followed as it is written (`manual watch`): Miles' longest lines (an argument dump's, a
# metrics record of a few hundred keys) are a few KB; a line longer than this is skipped, never held whole.
LINE_LIMIT = 1024 * 1024


# --- one way to open an input file ----------------------------------------------------------------------------

# The folder every file read meanwhile must be inside (a run, a bare path given to `manual show`, the folder
# `manual watch` follows); None: only what open_regular checks of any file.
_inside: contextvars.ContextVar[tuple[Path, str] | None] = contextvars.ContextVar("inside", default=None)

OUTSIDE = "is a symbolic link to outside {where}; only files inside it are read: copy the file in instead"


@contextlib.contextmanager
def confined(folder: Path, place: str = "the run") -> Iterator[None]:
    """Every file opened meanwhile through open_regular (every reader's, batch and live) must lie inside folder,
    links resolved: a link out of it is refused, naming the link, and nothing of what it points to is read.
    `place`: what folder is, as the refusal names it."""
    token = _inside.set((Path(os.path.realpath(folder)), place))
    try:
        yield
    finally:
        _inside.reset(token)


def open_regular(path: Path, inside: Path | None = None) -> tuple[int, os.stat_result]:
    """A file descriptor of path and its fstat, opened for reading only when it is a regular file inside `inside`
    (or the folder `confined` names): never a FIFO (opened without waiting, so that a pipe with no writer cannot
    block), a device (/dev/zero), a socket, or a file reached by a link out. Refused: InputProblem naming the path
    and what it is, never quoting a byte of it. The open file is checked, not only its name: after the open, its
    kind by fstat and its real path (/proc/self/fd) by containment, so that a file swapped between the check and
    the open is caught. With no folder to stay in (the build's reads of runs/, whose tree `check_tree` checks whole
    first), only the kind is checked: no path is resolved, so a cold check's many opens cost no more."""
    boundary, place = (Path(os.path.realpath(inside)), "the run") if inside is not None else _inside.get() or (
        None, "")
    target: str | Path = path
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    if boundary is not None:  # links resolved first, and the resolved path opened without following another
        target, flags = os.path.realpath(path), flags | os.O_NOFOLLOW
        if not _within(str(target), boundary):
            raise _refused(path, OUTSIDE.format(where=place))
    try:
        handle = os.open(target, flags)
    except OSError as error:
        reason = "a symbolic link loop" if error.errno == errno.ELOOP else error.strerror or type(error).__name__
        raise _refused(path, f"cannot be read ({reason})") from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(path, f"is a {_kind(info.st_mode)}, not a plain file; only plain files are read")
        if boundary is not None and (opened := _opened_path(handle)) is not None and not _within(opened, boundary):
            raise _refused(path, OUTSIDE.format(where=place))
        os.set_blocking(handle, True)
    except BaseException:
        os.close(handle)
        raise
    return handle, info


def _refused(path: Path, message: str) -> InputProblem:
    return InputProblem(Problem(display_path(path), None, None, message))


def refusal(path: Path, inside: Path | None = None) -> Problem | None:
    """What open_regular says of path (the listing of a run's files names them before any is read), or None."""
    try:
        os.close(open_regular(path, inside)[0])
    except InputProblem as error:
        return error.problem
    return None


def link_out(path: Path) -> Problem | None:
    """The problem of a link (to a folder, say) that leads out of the folder `confined` names; None when it stays
    inside, or when no folder is named."""
    found = _inside.get()
    if found is None or _within(os.path.realpath(path), found[0]):
        return None
    return Problem(display_path(path), None, None, OUTSIDE.format(where=found[1]))


def _within(real: str, boundary: Path) -> bool:
    return real == str(boundary) or real.startswith(str(boundary).rstrip("/") + "/")


def _opened_path(handle: int) -> str | None:
    """The real path of an open file, as the kernel knows it (Linux); None elsewhere."""
    try:
        return os.readlink(f"/proc/self/fd/{handle}")
    except OSError:
        return None


def check_tree(folder: Path, boundary: Path, place: str = "the project") -> list[Problem]:
    """Every entry under folder that is not a plain file or folder inside boundary, as problems.

    Symbolic links are allowed when they resolve to a file or folder inside boundary; links out of it,
    broken links, link loops, FIFOs, sockets and devices are each a problem naming the path (`place`: what
    boundary is, in the message of a link out of it).
    """
    problems: list[Problem] = []
    _Walk(boundary.resolve(), problems, [], links=True, place=place).top(folder)
    return problems


# What scan_tree(links=False) says of a link: a copied tree takes no link, even one to a file beside it.
LINK_REFUSED = "is a symbolic link: only plain files are copied, never what a link points to; put the file itself there"

# A plain file as scan_tree lists it: its path relative to the scanned folder (POSIX), then what git's index
# keeps of it: size, modification and change times in ns, inode and device. A file rewritten with its size kept and
# its mtime put back (`touch -r`, `cp -p`, `tar x`, `rsync -t`) still has a new ctime, which no user can set back.
FileStat = tuple[str, int, int, int, int, int]


def file_stat(relative: str, info: os.stat_result) -> FileStat:
    return relative, *identity(info)


def identity(info: os.stat_result) -> tuple[int, int, int, int, int]:
    """What FileStat keeps of a file after its name: size, mtime and ctime (ns), inode, device."""
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev


# --- the bytes read, hashed as they are read -------------------------------------------------------


def content_hash(data: bytes = b"") -> blake3.blake3:
    """The hash of a file's bytes wherever the build keys on them (a run's input hash, every cache key): BLAKE3, a
    cryptographic hash like sha256 and three times faster here (1.9 MB of a run's streams: 0.45 ms against
    1.5 ms with the CPU's SHA extensions), on one thread. A cold check hashes every byte of every run."""
    return blake3.blake3(data, max_threads=1)


class Seen(NamedTuple):
    """A file read whole: its identity while it was read (unchanged from opening to the end) and the content_hash
    of its bytes as they are on disk (a .gz file's compressed bytes); identity None when it changed while read, or was
    read twice and was not the same bytes both times."""

    identity: tuple[int, int, int, int, int] | None
    digest: bytes


# The files read whole while `hashing_reads` is open, by path; None when no one is listening (nothing is hashed).
_seen: dict[str, Seen] | None = None


@contextlib.contextmanager
def hashing_reads() -> Iterator[dict[str, Seen]]:
    """Every file read whole through `open_input` meanwhile (the loader's reads: run.yaml, meta.json, every stream
    file, the readers of logs), hashed from the very bytes read, by path: a run's input hash is then made from
    what the loader read, not from a second read of each file (store/run_hash.py)."""
    global _seen
    outer, _seen = _seen, {}
    try:
        yield _seen
    finally:
        _seen = outer


class _Input:
    """A file opened to be read, hashing its bytes as they pass when hashing_reads listens: read(n) as a raw
    file reads (a .gz file is read through it by gzip, so the compressed bytes are hashed)."""

    def __init__(self, path: Path) -> None:
        self.path, self.name = path, str(path)
        handle, self.info = open_regular(path)
        self._file = open(handle, "rb", buffering=0)  # noqa: SIM115 - closed by close()
        self._hash = content_hash() if _seen is not None else None
        self._read = 0

    def read(self, size: int = -1, /) -> bytes:
        data: bytes | None = self._file.read(size) if size >= 0 else self._file.readall()
        if not data:
            return b""
        if self._hash is not None:
            self._hash.update(data)
        self._read += len(data)
        return data

    def readinto(self, buffer: Any, /) -> int:
        """read(), into the caller's buffer (isal's gzip reader reads so), hashed the same way."""
        count: int | None = self._file.readinto(buffer)
        if not count:
            return 0
        if self._hash is not None:
            self._hash.update(memoryview(buffer)[:count])
        self._read += count
        return count

    def seek(self, offset: int, /) -> int:
        raise io.UnsupportedOperation("an input file is read once, from start to end")

    def close(self) -> None:
        try:
            if self._hash is not None and _seen is not None and self._read == self.info.st_size:
                _note_seen(self.name, self.info, os.fstat(self._file.fileno()), self._hash.digest())
        finally:
            self._file.close()

    def __enter__(self) -> _Input:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _note_seen(name: str, opened: os.stat_result, read: os.stat_result, digest: bytes) -> None:
    """A file read whole, as hashing_reads keeps it: its identity while read (None when its stats once read differ
    from those when opened: a file written while read is not what its stats say) and its hash."""
    assert _seen is not None
    found = identity(opened) if identity(read) == identity(opened) else None
    before = _seen.get(name)
    if before is not None and before != (found, digest):  # read twice, not the same both times
        found = None
    _seen[name] = Seen(found, digest)


def read_small(path: Path, most: int) -> bytes | None:
    """A regular file of fewer than `most` bytes read whole in one call, hashed and kept as open_input's reads
    are (most stream files: an hour's phases, a run's metrics); None for any other (not a regular file, larger,
    or another size than when it was opened), which open_input then reads. Opened without waiting, so that a
    FIFO is refused, not waited on; OSError as open_input raises it. Some 20 microseconds a file less than
    open_input's file object: a run has 45 of them."""
    try:
        handle, info = open_regular(path)
    except InputProblem:
        return None  # open_input refuses it, and says why
    try:
        if info.st_size >= most:
            return None
        data = os.read(handle, info.st_size + 1)  # one byte more: a file that grew meanwhile is read on
        if len(data) != info.st_size:
            return None
        if _seen is not None:
            _note_seen(str(path), info, os.fstat(handle), content_hash(data).digest())
        return data
    finally:
        os.close(handle)


def open_input(path: Path) -> _Input:
    """The file opened for reading (open_regular: never a FIFO, a device or a link out), its bytes hashed as read
    while hashing_reads listens; only a file read to its last byte counts as seen."""
    return _Input(path)


def scan_tree(folder: Path, boundary: Path, *, links: bool = True) -> tuple[list[Problem], list[FileStat]]:
    """check_tree's problems, and every regular file under folder reached without following a link (what
    plain_files lists), with its size and modification time, in plain_files' order: one walk and one system
    call per entry, so that a thousand runs of fifty files each are checked and listed in a fraction of a second.

    `links=False` refuses every symbolic link below folder, wherever it points (a tree to be copied: `add-run`
    copies files, never what a link names); folder itself may still be one."""
    problems: list[Problem] = []
    files: list[FileStat] = []
    _Walk(boundary.resolve(), problems, files, links=links).top(folder)
    return problems, files


def scan_runs(runs: Path, boundary: Path) -> tuple[list[Problem], dict[str, list[FileStat]]]:
    """scan_tree's problems, and its files by run: each folder directly in runs/ that holds a file, with the files
    scan_tree lists under it, each named relative to it. One walk, each folder's files put in a list of their own
    as they are found, so that no path of a thousand runs' files is split again (a warm check lists every file of
    runs/). tests/test_hostile.py holds it equal to splitting scan_tree's listing."""
    problems: list[Problem] = []
    walk = _Walk(boundary.resolve(), problems, [], links=True, runs={})
    walk.top(runs)
    return problems, walk.runs or {}


def loose_files(runs: Path) -> list[str]:
    """The names of the plain files directly in runs/, in order: the files of scan_tree's listing that scan_runs
    gives no run."""
    try:
        with os.scandir(runs) as found:
            return sorted(entry.name for entry in found if entry.is_file(follow_symlinks=False))
    except OSError:
        return []


by_name = operator.attrgetter("name")  # the sort key of a folder's entries (DirEntry, Path): their names


class _Walk:
    """The state of one scan_tree: the boundary, what was found, and the real folders already entered. With
    `runs`, the files of each folder directly in the top one go to a list of their own there (scan_runs)."""

    def __init__(self, boundary: Path, problems: list[Problem], files: list[FileStat], *, links: bool,
                 runs: dict[str, list[FileStat]] | None = None, place: str = "the project") -> None:
        self.boundary, self.problems, self.files, self.links = boundary, problems, files, links
        self.place = place
        self.runs = runs
        self.seen: set[str] = set()  # real paths, as text: a set of a thousand Paths costs more than the walk

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(display_path(Path(path)), None, None, message))

    def top(self, folder: Path) -> None:
        try:
            info = folder.lstat()
        except OSError as error:
            self.problems.append(Problem(display_path(folder), None, None, f"cannot be read ({error.strerror})"))
            return
        self.entry(str(folder), "", info, str(folder.resolve()), linked=False, top=True)

    def entry(self, path: str, relative: str, info: os.stat_result, real: str, *, linked: bool,
              top: bool = False) -> None:
        """One entry from its lstat(); `real` is its resolved path unless it is a link, `linked` whether a
        link below the top led here (then its files are not among those plain_files lists)."""
        if stat.S_ISLNK(info.st_mode) and not (top or self.links):
            self.problem(path, LINK_REFUSED)
            return
        if stat.S_ISLNK(info.st_mode):
            try:
                target = Path(path).resolve(strict=True)
            except RuntimeError:  # a loop, as Python 3.11 and 3.12 say it
                self.problem(path, "is a symbolic link loop")
                return
            except OSError as error:  # Python 3.13 says a loop with ELOOP
                self.problem(path, "is a symbolic link loop" if error.errno == errno.ELOOP
                             else "is a broken symbolic link")
                return
            if not target.is_relative_to(self.boundary):
                self.problem(path, f"is a symbolic link to outside {self.place}; copy the file in instead")
                return
            real, info, linked = str(target), target.stat(), linked or not top
        if stat.S_ISDIR(info.st_mode):
            self.folder(path, relative, real, linked=linked, split=top and self.runs is not None)
        elif stat.S_ISREG(info.st_mode):
            if not linked:
                self.files.append(file_stat(relative, info))
        else:
            self.problem(path, f"is a {_kind(info.st_mode)}, not a plain file; only plain files are read")

    def folder(self, path: str, relative: str, real: str, *, linked: bool, split: bool = False) -> None:
        """The entries of a folder, in order of name; `split`: each folder in it listed into self.runs."""
        if real in self.seen:
            self.problem(path, "is a folder reached twice (a link loop)")
            return
        self.seen.add(real)
        prefix = f"{relative}/" if relative else ""
        try:
            with os.scandir(path) as found:
                entries = sorted(found, key=by_name)
        except OSError as error:
            self.problem(path, f"cannot be read ({error.strerror})")
            return
        listed, regular = self.files.append, stat.S_ISREG  # the loop of a warm check: 50,000 files a thousand runs
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as error:
                self.problem(entry.path, f"cannot be read ({error.strerror})")
                continue
            if regular(info.st_mode):  # most entries: listed without another call (file_stat, written out)
                if not linked:
                    listed((prefix + entry.name, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino,
                            info.st_dev))
                continue
            if split and stat.S_ISDIR(info.st_mode):
                self.run_folder(entry, f"{real}/{entry.name}", linked=linked)
                continue
            self.entry(entry.path, prefix + entry.name, info, f"{real}/{entry.name}", linked=linked)

    def run_folder(self, entry: os.DirEntry[str], real: str, *, linked: bool) -> None:
        """A folder directly in the top one (a run), its files named relative to it, in a list of their own."""
        assert self.runs is not None
        outer, self.files = self.files, []
        try:
            self.folder(entry.path, "", real, linked=linked)
        finally:
            listing, self.files = self.files, outer
        if listing:  # a folder without a file is no run of the listing
            self.runs[entry.name] = listing


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def plain_files(base: Path) -> list[Path]:
    """Every regular file under base (or base itself), in sorted order, without following a symbolic link
    or opening anything else: for hashing a tree before check_tree has looked at it."""
    if base.is_file() and not base.is_symlink():
        return [base]
    found = []
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs.sort()
        for name in files:
            path = Path(folder) / name
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(path)
    return sorted(found)


def read_bytes(path: Path, limit: int = DOCUMENT_LIMIT) -> bytes:
    """The file's bytes, gunzipped when its name ends in .gz; InputProblem when it cannot be what it claims."""
    where = display_path(path)
    try:
        with open_input(path) as handle:
            if handle.info.st_size > limit:
                raise InputProblem(Problem(where, None, None, f"is {handle.info.st_size:,} bytes, above the limit of "
                                                              f"{limit:,} bytes for this kind of file"))
            if path.name.endswith(".gz"):
                return _gunzip(handle, where, limit)
            data = handle.read(limit + 1)  # one byte more: a file that grew past the limit meanwhile is refused
    except OSError as error:
        raise InputProblem(Problem(where, None, None, f"cannot be read ({error.strerror or error})")) from None
    if len(data) > limit:
        raise InputProblem(Problem(where, None, None, f"grew above the limit of {limit:,} bytes for this kind of "
                                                      "file while it was read"))
    return data


def _gunzip(raw: _Input, where: str, limit: int) -> bytes:
    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as handle:
            data = handle.read(limit + 1)
    except gzip.BadGzipFile:
        raise InputProblem(Problem(where, None, None, "is not gzip data (the name ends in .gz)")) from None
    except EOFError:
        raise InputProblem(Problem(where, None, None, "is a truncated gzip file (it ends mid-stream)")) from None
    except (zlib.error, OSError) as error:
        raise InputProblem(Problem(where, None, None, f"is a corrupt gzip file ({error})")) from None
    if len(data) > limit:
        raise InputProblem(Problem(where, None, None,
                                   f"unpacks to more than the limit of {limit:,} bytes for this kind of file"))
    return data


def decode_utf8(data: bytes, where: str) -> str:
    """UTF-8 text (a leading byte-order mark is dropped); InputProblem naming the first bad line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputProblem(Problem(where, line, None, "not UTF-8 text")) from None


def check_utf8(data: bytes, where: str, chunk: int = 1 << 20) -> None:
    """decode_utf8's check without keeping the text: a file of a hundred MB is decoded a megabyte at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    for offset in range(0, len(data), chunk):
        try:
            decoder.decode(data[offset:offset + chunk], final=offset + chunk >= len(data))
        except UnicodeDecodeError as error:
            line = data[: offset + error.start].count(b"\n") + 1
            raise InputProblem(Problem(where, line, None, "not UTF-8 text")) from None


def read_text(path: Path, limit: int = DOCUMENT_LIMIT) -> str:
    """A whole text file, checked as read_bytes and decode_utf8 do."""
    return decode_utf8(read_bytes(path, limit), display_path(path))
