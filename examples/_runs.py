"""The table of example runs: what each one is, and the knobs that give it its targets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from .targets import (
    GAP_DETERMINISTIC_INFERENCE,
    GAP_PLAIN,
    GAP_REPLAY_OFF,
    GAP_REPLAY_ON,
    GAP_TRUE_ON_POLICY,
    WINDOW_MEANS,
)


class Model(TypedDict):
    name: str
    size: str
    parameters: int


MODELS: dict[str, Model] = {
    "0.6B": {"name": "Qwen3-0.6B", "size": "0.6B", "parameters": 596049920},
    "1.7B": {"name": "Qwen3-1.7B", "size": "1.7B", "parameters": 1720574976},
    "4B": {"name": "Qwen3-4B", "size": "4B", "parameters": 4022468096},
}
FILTER = "miles.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std"
DET = {"deterministic_mode": True, "sglang_enable_deterministic_inference": True}
TRITON = {**DET, "sglang_attention_backend": "triton"}
TOPP = {"rollout_top_p": 0.9, "rollout_top_k": 50}


@dataclass(frozen=True)
class RunSpec:
    """One example run. rng_seed is fixed here, never derived from hash(), so output is stable."""

    run_id: str
    title: str
    kind: str  # which builder shapes its numbers
    date: str  # UTC start, ISO
    tags: tuple[str, ...]
    rng_seed: int
    seed: int = 1
    size: str = "0.6B"
    steps: int = 48
    num_rollout: int | None = None
    n_samples: int = 8
    flags: dict[str, Any] = field(default_factory=dict)
    heat_guard: bool = True
    replay: bool = False
    pauses: tuple[int, ...] = ()  # steps that a heat-guard pause touched
    streams: tuple[str, ...] = ()  # 1-second streams: gpu_util, host_memory, gpu_temp, held_memory
    reward: tuple[float, float] = (0.63, 0.80)  # first-8 and last-8 means (48-step trajectory)
    length: tuple[float, float] = (720.0, 460.0)
    gap: tuple[float, float] = GAP_PLAIN  # centre and sd of the log-prob gap


B = ("gpu_util", "host_memory", "gpu_temp")
RUNS: tuple[RunSpec, ...] = (
    RunSpec(
        "baseline-seed1",
        "Baseline, seed 1 (before the heat guard)",
        "baseline",
        "2026-10-15T00:12:07",
        ("baseline",),
        101,
        seed=1,
        heat_guard=False,
        streams=(*B, "held_memory"),
        reward=WINDOW_MEANS["baseline-seed1"]["reward"],
        length=WINDOW_MEANS["baseline-seed1"]["length"],
    ),
    RunSpec(
        "no-watchdog",
        "Engine death without the watchdog",
        "no_watchdog",
        "2026-10-15T02:23:52",
        ("no-watchdog",),
        102,
        seed=1,
        steps=6,
        num_rollout=48,
        flags={"use_fault_tolerance": False},
        streams=("gpu_util",),
    ),
    RunSpec(
        "baseline-seed2",
        "Baseline, seed 2",
        "baseline",
        "2026-10-15T03:50:33",
        ("baseline", "heat-guard"),
        103,
        seed=2,
        pauses=(4, 15, 23, 33, 41),
        streams=B,
        reward=WINDOW_MEANS["baseline-seed2"]["reward"],
        length=WINDOW_MEANS["baseline-seed2"]["length"],
    ),
    RunSpec(
        "baseline-seed3",
        "Baseline, seed 3",
        "baseline",
        "2026-10-15T06:06:18",
        ("baseline", "heat-guard"),
        104,
        seed=3,
        pauses=(7, 12, 19, 28, 36, 44),
        streams=B,
        reward=WINDOW_MEANS["baseline-seed3"]["reward"],
        length=WINDOW_MEANS["baseline-seed3"]["length"],
    ),
    RunSpec(
        "kept-loaded-seed2",
        "Engine kept loaded, seed 2",
        "kept_loaded",
        "2026-10-15T08:22:45",
        ("engine-kept-loaded",),
        105,
        seed=2,
        steps=12,
        flags={"offload_rollout": False},
        pauses=(2, 9),
    ),
    RunSpec(
        "qwen3-4b-a",
        "Qwen3-4B, first try",
        "oom",
        "2026-10-15T09:05:10",
        ("4b",),
        106,
        size="4B",
        steps=2,
        num_rollout=12,
        streams=("gpu_util", "host_memory"),
        reward=(0.80, 0.84),
        length=(610.0, 450.0),
    ),
    RunSpec(
        "qwen3-4b-b",
        "Qwen3-4B, second try",
        "oom",
        "2026-10-15T09:39:36",
        ("4b",),
        107,
        size="4B",
        steps=3,
        num_rollout=12,
        streams=("gpu_util", "host_memory"),
        reward=(0.80, 0.84),
        length=(600.0, 450.0),
    ),
    RunSpec(
        "qwen3-1.7b",
        "Qwen3-1.7B",
        "size",
        "2026-10-15T10:26:29",
        ("model-size",),
        108,
        size="1.7B",
        steps=12,
        reward=(0.72, 0.84),
        length=(690.0, 450.0),
    ),
    RunSpec(
        "n4-seed1",
        "4 answers per prompt, seed 1",
        "answers",
        "2026-10-15T11:41:51",
        ("answers-per-prompt",),
        109,
        n_samples=4,
        reward=WINDOW_MEANS["n4-seed1"]["reward"],
    ),
    RunSpec(
        "n16-seed1",
        "16 answers per prompt, seed 1",
        "answers",
        "2026-10-15T12:55:14",
        ("answers-per-prompt",),
        110,
        n_samples=16,
        reward=WINDOW_MEANS["n16-seed1"]["reward"],
    ),
    RunSpec(
        "dynamic-filter-seed1",
        "Dynamic sampling filter, seed 1",
        "filter",
        "2026-10-15T17:03:03",
        ("dynamic-filter",),
        111,
        steps=12,
        flags={"over_sampling_batch_size": 48, "dynamic_sampling_filter_path": FILTER},
    ),
    RunSpec(
        "replay-off-seed1",
        "Top-p 0.9, top-k 50, no replay",
        "replay",
        "2026-10-15T17:51:40",
        ("sampling-replay",),
        112,
        steps=12,
        flags=TOPP,
        gap=GAP_REPLAY_OFF,
    ),
    RunSpec(
        "replay-on-seed1",
        "Top-p 0.9, top-k 50, with replay",
        "replay",
        "2026-10-15T18:30:26",
        ("sampling-replay",),
        113,
        steps=12,
        flags=TOPP,
        replay=True,
        gap=GAP_REPLAY_ON,
    ),
    RunSpec(
        "det-triton-a",
        "Deterministic, Triton attention, run A",
        "det",
        "2026-10-15T19:08:12",
        ("deterministic",),
        114,
        steps=12,
        flags=TRITON,
    ),
    RunSpec(
        "det-triton-b",
        "Deterministic, Triton attention, run B",
        "det",
        "2026-10-15T19:46:47",
        ("deterministic",),
        115,
        steps=12,
        flags=TRITON,
    ),
    RunSpec(
        "nondet-a", "Default kernels, run A", "det", "2026-10-15T20:24:05", ("deterministic",), 116, steps=12
    ),
    RunSpec(
        "nondet-b", "Default kernels, run B", "det", "2026-10-15T21:02:38", ("deterministic",), 117, steps=12
    ),
    RunSpec(
        "onpolicy-plain",
        "On-policy probe: plain",
        "onpolicy",
        "2026-10-15T21:40:19",
        ("on-policy",),
        118,
        steps=4,
    ),
    RunSpec(
        "onpolicy-det-inference",
        "On-policy probe: deterministic inference",
        "onpolicy",
        "2026-10-15T21:59:55",
        ("on-policy",),
        119,
        steps=4,
        flags={"sglang_enable_deterministic_inference": True},
        gap=GAP_DETERMINISTIC_INFERENCE,
    ),
    RunSpec(
        "onpolicy-true",
        "On-policy probe: true on-policy",
        "onpolicy",
        "2026-10-15T22:18:31",
        ("on-policy",),
        120,
        steps=4,
        flags={"true_on_policy_mode": True, "sglang_enable_deterministic_inference": True},
        gap=GAP_TRUE_ON_POLICY,
    ),
)


# The generator writes one optimizer step per rollout (each rollout's train/step line, _output.py): Miles'
# --num-steps-per-rollout, from which it derives the global batch size (miles_validate_args).
TRAIN_STEPS_PER_ROLLOUT = 1
# SGLang's share of the one GPU's memory when colocated: Miles' own one-GPU example uses 0.4, and Spark users
# find 0.4 to 0.5 free of hangs (Miles' guide asks for 0.8 or lower when colocated).
MEM_FRACTION = 0.4


def flags_for(spec: RunSpec) -> dict[str, Any]:
    """The launch flags the manual reads, in the contract's order, with the run's overrides."""
    flags: dict[str, Any] = {
        "n_samples_per_prompt": spec.n_samples,
        "rollout_batch_size": 32,
        "over_sampling_batch_size": None,
        "rollout_max_response_len": 1024,
        "num_rollout": spec.num_rollout or spec.steps,
        "num_steps_per_rollout": TRAIN_STEPS_PER_ROLLOUT,
        "colocate": True,
        "offload_train": True,
        "offload_rollout": True,
        "rollout_top_p": 1.0,
        "rollout_top_k": -1,
        "deterministic_mode": False,
        "true_on_policy_mode": False,
        "sglang_enable_deterministic_inference": False,
        "sglang_attention_backend": "flashinfer",
        "sglang_mem_fraction_static": MEM_FRACTION,
        "dynamic_sampling_filter_path": None,
        "use_fault_tolerance": True,
    }
    assert set(spec.flags) <= set(flags)
    flags.update(spec.flags)
    return flags


# The launch every example run stands for: one DGX Spark, one GPU shared by the trainer and the rollout engine
# (colocated), Miles' FSDP trainer, GSM8K prompts scored by Miles' math reward. What meta.json cannot hold of it
# (the trainer, the prompts, the reward) run.yaml's flags keep.
ONE_GPU = {"num_gpus_per_node": 1, "actor_num_nodes": 1, "actor_num_gpus_per_node": 1,
           "rollout_num_gpus": 1,  # Miles sets it to the trainer's GPUs when colocated (miles_validate_args)
           "rollout_num_gpus_per_engine": 1}
# Miles' dashboard writes the dump the chapters read under --dump-details (each run its own folder, dump_folder).
LAUNCH = {"train_backend": "fsdp", "prompt_data": "/root/gsm8k/train.parquet", "input_key": "messages",
          "label_key": "label", "apply_chat_template": True, "rm_type": "math", "use_miles_dashboard": True}


def dump_folder(run_id: str) -> str:
    return f"/root/dumps/{run_id}"
