"""A thin command line over the build: every user mistake ends as `ERROR ...` and a hint, never a traceback."""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from build_tools.core._escape import terminal_line, terminal_text
from build_tools.core._exceptions import (
    EXIT_BAD_INPUT,
    EXIT_DIFFERS,
    ClaimsFailed,
    ClaimsUnproven,
    ManualError,
    bad_option,
)
from build_tools.core._layout import Layout

if TYPE_CHECKING:
    from rich.console import Console

    from build_tools.commands.watch.published import Published
    from build_tools.core._settings import Settings

EXIT_BUG = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EPILOG = """exit codes: 0 done, 2 bad input (the message names the file), 3 a claim no longer holds (or, with
--prove, a check no change of its data fails), 4 verify found a difference, 5 bench missed a goal, 6 check --strict
found a claim whose margin is below --warn-margin (or edition.yml's warn_margin), 7 watch saw an item go outside its
band (any format), 1 a bug (the traceback is saved under build/), 130 interrupted,
143 terminated"""


class _Console:
    """rich's Console, imported when first used: a no-op `make` prints one plain line and never needs it.

    Every text it prints is stripped of terminal controls first (`_escape.terminal_text`): messages, reports
    and warnings quote the data (a log line, a file name, an event's detail).
    """

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def print(self, *objects: Any, **options: Any) -> None:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        self._console.print(*(terminal_text(o) if isinstance(o, str) else o for o in objects), **options)

    def command(self, line: str) -> None:
        """A workflow command `_escape.workflow_command` built (its data encoded on its one line), written as it is:
        print() would mark it as a line the data made start with `::`."""
        stream = self._console.file if self._console is not None else (
            sys.stderr if self._options.get("stderr") else sys.stdout)
        stream.write(line + "\n")
        stream.flush()

    def render(self, text: str, **options: Any) -> str:
        """What print(text) writes, as text."""
        import io

        from rich.console import Console

        rendered = io.StringIO()
        Console(file=rendered, **self._options).print(terminal_text(text), **options)
        return rendered.getvalue()


class _Replay:
    """What a check printed on stdout (each text as `_Console.print(text, markup=False)` writes it) and read of
    edition.yml (its warn_margin), kept with its record: the check that replays it writes the same bytes without
    importing rich or yaml (a tenth of a second). Both are functions of the inputs the record's key hashes (the
    report's text; edition.yml)."""

    def __init__(self, console: _Console) -> None:
        self.console = console
        self.rendered: dict[str, str] = {}  # text -> what rich writes of it
        self.margin: dict[str, float | None] = {}  # edition.yml's warn_margin, once read

    def say(self, text: str) -> None:
        rendered = self.rendered.get(text)
        if rendered is None:
            rendered = self.rendered[text] = self.console.render(text, markup=False)
        # A record is build/'s, not the data's: whatever it holds, no control sequence reaches the terminal.
        sys.stdout.write(terminal_text(rendered))
        sys.stdout.flush()

    def edition_margin(self, edition_yml: Path) -> float | None:
        if "warn_margin" not in self.margin:
            from build_tools.checking.margins import threshold_of

            self.margin["warn_margin"] = threshold_of(edition_yml)
        return self.margin["warn_margin"]

    def record(self, report: str) -> str:
        """The report printed, every rendering and what was read of edition.yml, for `replayed`."""
        return json.dumps({"report": report, "rendered": self.rendered, "margin": self.margin}, ensure_ascii=False,
                          sort_keys=True)

    def replayed(self, record: str) -> str | None:
        """The report of a record, its renderings and reading taken (to print it again); None when the record is
        not one."""
        try:
            found = json.loads(record)
        except ValueError:
            return None
        if not isinstance(found, dict):
            return None
        report, rendered, margin = found.get("report"), found.get("rendered"), found.get("margin")
        if not (isinstance(report, str) and isinstance(rendered, dict) and isinstance(margin, dict)
                and all(isinstance(value, str) for value in rendered.values())
                and all(value is None or type(value) is float for value in margin.values())):
            return None
        self.rendered, self.margin = rendered, margin
        return report


def escape(text: str) -> str:
    """rich's markup escape, imported when a message is printed."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


_err = _Console(stderr=True, highlight=False, soft_wrap=True)
_out = _Console(highlight=False, soft_wrap=True)


def _settings(**options: Any) -> Settings:
    """The build's settings: the command's options, and what make and an edition's rebuild put in the environment
    (checked now, before anything runs)."""
    from build_tools.core._settings import from_environment

    return from_environment(**options)


def _cmd_build(args: argparse.Namespace) -> int:
    from .store import uptodate

    settings = _settings(jobs=args.jobs, prove=args.prove)
    layout = Layout(args.root.resolve())
    # Checked before importing the build (pandas, matplotlib): a no-op `make` only hashes the inputs. First without
    # the lock (filelock's imports are a sixth of a no-op): a build that starts forgets the recorded key before it
    # touches site/, so a site found current is one no build was replacing.
    if not args.force and uptodate.is_current(layout, settings):
        return _nothing_changed()
    from build_tools.core._lock import build_lock

    with build_lock(layout.build, lambda line: _err.print(line, markup=False)):
        # Again under the lock: a build that waited for another finds the site that one built up to date.
        if not args.force and uptodate.is_current(layout, settings):
            return _nothing_changed()
        from .build import build

        build(args.root, settings)
    return 0


# Its hint names a command that works as typed: `make --force` is an option GNU make itself rejects.
NOTHING_CHANGED = "Nothing changed since the last build: site/ is up to date (make FORCE=1 builds it again)."


def _nothing_changed() -> int:
    sys.stderr.write(f"{NOTHING_CHANGED}\n")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from .store import uptodate

    threshold = None if args.warn_margin is None else _fraction(args.warn_margin)
    settings = _settings(all_runs=args.all, prove=args.prove)
    layout = Layout(args.root.resolve())
    # Decided before importing the build (pandas): an unchanged project's check prints its last report again.
    last = uptodate.last_check(layout, settings) if not args.ray else uptodate.LastCheck(None, None)
    plain = _Replay(_out)
    if last.report is not None and (report := plain.replayed(last.report)) is not None:
        _replay_guidance(layout)
        sys.stderr.write("Nothing changed since the last check: its report again (`make clean` checks afresh).\n")
        plain.say(report)
        return _margins(layout, args, plain, threshold, [])
    if not args.ray:
        _start_readers_early(layout, settings)
    from build_tools.summarise.summary import describe

    from .build import check, skipped_line

    if args.ray:
        from build_tools.summarise._ray import ray_summariser

        settings = replace(settings, summariser=ray_summariser(args.ray))
    try:
        result = check(args.root, settings)
    except ClaimsUnproven as error:
        if args.format == "github":  # each check no change fails, on its caption's line (workflow_command built)
            for line in error.commands:
                _out.command(line)
        raise
    except ClaimsFailed as error:
        # A false claim still prints the runs and every figure's line before the error.
        _out.print("\n".join(error.report_lines), markup=False)
        if args.format == "github":
            from build_tools.checking import margins

            report_data = margins.read_report(layout.build / "claims.json")
            for line in margins.failure_commands(report_data):
                _out.command(line)
        raise
    lines = [describe(summary) for summary in result.summaries.values()]
    by_facts = len(result.validated) - result.unread  # the Metrics page reads them, as the build's would
    lines += [skipped_line(by_facts, by_facts=True)] if by_facts else []
    lines += [skipped_line(result.unread)] if result.unread else []
    report = "\n".join([*lines, *result.report_lines, *result.proof_lines])
    plain.say(report)
    try:
        return _margins(layout, args, plain, threshold, result.warnings)
    finally:  # the report and margins as printed (its margins' warnings are shown again, as they are found)
        if not args.ray and not result.warnings:
            uptodate.record_check(layout, settings, plain.record(report), last.key, result.runs_read)


def _guidance_lines(layout: Layout) -> list[str]:
    """The last check's warnings of the manual's numbers past Miles' own lines (build.GUIDANCE_FILE: read by name
    here, since a replayed check does not import the build)."""
    try:
        return (layout.build / "miles_guidance.txt").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _replay_guidance(layout: Layout) -> None:
    """The recorded check's warnings of Miles' lines, as the check showed them: a replayed check shows its warnings
    too."""
    lines = _guidance_lines(layout)
    # Written plainly (rich is not imported by a replayed check), stripped of terminal controls as every message.
    sys.stderr.write("".join(f"WARNING {terminal_line(line)}\n" for line in lines))


def _start_readers_early(layout: Layout, settings: Settings) -> None:
    """A check with no summary cache (a cold one, or an edition's, which trusts none) reads every run in the summary
    stage's pool: its fork server starts before the build's imports, so that the two import at once."""
    if settings.trust_state and (layout.cache / "summaries").is_dir():
        return
    try:
        with os.scandir(layout.runs) as found:
            runs = sum(entry.is_dir() for entry in found)
    except OSError:
        return  # the check says what is wrong with runs/
    from build_tools.core._workers import start_early

    start_early(["build_tools.summarise.summary"], runs)  # what summary._in_pool's workers import (its __name__)


# A decimal number in ASCII digits: float() also takes "٠.٥", "０.５", "1_0" and spaces around.
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _decimal(text: str) -> float:
    """The number text writes in ASCII digits, or NaN when it writes none."""
    return float(text) if _DECIMAL.fullmatch(text) else math.nan


def _fraction(text: str) -> float:
    """--warn-margin: a finite fraction of the tolerance above 0."""
    value = _decimal(text)
    if not math.isfinite(value) or value <= 0:
        raise bad_option("--warn-margin", text, "a number above 0 (a fraction of the tolerance)", "--warn-margin 0.2")
    return value


def _margins(layout: Layout, args: argparse.Namespace, plain: _Replay, threshold: float | None,
             data_warnings: Sequence[str]) -> int:
    """After every claim held: the claims closest to failing, a warning for each below the threshold (the option's,
    else edition.yml's), and with --strict exit 6 when there is one."""
    from build_tools.checking import margins
    from build_tools.core._exceptions import display_path, margins_below, strict_without_threshold

    report_data = margins.read_report(layout.build / "claims.json")
    plain.say("\n".join(margins.closest_lines(report_data)))
    if threshold is None:
        threshold = plain.edition_margin(layout.edition_yml)
    if threshold is None and args.strict:
        raise strict_without_threshold(display_path(layout.edition_yml))
    weak = margins.below(report_data, threshold) if threshold is not None else []
    if args.format == "github":  # workflow commands, on stderr as every warning: the runner reads both streams
        for line in margins.data_warning_commands(data_warnings):
            _err.command(line)
        for line in margins.guidance_commands(_guidance_lines(layout)):  # as every mode shows them
            _err.command(line)
    if threshold is None:
        return 0
    for claim in weak:
        if args.format == "github":
            _err.command(margins.warning_commands([claim], threshold)[0])
        else:
            _err.print(f"[yellow]WARNING[/yellow] {escape(margins.warning_text(claim, threshold))}")
    if args.strict and weak:
        raise margins_below(len(weak), threshold)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from build_tools.commands import compare
    from build_tools.core._lock import build_lock

    layout = Layout(args.root.resolve())
    if not layout.metrics_yml.is_file():  # before anything is written here (the lock's build/)
        raise ManualError(f"{layout.root}: not a clone of the manual's project (no docs/data/metrics.yml): compare "
                          "sets your run beside the manual's own runs, which a clone holds",
                          "run it in a clone (or name one with --root); `manual watch RUN --contract URL` holds a "
                          "job against a published edition without one")
    yours = compare.load_reader_run(args.run)
    _warn(yours.warnings)  # what reading your run skipped or doubted, on stderr
    with build_lock(layout.build, lambda line: _err.print(line, markup=False)):  # it reads and fills the cache
        setup, comparisons = compare.compare(layout, yours)
        claims = compare.claims_on(layout, yours)
    _out.print("\n".join(map(terminal_line, compare.report(setup, comparisons, yours, claims))), markup=False)
    return 0


def _cmd_watch(args: argparse.Namespace) -> int:
    import sys

    from build_tools.checking import contract as contract_module
    from build_tools.commands.watch import published, show
    from build_tools.commands.watch.run import Breach, Watch
    from build_tools.core._escape import workflow_command
    from build_tools.core._exceptions import EXIT_OUTSIDE, ManualError

    root = args.root.resolve()
    if not args.run.is_dir():
        raise ManualError(f"{args.run}: not a folder", "watch a folder a job writes into (its dump or its logs)")
    until_idle = None if args.until_idle is None else _seconds(
        "--until-idle", args.until_idle, "a number of seconds, finite and not negative", "--until-idle 30", zero=True)
    found = _contract_to_watch(root, args.contract)  # a URL or a file, checked against its edition's manifest
    try:
        document = contract_module.parse_contract(found.data)
    except ValueError as error:  # pydantic's ValidationError (or JSON that is not JSON): the file and each field
        raise ManualError(f"{found.where}: not a contract this manual reads: "
                          + "; ".join(_validation_lines(error)),
                          "rebuild it with `make`, or name another with --contract") from None
    if found.edition is not None and document.edition != found.edition:
        raise ManualError(f"{found.where}: the contract of edition {document.edition}, but its manifest is edition "
                          f"{found.edition}'s", "name the contract.json of the edition's own folder")

    def write(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def warn(line: str) -> None:  # one line whatever the data holds, escaped for the channel (_escape)
        if args.format == "github":
            _err.command(workflow_command("warning", line, {"title": "manual watch"}))
        else:
            _err.print(f"[yellow]WARNING[/yellow] {escape(terminal_line(line))}")

    site = found.where.rsplit("/", 1)[0] + "/" if published.is_url(found.where) else _site_of(Path(found.where))
    live = show.LiveView(sys.stdout, site=site) if args.format == "live" else None
    watch = Watch(args.run, document, show.emitter(args.format, write), warn,
                  fail_on_outside=args.fail_on == "outside")

    def redraw() -> None:
        if live is not None:
            live.update(watch.judge, watch.steps, watch.run_name or args.run.name, watch.last_data)

    watch.on_tick = redraw
    if Layout(root).metrics_yml.is_file():  # compare judges a claim with the manual's runs: only in a clone
        watch.claims_now = lambda: _claims_now(root, args.run)
    breach = None
    try:
        if live is not None:
            with live:
                watch.run(until_idle)
        else:
            watch.run(until_idle)
    except KeyboardInterrupt:
        watch.ended = "Ctrl-C"
    except Breach as breach_found:
        breach = breach_found
        watch.ended = "the first item outside (--fail-on outside)"
    emit = show.emitter(args.format, write)
    project = Layout(root).metrics_yml.is_file()  # compare judges the finished run with the manual's runs
    if breach is None and watch.steps and watch.ended != "Ctrl-C":  # the job ended: judged whole, as compare does
        waits = watch.judge.waiting_for_the_end()
        if waits and not project:
            warn("the finished run not judged whole: claims and whole-run rows are checked with the manual's own "
                 f"runs (`make compare RUN=path/to/job` in a clone of the project; {root} is not one)")
        claims, ranges = _end_verdicts(root, args.run) if waits and project else ({}, {})
        for change in [*watch.judge.close_ranges(ranges), *watch.judge.close_claims(claims),
                       *watch.judge.close_unread()]:
            emit(change)
    else:  # stopped before the job's end: what waits for it says so
        for change in watch.judge.stopped(watch.ended or "stopped"):
            emit(change)
    heading = show.heading_of(watch.judge, watch.steps, watch.run_name or args.run.name, watch.ended)
    if args.format == "jsonl":
        write(show.summary_json(watch.judge, heading))
    for line in show.summary_lines(watch.judge, heading, site):
        _err.print(terminal_line(line), markup=False, highlight=False)  # each line quotes data: it stays one
    return EXIT_OUTSIDE if breach is not None or show.outside_now(watch.judge) else 0



def _validation_lines(error: ValueError) -> list[str]:
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        return [f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()]
    return [str(error)]


def _site_of(contract: Path) -> str:
    """The folder the contract's links are relative to, as a reader opens it (site/ of the last build)."""
    folder = contract.resolve().parent
    try:
        shown = folder.relative_to(Path.cwd())
    except ValueError:
        shown = folder
    return f"{shown}/" if str(shown) != "." else ""


def _contract_to_watch(root: Path, contract: str | None) -> Published:
    """The contract `watch` holds the job to: the last build's site/contract.json, or the one
    named (a URL or a file), checked against its edition's manifest."""
    from build_tools.checking import contract as contract_module
    from build_tools.commands.watch import published

    if contract is not None:
        return published.read(contract)
    where = root / "site" / contract_module.CONTRACT_FILE
    if not where.is_file():
        raise ManualError(f"{where}: no contract to watch against",
                          "run `make` first (it writes site/contract.json), or name a published edition's with "
                          "--contract URL")
    return published.Published(published.read_file(where), str(where), None)


def _end_verdicts(root: Path, run: Path) -> tuple[dict[str, tuple[bool | None | str, str]],
                                                   dict[str, tuple[bool | None, str]]]:
    """The finished run as `compare` judges it: figure id -> (holds, detail) of each claim it checks, and metric ->
    (holds, verdict) of each Metrics row; none when the run cannot be read (said as a warning)."""
    from build_tools.commands import compare
    from build_tools.core._exceptions import ManualError
    from build_tools.core._lock import build_lock

    try:
        yours = compare.load_reader_run(run)
        layout = Layout(root)
        with build_lock(layout.build, lambda line: _err.print(line, markup=False)):
            ids = _figure_ids(layout)
            on_yours = compare.claims_on(layout, yours)
            claims: dict[str, tuple[bool | None | str, str]] = {
                ids.get(claim.number, claim.number): (claim.holds, claim.detail) for claim in on_yours}
            skipped = compare.why_not_on(layout, yours, {claim.number for claim in on_yours})
            claims |= {ids.get(number, number): ("not_applicable", why) for number, why in skipped.items()}
            _, rows = compare.compare(layout, yours)
    except ManualError as error:
        _err.print(f"[yellow]WARNING[/yellow] the finished run not judged: {escape(terminal_line(str(error)))}")
        return {}, {}
    return claims, {row.metric: (row.holds, row.verdict) for row in rows}


def _claims_now(root: Path, run: Path) -> dict[str, tuple[bool | None | str, str]] | None:
    """Figure id -> (holds, detail) of each claim `compare` checks on the run as it is mid-job; None while the run
    cannot be read whole yet (a file mid-write): the watch tries again at a later step, and says nothing."""
    from build_tools.commands import compare
    from build_tools.core._exceptions import ManualError
    from build_tools.core._lock import build_lock

    try:
        yours = compare.load_reader_run(run)
        layout = Layout(root)
        with build_lock(layout.build, lambda line: _err.print(line, markup=False)):  # the manual's runs, as at the end
            ids = _figure_ids(layout)
            return {ids.get(claim.number, claim.number): (claim.holds, claim.detail)
                    for claim in compare.claims_on(layout, yours)}
    except ManualError:
        return None


def _figure_ids(layout: Layout) -> dict[str, str]:
    """Figure number -> the chapter's figure id (the contract names a claim by its id)."""
    from build_tools.checking import blocks as blocks_stage
    from build_tools.core._exceptions import ChapterError

    try:
        return {block.number: block.id for block in blocks_stage.read_blocks(layout.docs, layout.figures_src)}
    except ChapterError:
        return {}


def _cmd_show(args: argparse.Namespace) -> int:
    from build_tools.commands import show

    path = show.resolve(args.root.resolve(), args.run)
    run, summary, found = show.load(path)
    if args.csv or args.long:
        sys.stdout.write(terminal_text(show.as_csv(run) if args.csv else show.as_long(run)))
        _warn([*run.warnings, *show.csv_warnings(run, long=args.long)])
    else:
        _out.print("\n".join(map(terminal_line, show.report(run, summary, found, path))), markup=False)  # each one
    return 0


def _warn(warnings: list[str]) -> None:
    """Warnings on stderr, one a line, as the build prints them."""
    for warning in warnings:
        _err.print(f"[yellow]WARNING[/yellow] {escape(terminal_line(warning))}")


def _cmd_add_run(args: argparse.Namespace) -> int:
    from build_tools.commands.add_run import add_run

    lines, warnings = add_run(args.root.resolve(), args.src, args.id or None)
    _warn(warnings)
    _out.print("\n".join(lines), markup=False)
    return 0


def _cmd_record(args: argparse.Namespace) -> int:
    from build_tools.commands import record

    interval = _seconds("--interval", args.interval, "a number of seconds above 0", "--interval 1", zero=False)
    flush = _seconds("--flush", args.flush, "a number of seconds, 0 or more", "--flush 5", zero=True)
    until_exit = _whole("--until-exit", args.until_exit, "a process id (a whole number from 1)", "--until-exit 4242")
    samples = _whole("--samples", args.samples, "a number of samples (a whole number from 1)", "--samples 10")
    return record.main(record.Recorder(args.out, meminfo=args.meminfo, nvidia_smi=args.nvidia_smi, interval=interval,
                                       flush_every=flush, until_exit=until_exit, samples=samples))


def _seconds(option: str, text: str, expected: str, example: str, *, zero: bool) -> float:
    """A finite number of seconds, above 0 (or 0 too): nan, inf and -1 would never sleep, or sleep forever."""
    value = _decimal(text)
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise bad_option(option, text, expected, example)
    return value


def _whole(option: str, text: str | None, expected: str, example: str) -> int | None:
    """A whole number from 1, or None when the option was left out."""
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise bad_option(option, text, expected, example)
    return int(text)


def _cmd_serve(args: argparse.Namespace) -> int:
    from build_tools.website import serve

    def rebuild() -> object:
        from .build import build  # after the port is taken: a busy one is said before the build is imported

        return build(args.root, settings)

    # One set for the session: a warning already shown is not repeated by the next rebuild unless it changed.
    settings = replace(_settings(), warnings_shown=set(), serving=True)
    return serve.serve(args.root, rebuild, port=args.port,
                       bug=lambda error: _crash_line(args.root, error))


def _cmd_pdf(args: argparse.Namespace) -> int:
    from build_tools.website import pdf

    from .build import build

    settings = _settings()
    layout = Layout(args.root.resolve())
    build(args.root, settings)
    from build_tools.core._progress import Progress

    progress = Progress(stages=2)  # the print edition's two long steps, each shown while it runs and timed
    target = pdf.write_pdf(layout.pages, layout.site, epoch=settings.epoch, step=progress.stage)
    _out.print(f"Wrote the print edition {os.path.relpath(target)}", markup=False)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from build_tools.benchmarks import bench

    return bench.main()


def _cmd_publish(args: argparse.Namespace) -> int:
    from build_tools.editions import edition

    result = edition.publish(args.root, args.edition, branch=args.branch, remote=args.remote, push=args.push,
                             replace=args.replace, settings=_settings())
    if result.outcome == "unchanged":
        _out.print(f"nothing changed: edition {result.edition} on {result.branch} is already this build of "
                   f"{result.commit[:7]}; nothing was replaced", markup=False)
    elif result.outcome == "already":
        _out.print(f"edition {result.edition} is already published on {result.branch} from this commit "
                   f"({result.commit[:7]}, tag {result.tag}): nothing to publish", markup=False)
    else:
        _out.print(f"published edition {result.edition} to branch {result.branch} ({edition.LATEST} is "
                   f"{result.latest}); tagged {result.tag} at {result.commit[:7]}", markup=False)
    if result.pushed_to is None:
        _out.print(f"nothing pushed: pass --push (make publish ... PUSH=1) to push {result.branch} and "
                   f"{result.tag}", markup=False)
    else:
        _out.print(f"pushed {result.branch} and {result.tag} to {result.pushed_to}", markup=False)
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from build_tools.editions import edition

    published, found, (built_with, rebuilt_with) = edition.verify(args.root, args.edition, branch=args.branch)
    tag = edition.tag_name(args.edition)
    if built_with:  # another Python or library: the bytes are compared all the same, and the reader told why
        consequence = "the differences below may come from them" if found else "its bytes are identical all the same"
        _err.print(f"[yellow]WARNING[/yellow] edition {escape(args.edition)} was built with "
                   f"{escape(', '.join(built_with))} and is rebuilt here with {escape(', '.join(rebuilt_with))}: "
                   f"{consequence}")
    if not found:
        counts = ", ".join(f"{len(published.get(key, {}))} {key}" for key in ("runs", "figures", "claims", "pages"))
        _out.print(f"edition {args.edition} rebuilt from tag {tag} is identical to its manifest ({counts})",
                   markup=False)
        return 0
    _out.print(f"edition {args.edition} rebuilt from tag {tag} differs from its manifest in {len(found)} "
               "places:", markup=False)
    for line in found:
        _out.print(f"  {line}", markup=False)
    return EXIT_DIFFERS


def _cmd_diff(args: argparse.Namespace) -> int:
    from build_tools.editions import edition

    _out.print(edition.diff(args.root, args.old, args.new, branch=args.branch), markup=False, end="")
    return 0


PROVE_HELP = ("show every claim able to fail: for each check, a change of its data just past its edge must fail it "
              "and leave every other claim as it was (exit 3 names a check no change fails)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="manual", description=__doc__, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the project folder (default: here)")
    commands = parser.add_subparsers(dest="command", required=True)

    def add(name: str, handler: Callable[[argparse.Namespace], int], text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text)
        sub.set_defaults(handler=handler)
        return sub

    build = add("build", _cmd_build, "build the manual into site/")
    build.add_argument("--jobs", type=int, default=None, help="processes drawing figures (default: all cores)")
    build.add_argument("--force", action="store_true", help="build even when no input changed")
    build.add_argument("--prove", action="store_true", help=PROVE_HELP)
    check = add("check", _cmd_check, "load the runs, summarise those a figure or check reads, check every claim; "
                                      "no figures, no site")
    check.add_argument("--all", action="store_true",
                       help="summarise every run, also those no figure, check or table reads (only validated "
                            "otherwise)")
    check.add_argument("--ray", metavar="ADDRESS", default=None,
                       help="read (hash, validate, summarise) the runs as Ray tasks on the cluster at ADDRESS "
                            "(HOST:PORT), or on a local Ray instance started for the command (local; auto: only "
                            "when the runs to read are many enough for its start-up to pay, else the local pool reads "
                            "them)")
    check.add_argument("--warn-margin", metavar="F", default=None,
                       help="warn of each claim whose margin, as a fraction of its tolerance, is below F "
                            "(default: warn_margin in edition.yml, else no warning)")
    check.add_argument("--prove", action="store_true", help=PROVE_HELP)
    check.add_argument("--strict", action="store_true",
                       help="exit 6 when a claim's margin is below the warning threshold")
    check.add_argument("--format", choices=("text", "github"), default="text",
                       help="github: also print each failing claim and each warning as a GitHub workflow command, "
                            "shown on the caption's line in a pull request")
    add("serve", _cmd_serve, "build, then serve the site on 127.0.0.1:8000").add_argument(
        "--port", type=_port, default=8000, help="the port to serve on (default: 8000)")
    add("compare", _cmd_compare, "set your own run beside the ranges of the Metrics page").add_argument(
        "run", type=Path, help="your run: a Miles dashboard dump (meta.json, metrics.jsonl, ...) or a run folder")
    watch = add("watch", _cmd_watch, "follow a job still writing, against the manual's ranges and claims")
    watch.add_argument("run", type=Path, help="the folder the job writes into: its dashboard dump, its logs")
    watch.add_argument("--format", choices=("live", "jsonl", "github"), default="live",
                       help="live: a table updated in place; jsonl: one JSON object a line per change of an item's "
                            "status; github: a workflow annotation per item outside or not applicable")
    watch.add_argument("--fail-on", choices=("outside",), default=None,
                       help="outside: end at the first item outside its band (exit code 7, as at the end of any "
                            "watch in which something went outside)")
    watch.add_argument("--until-idle", metavar="SECONDS", default=None,
                       help="end, with a summary, when SECONDS pass with no new data (default: the job's end record "
                            "or Ctrl-C ends it)")
    watch.add_argument("--contract", metavar="FILE|URL", default=None,
                       help="the contract to watch against: a published edition's contract.json, by its URL (https) "
                            "or a file, checked against the edition's manifest.json beside it (default: "
                            "site/contract.json of the last build)")
    show = add("show", _cmd_show, "print what the manual reads from a run: sources, setup, steps, phases, events")
    show.add_argument("run", help="a run id of runs/, or a path holding any Miles output")
    table = show.add_mutually_exclusive_group()
    table.add_argument("--csv", action="store_true",
                       help="print the whole per-step table as CSV: a row per step key and step, a column per metric")
    table.add_argument("--long", action="store_true",
                       help="print every value as CSV, one a line: step_key,step,metric,value")
    add_run = add("add-run", _cmd_add_run, "copy a Miles job's outputs into runs/<id>/ and write its run.yaml")
    add_run.add_argument("src", type=Path, help="a dump, a log, a wandb export, a TensorBoard folder, or a folder")
    add_run.add_argument("--id", default="", help="the run id (default: from the sources)")
    record = add("record", _cmd_record, "record host memory and GPU temperature beside a Miles job into lab/")
    record.add_argument("out", type=Path, help="the run folder; streams are written under its lab/")
    # Taken as text and checked by the command: a wrong value is one line, not argparse's usage.
    record.add_argument("--interval", default="1", help="seconds between samples (default 1)")
    record.add_argument("--flush", default="5", help="seconds between writes to disk (default 5)")
    record.add_argument("--until-exit", default=None, metavar="PID", help="stop when PID ends")
    record.add_argument("--samples", default=None, help="stop after this many samples")
    record.add_argument("--meminfo", type=Path, default=Path("/proc/meminfo"), help=argparse.SUPPRESS)
    record.add_argument("--nvidia-smi", default="nvidia-smi", help="the nvidia-smi to run (default: from PATH)")
    add("pdf", _cmd_pdf, "build the manual, then write its print edition site/<edition>.pdf")
    add("bench", _cmd_bench, "time the build's stages and print the ratios")
    publish = add("publish", _cmd_publish, "publish a numbered edition with mike")
    publish.add_argument("edition", nargs="?", default="", help="the edition number, e.g. 2026.10")
    publish.add_argument("--branch", default="gh-pages", help="the branch mike publishes to")
    publish.add_argument("--remote", default=None, help="the remote to push to (with --push)")
    publish.add_argument("--push", action="store_true", help="push the branch and the tag")
    publish.add_argument("--replace", action="store_true", help="replace an edition already published")
    verify = add("verify", _cmd_verify, "rebuild an edition from its tag and compare with its manifest")
    verify.add_argument("edition", nargs="?", default="")
    verify.add_argument("--branch", default="gh-pages")
    diff = add("diff", _cmd_diff, "what changed between two published editions")
    diff.add_argument("old", nargs="?", default="")
    diff.add_argument("new", nargs="?", default="")
    diff.add_argument("--branch", default="gh-pages")
    return parser


def _port(text: str) -> int:
    """A TCP port: a whole number from 1 to 65535."""
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"'{text}' is not a port (a whole number from 1 to 65535)")
    return int(text)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every temporary folder and ref transaction is cleaned up."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


# The reader's commands run on the base install (`pip install` of the package); every other verb builds the manual,
# with the `build` extra of pyproject.toml. Its packages by the module each is imported as (test_reader_install.py holds
# this to the extra).
READER_COMMANDS = ("show", "compare", "watch", "record")
BUILD_MODULES = {"mkdocs": "mkdocs", "material": "mkdocs-material", "mike": "mike", "matplotlib": "matplotlib",
                 "jinja2": "Jinja2", "weasyprint": "weasyprint", "tinyhtml5": "tinyhtml5", "tinycss2": "tinycss2"}


def _require_build(command: str) -> None:
    """A build verb where the build extra is not installed: one line naming what is missing, exit 2."""
    import importlib.util

    missing = [name for module, name in BUILD_MODULES.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise ManualError(f"manual {command} builds the manual, and its build dependencies are not installed here "
                          f"({', '.join(missing)})",
                          "run `make` in a clone (it installs the build extra); the reader's commands (show, compare, "
                          "watch) need only the package")


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit code (0 ok, 2 bad input, 3 a claim failed, 4 verify differs, 1 a bug)."""
    args = _parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate) or signal.SIG_DFL
    try:
        if args.command not in READER_COMMANDS:
            _require_build(args.command)
        code: int = args.handler(args)
        return code
    except ManualError as error:
        return report(error)
    except Terminated:
        _err.print("terminated")
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        _err.print("interrupted")
        return EXIT_INTERRUPTED
    except OSError as error:
        where = _output_path(args.root, error)
        if where is None:
            return _crash(args.root, error)
        reason = error.strerror or type(error).__name__
        _err.print(f"[bold red]ERROR[/bold red] {escape(where)}: cannot write ({escape(reason)}): the build writes "
                   "only into build/ and site/, which must be writable and have free space", soft_wrap=True)
        return EXIT_BAD_INPUT
    except Exception as error:
        return _crash(args.root, error)
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)


def report(error: ManualError) -> int:
    """A user's mistake: `ERROR <message>` and its hint, no traceback; returns its exit code."""
    _err.print(f"[bold red]ERROR[/bold red] {escape(str(error))}")
    if error.hint:
        _err.print(f"[dim]hint:[/dim] {escape(error.hint)}")
    return error.exit_code


# Errors of the disk rather than of a path: the build's outputs cannot be written, wherever it was writing.
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def _output_path(root: Path, error: OSError) -> str | None:
    """The output path (in build/ or site/, or their staging folders) an OSError is about; None when not one."""
    root = root.resolve()
    outputs = (Layout(root).build, Layout(root).site)
    for name in (error.filename, error.filename2):
        if not name:
            continue
        path = Path(os.fsdecode(name)).absolute()
        inside = [o for o in outputs if path == o or o in path.parents]
        staged = root in path.parents and path.relative_to(root).parts[0].startswith(".site-")
        if inside or staged or error.errno in _DISK_ERRNOS:
            return _shown(root, path)
    if error.errno in _DISK_ERRNOS:
        return _shown(root, Layout(root).build)
    return None


def _shown(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix() + ("/" if path.is_dir() else "")
    except ValueError:
        return str(path)


def _crash(root: Path, error: BaseException) -> int:
    """A bug: one line naming it and the file that holds the whole traceback; exit 1."""
    _crash_line(root, error)
    return EXIT_BUG


def _crash_line(root: Path, error: BaseException) -> str:
    """A bug's line (after `ERROR `), printed, its whole traceback saved to the file it names."""
    text = "".join(traceback.format_exception(error))
    name = f"crash-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.txt"
    saved: str
    try:
        folder = Layout(root.resolve()).build
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
        saved = _shown(root.resolve(), folder / name)
    except OSError:
        handle, fallback = tempfile.mkstemp(prefix="manual-crash-", suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        saved = fallback
    message = " ".join(str(error).split())
    what = f"{type(error).__name__}: {message}" if message else type(error).__name__
    line = f"internal error (a bug): {what}; full traceback saved to {saved}"
    _err.print(f"[bold red]ERROR[/bold red] {escape(line)}", soft_wrap=True)
    return line


if __name__ == "__main__":
    sys.exit(main())
