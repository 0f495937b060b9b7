"""The jaxpr walker: loops, conditionals, containers, coverage, scopes, bad input."""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax

from neural_cost import AdapterError, analyze_gap, estimate_trace  # noqa: E402
from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.hardware import HardwareSpec  # noqa: E402
from neural_cost.measure import Measurement  # noqa: E402

from ._opaque import opaque  # noqa: E402

ADAPTER = JaxAdapter(cross_check=False)
X = jnp.ones((8, 16), jnp.float32)
W = jnp.ones((16, 16), jnp.float32)


def flops_of(trace, name):
    return sum(op.cost.flops * op.count for op in trace.operations if op.name == name)


def test_scan_counts_its_body_length_times():
    def f(x, w):
        def body(c, _):
            return jnp.tanh(c @ w), None

        return lax.scan(body, x, None, length=16)[0]

    trace = ADAPTER.trace(f, (X, W))
    assert flops_of(trace, "dot_general") == 16 * 2 * 8 * 16 * 16  # 16 iterations × 2·8·16·16 = 65,536
    assert [(loop.trip_count, loop.source) for loop in trace.loop_assumptions] == [(16, "static")]
    assert trace.coverage.fraction == 1.0
    # executed: scan + 16 × (dot_general, tanh) = 33; in the program text: 3
    assert (trace.coverage.total, trace.coverage.static_total) == (33, 3)


def test_fori_loop_with_static_bounds_is_a_scan():
    trace = ADAPTER.trace(lambda x, w: lax.fori_loop(0, 16, lambda i, c: c @ w, x), (X, W))
    assert flops_of(trace, "dot_general") == 16 * 2 * 8 * 16 * 16


def test_while_i_less_than_16_is_inferred():
    def f(x, w):
        return lax.while_loop(lambda c: c[0] < 16, lambda c: (c[0] + 1, c[1] @ w), (0, x))[1]

    trace = ADAPTER.trace(f, (X, W))
    (loop,) = trace.loop_assumptions
    assert (loop.label, loop.trip_count, loop.source) == ("while_0", 16, "inferred")
    assert flops_of(trace, "dot_general") == 16 * 2 * 8 * 16 * 16
    assert flops_of(trace, "lt") == 17 * 1  # the condition runs 17 times on a scalar


@pytest.mark.parametrize(
    ("cond", "body", "start", "expected"),
    [
        (lambda c: c[0] <= 10, lambda c: (c[0] + 2, c[1]), 0, 6),  # 0, 2, ..., 10
        (lambda c: c[0] < 16, lambda c: (c[0] + 1, c[1]), 3, 13),  # bound on the left
        (lambda c: c[0] > 0, lambda c: (c[0] - 1, c[1]), 5, 5),  # counting down
        (lambda c: c[0] < 0, lambda c: (c[0] + 1, c[1]), 5, 0),  # never runs
    ],
)
def test_counted_while_variants(cond, body, start, expected):
    trace = ADAPTER.trace(lambda x: lax.while_loop(cond, body, (start, x))[1], (X,))
    assert trace.loop_assumptions[0].trip_count == expected and trace.loop_assumptions[0].source == "inferred"


def test_data_dependent_while_uses_the_default_and_the_report_names_it():
    def f(x):
        with jax.named_scope("search"):
            return lax.while_loop(lambda c: jnp.sum(c) < 100.0, lambda c: c * 2.0, x)

    trace = JaxAdapter(default_trip_count=5, cross_check=False).trace(f, (X,))
    (loop,) = trace.loop_assumptions
    assert (loop.label, loop.trip_count, loop.source, loop.scope) == ("search/while_0", 5, "default", "search")
    assert "test_walker.py" in (loop.location or "")
    assert flops_of(trace, "mul") == 5 * 8 * 16
    report = analyze_gap(estimate_trace(trace), Measurement((1e-3,) * 5), HardwareSpec("c", 1e12, 1e11))
    assert "Loop search/while_0 (search, " in report.render() and "counted 5 times by default" in report.render()


def test_explicit_trip_counts_by_index_and_label():
    def f(x):
        x = lax.while_loop(lambda c: jnp.sum(c) < 100.0, lambda c: c * 2.0, x)
        with jax.named_scope("search"):
            return lax.while_loop(lambda c: jnp.sum(c) > 1.0, lambda c: c * 0.5, x)

    trace = JaxAdapter(trip_counts={0: 3, "search/while_1": 4}, cross_check=False).trace(f, (X,))
    assert [(lp.label, lp.trip_count, lp.source) for lp in trace.loop_assumptions] == [
        ("while_0", 3, "explicit"),
        ("search/while_1", 4, "explicit"),
    ]
    with pytest.raises(AdapterError, match=r"trip_counts names no loop of this program: \['while_7'\].*0 \(while_0\)"):
        JaxAdapter(trip_counts={"while_7": 2}, cross_check=False).trace(f, (X,))


def test_nested_loops_multiply():
    def f(x, w):
        def outer(c, _):
            inner = lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] @ w), (0, c))[1]
            return inner, None

        return lax.scan(outer, x, None, length=4)[0]

    trace = ADAPTER.trace(f, (X, W))
    assert flops_of(trace, "dot_general") == 4 * 3 * 2 * 8 * 16 * 16  # 4 scans × 3 whiles × 4,096


def test_cond_costs_its_most_expensive_branch_and_says_so():
    def f(p, x, w):
        return lax.cond(p, lambda a: (a @ w) @ w, lambda a: a * 2.0, x)

    trace = ADAPTER.trace(f, (True, X, W))
    assert flops_of(trace, "dot_general") == 2 * (2 * 8 * 16 * 16)
    assert flops_of(trace, "mul") == 0
    assert any("most expensive branch" in note for note in trace.notes)


def test_calls_and_custom_derivatives_are_walked():
    @jax.custom_jvp
    def smooth(x):
        return jnp.log1p(jnp.exp(x))

    smooth.defjvp(lambda p, t: (smooth(p[0]), t[0] * jax.nn.sigmoid(p[0])))

    @jax.custom_vjp
    def clip(x):
        return jnp.clip(x, -1.0, 1.0)

    clip.defvjp(lambda x: (clip(x), None), lambda _, g: (g,))

    def f(x, w):
        y = jax.jit(lambda a: a @ w)(x)
        y = jax.checkpoint(lambda a: jnp.sin(a))(y)
        return clip(smooth(y))

    trace = ADAPTER.trace(f, (X, W))
    names = {op.name for op in trace.operations}
    assert {"dot_general", "sin", "exp", "log1p"} <= names
    assert trace.coverage.fraction == 1.0


def test_unknown_primitives_are_unmodeled_and_named():
    def f(x):
        return opaque(x) + 1.0

    trace = ADAPTER.trace(f, (X,))
    assert dict(trace.coverage.unmodeled) == {"neural_cost_test_opaque": 1}
    assert trace.coverage.fraction == 1 / 2  # add is modeled, the opaque primitive is not


def test_bad_input_errors_keep_jax_message():
    with pytest.raises(AdapterError, match="fn=3 is not callable"):
        ADAPTER.trace(3, (X,))
    with pytest.raises(AdapterError, match=r"tracing .*<lambda> with jax.make_jaxpr failed \(TypeError\)"):
        ADAPTER.trace(lambda a, b: a @ b, (X,))  # wrong structure: one argument for two

    def broken(x):
        raise ValueError("bad board encoding")

    with pytest.raises(AdapterError, match=r"broken with jax.make_jaxpr failed \(ValueError\): bad board encoding"):
        ADAPTER.trace(broken, (X,))
    with pytest.raises(AdapterError, match="dot_general requires contracting dimensions to have the same shape"):
        ADAPTER.trace(lambda a: a @ a, (X,))


def test_shard_map_bodies_are_walked():
    from jax.sharding import PartitionSpec

    mesh = jax.make_mesh((1,), ("x",))
    f = jax.shard_map(lambda a: jnp.sin(a) @ a.T, mesh=mesh, in_specs=PartitionSpec(), out_specs=PartitionSpec())
    trace = ADAPTER.trace(f, (jnp.ones((4, 4)),))
    # shard_map (a call boundary) + sin, transpose (a materialised copy), dot_general
    assert [op.name for op in trace.operations] == ["sin", "transpose", "dot_general"]
    assert (trace.coverage.total, trace.coverage.modeled, trace.coverage.free) == (4, 3, 1)
    assert flops_of(trace, "dot_general") == 2 * 4 * 4 * 4  # 128


# -- a library op counts as the op (adapters/_jax/composites.py) ------------------------------


def test_a_recognised_jax_nn_call_is_one_record_and_its_equations_are_modeled():
    trace = ADAPTER.trace(lambda x: jax.nn.silu(x) * 2.0, (X,))
    silu, scaled = trace.operations
    assert (silu.name, silu.kind, silu.attrs) == ("silu", "elementwise", {"op": "silu", "function": "<lambda>"})
    assert silu.inputs == ((8, 16),)  # one read of x, one write of the result: 128 floats each
    assert (silu.cost.flops, silu.cost.read_bytes, silu.cost.write_bytes) == (5 * 128, 512, 512)  # 5 per element
    # the jit call and its body's logistic and mul are modeled, part of the one record; then the mul
    assert (trace.coverage.total, trace.coverage.modeled, trace.coverage.free) == (4, 4, 0)
    assert scaled.name == "mul"


def test_log_softmax_reads_its_axis_and_softmax_is_matched_as_a_sequence():
    trace = ADAPTER.trace(lambda x: jax.nn.log_softmax(x, axis=0) + jax.nn.softmax(x), (X,))
    kinds = [(op.kind, op.attrs.get("axis"), op.attrs.get("log")) for op in trace.operations]
    assert kinds == [("softmax", 0, True), ("softmax", 1, False), ("elementwise", None, None)]
    # 16 rows of 8 along axis 0: 5·8 - 1 = 39 per row = 624; 8 rows of 16: 5·16 - 2 = 78 per row = 624
    assert [op.cost.flops for op in trace.operations[:2]] == [624, 624]


def test_a_users_function_named_like_a_library_op_is_walked_as_usual():
    @jax.jit
    def softplus(x, y):  # two arrays in: not jax.nn.softplus's signature
        return jnp.logaddexp(x, y)

    trace = ADAPTER.trace(softplus, (X, X))
    assert "softplus" not in {op.attrs.get("op") for op in trace.operations}
    assert len(trace.operations) > 1 and trace.coverage.unmodeled == ()


def test_a_sequence_whose_intermediate_is_used_elsewhere_is_not_folded():
    def f(x):
        shifted = x - jax.lax.stop_gradient(x.max(axis=-1, keepdims=True))
        e = jnp.exp(shifted)
        return e / e.sum(axis=-1, keepdims=True), e  # e is also an output: it is written

    assert "softmax" not in {op.kind for op in ADAPTER.trace(f, (X,)).operations}


def test_a_flax_layer_norm_folds_into_one_record():
    nn = pytest.importorskip("flax.linen")

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(16)(nn.LayerNorm()(x))

    params = Net().init(jax.random.key(0), X)
    trace = ADAPTER.trace(Net().apply, (params, X), param_argnums=0)
    (norm,) = [op for op in trace.operations if op.scope == "Net/LayerNorm_0"]
    assert (norm.kind, norm.inputs, norm.attrs) == ("layernorm", ((8, 16), (16,), (16,)), {"normalized_dims": 1})
    assert norm.cost.flops == 8 * (7 * 16 + 2)  # 5L + 2 statistics, 2L scale and bias: 912
    assert trace.coverage.unmodeled == ()


def test_a_flax_scope_with_a_child_module_or_no_flax_at_all_is_walked_as_usual():
    nn = pytest.importorskip("flax.linen")

    class Wrapped(nn.LayerNorm):  # a norm layer that calls a child module inside its scope
        @nn.compact
        def __call__(self, x):
            return nn.Dense(16)(super().__call__(x))

    params = Wrapped().init(jax.random.key(0), X)
    trace = ADAPTER.trace(Wrapped().apply, (params, X), param_argnums=0)
    # the outer scope holds a child (Dense_0): not folded; the inherited call runs in its own
    # scope, Wrapped/Wrapped, whose equations are exactly LayerNorm's: one record
    assert [(op.kind, op.scope) for op in trace.operations if op.kind in ("layernorm", "matmul")] == [
        ("layernorm", "Wrapped/Wrapped"),
        ("matmul", "Wrapped/Dense_0"),
    ]
    # a plain function's trace is the same whether or not Flax is imported
    plain = ADAPTER.trace(lambda x: (x - x.mean(-1, keepdims=True)) * 2.0, (X,))
    assert "layernorm" not in {op.kind for op in plain.operations}


def test_tracing_without_flax_imports_no_flax(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "flax.linen", raising=False)
    trace = ADAPTER.trace(lambda x: jax.nn.gelu(x) * 2.0, (X,))
    assert "flax.linen" not in sys.modules
    assert [op.attrs.get("op") for op in trace.operations] == ["gelu_tanh", "mul"]
