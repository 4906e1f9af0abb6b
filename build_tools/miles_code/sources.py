"""What of Miles (and of the SGLang it passes flags on to) the manual runs: named here, in one place.

upstream/ holds these modules and every Miles module they import when they run, copied verbatim from the
commit MANIFEST.json names (`make miles-code MILES=checkout` copies them again). Miles' modules beyond that
set, and everything outside it (torch, Ray, NVML, transformers, ...), are inert stand-ins (stand_ins.py).
"""

from __future__ import annotations

# The Miles modules the manual runs, each with why; the Miles modules they import come along (make miles-code
# records them by running these).
MILES_ENTRIES = {
    # train.py's parse_args: the FSDP parser (build_fsdp_parser with Miles' own arguments), then its validators
    # (miles_validate_args, the hybrid-shard check, SGLang's and the dashboard's): the launch blocks' judge.
    "miles.utils.arguments": "argument parsing and validation (parse_args)",
    "miles.backends.fsdp_utils.arguments": "the FSDP parser and load_fsdp_args",
    "miles.backends.sglang_utils.arguments": "the --sglang-* flags, copied from SGLang's ServerArgs",
    # The FSDP actor's init builds its LR scheduler at every start (actor.py, `get_lr_scheduler(args, ...)`):
    # train_iters = num_rollout x rollout_batch_size x n_samples_per_prompt // global_batch_size.
    "miles.backends.fsdp_utils.lr_scheduler": "the FSDP actor's start-up arithmetic",
    "miles.backends.fsdp_utils.actor": "the FSDP actor, whose init calls get_lr_scheduler",
    # The dashboard writer, its GPU sampler and its advisor: what a run's dump holds, as Miles writes it.
    "miles.dashboard.args": "the dashboard's flags and meta.json's keys",
    "miles.dashboard.backend": "the dashboard's tracking backend",
    "miles.dashboard.collector": "the dashboard writer",
    "miles.dashboard.hooks": "the phase and step hooks",
    "miles.dashboard.gpu_sampler": "the GPU sampler (NVML)",
    "miles.dashboard.logging_utils": "the dashboard's records",
    "miles.dashboard.advisory": "Miles' advisor",
    # The tracking backends: the keys each writes (wandb, TensorBoard, MLflow, ...).
    "miles.utils.tracking_utils.tracking": "the tracking entry point",
    "miles.utils.tracking_utils.base": "the backends' base",
    "miles.utils.tracking_utils.mlflow_utils": "the MLflow backend",
    "miles.utils.tracking_utils.wandb_utils": "the wandb backend",
    "miles.utils.tracking_utils.tensorboard_utils": "the TensorBoard backend",
    "miles.utils.tracking_utils.prometheus_utils": "the Prometheus backend",
    "miles.utils.tracking_utils.structured_log": "the structured log",
    "miles.utils.tracking_utils.ci_history": "the CI history",
    # The environment report a train actor prints with --env-report: the job's Miles commit (make add-run).
    "miles.utils.env_report": "the environment report",
}
# Imported with the entries (the FSDP package's __init__ imports the actor) but not run: the actor's own imports
# (its model, optimizer, data and rollout code) stay stand-ins, so they are not copied.
MILES_NOT_FOLLOWED = ("miles.backends.fsdp_utils.actor",)

# SGLang's server flags, which Miles registers as --sglang-* (ServerArgs.add_cli_args), and the router's
# (RouterArgs.add_cli_args): the files that define them, from the wheels of the versions below.
SGLANG_FILES = ("sglang/srt/server_args.py", "sglang/srt/arg_groups/__init__.py",
                "sglang/srt/arg_groups/arg_utils.py", "sglang/srt/arg_groups/argparse_actions.py",
                "sglang/srt/arg_groups/deepseek_v4_hook.py", "sglang/srt/arg_groups/hisparse_hook.py",
                "sglang/srt/arg_groups/overrides.py", "sglang/srt/arg_groups/pd_disaggregation_hook.py",
                "sglang/srt/arg_groups/speculative_hook.py")
ROUTER_FILES = ("sglang_router/launch_router.py", "sglang_router/router_args.py")
