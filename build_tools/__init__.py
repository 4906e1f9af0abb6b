"""The build of the manual: run data in, a checked, rendered site out. See ARCHITECTURE.md for the stages."""

import ctypes
import os
import sys

# pyarrow's allocator (mimalloc) gives the pages it frees back to the system at once, not after its default
# delay: a long run's telemetry is parsed in threads and written in another, and pages freed by one thread and
# not yet purged made the 10,000-step run's peak 50 MiB higher (maintaining/ray-and-scale.md). Read
# when pyarrow loads, so set before any import of it; a value set by the user is kept.
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "0")

# numpy's arrays come from glibc's malloc, which maps a block of 128 KiB or more afresh and unmaps it when freed
# (until a freed block raises its threshold), and returns the heap's top beyond 128 KiB: each batch's
# temporaries (its newlines, a column's checks, a few MB) were faulted in page by page again, 600 page faults a
# scaled run. Blocks up to 32 MiB (glibc's most) now come from the heap, and up to 256 MiB freed at its top is
# kept for the next run. mallopt's parameters: M_TRIM_THRESHOLD -1, M_MMAP_THRESHOLD -3.
def _glibc() -> bool:
    try:
        return sys.platform == "linux" and (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):  # a C library that does not name itself
        return False


if _glibc():
    _mallopt = ctypes.CDLL(None).mallopt
    _mallopt(-1, 256 * 1024 * 1024)
    _mallopt(-3, 32 * 1024 * 1024)
