"""A test figure whose phone layout puts two labels on top of each other: refused."""

from __future__ import annotations

import pandas as pd

from figures._common import new_figure, on_phone

ALT = "Two labels."


def draw(runs, tables):
    data = pd.DataFrame({"value": [1.0, 2.0]})
    figure, ax = new_figure()
    ax.plot(data.index, data["value"])
    ax.text(0.1, 1.5, "first label")
    ax.text(0.1 if on_phone() else 0.7, 1.5, "second label")
    return figure, data
