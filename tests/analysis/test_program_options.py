"""A report times the program it traced: the options that choose the program (a training step,
a Keras model's training mode, JAX's static arguments) given to the trace reach the timed runs.

Before: ``analyze_workload(..., trace_options={"training": True})`` traced a training step and
timed inference runs — a ResNet step's bound and expectation (75.6 ms) against a forward's time
(43.6 ms), read as a model running 1.7× faster than expected.
"""

from __future__ import annotations

import os

import pytest

from neural_cost.adapters.base import FrameworkAdapter
from neural_cost.analysis.workload import analyze_workload, program_options
from neural_cost.core.errors import AdapterError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


class _Recorded(FrameworkAdapter):
    program_options = frozenset({"training", "static_argnums"})


def test_a_program_option_given_to_one_side_reaches_the_other():
    traced, timed = program_options(_Recorded(), {"training": True, "param_argnums": 0}, None)
    assert traced == {"training": True, "param_argnums": 0} and timed == {"training": True}
    traced, timed = program_options(_Recorded(), None, {"training": True, "jit_compile": True})
    assert traced == {"training": True} and timed == {"training": True, "jit_compile": True}
    assert program_options(_Recorded(), {"training": True}, {"training": True}) == ({"training": True},) * 2
    # an option no adapter shares stays where it was given
    assert program_options(FrameworkAdapter(), {"training": True}, None) == ({"training": True}, {})
    assert program_options(None, None, {"training": True}) == ({}, {"training": True})


def test_an_int_its_one_tuple_and_its_one_list_are_the_same_static_argnums():
    for timed in ((1,), [1], 1):
        assert program_options(_Recorded(), {"static_argnums": 1}, {"static_argnums": timed})[1] == {
            "static_argnums": timed
        }
    with pytest.raises(AdapterError, match="static_argnums"):
        program_options(_Recorded(), {"static_argnums": 1}, {"static_argnums": (0, 1)})


def test_different_values_for_the_trace_and_the_timed_runs_are_refused():
    with pytest.raises(AdapterError, match=r"training=True was given to the trace but training=False"):
        program_options(_Recorded(), {"training": True}, {"training": False})
    optimizer, other = object(), object()
    adapter = _Recorded()
    adapter.program_options = frozenset({"optimizer"})
    with pytest.raises(AdapterError, match="optimizer="):
        program_options(adapter, {"optimizer": optimizer}, {"optimizer": other})
    assert program_options(adapter, {"optimizer": optimizer}, {"optimizer": optimizer})[1] == {"optimizer": optimizer}


def test_a_torch_training_step_traced_is_a_training_step_timed():
    torch = pytest.importorskip("torch")
    from neural_cost.adapters.torch import TorchAdapter

    grad_enabled: list[bool] = []

    class Recording(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            grad_enabled.append(torch.is_grad_enabled())
            return self.linear(x)

    model, x = Recording(), torch.randn(2, 8)
    analyze_workload(TorchAdapter(), model, (x,), warmup=2, repeats=3, profile=False)
    assert grad_enabled and not any(grad_enabled)  # inference: every run (timed and traced) under no_grad
    grad_enabled.clear()
    analyze_workload(TorchAdapter(), model, (x,), warmup=2, repeats=3, profile=False, trace_options={"training": True})
    # warmup 2 + timed 3 (+ the write guard's run) are training steps, and so is the traced one
    assert len(grad_enabled) >= 2 + 3 + 1 and all(grad_enabled)
    grad_enabled.clear()
    analyze_workload(  # given to the timed runs only: the trace is of a training step too
        TorchAdapter(), model, (x,), warmup=2, repeats=3, profile=False, benchmark_options={"training": True}
    )
    assert len(grad_enabled) >= 2 + 3 + 1 and all(grad_enabled)
    with pytest.raises(AdapterError, match="training=True was given to the trace but training=False"):
        analyze_workload(
            TorchAdapter(),
            model,
            (x,),
            warmup=1,
            repeats=1,
            profile=False,
            trace_options={"training": True},
            benchmark_options={"training": False},
        )


def test_a_keras_model_traced_in_training_mode_is_timed_in_training_mode():
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    from neural_cost.adapters.tensorflow import TensorFlowAdapter

    modes: list[object] = []

    class Mode(keras.layers.Layer):
        def call(self, x, training=None):
            modes.append(training)  # Python runs while tf.function traces: one entry per trace
            return x * 2.0

    model = keras.Sequential([keras.Input((4,)), Mode(), keras.layers.Dense(2)])
    x = tf.ones((2, 4))
    modes.clear()  # building the model called the layer once, symbolically
    TensorFlowAdapter().benchmark(model, x, warmup=1, repeats=2, training=True)
    assert modes and all(mode is True for mode in modes)
    modes.clear()
    analyze_workload(
        TensorFlowAdapter(), model, (x,), warmup=1, repeats=2, profile=False, trace_options={"training": True}
    )
    assert modes and all(mode is True for mode in modes)  # the timed function and the traced one
    modes.clear()
    analyze_workload(TensorFlowAdapter(), model, (x,), warmup=1, repeats=2, profile=False)
    assert modes and all(mode is False for mode in modes)
