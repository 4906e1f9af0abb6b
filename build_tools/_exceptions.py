"""Every error a user can cause, in one place; the CLI prints it as `ERROR <message>` and a hint, never a traceback.

Each is a class holding the facts as data attributes and writing its own message from them (`__str__`), as
pypa/build's `_exceptions.py` does: callers raise it with the facts and test its type, never its text.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

# Exit codes: 1 is left to Python for a crash (a bug), so a user's mistake and a false claim differ from it.
EXIT_BAD_INPUT = 2
EXIT_CLAIM_FAILED = 3
# `make verify` only: the rebuild differs from the edition's manifest; not a user mistake, not a false claim.
EXIT_DIFFERS = 4
# `make bench` only: every measurement ran, and at least one missed its goal (the table says which).
EXIT_GOAL_MISSED = 5
# `manual check --strict` only: every claim holds, but at least one's margin is below the warning threshold.
EXIT_MARGIN = 6


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong in one input file: where, which field, what was expected."""

    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


def display_path(path: Path | str) -> str:
    """A path as the user would type it: relative to the working directory where possible."""
    # abspath, not resolve: a path may be a link loop or lead outside, and is shown as the user wrote it.
    absolute, here = os.path.abspath(path), os.getcwd()
    if absolute.startswith(here + os.sep) and here != os.sep:  # the common case, told on the strings (abspath
        return absolute[len(here) + 1:]                          # normalised both): what relative_to gives
    return _display_path(path)


def _display_path(path: Path | str) -> str:
    absolute, here = Path(os.path.abspath(path)), Path(os.path.abspath(Path.cwd()))
    try:
        return str(absolute.relative_to(here))
    except ValueError:
        try:
            return str(absolute.relative_to(here.resolve()))
        except ValueError:
            return str(path)


@dataclass(eq=False)
class InputProblem(Exception):
    """One problem that stops reading one file; the stage collects it with the others and goes on."""

    problem: Problem

    def __post_init__(self) -> None:
        self.args = (self.problem,)

    def __str__(self) -> str:
        return str(self.problem)


class MissingValue(Exception):
    """A value a figure, check or table reads is not there: the figure cannot be drawn, the claim not shown.

    `run` names the run that lacks it (None when it belongs to no one run: a table, the steps of several runs);
    `what` names the value, as it ends the sentence "run X has no ...". draw.py and the checks report it.
    """

    def __init__(self, run: str | None, what: str) -> None:
        self.run = run
        self.what = what
        super().__init__(f"run {run} has no {what}" if run is not None else f"no {what}")


class ManualError(Exception):
    """Base of every error the CLI reports as `ERROR ...` with a hint, never as a traceback.

    A subclass is a dataclass of the facts; its fields are also its `args`, so that a copy (pickled from a
    worker process) is the same error.
    """

    exit_code: int = EXIT_BAD_INPUT
    hint: str = ""  # a class's own, or written from its fields in __post_init__

    def __post_init__(self) -> None:
        self.args = tuple(getattr(self, field.name) for field in dataclasses.fields(self))  # type: ignore[arg-type]


def _quoted(value: str) -> str:
    """A value as typed, in quotes, control characters shown escaped, so that a message stays one line."""
    return "'" + value.encode("unicode_escape").decode("ascii") + "'" if not value.isprintable() else f"'{value}'"


# --- problems in input files, all reported at once ----------------------------------------------------------


@dataclass(eq=False)
class ProblemsError(ManualError):
    """Several problems found together; the build stops once, listing all of them."""

    problems: Sequence[Problem]
    what: ClassVar[str] = "input"

    def __post_init__(self) -> None:
        self.problems = sorted(self.problems, key=lambda p: (p.file, p.line or 0, p.field or "", p.message))
        super().__post_init__()

    def __str__(self) -> str:
        count = len(self.problems)
        noun = "problem" if count == 1 else "problems"
        lines = [f"{count} {noun} in the {self.what}:"]
        lines += [f"  {problem}" for problem in self.problems]
        return "\n".join(lines)


class RunDataError(ProblemsError):
    what = "run data"
    hint = "fix the files named above; runs/README.md documents every field"


class FigureError(ProblemsError):
    what = "figures"
    hint = "each line names the figure, the run and the metric it could not draw"


class FigureFilesError(FigureError):
    """What every figure is drawn with is missing or wrong: the palette, the style, the figures package."""

    what = "files every figure is drawn with"
    hint = ("figures/ needs palette.yml, base.mplstyle, __init__.py and _common.py (git checkout -- figures/ "
            "restores them); CONTRIBUTING.md, 'Change the palette', says what palette.yml holds")


class ChapterError(ProblemsError):
    what = "chapters"
    hint = ("fix the lines named above; docs/README.md documents the figure blocks' fields and the addresses "
            "a chapter may name")


class EditionFileError(ProblemsError):
    what = "edition file"
    hint = "edition.yml needs edition, date and miles: {image, branch, commit, commit_date}"


class MetricsSpecError(ProblemsError):
    what = "Metrics page spec"
    hint = "the comment at the top of docs/data/metrics.yml lists the fields, run sets and statistics"


@dataclass(eq=False)
class RunNotWritten(ManualError):
    """`add-run` could not write the new run's folder (a read-only or full disk): nothing was added to runs/."""

    target: str  # runs/<id>, as the user would type it
    reason: str  # the system's words, e.g. No space left on device
    hint = "runs/ must be writable and have free space; nothing was added, so the same command can simply run again"

    def __str__(self) -> str:
        return f"{self.target}: cannot write ({self.reason}): nothing was added"


# --- the build ------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class ClaimsFailed(ManualError):
    """At least one caption claim no longer matches the data; report_lines is the claims report to print."""

    report_lines: Sequence[str]
    failed: int
    total: int
    exit_code = EXIT_CLAIM_FAILED
    hint = "the data no longer supports these captions: change the claim or look at the runs"

    def __str__(self) -> str:
        return f"{self.failed} of {self.total} claims failed:\n" + "\n".join(self.report_lines)


@dataclass(eq=False)
class MarginsBelow(ManualError):
    """`manual check --strict`: claims hold, but some with less margin than the threshold (each warned above)."""

    count: int
    threshold: float
    exit_code = EXIT_MARGIN
    hint = "widen the claim's words or look at the runs named in the warnings; without --strict they only warn"

    def __str__(self) -> str:
        claims = "1 claim holds" if self.count == 1 else f"{self.count} claims hold"
        return f"{claims} with a margin fraction below {self.threshold:g} (--strict)"


@dataclass(eq=False)
class StrictWithoutThreshold(ManualError):
    """`--strict` with no margin to warn below: neither --warn-margin nor warn_margin in edition.yml."""

    edition_yml: str  # as the user would type it
    hint = "e.g. manual check --warn-margin 0.2 --strict"

    def __str__(self) -> str:
        return (f"--strict: no margin to hold the claims to: pass --warn-margin F or set warn_margin in "
                f"{self.edition_yml}")


@dataclass(eq=False)
class CommitMismatch(ManualError):
    """Runs made with another Miles build than the edition describes: their numbers belong to another edition."""

    runs: Sequence[tuple[str, str]]  # (run id, its run.yaml miles.commit, "" when it has none)
    commit: str  # the edition's
    hint = "rebuild that run with the edition's Miles commit, move it out of runs/, or change edition.yml"

    def __str__(self) -> str:
        return "\n".join(f"run {run_id} was made with Miles commit {commit or 'no commit'}, but this edition is "
                         f"Miles commit {self.commit} (runs/{run_id}/run.yaml miles.commit)"
                         for run_id, commit in self.runs)


@dataclass(eq=False)
class CacheChanged(ManualError):
    """A cache entry changed on disk between its check and its use (another process, or a person)."""

    folder: Path
    hint = "run the command again; `make clean` empties the cache"

    def __str__(self) -> str:
        return f"build/cache: {self.folder.name} changed while this build was reading it"


@dataclass(eq=False)
class SiteError(ManualError):
    """mkdocs found a problem (a broken link, a missing anchor, a page left out of the nav)."""

    messages: Sequence[str]
    hint = ("the pages are rendered from docs/ into build/docs/: fix the link or anchor in the chapter "
            "named (or its figure block); every warning fails the build")

    def __str__(self) -> str:
        count = len(self.messages)
        noun = "problem" if count == 1 else "problems"
        return (f"mkdocs build --strict found {count} {noun} in the pages:\n"
                + "\n".join(f"  {message}" for message in self.messages))


class PrintEditionError(ProblemsError):
    """Addresses the print edition would read from outside the built site: refused before WeasyPrint runs (or,
    failing that, by its URL fetcher); no PDF is written."""

    what = "print edition"
    hint = ("the print edition reads only the files of the built site (site/): remove each address named above "
            "or make it a page or figure of the manual")


class PdfError(ManualError):
    """The print edition cannot be written: the site is not built, or WeasyPrint is missing."""

    hint = "run make (the site must be built first), or make pdf, which installs what the PDF needs"


@dataclass(eq=False)
class WeasyPrintMissing(PdfError):
    reason: str  # the first line of the import's error

    def __str__(self) -> str:
        return f"WeasyPrint cannot run ({self.reason}): make pdf installs it and Debian's pango"


@dataclass(eq=False)
class SiteNotBuilt(PdfError):
    site: Path

    def __str__(self) -> str:
        return f"no built site in {self.site}: run make first"


@dataclass(eq=False)
class PageWithoutArticle(PdfError):
    page: Path

    def __str__(self) -> str:
        return f"{self.page}: no article in the built page: run make again"


@dataclass(eq=False)
class SettingError(ManualError):
    """A build setting from the environment (ENGINE, SOURCE_DATE_EPOCH, MANUAL_SITE_URL) is not one the build takes;
    found before anything is built (build_tools/_settings.py)."""

    messages: Sequence[str]
    hint = "fix or unset the variable named (make passes ENGINE= to the build as MANUAL_ENGINE)"

    def __str__(self) -> str:
        return "\n".join(self.messages)


# --- options of the command line ----------------------------------------------------------------------------


@dataclass(eq=False)
class BadOption(ManualError):
    """An option's value that cannot be what it names (argparse took it as text): refused before anything runs."""

    option: str  # as typed: --interval
    value: str  # as typed
    expected: str  # e.g. "a number of seconds above 0"
    example: str  # e.g. "--interval 1"

    def __str__(self) -> str:
        return f"{self.option}: {_quoted(self.value)} is not {self.expected}, e.g. {self.example}"


@dataclass(eq=False)
class CannotRecord(ManualError):
    """`manual record` cannot write the run folder's lab/ streams (not a folder, not writable, a disk full)."""

    path: str  # as the user would type it
    reason: str  # the system's words

    def __str__(self) -> str:
        return (f"{self.path}: cannot write ({self.reason}): manual record writes the lab/ streams of a run folder, "
                "which must be a folder it can write")


# --- make variables (build_tools/_make.py) ----------------------------------------------------------------------


def _variable(name: str, value: str) -> str:
    text = value.encode("unicode_escape").decode("ascii") if not value.isprintable() else value
    return f"{name}='{text}'"


class MakeVariableError(ManualError):
    """A make variable whose value cannot be what it names: refused before anything runs."""


@dataclass(eq=False)
class NotAnEditionVariable(MakeVariableError):
    name: str  # EDITION, FROM or TO
    value: str
    example: str  # the make command that shows it, e.g. make verify EDITION=2026.10

    def __str__(self) -> str:
        return (f"{_variable(self.name, self.value)} is not an edition number: use YEAR.MONTH with a two-digit "
                f"month, e.g. {self.example}")


@dataclass(eq=False)
class NotAFlag(MakeVariableError):
    name: str  # PUSH or REPLACE
    value: str

    def __str__(self) -> str:
        return f"{_variable(self.name, self.value)} is not a yes or no: write {self.name}=1 (or leave it out)"


@dataclass(eq=False)
class NotAFormat(MakeVariableError):
    value: str

    def __str__(self) -> str:
        return (f"{_variable('FORMAT', self.value)} is not a report format: write FORMAT=github (workflow commands "
                "for GitHub) or leave it out")


@dataclass(eq=False)
class NotAPort(MakeVariableError):
    value: str

    def __str__(self) -> str:
        return (f"{_variable('PORT', self.value)} is not a port: write a whole number from 1 to 65535, "
                "e.g. make serve PORT=8001")


@dataclass(eq=False)
class NotARunId(MakeVariableError):
    value: str

    def __str__(self) -> str:
        return (f"{_variable('ID', self.value)} is not a run id: lower-case letters, digits, '.' and '-', "
                "e.g. make add-run SRC=path ID=my-run-seed1")


@dataclass(eq=False)
class MissingMakeVariable(MakeVariableError):
    name: str  # RUN or SRC
    ADVICE: ClassVar[dict[str, str]] = {
        "RUN": "no run given: name your run's folder or Miles dashboard dump, e.g. make compare RUN=path/to/run",
        "SRC": "no source given: name what the Miles job left, e.g. make add-run SRC=path/to/job",
    }

    def __str__(self) -> str:
        return self.ADVICE[self.name]


# --- editions: publish, verify, diff (build_tools/edition.py); nothing was changed ------------------------------


class EditionError(ManualError):
    """A publish, verify or diff that cannot go ahead; nothing was changed."""


@dataclass(eq=False)
class NoEditionNumber(EditionError):
    command: str  # publish, verify or diff

    def __str__(self) -> str:
        return f"no edition number given: name one as YEAR.MONTH, e.g. make {self.command} EDITION=2026.10"


@dataclass(eq=False)
class NotAnEditionNumber(EditionError):
    edition: str
    command: str

    def __str__(self) -> str:
        return (f"'{self.edition}' is not an edition number: use YEAR.MONTH with a two-digit month, "
                f"e.g. make {self.command} EDITION=2026.10")


@dataclass(eq=False)
class TwoEditionsNeeded(EditionError):
    def __str__(self) -> str:
        return "name two editions: make diff FROM=2026.10 TO=2026.11"


@dataclass(eq=False)
class NotADate(EditionError):
    date: str  # edition.yml's date

    def __str__(self) -> str:
        return f"edition.yml: date '{self.date}' is not a date: write it as YYYY-MM-DD"


@dataclass(eq=False)
class NotARepository(EditionError):
    root: Path

    def __str__(self) -> str:
        return (f"{self.root} is not a git repository with a commit: editions are published from a "
                "git checkout, so that a tag can name what was built")


@dataclass(eq=False)
class NoPagesBranch(EditionError):
    branch: str
    command: str  # verify or diff

    def __post_init__(self) -> None:
        self.hint = f"{self.command} reads the editions' manifests from the mike branch"
        super().__post_init__()

    def __str__(self) -> str:
        return (f"no branch {self.branch} in this repository: publish an edition first "
                "(make publish EDITION=...), or name the branch with --branch")


@dataclass(eq=False)
class EditionNotPublished(EditionError):
    edition: str
    branch: str
    published: Sequence[str]  # the editions that are

    def __str__(self) -> str:
        listed = ", ".join(self.published) or "none"
        return (f"edition {self.edition} is not published on {self.branch} (published: {listed}): "
                "name a published edition")


@dataclass(eq=False)
class AlreadyPublished(EditionError):
    edition: str
    branch: str

    def __str__(self) -> str:
        return (f"edition {self.edition} is already published on {self.branch}: pass --replace to replace "
                f"it (make publish EDITION={self.edition} REPLACE=1), or publish a new number")


@dataclass(eq=False)
class TagExists(EditionError):
    """A tag of the edition's name that this code did not write."""

    tag: str
    edition: str

    def __str__(self) -> str:
        return (f"tag {self.tag} already exists: pass --replace to move it and replace the edition "
                f"(make publish EDITION={self.edition} REPLACE=1), or publish a new number")


@dataclass(eq=False)
class TagMissing(EditionError):
    tag: str
    edition: str

    def __str__(self) -> str:
        return (f"no tag {self.tag} in this repository: fetch the tags (git fetch --tags) and verify again; "
                f"if the publish of {self.edition} was interrupted, make publish EDITION={self.edition} finishes it")


@dataclass(eq=False)
class TagNotACommit(EditionError):
    tag: str
    kind: str  # what it names instead: tree, blob

    def __str__(self) -> str:
        return (f"tag {self.tag} names a {self.kind}, not a commit: an edition's tag names the commit it was built "
                f"from (project_commit in its manifest): point it there (git tag -f {self.tag} COMMIT) and verify "
                "again")


@dataclass(eq=False)
class PagesFileDamaged(EditionError):
    """A file of the pages branch that publishing wrote (an edition's manifest.json, versions.json) cannot be read."""

    branch: str
    path: str  # in the branch: 2026.10/manifest.json, versions.json
    reason: str  # what is wrong with it
    edition: str = ""  # the edition whose manifest it is; "" for versions.json

    def __str__(self) -> str:
        if self.edition:
            return (f"edition {self.edition}: {self.branch}:{self.path} is damaged ({self.reason}): restore it from "
                    f"the history of {self.branch}, or publish the edition again (make publish "
                    f"EDITION={self.edition} REPLACE=1)")
        return f"{self.branch}:{self.path} is damaged ({self.reason}): restore it from the history of {self.branch}"


@dataclass(eq=False)
class BadBranchName(EditionError):
    branch: str

    def __str__(self) -> str:
        return (f"{_quoted(self.branch)} is not a branch name git accepts (git check-ref-format): name the "
                "branch editions are published to, e.g. BRANCH=gh-pages")


@dataclass(eq=False)
class UnknownRemote(EditionError):
    remote: str
    remotes: Sequence[str]  # the repository's

    def __str__(self) -> str:
        known = ", ".join(self.remotes) or "none"
        return (f"{_quoted(self.remote)} is not a remote of this repository (remotes: {known}): add it with "
                "git remote add, or name one with REMOTE=")


@dataclass(eq=False)
class BranchCheckedOut(EditionError):
    branch: str

    def __str__(self) -> str:
        return (f"branch {self.branch} is checked out: publishing would rewrite the branch you work on; "
                "publish to a branch of its own, e.g. BRANCH=gh-pages (the default)")


@dataclass(eq=False)
class BranchHoldsSource(EditionError):
    branch: str
    path: str  # the first of the project's source paths found on it

    def __str__(self) -> str:
        return (f"branch {self.branch} holds the project's source ({self.path}): publishing would replace "
                "it with the site; publish to a branch of its own, e.g. BRANCH=gh-pages (the default)")


@dataclass(eq=False)
class EditionFileDiffers(EditionError):
    """edition.yml names another edition than the one being published."""

    in_file: str
    edition: str
    hint = "the footer of every page is written from edition.yml"

    def __str__(self) -> str:
        return (f"edition.yml is edition {self.in_file}, not {self.edition}: set edition (and date) in "
                f"edition.yml to {self.edition}, commit, and publish again")


@dataclass(eq=False)
class UncommittedChanges(EditionError):
    paths: Sequence[str]
    hint = "an edition is rebuilt from its git tag, so it must be built from a commit"

    def __str__(self) -> str:
        shown = ", ".join(self.paths[:3]) + (", ..." if len(self.paths) > 3 else "")
        noun = "path" if len(self.paths) == 1 else "paths"
        return (f"the working tree has uncommitted changes ({len(self.paths)} {noun}: {shown}): "
                "commit or stash them, then publish again")


@dataclass(eq=False)
class EditionClaimsFailed(EditionError):
    """The build behind an edition has a false claim: nothing is published."""

    edition: str
    failed: int
    total: int
    claims: Sequence[str]  # the failed claims' keys, from build/claims.json
    exit_code = EXIT_CLAIM_FAILED
    hint = "an edition is only published when every claim holds"

    def __str__(self) -> str:
        which = f" ({', '.join(self.claims)})" if self.claims else ""
        return (f"not publishing {self.edition}: {self.failed} of {self.total} claims failed{which}: run make "
                "check, fix the runs or the captions, commit, and publish again")


@dataclass(eq=False)
class FooterMissing(EditionError):
    edition: str
    pages: Sequence[str]  # the pages whose footer lacks it; empty when no page has a footer

    def __str__(self) -> str:
        shown = ", ".join(self.pages[:3]) if self.pages else "no page has a footer"
        return (f"the built pages' footer does not say 'Edition {self.edition}' ({shown}): check that the footer "
                "stamp is written from edition.yml, commit, and publish again")


@dataclass(eq=False)
class PushFailed(EditionError):
    remote: str
    branch: str
    tag: str
    reason: str  # git's last line
    hint = "nothing was published: the local branch and tag were put back"

    def __str__(self) -> str:
        return (f"pushing {self.branch} and {self.tag} to {self.remote} failed ({self.reason}): fetch {self.branch}, "
                "then publish again")


@dataclass(eq=False)
class RebuildFailed(EditionError):
    code: int  # the rebuild's exit code
    last_line: str  # the last line of its error output, "" when it was printed
    hint = "the build's own error is printed above"

    def __str__(self) -> str:
        said = f": {self.last_line}" if self.last_line else ""
        return (f"the rebuild from the tag failed (exit {self.code}){said}: fix the build at that commit, then "
                "publish a new edition")


# --- --ray (build_tools/_ray.py) ---------------------------------------------------------------------------------

_INSTALL_CHECKOUT = "install this checkout on the cluster's nodes (same code, same pinned libraries)"


class RayError(ManualError):
    """`--ray` could not be used: Ray not installed, its cluster not reachable, or a worker lost."""


@dataclass(eq=False)
class RayNotInstalled(RayError):
    hint = "install it with `pip install -c requirements.lock -e '.[ray]'` (make does)"

    def __str__(self) -> str:
        return "--ray: Ray is not installed in this environment"


@dataclass(eq=False)
class RayBadAddress(RayError):
    address: str
    reason: str = ""  # what is wrong with it, when it has the form HOST:PORT

    def __str__(self) -> str:
        why = f": {self.reason}" if self.reason else ""
        return f"--ray: {self.address!r} is not an address{why} (expected HOST:PORT, ray://HOST:PORT, auto or local)"


@dataclass(eq=False)
class RayUnreachable(RayError):
    address: str
    reason: str
    hint = "is the cluster's head running (`ray start --head`) and is this its address?"

    def __str__(self) -> str:
        return f"--ray: could not connect to Ray at {self.address} ({self.reason})"


@dataclass(eq=False)
class RayStartFailed(RayError):
    address: str
    local: bool  # a local instance for `auto` or `local`, else the cluster at address
    error: str  # the exception's type
    reason: str
    hint = ("give the address of a running cluster's head (HOST:PORT), or `local`; a cluster with "
            "token authentication also needs RAY_AUTH_MODE=token and its token")

    def __str__(self) -> str:
        what = "could not start a local Ray instance" if self.local else f"could not connect to Ray at {self.address}"
        return f"--ray: {what} ({self.error}: {self.reason})"


@dataclass(eq=False)
class RayWorkerCannotImport(RayError):
    where: str  # the run, as the user would type it
    reason: str
    hint = _INSTALL_CHECKOUT

    def __str__(self) -> str:
        return f"{self.where}: the Ray worker cannot import build_tools ({self.reason})"


@dataclass(eq=False)
class RayWorkerLost(RayError):
    where: str
    error: str  # Ray's exception type
    reason: str
    hint = ("a worker that ran out of memory is killed by Ray; see the cluster's logs, "
            "or run `manual check` without --ray")

    def __str__(self) -> str:
        return f"{self.where}: the Ray worker summarising this run was lost ({self.error}: {self.reason})"


@dataclass(eq=False)
class RayWorkerOtherCode(RayError):
    where: str
    theirs: str  # the key of the worker's build_tools code and library versions (_ray.code_digest)
    ours: str
    hint = _INSTALL_CHECKOUT

    def __str__(self) -> str:
        return (f"{self.where}: the Ray worker summarising this run has another version of build_tools or of "
                f"its libraries (code and versions sha256 {self.theirs[:12]}, here {self.ours[:12]})")


@dataclass(eq=False)
class RayWorkerCannotSeeRun(RayError):
    where: str  # the run folder, as the user would type it
    node: str  # the Ray node the worker ran on
    hint = ("the workers read the runs at the driver's paths: mount runs/ at the same path on every node (shared "
            "storage), or run `manual check` without --ray")

    def __str__(self) -> str:
        return f"{self.where}: the Ray worker on node {self.node[:12]} cannot see this run folder"
