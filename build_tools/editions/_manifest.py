"""An edition's manifest: what was published (runs, figures, claims, Metrics rows, pages) as hashes and values.

Two manifests compare field by field: `verify` reports every difference between a rebuild and the published
one, `diff` reads the four sections a reader cares about (runs, claims, figures, Metrics rows).
"""

from __future__ import annotations

import glob
import hashlib
import html
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from build_tools.core._escape import html_text, md_code, md_text
from build_tools.core._layout import Layout
from build_tools.core._numbers import fmt
from build_tools.store import fingerprint

Manifest = dict[str, Any]

# What a run's provenance is made of: what the run was and which Miles built it, not its data.
PROVENANCE_FIELDS = ("provenance", "title", "date", "seed", "model", "dataset", "miles", "hardware")
# Pages added at publish time, after the build; they describe the build, so they are not part of it.
PUBLISH_PAGES = ("manifest.json", "manifest.html", "changes.html")


def compute(root: Path, *, edition: Mapping[str, str], project_commit: str, source_date_epoch: int) -> Manifest:
    """The manifest of the manual built under root (build/ and site/ must hold a finished build)."""
    layout = Layout(root)
    return {
        "edition": edition["edition"],
        "date": edition["date"],
        "miles": {key: edition[key] for key in ("image", "branch", "commit", "commit_date")},
        "project_commit": project_commit,
        "source_date_epoch": source_date_epoch,
        # The tools whose versions decide the published bytes (the libraries every cache key reads); an edition
        # rebuilt with others may differ.
        "tools": fingerprint.tool_versions(),
        "runs": runs_section(layout.runs),
        "figures": figures_section(layout.pages / "figures"),
        "claims": claims_section(layout.build / "claims.json"),
        "proof": proof_section(layout.build / "proof.json"),
        "metrics": metrics_section(layout.pages),
        "pages": pages_section(layout.site),
        "print": print_section(layout.site),
        CONTRACT_SECTION: contract_section(layout.site),
    }


def dumps(manifest: Manifest) -> str:
    """Stable text: sorted keys, so the same manifest is always the same bytes."""
    return json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(folder: Path) -> list[Path]:
    """Every file under folder, ordered by its relative path (os.walk order differs between machines)."""
    return sorted((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.relative_to(folder).as_posix())


def run_hash(folder: Path) -> str:
    """One hash over a run's relative paths and contents: a renamed, added or changed file changes it."""
    digest = hashlib.sha256()
    for path in _files(folder):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def runs_section(runs: Path) -> dict[str, Any]:
    section: dict[str, Any] = {}
    for folder in sorted(p for p in runs.iterdir() if (p / "run.yaml").is_file()) if runs.is_dir() else []:
        # BaseLoader: values stay as written (a date stays "2026-10-01"), which is what provenance means.
        config = yaml.load((folder / "run.yaml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader) or {}
        files = _files(folder)
        section[folder.name] = {
            "sha256": run_hash(folder),
            "files": len(files),
            # Each file's own hash, so that a diff names the files that changed (manifests before it lack it).
            "file_sha256": {path.relative_to(folder).as_posix(): _sha256(path) for path in files},
            "provenance": {key: config[key] for key in PROVENANCE_FIELDS if key in config},
        }
    return section


# Fields of a figure's entry that manifests gained after editions were published without them: a published
# manifest that records the field for no figure predates it, and its rebuild's value is not a difference.
LATER_FIGURE_FIELDS = ("json_sha256",)


def figures_section(figures: Path) -> dict[str, Any]:
    """Every figure's files by sha256: its SVG and CSV, its CSV's descriptor (.json: provenance, title, and that
    the data was synthesized) as `json_sha256`, and the SVG of each other variant (`phone`, `dark`, `phone.dark`:
    build_tools/drawing/variants.py) as `<variant>_svg_sha256`; its PNG as `png_sha256` when it has one (editions built
    before issue 22 shipped one, and verifying one rebuilds it with its own code)."""
    section: dict[str, Any] = {}
    for svg in sorted(figures.glob("*.svg")) if figures.is_dir() else []:
        if "." in svg.stem:
            continue  # a variant, recorded with its figure
        csv, png, descriptor = svg.with_suffix(".csv"), svg.with_suffix(".png"), svg.with_suffix(".json")
        entry = {"svg_sha256": _sha256(svg), "csv_sha256": _sha256(csv) if csv.is_file() else None}
        if descriptor.is_file():
            entry["json_sha256"] = _sha256(descriptor)
        if png.is_file():
            entry["png_sha256"] = _sha256(png)
        for variant in sorted(figures.glob(f"{glob.escape(svg.stem)}.*.svg")):
            entry[f"{variant.name[len(svg.stem) + 1:-len('.svg')]}_svg_sha256"] = _sha256(variant)
        section[svg.stem] = entry
    return section


def proof_section(proof_json: Path) -> dict[str, int]:
    """How many claims the edition's build showed able to fail, of all (build/proof.json, checking/prove.py);
    empty for a build that did not prove them."""
    if not proof_json.is_file():
        return {}
    document = json.loads(proof_json.read_text(encoding="utf-8"))
    return {"shown": int(document["shown"]), "total": int(document["total"])}


def proof_sentence(proof: Mapping[str, Any]) -> str:
    """'18 of 18 claims shown able to fail', as the Claim health page and `make check PROVE=1` say it."""
    if not proof:
        return "This edition's build did not show its claims able to fail."
    from build_tools.checking.prove import shown_sentence

    return (f"{shown_sentence(proof['shown'], proof['total'])}: for each check of each claim, a change of its data "
            "just past its edge fails it, every other claim checked again.")


def claims_section(claims_json: Path) -> dict[str, Any]:
    """Every claim's verdict, the values its checks observed and their words and margins, keyed by figure id (from
    build/claims.json)."""
    if not claims_json.is_file():
        return {}
    document = json.loads(claims_json.read_text(encoding="utf-8"))
    section: dict[str, Any] = {}
    for entry in document.get("figures", []):
        observed: dict[str, Any] = {}
        checks: dict[str, Any] = {}
        for check in entry.get("checks", []):
            # A claim may use one check twice; the second keeps its place as 'name (2)'.
            name, count = str(check.get("name")), 1
            while (name if count == 1 else f"{name} ({count})") in observed:
                count += 1
            key = name if count == 1 else f"{name} ({count})"
            observed[key] = check.get("observed")
            checks[key] = {"says": check.get("says"), "margin": check.get("margin")}
        section[str(entry["id"])] = {"number": entry.get("number"), "claim": entry.get("claim"),
                                     "verdict": entry.get("status"), "observed": observed, "checks": checks}
    return section


def metrics_section(pages: Path) -> dict[str, dict[str, str]]:
    """The Metrics page's table rows: 'heading › first cell' -> {column: cell}, parsed from the built Markdown."""
    page = next(iter(sorted(pages.glob("*metrics*.md"))), None) if pages.is_dir() else None
    return parse_tables(page.read_text(encoding="utf-8")) if page else {}


_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_RULE = re.compile(r"^[\s|:-]+$")


def _cells(line: str) -> list[str]:
    match = _ROW.match(line)
    # A `\|` inside a cell is a literal bar, not a column break.
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", match.group(1))] if match else []


def parse_tables(markdown: str) -> dict[str, dict[str, str]]:
    """Rows of every pipe table in a Markdown page, keyed by the nearest heading and the row's first cell."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    heading, lines = "", markdown.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("#"):
            heading, header = line.lstrip("#").strip(), []
            continue
        cells = _cells(line)
        if not cells:
            header = []
        elif not header:
            following = lines[index + 1] if index + 1 < len(lines) else ""
            header = cells if _RULE.match(following) and "-" in following else []
        elif not _RULE.match(line):
            key = f"{heading} › {cells[0]}" if heading else cells[0]
            rows[key] = dict(zip(header[1:], cells[1:], strict=False))
    return rows


def pages_section(site: Path) -> dict[str, str]:
    """Every built HTML page's hash: a rebuild must give the same pages byte for byte."""
    if not site.is_dir():
        return {}
    return {p.relative_to(site).as_posix(): _sha256(p) for p in _files(site)
            if p.suffix == ".html" and p.name not in PUBLISH_PAGES}


def print_section(site: Path) -> dict[str, str]:
    """The print edition (site/<edition>.pdf, build_tools/website/pdf.py) by its hash."""
    return {p.name: _sha256(p) for p in sorted(site.glob("*.pdf"))} if site.is_dir() else {}


# What `manual watch --contract` trusts: the contract and its schema, by their hashes (the watch checks a published
# contract against them). Manifests published before this section lack it; a rebuild's is then no difference.
CONTRACT_SECTION = "contract"
CONTRACT_FILES = ("contract.json", "contract.schema.json")  # checking/contract.py's CONTRACT_FILE and SCHEMA_FILE


def contract_section(site: Path) -> dict[str, str]:
    """site/contract.json and site/contract.schema.json by their hashes."""
    return {name: _sha256(site / name) for name in CONTRACT_FILES if (site / name).is_file()}


# --- reading a published manifest ---------------------------------------------------------------------------

MAX_DEPTH = 32  # a manifest is five levels deep: a deeper one is not one publishing wrote
SECTIONS = ("runs", "figures", "claims", "metrics")  # each a mapping of mappings
HASHES = ("pages", "print", "tools", CONTRACT_SECTION)  # each a mapping of names to text


def loads(data: bytes) -> Manifest:
    """A published manifest.json, its shape checked for what diff and verify read: ValueError saying what is
    wrong, whatever the bytes (damaged, truncated, nested 100,000 deep)."""
    manifest = load_json(data)
    if not isinstance(manifest, dict):
        raise ValueError("not a JSON object")
    if not isinstance(manifest.get("edition"), str):
        raise ValueError("its edition is missing or not text")
    for section in SECTIONS:
        entries = manifest.get(section, {})
        if not isinstance(entries, dict):
            raise ValueError(f"its {section} is not a mapping")
        wrong = next((str(key) for key, value in entries.items() if not isinstance(value, dict)), None)
        if wrong is not None:
            raise ValueError(f"its {section}.{wrong} is not a mapping")
    for section in HASHES:
        if not isinstance(manifest.get(section, {}), dict):
            raise ValueError(f"its {section} is not a mapping")
    return manifest


def load_json(data: bytes) -> Any:
    """JSON that publishing wrote, read back: ValueError naming what is wrong, never RecursionError."""
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    except ValueError as error:  # a number of more than 4300 digits
        raise ValueError(f"not valid JSON: {error}") from None
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    if _deeper_than(value, MAX_DEPTH):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and mappings nest more than limit levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


# --- comparing ---------------------------------------------------------------------------------------------

def _leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, Mapping) and value:
        for key in sorted(value):
            yield from _leaves(value[key], (*path, str(key)))
    else:
        yield path, value


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def differences(published: Manifest, rebuilt: Manifest) -> list[str]:
    """Every field that differs, as 'figures.fig-x.svg_sha256: published A, rebuilt B'; a field of a figure or its
    claim led by the figure's name as `make check` gives it: 'fig 1.3 (claims.fig-dead-engine.verdict): ...'."""
    old, new = dict(_leaves(published)), dict(_leaves(rebuilt))
    claims = [manifest.get("claims", {}) for manifest in (rebuilt, published)]

    def field(path: tuple[str, ...]) -> str:
        name = ".".join(path)
        if len(path) > 1 and path[0] in ("figures", "claims"):
            figure = claim_name(path[1], *(section.get(path[1], {}) for section in claims))
            return f"{figure} ({name})" if figure.startswith("fig ") else name
        return name

    predates = {field for field in LATER_FIGURE_FIELDS
                if not any(len(path) == 3 and path[0] == "figures" and path[2] == field for path in old)}
    lines = []
    for path in sorted(set(old) | set(new)):
        if path[0] == "tools":
            continue  # what the rebuild ran with, not what it made: tool_changes names it
        name = field(path)
        if path not in old and len(path) == 3 and path[0] == "figures" and path[2] in predates:
            continue  # a field this edition's manifest was published without
        if path not in old and path[0] == CONTRACT_SECTION and CONTRACT_SECTION not in published:
            continue  # an edition published before manifests hashed the contract
        if path not in new:
            lines.append(f"{name}: published {_show(old[path])}, missing from the rebuild")
        elif path not in old:
            lines.append(f"{name}: not published, rebuilt {_show(new[path])}")
        elif old[path] != new[path]:
            lines.append(f"{name}: published {_show(old[path])}, rebuilt {_show(new[path])}")
    return lines


def tool_changes(published: Manifest, rebuilt: Manifest) -> tuple[list[str], list[str]]:
    """The tools (Python, the libraries every cache key reads) the edition was built with and the rebuild ran with,
    where they differ, Python first: (['Python 3.11.7', 'pandas 2.3.3'], ['Python 3.12.1', 'pandas 3.1.1'])."""
    old, new = published.get("tools", {}), rebuilt.get("tools", {})
    if not isinstance(old, Mapping):
        old = {}
    names = sorted(set(old) | set(new), key=lambda name: (name != "python", name))
    moved = [name for name in names if old.get(name) != new.get(name)]

    def named(name: str, tools: Mapping[str, Any]) -> str:
        return f"{'Python' if name == 'python' else name} {tools.get(name, '(not recorded)')}"
    return [named(name, old) for name in moved], [named(name, new) for name in moved]


def changes(old: Manifest, new: Manifest) -> dict[str, list[str]]:
    """What a reader of the newer edition should know changed, section by section (empty lists: nothing)."""
    return {
        "runs": _run_changes(old.get("runs", {}), new.get("runs", {})),
        "claims": _claim_changes(old.get("claims", {}), new.get("claims", {})),
        "figures": _figure_changes(old.get("figures", {}), new.get("figures", {})),
        "metrics": _metric_changes(old.get("metrics", {}), new.get("metrics", {})),
    }


def _added_removed(old: Mapping[str, Any], new: Mapping[str, Any], noun: str) -> list[str]:
    return ([f"{noun} {key} added" for key in sorted(set(new) - set(old))]
            + [f"{noun} {key} removed" for key in sorted(set(old) - set(new))])


def _changed_fields(old: Mapping[str, Any], new: Mapping[str, Any],
                    fields: tuple[tuple[str, str], ...]) -> dict[str, list[str]]:
    """For each entry in both manifests, the labels of the fields (label, key) whose values differ."""
    changed = {}
    for name in sorted(set(old) & set(new)):
        what = [label for label, key in fields if old[name].get(key) != new[name].get(key)]
        if what:
            changed[name] = what
    return changed


def _run_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    lines = _added_removed(old, new, "run")
    for run in sorted(set(old) & set(new)):
        before, after = old[run], new[run]
        files = _file_changes(before.get("file_sha256"), after.get("file_sha256"))
        if files is None:  # a manifest from before files were hashed one by one: only that some changed
            files = ["files"] if before.get("sha256") != after.get("sha256") else []
        provenance = _provenance_changes(before.get("provenance"), after.get("provenance"))
        what = files + ([f"provenance ({', '.join(provenance)})"] if provenance else [])
        if what:
            lines.append(f"run {run} changed ({'; '.join(what)})" if files == ["files"]
                         else f"run {run}: {'; '.join(what)}")
    return lines


def _file_changes(old: Any, new: Any) -> list[str] | None:
    """'lab/events.jsonl changed', 'x added', 'y removed' for a run's files; None when a manifest lacks them."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return None
    changed = [name for name in sorted(set(old) & set(new)) if old[name] != new[name]]
    return ([f"{name} changed" for name in changed] + [f"{name} added" for name in sorted(set(new) - set(old))]
            + [f"{name} removed" for name in sorted(set(old) - set(new))])


def _provenance_changes(old: Any, new: Any) -> list[str]:
    before = old if isinstance(old, Mapping) else {}
    after = new if isinstance(new, Mapping) else {}
    return [key for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


def claim_name(claim_id: str, *entries: Mapping[str, Any]) -> str:
    """A claim as `make check` names it, 'fig 1.3', by its figure's number in the first of its manifest entries
    that has one (else 'claim fig-dead-engine'): what publishing and verifying name a claim by too."""
    number = next((e.get("number") for e in entries if isinstance(e, Mapping) and e.get("number")), None)
    return f"fig {number}" if number else f"claim {claim_id}"


def _figure_name(claim_id: str, *entries: Mapping[str, Any]) -> str:
    """'Fig 1.3', by the figure's number in the newer edition (else the older), or its id when it has none."""
    number = next((e.get("number") for e in entries if e.get("number")), None)
    return f"Fig {number}" if number else f"claim {claim_id}"


def _says(key: str, *entries: Mapping[str, Any]) -> str:
    """The words of a claim a check proves, quoted: " 'left the job running for 63 minutes'"; empty if unknown."""
    for entry in entries:
        checks = entry.get("checks")
        says = checks.get(key, {}).get("says") if isinstance(checks, Mapping) else None
        if isinstance(says, str) and says:
            return f" '{says}'"
    return ""


def _claim_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    lines = ([f"{_figure_name(c, new[c])} ({c}) added" if new[c].get("number") else f"claim {c} added"
              for c in sorted(set(new) - set(old))]
             + [f"{_figure_name(c, old[c])} ({c}) removed" if old[c].get("number") else f"claim {c} removed"
                for c in sorted(set(old) - set(new))])
    lines += margin_changes(old, new)
    for claim in sorted(set(old) & set(new)):
        before, after = old[claim], new[claim]
        name = _figure_name(claim, after, before)
        if before.get("verdict") != after.get("verdict"):
            lines.append(f"{name}: verdict {before.get('verdict')} → {after.get('verdict')}")
        lines += [f"{name}{_says(path.split('.')[0], after, before)}: {path}: {moved}"
                  for path, moved in _value_moves(before.get("observed"), after.get("observed"))]
    return lines


def _margin_of(entry: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    checks = entry.get("checks")
    margin = checks.get(key, {}).get("margin") if isinstance(checks, Mapping) else None
    return margin if isinstance(margin, Mapping) and isinstance(margin.get("headroom"), int | float) else None


def _shrink(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[int, float]:
    """How much a margin shrank, most first: by fraction where both have one, else (after those) by headroom."""
    if isinstance(old.get("fraction"), int | float) and isinstance(new.get("fraction"), int | float):
        return 0, new["fraction"] - old["fraction"]
    return 1, new["headroom"] - old["headroom"]


def margin_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """"Fig 1.3 'left the job running for 63 minutes': headroom 0.3 -> 0.1 min (fraction 0.6 -> 0.2)" for each
    check whose margin moved between the editions, the one that shrank most first (older manifests: none)."""
    moved = []
    for claim in sorted(set(old) & set(new)):
        keys = new[claim].get("checks") if isinstance(new[claim].get("checks"), Mapping) else {}
        for key in keys:
            before, after = _margin_of(old[claim], key), _margin_of(new[claim], key)
            if before is None or after is None or (before["headroom"], before.get("edge")) == (
                    after["headroom"], after.get("edge")):
                continue
            unit = f" {after['unit']}" if after.get("unit") else ""
            fraction = (f" (fraction {fmt(before['fraction'])} -> {fmt(after['fraction'])})"
                        if _shrink(before, after)[0] == 0 else "")
            text = (f"{_figure_name(claim, new[claim], old[claim])}{_says(key, new[claim], old[claim])}: headroom "
                    f"{fmt(before['headroom'])} -> {fmt(after['headroom'])}{unit}{fraction}")
            moved.append((_shrink(before, after), text))
    return [text for _, text in sorted(moved, key=lambda item: item[0])]


def _value_moves(old: Any, new: Any) -> list[tuple[str, str]]:
    """('check.field', 'old → new') for every observed value that moved."""
    before, after = dict(_leaves(old)), dict(_leaves(new))
    lines = []
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            name = ".".join(path) or "observed"
            lines.append((name, f"{_show(before.get(path))} → {_show(after.get(path))}"))
    return lines


def _figure_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    changed = _changed_fields(old, new, (("data (CSV)", "csv_sha256"), ("image (SVG)", "svg_sha256")))
    for figure in sorted(set(old) & set(new)):  # the descriptor, where both manifests record it
        if {"json_sha256"} <= old[figure].keys() & new[figure].keys() \
                and old[figure]["json_sha256"] != new[figure]["json_sha256"]:
            changed.setdefault(figure, []).append("descriptor (JSON)")
    return _added_removed(old, new, "figure") + [f"figure {figure}: {' and '.join(what)} changed"
                                                 for figure, what in sorted(changed.items())]


def _metric_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    lines = _added_removed(old, new, "Metrics row")
    for row in sorted(set(old) & set(new)):
        for column in sorted(set(old[row]) | set(new[row])):
            before, after = old[row].get(column), new[row].get(column)
            if before != after:
                lines.append(f"Metrics row {row}, {column}: {before} → {after}")
    return lines


# --- readable pages ----------------------------------------------------------------------------------------

SECTION_TITLES = {"runs": "Runs", "claims": "Claims", "figures": "Figures", "metrics": "Metrics page rows"}


def changes_text(old: Manifest, new: Manifest) -> str:
    """The plain-text report of `make diff`."""
    found = changes(old, new)
    lines = [f"Edition {old['edition']} → {new['edition']}"]
    for section, items in found.items():
        lines.append(f"{SECTION_TITLES[section]}: " + ("no change" if not items else f"{len(items)} changed"))
        lines += [f"  {item}" for item in items]
    return "\n".join(lines) + "\n"


def changes_markdown(old: Manifest, new: Manifest) -> str:
    found = changes(old, new)
    parts = [f"# What changed from edition {_md(old['edition'])} to {_md(new['edition'])}\n"]
    for section, items in found.items():
        parts.append(f"## {SECTION_TITLES[section]}\n")
        parts.append("\n".join(f"- {_md(item)}" for item in items) + "\n" if items else "No change.\n")
    return "\n".join(parts)


def manifest_markdown(manifest: Manifest) -> str:
    """The manifest as a page a reader can follow: one table per section."""
    tools = ", ".join(f"{name} {version}" for name, version in manifest["tools"].items())
    miles, epoch = manifest["miles"], manifest["source_date_epoch"]
    parts = [
        f"# Edition {_md(manifest['edition'])}: manifest\n",
        f"Edition {_md(manifest['edition'])} of {_md(manifest['date'])}, built from project commit "
        f"{md_code(manifest['project_commit'])} with {md_code('SOURCE_DATE_EPOCH=' + str(epoch))}; "
        f"Miles {_md(miles['image'])}, {_md(miles['branch'])} of {_md(miles['commit_date'])}, "
        f"commit {md_code(miles['commit'])}. Tools: {_md(tools)}. The same data as [manifest.json](manifest.json).\n",
        _table("Runs", ["run", "provenance", "files", "sha256"],
               [[_md(run), _md(_show(v["provenance"].get("provenance", ""))), _md(v["files"]), md_code(v["sha256"])]
                for run, v in manifest["runs"].items()]),
        _table("Figures", ["figure", "SVG sha256", "CSV sha256"],
               [[_md(fig), md_code(v["svg_sha256"]), md_code(v["csv_sha256"])]
                for fig, v in manifest["figures"].items()]),
        _table("Claims", ["figure", "verdict", "observed"],
               [[_md(claim), _md(v["verdict"]), _md(_show(v["observed"]))] for claim, v in manifest["claims"].items()],
               lead=proof_sentence(manifest.get("proof") or {})),
        _table("Metrics page rows", ["row", "values"],
               [[_page_cell(row), "; ".join(f"{_md(k)}: {_page_cell(v)}" for k, v in cells.items())]
                for row, cells in manifest["metrics"].items()]),
    ]
    return "\n".join(parts)


def _md(text: Any) -> str:
    """Text safe inside a Markdown table cell, or anywhere in the page (`_escape.md_text`)."""
    return md_text(text)


def _page_cell(text: str) -> str:
    """A Metrics page cell (Markdown the build wrote, parsed back from the page) as safe Markdown again: a code
    span stays one, any other text is read back to plain text and escaped ('Rollout › `x`' keeps its code)."""
    heading, mark, cell = str(text).rpartition(" › ")
    code = re.fullmatch(r"(`+) ?(.*?) ?\1", cell)
    shown = md_code(code[2]) if code else md_text(html.unescape(re.sub(r"\\(.)", r"\1", cell)))
    return f"{_md(heading)}{mark}{shown}"


def _table(title: str, header: list[str], rows: list[list[str]], lead: str = "") -> str:
    heading = f"## {title}\n" + (f"\n{lead}\n" if lead else "")
    if not rows:
        return f"{heading}\nNone.\n"
    lines = [heading, "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def html_page(title: str, markdown_text: str) -> str:
    """A standalone page (the site's theme is not involved: these pages are written after the build)."""
    import markdown

    body = markdown.markdown(markdown_text, extensions=["tables"])
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{html_text(title)}</title>\n"
        "<style>body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;"
        "line-height:1.5}table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #ccc;"
        "padding:.2rem .5rem;text-align:left;vertical-align:top}code{font-size:.8rem;word-break:break-all}"
        "</style>\n</head>\n<body>\n<p><a href=\"index.html\">← back to the manual</a></p>\n"
        f"{body}\n</body>\n</html>\n"
    )
