"""A test figure that breaks the rule: it names a colour instead of a role."""

from __future__ import annotations

import pandas as pd

from figures._common import new_figure

ALT = "A line in a colour that is not in the palette."


def draw(runs, tables):
    data = pd.DataFrame({"step": [0, 1, 2], "reward": [0.5, 0.6, 0.7]})
    figure, ax = new_figure()
    ax.plot(data["step"], data["reward"], color="#ff7f0e", gid="reward-line")
    return figure, data
