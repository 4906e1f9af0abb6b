"""Which claims the watch judges before the job ends: a claim is judged as soon as everything its checks read of
the reader's run is in. What a check reads is the registry's: a check that reads only the run's setup (run.yaml's
facts: SETUP_ONLY) is judged once the setup and the run's first step are read; every other check of one run reads
its steps as a whole (`steps: auto|clean|all`, a trend, a count of steps, the timeline's events up to the job's
end), so its claim waits for the run's end, and says so.

The checks `compare` judges on one run are the claim's checks minus those that set the manual's runs against one
another (compare.ACROSS_RUNS) or name some of its runs (`runs:`): the same the end's verdict reads.
"""

from __future__ import annotations

from build_tools.checking.contract import ACROSS_RUNS, ClaimCheck, ClaimItem

# The registered checks (build_tools/checking/checks/) that read nothing the job logs, only its setup.
SETUP_ONLY = frozenset({"config_equals", "config_ratio"})

WAITS_FOR_SETUP = "it reads only the run's setup: judged once the setup and the first step are read"
WAITS_FOR_THE_END = "a claim reads the whole run: judged when the run ends"


def on_one_run(claim: ClaimItem) -> list[ClaimCheck]:
    """The claim's checks `compare` judges on the reader's run alone."""
    return [check for check in claim.checks if check.check not in ACROSS_RUNS and not check.parameters.get("runs")]


def judged_early(claim: ClaimItem) -> bool:
    """Whether every check of the claim judged on one run reads only the run's setup."""
    checks = on_one_run(claim)
    return bool(checks) and all(check.check in SETUP_ONLY for check in checks)


def waits_for(claim: ClaimItem) -> str:
    """What an undecided claim waits for, in the words the live view and the summary show."""
    return WAITS_FOR_SETUP if judged_early(claim) else WAITS_FOR_THE_END
