"""The build of the manual: run data in, a checked, rendered site out. See MAINTAINING.md for the stages."""

import os

# pyarrow's allocator (mimalloc) gives the pages it frees back to the system at once, not after its default
# delay: a long run's telemetry is parsed in threads and written in another, and pages freed by one thread and
# not yet purged made the 10,000-step run's peak 50 MiB higher (MAINTAINING.md, "Where the time goes"). Read
# when pyarrow loads, so set before any import of it; a value set by the user is kept.
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "0")
