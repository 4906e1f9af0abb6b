"""Stage 7: build the site with mkdocs --strict (`make serve` is build_tools/website/serve.py).

mkdocs reads build/mkdocs.yml, written here: it INHERITs the project's mkdocs.yml and adds what the
render stage computed (pages/.manual.yml: the nav, the stamp, the provenance note). Every warning mkdocs
logs fails the build, reported with its page; they are collected from mkdocs' logger, since a bare
`mkdocs build -q --strict` would hide them. A build whose inputs (pages, config, overrides, library
versions) hash as the last one's is skipped and site/ is kept.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from build_tools.core._exceptions import SiteError
from build_tools.core._layout import SITE_SETTINGS, Layout
from build_tools.core._settings import Settings, library_environment, site_environment
from build_tools.core._staging import staging
from build_tools.core._yaml import load_yaml
from build_tools.store import fingerprint
from build_tools.website import search_rows

GENERATED_CONFIG = "mkdocs.yml"  # in the build folder (the pages' parent)
KEY_FILE = "site.key"
ZENSICAL_CONFIG, ZENSICAL_SITE = "zensical.yml", ".zensical-site"  # in the build folder


# --- the stage --------------------------------------------------------------------------------


def build_site(mkdocs_yml: Path, pages: Path, site: Path, settings: Settings | None = None) -> bool:
    """Build pages into site with the settings' engine (mkdocs, the default, editions are published with it;
    properdocs; or zensical); False when nothing changed since the last build (site/ kept as it is). A build that
    trusts no earlier state (an edition's) always builds."""
    settings = settings or Settings()
    build_dir = pages.parent
    key = site_key(mkdocs_yml, pages, settings)
    key_file = build_dir / KEY_FILE
    unchanged = site.is_dir() and any(site.iterdir()) and fingerprint.recorded(key_file) == key.hexdigest()
    if settings.trust_state and unchanged:
        return False
    key_file.unlink(missing_ok=True)
    zensical = settings.engine == "zensical"
    if zensical:
        config_file = write_relative_config(mkdocs_yml, pages, build_dir / ZENSICAL_CONFIG)
    else:
        config_file = write_config(mkdocs_yml, pages, site, build_dir / GENERATED_CONFIG)
    with staging(site) as target, library_environment(site_environment(settings)):
        try:
            if zensical:
                run_zensical(config_file, target)
            elif settings.engine == "properdocs":
                run_properdocs(config_file, target)
            else:
                run_mkdocs(config_file, target)
        except SiteError as error:
            raise SiteError([_with_source(message, mkdocs_yml.parent) for message in error.messages]) from None
    if settings.trust_state:
        fingerprint.remember(key_file, key)
    return True


# --- Zensical ----------------------------------------------------------------------------------------


def write_relative_config(mkdocs_yml: Path, pages: Path, config_file: Path) -> Path:
    """Zensical's config: as mkdocs', but every path relative to the config's folder (Zensical stops on an
    absolute docs_dir) and the site inside it (it keeps site_dir within the project), moved out after."""
    settings_file = pages / SITE_SETTINGS
    settings = load_yaml(settings_file.read_text(encoding="utf-8")) if settings_file.is_file() else {}
    folder = config_file.parent
    config = {
        "INHERIT": os.path.relpath(mkdocs_yml.resolve(), folder.resolve()),
        "docs_dir": os.path.relpath(pages.resolve(), folder.resolve()),
        "site_dir": ZENSICAL_SITE,
        "theme": {"name": "material",
                  "custom_dir": os.path.relpath((mkdocs_yml.parent / "overrides").resolve(), folder.resolve())},
        **(settings or {}),
    }
    folder.mkdir(parents=True, exist_ok=True)
    config_file.write_text("# Written by build_tools/website/site.py for Zensical; edit mkdocs.yml instead.\n"
                           + yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8")
    return config_file


def run_zensical(config_file: Path, site_dir: Path) -> None:
    """zensical build --strict, run in the build folder (so its .cache/ stays there), into site_dir."""
    import shutil
    import subprocess
    import sys

    folder = config_file.parent
    built = folder / ZENSICAL_SITE
    shutil.rmtree(built, ignore_errors=True)
    done = subprocess.run([sys.executable, "-m", "zensical", "build", "--strict", "-f", config_file.name],
                          cwd=folder, capture_output=True, text=True)
    output = [" ".join(line.split()) for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    problems = [line for line in output if re.search(r"\b(warning|error)\b", line, re.IGNORECASE)]
    if done.returncode != 0 or not (built / "index.html").is_file():
        raise SiteError(problems or output[-3:] or [f"zensical stopped (exit {done.returncode})"])
    for item in sorted(built.iterdir()):
        shutil.move(str(item), str(site_dir / item.name))
    built.rmdir()
    search_rows.index_rows(site_dir)  # each table row its own search entry, as for MkDocs


# --- ProperDocs ---------------------------------------------------------------------------------------

def run_properdocs(config_file: Path, site_dir: Path) -> None:
    """properdocs build --strict, the maintained fork of MkDocs 1.x, on mkdocs' own config, in a process of its own:
    ProperDocs answers every `import mkdocs...` of the theme and plugins with its own modules (its `replacement`),
    which must not reach this process's mkdocs."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "properdocs", "build", "--strict", "--quiet", "-f", str(config_file),
               "-d", str(site_dir.resolve())]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    output = [" ".join(line.split()) for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    problems = [line for line in output if re.search(r"\b(warning|error)\b", line, re.IGNORECASE)]
    if done.returncode != 0 or problems or not (site_dir / "index.html").is_file():
        raise SiteError(problems or output[-3:] or [f"properdocs stopped (exit {done.returncode})"])
    search_rows.index_rows(site_dir)  # each table row its own search entry, as for MkDocs


def _with_source(message: str, root: Path) -> str:
    """mkdocs names the rendered page; add the file the reader would edit."""
    match = re.match(r"Doc file '([^']+)'", message)
    if not match:
        return message
    source = Layout(root).page_source(match.group(1))
    return f"{message} (rendered from {source})" if source else message


def write_config(mkdocs_yml: Path, pages: Path, site_dir: Path, config_file: Path) -> Path:
    """The config mkdocs reads: the project's mkdocs.yml plus what the render stage computed."""
    settings_file = pages / SITE_SETTINGS
    settings = load_yaml(settings_file.read_text(encoding="utf-8")) if settings_file.is_file() else {}
    overrides = mkdocs_yml.parent / "overrides"
    config = {
        "INHERIT": str(mkdocs_yml.resolve()),
        "docs_dir": str(pages.resolve()),
        "site_dir": str(site_dir.resolve()),
        # Paths in the inherited file would resolve against this file's folder: give the theme's its own.
        "theme": {"name": "material", "custom_dir": str(overrides.resolve())},
        **(settings or {}),
    }
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text("# Written by build_tools/website/site.py; edit mkdocs.yml instead.\n"
                           + yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=1000), encoding="utf-8")
    return config_file


class _Collect(logging.Handler):
    """Keeps every warning mkdocs logs, to report them all with their pages."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(" ".join(record.getMessage().split()))


@contextmanager
def _mkdocs_logging() -> Iterator[_Collect]:
    """Collect mkdocs' warnings and keep its INFO lines off the terminal (the build prints its own)."""
    logger = logging.getLogger("mkdocs")
    handler = _Collect()
    saved = logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate, logger.level = saved


class _CompiledTemplates:
    """The theme's templates as Jinja compiled them, kept in memory for this process (a jinja2.BytecodeCache): a
    second build in the same process (`make serve`'s rebuilds) compiles none again, where compiling Material's
    templates is a third of mkdocs' build. Each is kept with its source's checksum, so a template edited (an
    override) is compiled again. In memory only: nothing compiled is written to disk, nor read back from it."""

    def __init__(self) -> None:
        import jinja2

        class _Cache(jinja2.BytecodeCache):
            def __init__(self) -> None:
                self.held: dict[str, tuple[str, Any]] = {}

            def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
                held = self.held.get(bucket.key)
                if held is not None and held[0] == bucket.checksum:
                    bucket.code = held[1]

            def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
                self.held[bucket.key] = (bucket.checksum, bucket.code)

        self.cache = _Cache()

    def kept_by(self, theme: Any) -> None:
        """The theme's environment, made for each build, compiles through this cache."""
        make_env = theme.get_env

        def get_env() -> Any:
            env = make_env()
            env.bytecode_cache = self.cache
            return env

        theme.get_env = get_env


_compiled: _CompiledTemplates | None = None


def _templates() -> _CompiledTemplates:
    global _compiled
    if _compiled is None:
        _compiled = _CompiledTemplates()
    return _compiled


def run_mkdocs(config_file: Path, site_dir: Path) -> None:
    """mkdocs build --strict into site_dir, in this process; SiteError listing every warning."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    with _mkdocs_logging() as collected:
        try:
            config = load_config(config_file=str(config_file), strict=True, site_dir=str(site_dir.resolve()))
            _templates().kept_by(config.theme)
            config.plugins.on_startup(command="build", dirty=False)
            try:
                build(config)
            finally:
                config.plugins.on_shutdown()
            search_rows.index_rows(site_dir)  # each table row its own search entry
        except MkDocsException as error:
            raise SiteError(collected.messages or [str(error)]) from None
        except SystemExit as error:  # mkdocs exits on some config errors
            raise SiteError(collected.messages or [f"mkdocs stopped (exit {error.code})"]) from None
    if collected.messages:
        raise SiteError(collected.messages)


def site_key(mkdocs_yml: Path, pages: Path, settings: Settings,
             package: Path = fingerprint.PACKAGE) -> fingerprint.Key:
    """Everything the site is made from: pages, config, theme overrides, this code (with the package's modules
    it and mkdocs.yml import; `package`, another copy of build_tools/), library versions, and the settings that
    change it (the address in mkdocs.yml's site_url, the date, the engine)."""
    config = mkdocs_yml.read_bytes() if mkdocs_yml.is_file() else b""
    # This module's code and what it imports, and the package's modules mkdocs.yml has mkdocs import (its
    # Markdown extensions: build_tools.website.markdown_wbr, ...).
    named = dict.fromkeys(re.findall(r"\bbuild_tools(?:\.\w+)+", config.decode("utf-8", "replace")))
    key = fingerprint.Key("site").code(__name__, *named, package=package)
    key.add(f"site_url={settings.site_url}", f"epoch={settings.epoch}", f"engine={settings.engine}")
    if settings.engine == "zensical":  # run as `python -m zensical`, never imported
        key.libraries("zensical")
    key.add(config)
    for folder in (pages, mkdocs_yml.parent / "overrides"):
        key.files(folder.parent, sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else [])
    return key
