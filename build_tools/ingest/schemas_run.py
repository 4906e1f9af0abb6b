"""run.yaml's schema: what a run was (its model, Miles, the machine, the launch flags, the lab's setup).

Its field types and error messages are schemas.py's; runs/README.md's table of its fields is tested against it
(tests/ingest/test_schemas.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
)

from build_tools.ingest.schemas import (
    MOST_COUNT,
    MOST_MEMORY,
    MOST_PARAMETERS,
    Commit,
    Duration,
    IsoDate,
    Number,
    Schema,
    Text,
    Whole,
    _int64,
)

PROVENANCES = ("measured", "example")


class Model(Schema):
    name: Text
    size: Text
    parameters: Annotated[int, Field(gt=0, le=MOST_PARAMETERS)]


class Miles(Schema):
    image: Text
    branch: Text
    commit: Commit
    commit_date: IsoDate


class SetupHardware(Schema):
    """The machine every run of the manual ran on (run.yaml's hardware, less the GPUs a run's phases name)."""

    machine: Text
    chip: Text
    memory_gib: Annotated[Number, Field(gt=0, le=MOST_MEMORY)]
    memory_gb: Annotated[Number, Field(gt=0, le=MOST_MEMORY)]
    memory_pools: Whole


class Hardware(SetupHardware):
    """run.yaml's hardware: the manual's machine, and how many GPUs the run used."""

    gpus: Whole


class Flags(Schema):
    """The Miles launch flags the manual reads (underscored, as meta.json's args spell them)."""

    n_samples_per_prompt: Whole | None = None
    rollout_batch_size: Whole | None = None
    over_sampling_batch_size: Whole | None = None
    rollout_max_response_len: Whole | None = None
    num_rollout: Whole | None = None
    num_steps_per_rollout: Whole | None = None
    global_batch_size: Whole | None = None
    wandb_always_use_train_step: bool | None = None
    colocate: bool | None = None
    offload_train: bool | None = None
    offload_rollout: bool | None = None
    offload_rollout_level: list[str] | None = None
    offload_train_target: Literal["cpu", "disk"] | None = None
    rollout_top_p: Annotated[Number, Field(ge=0, le=1)] | None = None
    rollout_top_k: Annotated[int, Field(ge=-1, le=MOST_COUNT)] | None = None  # Miles' default -1: no top-k
    deterministic_mode: bool | None = None
    true_on_policy_mode: bool | None = None
    sglang_enable_deterministic_inference: bool | None = None
    sglang_attention_backend: str | None = None
    sglang_mem_fraction_static: Annotated[Number, Field(gt=0, le=1)] | None = None
    sglang_watchdog_timeout: Duration | None = None
    dynamic_sampling_filter_path: str | None = None
    use_fault_tolerance: bool | None = None
    rollout_health_check_interval: Duration | None = None
    rollout_health_check_timeout: Duration | None = None
    rollout_health_check_first_wait: Duration | None = None
    entropy_coef: Number | None = None
    hf_checkpoint: str | None = None
    use_miles_dashboard: bool | None = None
    dump_details: str | None = None
    # What a whole launch command needs that meta.json does not keep: the trainer, the prompts, the reward.
    train_backend: Literal["megatron", "fsdp"] | None = None
    prompt_data: str | None = None
    input_key: str | None = None
    label_key: str | None = None
    apply_chat_template: bool | None = None
    rm_type: str | None = None
    custom_rm_path: str | None = None


class Lab(Schema):
    """Facts of the lab's setup that Miles does not record."""

    heat_guard: bool | None = None
    ray_memory_usage_threshold: Annotated[Number, Field(gt=0, le=1)] | None = None
    trainer_bytes_per_parameter: Annotated[Number, Field(gt=0)] | None = None
    sampling_replay: bool | None = None


class RunYaml(Schema):
    """runs/<run-id>/run.yaml: what the run was."""

    run_id: Text  # must be the run folder's name (checked by the loader); Miles' run_name may be anything
    provenance: Literal["measured", "example"]
    title: Text
    date: IsoDate
    tags: list[Text]
    seed: Annotated[int, AfterValidator(_int64)]
    model: Model
    dataset: Text
    miles: Miles
    hardware: Hardware
    flags: Flags
    lab: Lab
