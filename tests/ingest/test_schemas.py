"""The schemas are the documentation: runs/README.md lists exactly their fields, with their types in words."""

from __future__ import annotations

import re

import pytest

from build_tools.ingest import load, schemas, schemas_dump, schemas_run
from tests.conftest import ROOT

README = (ROOT / "runs" / "README.md").read_text(encoding="utf-8")


def test_run_yaml_table_is_the_schema() -> None:
    rows = re.findall(r"^\| `([a-z_.]+)` \| ([^|`][^|]*) \| [^|]+ \|$", README, flags=re.M)
    assert [(field, kind.strip()) for field, kind in rows] == schemas.field_rows(schemas_run.RunYaml)


@pytest.mark.parametrize("stream", [*load.DASHBOARD_STREAMS, *load.LAB_STREAMS])
def test_each_stream_table_is_the_schema(stream: str) -> None:
    rows = re.findall(rf"^\| `{stream}` \| `([a-z_0-9]+)` \| ([^|]+) \|$", README, flags=re.M)
    assert [(field, kind.strip()) for field, kind in rows] == schemas.field_rows(schemas_dump.STREAM_RECORDS[stream])


def test_every_stream_has_a_schema_and_a_folder() -> None:
    assert sorted(schemas_dump.STREAM_RECORDS) == sorted([*load.DASHBOARD_STREAMS, *load.LAB_STREAMS])


@pytest.mark.parametrize(("value", "expected"), [
    ({"kind": "heat_pause", "t0": 1.0, "t1": 2.0, "detail": "x", "detial": "y"},
     "f:3: detial: unknown field; did you mean 'detail'?"),
    ({"kind": "heat_pause", "t0": True, "t1": 2.0, "detail": "x"},
     "f:3: t0: expected a number, found True"),
    ({"kind": "heat_pause", "t0": "3", "t1": 2.0, "detail": "x"},
     "f:3: t0: expected a number, found the string '3' (write the number without quotes)"),
    ({"kind": "heat_pause", "t0": 1.0, "t1": 2.0},
     "f:3: detail: missing (expected a string)"),
])
def test_record_errors_read_as_one_line(value: dict, expected: str) -> None:
    record, problems = schemas_dump.validate_record("events", value, "f", 3)
    assert record is None
    assert [str(problem) for problem in problems] == [expected]


def test_strict_types_do_not_coerce() -> None:
    record, problems = schemas_dump.validate_record("host_memory", {"ts": 1, "total_kib": 10.0, "available_kib": 1},
                                               "f", 1)
    assert [str(p) for p in problems] == ["f:1: total_kib: expected a whole number, found 10.0"]


@pytest.mark.parametrize(("actual", "wanted", "same"), [
    (1024, 1024.0, True), (True, 1, False), (1, True, False), (False, 0, False), (True, True, True),
    ("4B", "4B", True), ("16", 16, False), (None, None, True), (0.95, 0.95, True),
])
def test_one_rule_for_the_same_setting(actual: object, wanted: object, same: bool) -> None:
    assert schemas.same_setting(actual, wanted) is same
