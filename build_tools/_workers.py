"""The local worker processes of the summary and drawing stages: forked from a fork server (a clean process,
unlike a fork of a build holding threads) that imported the stage's code once, not once per worker."""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
from collections.abc import Sequence

# Below this many runs to read, starting worker processes costs more than it saves.
POOL_FROM = 24


def context(preload: Sequence[str]) -> multiprocessing.context.ForkServerContext:
    """The fork-server context, its server to import `preload` (unless one already runs: a build runs one)."""
    forkserver = multiprocessing.get_context("forkserver")
    forkserver.set_forkserver_preload(list(preload))
    return forkserver
