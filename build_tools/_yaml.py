"""YAML reading for the build: libyaml's C parser where PyYAML has it (the pure-Python one is slow)."""

from __future__ import annotations

from typing import Any

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """yaml.safe_load, faster; raises yaml.YAMLError with its mark like safe_load."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
