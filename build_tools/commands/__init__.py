"""The commands beside the build: add-run, record, compare, show, and make's door (_make)."""
