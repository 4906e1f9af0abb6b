"""Not a figure module: it has no draw function (a chapter sample)."""

ALT = "nothing"
