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
        y = jax.pure_callback(lambda a: a, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return y + 1.0

    trace = ADAPTER.trace(f, (X,))
    assert dict(trace.coverage.unmodeled) == {"pure_callback": 1}
    assert trace.coverage.fraction == 1 / 2  # add is modeled, the callback is not


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
