"""Inert stand-ins for every module Miles imports that cannot run here (torch, Ray, NVML, transformers, ...),
so that Miles' own code (upstream/, copied verbatim) runs in a process of its own without a GPU stack.

Imported only by that process (run.py) and by `make miles-facts`: the finder it installs answers every import
outside the vendored code, the standard library and the few pure-Python libraries below with an inert module,
which never runs anything. The build's own process never installs it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Imported for real besides the vendored code and the standard library: YAML and pydantic (Miles reads its
# config files with the one and checks models at import time with the other), and what pydantic needs.
IMPORTED_FOR_REAL = frozenset({"yaml", "pydantic", "pydantic_core", "typing_extensions", "annotated_types",
                       "typing_inspection", "build_tools"})
# The packages whose modules come from upstream/ when a file of them is there, and are stand-ins when not.
VENDORED = ("miles", "sglang", "sglang_router")


class _Inert(types.ModuleType):
    """A module whose every name is an inert class: whatever Miles reads of a package it cannot import."""

    __path__: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return inert_class(f"{self.__name__}.{name}")


def _same(cls: Any, *other: Any) -> Any:
    return cls


def _call(cls: Any, *args: Any, **kwargs: Any) -> Any:
    """Calling an inert class: a decorator (torch.compile(...)(f), ray.remote(cls)) leaves what it decorates as it
    is; anything else gives another inert class. A lambda is never decorated (`@` takes a def or a class): one
    passed alone is a decorator factory's argument (`@with_defer(lambda: ...)`), whose decorator is inert. A
    class Miles derives from one (FSDPLRScheduler from torch's LRScheduler) is built for real, so that its own
    __init__ runs (and its assertions with it)."""
    if "__inert__" not in cls.__dict__:
        return type.__call__(cls, *args, **kwargs)
    if len(args) == 1 and not kwargs and callable(args[0]) and getattr(args[0], "__name__", "") != "<lambda>":
        return args[0]
    return inert_class(f"{cls.__qualname__}()")


def _quiet_init(self: Any, *args: Any, **kwargs: Any) -> None:
    """An inert base class takes whatever its subclass hands to super().__init__."""


def _inert_attribute(self: Any, name: str) -> Any:
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    return inert_class(f"{type(self).__qualname__}.{name}")


_META: dict[str, Any] = {
    "__getattr__": lambda cls, attr: inert_class(f"{cls.__qualname__}.{attr}"),
    "__iter__": lambda cls: iter(()), "__call__": _call,
    "__getitem__": lambda cls, key: inert_class(f"{cls.__qualname__}[]"),
    "__or__": _same, "__ror__": _same, "__add__": _same, "__radd__": _same, "__len__": lambda cls: 0,
}
InertMeta = type("InertMeta", (type,), _META)


def inert_class(name: str) -> Any:
    """A class that is also a module attribute, a function and a value: every attribute another inert class,
    a call another one (or the decorated function), iteration empty."""
    return InertMeta(name.rsplit(".", 1)[-1], (), {"__inert__": True, "__qualname__": name,
                                                   "__init__": _quiet_init, "__getattr__": _inert_attribute})


class InertFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the vendored code where it is (by the ordinary path finder: the source folder is on sys.path) and
    gives every other module, outside the standard library and IMPORTED_FOR_REAL, as inert.

    `source`: the folder holding miles/ (and sglang/, sglang_router/): upstream/, or a checkout being read by
    `make miles-code`. `inert`: module names (and their submodules) given as inert although their file is there.
    """

    def __init__(self, source: Path, inert: Iterable[str] = ()) -> None:
        self.source = source
        self.inert = tuple(inert)

    def _vendored(self, fullname: str) -> bool:
        if fullname in self.inert or fullname.startswith(tuple(f"{name}." for name in self.inert)):
            return False
        path = self.source.joinpath(*fullname.split("."))
        return path.with_suffix(".py").is_file() or path.is_dir()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        top = fullname.split(".")[0]
        if top in VENDORED:
            return None if self._vendored(fullname) else importlib.machinery.ModuleSpec(fullname, self,
                                                                                        is_package=True)
        if top in IMPORTED_FOR_REAL or top in sys.stdlib_module_names or top.startswith("_"):
            return None  # private modules are the interpreter's own (_sysconfigdata...)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _Inert(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install(source: Path, inert: Iterable[str] = ()) -> InertFinder:
    """Put the source folder first on the path and the finder first among the finders, for this process."""
    finder = InertFinder(source, inert)
    sys.path.insert(0, str(source))
    sys.meta_path.insert(0, finder)
    return finder
