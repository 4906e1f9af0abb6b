"""The example runs' dashboard dumps are written by Miles' own writer (examples/_miles_dump.py driving
build_tools/miles_code/write_dump.py): what Miles writes, record for record, and what it writes on a GB10."""

from __future__ import annotations

import ast
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from examples import _miles_dump, build_all
from examples._runs import RUNS
from tests.conftest import ROOT, SAMPLES

RUNS_DIR = ROOT / "runs"
DUMPS = sorted(RUNS_DIR.glob("*/dashboard"))
MILES_SAMPLES = SAMPLES / "shared" / "miles-dashboard-samples"  # two dumps Miles' own code wrote
ARGS_PY = ROOT / "build_tools" / "miles_code" / "upstream" / "miles" / "dashboard" / "args.py"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def phases(dump: Path) -> list[dict[str, Any]]:
    return [record for hour in sorted((dump / "phases").glob("*.jsonl")) for record in lines(hour)]


def snapshot_keys() -> list[str]:
    """_SNAPSHOT_KEYS of Miles' dashboard (args.py), read without running it."""
    for node in ast.parse(ARGS_PY.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "_SNAPSHOT_KEYS":
            return list(ast.literal_eval(node.value))
    raise AssertionError("no _SNAPSHOT_KEYS in Miles' args.py")


def reread(dump: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-I", "-B", str(ROOT / "tests" / "miles_reread.py"), str(dump), str(out)],
                   check=True, capture_output=True)


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_regenerated_run_is_record_for_record_what_miles_store_writes(tmp_path: Path) -> None:
    """Miles' MetricStore parses every line of the regenerated dump into its record classes and writes them again:
    the same files, byte for byte (meta.json, metrics, phases, topology, lane_catalog.json)."""
    build_all(tmp_path / "runs")
    dump = tmp_path / "runs" / "no-watchdog" / "dashboard"
    reread(dump, tmp_path / "again")
    assert files(tmp_path / "again") == files(dump)
    assert sorted(files(dump)) == ["lane_catalog.json", "meta.json", "metrics.jsonl", "phases/20261015_02.jsonl",
                                   "topology.jsonl"]


def test_a_dump_of_another_writer_is_not_what_miles_writes(tmp_path: Path) -> None:
    """The comparison can fail: a metrics line with its keys in another order, or no lane catalog, differ."""
    dump = tmp_path / "dump"
    reread(RUNS_DIR / "no-watchdog" / "dashboard", dump)
    first, *rest = (dump / "metrics.jsonl").read_text().splitlines(keepends=True)
    record = json.loads(first)
    (dump / "metrics.jsonl").write_text(json.dumps(dict(reversed(record.items())), separators=(",", ":")) + "\n"
                                        + "".join(rest))
    (dump / "lane_catalog.json").unlink()
    reread(dump, tmp_path / "again")
    changed = {name for name, data in files(tmp_path / "again").items() if files(dump).get(name) != data}
    assert changed == {"metrics.jsonl", "lane_catalog.json"}


@pytest.mark.parametrize("dump", DUMPS, ids=[dump.parent.name for dump in DUMPS])
def test_meta_json_holds_every_snapshot_key_miles_keeps_with_the_parsers_values(dump: Path) -> None:
    meta = json.loads((dump / "meta.json").read_text(encoding="utf-8"))
    assert list(meta) == ["run_name", "start_ts", "args", "schema_version"]
    assert list(meta["args"]) == snapshot_keys()
    assert len(meta["args"]) == 23
    assert {key: meta["args"][key] for key in ("sglang_max_running_requests", "sglang_load_balance_method",
                                                 "router_dp_aware", "router_policy", "router_assignment_mode")} == {
        "sglang_max_running_requests": None, "sglang_load_balance_method": "auto", "router_dp_aware": False,
        "router_policy": "cache_aware", "router_assignment_mode": "random"}
    assert meta["run_name"] == meta["args"]["wandb_group"] == dump.parent.name


@pytest.mark.parametrize("dump", DUMPS, ids=[dump.parent.name for dump in DUMPS])
def test_every_metrics_record_carries_its_step_key_inside(dump: Path) -> None:
    """Miles' log functions put the step key in the payload, and tracking.log takes the step from there."""
    records = lines(dump / "metrics.jsonl")
    assert records and all(record["metrics"][record["step_key"]] == record["step"] for record in records)
    assert {record["step_key"] for record in records} == {"rollout/step", "train/step"}


@pytest.mark.parametrize("dump", DUMPS, ids=[dump.parent.name for dump in DUMPS])
def test_every_phase_is_written_open_when_it_starts(dump: Path) -> None:
    """Timer.start has the phase sink push an open marker (t1 = -1.0) at once; the closing record follows."""
    records = phases(dump)
    opened = [(r["node"], r["rank"], r["name"], r["t0"]) for r in records if r["t1"] == -1.0]
    closed = [(r["node"], r["rank"], r["name"], r["t0"]) for r in records if r["t1"] != -1.0]
    assert len(set(opened)) == len(opened) and set(closed) <= set(opened)
    still_open = set(opened) - set(closed)
    assert still_open == ({("192.168.1.42", -1, "rollout", max(t0 for *_, t0 in opened))}
                          if dump.parent.name == "no-watchdog" else set())


def test_the_records_have_the_shape_of_the_dumps_miles_wrote() -> None:
    """Each stream's records have the fields, in the order, of the same stream in the dumps Miles' own code wrote."""
    def shape(dump: Path) -> dict[str, set[tuple[str, ...]]]:
        found: dict[str, set[tuple[str, ...]]] = {"metrics": {tuple(r) for r in lines(dump / "metrics.jsonl")},
                                                  "phases": {tuple(r) for r in phases(dump)}}
        if (dump / "topology.jsonl").exists():
            found["topology"] = {tuple(r) for r in lines(dump / "topology.jsonl")}
            found["engines"] = {tuple(e) for r in lines(dump / "topology.jsonl") for e in r["engines"]}
        if (dump / "lane_catalog.json").exists():
            catalog = json.loads((dump / "lane_catalog.json").read_text())
            found["lane_catalog"] = {tuple(catalog)} | {tuple(lane) for lane in catalog["lanes"].values()}
        return found

    miles = shape(MILES_SAMPLES / "four-gpu-colocated")
    for dump in DUMPS:
        ours = shape(dump)
        assert {name: ours[name] for name in miles} == miles, dump


def test_no_example_has_a_gpu_util_stream_and_the_lab_recording_holds_the_utilisation() -> None:
    """On a GB10 Miles' sampler writes no gpu_util tick; the runs whose figures read GPU utilisation have it from
    the lab's recording (lab/gpu_temp, as `manual record` writes it)."""
    assert not list(RUNS_DIR.glob("*/dashboard/gpu_util*"))
    sampled = [spec.run_id for spec in RUNS if "gpu_util" in spec.streams]
    assert sampled
    for run_id in sampled:
        first = json.loads(gzip.decompress((RUNS_DIR / run_id / "lab" / "gpu_temp.jsonl.gz").read_bytes())
                           .split(b"\n", 1)[0])
        assert list(first) == ["ts", "gpu", "temp_c", "util", "power_w"], run_id


def small_job(dump_details: Path, memory_mib: int | None) -> dict[str, Any]:
    flags = {"train_backend": "fsdp", "hf_checkpoint": "Qwen/Qwen3-0.6B", "colocate": True, "wandb_group": "tiny",
             "num_gpus_per_node": 1, "actor_num_gpus_per_node": 1, "prompt_data": "/root/gsm8k/train.parquet",
             "rollout_batch_size": 8, "num_rollout": 1}
    job = {"argv": _miles_dump.argv(flags, dump_details), "start_ts": 1000.0, "node": "10.0.0.7",
           "actions": [[1001.5, "log", "train/step", {"train/loss": 0.5, "train/step": 0}]],
           "gpu_ticks": [[1000.4 + k, 90 + k, 80 + k] for k in range(3)]}
    if memory_mib is not None:
        job["memory_used_mib"] = memory_mib
    return job


def test_miles_sampler_writes_a_tick_only_where_nvml_reads_the_memory(tmp_path: Path) -> None:
    """The same ticks: with NVML as a GB10 answers it (memory query not supported) Miles writes no gpu_util record;
    where the memory reads, one record a tick, mem_mb a whole number of MiB."""
    _miles_dump.write([small_job(tmp_path / "gb10", None), small_job(tmp_path / "other", 2048)])
    assert not (tmp_path / "gb10" / "dashboard" / "gpu_util").exists()
    assert lines(tmp_path / "gb10" / "dashboard" / "metrics.jsonl") == [
        {"ts": 1001.5, "step_key": "train/step", "step": 0, "metrics": {"train/loss": 0.5, "train/step": 0}}]
    written = lines(tmp_path / "other" / "dashboard" / "gpu_util" / "19700101_00.jsonl")
    assert written == [{"ts": 1000.4 + k, "node": "10.0.0.7", "gpu": 0, "util": 90 + k, "mem_mb": 2048,
                        "power_w": 80 + k} for k in range(3)]
    assert not (tmp_path / "gb10" / "dashboard" / "lane_catalog.json").exists()  # rewritten only when a lane is new
    assert json.loads((tmp_path / "other" / "dashboard" / "lane_catalog.json").read_text()) == {
        "version": 1, "lanes": {"10.0.0.7:0": {"ranks": [], "engine_addrs": [], "roles": []}}}
