"""A test figure whose phone layout plots fewer numbers than its desktop one: refused."""

from __future__ import annotations

import pandas as pd

from figures._common import new_figure, on_phone

ALT = "Two numbers, or one."


def draw(runs, tables):
    data = pd.DataFrame({"value": [1.0] if on_phone() else [1.0, 2.0]})
    figure, ax = new_figure()
    ax.plot(data.index, data["value"])
    return figure, data
