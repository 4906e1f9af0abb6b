"""The validation vocabulary of the build: the field types every schema is made of, and its error messages.

Each schema is a pydantic v2 model in strict mode: a field has one type (a `1` is not `true`, a `"3"` is
not `3`), unknown keys are errors that suggest the closest known name, and the checks a single value or
record needs live beside its fields. `validate()` turns pydantic's errors into the build's one-line
problems: `file:line: field: what is wrong (what was expected)`.

The schemas themselves, one per input file: schemas_run.py (run.yaml), schemas_dump.py (the dashboard dump:
meta.json, its flag names, the stream records; what the other sources yield), schemas_manual.py (the manual's
own files: edition.yml, docs/data/*.yml, figure blocks, palette.yml).
runs/README.md's field tables are tested against the schemas through field_rows (tests/ingest/test_schemas.py).
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, NotRequired, TypeVar, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from build_tools.core._exceptions import Problem

# Markers Miles writes for non-finite numbers, since JSON has none; Python's json writes them bare.
NON_FINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
# Every time of a run falls between the epoch and the end of the last year an edition may carry (_edition):
# a later one is no run of this manual, and past year 9999 not even a date Python can show.
LATEST_TIME = dt.datetime(2201, 1, 1, tzinfo=dt.UTC).timestamp()


# --- value types ------------------------------------------------------------------------------


class WrittenNonFinite(float):
    """A NaN or infinity written as such (bare, as Python's json writes it), not a number that overflowed."""


# A decimal number, as JSON or Python would print one (surrounding spaces allowed, as float() allows them).
_NUMBER_TEXT = re.compile(r"\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*")


def number_in_text(text: str) -> bool:
    """A number written as a string ("0.5"): refused where a mapping may hold text (a metric), never read as a
    text and so as no value. The markers "NaN", "Infinity" and "-Infinity" are how Miles writes those numbers."""
    return _NUMBER_TEXT.fullmatch(text) is not None


def _number_text(text: str) -> PydanticCustomError:
    return PydanticCustomError("number_text", "expected a number, found the string {found} (write the number without "
                                              "quotes)", {"found": _shown(text)})


def _number(value: Any) -> int | float:
    """An int or float, never a bool; the NaN/Infinity markers become floats (kept, never dropped)."""
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    if isinstance(value, str) and number_in_text(value):
        raise _number_text(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("number", "expected a number, found {found}", {"found": _shown(value)})
    if isinstance(value, float):
        if isinstance(value, WrittenNonFinite):
            return float(value)
        if math.isinf(value):  # json reads 1e999 as an infinity: a number beyond a double's range
            raise PydanticCustomError("range", "is a number beyond the range of a double")
    else:
        _int64(value)
    return value


def _int64(value: int) -> int:
    """An integer within 64 bits: the dump's JSON reader refuses a longer one (stream_lines._parse_int); a source
    reader that reads text itself (a log, a CSV) checks it here."""
    if not -(2**63) <= value < 2**63:
        raise PydanticCustomError("range", "is an integer beyond 64 bits")
    return value


def _time(value: Any) -> float | int:
    """Seconds since the epoch: finite and not negative."""
    number = _number(value)
    if not math.isfinite(number) or number < 0:
        raise PydanticCustomError("time", "expected a time in seconds, finite and not negative, found {found}",
                                  {"found": _shown(value)})
    if number >= LATEST_TIME:
        raise PydanticCustomError("time", "expected a time in seconds before the year 2201 (at most "
                                  f"{LATEST_TIME:.0f}), found {{found}}", {"found": _shown(value)})
    return number


def is_time(value: Any) -> bool:
    """Whether value is a time the schemas accept (epoch seconds inside the window)."""
    try:
        _time(value)
    except PydanticCustomError:
        return False
    return True


def _duration(value: Any) -> float | int:
    """Seconds something lasted: finite, not negative, and no longer than the window every time falls in."""
    number = _number(value)
    if not (math.isfinite(number) and 0 <= number < LATEST_TIME):
        raise PydanticCustomError("duration", "expected a duration in seconds, finite, not negative and shorter "
                                  f"than {LATEST_TIME:.0f} (the epoch to 2201), found {{found}}",
                                  {"found": _shown(value)})
    return number


def _iso_date(value: Any) -> str:
    """A real calendar date written YYYY-MM-DD, kept as that text (every consumer sees one type)."""
    if isinstance(value, str) and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        try:
            dt.date.fromisoformat(value)
            return value
        except ValueError:
            pass
    raise PydanticCustomError("date", "expected a real date written YYYY-MM-DD, found {found}",
                              {"found": _shown(value)})


def _positive(value: Any) -> float | int:
    """A finite number above 0 (a margin's fraction to warn below)."""
    number = _number(value)
    if not math.isfinite(number) or number <= 0:
        raise PydanticCustomError("positive", "expected a number above 0, found {found}", {"found": _shown(value)})
    return number


def _non_empty(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("empty", "expected a non-empty string")
    return value


def _edition(value: Any) -> str:
    if isinstance(value, str) and (match := re.fullmatch(r"([0-9]{4})\.([0-9]{2})", value)):
        year, month = int(match[1]), int(match[2])
        if 2000 <= year <= 2200 and 1 <= month <= 12:
            return value
    raise PydanticCustomError("edition", "expected YEAR.MONTH with a real month, e.g. \"2026.10\", found {found}",
                              {"found": _shown(value)})


def _commit(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{7,40}", value):
        return value
    hint = " (quote it: YAML reads a commit of digits as a number)" if isinstance(value, int) else ""
    raise PydanticCustomError("commit", "expected text of 7 to 40 hex digits, found {found}" + hint,
                              {"found": _shown(value)})


Number = Annotated[int | float, PlainValidator(_number)]
Time = Annotated[int | float, PlainValidator(_time)]
Positive = Annotated[int | float, PlainValidator(_positive)]
IsoDate = Annotated[str, PlainValidator(_iso_date)]
Text = Annotated[str, AfterValidator(_non_empty)]
Count = Annotated[int, Field(ge=0)]
Step = Annotated[int, Field(ge=0)]
# What run.yaml and meta.json count (GPUs, samples, rollouts, steps, tokens): Miles, torch and SGLang hold these in
# a C int, so a larger one is a typo, never a run (YAML reads 10**23 as an int as readily as 8).
MOST_COUNT = 2**31 - 1
Whole = Annotated[int, Field(ge=1, le=MOST_COUNT)]
# The largest model a run may name: ten trillion parameters, five times the largest ever trained.
MOST_PARAMETERS = 10**13
# Memory of one machine, in GiB or GB: a pebibyte is far beyond any.
MOST_MEMORY = 2**20
Duration = Annotated[int | float, PlainValidator(_duration)]
Edition = Annotated[str, PlainValidator(_edition)]
Commit = Annotated[str, PlainValidator(_commit)]
# A phase still open when written has t1 == -1; any other end is a time.
def _phase_end(value: Any) -> int | float:
    return value if _number(value) == -1 else _time(value)


PhaseEnd = Annotated[int | float, PlainValidator(_phase_end)]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


class Schema(BaseModel):
    """A mapping of known fields: strict types, unknown keys refused."""

    model_config = _STRICT


def _scalar(value: Any) -> int | float | str | bool:
    if isinstance(value, str):
        if number_in_text(value):
            raise _number_text(value)
        return NON_FINITE.get(value, value)
    return value if isinstance(value, bool) else _number(value)


Scalar = Annotated[int | float | str | bool, PlainValidator(_scalar)]


def _source_time(value: Any) -> float | int:
    """A time a source gives, or NaN where it printed none (a CSV, a log line before any timestamp); a NaN
    written as the time itself (WrittenNonFinite) is refused as the dump refuses it."""
    if isinstance(value, float) and math.isnan(value) and not isinstance(value, WrittenNonFinite):
        return value
    return _time(value)


# A source reads its own text (a log, a CSV), not through the dump's JSON reader that refuses an integer
# beyond 64 bits: its whole numbers are checked here.
SourceStep = Annotated[Step, AfterValidator(_int64)]
SourceCount = Annotated[Count, AfterValidator(_int64)]


def _hex(value: Any) -> str:
    if isinstance(value, str) and re.fullmatch(r"#[0-9a-fA-F]{6}", value):
        return value.lower()
    raise PydanticCustomError("hex", "expected a colour as #rrggbb, found {found}", {"found": _shown(value)})


def _grey(value: Any) -> str:
    colour = _hex(value)
    if not colour[1:3] == colour[3:5] == colour[5:7]:
        raise PydanticCustomError("grey", "expected a grey (equal red, green and blue), found {found}",
                                  {"found": _shown(value)})
    return colour


Hex = Annotated[str, PlainValidator(_hex)]
Grey = Annotated[str, PlainValidator(_grey)]


def same_setting(actual: Any, wanted: Any) -> bool:
    """Two values of a run.yaml field or launch flag are the same: numbers by value (1024 == 1024.0),
    true and false only as themselves (true is not 1), anything else exactly. The one rule of the build."""
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return actual is wanted
    if isinstance(actual, int | float) and isinstance(wanted, int | float):
        return float(actual) == float(wanted)
    return bool(actual == wanted)


# --- errors -----------------------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)


def validate(schema: type[M], data: Any, where: str,
             line_of: Callable[[tuple[Any, ...]], int | None]) -> tuple[M | None, list[Problem]]:
    """data checked against schema: (the model, []) or (None, one problem per wrong field)."""
    try:
        return schema.model_validate(data), []
    except ValidationError as error:
        return None, problems_of(error, where, line_of, schema)


def problems_of(error: ValidationError, where: str, line_of: Callable[[tuple[Any, ...]], int | None],
                schema: Any) -> list[Problem]:
    """pydantic's errors as the build's problems, one per field (a union's alternatives merged)."""
    problems: dict[tuple[Any, ...], Problem] = {}
    for item in error.errors(include_url=False):
        # An unknown key is the last part of its location whatever it is called ("int", "a[0]").
        loc = _field_path(item["loc"][:-1]) + item["loc"][-1:] if item["type"] == "extra_forbidden" \
            else _field_path(item["loc"])
        if loc in problems:
            continue
        field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".") or None
        problems[loc] = Problem(where, line_of(loc), field, _message(item, loc, schema))
    return list(problems.values())


def _field_path(loc: Iterable[Any]) -> tuple[Any, ...]:
    """The fields of a pydantic location, without the names of union members and validators."""
    return tuple(part for part in loc if isinstance(part, int) or not (part in _MEMBER_NAMES or _TAG.match(part)))


_TAG = re.compile(r"^[a-z][a-z-]*\[.*\]$")  # pydantic's name of a validator or a union member


_MEMBER_NAMES = {"int", "float", "str", "bool", "none", "list", "dict", "literal", "nullable", "function-plain",
                 "function-after", "function-before", "constrained-int", "constrained-float"}

_PATTERN_WORDS = {
    r"^fig-[a-z0-9-]+$": "fig-<lower-case letters, digits, dashes>",
    r"^[a-z_][a-z0-9_]*$": "a module name under figures/ (lower-case letters, digits, _)",
    r"^[a-z0-9][a-z0-9.-]*$": "a run id (lower-case letters, digits, '.', '-')",
}

_EXPECTED = {
    "int_type": "a whole number", "int_from_float": "a whole number", "float_type": "a number",
    "string_type": "a string", "bool_type": "true or false", "list_type": "a list", "dict_type": "a mapping",
    "model_type": "a mapping of fields", "model_attributes_type": "a mapping of fields",
    "typed_dict_type": "a JSON object", "int_parsing": "a whole number", "none_required": "nothing (null)",
}


def _message(item: Any, loc: tuple[Any, ...], schema: Any) -> str:
    kind, found = item["type"], _shown(item.get("input"))
    if kind == "missing":
        return f"missing (expected {expected_of(schema, loc)})"
    if kind == "extra_forbidden":
        return "unknown field" + _did_you_mean(schema, loc)
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, found {found}"
    if kind == "literal_error":
        return f"expected {item['ctx']['expected']}, found {found}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        sign = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(item["ctx"].values()))
        return f"expected a value {sign} {bound}, found {found}"
    if kind == "string_pattern_mismatch":
        pattern = item["ctx"]["pattern"]
        return f"expected {_PATTERN_WORDS.get(pattern, f'text matching {pattern}')}, found {found}"
    return item["msg"] if "found" in item["msg"] else f"{item['msg']}, found {found}"


def _fields_at(schema: Any, loc: tuple[Any, ...]) -> dict[str, Any]:
    """The declared fields (name -> annotation) of the mapping that holds loc's last part."""
    node = schema
    for part in loc[:-1]:
        fields = _declared(node)
        if isinstance(part, int) or part not in fields:
            node = _inner(node)
            continue
        node = _inner(fields[part])
    return _declared(node)


def _declared(node: Any) -> dict[str, Any]:
    if isinstance(node, type) and issubclass(node, BaseModel):
        return {name: Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
                for name, info in node.model_fields.items()}
    if hasattr(node, "__annotations__") and hasattr(node, "__total__"):
        return dict(node.__annotations__)
    return {}


def _inner(annotation: Any) -> Any:
    """Unwrap Optional, Annotated and list[...] down to the type that has fields."""
    for _ in range(5):
        if _declared(annotation):
            return annotation
        args = [a for a in get_args(annotation) if a is not type(None)]
        if not args:
            return annotation
        annotation = args[0]
    return annotation


def _did_you_mean(schema: Any, loc: tuple[Any, ...]) -> str:
    if not loc:
        return ""
    known = sorted(_fields_at(schema, loc))
    if not known:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f" (expected one of: {', '.join(known)})" if len(known) <= 12 else " (runs/README.md lists the fields)"


def expected_of(schema: Any, loc: tuple[Any, ...]) -> str:
    """A person's words for the type of the field at loc: 'a whole number', 'a date YYYY-MM-DD', ..."""
    return describe(_fields_at(schema, loc).get(str(loc[-1]) if loc else "", Any))


def describe(annotation: Any) -> str:
    """A person's words for an annotation (also used to write and test runs/README.md's tables)."""
    words = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", Any: "any value"}
    if annotation in words:
        return words[annotation]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        for meta in annotation.__metadata__:
            if isinstance(meta, PlainValidator | AfterValidator) and meta.func in _VALIDATOR_WORDS:
                return _VALIDATOR_WORDS[meta.func] + _bounds(annotation.__metadata__)
        return describe(args[0]) + _bounds(annotation.__metadata__)
    if origin is NotRequired:
        return f"{describe(args[0])} (may be left out)"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is list:
        return f"a list of {describe(args[0]).removeprefix('a ').removeprefix('an ')}s" if args else "a list"
    if origin is dict:
        return "a mapping"
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return f"{describe(rest[0])}, or null" if len(rest) == 1 else "a value, or null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a mapping of fields"
    return "a value"


_VALIDATOR_WORDS: dict[Callable[..., Any], str] = {
    _number: "a number", _time: "a time (epoch seconds)", _iso_date: "a date YYYY-MM-DD", _edition: "YEAR.MONTH",
    _commit: "text of 7 to 40 hex digits", _int64: "a whole number within 64 bits", _non_empty: "a non-empty string",
    _phase_end: "a time, or -1 while open",
    _scalar: "a number, string or true/false", _duration: "a duration in seconds",
    _source_time: "a time (epoch seconds), or NaN where none was printed", _hex: "a colour #rrggbb",
    _grey: "a grey #rrggbb",
}


def _bounds(metadata: Iterable[Any]) -> str:
    """' >= 0', ' > 0 <= 1': the bounds annotated_types put on a field, in words."""
    words = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    flat = [x for m in metadata for x in (getattr(m, "metadata", None) or [m])]  # a Field(...) holds its own
    found = [f" {sign} {getattr(m, name)}" for m in flat for name, sign in words.items()
             if type(m).__name__ == name.capitalize()]
    return "".join(found)


# --- the schemas as documentation --------------------------------------------------------------


def field_rows(schema: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(dotted field, its type in words) for every field of a schema, nested mappings spelled out;
    runs/README.md's tables list exactly these (tests/ingest/test_schemas.py)."""
    rows: list[tuple[str, str]] = []
    for name, annotation in _declared(schema).items():
        inner = _inner(annotation)
        if isinstance(inner, type) and issubclass(inner, BaseModel) and inner is not schema:
            rows += field_rows(inner, f"{prefix}{name}.")
        else:
            rows.append((f"{prefix}{name}", describe(annotation)))
    return rows
