"""The numbers the example runs must hit, and who needs each: a figure's claim (its caption, checked by
`make check`) or a row of the Metrics page (docs/data/metrics.yml, the seed's ranges and medians).

The generator takes every such number from this table; its other numbers only shape the data (noise,
durations no caption reads, the models of temperature and memory), and the run table (`_runs.py`) says
what each run was (its set-up, as its run.yaml records it: model, flags, steps). The Miles image and
commit of every run are the edition's, read from edition.yml.

Changing a row changes the runs (`make examples`); unless its caption or Metrics row changes with it,
`make check` then fails, which is the point of the check.
"""

from __future__ import annotations

# --- the Metrics page: ranges over the three baselines (each end placed at one step of one seed) --------
REWARD_RANGE = (0.53, 0.87)  # rollout/raw_reward "0.53 to 0.87 per step over 48 steps"
LENGTH_RANGE = (396.0, 787.0)  # rollout/response_lengths "396 to 787"
TRUNCATED_RANGE = (0.02, 0.43)  # rollout/truncated "0.02 to 0.43"
GAP_RANGE = (0.0136, 0.0164)  # train/train_rollout_logprob_abs_diff "0.0136 to 0.0164 with plain sampling"
KL_RANGE = (0.00063, 0.00076)  # train/train_rollout_kl "0.00063 to 0.00076"
GRAD_RANGE = (0.35, 4.95)  # train/grad_norm "0.35 to 4.95"

# --- the Metrics page: medians of baseline-seed1 (ms), before the heat guard -----------------------------
BASELINE_MEDIANS_MS = {
    "rollout": 47500,  # perf/rollout_time "47.5 s median"
    "log_probs": 23400,  # perf/log_probs_time "23.4 s median"
    "train": 100300,  # perf/train_time "100.3 s median"; fig 1.2: training and rollout take almost all
    "wake_up": 870,  # perf/wake_up_time "0.87 s median"; figs 1.2, 8.2: the hand-offs take about 2 s
    "sleep": 760,  # perf/sleep_time "0.76 s median"; figs 1.2, 8.2 (hand-offs); fig 2.4 (offload ratio)
    "update_weights": 640,  # figs 1.2, 8.2 (hand-offs); fig 2.4 (weight update ratio)
    "step": 152600,  # perf/step_time "152.6 s median" (placed last: train_wait + train)
}
UPDATE_WEIGHTS_RANGE_MS = (631, 648)  # perf/update_weights_time "0.63 to 0.65 s": baseline-seed1's ends
FIRST_SLEEPS = (4.87, 2.5)  # perf/sleep_time "1.9 to 3.7 s in the first two steps": times the sleep median

# --- the claims ----------------------------------------------------------------------------------------
WINDOW = 8  # figs 1.5, 3.1: the first and the last 8 steps (`falls_from` window in words.yml)
# First-8 and last-8 means of each run's reward and answer length.
WINDOW_MEANS = {
    # fig 1.5: lengths pooled over the seeds fall from about 720 to about 460 tokens; fig 1.4: reward goes
    # up for every seed; fig 3.1: the seeds' reward gains (0.15 to 0.23) are the range the others fall in
    "baseline-seed1": {"reward": (0.64, 0.79), "length": (726.0, 466.0)},
    "baseline-seed2": {"reward": (0.62, 0.81), "length": (709.0, 451.0)},
    "baseline-seed3": {"reward": (0.60, 0.83), "length": (725.0, 463.0)},
    "n4-seed1": {"reward": (0.625, 0.795)},  # fig 3.1: a gain of 0.17, inside the seeds' range
    "n16-seed1": {"reward": (0.62, 0.83)},  # fig 3.1: a gain of 0.21, inside the seeds' range
}
SIZE_RATIOS = {"update_weights": 1.4, "sleep": 2.6}  # fig 2.4: 1.7B medians over 0.6B's ("grew 1.4 times", 2.6)
TOUCHED_EXTRA_MS = 45000  # fig 5.1: touched steps take about 45 s longer (median, seeds 2 and 3 pooled)
KEPT_LOADED_SAVING_MS = (620, 1780)  # fig 2.2: the engine kept loaded saved 0.6 to 1.8 s (smallest, largest)
IDLE_MS = 3_792_000  # fig 1.3: 63 minutes (63.2) from the engine's death to the job's end
IDLE_BLIP_MAX_PCT = 2  # fig 1.3: an idle GPU (at most 5 % in words.yml) shows the odd blip of 1 to this
FILTER_MAX_DROPPED = 16  # fig 3.2: a step that dropped 16 groups or fewer needed one batch, more needed two
# fig 3.2: groups dropped at each of the 12 steps, both sides of FILTER_MAX_DROPPED (16 itself included)
DROPPED = (9, 16, 6, 22, 12, 17, 30, 14, 25, 11, 19, 27)
BEFORE_HIGHER = (1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1)  # fig 3.3: reward before the filter higher in 8 of 12
MEMORY_GIB = 121.7  # run.yaml hardware.memory_gib; fig 2.1: 4B x TRAINER_BYTES_PER_PARAMETER is about half
TRAINER_BYTES_PER_PARAMETER = 16  # run.yaml lab.trainer_bytes_per_parameter; fig 2.1 (about half)
RAY_THRESHOLD = 0.95  # run.yaml lab.ray_memory_usage_threshold; figs 2.1, 2.3: the kill is at or above it
KILL_USED_GIB = (116.62, 116.88)  # figs 2.1, 2.3: host memory at the kill and a second later (0.958 of 121.7)
BEFORE_KILL_MAX_SHARE = 0.945  # figs 2.1, 2.3: before the kill, the node stays below the Ray limit
HELD_IDLE_GIB = 0.2  # fig 8.2: a side not holding keeps 0.2 GiB, under the 1 GiB that counts as holding
# Centre and spread of the trainer-engine gap per set-up.
GAP_PLAIN = (0.0150, 0.00045)  # fig 4.2: all four runs keep a gap near 0.015; the Metrics range above
GAP_REPLAY_OFF = (0.0210, 0.0006)  # fig 4.1: without replay the gap is higher at every step ...
GAP_REPLAY_ON = (0.0142, 0.0003)  # ... than with it
GAP_DETERMINISTIC_INFERENCE = (0.0130, 0.0003)  # fig 8.1: deterministic inference alone leaves a gap (above 0)
GAP_TRUE_ON_POLICY = (0.0, 0.0)  # fig 8.1: only true on-policy makes both halves the same (exactly 0)
