"""XLA's figures beside ours; every free table entry only aliases; attention adds up on the CPU."""

import math
import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from neural_cost import HardwareSpec, Measurement, Operation, analyze_gap, estimate_trace  # noqa: E402
from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.adapters._jax.table import EMPTY_REASONS, TABLE, Free, LowerContext  # noqa: E402
from neural_cost.adapters.jax import parse_cost_analysis  # noqa: E402


@pytest.mark.parametrize(
    ("analysis", "expected"),
    [
        ({"flops": 8192.0, "bytes accessed": 5632.0, "transcendentals": 256.0}, (8192.0, 5632.0, 256.0)),
        ([{"flops": 10.0, "bytes accessed": 20.0}], (10.0, 20.0, None)),  # older JAX: a list of dicts
        ({"flops": -1.0, "bytes accessed": 4.0}, (None, 4.0, None)),  # -1 is XLA's "unknown", not a count
    ],
)
def test_cost_analysis_shapes(analysis, expected):
    figures = parse_cost_analysis(analysis)
    assert (figures["flops"], figures["bytes"], figures["transcendentals"]) == expected


@pytest.mark.parametrize("analysis", [None, [], "nonsense"])
def test_cost_analysis_without_figures_is_an_error_entry(analysis):
    assert "error" in parse_cost_analysis(analysis)


def test_a_failing_cross_check_never_fails_the_trace(monkeypatch):
    import neural_cost.adapters.jax as jax_adapter

    def no_compiler(*args, **kwargs):
        raise RuntimeError("no backend compiler here")

    monkeypatch.setattr(jax_adapter.jax, "jit", no_compiler)
    trace = JaxAdapter(cross_check=True).trace(lambda a: a * 2.0, (jnp.ones(4),))  # compiles on request
    assert trace.cross_check["error"] == "RuntimeError: no backend compiler here"
    text = analyze_gap(estimate_trace(trace), Measurement((1e-6,) * 5), HardwareSpec("c", 1e12, 1e11)).render()
    assert "cross-check: XLA cost_analysis unavailable (RuntimeError: no backend compiler here)" in text


def test_decomposed_attention_adds_up_to_the_attention_flops():
    # jax.nn.dot_product_attention on the CPU: dot_general (scores), softmax pieces, dot_general (values)
    batch, q_len, k_len, q_heads, kv_heads, dim = 2, 16, 24, 8, 2, 32
    q = jnp.ones((batch, q_len, q_heads, dim))
    k = jnp.ones((batch, k_len, kv_heads, dim))
    v = jnp.ones((batch, k_len, kv_heads, dim))
    trace = JaxAdapter(cross_check=False).trace(jax.nn.dot_product_attention, (q, k, v))
    matmul_flops = sum(op.cost.flops for op in trace.operations if op.name == "dot_general")
    fused = Operation(
        "sdpa",
        "attention",
        ((batch, q_heads, q_len, dim), (batch, kv_heads, k_len, dim), (batch, kv_heads, k_len, dim)),
        (batch, q_heads, q_len, dim),
    )
    assert matmul_flops == fused.cost.dense_flops == 2 * batch * q_heads * q_len * k_len * (dim + dim)  # 786,432
    assert trace.coverage.fraction == 1.0
    # the whole decomposition (einsum, scale, softmax, einsum) is the fused record's flops, plus one
    # `max` per query row: jnp.max's initial=-inf, left unfolded because XLA's path transposes the
    # row max between its reduction and the subtract. 16·(384·(128+1+5) − 2·16) = 822,784; + 256 rows
    rows = batch * q_heads * q_len
    assert fused.cost.flops == 16 * (384 * 134 - 2 * 16) == 822_784
    assert sum(op.cost.flops for op in trace.operations) == fused.cost.flops + rows


def _equations(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _equations(inner)


def _programs():
    key = jax.random.key(0)
    x = jnp.ones((4, 8, 8, 3))

    def net(x):
        y = x.reshape(4, -1) @ jnp.ones((192, 16))
        y = jax.lax.stop_gradient(y)[:, None, :].squeeze(1)
        z = jnp.broadcast_to(y[:, :1], (4, 16)) + jnp.expand_dims(y.sum(0), 0)
        return jax.nn.relu(z).astype(jnp.float32), jax.random.normal(key, (3,))

    yield net, (x,)
    yield jax.grad(lambda w, a: jnp.sum(jnp.tanh(a @ w))), (jnp.ones((8, 4)), jnp.ones((2, 8)))


def test_every_free_entry_has_a_reason_and_only_aliases_on_real_jaxprs():
    free_entries = {name: entry.reason for name, entry in TABLE.items() if isinstance(entry, Free)}
    assert free_entries and all(len(reason) > 10 for reason in free_entries.values())
    assert all(len(reason) > 10 for reason in EMPTY_REASONS.values())
    seen = set()
    for fn, args in _programs():
        for eqn in _equations(jax.make_jaxpr(fn)(*args).jaxpr):
            name = eqn.primitive.name
            entry = TABLE.get(name)
            is_free = isinstance(entry, Free) or (entry is not None and not entry(eqn, LowerContext(None, 1)))
            if not is_free or not eqn.invars:
                continue
            seen.add(name)
            size_in = math.prod(LowerContext.shape(eqn.invars[0]))
            assert all(math.prod(LowerContext.shape(out)) == size_in for out in eqn.outvars), (name, eqn)
    assert {"reshape", "stop_gradient", "squeeze"} <= seen, seen
