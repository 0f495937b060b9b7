"""The inputs a JAX trace records: array leaves inside pytrees, named by path; parameters and
state the function hands back (a training step's params and optimizer state) left out."""

import importlib.util
import os
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = jax.numpy

from neural_cost import HardwareSpec, analyze_gap, estimate_trace  # noqa: E402
from neural_cost.adapters import JaxAdapter  # noqa: E402
from tests.helpers import cpu_measurement  # noqa: E402

ADAPTER = JaxAdapter(cross_check=False)
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "train_jax.py"


def inputs_line(trace):
    report = analyze_gap(estimate_trace(trace), cpu_measurement(), HardwareSpec("unit", 1e12, 1e9))
    return next(line.strip() for line in report.render().splitlines() if line.strip().startswith("inputs:"))


def test_the_training_example_records_its_batch_tuple():
    pytest.importorskip("optax")
    spec = importlib.util.spec_from_file_location("train_jax_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    step, args = module.build()  # (params, opt_state, (x, labels)) -> (params, opt_state, loss)
    trace = ADAPTER.trace(step, args)
    # params and opt_state come back updated, same structure and shapes: state, not inputs
    assert trace.input_shapes == (("arg2[0]", (32, 64)), ("arg2[1]", (32,)))
    assert inputs_line(trace) == "inputs: arg2[0] (32, 64), arg2[1] (32,) · batch 32 (leading dim of arg2[0])"


def test_dict_leaves_are_named_by_key_and_parameters_stay_out():
    params = {"w1": jnp.ones((16, 4)), "b1": jnp.ones(4)}
    batch = {"x": jnp.ones((8, 16)), "mask": jnp.ones((8, 4))}
    forward = lambda p, b: (b["x"] @ p["w1"] + p["b1"]) * b["mask"]  # noqa: E731
    trace = ADAPTER.trace(forward, (params, batch), param_argnums=0)
    assert trace.input_shapes == (("arg1['mask']", (8, 4)), ("arg1['x']", (8, 16)))  # pytree order: sorted keys
    # unmarked, the weights are inputs too (not handed back): the batch is the leaf whose
    # leading dim is the output's 8
    unmarked = ADAPTER.trace(forward, (params, batch))
    assert [name for name, _ in unmarked.input_shapes] == ["arg0['b1']", "arg0['w1']", "arg1['mask']", "arg1['x']"]
    assert inputs_line(unmarked).endswith("· batch 8 (leading dim of arg1['mask'])")


def test_a_state_handed_back_is_still_recorded_when_it_is_all_there_is():
    state = (jnp.ones((8, 4)), jnp.ones((8, 4)))
    trace = ADAPTER.trace(lambda s: (jnp.tanh(s[0]), s[1] * 2.0), (state,))
    assert trace.input_shapes == (("arg0[0]", (8, 4)), ("arg0[1]", (8, 4)))
