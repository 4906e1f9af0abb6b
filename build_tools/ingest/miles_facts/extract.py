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
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from build_tools.core._exceptions import ManualError, display_path
from build_tools.ingest.miles_facts.checkout import checkout_of, python_of, recorded_commit, refused, source_text
from build_tools.ingest.schemas_dump import is_flag_name
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
    """meta.json's args keys: miles/dashboard/args.py _SNAPSHOT_KEYS, read with ast (a literal tuple of flag names);
    ManualError naming the file for anything else."""
    relative = "miles/dashboard/args.py"
    where = display_path(checkout / relative)
    tree = python_of(source_text(checkout, relative), where)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_SNAPSHOT_KEYS" for t in node.targets):
            try:
                keys = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                keys = None
            if not isinstance(keys, tuple | list) or not all(is_flag_name(key) for key in keys):
                raise ManualError(f"{where}:{node.lineno}: _SNAPSHOT_KEYS is not a literal tuple of flag names "
                                  "('wandb_group', ...): this tool reads it without running Miles")
            return list(keys)
    raise ManualError(f"{where}: no _SNAPSHOT_KEYS: expected the tuple of args keys Miles' dashboard writes")


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


# The modules whose code builds the parser (train.py's parse_args): checked as files before they run.
PARSER_MODULES = ("miles/utils/arguments.py", "miles/backends/fsdp_utils/arguments.py")


def _built_parser(checkout: Path) -> argparse.ArgumentParser:
    """read_parser, whatever Miles' code on this checkout raises (it is the checkout's, not a bug of the tool):
    one line naming the checkout's file and line where it was raised."""
    try:
        return read_parser(checkout)
    except (Exception, SystemExit) as error:
        raise ManualError(_raised_where(error, checkout)) from None


def _raised_where(error: BaseException, checkout: Path) -> str:
    if isinstance(error, SyntaxError) and error.filename:
        return f"{display_path(error.filename)}:{error.lineno or 1}: not Python ({error.msg})"
    inside = [frame for frame in traceback.extract_tb(error.__traceback__)
              if os.path.realpath(frame.filename).startswith(os.path.realpath(checkout) + os.sep)]
    where = f"{display_path(inside[-1].filename)}:{inside[-1].lineno}" if inside else display_path(checkout)
    what = " ".join(str(error).split())[:200]
    return f"{where}: Miles' parser could not be built from this checkout ({type(error).__name__}: {what})"


def _commit(checkout: Path) -> str:
    """The pinned copy's commit from its manifest; a checkout's from git or its COMMIT file."""
    if checkout == UPSTREAM:
        return str(manifest()["miles"]["commit"])
    return recorded_commit(checkout)


def main(argv: list[str]) -> int:
    """MILES_CHECKOUT may be empty: the Miles copied into build_tools/miles_code/upstream/ (`make miles-code`)."""
    if len(argv) != 2:
        print("usage: python -m build_tools.ingest.miles_facts.extract MILES_CHECKOUT OUTPUT.json", file=sys.stderr)
        return 2
    try:
        # No argument: the pinned copy, miles_code/upstream/; else a checkout, checked as a folder first
        checkout = checkout_of(argv[0], "miles-facts") if argv[0] else UPSTREAM
        commit = _commit(checkout)
        for relative in PARSER_MODULES:  # read and parsed before any of Miles' code runs: each problem one line
            python_of(source_text(checkout, relative), display_path(checkout / relative))
        keys = snapshot_keys(checkout)
        flags = flags_of(_built_parser(checkout))
    except ManualError as error:
        return refused(error)
    output = Path(argv[1])
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
