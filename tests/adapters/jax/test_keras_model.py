"""A Keras 3 model on JAX runs as Keras runs it, its variables as arguments (``adapters/_jax/keras_model.py``).
A stand-in for Keras (its module path and ``stateless_call``): this process's Keras is TensorFlow's; the real model
under ``KERAS_BACKEND=jax`` is run from the command line (``tests/cli/test_compare.py``)."""

import types

import pytest

from neural_cost import AdapterError
from neural_cost.adapters._jax.keras_model import VARIABLES, is_keras_model, stateless


def _model():
    calls = []

    class Dense:
        __module__ = "keras.src.layers.core.dense"

        def __init__(self):
            self.trainable_variables = [types.SimpleNamespace(value="kernel"), types.SimpleNamespace(value="bias")]
            self.non_trainable_variables = [types.SimpleNamespace(value="step")]

        def stateless_call(self, trainable, non_trainable, *inputs, **kwargs):
            calls.append((trainable, non_trainable, inputs, kwargs))
            return ("out", non_trainable)

    return Dense(), calls


def test_a_keras_model_runs_with_its_variables_as_arguments():
    """The function takes (trainable, non-trainable, *inputs), returns the outputs alone, and is one per model (timing
    and tracing share its executable); the user's static and parameter positions move past the variables', which
    are parameters; any other callable stays as it is."""
    model, calls = _model()
    assert is_keras_model(model) and not is_keras_model(abs) and VARIABLES == 2
    fn, args, static, params = stateless(model, ("x", 3), static=(1,), params=())
    assert args == (["kernel", "bias"], ["step"], "x", 3) and static == (3,) and params == (0, 1)
    assert fn(*args, training=False) == "out"
    assert calls == [(["kernel", "bias"], ["step"], ("x", 3), {"training": False})]
    again, *_ = stateless(model, ("y",), static=(), params=(0,))
    assert again is fn and stateless(model, ("y",), (), (0,))[3] == (0, 1, 2)
    assert stateless(abs, ("x",), (0,), ()) == (abs, ("x",), (0,), ())


def test_a_keras_model_not_built_is_refused_with_what_to_do():
    """Its variables would be drawn inside every timed run (as ``jax.jit(model)`` traced them before): an error
    that says to build it first, never a report of its initializer."""
    model, _ = _model()
    model.built = False
    with pytest.raises(AdapterError, match=r"Dense is a Keras model that is not built: .* call it once on an example"):
        stateless(model, ("x",), (), ())
