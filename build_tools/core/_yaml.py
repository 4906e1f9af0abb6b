"""YAML reading for the build, the one place a YAML error becomes a line number.

Every YAML input (run.yaml, edition.yml, palette.yml, docs/data/*.yml, figure blocks) is read here:
- with libyaml's C parser where PyYAML has it (the pure-Python one is slow);
- refusing aliases (`*name`): nothing the manual reads needs them, and they are how a small file
  expands into gigabytes (the "billion laughs");
- refusing a key given twice in one mapping (YAML would silently keep the last one);
- keeping dates as text (`2026-02-30` is then a schema error naming the field, not a crash);
- and remembering the line of every key, so a schema error can name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from build_tools.core._exceptions import InputProblem, Problem

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

Path_ = tuple[str | int, ...]


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """The safe loader without the timestamp resolver: a date stays the text the author wrote."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in _Base.yaml_implicit_resolvers.items()
    }


@dataclass
class YamlDoc:
    """A parsed YAML document: plain Python data, and the 1-based line of every key and list item."""

    value: Any
    lines: dict[Path_, int] = field(default_factory=dict)

    def line_of(self, path: Path_) -> int | None:
        """The line of a key path, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None  # a top-level field: the problem is the file's, not a line's


def parse_yaml(text: str, where: str) -> YamlDoc:
    """Parse one YAML document; raise InputProblem naming where and the line for anything wrong."""
    loader = _Loader(text)
    loader.where = where
    try:
        node = loader.get_single_node()
        if node is None:
            return YamlDoc(None, {(): 1})
        doc = YamlDoc(None, {(): node.start_mark.line + 1})
        doc.value = _build(node, (), loader, doc, set())
        return doc
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise InputProblem(Problem(where, mark.line + 1 if mark else None, None,
                                   f"not valid YAML: {error.problem or error.context}")) from None
    except yaml.YAMLError as error:
        raise InputProblem(Problem(where, None, None, f"not valid YAML: {error}")) from None
    except RecursionError:
        raise InputProblem(Problem(where, None, None, "not valid YAML: nested too deeply")) from None
    except ValueError:  # a scalar the constructor cannot make, e.g. an integer of 5,000 digits
        raise InputProblem(Problem(where, None, None, "not valid YAML: a number beyond the reader's limits")) from None
    finally:
        loader.dispose()


def load_yaml(text: str, where: str = "<yaml>") -> Any:
    """The plain data of a YAML document (see parse_yaml)."""
    return parse_yaml(text, where).value


def _build(node: yaml.Node, path: Path_, loader: _Loader, doc: YamlDoc, seen: set[int]) -> Any:
    if id(node) in seen:
        raise InputProblem(Problem(_where(loader), doc.line_of(path), _dotted(path),
                                   "YAML aliases (*name) are not allowed here; write the value out"))
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_object(node, deep=True)
    seen.add(id(node))
    if node.tag not in _PLAIN_COLLECTIONS:
        raise InputProblem(Problem(_where(loader), node.start_mark.line + 1, _dotted(path),
                                   f"YAML tag {node.tag!r} is not allowed here; write a plain list or mapping"))
    if isinstance(node, yaml.SequenceNode):
        items = []
        for index, item in enumerate(node.value):
            doc.lines[(*path, index)] = item.start_mark.line + 1
            items.append(_build(item, (*path, index), loader, doc, seen))
        return items
    if isinstance(node, yaml.MappingNode):
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise InputProblem(Problem(_where(loader), key_node.start_mark.line + 1, _dotted(path),
                                           "YAML merge keys (<<) are not allowed here; write the fields out"))
            key = _build(key_node, path, loader, doc, seen)
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise InputProblem(Problem(_where(loader), key_node.start_mark.line + 1, _dotted(path),
                                           "a key must be a plain name"))
            line = key_node.start_mark.line + 1
            if key in mapping:
                raise InputProblem(Problem(_where(loader), line, _dotted((*path, str(key))),
                                           f"given twice (first on line {doc.lines[(*path, str(key))]}); "
                                           "YAML would keep only the last one"))
            doc.lines[(*path, str(key))] = line
            mapping[key] = _build(value_node, (*path, str(key)), loader, doc, seen)
        return mapping
    raise InputProblem(Problem(_where(loader), node.start_mark.line + 1, _dotted(path), "unexpected YAML node"))


_PLAIN_COLLECTIONS = ("tag:yaml.org,2002:seq", "tag:yaml.org,2002:map")


def _where(loader: _Loader) -> str:
    return getattr(loader, "where", "<yaml>")


def _dotted(path: Path_) -> str | None:
    return ".".join(str(part) for part in path) or None
