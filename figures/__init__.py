"""One module per figure of the manual. Each exposes ALT (default alt text), ALT_NAMES and draw(runs,
tables) -> (Figure, DataFrame of exactly the numbers it plots). ALT_NAMES = {"drawn": [...], "axes": [...]}
are the names of what the figure draws, by which its alt text (the block's `alt`, or ALT) says it: texts
anywhere in the figure and axis labels; tests/drawing/test_figure_text.py finds each in both. A module whose figure
block may set options declares them, OPTIONS = {"name": "number" | "integer" | "text" | "flag"}, and takes
draw(runs, tables, options=None). A block names a module here by its bare name, never anything else; the
runs a figure reads are its block's `runs:`, never listed here.

A figure's number comes from its position in the chapters (build_tools/checking/blocks.py), never from here; the
caption (its claim) is rendered by the page, so no figure draws its number or its claim.
"""
