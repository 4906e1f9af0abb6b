"""Numbered editions: publish, verify, diff; the manifest, the stamp, git."""
