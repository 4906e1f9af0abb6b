"""Stage 5: every figure drawn from the summaries (draw, its variants, the palette, legibility)."""
