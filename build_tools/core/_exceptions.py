"""Every error a user can cause, in one place; the CLI prints it as `ERROR <message>` and a hint, never a traceback.

A few classes, as pypa/build's `_exceptions.py` has: ManualError (a message, a hint, an exit code), ProblemsError
(every problem of one kind of input, reported together) with a subclass for each kind, ClaimsFailed, SiteError,
EditionError and RayError. The message of each refusal is written here, once, by the function named after it,
from the facts its caller hands over; callers raise what it returns and tests read its text.
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
# `manual watch --fail-on outside` only: a range or claim of the contract left its band while the job ran.
EXIT_OUTSIDE = 7


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
    """Base of every error the CLI reports as `ERROR <message>` with a hint, never as a traceback: made with its
    message (and a hint and an exit code where they differ from the class's) by a function below. Its args are
    those three, so that a copy pickled from a worker process is the same error. A subclass that carries facts a
    caller reads (the problems, the claims report, mkdocs' messages) is a dataclass: its fields are its args."""

    exit_code: int = EXIT_BAD_INPUT
    hint: str = ""

    def __init__(self, message: str, hint: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message, hint, exit_code)
        if hint is not None:
            self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __post_init__(self) -> None:  # a dataclass subclass's
        self.args = tuple(getattr(self, field.name) for field in dataclasses.fields(self))  # type: ignore[arg-type]

    def __str__(self) -> str:
        return str(self.args[0])


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


class LaunchError(ProblemsError):
    """A launch command a chapter would show, which Miles' own code stops (its parse_args, the FSDP actor's
    start-up): each problem names the chapter, the runs and where in Miles it stops."""

    what = "launch commands"
    hint = ("each command is rendered from its runs' recorded flags (run.yaml flags, meta.json args): record the "
            "flags Miles needs there (runs/README.md); Miles' file and line say what it checks")


class EditionFileError(ProblemsError):
    what = "edition file"
    hint = "edition.yml needs edition, date and miles: {image, branch, commit, commit_date}"


class MetricsSpecError(ProblemsError):
    what = "Metrics page spec"
    hint = "the comment at the top of docs/data/metrics.yml lists the fields, run sets and statistics"


def run_not_written(target: str, reason: str) -> ManualError:
    """`add-run` could not write the new run's folder (a read-only or full disk): nothing was added to runs/.
    `target`: runs/<id>, as the user would type it; `reason`: the system's words."""
    return ManualError(f"{target}: cannot write ({reason}): nothing was added",
                       "runs/ must be writable and have free space; nothing was added, so the same command can "
                       "simply run again")


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
class ClaimsUnproven(ManualError):
    """`make check PROVE=1` (and an edition's build): a check that no change of its data fails proves nothing. Each
    line names its figure, the check and why (checking/prove.py); commands are the same as GitHub workflow
    commands, for `--format github`."""

    lines: Sequence[str]
    unproven: int
    total: int
    commands: Sequence[str] = ()
    exit_code = EXIT_CLAIM_FAILED
    hint = ("a check no change of the runs can fail proves nothing: narrow its tolerance or make it read the values "
            "its claim states (docs/README.md, \"Checks\")")

    def __str__(self) -> str:
        return f"{self.unproven} of {self.total} claims not shown able to fail:\n" + "\n".join(
            f"  {line}" for line in self.lines)


def margins_below(count: int, threshold: float) -> ManualError:
    """`manual check --strict`: claims hold, but some with less margin than the threshold (each warned above)."""
    claims = "1 claim holds" if count == 1 else f"{count} claims hold"
    return ManualError(f"{claims} with a margin fraction below {threshold:g} (--strict)",
                       "widen the claim's words or look at the runs named in the warnings; without --strict they "
                       "only warn", EXIT_MARGIN)


def strict_without_threshold(edition_yml: str) -> ManualError:
    """`--strict` with no margin to warn below: neither --warn-margin nor warn_margin in edition.yml."""
    return ManualError(f"--strict: no margin to hold the claims to: pass --warn-margin F or set warn_margin in "
                       f"{edition_yml}", "e.g. make check WARN_MARGIN=0.2 STRICT=1")


def commit_mismatch(runs: Sequence[tuple[str, str]], commit: str) -> ManualError:
    """Runs made with another Miles build than the edition describes: their numbers belong to another edition.
    `runs`: (run id, its run.yaml miles.commit, "" when it has none); `commit`: the edition's."""
    return ManualError("\n".join(f"run {run_id} was made with Miles commit {made or 'no commit'}, but this edition "
                                 f"is Miles commit {commit} (runs/{run_id}/run.yaml miles.commit)"
                                 for run_id, made in runs),
                       "rebuild that run with the edition's Miles commit, move it out of runs/, or change edition.yml")


def cache_changed(folder: Path) -> ManualError:
    """A cache entry changed on disk between its check and its use (another process, or a person)."""
    return ManualError(f"build/cache: {folder.name} changed while this build was reading it",
                       "run the command again; `make clean` empties the cache")


@dataclass(eq=False)
class SiteError(ManualError):
    """mkdocs found a problem (a broken link, a missing anchor, a page left out of the nav); site.py names the
    chapter each message comes from, so the messages are kept as facts."""

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


# The print edition cannot be written: the site is not built, or WeasyPrint is missing.
_PDF_HINT = "run make (the site must be built first), or make pdf, which installs what the PDF needs"


def weasyprint_missing(reason: str) -> ManualError:
    """`reason`: the first line of the import's error."""
    return ManualError(f"WeasyPrint cannot run ({reason}): make pdf installs it and Debian's pango", _PDF_HINT)


def miles_process_stopped(task: str, reason: str) -> ManualError:
    """Miles' own code, in its process (build_tools/miles_code/run.py, this task), stopped for a reason of the
    machine's: `reason` is the signal that killed it, or the OSError it met."""
    return ManualError(f"Miles' own code stopped (build_tools/miles_code/run.py, task {task}): {reason}",
                       "free memory or room in TMPDIR (Miles' advisor replays each dump into a scratch folder there) "
                       "and check that the runs' files are readable, then run again")


def site_not_built(site: Path) -> ManualError:
    return ManualError(f"no built site in {site}: run make first", _PDF_HINT)


def page_without_article(page: Path) -> ManualError:
    return ManualError(f"{page}: no article in the built page: run make again", _PDF_HINT)


def setting_error(messages: Sequence[str]) -> ManualError:
    """Build settings from the environment (ENGINE, SOURCE_DATE_EPOCH, MANUAL_SITE_URL) that are not ones the build
    takes, one message each; found before anything is built (build_tools/core/_settings.py)."""
    return ManualError("\n".join(messages),
                       "fix or unset the variable named (make passes ENGINE= to the build as MANUAL_ENGINE)")


# --- options of the command line ----------------------------------------------------------------------------


def bad_option(option: str, value: str, expected: str, example: str) -> ManualError:
    """An option's value that cannot be what it names (argparse took it as text): refused before anything runs.
    `option` and `value` as typed (--interval); `expected`, e.g. "a number of seconds above 0"; `example`, e.g.
    "--interval 1"."""
    return ManualError(f"{option}: {_quoted(value)} is not {expected}, e.g. {example}")


def cannot_record(path: str, reason: str) -> ManualError:
    """`manual record` cannot write the run folder's lab/ streams (not a folder, not writable, a disk full)."""
    return ManualError(f"{path}: cannot write ({reason}): manual record writes the lab/ streams of a run folder, "
                       "which must be a folder it can write")


# --- make variables (build_tools/commands/_make.py), refused before anything runs -------------------------------------


def _variable(name: str, value: str) -> str:
    text = value.encode("unicode_escape").decode("ascii") if not value.isprintable() else value
    return f"{name}='{text}'"


def not_an_edition_variable(name: str, value: str, example: str) -> ManualError:
    """`name`: EDITION, FROM or TO; `example`: the make command that shows it, e.g. make verify EDITION=2026.10."""
    return ManualError(f"{_variable(name, value)} is not an edition number: use YEAR.MONTH with a two-digit month, "
                       f"e.g. {example}")


def not_a_flag(name: str, value: str) -> ManualError:
    """`name`: PUSH, REPLACE, STRICT or ALL, which take exactly 1 (or nothing)."""
    return ManualError(f"{_variable(name, value)} is not 1 or nothing: write {name}=1 to turn it on, or leave it out")


def not_a_format(value: str, target: str = "check") -> ManualError:
    """FORMAT of `make check` (text, github) or `make watch` (live, jsonl, github)."""
    if target == "watch":
        return ManualError(f"{_variable('FORMAT', value)} is not a format of make watch: write FORMAT=jsonl (a JSON "
                           "line per change), FORMAT=github (workflow commands for GitHub), or leave it out for the "
                           "live view")
    return ManualError(f"{_variable('FORMAT', value)} is not a report format: write FORMAT=github (workflow "
                       "commands for GitHub) or leave it out")


def not_a_watch_choice(name: str, value: str) -> ManualError:
    """FAIL_ON or UNTIL_IDLE of `make watch`."""
    if name == "FAIL_ON":
        return ManualError(f"{_variable(name, value)} is not a choice: write FAIL_ON=outside (end at the first item "
                           "outside its band) or leave it out")
    return ManualError(f"{_variable(name, value)} is not a number of seconds: write e.g. UNTIL_IDLE=300 (end after "
                       "five quiet minutes) or leave it out (the job's end record or Ctrl-C ends it)")


def not_a_port(value: str) -> ManualError:
    return ManualError(f"{_variable('PORT', value)} is not a port: write a whole number from 1 to 65535, "
                       "e.g. make serve PORT=8001")


def port_taken(host: str, port: int, free: int | None) -> ManualError:
    """`make serve`: another program (or another make serve) holds the port; found before any build, as one line
    whose command names a port that was free a moment ago (`free`; None when none was found)."""
    return ManualError(f"port {port} on {host} is in use (another server, or make serve already running): "
                       f"make serve PORT={free or port + 1} serves on another")


def port_not_allowed(host: str, port: int, reason: str) -> ManualError:
    """`make serve`: the system refuses the port (one under 1024 needs root); `reason`: the system's words."""
    return ManualError(f"port {port} on {host} cannot be opened ({reason}; a port under 1024 needs root): "
                       "make serve PORT=8001 serves on another")


def not_a_bench(value: str, benches: Sequence[str]) -> ManualError:
    """WHAT, of `make bench WHAT=...`: one of `benches` (commands/_make.BENCHES) or nothing."""
    return ManualError(f"{_variable('WHAT', value)} is not a benchmark: write "
                       f"{' or '.join(f'WHAT={name}' for name in benches)}, or leave it out for the build's")


def bench_without(what: str, name: str) -> ManualError:
    """`make bench WHAT=what` with a variable (RAY; SCALE for watch) that bench does not read with it."""
    return ManualError(f"WHAT={what} measures without {name}: leave {name} out, or WHAT out for {name}'s benchmark")


def not_a_run_id(value: str) -> ManualError:
    return ManualError(f"{_variable('ID', value)} is not a run id: lower-case letters, digits, '.' and '-', "
                       "e.g. make add-run SRC=path ID=my-run-seed1")


_MISSING_VARIABLE = {
    "RUN": "no run given: name your run's folder or Miles dashboard dump, e.g. make compare RUN=path/to/run",
    "SRC": "no source given: name what the Miles job left, e.g. make add-run SRC=path/to/job",
}


def missing_make_variable(name: str, target: str = "compare") -> ManualError:
    """`name`: RUN or SRC; `target`, the make target that needs it (compare or watch, for RUN)."""
    if name == "RUN" and target == "watch":
        return ManualError("no run given: name the folder your job writes into (its dashboard dump, its logs), e.g. "
                           "make watch RUN=path/to/job")
    return ManualError(_MISSING_VARIABLE[name])


# --- editions: publish, verify, diff (build_tools/editions/edition.py); nothing was changed ---------------------------


class EditionError(ManualError):
    """A publish, verify or diff that cannot go ahead; nothing was changed. Written by the functions below."""


def no_edition_number(command: str) -> EditionError:
    """`command`: publish, verify or diff."""
    return EditionError(f"no edition number given: name one as YEAR.MONTH, e.g. make {command} EDITION=2026.10")


def not_an_edition_number(edition: str, command: str) -> EditionError:
    return EditionError(f"'{edition}' is not an edition number: use YEAR.MONTH with a two-digit month, "
                        f"e.g. make {command} EDITION=2026.10")


def two_editions_needed() -> EditionError:
    return EditionError("name two editions: make diff FROM=2026.10 TO=2026.11")


def not_a_date(date: str) -> EditionError:
    """`date`: edition.yml's."""
    return EditionError(f"edition.yml: date '{date}' is not a date: write it as YYYY-MM-DD")


def not_a_repository(root: Path) -> EditionError:
    return EditionError(f"{root} is not a git repository with a commit: editions are published from a git "
                        "checkout, so that a tag can name what was built")


def no_pages_branch(branch: str, command: str) -> EditionError:
    """`command`: verify or diff."""
    return EditionError(f"no branch {branch} in this repository: publish an edition first (make publish "
                        "EDITION=...), or name the branch with --branch",
                        f"{command} reads the editions' manifests from the mike branch")


def edition_not_published(edition: str, branch: str, published: Sequence[str]) -> EditionError:
    """`published`: the editions that are."""
    listed = ", ".join(published) or "none"
    return EditionError(f"edition {edition} is not published on {branch} (published: {listed}): name a published "
                        "edition")


def already_published(edition: str, branch: str) -> EditionError:
    return EditionError(f"edition {edition} is already published on {branch}: pass --replace to replace it "
                        f"(make publish EDITION={edition} REPLACE=1), or publish a new number")


def tag_exists(tag: str, edition: str) -> EditionError:
    """A tag of the edition's name that this code did not write."""
    return EditionError(f"tag {tag} already exists: pass --replace to move it and replace the edition "
                        f"(make publish EDITION={edition} REPLACE=1), or publish a new number")


def tag_missing(tag: str, edition: str) -> EditionError:
    return EditionError(f"no tag {tag} in this repository: fetch the tags (git fetch --tags) and verify again; "
                        f"if the publish of {edition} was interrupted, make publish EDITION={edition} finishes it")


def tag_not_a_commit(tag: str, kind: str) -> EditionError:
    """`kind`: what it names instead (tree, blob)."""
    return EditionError(f"tag {tag} names a {kind}, not a commit: an edition's tag names the commit it was built "
                        f"from (project_commit in its manifest): point it there (git tag -f {tag} COMMIT) and "
                        "verify again")


class PagesFileDamaged(EditionError):
    """A file of the pages branch that publishing wrote (an edition's manifest.json, versions.json) cannot be read:
    its own class, as publishing writes a damaged manifest again (edition.py)."""


def pages_file_damaged(branch: str, path: str, reason: str, edition: str = "") -> PagesFileDamaged:
    """`path`: in the branch (2026.10/manifest.json, versions.json); `reason`: what is wrong with it; `edition`: the
    edition whose manifest it is, "" for versions.json."""
    if edition:
        return PagesFileDamaged(f"edition {edition}: {branch}:{path} is damaged ({reason}): restore it from the "
                                f"history of {branch}, or publish the edition again (make publish EDITION={edition} "
                                "REPLACE=1)")
    return PagesFileDamaged(f"{branch}:{path} is damaged ({reason}): restore it from the history of {branch}")


def bad_branch_name(branch: str) -> EditionError:
    return EditionError(f"{_quoted(branch)} is not a branch name git accepts (git check-ref-format): name the "
                        "branch editions are published to, e.g. BRANCH=gh-pages")


def unknown_remote(remote: str, remotes: Sequence[str]) -> EditionError:
    """`remotes`: the repository's."""
    known = ", ".join(remotes) or "none"
    return EditionError(f"{_quoted(remote)} is not a remote of this repository (remotes: {known}): add it with "
                        "git remote add, or name one with REMOTE=")


def branch_checked_out(branch: str) -> EditionError:
    return EditionError(f"branch {branch} is checked out: publishing would rewrite the branch you work on; "
                        "publish to a branch of its own, e.g. BRANCH=gh-pages (the default)")


def branch_holds_source(branch: str, path: str) -> EditionError:
    """`path`: the first of the project's source paths found on it."""
    return EditionError(f"branch {branch} holds the project's source ({path}): publishing would replace it with "
                        "the site; publish to a branch of its own, e.g. BRANCH=gh-pages (the default)")


def edition_file_differs(in_file: str, edition: str) -> EditionError:
    """edition.yml names another edition than the one being published."""
    return EditionError(f"edition.yml is edition {in_file}, not {edition}: set edition (and date) in edition.yml "
                        f"to {edition}, commit, and publish again",
                        "the footer of every page is written from edition.yml")


def uncommitted_changes(paths: Sequence[str]) -> EditionError:
    shown = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
    noun = "path" if len(paths) == 1 else "paths"
    return EditionError(f"the working tree has uncommitted changes ({len(paths)} {noun}: {shown}): commit or "
                        "stash them, then publish again",
                        "an edition is rebuilt from its git tag, so it must be built from a commit")


def edition_claims_failed(edition: str, failed: int, total: int, claims: Sequence[str]) -> EditionError:
    """The build behind an edition has a false claim: nothing is published. `claims`: the failed claims as `make
    check` names them ("fig 1.3"), from build/claims.json."""
    which = f" ({', '.join(claims)})" if claims else ""
    return EditionError(f"not publishing {edition}: {failed} of {total} claims failed{which}: run make check, fix "
                        "the runs or the captions, commit, and publish again",
                        "an edition is only published when every claim holds", EXIT_CLAIM_FAILED)


def edition_claims_unproven(edition: str, error: ClaimsUnproven) -> EditionError:
    """The build behind an edition has a check no change of its data fails: nothing is published. The checks as
    `make check PROVE=1` names them ("docs/01-step.md:53 fig 1.3 check 2 (event_span) ...")."""
    listed = "\n".join(f"  {line}" for line in error.lines)
    return EditionError(f"not publishing {edition}: {error.unproven} of {error.total} claims not shown able to fail: "
                        f"run make check PROVE=1, fix the checks, commit, and publish again\n{listed}",
                        "an edition is only published when every claim is shown able to fail", EXIT_CLAIM_FAILED)


def footer_missing(edition: str, pages: Sequence[str]) -> EditionError:
    """`pages`: the pages whose footer lacks it; empty when no page has a footer."""
    shown = ", ".join(pages[:3]) if pages else "no page has a footer"
    return EditionError(f"the built pages' footer does not say 'Edition {edition}' ({shown}): check that the footer "
                        "stamp is written from edition.yml, commit, and publish again")


def push_failed(remote: str, branch: str, tag: str, reason: str) -> EditionError:
    """`reason`: git's last line."""
    return EditionError(f"pushing {branch} and {tag} to {remote} failed ({reason}): fetch {branch}, then publish "
                        "again", "nothing was published: the local branch and tag were put back")


def rebuild_failed(code: int, last_line: str) -> EditionError:
    """`code`: the rebuild's exit code; `last_line`: the last line of its error output, "" when it was printed."""
    said = f": {last_line}" if last_line else ""
    return EditionError(f"the rebuild from the tag failed (exit {code}){said}: fix the build at that commit, then "
                        "publish a new edition", "the build's own error is printed above")


# --- --ray (build_tools/summarise/_ray.py) ----------------------------------------------------------------------------


class RayError(ManualError):
    """`--ray` could not be used: Ray not installed, its cluster not reachable, or a worker lost. Written by the
    functions below."""


_INSTALL_CHECKOUT = "install this checkout on the cluster's nodes (same code, same pinned libraries)"


def ray_not_installed() -> RayError:
    return RayError("--ray: Ray is not installed in this environment",
                    "install it with `make .venv/.installed-ray` (the lock's pins and hashes, with uv)")


def ray_bad_address(address: str, reason: str = "", variable: str | None = None) -> RayError:
    """`reason`: what is wrong with it, when it has the form HOST:PORT; `variable`: RAY when make's variable
    gave it (named as typed), else the message names --ray."""
    why = f": {reason}" if reason else ""
    given = f"--ray: {address!r}" if variable is None else _variable(variable, address)
    return RayError(f"{given} is not an address{why} (expected HOST:PORT, ray://HOST:PORT, auto or local)")


def ray_unreachable(address: str, reason: str) -> RayError:
    return RayError(f"--ray: could not connect to Ray at {address} ({reason})",
                    "is the cluster's head running (`ray start --head`) and is this its address?")


def ray_start_failed(address: str, local: bool, error: str, reason: str) -> RayError:
    """`local`: a local instance for `auto` or `local`, else the cluster at address; `error`: the exception's
    type."""
    what = "could not start a local Ray instance" if local else f"could not connect to Ray at {address}"
    return RayError(f"--ray: {what} ({error}: {reason})",
                    "give the address of a running cluster's head (HOST:PORT), or `local`; a cluster with token "
                    "authentication also needs RAY_AUTH_MODE=token and its token")


def ray_worker_cannot_import(where: str, reason: str) -> RayError:
    """`where`: the run, as the user would type it."""
    return RayError(f"{where}: the Ray worker cannot import build_tools ({reason})", _INSTALL_CHECKOUT)


def ray_worker_lost(where: str, error: str, reason: str) -> RayError:
    """`error`: Ray's exception type."""
    return RayError(f"{where}: the Ray worker summarising this run was lost ({error}: {reason})",
                    "a worker that ran out of memory is killed by Ray; see the cluster's logs, or run `make check` "
                    "without RAY=")


def ray_worker_other_code(where: str, theirs: str, ours: str) -> RayError:
    """`theirs`, `ours`: the keys of the worker's and this process's build_tools code and library versions
    (_ray.code_digest)."""
    return RayError(f"{where}: the Ray worker summarising this run has another version of build_tools or of its "
                    f"libraries (code and versions sha256 {theirs[:12]}, here {ours[:12]})", _INSTALL_CHECKOUT)


def ray_worker_cannot_see_run(where: str, node: str) -> RayError:
    """`where`: the run folder, as the user would type it; `node`: the Ray node the worker ran on."""
    return RayError(f"{where}: the Ray worker on node {node[:12]} cannot see this run folder",
                    "the workers read the runs at the driver's paths: mount runs/ at the same path on every node "
                    "(shared storage), or run `make check` without RAY=")
