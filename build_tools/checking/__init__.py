"""Stages 3-4: the chapters' figure blocks read, and every claim checked against the summaries (checks/, claims,
margins)."""
