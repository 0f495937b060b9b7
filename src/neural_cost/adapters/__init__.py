"""Adapters: the FrameworkAdapter base, and framework adapters imported only when asked for.

``from neural_cost.adapters import TorchAdapter`` imports torch then, and without torch
installed raises FrameworkNotInstalledError naming the extra to install.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..core.errors import FrameworkNotInstalledError
from .base import FrameworkAdapter, example_input_shapes

# adapter name → (module, framework import that must succeed, extra to install)
_LAZY: dict[str, tuple[str, str, str]] = {
    "TorchAdapter": (".torch", "torch", "torch"),
    "JaxAdapter": (".jax", "jax", "jax"),
    "TensorFlowAdapter": (".tensorflow", "tensorflow", "tensorflow"),
}


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


__all__ = ["FrameworkAdapter", "JaxAdapter", "TensorFlowAdapter", "TorchAdapter", "example_input_shapes"]
