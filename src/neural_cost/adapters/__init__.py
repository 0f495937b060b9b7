"""Adapters: the FrameworkAdapter base, and framework adapters imported only when asked for.

``from neural_cost.adapters import TorchAdapter`` imports torch then, and without torch
installed raises FrameworkNotInstalledError naming the extra to install.
``adapter_for("jax", **options)`` makes the adapter of a framework named by a string.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..core.errors import AdapterError, FrameworkNotInstalledError
from .base import FrameworkAdapter, example_input_shapes

# adapter name → (module, framework import that must succeed, extra to install)
_LAZY: dict[str, tuple[str, str, str]] = {
    "TorchAdapter": (".torch", "torch", "torch"),
    "JaxAdapter": (".jax", "jax", "jax"),
    "TensorFlowAdapter": (".tensorflow", "tensorflow", "tensorflow"),
}

#: framework name → its adapter class's name in ``_LAZY``
FRAMEWORKS: dict[str, str] = {"jax": "JaxAdapter", "torch": "TorchAdapter", "tensorflow": "TensorFlowAdapter"}


def adapter_for(framework: str, **options: Any) -> FrameworkAdapter:
    """The adapter of ``framework`` (``"jax"``, ``"torch"`` or ``"tensorflow"``), made with
    ``options`` (e.g. ``trip_counts=`` for JAX and TensorFlow). An unknown framework, or an
    option its adapter does not take, is an error naming what is known."""
    name = FRAMEWORKS.get(framework)
    if name is None:
        raise AdapterError(f"framework={framework!r} is not one of {', '.join(FRAMEWORKS)}")
    cls = __getattr__(name)
    try:
        adapter = cls(**options)
    except TypeError as error:  # an option this adapter's constructor has no parameter for
        raise AdapterError(f"{name} does not take {', '.join(map(repr, options))}: {error}") from error
    assert isinstance(adapter, FrameworkAdapter)
    return adapter


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'neural_cost.adapters' has no attribute {name!r}")
    module_name, framework, extra = _LAZY[name]
    try:
        importlib.import_module(framework)
    except ImportError as error:
        raise FrameworkNotInstalledError(
            f"{name} needs {framework}, which is not installed ({error}); install it with "
            f"pip install 'neural-cost[{extra}]'"
        ) from error
    try:
        module = importlib.import_module(module_name, __name__)
    except ModuleNotFoundError as error:
        if error.name == f"{__name__}{module_name}":
            raise FrameworkNotInstalledError(
                f"{name} is not available in this version of neural-cost yet; write a FrameworkAdapter "
                f"subclass that returns Operation records in the meantime"
            ) from error
        raise
    value = getattr(module, name)
    globals()[name] = value
    return value


__all__ = [
    "FRAMEWORKS",
    "FrameworkAdapter",
    "JaxAdapter",
    "TensorFlowAdapter",
    "TorchAdapter",
    "adapter_for",
    "example_input_shapes",
]
