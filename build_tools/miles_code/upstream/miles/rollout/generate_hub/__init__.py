# TODO: maybe move `sglang_rollout::generate` to this folder
