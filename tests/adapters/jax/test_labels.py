"""Labels a JAX trace carries: the batch's input, and the loop and source line of records that share a name."""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = jax.numpy

from neural_cost import HardwareSpec, analyze_gap, estimate_trace  # noqa: E402
from neural_cost.adapters import JaxAdapter  # noqa: E402
from tests.helpers import cpu_measurement  # noqa: E402

ADAPTER = JaxAdapter(cross_check=False)
HERE = os.path.basename(__file__)


def looped(w, x):
    y = x @ w  # LINE_FORWARD
    step = lambda carry: (carry[0] + 1, jnp.tanh(carry[1] @ w))  # noqa: E731  # LINE_LOOP
    return jax.lax.while_loop(lambda carry: carry[0] < 8, step, (0, y))[1]  # a counted while: 8 trips


def _line(tag):
    with open(__file__, encoding="utf-8") as source:
        return next(i for i, text in enumerate(source, start=1) if text.rstrip().endswith(f"# {tag}"))


def test_batch_comes_from_the_input_not_the_weight():
    # w (256, 64) is the parameter (param_argnums=0) and comes first; x (8, 256) is the input.
    w, x = jnp.ones((256, 64)), jnp.ones((8, 256))
    trace = ADAPTER.trace(lambda w, x: x @ w, (w, x), param_argnums=0)
    assert trace.input_shapes == (("arg1", (8, 256)),)
    report = analyze_gap(estimate_trace(trace), cpu_measurement(), HardwareSpec("unit", 1e12, 1e9))
    assert "inputs: arg1 (8, 256) · batch 8 (leading dim of arg1)" in report.render()
    # Unmarked (no param_argnums, as a CLI build returns it): both are inputs; the output (8, 64)
    # keeps x's leading dim, not w's 256.
    unmarked = estimate_trace(ADAPTER.trace(lambda w, x: x @ w, (w, x)))
    report = analyze_gap(unmarked, cpu_measurement(), HardwareSpec("unit", 1e12, 1e9))
    assert "inputs: arg0 (256, 64), arg1 (8, 256) · batch 8 (leading dim of arg1)" in report.render()


def test_records_sharing_a_name_carry_loop_and_source_line():
    w, x = jnp.ones((64, 64)), jnp.ones((4, 64))
    trace = ADAPTER.trace(looped, (w, x), param_argnums=0)
    dots = [op for op in trace.operations if op.name == "dot_general"]
    # 2·4·64·64 = 32,768 FLOPs each: once before the loop, 8 times in its body
    assert [(op.count, op.cost.flops) for op in dots] == [(1, 32_768), (8, 32_768)]
    assert [dict(op.attrs).get("loop") for op in dots] == [None, "while_0"]
    assert [op.attrs["source"] for op in dots] == [f"{HERE}:{_line('LINE_FORWARD')}", f"{HERE}:{_line('LINE_LOOP')}"]
    # tanh occurs once: its name is enough, so it carries no context
    (tanh,) = [op for op in trace.operations if op.name == "tanh"]
    assert "source" not in tanh.attrs and "loop" not in tanh.attrs
    table = analyze_gap(estimate_trace(trace), cpu_measurement(), HardwareSpec("unit", 1e12, 1e9)).render()
    assert f"dot_general @ while_0 ×8 ({HERE}:{_line('LINE_LOOP')})" in table
    assert f"dot_general ({HERE}:{_line('LINE_FORWARD')})" in table


def test_nested_loops_are_named_outermost_first():
    def nested(x):
        def step(h, _):
            return jnp.sin(h) @ jnp.ones((4, 4)), None

        body = lambda i, h: jax.lax.scan(step, h, None, length=3)[0]  # noqa: E731
        return jax.lax.fori_loop(0, 2, body, x) @ jnp.ones((4, 4))  # constant bounds: fori_loop is a scan

    trace = ADAPTER.trace(nested, (jnp.ones((2, 4)),))
    dots = [op for op in trace.operations if op.name == "dot_general"]
    assert [(op.count, dict(op.attrs).get("loop")) for op in dots] == [(6, "scan_0/scan_1"), (1, None)]  # 2·3 = 6
