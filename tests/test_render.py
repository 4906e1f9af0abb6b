"""The rendered pages: the Metrics page and the Index of figures against the seeds, word for word; the
provenance sentences; the edition stamp; the commit rule; the palette list."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from conftest import ROOT, SEEDS, manual_blocks

from build_tools import render
from build_tools._exceptions import EXIT_BAD_INPUT
from build_tools.metrics_table import MetricsSpecError
from build_tools.stamp import CommitMismatch, EditionFileError, check_commits, load_stamp
from build_tools.wording import number, provenance, words

METRICS_SEED = SEEDS / "000_7fca0c65374092d8.txt"
INDEX_SEED = SEEDS / "003_f3e693af6112d108.txt"
SPEC = ROOT / "docs" / "data" / "metrics.yml"
CHAPTERS = {5: "05-heat.md"}
STAMP = "Miles radixark/miles:latest, Miles main of 2026-10-15 · 08752a1 · 2026-10-15 · Edition 2026.10"


# --- parsing the seeds and the rendered Markdown ------------------------------------------------


def seed_tables(path: Path) -> dict[str, list[list[str]]]:
    """Tables of a seed page: the line before a `Metric\t...` header is the title; rows are tab-separated."""
    lines = path.read_text(encoding="utf-8").splitlines()
    tables: dict[str, list[list[str]]] = {}
    for index, line in enumerate(lines):
        if "\t" in line and "\t" not in lines[index - 1] and index > 1:
            title = lines[index - 2] if not lines[index - 1].strip() else lines[index - 1]
            rows = []
            for row in lines[index:]:
                if "\t" not in row:
                    break
                rows.append(row.split("\t"))
            tables[title.strip()] = rows
    return tables


def _unmarkdown(cell: str) -> str:
    """A Markdown cell as the reader reads it: link text without its target, escapes removed."""
    cell = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell)
    return re.sub(r"\\(.)", r"\1", cell).strip()


def markdown_tables(text: str) -> dict[str, list[list[str]]]:
    """`## Title` followed by a pipe table, as rows of cells (the separator row dropped)."""
    tables: dict[str, list[list[str]]] = {}
    title = None
    for line in text.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip()
        elif line.startswith("|") and title is not None:
            cells = [_unmarkdown(cell) for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(cell) <= {"-", ":"} for cell in cells):
                tables.setdefault(title, []).append(cells)
    return tables


@pytest.fixture(scope="module")
def env():
    return render._environment(ROOT / "templates")


@pytest.fixture(scope="module")
def metrics_page(env, example_summaries) -> str:
    return render.render_metrics(env, SPEC, example_summaries, CHAPTERS)


@pytest.fixture(scope="module")
def blocks():
    from build_tools.blocks import read_blocks

    return read_blocks(ROOT / "docs", ROOT / "figures")


@pytest.fixture(scope="module")
def index_page(env, blocks, example_summaries) -> str:
    from build_tools import palette

    return render.render_figure_index(env, blocks, example_summaries, palette.legend_sentences())


def _with(summaries: dict, **changes) -> dict:
    """Copies of the summaries with run.yaml fields changed (dotted name -> value), for every run."""
    out = {}
    for run_id, summary in summaries.items():
        clone = copy.copy(summary)
        clone.config = copy.deepcopy(summary.config)
        for dotted, value in changes.items():
            node = clone.config
            *path, last = dotted.split(".")
            for key in path:
                node = node[key]
            node[last] = value(run_id) if callable(value) else value
        out[run_id] = clone
    return out


# --- the Metrics page ---------------------------------------------------------------------------


@pytest.mark.parametrize("title", ["Rollout", "Training", "Time", "Evaluation and async"])
def test_metrics_tables_match_the_seed_word_for_word(metrics_page, title):
    expected = seed_tables(METRICS_SEED)[title]
    assert markdown_tables(metrics_page)[title] == expected


def test_metrics_intro_facts_come_from_the_runs(metrics_page):
    assert ("Qwen3-0.6B on GSM8K on one GB10, 32 prompts with 8 answers each, a limit of 1,024 tokens."
            in metrics_page)
    assert "synthesized example runs, not from measurements" in metrics_page
    assert "our lab runs" not in metrics_page


def test_metrics_intro_follows_the_configuration(env, example_summaries):
    changed = _with(example_summaries, **{"flags.rollout_max_response_len": 2048, "hardware.gpus": 2,
                                          "flags.rollout_batch_size": 64})
    page = render.render_metrics(env, SPEC, changed, CHAPTERS)
    assert "on two GB10, 64 prompts with 8 answers each, a limit of 2,048 tokens" in page


def test_metrics_intro_says_measured_runs_are_ours(env, example_summaries):
    page = render.render_metrics(env, SPEC, _with(example_summaries, provenance="measured"), CHAPTERS)
    assert "The ranges come from our lab runs: Qwen3-0.6B" in page
    assert "synthesized" not in page


def test_time_values_read_only_clean_steps(env, example_summaries):
    """A heat-guard pause that touches ten steps takes them out of every time value, however slow they were."""
    run_id = next(r for r, s in example_summaries.items() if s.config["lab"]["heat_guard"] is False)
    changed = dict(example_summaries)
    clone = copy.copy(example_summaries[run_id])
    steps = clone.steps.copy()
    touched = steps.index[:10]
    steps.loc[touched, "heat_touched"] = True
    steps.loc[touched, "perf/step_time"] = 10_000.0
    clone.steps = steps
    changed[run_id] = clone
    page = render.render_metrics(env, SPEC, changed, CHAPTERS)
    rows = {row[0]: row[2] for row in markdown_tables(page)["Time"][1:]}
    expected = number(steps.loc[~steps["heat_touched"], "perf/step_time"].median(), 1)
    assert rows["`perf/step_time`"] == f"{expected} s median of 38 steps, in a run made before the heat guard"
    assert "first two clean steps" in rows["`perf/sleep_time`"]


def test_a_cell_says_what_is_true_when_the_usual_wording_is_not(env, example_summaries):
    changed = dict(example_summaries)
    run_id = sorted(changed)[0]
    clone = copy.copy(changed[run_id])
    clone.steps = clone.steps.copy()
    clone.steps.loc[clone.steps.index[3], "perf/train_wait_time"] = float("nan")
    changed[run_id] = clone
    total = sum(len(s.steps) for s in changed.values())
    page = render.render_metrics(env, SPEC, changed, CHAPTERS)
    rows = {row[0]: row[2] for row in markdown_tables(page)["Time"][1:]}
    assert rows["`perf/train_wait_time`"] == f"logged in {number(total - 1)} of {number(total)} steps"


def test_a_bad_spec_row_is_reported_with_its_field(env, example_summaries, tmp_path):
    spec = tmp_path / "metrics.yml"
    text = SPEC.read_text(encoding="utf-8").replace("runs: plain_baseline", "runs: no_such_set", 1)
    spec.write_text(text.replace("stat: first_step", "stat: mode", 1), encoding="utf-8")
    with pytest.raises(MetricsSpecError) as caught:
        render.render_metrics(env, spec, example_summaries, CHAPTERS)
    message = str(caught.value)
    assert "2 problems in the Metrics page spec" in message
    assert "train/train_rollout_logprob_abs_diff: unknown run set 'no_such_set'" in message
    assert "train/ppo_kl: unknown stat 'mode'" in message


def test_number_formatting():
    assert number(1024) == "1,024"
    assert number(0.000634, 5) == "0.00063"
    assert number(-0.0001, 2) == "0.00"
    assert number(152.60000000000002, 1) == "152.6"
    assert words(1) == "one" and words(2) == "two" and words(48) == "48"


# --- the Index of figures -----------------------------------------------------------------------


def seed_index_rows() -> list[list[str]]:
    return [line.split("\t") for line in INDEX_SEED.read_text(encoding="utf-8").splitlines()
            if re.match(r"^\d+\.\d+\t", line)]


def test_index_rows_match_the_seed_word_for_word(index_page):
    rows = markdown_tables(index_page)["Index of figures"]
    assert rows[0] == ["Fig.", "The claim it makes"]
    assert rows[1:] == seed_index_rows()
    assert len(rows[1:]) == len(manual_blocks())


def test_index_links_go_to_each_figure(index_page, blocks):
    links = re.findall(r"^\| \[([\d.]+)\]\(([^)#]+)#([\w-]+)\)", index_page, flags=re.M)
    assert links == [(b.number, Path(b.chapter_file).name, b.id) for b in blocks]


def test_palette_list_comes_from_the_palette_file(index_page):
    seed = INDEX_SEED.read_text(encoding="utf-8").splitlines()
    expected = [line for line in seed if re.match(r"^\w+ is ", line)]
    listed = [line[2:] for line in index_page.splitlines() if line.startswith("- ")]
    assert listed == expected and len(listed) == 7


def test_index_says_where_its_numbers_come_from(env, blocks, example_summaries):
    from build_tools import palette

    def page(summaries: dict) -> str:
        return render.render_figure_index(env, blocks, summaries, palette.legend_sentences())

    example = page(example_summaries)
    assert ("Every number in a figure comes from synthesized example runs of one DGX Spark, not from "
            "measurements.") in example
    assert "our runs on one DGX Spark" not in example
    measured = page(_with(example_summaries, provenance="measured"))
    assert "Every measured number in a figure comes from our runs on one DGX Spark." in measured
    first = sorted(example_summaries)[0]
    mixed = page(_with(example_summaries, provenance=lambda rid: "measured" if rid == first else "example"))
    assert f"one measured run ({first})" in mixed
    assert "synthesized example runs" in mixed and "which are not measurements" in mixed


def test_provenance_of_example_measured_and_mixed_runs():
    assert provenance({"a": {"provenance": "example"}}).kind == "example"
    assert provenance({"a": {"provenance": "measured"}}).kind == "measured"
    mixed = provenance({"a": {"provenance": "measured"}, "b": {"provenance": "example"}, "c": {}})
    assert mixed.kind == "mixed" and mixed.measured == ("a",) and mixed.examples == ("b", "c")
    # One short line: how many runs of each kind, never their ids.
    assert mixed.footer() == "Built from 1 measured and 2 synthesized example runs."
    assert provenance({"a": {"provenance": "example"}}).footer() == (
        "Built from 1 synthesized example run, not measurements.")
    many = provenance({f"r{i}": {"provenance": "measured" if i < 12 else "example"} for i in range(20)})
    assert many.footer() == "Built from 12 measured and 8 synthesized example runs."
    assert provenance({f"r{i}": {"provenance": "measured"} for i in range(3)}).footer() == (
        "Built from 3 measured runs.")


# --- the edition stamp and the commit rule ------------------------------------------------------------


def test_stamp_matches_the_seed_footer():
    stamp = load_stamp(ROOT / "edition.yml")
    assert stamp.text == STAMP
    for seed in (METRICS_SEED, INDEX_SEED):
        assert seed.read_text(encoding="utf-8").rstrip().splitlines()[-1].endswith(STAMP)


def test_stamp_file_problems_are_listed(tmp_path):
    path = tmp_path / "edition.yml"
    path.write_text("edition: '2026.10'\nmiles: {image: x, branch: main}\n", encoding="utf-8")
    with pytest.raises(EditionFileError) as caught:
        load_stamp(path)
    message = str(caught.value)
    assert "3 problems in the edition file" in message
    assert "edition.yml: date: missing (expected a date YYYY-MM-DD)" in message
    assert "edition.yml:2: miles.commit: missing (expected text of 7 to 40 hex digits)" in message
    assert "edition.yml:2: miles.commit_date: missing (expected a date YYYY-MM-DD)" in message


def test_a_run_with_another_miles_commit_fails_with_one_line(example_summaries):
    stamp = load_stamp(ROOT / "edition.yml")
    configs = {run_id: s.config for run_id, s in example_summaries.items()}
    check_commits(configs, stamp)  # the example runs all used the edition's commit
    other = copy.deepcopy(configs["baseline-seed1"])
    other["miles"]["commit"] = "1a2b3c4"
    with pytest.raises(CommitMismatch) as caught:
        check_commits({**configs, "baseline-seed1": other}, stamp)
    assert str(caught.value) == ("run baseline-seed1 was made with Miles commit 1a2b3c4, but this edition is "
                                 "Miles commit 08752a1 (runs/baseline-seed1/run.yaml miles.commit)")
    assert caught.value.exit_code == EXIT_BAD_INPUT


# --- chapters -----------------------------------------------------------------------------------


def test_figure_markup_has_anchor_caption_csv_and_checks(blocks):
    from build_tools._types import CheckResult, ClaimVerdict

    block = blocks[0]
    verdict = ClaimVerdict(block, "pass", (CheckResult("order", "pass", 48, "every step",
                                                       "48 of 48 steps in order <ok>"),))
    markup = render.figure_markup(block, None, verdict)
    assert f'<figure class="manual-figure" id="{block.id}" markdown="1">' in markup
    assert "[![" in markup and f"](figures/{block.id}.svg){{ .manual-zoom" in markup
    assert f"<strong>Figure {block.number}.</strong> {block.claim}" in markup
    assert f"[data behind this figure](figures/{block.id}.csv)" in markup
    assert ('<li><q>in that order</q>: 48 of 48 steps in order &lt;ok&gt; '
            '<span class="manual-needs">(the claim needs every step)</span></li>') in markup
    assert f"<p>Runs: {', '.join(block.runs)}</p>" in markup


def test_troubleshooting_table_comes_from_the_data():
    import yaml

    data = yaml.safe_load((ROOT / "docs" / "data" / "troubleshooting.yml").read_text(encoding="utf-8"))
    table = render.troubleshooting_table({"troubleshooting": data})
    rows = table.splitlines()
    assert rows[0] == "| Symptom | First check | Fix |"
    assert len(rows) == 2 + len(data["symptoms"]) == 7
    assert "| Launch with `--use-fault-tolerance` so the watchdog ends a job whose engine died |" in table
    assert "Read MemTotal - MemAvailable from `/proc/meminfo` against" in table  # words and code stay apart


def test_built_pages(built_manual):
    pages = built_manual / "build" / "docs"
    metrics = (pages / "06-metrics.md").read_text(encoding="utf-8")
    for title, rows in seed_tables(METRICS_SEED).items():
        assert markdown_tables(metrics)[title] == rows
    index = (pages / "index.md").read_text(encoding="utf-8")
    assert "<!--" not in index and "Synthesized example runs, not measurements" in index
    chapters = sorted(p.name for p in pages.glob("[0-9][0-9]-*.md"))
    assert [name[:2] for name in chapters] == ["01", "02", "03", "04", "05", "06", "07", "08"]
    for name in chapters:
        text = (pages / name).read_text(encoding="utf-8")
        assert "```figure" not in text and "[](#fig-" not in text
    assert "| Symptom | First check | Fix |" in (pages / chapters[6]).read_text(encoding="utf-8")


# --- for readers: chapter numbers, the contents, what each figure and the home page say of the runs ---------


def test_chapters_are_numbered_in_heading_and_contents():
    assert render.numbered("# Heat and the heat guard\n\nText.\n", "05-heat.md") == (
        "# 5. Heat and the heat guard\n\nText.\n")
    assert render.numbered("# Index of figures\n", "figures.md") == "# Index of figures\n"
    pages = [render.Page("figures.md", "Index of figures"), render.Page("06-metrics.md", "6. Metrics"),
             render.Page("01-step.md", "1. A step on one GPU"), render.Page("index.md", "Front matter")]
    assert render.contents(pages) == "\n".join([
        '<ol class="manual-contents" markdown="block">',
        '<li value="1" markdown="span">[A step on one GPU](01-step.md)</li>',
        '<li value="6" markdown="span">[Metrics](06-metrics.md)</li>',
        "</ol>", "", "[Index of figures](figures.md)"])


def test_the_home_page_credits_measured_runs_only_to_the_pages_that_read_them(example_summaries):
    first = sorted(example_summaries)[0]
    mixed = _with(example_summaries, provenance=lambda rid: "measured" if rid == first else "example")
    source = provenance({rid: s.config for rid, s in mixed.items()})
    total = len(mixed)
    text = render.provenance_paragraph(source, "DGX Spark", {first: ["1.1", "1.2"], "other": ["2.1"]})
    assert f"This manual reads 1 measured and {total - 1} synthesized example runs" in text
    assert ("Figures 1.1 and 1.2 read measured runs; every other figure reads only synthesized examples. "
            "The Metrics page reads only synthesized examples.") in text
    table = render.runs_table(mixed, {first: ["1.1", "1.2", render.METRICS_READER]})
    assert f"| `{first}` |" in table and "| measured | 1.1, 1.2, Metrics page |" in table


def test_each_figure_says_what_its_runs_are(blocks, example_summaries):
    block = blocks[0]
    configs = {rid: s.config for rid, s in example_summaries.items()}
    assert render.figure_source(block, configs) == f"{len(block.runs)} synthesized example runs"
    measured = {rid: {**cfg, "provenance": "measured"} for rid, cfg in configs.items()}
    markup = render.figure_markup(block, None, None, render.figure_source(block, measured))
    assert f'<span class="manual-source">{len(block.runs)} measured runs</span></figcaption>' in markup


def test_metric_names_in_table_cells_break_only_after_slash_and_underscore():
    import markdown

    html = markdown.markdown("| Metric |\n|---|\n| `perf/rollout_time` |\n\nNot `a/b_c` here.",
                             extensions=["tables", "build_tools.markdown_wbr"])
    assert ('<td><code><span class="manual-nobreak">perf/</span><wbr /><span class="manual-nobreak">rollout_</span>'
            '<wbr /><span class="manual-nobreak">time</span></code></td>') in html
    assert "<code>a/b_c</code>" in html  # outside a table cell: unchanged
