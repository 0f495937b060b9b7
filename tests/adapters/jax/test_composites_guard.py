"""A library op is folded by what its equations compute, never by a name alone (composites.py).

A jitted call named like a ``jax.nn`` function folds only when its body is made of the
primitives such an op is written in and, walked, counts within a band of the op's record
(at least 1/2, at most 4× + 64 FLOPs); the inline softmax only when its broadcasts put the
reduced value back along the reduced axis. Anything else is walked and counted as written.
"""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax

from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.adapters._jax.composites import flops_fit  # noqa: E402

ADAPTER = JaxAdapter(cross_check=False)
X = jnp.ones((8, 16), jnp.float32)  # 128 elements


def total_flops(trace):
    return sum(op.cost.flops * op.count for op in trace.operations)


def folded_ops(trace):
    return {op.attrs.get("op") for op in trace.operations if op.kind == "elementwise"} | {
        op.kind for op in trace.operations if op.kind == "softmax"
    }


def test_a_users_jitted_function_named_softplus_doing_matmuls_is_walked_exactly():
    # the reviewer's case: one array in, one of its shape out — softplus's signature — but the
    # body is four 512³ matmuls, each followed by a tanh
    @jax.jit
    def softplus(x):
        for _ in range(4):
            x = jnp.tanh(x @ x)
        return x

    trace = ADAPTER.trace(lambda x: softplus(x), (jnp.ones((512, 512)),))
    assert "softplus" not in folded_ops(trace)
    dots = [op for op in trace.operations if op.kind == "matmul"]
    assert sum(op.cost.flops for op in dots) == 4 * 2 * 512**3  # 1,073,741,824 (was 1,572,864 folded)
    # plus 4 tanh of 512² = 262,144 elements, 1 FLOP each: 1,048,576
    assert total_flops(trace) == 4 * 2 * 512**3 + 4 * 512 * 512  # 1,074,790,400
    # the jit call is free (a call boundary); its 8 body equations are modeled: 9 executed
    assert (trace.coverage.total, trace.coverage.modeled, trace.coverage.free) == (9, 8, 1)


def test_an_elementwise_body_that_counts_unlike_the_op_is_walked():
    @jax.jit
    def softplus(x):  # 2 FLOPs per element, below half of softplus's 6
        return x * 2.0 + 1.0

    trace = ADAPTER.trace(softplus, (X,))
    assert "softplus" not in folded_ops(trace)
    assert total_flops(trace) == 2 * 128  # mul 128 + add 128 = 256, not softplus's 6·128 = 768

    @jax.jit
    def silu(x):  # 30 tanh: 30 FLOPs per element, above 4× silu's 5 (+ 64)
        for _ in range(30):
            x = jnp.tanh(x)
        return x

    trace = ADAPTER.trace(silu, (X,))
    assert "silu" not in folded_ops(trace)
    assert total_flops(trace) == 30 * 128  # 3,840


def test_a_body_with_a_primitive_no_activation_uses_is_walked():
    @jax.jit
    def relu(x):  # a reversal (the rev primitive) and a max: elementwise count, not relu's body
        return jnp.maximum(x[:, ::-1], 0.0)

    trace = ADAPTER.trace(relu, (X,))
    assert "relu" not in folded_ops(trace)
    assert "rev" in {op.name for op in trace.operations}


# Each jax.nn function as the catalog counts it per element (costs/catalog.py): still one record.
JAX_NN = [
    (jax.nn.silu, "silu", 5),
    (jax.nn.elu, "elu", 5),
    (jax.nn.selu, "selu", 6),
    (jax.nn.celu, "celu", 6),
    (jax.nn.softplus, "softplus", 6),
    (jax.nn.log_sigmoid, "log_sigmoid", 6),
    (jax.nn.mish, "mish", 4),
    (jax.nn.leaky_relu, "leaky_relu", 3),
    (jax.nn.relu, "relu", 1),
    (jax.nn.relu6, "relu6", 2),
    (jax.nn.hard_tanh, "hardtanh", 2),
    (jax.nn.hard_sigmoid, "hardsigmoid", 4),
    (jax.nn.hard_silu, "hardswish", 5),
    (jax.nn.soft_sign, "softsign", 3),
]


@pytest.mark.parametrize(("fn", "entry", "per_element"), JAX_NN, ids=[e for _, e, _ in JAX_NN])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_every_jax_nn_activation_still_folds(fn, entry, per_element, dtype):
    (record,) = ADAPTER.trace(fn, (X.astype(dtype),)).operations
    assert (record.kind, record.attrs) == ("elementwise", {"op": entry})
    assert record.cost.flops == per_element * 128


def test_log_softmax_still_folds():
    (record,) = ADAPTER.trace(lambda x: jax.nn.log_softmax(x), (X,)).operations
    # unscoped: labeled with the user's function that made it (the per-scope table's group)
    assert (record.kind, record.attrs) == ("softmax", {"axis": 1, "log": True, "function": "<lambda>"})


def test_a_softmax_sequence_that_broadcasts_along_the_wrong_axis_is_walked():
    square = jnp.ones((8, 8), jnp.float32)

    def shaped(x, dims):  # softmax's equations, with the reduced values broadcast along `dims`
        m = lax.broadcast_in_dim(lax.reduce_max(x, (1,)), (8, 8), dims)
        e = jnp.exp(x - m)
        return e / lax.broadcast_in_dim(jnp.sum(e, axis=1), (8, 8), dims)

    (softmax,) = ADAPTER.trace(lambda x: shaped(x, (0,)), (square,)).operations  # row max, row sum: softmax
    assert (softmax.kind, softmax.attrs) == ("softmax", {"axis": 1, "log": False, "function": "shaped"})
    # (1,): row i's max subtracted from column i — another function, walked equation by equation
    walked = ADAPTER.trace(lambda x: shaped(x, (1,)), (square,))
    assert "softmax" not in folded_ops(walked)
    names = ["reduce_max", "broadcast_in_dim", "sub", "exp", "reduce_sum", "broadcast_in_dim", "div"]
    assert [op.name for op in walked.operations] == names


def test_the_band():
    # softplus on 128 elements: its record is 768 FLOPs; walked, JAX's logaddexp is 1,280
    assert flops_fit(1_280, 768)
    assert flops_fit(384, 768) and not flops_fit(383, 768)  # at least half
    assert flops_fit(4 * 768 + 64, 768) and not flops_fit(4 * 768 + 65, 768)  # at most 4× + 64
