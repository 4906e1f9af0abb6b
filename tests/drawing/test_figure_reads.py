"""build_tools/drawing/reads.py: each figure is keyed on what its draw() read of its runs. Tested for every figure of
the manual (the chapters' blocks, read from the source), both ways: an edit to nothing a figure read (a run's title)
leaves its key and its cached files, which equal a fresh drawing's byte for byte; an edit to any one thing it read
changes its key."""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from build_tools.checking.blocks import load_tables
from build_tools.core._layout import PROJECT
from build_tools.core._types import RunSummary
from build_tools.drawing import draw, reads
from build_tools.store import summary_cache
from build_tools.summarise.summary import summarise_runs
from tests.conftest import manual_blocks

ROOT = Path(__file__).resolve().parents[2]
ADDED = "added-by-the-test"


@dataclasses.dataclass
class Drawn:
    """The example runs copied and summarised through a summary cache, every figure of the manual drawn once."""

    root: Path
    blocks: list[Any]
    tables: dict[str, Any]
    summaries: dict[str, RunSummary]
    entries: dict[str, dict[str, Any]]  # each figure's cache entry (its .key), by block id

    def draw(self, out: str, cache: str = "figures") -> dict[str, bool]:
        """Every figure drawn into `out` from the figure cache `cache`; whether each was redrawn, by block id."""
        drawn = draw.draw_figures(self.blocks, self.summaries, self.tables, self.root / out,
                                  self.root / "cache" / cache, jobs=2, layout=PROJECT)
        return {figure.block_id: figure.redrawn for figure in drawn}

    def summarise(self) -> None:
        self.summaries = summarise_runs(self.root / "runs", self.root / "cache" / "summaries")

    def read_entries(self) -> None:
        self.entries = {block.id: json.loads((self.root / "cache" / "figures" / f"{block.id}.key").read_text())
                        for block in self.blocks}


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Drawn:
    root = tmp_path_factory.mktemp("figure-reads")
    shutil.copytree(ROOT / "runs", root / "runs")
    state = Drawn(root, manual_blocks(), load_tables(ROOT / "docs" / "data"), {}, {})
    state.summarise()
    assert all(state.draw("first").values())
    state.read_entries()
    return state


def test_every_figure_records_what_it_read_of_each_of_its_runs(drawn):
    """A figure that names a run reads something of it (its steps, a series, a field), and its entry says what."""
    for block in drawn.blocks:
        read = drawn.entries[block.id]["reads"]
        assert sorted(read) == sorted(block.runs), block.id
        assert all(read[run_id] for run_id in block.runs), block.id
        assert reads.from_lists(read, block.runs) is not None, block.id


def test_a_retitled_run_redraws_no_figure_that_does_not_show_its_title_and_the_cache_equals_a_fresh_draw(drawn):
    """Every run's title changed in its run.yaml, and one field a figure reads (the first number with a fraction
    any figure reads, of the recorded reads): the key changes of exactly the figures that read that field of that
    run (or a title), no other figure is drawn again, and every figure's files from the warm cache are byte for
    byte those drawn afresh from an empty cache."""
    read_runs = sorted({run_id for block in drawn.blocks for run_id in block.runs})
    for run_id in read_runs:
        run_yaml = drawn.root / "runs" / run_id / "run.yaml"
        lines = run_yaml.read_text(encoding="utf-8").splitlines(keepends=True)
        assert sum(line.startswith("title:") for line in lines) == 1, run_id
        run_yaml.write_text("".join(f"title: Retitled by the test, {run_id}\n" if line.startswith("title:") else line
                                    for line in lines), encoding="utf-8")
    run_id, path = _a_fraction_read(drawn)
    run_yaml = drawn.root / "runs" / run_id / "run.yaml"
    config = yaml.safe_load(run_yaml.read_text(encoding="utf-8"))
    parent = config
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = round(parent[path[-1]] * 0.98, 4)
    run_yaml.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    before = {rid: summary.config for rid, summary in drawn.summaries.items()}
    drawn.summarise()
    changed = {(rid, key) for rid in read_runs for key in {*before[rid], *drawn.summaries[rid].config}
               if before[rid].get(key) != drawn.summaries[rid].config.get(key)}
    assert changed == {*((rid, "title") for rid in read_runs), (run_id, path[0])}  # the edits took, and only they

    keys = {block.id: drawn.entries[block.id]["key"] for block in drawn.blocks}
    redrawn = drawn.draw("warm")
    drawn.read_entries()
    rekeyed = {block.id for block in drawn.blocks if drawn.entries[block.id]["key"] != keys[block.id]}
    reading = {block.id for block in drawn.blocks if ["config", "value", *path] in _reads(drawn, block.id, run_id)}
    titled = {block.id for block in drawn.blocks for rid in block.runs
              if ["config", "value", "title"] in _reads(drawn, block.id, rid)}
    assert reading and rekeyed == reading | titled
    assert {block_id for block_id, again in redrawn.items() if again} <= reading | titled
    assert all(drawn.draw("fresh", cache="fresh").values())  # an empty cache: every figure drawn
    assert _files(drawn.root / "warm") == _files(drawn.root / "fresh")
    assert _files(drawn.root / "warm") != _files(drawn.root / "first")  # the field's edit reached its figures


def _reads(drawn: Drawn, block_id: str, run_id: str) -> list[list[Any]]:
    return list(drawn.entries[block_id]["reads"].get(run_id, []))


def _a_fraction_read(drawn: Drawn) -> tuple[str, list[str]]:
    """The first (run, run.yaml path) a figure read whose value is a number with a fraction."""
    for block in drawn.blocks:
        for run_id, listed in sorted(drawn.entries[block.id]["reads"].items()):
            for part, kind, *path in listed:
                node: Any = drawn.summaries[run_id].config
                for step in path:
                    node = node.get(step) if isinstance(node, Mapping) else None
                if part == "config" and kind == "value" and isinstance(node, float):
                    return run_id, path
    raise AssertionError("no figure reads a number with a fraction of run.yaml")


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def test_an_edit_to_anything_a_figure_read_changes_its_key(drawn):
    """For every figure, every run and every part its entry says it read: that part changed in a copy of the
    summary changes the figure's key and that part's digest in the key's record. The copies are plain summaries,
    their tables hashed in memory: unedited, they give the key the cache entry holds."""
    drawn.summarise()
    shared = draw._shared_digest(PROJECT)
    checked = 0
    for block in drawn.blocks:
        read = reads.from_lists(drawn.entries[block.id]["reads"], block.runs)
        assert read is not None
        plain = {run_id: _plain(drawn.summaries[run_id]) for run_id in block.runs}
        unedited = draw.figure_key(block, plain, drawn.tables, PROJECT, shared, read)
        assert unedited.hexdigest() == draw.figure_key(block, drawn.summaries, drawn.tables, PROJECT, shared,
                                                       read).hexdigest()
        for run_id in block.runs:
            for part in read[run_id]:
                edited = draw.figure_key(block, {**plain, run_id: _edited(plain[run_id], part)}, drawn.tables,
                                         PROJECT, shared, read)
                name = f"run {run_id}: {reads.describe(part)}"
                assert edited.hexdigest() != unedited.hexdigest(), (block.id, name)
                assert edited.made_from[name] != unedited.made_from[name], (block.id, name)
                checked += 1
    assert checked >= sum(len(block.runs) for block in drawn.blocks)


def _plain(summary: RunSummary) -> RunSummary:
    """The summary as a plain RunSummary: no table digests from the cache."""
    return RunSummary(**{field.name: getattr(summary, field.name) for field in dataclasses.fields(RunSummary)})


def _edited(summary: RunSummary, read: reads.Read) -> RunSummary:
    """A copy of the summary with the part `read` names changed, as an edit of the run would change it."""
    part, kind, *path = read
    fields = {field.name: getattr(summary, field.name) for field in dataclasses.fields(RunSummary)}
    if part in reads.TABLES:
        fields[part] = _other_table(fields[part])
    elif part in reads.TABLE_MAPPINGS:
        frames = dict(fields[part])
        name = ADDED if kind == reads.KEYS else path[0]
        frames[name] = _other_table(frames[name]) if name in frames else pd.DataFrame({"ts": [0.0]})
        fields[part] = frames
    elif part in reads.NESTED:
        fields[part] = _edited_mapping(fields[part], path, kind)
    elif part == "warnings":
        fields[part] = [*fields[part], "a warning the test added"]
    else:
        fields["source_hash"] = "another input"
    return RunSummary(**fields)


def _other_table(frame: pd.DataFrame) -> pd.DataFrame:
    """A table one row shorter, or with one more column when it has no row."""
    return frame.iloc[:-1] if len(frame) else frame.assign(**{ADDED: pd.Series(dtype=float)})


def _edited_mapping(mapping: Mapping[str, Any], path: list[Any], kind: str) -> dict[str, Any]:
    """The mapping with the value at `path` changed (set when absent), or a key added to the mapping at `path`."""
    edited = copy.deepcopy(dict(mapping))
    node = edited
    whole = kind in (reads.KEYS, reads.ALL)  # the mapping at the path: a key added
    for step in path if whole else path[:-1]:
        node[step] = dict(node[step]) if isinstance(node.get(step), Mapping) else {}
        node = node[step]
    if whole:
        node[ADDED] = True
    elif path[-1] not in node:
        node[path[-1]] = ADDED
    else:
        node[path[-1]] = _other_value(node[path[-1]])
    return edited


def _other_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return None  # no longer a mapping
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, list | tuple):
        return [*value, ADDED]
    return f"{value} ({ADDED})"


def test_recording_changes_nothing_drawn_and_misses_nothing_read(example_summaries):
    """For every figure of the manual: drawn from recording summaries, it holds on every screen what it holds drawn
    from the summaries themselves (texts, lines, patches, axes, the numbers of its CSV); and drawn again after every
    part of its runs it did not read was changed (each table, series and field not recorded, a key added to each
    mapping it did not walk through), it is the same again: what the recording noted is all the figure depends on."""
    tables = load_tables(ROOT / "docs" / "data")
    for block in manual_blocks():
        runs = {run_id: example_summaries[run_id] for run_id in block.runs}
        plain = _drawing(block, runs, tables)
        recorded, noted = reads.recording(runs)
        assert _drawing(block, recorded, tables) == plain, block.id
        assert all(noted[run_id] for run_id in block.runs), block.id
        unread = {run_id: _unread_edited(summary, noted[run_id]) for run_id, summary in runs.items()}
        assert _drawing(block, unread, tables) == plain, block.id


def _drawing(block: Any, runs: Mapping[str, RunSummary], tables: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The figure's CSV and what it holds on each screen, drawn as the build draws it (without its cache)."""
    from matplotlib import rc_context

    from build_tools.drawing import palette

    job = draw._Job(block, dict(runs), {name: tables[name] for name in block.tables}, Path("unused"),
                    ROOT / "figures" / f"{block.module}.py", PROJECT)
    with draw._figures_package(PROJECT.figures_src), palette.using(PROJECT), rc_context(palette.rc_params(PROJECT)):
        figures, data = draw._draw_screens(draw._load(block.module, job.module_file), job, draw._provenance(job))
    return draw._csv_text(data, draw._provenance(job)), {
        screen: [part if isinstance(part, bytes) else repr(part) for part in draw._figure_contents(figure)]
        for screen, figure in figures.items()}


def _unread_edited(summary: RunSummary, noted: set[reads.Read]) -> RunSummary:
    """A copy of the summary with every part not noted changed."""
    fields = {field.name: getattr(summary, field.name) for field in dataclasses.fields(RunSummary)}
    for part in reads.TABLES:
        if (part, reads.VALUE) not in noted:
            fields[part] = _other_table(fields[part])
    for part in reads.TABLE_MAPPINGS:
        frames = {name: frame if (part, reads.VALUE, name) in noted else _other_table(frame)
                  for name, frame in fields[part].items()}
        if (part, reads.KEYS) not in noted:
            frames[ADDED] = pd.DataFrame({"ts": [0.0]})
        fields[part] = frames
    for part in reads.NESTED:
        fields[part] = _unread_mapping(fields[part], part, (), noted)
    if ("warnings", reads.VALUE) not in noted:
        fields["warnings"] = [*fields["warnings"], "a warning the test added"]
    if (reads.WHOLE, reads.VALUE) not in noted:
        fields["source_hash"] = "another input"
    return RunSummary(**fields)


def _unread_mapping(mapping: Mapping[Any, Any], part: str, path: tuple[Any, ...],
                    noted: set[reads.Read]) -> dict[Any, Any]:
    if (part, reads.ALL, *path) in noted:  # read all of it: nothing of it is unread
        return dict(mapping)
    edited: dict[Any, Any] = {}
    for key, value in mapping.items():
        if (part, reads.VALUE, *path, key) not in noted:
            edited[key] = _other_value(value)
        elif isinstance(value, Mapping):
            edited[key] = _unread_mapping(value, part, (*path, key), noted)
        else:
            edited[key] = value
    if (part, reads.KEYS, *path) not in noted:
        edited[ADDED] = True
    return edited


# --- the recording itself -------------------------------------------------------------------------


def test_what_the_recording_cannot_name_is_read_as_the_whole_run(example_summaries):
    summary = example_summaries["baseline-seed1"]
    recorded, noted = reads.recording({"baseline-seed1": summary})
    run = recorded["baseline-seed1"]
    assert run.run_id == "baseline-seed1" and noted["baseline-seed1"] == set()
    assert run.__dict__ is vars(summary)
    assert noted["baseline-seed1"] == {(reads.WHOLE, reads.VALUE)}
    assert reads.read_digest(summary, (reads.WHOLE, reads.VALUE)) == summary.source_hash


def test_the_recording_notes_each_path_walked_and_each_walk_through_keys(example_summaries):
    summary = example_summaries["baseline-seed1"]
    recorded, noted = reads.recording({"baseline-seed1": summary})
    run = recorded["baseline-seed1"]
    assert run.config["flags"]["rollout_max_response_len"] == summary.config["flags"]["rollout_max_response_len"]
    assert run.config.get("no such field") is None and "lab" in run.config
    assert list(run.series) == list(summary.series)
    assert len(run.clean_steps) == len(summary.clean_steps)
    assert noted["baseline-seed1"] == {
        ("config", "value", "flags"), ("config", "value", "flags", "rollout_max_response_len"),
        ("config", "value", "no such field"), ("config", "value", "lab"), ("series", "keys"), ("steps", "value")}
    assert reads.read_digest(summary, ("config", "value", "flags")) == reads.MAPPING
    assert reads.read_digest(summary, ("config", "value", "no such field")) == reads.ABSENT
    with pytest.raises(AttributeError, match="may not change its run's summary"):
        run.title = "changed"


def test_a_copy_of_a_mapping_reads_all_of_it(example_summaries):
    """copy.deepcopy (and dataclasses.asdict, which copies) of run.yaml reads every field of it, the title too."""
    summary = example_summaries["baseline-seed1"]
    recorded, noted = reads.recording({"baseline-seed1": summary})
    assert copy.deepcopy(recorded["baseline-seed1"].config) == summary.config
    assert noted["baseline-seed1"] == {("config", reads.ALL)}
    retitled = dataclasses.replace(_plain(summary), config={**summary.config, "title": "another title"})
    assert reads.read_digest(retitled, ("config", reads.ALL)) != reads.read_digest(summary, ("config", reads.ALL))
    assert reads.describe(("config", reads.ALL)) == "all of config"


def test_a_cached_summarys_table_digests_are_those_its_tables_hash_to(example_summaries):
    """The digests a summary from the cache carries are its Parquet files', which a plain copy of it hashes to
    in memory: every table of every example run."""
    for run_id, summary in example_summaries.items():
        names = reads.table_names(summary)
        assert names and vars(summary)[summary_cache.TABLE_DIGESTS].keys() == set(names), run_id
        plain = _plain(summary)
        assert [reads.table_digest(summary, name) for name in names] == [
            reads.table_digest(plain, name) for name in names], run_id


@pytest.mark.parametrize("stored", [
    {"run-a": [["steps", "value"]], "run-b": []},  # another run than the block's
    {"run-a": [["title", "value"]]},  # no part of a summary
    {"run-a": [["config", "value", 1.5]]},  # a path step that is neither text nor a whole number
    {"run-a": "steps"},
    [["steps", "value"]],
])
def test_reads_of_another_shape_in_a_cache_entry_are_not_trusted(stored):
    assert reads.from_lists(stored, ("run-a",)) is None
    assert reads.from_lists({"run-a": [["steps", "value"], ["config", "value", "flags", 0]]}, ("run-a",)) == {
        "run-a": [("steps", "value"), ("config", "value", "flags", 0)]}
