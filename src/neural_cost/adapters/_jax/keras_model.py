"""A Keras 3 model on the JAX backend, run as Keras runs it: its variables are arguments.

``jax.jit(model)`` closes over a Keras model's variables, so XLA compiles them as constants: it folds
what they make constant (a zero bias's add) and fuses across layers it would keep apart (XLA:CPU
0.10.2 made 35 YNNPACK fusions of a Keras ResNet50 on 96-pixel images, one of 19 convolutions, where
with the variables as arguments it made 48 of at most 6), and the program ran in 53.6 ms where
Keras's ``predict_on_batch`` and the same function with its variables as arguments took 59.6–59.9
ms. Keras's own ``predict`` and ``fit`` steps call ``model.stateless_call(trainable, non_trainable,
*inputs)`` with the variables' values as arguments; the adapter times and traces that function, the
variables as parameters (``param_argnums``); the trace names the user's inputs as the user passed them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ...core.errors import AdapterError

#: The variables' arguments before the user's: trainable, then non-trainable.
VARIABLES = 2
_CALLS: weakref.WeakKeyDictionary[Any, Callable[..., Any]] = weakref.WeakKeyDictionary()


def is_keras_model(model: Any) -> bool:
    """A Keras 3 model or layer (found by its module path: no keras import) that runs statelessly."""
    keras = any(str(cls.__module__).partition(".")[0] == "keras" for cls in type(model).__mro__)
    return keras and callable(getattr(model, "stateless_call", None)) and hasattr(model, "trainable_variables")


def stateless(
    model: Any, args: tuple[Any, ...], static: Sequence[int], params: Sequence[int]
) -> tuple[Callable[..., Any], tuple[Any, ...], tuple[int, ...], tuple[int, ...]]:
    """For a Keras model: the function Keras runs (one per model, so timing and tracing share its executable), the
    arguments with the variables' values first, and the static and parameter positions moved past them (the
    variables are parameters). Any other model as it is. A model not built yet is refused (``AdapterError``):
    ``jax.jit(model)`` would draw its variables inside every run, and a report of that is no report of the model."""
    if not is_keras_model(model):
        return model, args, tuple(static), tuple(params)
    if not getattr(model, "built", True):
        raise AdapterError(
            f"{type(model).__name__} is a Keras model that is not built: its variables would be created (drawn at "
            f"random) inside every timed run; build it in build() first — call it once on an example input "
            f"(model(x)) or model.build(input_shape) — and return it"
        )
    call = _CALLS.get(model)
    if call is None:

        def call(trainable: Any, non_trainable: Any, *inputs: Any, **kwargs: Any) -> Any:
            return model.stateless_call(trainable, non_trainable, *inputs, **kwargs)[0]

        call.__name__ = call.__qualname__ = type(model).__name__
        _CALLS[model] = call
    values = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables])
    moved = tuple(i + VARIABLES for i in static), (0, 1, *(i + VARIABLES for i in params))
    return call, (*values, *args), *moved
