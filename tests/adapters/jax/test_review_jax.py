"""Review of the JAX adapter: numbers that lied, each pinned by its hand-derived value.

Every test names what the adapter reported before its fix and the number it must report.
"""

import os

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
jax = pytest.importorskip("jax")
jnp = jax.numpy
lax = jax.lax
np = pytest.importorskip("numpy")

from neural_cost import estimate_trace  # noqa: E402
from neural_cost.adapters import JaxAdapter  # noqa: E402

from ._opaque import opaque  # noqa: E402

ADAPTER = JaxAdapter(cross_check=False)


def flops_of(trace, name):
    return sum(op.cost.flops * op.count for op in trace.operations if op.name == name)


# --- sub-jaxprs that never run ----------------------------------------------------------------------


def test_custom_linear_solve_counts_only_the_solve_it_runs():
    # jnp.linalg.solve wraps its LU solve in custom_linear_solve, which carries four jaxprs
    # (matvec, vecmat, solve, transpose_solve); the forward runs only `solve`. Walking all
    # four invented two matmuls that never execute: matvec a·x and vecmat xᵀ·a, each
    # 2·64·64·8 = 65,536 FLOPs (for jnp.linalg.inv of 64×64: 2 × 524,288), and counted the
    # transpose_solve's two triangular solves. The solve itself has no dot_general.
    a, b = jnp.eye(64) + 0.1, jnp.ones((64, 8))
    trace = ADAPTER.trace(jnp.linalg.solve, (a, b))
    assert flops_of(trace, "dot_general") == 0
    # only what runs: one LU (2·64³/3 = 174,762.7 → 174,763) and two triangular solves (64²·8 = 32,768 each)
    routines = [(op.attrs["routine"], op.cost.flops) for op in trace.operations if op.kind == "decomposition"]
    assert sorted(routines) == [("lu", 174_763), ("triangular_solve", 32_768), ("triangular_solve", 32_768)]
    assert trace.coverage.unmodeled == ()
    assert not any("carries a jaxpr" in note for note in trace.notes)


# --- generic reductions: the combiner is part of one operation ---------------------------------------


def _argmax_by_reduce(x, i):
    def combine(a, b):
        (av, ai), (bv, bi) = a, b
        keep = av >= bv
        return jnp.where(keep, av, bv), jnp.where(keep, ai, bi)

    return lax.reduce((x, i), (-jnp.inf, 0), combine, (1,))


def test_generic_reduce_is_one_operation_not_a_scalar_program_per_element():
    # lax.reduce over (1000, 100) → (1000,): 1000 · 99 = 99,000 combines of a 3-op body
    # (ge, select_n, select_n). Before: each body equation was an executed equation 99,000
    # times (coverage total 495,001 for a 6-equation program, which drowns any unmodeled op
    # in a rounding error) and each scalar application read and wrote its scalars (2.57 MB read,
    # 891 kB written, for an 800 kB input and an 8 kB output).
    x, i = jnp.ones((1000, 100)), jnp.zeros((1000, 100), jnp.int32)
    trace = ADAPTER.trace(_argmax_by_reduce, (x, i))
    (op,) = trace.operations
    assert dict(op.cost.flops_by_dtype) == {"float32": 2 * 99_000, "int32": 99_000}  # ge + select f32; select i32
    assert op.cost.read_bytes == 1000 * 100 * (4 + 4) + 4 + 4  # both operands once, plus the two init values
    assert op.cost.write_bytes == 1000 * (4 + 4)  # the two (1000,) results
    assert (trace.coverage.total, trace.coverage.modeled) == (1, 1)


def test_generic_reduce_does_not_drown_an_unmodeled_callback():
    def f(x, i):
        return _argmax_by_reduce(opaque(x), i)

    trace = ADAPTER.trace(f, (jnp.ones((1000, 100)), jnp.zeros((1000, 100), jnp.int32)))
    # two equations: the opaque primitive (unmodeled) and the reduce (modeled). Before: 1 of 495,002.
    assert trace.coverage.fraction == 0.5


# --- compulsory bytes -------------------------------------------------------------------------------

W = jnp.ones((256, 256))  # 262,144 bytes
X = jnp.ones((8, 256))  # 8,192 bytes


def test_weights_closed_over_inside_a_jit_are_compulsory():
    # A jitted function that closes over its weights keeps them as its inner ClosedJaxpr's
    # consts, not the outer jaxpr's. Before: compulsory 16,384 (x and the output only).
    trace = ADAPTER.trace(jax.jit(lambda x: x @ W), (X,))
    assert estimate_trace(trace).compulsory_bytes == 8192 + 262_144 + 8192  # x, W, out = 278,528
    # the same weights closed over twice, in two calls, are moved once
    twice = ADAPTER.trace(lambda x: jax.jit(lambda a: a @ W)(jax.jit(lambda a: a @ W)(x)), (X,))
    assert estimate_trace(twice).compulsory_bytes == 278_528


def test_an_input_returned_unchanged_is_still_written():
    # Not a defect, pinned so nobody "fixes" it: a top-level jit returns %arg0 from its
    # module and XLA copies it into a fresh output buffer (the result is not the input's
    # buffer), so x is read once and written once more: 3 × 8,192.
    trace = ADAPTER.trace(lambda x: (x, x * 2.0), (X,))
    assert estimate_trace(trace).compulsory_bytes == 3 * 8192


# --- loops ------------------------------------------------------------------------------------------


def _run_trips(cond, body, start):
    """The real trip count, counted by the loop itself in float32."""

    def counted(c):
        return body(c[0]), c[1] + 1

    return int(lax.while_loop(lambda c: cond(c[0]), counted, (jnp.float32(start), 0))[1])


@pytest.mark.parametrize(
    ("cond", "body", "start"),
    [
        (lambda i: i <= 0.3, lambda i: i + 0.1, 0.0),  # 0.1f+0.1f+0.1f <= 0.3f: 4 trips; ⌊0.3/0.1⌋+1 said 3
        (lambda i: i < 0.7, lambda i: i + 0.1, 0.0),
        (lambda i: i < 1.0, lambda i: i + 0.1, 0.0),
        (lambda i: i > 0.0, lambda i: i - 0.3, 1.0),
    ],
)
def test_float_counters_take_the_trip_count_float_arithmetic_gives(cond, body, start):
    expected = _run_trips(cond, body, start)
    x = jnp.ones((4,))
    trace = ADAPTER.trace(
        lambda x: lax.while_loop(lambda c: cond(c[0]), lambda c: (body(c[0]), c[1]), (start, x))[1], (x,)
    )
    (loop,) = trace.loop_assumptions
    assert (loop.trip_count, loop.source) == (expected, "inferred")


def test_the_le_float_counter_runs_four_times():
    assert _run_trips(lambda i: i <= 0.3, lambda i: i + 0.1, 0.0) == 4  # the case above, pinned by hand


def test_cond_branch_with_unmodeled_work_stays_in_coverage():
    # cond is costed as its most expensive *modeled* branch (the matmul, 2·64³ = 524,288
    # FLOPs). The other branch holds an operation we have no rule for: before, it weighed 0
    # and vanished, and coverage read 100%.
    x = jnp.eye(64)
    trace = ADAPTER.trace(lambda p, a: lax.cond(p, lambda m: m @ m, opaque, a), (True, x))
    assert flops_of(trace, "dot_general") == 2 * 64**3
    assert dict(trace.coverage.unmodeled).get("neural_cost_test_opaque") == 1
    assert trace.coverage.fraction < 1.0
    assert any("neural_cost_test_opaque" in note for note in trace.notes)


# --- dtypes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preferred", "charged"),
    [(None, "bfloat16"), (jnp.float32, "float32")],
)
def test_mixed_input_matmul_is_charged_to_the_type_it_runs_in(preferred, charged):
    # int8 @ bf16: JAX lowers a mixed-type dot_general (on CPU and GPU) by converting both
    # operands to the result type, so the product runs in bf16 (or f32 with
    # preferred_element_type=float32). Before: the 1,024 FLOPs (2·8·8·8) were charged to int8,
    # whose peak is often twice bf16's — half the compute time.
    def f(a, b):
        return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=preferred)

    trace = ADAPTER.trace(f, (jnp.ones((8, 8), jnp.int8), jnp.ones((8, 8), jnp.bfloat16)))
    (op,) = trace.operations
    assert dict(op.cost.flops_by_dtype) == {charged: 2 * 8 * 8 * 8}


def test_same_type_bf16_matmul_with_f32_accumulation_stays_bf16():
    a = jnp.ones((8, 8), jnp.bfloat16)
    f = lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)  # noqa: E731
    (op,) = ADAPTER.trace(f, (a, a)).operations
    assert dict(op.cost.flops_by_dtype) == {"bfloat16": 1024}


# --- scopes -----------------------------------------------------------------------------------------


def test_grad_scopes_are_module_paths_without_transform_wrappers():
    nn = pytest.importorskip("flax.linen")

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(4)(x)

    model, x = M(), jnp.ones((2, 8))
    params = model.init(jax.random.key(0), x)
    trace = ADAPTER.trace(jax.grad(lambda p, x: jnp.sum(model.apply(p, x))), (params, x))
    scopes = {op.scope for op in trace.operations}
    # Before: 'jvp(M)/Dense_0' (forward), 'transpose(jvp(M))/Dense_0' (backward), 'jvp()'
    # for unscoped ops: the by-scope table split one module into rows that hid half its cost.
    assert not any("(" in scope for scope in scopes if scope), scopes
    rows = {row.scope: row for row in estimate_trace(trace).by_scope}
    # forward x·W 2·2·8·4 = 128 and the weight gradient xᵀ·dy 128 (x is not differentiated)
    assert rows["M/Dense_0"].flops_by_dtype["float32"] >= 256
    assert sum(op.cost.flops for op in trace.operations if op.scope == "M/Dense_0" and op.name == "dot_general") == 256


def test_remat_under_grad_does_not_repeat_the_enclosing_scope():
    # A checkpoint's transposed body carries its forward name stack ('jvp(A)/rematted_computation')
    # under an equation already in 'transpose(jvp(A))': joined naively that is 'A/A/...'.
    def f(w, x):
        with jax.named_scope("A"):
            return jnp.sum(jax.checkpoint(lambda x: jnp.tanh(x @ w) @ w)(x))

    trace = ADAPTER.trace(jax.grad(f), (jnp.ones((16, 16)), jnp.ones((4, 16))))
    assert {op.scope for op in trace.operations} == {"A"}


# --- timing -----------------------------------------------------------------------------------------


def test_benchmark_times_device_arrays_not_host_transfers(monkeypatch):
    # A NumPy argument is copied to the device on every call: with a 4 MB input the median
    # was 704 µs against 313 µs for the same program on a device array — the estimate has
    # no transfer in it, so the efficiency halved. The arguments go to the device once.
    import neural_cost.adapters.jax as adapter_module

    seen = {}
    real = adapter_module.benchmark

    def spy(fn, *args, **kwargs):
        seen["args"] = args
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(adapter_module, "benchmark", spy)
    host = np.ones((64, 64), np.float32)
    measurement = JaxAdapter(cross_check=False).benchmark(lambda a: a.sum(), host, warmup=1, repeats=2)
    assert all(isinstance(a, jax.Array) for a in seen["args"])
    assert measurement.device_kind == "cpu"
