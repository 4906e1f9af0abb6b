"""One module per figure of the manual. Each exposes ALT (default alt text) and draw(runs, tables) ->
(Figure, DataFrame of exactly the numbers it plots); a module whose figure block may set options declares
them, OPTIONS = {"name": "number" | "integer" | "text" | "flag"}, and takes draw(runs, tables,
options=None). A block names a module here by its bare name, never anything else; the runs a figure reads
are its block's `runs:`, never listed here.

A figure's number comes from its position in the chapters (build_tools/blocks.py), never from here; the
caption (its claim) is rendered by the page, so no figure draws its number or its claim.
"""
