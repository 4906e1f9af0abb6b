"""The values that pass between the stages of the build.

Every stage imports its inputs' types from here, never from the stage that made them, so imports flow one way
down the stages (tests/test_imports.py). `RunSummary` is what the summary stage makes of a run and every later
stage reads (through readers.py); `ValidatedRun` what it keeps of a run nothing reads.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

Status = Literal["pass", "fail"]


@dataclass
class Record:
    """One validated line of a stream, with where it came from (for messages further down)."""

    data: dict[str, Any]
    file: str
    line: int


@dataclass
class Columns:
    """Validated lines of a stream read as columns (_columnar.py): one row per line, the lines of one or more
    files in order. Row i is line `first_lines[k] + i - starts[k]` of `files[k]`, k the last piece starting
    at or before i."""

    table: pa.Table
    files: list[Path]
    first_lines: list[int]
    starts: list[int]

    def where(self, row: int) -> tuple[str, int]:
        """The file (as messages name it) and line of a row."""
        from build_tools.core._exceptions import display_path

        piece = bisect.bisect_right(self.starts, row) - 1
        return display_path(self.files[piece]), self.first_lines[piece] + row - self.starts[piece]


@dataclass
class RunData:
    """A run as found on disk: its configuration and the validated records of each stream."""

    run_id: str
    root: Path
    config: dict[str, Any]
    meta: dict[str, Any]
    # How the loader holds a stream; a reader of the run reaches every stream one way, whichever reader read
    # its lines: load.records(run, stream) (every record, as written), or the summary's columns where it has them.
    # Lines read one by one (small files, lines the columns could not accept, the other sources' records).
    streams: dict[str, list[Record]] = field(default_factory=dict)
    # Lines read as columns, in file order (_columnar.py). Each file is read one way, all lines or all columns; a
    # stream of `_columnar.NESTED_STREAMS` (metrics, phases) is all records or all columns.
    tables: dict[str, list[Columns]] = field(default_factory=dict)
    # The files of each stream read from the run's folders, in the order they were read.
    files: dict[str, list[Path]] = field(default_factory=dict)
    # Sampled streams whose columns the summary took as it made their frames (a stream is never held twice).
    taken: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    # A run only validated (load_run keep=False) keeps no sampled stream, only each one's last sample time; so
    # does a run whose series were written to its cache entry as each stream was read (load_run on_sampled).
    last_samples: dict[str, float] = field(default_factory=dict)
    # Every argument a log printed of the launch (its command line, Megatron's argument list): more than meta.json's
    # args, which Miles' dashboard limits to its _SNAPSHOT_KEYS.
    launched: dict[str, Any] = field(default_factory=dict)
    # What a source said of the job itself beyond its arguments: "miles_commit" -> (the commit, the file saying
    # it), from an MLflow run's tags or the environment report a log printed (make add-run fills run.yaml with it).
    origin: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Stamp:
    """The edition stamp on every page's footer, from edition.yml (stamp.py reads it)."""

    edition: str
    date: str
    image: str
    branch: str
    commit: str
    commit_date: str

    @property
    def text(self) -> str:
        """The footer line, e.g. 'Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · ...'."""
        return (f"Miles {self.image}, Miles {self.branch} of {self.commit_date} · {self.commit} · "
                f"{self.date} · Edition {self.edition}")


@dataclass(frozen=True)
class FigureBlock:
    """A figure as declared in a chapter: what it draws, from which runs, and the claim its caption makes."""

    id: str  # for cross references: [](#fig-step-order) style links resolve to the number
    number: str  # "1.3": chapter number and position in the chapter, never typed by hand
    chapter_file: str  # the chapter's path as the user sees it (docs/01-step.md)
    line: int  # line of the block's opening fence in that file
    module: str  # figures/<module>.py draws it
    runs: tuple[str, ...]  # the run ids it reads
    claim: str  # the caption, verbatim; it lives here and nowhere else
    checks: tuple[dict[str, Any], ...]  # the declarative checks that prove the claim
    alt: str = ""  # alt text; the figure module's default is used when empty
    tables: tuple[str, ...] = ()  # data tables from docs/data/ it reads (e.g. troubleshooting)
    options: dict[str, Any] = field(default_factory=dict)  # extra, figure-specific settings
    prose: tuple[str, ...] = ()  # idioms where a number word is not a quantity ("every one of")


@dataclass(frozen=True)
class DrawnFigure:
    """Where a figure's files were written."""

    block_id: str
    number: str
    svg: Path
    csv: Path
    alt: str
    redrawn: bool  # False when the cache held it


@dataclass(frozen=True)
class Margin:
    """How far a check's observed number is from failing it (build_tools/checking/checks/_margin.py computes it).

    headroom: how far the value can move, in `unit`, before the check fails (negative when it fails);
    edge: the value at which it fails (the nearer edge); fraction: headroom over the tolerance's half-width,
    or over the limit for a one-sided one (None where there is no such scale: an exact count, a limit of 0);
    value: the observed value at the worst place; worst: what that place is (a run, a run's step, a sample),
    None for one statistic pooled over the runs.
    """

    headroom: float
    edge: float
    unit: str
    fraction: float | None
    value: float
    worst: str | None = None


@dataclass(frozen=True)
class CheckResult:
    name: str  # the check's registered name
    status: Status
    observed: Any  # JSON-serialisable; what the data shows
    expected: str  # what the claim needs, with its tolerance, in words
    message: str  # one line for a human, e.g. 'first-window mean is 655 tokens, expected 720 +/- 36'
    binds: tuple[str, ...] = ()  # the numbers of the claim text this check accounts for
    margin: Margin | None = None  # None for a check that compares no number (a setting equals)


@dataclass(frozen=True)
class ClaimVerdict:
    block: FigureBlock
    status: Status
    checks: tuple[CheckResult, ...]
    problems: tuple[str, ...] = ()  # claim-level failures that are not a check (unbound number, ...)


@dataclass
class RunSummary:
    """What the manual reads of one run; figures, checks and tables read its values through readers.py."""

    run_id: str
    config: dict[str, Any]
    steps: pd.DataFrame  # index `step` (rollout id); metric keys, `phase/<name>` seconds, `t0`, `t1`, `heat_touched`
    phases: pd.DataFrame  # name, t0, t1, step, role, rank, node, gpus
    events: pd.DataFrame  # kind, t0, t1, detail
    series: dict[str, pd.DataFrame]  # the sampled streams (gpu_util, host_memory, held_memory, ...)
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    source_hash: str = ""
    # The step axes not merged into `steps` (eval/step; train/step when a rollout has several optimizer steps),
    # by step key: index `step` (that axis' own), `rollout` (the rollout id of `steps` it joins), its metrics.
    axes: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def clean_steps(self) -> pd.DataFrame:
        """Steps no heat-guard pause touched: the only ones whose time values the manual quotes."""
        return self.steps[~self.steps["heat_touched"]]


@dataclass(frozen=True)
class MetricFacts:
    """What the Metrics page's statistics read of one metric of one run, over the rows of the metric's table
    (the per-step table, or its own step axis': readers.table_of): the same facts whether the run was summarised
    (taken from its summary) or only validated (taken while validating it), made by one function
    (summary.metric_facts)."""

    logged: bool  # the metric is a column of its table
    steps: int  # the rows of its table (of the per-step table when the run does not log the metric)
    present: int  # its values that are not NaN
    low: float | None  # the least and greatest of them (None when there is none)
    high: float | None
    zeros: int  # how many of them are 0
    first: float | None  # the first of them, at the first step that has one
    first_step: int | None
    non_finite: dict[str, str] = field(default_factory=dict)  # step -> "NaN" / "Infinity" / "-Infinity" logged


@dataclass
class ValidatedRun:
    """What is kept of a run that passed its checks without being summarised: enough for the edition's
    checks of every run (its Miles commit, its dates), for deciding whether a table reads it, and for the pages
    that read it without its summary: the rows of its per-step table (`steps`) and the facts of the metrics the
    Metrics page names (`metrics`, by metric)."""

    run_id: str
    config: dict[str, Any]
    start_ts: float
    end_ts: float
    warnings: list[str] = field(default_factory=list)
    steps: int = 0
    metrics: dict[str, MetricFacts] = field(default_factory=dict)


@dataclass
class RunsRead:
    """What one summarise_runs found of runs/: each run folder's files, as its walk listed them (`_files.scan_runs`:
    name, size, mtime and ctime in ns, inode, device), and the input hash of each run it read or took from the
    memo, by run id. The key of the inputs recorded after a check or build is made from these (store/uptodate.py),
    not from a second walk of every file."""

    listings: dict[str, list[tuple[str, int, int, int, int, int]]] = field(default_factory=dict)  # _files.FileStat
    digests: dict[str, str] = field(default_factory=dict)


@dataclass
class BuildResult:
    """What a build made: the summaries, the blocks, their verdicts, the figures drawn and the claims report."""

    summaries: dict[str, RunSummary]  # the runs a figure, check or table reads (every run with all_runs)
    blocks: list[FigureBlock]
    verdicts: list[ClaimVerdict]
    figures: list[DrawnFigure] = field(default_factory=list)
    report_lines: list[str] = field(default_factory=list)
    validated: dict[str, ValidatedRun] = field(default_factory=dict)  # the runs nothing reads: checked only
    warnings: list[str] = field(default_factory=list)  # those of the runs and the cache, shown as it ran
    runs_read: RunsRead | None = None  # the listing of runs/ and each run's input hash: for the inputs' key
    unread: int = 0  # of the validated runs, those nothing reads, not even the Metrics page by their facts
