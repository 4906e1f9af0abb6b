"""Read Miles' launch parser from a Miles checkout and write it as data: `make miles-facts MILES=/path/to/miles`.

Miles cannot be installed here (torch, SGLang, Megatron), so its own parser-building code runs with every
module outside the checkout and the standard library replaced by an inert stand-in (build_tools/miles_code/
stand_ins.py; without a checkout, the copy in build_tools/miles_code/upstream/ is read): the parser is the one
`train.py --train-backend fsdp` builds (`build_fsdp_parser(get_miles_extra_args_provider())`, Miles'
miles/utils/arguments.py parse_args), its flags read from argparse's own actions. What the stand-ins hide is
said in the data: SGLang's ServerArgs flags (`--sglang-*` that Miles copies from SGLang) and the router's, which
come from the SGLang the image installs, not from Miles' source.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from build_tools.miles_code import UPSTREAM, manifest, stand_ins


def _plain(value: Any) -> Any:
    """A default or choice as JSON holds it; a callable or object as its name."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if value is argparse.SUPPRESS:
        return "==SUPPRESS=="
    return getattr(value, "__name__", type(value).__name__)


def _action_kind(action: argparse.Action) -> str:
    names = {argparse._StoreTrueAction: "store_true", argparse._StoreFalseAction: "store_false",
             argparse.BooleanOptionalAction: "boolean_optional", argparse._StoreAction: "store",
             argparse._AppendAction: "append", argparse._StoreConstAction: "store_const",
             argparse._CountAction: "count"}
    return names.get(type(action), type(action).__name__)


def flags_of(parser: argparse.ArgumentParser) -> dict[str, dict[str, Any]]:
    flags = {}
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        flags[action.dest] = {
            "options": list(action.option_strings),
            "action": _action_kind(action),
            "type": _plain(action.type) if action.type is not None else None,
            "nargs": _plain(action.nargs),
            "choices": _plain(list(action.choices)) if action.choices is not None else None,
            "default": _plain(action.default),
            "required": action.required,
        }
    return dict(sorted(flags.items()))


def snapshot_keys(checkout: Path) -> list[str]:
    """meta.json's args keys: miles/dashboard/args.py _SNAPSHOT_KEYS, read with ast (a literal tuple)."""
    tree = ast.parse((checkout / "miles" / "dashboard" / "args.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_SNAPSHOT_KEYS" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise SystemExit("miles/dashboard/args.py: no _SNAPSHOT_KEYS")


def read_parser(checkout: Path) -> argparse.ArgumentParser:
    # SGLang's and the router's flags stay out (stand-ins), even where upstream/ holds their files: the data is
    # Miles' own parser.
    stand_ins.install(checkout, inert=("sglang", "sglang_router"))
    sys.argv = ["train.py", "--train-backend", "fsdp"]
    from miles.backends.fsdp_utils.arguments import build_fsdp_parser  # type: ignore[import-not-found]
    from miles.utils.arguments import get_miles_extra_args_provider  # type: ignore[import-not-found]

    with contextlib.redirect_stderr(io.StringIO()):  # Miles' early parse_known_args prints a usage line: not ours
        parser: argparse.ArgumentParser = build_fsdp_parser(get_miles_extra_args_provider())
    return parser


def _commit(checkout: Path) -> str:
    if checkout == UPSTREAM:
        return str(manifest()["miles"]["commit"])
    return subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip() or (checkout / "COMMIT").read_text().strip()


def main(argv: list[str]) -> int:
    """MILES_CHECKOUT may be empty: the Miles copied into build_tools/miles_code/upstream/ (`make miles-code`)."""
    if len(argv) != 2:
        print("usage: python -m build_tools.ingest.miles_facts.extract MILES_CHECKOUT OUTPUT.json", file=sys.stderr)
        return 2
    checkout, output = Path(argv[0]) if argv[0] else UPSTREAM, Path(argv[1])
    commit = _commit(checkout)
    flags = flags_of(read_parser(checkout))
    keys = snapshot_keys(checkout)
    data = {
        "about": "Miles' launch flags with --train-backend fsdp (train.py's parser: build_fsdp_parser with "
                 "get_miles_extra_args_provider), and the args keys its dashboard writes to meta.json "
                 "(miles/dashboard/args.py _SNAPSHOT_KEYS, written when the parser has them). SGLang's own "
                 "server flags (--sglang-* copied from sglang's ServerArgs) and the router's come from the "
                 "SGLang the image installs: not listed here.",
        "miles_commit": commit,
        "regenerate": "make miles-facts MILES=/path/to/miles-checkout",
        "snapshot_keys": keys,
        "flags": flags,
    }
    output.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{output}: {len(flags)} flags, {len(keys)} meta.json keys, from Miles {commit}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
