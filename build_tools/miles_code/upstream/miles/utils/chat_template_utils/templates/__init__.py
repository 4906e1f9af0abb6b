"""Bundled fixed chat templates and the vendored official DeepSeek V3.2 encoder."""
