"""Miles' own guidance on its metrics (docs/data/miles_guidance.yml), applied as Miles applies it.

Two kinds of rule. Its dashboard's advisor (miles/dashboard/advisory.py) is run itself, in Miles' process
(build_tools/miles_code/advise.py), over each run's dump as it was written: after each completed rollout it judges
the newest one (the truncated share, with >=), means MFU over at least 3 steps, and tests the KV pool's
conjunction; the manual says after which rollouts Miles would have spoken, in Miles' words, values filled in.
Its Monitoring page's "What to watch" rows are read as written: `grad_norm` is a problem when *repeatedly* at
`clip_grad` (two steps in a row or more), the log-prob difference should be "≪ 1.0" (a tenth of it at most),
`pg_clipfrac` under 0.2. A rule that cannot apply to the runs says why (on a Spark, Miles logs no MFU: its
peak-FLOPs table has no GB10).

Where a Metrics-page row's or a claim's runs go past a rule, `make check` warns (naming the row or the claim,
the runs and steps, and Miles' words, file@commit), and the Metrics page writes a note under the row's table.
Nothing here judges who is right: the manual's numbers are measured, Miles' line is its advice; the reader sees
both.

`refresh` (make miles-guidance MILES=path) reads again, from a Miles checkout, what can be read mechanically:
the advisor's constants (ast, never executed) and the Monitoring table's rows.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_tools.core._escape import Markdown, md_text, terminal_text
from build_tools.core._exceptions import ManualError, display_path
from build_tools.core._files import DOCUMENT_LIMIT, identity
from build_tools.core._numbers import join, number
from build_tools.core._staging import write_atomic
from build_tools.core._types import FigureBlock
from build_tools.ingest.miles_facts.checkout import EXPECTED, checkout_of, git_commit, python_of, refused, source_text
from build_tools.miles_code import HERE, MANIFEST, RUN, follow_dumps

ADVISORY, MONITORING = "miles/dashboard/advisory.py", "docs/user-guide/monitoring.md"  # read of a Miles checkout
TABLE = "miles_guidance"  # docs/data/miles_guidance.yml, as blocks.load_tables names it
# How a rule is applied (the yml's `applies`): Miles' advisor run over the run; the Monitoring page's row read as
# written: at every step, "≪" (at most a tenth of the line), or "repeatedly" (at or over it at two steps in a row).
APPLIES = ("advisor", "every_step", "much_below", "repeatedly")
MUCH = 10.0  # "≪ 1.0" read as: at most a tenth of it
IN_A_ROW = 2  # "repeatedly": at or over the line at this many steps in a row, or more


@dataclass(frozen=True)
class Rule:
    """One line Miles draws: the metric it is about, how it is applied, and Miles' own words."""

    id: str
    metric: str | None
    threshold: float | None
    applies: str
    quote: str
    source: str
    commit: str
    marker: str = ""  # advisor rules: the words every message of the rule holds
    cannot_apply: str = ""  # why the rule cannot apply to runs that lack what it reads (said on the Metrics page)
    direction: str = ""  # the healthy side of the line, below or above (the contract's guidance carries it)
    change: str = ""  # what Miles says a run that passes the line should change ("" when Miles names nothing)

    def cited(self) -> str:
        return f"{self.source}@{self.commit}"


def rules_of(table: Any) -> list[Rule]:
    """The rules the yml describes whole: an `applies` of APPLIES, a metric or an advisor marker."""
    rules = table.get("rules") if isinstance(table, Mapping) else None
    found = []
    for item in rules or []:
        if not isinstance(item, Mapping) or item.get("applies") not in APPLIES:
            continue
        threshold = item.get("threshold")
        found.append(Rule(str(item.get("id", "")), str(item["metric"]) if item.get("metric") else None,
                          float(threshold) if isinstance(threshold, int | float) else None, str(item["applies"]),
                          " ".join(str(item.get("quote", "")).split()), str(item.get("source", "")),
                          str(item.get("commit", "")), str(item.get("marker", "")),
                          " ".join(str(item.get("cannot_apply", "")).split()), str(item.get("direction") or ""),
                          " ".join(str(item.get("change") or "").split())))
    return found


# --- Miles' advisor, run over each run -----------------------------------------------------------------------


@dataclass(frozen=True)
class Followed:
    """What Miles' advisor said of one run, followed as it was written, and the run's metrics as Miles reads
    them."""

    said: tuple[tuple[int | None, tuple[str, ...]], ...]  # (rollout id, or None: the end of the dump; messages)
    series: Mapping[str, tuple[tuple[int, float], ...]]  # metric -> (step, value) in step order
    last_rollout: int | None


# Miles' advisor's answer for one run, by what it read (the run's dump, by content; the metrics; the truncated key),
# kept for this process: every caller (each Metrics row's runs, the claims, what cannot apply) and every rebuild of
# a `make serve` session asks Miles' process only about the runs it has no answer for, each once.
_FOLLOWED: dict[tuple[Any, ...], Followed] = {}
ANSWERS = "miles_advisor.json"  # in build/cache: the answers kept across everyday builds
# Each dump file's digest, kept while its stat says it is the same file (git's index keeps the same: size, mtime
# and ctime in ns, inode, device; a write changes the ctime even when a time stamp is put back): a rebuild hashes
# only the files written since.
_FILE_DIGESTS: dict[tuple[str, int, int, int, int, int], str] = {}


Identity = tuple[int, int, int, int, int]  # core._files.identity: size, mtime and ctime in ns, inode, device


def _file_digest(path: str, stat: os.stat_result) -> str:
    import blake3

    seen = (path, *identity(stat))
    if seen not in _FILE_DIGESTS:
        with open(path, "rb") as handle:
            data = handle.read()
            if identity(os.fstat(handle.fileno())) != seen[1:]:  # written since the walk: these bytes, unkept
                return blake3.blake3(data).hexdigest()
        _FILE_DIGESTS[seen] = blake3.blake3(data).hexdigest()
    return _FILE_DIGESTS[seen]


def _dump_files(folder: str) -> tuple[list[tuple[str, str, os.stat_result]], list[tuple[str, Identity]], bool]:
    """Every file under a dump's folder (name relative to it, path, stat), as Path.rglob finds them (links to files
    followed, links to folders not entered), in name order; each folder walked with its stats; whether any entry
    was a link. One os.scandir walk: a rebuild of 1,000 runs walks every dump, and pathlib's rglob and relative_to
    cost four times as much."""
    found, walked, linked = [], [], os.path.islink(folder)
    folders = [(folder, "", os.stat(folder))]
    while folders:
        here, prefix, info = folders.pop()
        walked.append((here, identity(info)))
        with os.scandir(here) as entries:
            for entry in entries:
                linked = linked or entry.is_symlink()
                if entry.is_dir(follow_symlinks=False):
                    folders.append((entry.path, f"{prefix}{entry.name}/", entry.stat(follow_symlinks=False)))
                elif entry.is_file():
                    found.append((f"{prefix}{entry.name}", entry.path, entry.stat()))
    return sorted(found, key=lambda file: file[0].split("/")), walked, linked  # as Paths sort: part by part


# A dump's files by content, kept while its run's input hash (the walk of runs/ hashes every plain file of a run:
# the dump's too) and the stats of the dump's folders (an entry added, removed or renamed changes its folder's)
# are as they were: a rebuild of 1,000 runs then stats a folder or two a run, not ten thousand files. A dump
# holding a link is walked every time: what a link names need not be among the files the run's hash covers.
_DUMP_FILES: dict[str, tuple[str, list[tuple[str, Identity]], tuple[tuple[str, str], ...]]] = {}


def _files_by_content(folder: str, digest: str | None) -> tuple[tuple[str, str], ...]:
    held = _DUMP_FILES.get(folder) if digest else None
    if held is not None and held[0] == digest and all(_same_folder(path, seen) for path, seen in held[1]):
        return held[2]
    found, walked, linked = _dump_files(folder)
    files = tuple((name, _file_digest(file, stat)) for name, file, stat in found)
    if digest and not linked:
        _DUMP_FILES[folder] = (digest, walked, files)
    return files


def _same_folder(path: str, seen: Identity) -> bool:
    try:
        return identity(os.stat(path)) == seen
    except OSError:
        return False


def _dump_key(run: str, path: Path, metrics: Sequence[str], truncated: str,
              digest: str | None = None) -> tuple[Any, ...]:
    """What the advisor reads of one run, by content: every file of its dump (a time stamp can stay the same
    across an edit, and the advisor reads meta.json and the gzipped streams too), so a kept answer is never
    another dump's. `digest`: the run's input hash, as this build's walk of runs/ found it."""
    return run, str(path), _files_by_content(str(path), digest), tuple(metrics), truncated


def _answer_of(data: Any) -> Followed:
    """One run's part of the advisor's answer, as the manual reads it; ValueError for one not of its shape (a kept
    answer read back from build/cache is checked as closely as Miles' process is trusted: shape and types)."""
    try:
        said = tuple((moment["step"], tuple(a["message"] for a in moment["advisories"])) for moment in data["said"])
        series = {metric: tuple((int(x), float(y)) for x, y in pairs) for metric, pairs in data["series"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"not an answer of Miles' advisor: {error}") from None
    if not all((step is None or type(step) is int) and all(isinstance(m, str) for m in messages)
               for step, messages in said) or not all(isinstance(metric, str) for metric in series):
        raise ValueError("not an answer of Miles' advisor: a step or a message of another type")
    return Followed(said, series, max((step for step, _ in said if step is not None), default=None))


def _code_key() -> bytes:
    """The Miles code that answers (its manifest, the harness, the stand-ins, the advisor's task), as one hash."""
    digest = hashlib.sha256()
    for path in (MANIFEST, RUN, HERE / "stand_ins.py", HERE / "advise.py"):
        digest.update(path.read_bytes())
    return digest.digest()


def _kept_key(key: tuple[Any, ...]) -> str:
    return hashlib.sha256(_code_key() + repr(key).encode("utf-8")).hexdigest()


def _read_kept(cache: Path, keys: Mapping[str, tuple[Any, ...]]) -> dict[str, Any]:
    """The answers build/cache keeps for these keys (by run), each checked; a file that cannot be read, or an
    entry not of an answer's shape, is asked again, never trusted."""
    try:
        loaded = json.loads(cache.read_bytes()) if cache.is_file() else {}
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    found = {}
    for key in keys.values():
        data = loaded.get(_kept_key(key))
        try:
            _FOLLOWED[key] = _answer_of(data)
        except ValueError:
            continue
        found[_kept_key(key)] = data
    return found


def follow(dumps: Mapping[str, Path], metrics: Sequence[str], truncated: str,
           cache: Path | None = None, digests: Mapping[str, str] | None = None) -> dict[str, Followed]:
    """Miles' advisor over each run's dashboard dump (run id -> its folder), in Miles' own process; with the
    metrics named, as Miles' MetricStore reads them. The runs with no kept answer go to one process. Answers are
    kept for this process and, with `cache` (a JSON file of build/cache; never for an edition's build), across
    builds: by each dump's content and the Miles code that answered. `digests`: each run's input hash, as this
    build's walk of runs/ found it (RunsRead.digests), by which a dump unchanged is not walked again."""
    digests = digests or {}
    keys = {run: _dump_key(run, path, metrics, truncated, digests.get(run)) for run, path in sorted(dumps.items())}
    missing = {run: key for run, key in keys.items() if key not in _FOLLOWED}
    kept: dict[str, Any] = {}
    if missing and cache is not None:
        kept = _read_kept(cache, missing)
        missing = {run: key for run, key in missing.items() if key not in _FOLLOWED}
    if missing:
        answer = follow_dumps([{"run_id": run, "dashboard": str(dumps[run]), "truncated_key": truncated,
                                "series": list(metrics)} for run in missing])
        for run, data in answer.items():
            if run in missing:
                _FOLLOWED[missing[run]] = _answer_of(data)
        if cache is not None:
            fresh = {_kept_key(missing[run]): data for run, data in answer.items() if run in missing}
            cache.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(cache, json.dumps({**_all_kept(cache), **kept, **fresh}, sort_keys=True).encode("utf-8"))
    return {run: _FOLLOWED[key] for run, key in keys.items() if key in _FOLLOWED}


def _all_kept(cache: Path) -> dict[str, Any]:
    """Every entry the file keeps (other runs' answers stay kept when these are added)."""
    try:
        loaded = json.loads(cache.read_bytes()) if cache.is_file() else {}
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def steps_in_words(steps: Sequence[int]) -> str:
    """'0 to 7', '3', '1, 4 and 6 to 9': consecutive steps as a span."""
    spans: list[list[int]] = []
    for step in sorted(steps):
        if spans and step == spans[-1][-1] + 1:
            spans[-1].append(step)
        else:
            spans.append([step])
    return join(f"{span[0]} to {span[-1]}" if len(span) > 2 else
                (f"{span[0]} and {span[1]}" if len(span) == 2 else str(span[0])) for span in spans)


# --- findings ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """A row or claim of the manual whose runs Miles would flag by one of its rules."""

    where: str  # docs/data/metrics.yml tables[1].rows[2], or docs/01-step.md:108 figure 1.3 checks[1] (...)
    table: int | None  # the Metrics page's table the note goes under (None for a claim)
    rule: Rule
    text: str  # what Miles would have said or what its page calls unhealthy, with the runs and steps
    runs: tuple[str, ...] = ()  # the runs the row or claim reads (those the rule was applied to)
    title: str = ""  # the title of the Metrics page's table the note goes under
    action: str = ""  # whether the author must act, and what a reader whose runs do this would change

    def warning(self) -> str:
        cited = f"{self.where}: {self.text} ({self.rule.cited()})"
        return f"{cited}. {self.action}" if self.action else cited

    def note(self) -> Markdown:
        return md_text(f"{self.text} ({self.rule.cited()}).")


def _advisor_text(rule: Rule, followed: Mapping[str, Followed]) -> str | None:
    """After which rollouts of which runs the advisor spoke by this rule, quoting its first and last message."""
    by_run: dict[str, list[int]] = {}
    messages: list[tuple[str, str]] = []
    for run, seen in followed.items():
        for step, said in seen.said:
            for message in said:
                if rule.marker and rule.marker in message and step is not None:
                    by_run.setdefault(run, []).append(step)
                    messages.append((run, message))
    if not by_run:
        return None
    groups: dict[tuple[tuple[int, ...], bool], list[str]] = {}
    for run, steps in by_run.items():
        final = followed[run].last_rollout
        groups.setdefault((tuple(steps), final is not None and max(steps) < final), []).append(run)
    where = join(f"after rollout{'s' if len(steps) > 1 else ''} {steps_in_words(steps)} of {join(runs)}"
                 + (", never after" if quiet_after else "") for (steps, quiet_after), runs in groups.items())
    first, last = messages[0], messages[-1]
    quoted = f'"{first[1]}" ({first[0]})' if first == last else \
        f'first "{first[1]}" ({first[0]}), last "{last[1]}" ({last[0]})'
    return f"Miles' advisor, run over each run as it was written, warns {where}: {quoted}"


def _monitoring_text(rule: Rule, followed: Mapping[str, Followed], decimals: int | None) -> str | None:
    """Where the runs' values leave the healthy pattern of a Monitoring row, read as written."""
    assert rule.metric is not None and rule.threshold is not None
    line = rule.threshold / MUCH if rule.applies == "much_below" else rule.threshold
    parts, worst = [], None
    for run, seen in followed.items():
        pairs = seen.series.get(rule.metric, ())
        past = [step for step, value in pairs if value >= line]
        if not past:
            continue
        if rule.applies == "repeatedly":
            row = _longest_row(past)
            if row < IN_A_ROW:
                continue
            parts.append(f"{number(len(past))} of {number(len(pairs))} steps of {run} ({number(row)} in a row at most)")
        else:
            parts.append(f"step{'s' if len(past) > 1 else ''} {steps_in_words(past)} of {run}")
        top = max(value for _, value in pairs)
        worst = top if worst is None else max(worst, top)
    if not parts or worst is None:
        return None
    shown = f"{worst:g}" if decimals is None else number(worst, decimals)
    if rule.applies == "repeatedly":
        return (f"{rule.metric} is at or over {rule.threshold!r} at {join(parts)}, up to {shown}: what Miles' "
                f"Monitoring page calls unhealthy (\"{rule.quote}\")")
    wanted = f"≪ {rule.threshold!r}, read as under {line:g}" if rule.applies == "much_below" else \
        f"under {rule.threshold!r}"
    return f"{rule.metric} should stay {wanted} (\"{rule.quote}\"); it reaches {shown}, at {join(parts)}"


# Whether the author must act on a finding, in the words of the manual's stance (the docstring above): Miles' line is
# advice on the runs, the manual's numbers are measured, and the reader is to see both.
SHOWN = ("Nothing to do: this is Miles' advice on the runs, not a fault of the {what} (its numbers are measured), and "
         "the Metrics page shows it under its table \"{title}\"{row}, so the reader sees both. ")
UNSHOWN = ("To do: no page shows the reader this advice; add a row for {metric} over these runs to {spec} (the Metrics "
           "page then shows it under the row's table), or say it beside figure {figure} in {chapter}. ")


def _for_a_reader(rule: Rule) -> str:
    """What a reader whose own runs pass the line would change, in Miles' words (the yml's `change`)."""
    if rule.change:
        return f"A reader whose runs do this would change what Miles names: {rule.change}."
    return "A reader whose runs do this: Miles names no change for it, only the red flag."


def _row_action(rule: Rule, title: str) -> str:
    return SHOWN.format(what="manual", title=title, row="") + _for_a_reader(rule)


def _claim_action(rule: Rule, block: FigureBlock, runs: Sequence[str], rows: Sequence[Finding], spec: str) -> str:
    """Nothing to do when a Metrics row's note shows the reader the same rule over these runs; else what to add."""
    row = next((row for row in rows if row.rule.id == rule.id and set(runs) <= set(row.runs)), None)
    if row is not None:
        return SHOWN.format(what="claim", title=row.title, row=f" ({row.where})") + _for_a_reader(rule)
    return UNSHOWN.format(metric=rule.metric, spec=spec, figure=block.number, chapter=block.chapter_file) + \
        _for_a_reader(rule)


def _longest_row(steps: Sequence[int]) -> int:
    longest = run = 0
    previous = None
    for step in sorted(steps):
        run = run + 1 if previous is not None and step == previous + 1 else 1
        longest, previous = max(longest, run), step
    return longest


def _text(rule: Rule, followed: Mapping[str, Followed], decimals: int | None) -> str | None:
    if rule.applies == "advisor":
        return _advisor_text(rule, followed) if rule.metric else None
    return _monitoring_text(rule, followed, decimals)


@dataclass(frozen=True)
class RunsFolder:
    """runs/ as this build's walk found it: its folder, and each run's input hash (RunsRead.digests), by which a
    rebuild takes an unchanged dump's files without walking it (_files_by_content)."""

    path: Path
    digests: Mapping[str, str]


def _dumps(runs: Iterable[Any], runs_dir: Path | RunsFolder | None) -> dict[str, Path]:
    """The runs that have a Miles dashboard dump (what Miles' advisor reads), by id."""
    if runs_dir is None:
        return {}
    folder = runs_dir.path if isinstance(runs_dir, RunsFolder) else runs_dir
    return {run.run_id: folder / run.run_id / "dashboard" for run in runs
            if (folder / run.run_id / "dashboard" / "meta.json").is_file()}


def _followed(rules: Sequence[Rule], runs: Iterable[Any], runs_dir: Path | RunsFolder | None,
              cache: Path | None = None) -> dict[str, Followed]:
    metrics = sorted({rule.metric for rule in rules if rule.metric})
    truncated = next((rule.metric for rule in rules if rule.id == "truncated_share" and rule.metric),
                     "rollout/truncated")
    dumps = _dumps(runs, runs_dir)
    digests = runs_dir.digests if isinstance(runs_dir, RunsFolder) else None
    return follow(dumps, metrics, truncated, cache, digests) if dumps else {}


def of_metrics_rows(spec: Mapping[str, Any], summaries: Mapping[str, Any], rules: Sequence[Rule],
                    runs_dir: Path | RunsFolder | None, where: str = "docs/data/metrics.yml",
                    cache: Path | None = None) -> list[Finding]:
    """Each Metrics-page row with a range whose runs Miles would flag by the rule for its metric."""
    from build_tools.summarise.metric_rows import select

    by_metric = {rule.metric: rule for rule in rules if rule.metric}
    sets = spec.get("run_sets") or {}
    found = []
    for t_index, table in enumerate(spec.get("tables") or []):
        for r_index, row in enumerate(table.get("rows") or []):
            rule = by_metric.get(str(row.get("metric")))
            if rule is None or not table.get("column") or row.get("runs") not in sets:
                continue
            selected = select(summaries, sets[row["runs"]] or {})
            followed = _followed(rules, selected, runs_dir, cache)
            text = _text(rule, followed, int(row.get("decimals", 2)))
            if text is not None:
                title = str(table.get("title", ""))
                found.append(Finding(f"{where} tables[{t_index}].rows[{r_index}]", t_index, rule, text,
                                     tuple(run.run_id for run in selected), title, _row_action(rule, title)))
    return found


def of_claims(blocks: Sequence[FigureBlock], summaries: Mapping[str, Any], rules: Sequence[Rule],
              runs_dir: Path | RunsFolder | None, rows: Sequence[Finding] = (),
              spec: str = "docs/data/metrics.yml") -> list[Finding]:
    """Each figure check about a metric whose runs Miles would flag by the rule for it; `rows`: the Metrics page's
    findings (of_metrics_rows), whose notes may already show the reader the same advice."""
    by_metric = {rule.metric: rule for rule in rules if rule.metric}
    found = []
    for block in blocks:
        for index, check in enumerate(block.checks):
            rule = by_metric.get(str(check.get("metric")))
            if rule is None:
                continue
            runs = check.get("runs") or block.runs
            followed = _followed(rules, [summaries[run] for run in runs if run in summaries], runs_dir)
            text = _text(rule, followed, None)
            if text is not None:
                says = str(check.get("says", ""))
                found.append(Finding(f"{block.chapter_file}:{block.line} figure {block.number} checks[{index}] "
                                     f"({says!r})", None, rule, text, tuple(runs), "",
                                     _claim_action(rule, block, runs, rows, spec)))
    return found


def notes_by_table(spec: Mapping[str, Any], summaries: Mapping[str, Any], table: Any,
                   runs_dir: Path | RunsFolder | None, cache: Path | None = None) -> dict[int, list[Markdown]]:
    """The Metrics page's notes: under each table, one per row Miles would flag."""
    notes: dict[int, list[Markdown]] = {}
    for finding in of_metrics_rows(spec, summaries, rules_of(table), runs_dir, cache=cache):
        if finding.table is not None:
            notes.setdefault(finding.table, []).append(finding.note())
    return notes


def cannot_apply(summaries: Mapping[str, Any], table: Any, runs_dir: Path | RunsFolder | None,
                 cache: Path | None = None) -> list[Markdown]:
    """The advisor's rules none of the runs can be judged by (what each reads is in none of their dumps), each
    with why: said once on the Metrics page."""
    rules = [rule for rule in rules_of(table) if rule.applies == "advisor" and rule.cannot_apply]
    followed = _followed(rules_of(table), summaries.values(), runs_dir, cache)
    found = []
    for rule in rules:
        logged = rule.metric is not None and any(seen.series.get(rule.metric) for seen in followed.values())
        spoke = any(rule.marker and rule.marker in message for seen in followed.values()
                    for _, said in seen.said for message in said)
        if not logged and not spoke:
            found.append(md_text(f"{rule.cannot_apply} ({rule.cited()})."))
    return found


# --- make miles-guidance MILES=path: what a Miles checkout says, read again ------------------------------------


def _read(miles: Path, path: str) -> str:
    """A file of a Miles work tree (a plain UTF-8 file inside it), or of a bare git folder's HEAD (the snapshot the
    manual is checked against); ManualError naming it."""
    if os.path.lexists(miles / path) or not (miles / "HEAD").is_file():
        return source_text(miles, path)
    try:
        done = subprocess.run(["git", "-C", str(miles), "show", f"HEAD:{path}"], capture_output=True, check=False,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ManualError(f"{display_path(miles)}: cannot run git to read HEAD:{path} ({error})") from None
    where = f"{display_path(miles)}@HEAD:{path}"
    if done.returncode != 0:
        raise ManualError(f"{where}: not in this git folder: {EXPECTED}")
    if len(done.stdout) > DOCUMENT_LIMIT:
        raise ManualError(f"{where}: is {len(done.stdout):,} bytes, above the limit of {DOCUMENT_LIMIT:,} bytes")
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError as error:
        line = done.stdout[:error.start].count(b"\n") + 1
        raise ManualError(f"{where}:{line}: not UTF-8 text") from None


def _commit(miles: Path) -> str | None:
    return git_commit(miles, "--short=9")


def advisor_constants(source: str, where: str = "miles/dashboard/advisory.py") -> dict[str, float]:
    """The module-level number constants of advisory.py (NAME = 0.5), read with ast: never run. A constant that is
    no finite double (a 400-digit integer, 1e999) is one line naming it (ManualError)."""
    found: dict[str, float] = {}
    for node in python_of(source, where).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int | float)
                and not isinstance(node.value.value, bool)):
            found[node.targets[0].id] = _finite(node.value.value, f"{where}:{node.lineno}: {node.targets[0].id}")
    return found


def _finite(value: int | float, where: str) -> float:
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        shown = f"a whole number of {len(str(abs(value)))} digits" if isinstance(value, int) and \
            abs(value) < 10**4000 else repr(value) if isinstance(value, float) else "a whole number too large"
        raise ManualError(f"{where}: {shown} is no threshold: expected a finite number")
    return number


FIRST_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def watch_rows(markdown: str) -> dict[str, tuple[str, float | None]]:
    """The "What to watch" table: signal (its first cell, without backticks) -> (the row as written, the first
    number of its "Healthy pattern" cell)."""
    section = markdown.split("## What to watch", 1)[1].split("\n## ", 1)[0] if "## What to watch" in markdown else ""
    rows: dict[str, tuple[str, float | None]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.lstrip().startswith("|") or set(cells[0]) <= set("-: ") or cells[0] == "Signal":
            continue
        number_match = FIRST_NUMBER.search(cells[1])
        found = float(number_match[0]) if number_match else None  # ASCII digits: never an overflow, at most inf
        rows[cells[0].strip("`")] = (" | ".join(cells), found if found is None or math.isfinite(found) else None)
    return rows


def refresh(miles: Path, guidance: Path) -> list[str]:
    """docs/data/miles_guidance.yml with what the checkout says; the lines that changed, for the terminal."""
    import yaml

    text = guidance.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    doc = yaml.safe_load(text)
    constants = advisor_constants(_read(miles, ADVISORY), display_path(miles / ADVISORY))
    rows = watch_rows(_read(miles, MONITORING))
    commit = _commit(miles)
    changed: list[str] = []
    for rule in doc["rules"]:
        new = dict(rule)
        if rule.get("constant"):
            if rule["constant"] not in constants:
                changed.append(f"{rule['id']}: {rule['constant']} is no longer in advisory.py; kept as it was")
                continue
            new["threshold"] = constants[rule["constant"]]
        elif rule.get("signal"):
            if rule["signal"] not in rows:
                changed.append(f"{rule['id']}: no row {rule['signal']!r} in the Monitoring table; kept as it was")
                continue
            new["quote"], found = rows[rule["signal"]]
            if rule.get("threshold") is not None and found is not None:
                new["threshold"] = found
        if commit:
            new["commit"] = commit
        changed += [f"{rule['id']}: {key} {rule.get(key)!r} -> {new[key]!r}"
                    for key in new if new[key] != rule.get(key)]
        rule.update(new)
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=116)
    guidance.write_text(header + body, encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """`make miles-guidance MILES=path` (python -m build_tools.checking.miles_guidance PATH)."""
    args = list(sys.argv[1:] if argv is None else argv)
    where = args[0] if args else os.environ.get("MILES", "")
    try:
        changed = refresh(checkout_of(where, "miles-guidance"), Path("docs/data/miles_guidance.yml"))
    except ManualError as error:
        return refused(error)
    print(terminal_text("\n".join(changed) if changed else "docs/data/miles_guidance.yml: unchanged"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
