"""What one build is asked to do: one typed value, made once and passed down to every stage.

The command line makes it from its arguments and from the environment that make and an edition's rebuild set
(`MANUAL_ENGINE`, `SOURCE_DATE_EPOCH`, `MANUAL_PUBLISH`, `MANUAL_SITE_URL`: the rebuild of an old edition runs that
edition's own code, which reads them), and checks each before anything runs; publishing makes its own. No stage
below reads the environment. The libraries that take a setting only from the environment (mkdocs reads
SOURCE_DATE_EPOCH and mkdocs.yml's `!ENV MANUAL_SITE_URL`) get it for the call that needs it (`library_environment`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from build_tools.core._exceptions import _quoted, not_a_flag, setting_error

ENGINES = ("mkdocs", "properdocs", "zensical")
ENGINE_ENV, EPOCH_ENV = "MANUAL_ENGINE", "SOURCE_DATE_EPOCH"
PUBLISH_ENV, SITE_URL_ENV = "MANUAL_PUBLISH", "MANUAL_SITE_URL"
_SITE_URL = re.compile(r"https?://[^\s\"'<>\\]+")


@dataclass(frozen=True)
class Settings:
    site: bool = True  # False for `make check`: no figures, no pages, no site
    all_runs: bool = False  # summarise every run, also those nothing reads
    jobs: int | None = None  # drawing processes (None: one per core)
    quiet: bool = False
    summariser: Any = None  # summary.Summariser (Ray's), or None for the local pool
    engine: str = "mkdocs"  # the site generator: mkdocs, properdocs (its maintained fork), or zensical
    edition: bool = False  # a published edition's build: the edition selector and the print edition
    epoch: int | None = None  # SOURCE_DATE_EPOCH: the date every output carries
    site_url: str | None = None  # mkdocs.yml's site_url, when the editions are served elsewhere
    # Whether the build state of earlier builds may be reused: the memo of run hashes (stat data), the
    # validated runs, the cached summaries and figures, the site's key. An edition's build trusts none of them:
    # it hashes and reads every input byte, so its manifest can record only what its commit's data gives.
    trust_state: bool = True
    # Show every claim able to fail (checking/prove.py): `make check PROVE=1`, `make PROVE=1`; an edition's build
    # always does.
    prove: bool = False
    # `make serve`'s session: the warnings already shown, which a rebuild does not repeat unless they changed
    # (None: every build shows all of its own). Not part of what is built.
    warnings_shown: set[str] | None = field(default=None, compare=False, hash=False)
    serving: bool = False  # `make serve`'s long-lived process: a rebuild draws a few figures in it (draw.py)


def from_environment(environ: Mapping[str, str] | None = None, **options: Any) -> Settings:
    """The settings of a build started from the command line: options, then what the environment says. Every
    variable is checked now, before the build starts; all wrong ones are reported together (exit 2)."""
    environ = os.environ if environ is None else environ
    problems: list[str] = []
    engine = environ.get(ENGINE_ENV, "") or "mkdocs"
    if engine not in ENGINES:
        problems.append(f"ENGINE={_quoted(engine)}: unknown site engine (expected one of {', '.join(ENGINES)})")
    text = environ.get(EPOCH_ENV, "").strip()
    if text and not (text.isdigit() and text.isascii() and len(text) <= 12):
        problems.append(f"{EPOCH_ENV}={_quoted(text)}: expected a whole number of seconds since 1970")
    url = environ.get(SITE_URL_ENV, "")
    if url and not _SITE_URL.fullmatch(url):
        problems.append(f"{SITE_URL_ENV}={_quoted(url)}: expected an http:// or https:// address")
    if problems:
        raise setting_error(problems)
    edition = bool(environ.get(PUBLISH_ENV))
    return Settings(engine=engine, epoch=int(text) if text else None, site_url=url or None, edition=edition,
                    trust_state=not edition, **options)


def flag(env: Mapping[str, str], name: str) -> bool:
    """A make variable that turns something on (PUSH, REPLACE, STRICT, ALL): exactly `1`, or unset or empty, as
    MAINTAINING.md documents; anything else (yes, true, 0, " 1") is a ManualError (_exceptions.not_a_flag)
    rather than a guess at what was meant."""
    value = env.get(name, "")
    if value not in ("", "1"):
        raise not_a_flag(name, value)
    return value == "1"


def site_environment(settings: Settings) -> dict[str, str | None]:
    """What mkdocs and Zensical read only from the environment: the date and mkdocs.yml's `!ENV MANUAL_SITE_URL`."""
    return {EPOCH_ENV: None if settings.epoch is None else str(settings.epoch), SITE_URL_ENV: settings.site_url}


def print_environment(epoch: int | None) -> dict[str, str | None]:
    """What WeasyPrint's font subsetting (fontTools) reads only from the environment: the fonts' date."""
    return {EPOCH_ENV: None if epoch is None else str(epoch)}


@contextmanager
def library_environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """Environment variables set (None: unset) for the block, for a library that reads a setting only from there;
    then put back as they were."""
    before = {name: os.environ.get(name) for name in values}
    try:
        _set(values)
        yield
    finally:
        _set(before)


def _set(values: Mapping[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
