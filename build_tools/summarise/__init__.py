"""Stage 2: each run reduced to the summary figures, checks and pages read (locally or as Ray tasks)."""
