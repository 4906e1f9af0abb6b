# This is a refactor of the portions above generate-function in sglang_rollout.py,
# and is give a different name to ensure both code exist at the same time.
