"""JAX's linear algebra, FFTs, image resizing and host callbacks traced from real programs
(issue 12 item 6): each program is 100% covered and its op's count equals the closed form
derived beside it. Float32 = 4 bytes."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from neural_cost.adapters import JaxAdapter  # noqa: E402
from neural_cost.adapters._jax.table import TABLE, Free  # noqa: E402


def trace_all(function, *args):
    trace = JaxAdapter().trace(function, args)
    assert trace.coverage.unmodeled == ()
    assert trace.coverage.fraction == 1.0
    return trace


def records(function, *args, kind):
    return [op for op in trace_all(function, *args).operations if op.kind == kind]


A = jnp.asarray(np.random.default_rng(0).standard_normal((6, 6)), jnp.float32)
SPD = A @ A.T + 6 * jnp.eye(6)
TALL = jnp.ones((8, 4))


@pytest.mark.parametrize(
    ("name", "function", "args", "flops"),
    [
        ("svd", jnp.linalg.svd, (TALL,), 2_624),  # full U: 4m²n + 8mn² + 9n³ = 1,024 + 1,024 + 576
        ("svd thin", lambda x: jnp.linalg.svd(x, full_matrices=False), (TALL,), 2_304),  # 14mn² + 8n³
        ("svd values", lambda x: jnp.linalg.svd(x, compute_uv=False), (TALL,), 427),  # 4mn² - 4n³/3 = 426.67
        ("qr", jnp.linalg.qr, (TALL,), 427),  # geqrf 213.33 + reduced Q 213.33 = 426.67
        ("eigh", jnp.linalg.eigh, (SPD,), 1_944),  # 9n³ (the primitive always forms the vectors)
        ("cholesky", jnp.linalg.cholesky, (SPD,), 72),  # n³/3
        ("eig", jnp.linalg.eig, (A,), 5_400),  # 25n³
        ("triangular_solve", lambda a, b: jax.scipy.linalg.solve_triangular(a, b), (A, jnp.ones((6, 3))), 108),  # n²k
    ],
)
def test_linear_algebra(name, function, args, flops):
    (op,) = records(function, *args, kind="decomposition")
    assert op.cost.flops == flops


def test_solve_and_inverse_are_an_lu_and_two_triangular_solves():
    ops = records(jnp.linalg.solve, A, jnp.ones((6, 3)), kind="decomposition")
    by_routine = sorted((op.attrs["routine"], op.cost.flops) for op in ops)
    # LU 2·6³/3 = 144; the forward and backward substitutions 36·3 = 108 each
    assert by_routine == [("lu", 144), ("triangular_solve", 108), ("triangular_solve", 108)]
    inverse = records(jnp.linalg.inv, A, kind="decomposition")
    assert sum(op.cost.flops for op in inverse) == 144 + 2 * 216  # against the identity: k = 6


def test_det_is_an_lu_and_its_platform_query_is_free():
    trace = trace_all(jnp.linalg.det, A)
    (lu,) = [op for op in trace.operations if op.kind == "decomposition"]
    assert lu.cost.flops == 144  # the diagonal's product is its own equations
    assert isinstance(TABLE["platform_index"], Free)  # det's lax.platform_dependent: resolved at compile time


@pytest.mark.parametrize(
    ("function", "x", "flops"),
    [
        (jnp.fft.fft, jnp.ones((4, 8), jnp.complex64), 480),  # 4 × 5·8·3
        (jnp.fft.rfft, jnp.ones((4, 8)), 240),  # 4 × 2.5·8·3
        (jnp.fft.fft2, jnp.ones((3, 4, 8), jnp.complex64), 2_400),  # 3 × 5·32·5
        (jnp.fft.ifft, jnp.ones((4, 8), jnp.complex64), 480 + 64),  # + 1/N on 32 complex values
        (lambda x: jnp.fft.irfft(x, n=8), jnp.ones((4, 5), jnp.complex64), 240 + 32),  # + 1/N on 32 reals
    ],
)
def test_fft(function, x, flops):
    (op,) = records(function, x, kind="fft")
    assert op.cost.flops == flops
    assert set(op.cost.flops_by_dtype) == {"float32"}


@pytest.mark.parametrize("method", ["nearest", "bilinear", "cubic"])
def test_image_resize_lowers_to_primitives_already_modeled(method):
    # jax.image.resize builds weight matrices and contracts them (dot_general) or gathers (nearest)
    trace = trace_all(lambda x: jax.image.resize(x, (1, 8, 8, 2), method), jnp.ones((1, 4, 4, 2)))
    kinds = {op.kind for op in trace.operations}
    assert ("gather" if method == "nearest" else "matmul") in kinds


def test_callbacks_count_their_bytes_and_say_their_flops_are_unknown():
    def host(a):
        return np.sin(a)

    shape = jax.ShapeDtypeStruct((4, 4), jnp.float32)
    for call in (jax.pure_callback, jax.experimental.io_callback):
        (op,) = records(lambda x, call=call: call(host, shape, x), jnp.ones((4, 4)), kind="callback")
        assert (op.cost.flops, op.cost.read_bytes, op.cost.write_bytes) == (0, 64, 64)  # 4·16 each way
        assert op.cost.notes[0].startswith("FLOPs unknown: host callback")
        assert "host" in op.attrs["target"]


def test_the_issues_512_svd_is_modeled():
    (op,) = records(jnp.linalg.svd, jnp.ones((512, 512)), kind="decomposition")
    assert op.cost.flops == 21 * 512**3  # 4n³ + 8n³ + 9n³ = 2,818,572,288


def test_debug_prints_and_callbacks_count_the_bytes_they_send():
    # jax.debug.print / jax.debug.callback send x (3·4 float32 = 48 bytes) to the host and
    # bring nothing back: 48 bytes read, 0 written, FLOPs unknown (0, with the note).
    x = jnp.ones((3, 4))
    for fn in (lambda v: (jax.debug.print("{}", v), v + 1)[1], lambda v: (jax.debug.callback(print, v), v + 1)[1]):
        trace = JaxAdapter().trace(fn, (x,))
        (op,) = [op for op in trace.operations if op.kind == "callback"]
        assert (op.cost.flops, op.cost.read_bytes, op.cost.write_bytes) == (0, 48, 0)
        assert op.cost.notes[0].startswith("FLOPs unknown: host callback")


def test_ragged_dot_and_its_gradients_are_grouped_products():
    """A mixture of experts' ``lax.ragged_dot``: 16 tokens of 8 features (M, K) through 3 experts' 8 → 6 weights,
    the experts taking 4, 5 and 7 tokens. Each token goes through one expert: 2 · M · K · N = 2 · 16 · 8 · 6 = 1,536
    FLOPs, and as much for each gradient (the weights': one (8, 6) output per expert, the contracted tokens split)."""
    x, w, sizes = jnp.ones((16, 8)), jnp.ones((3, 8, 6)), jnp.array([4, 5, 7], jnp.int32)
    (forward,) = records(jax.lax.ragged_dot, x, w, sizes, kind="grouped_matmul")
    assert forward.inputs == ((16, 8), (3, 8, 6), (3,)) and forward.output == (16, 6)
    assert forward.cost.flops == 1_536
    assert forward.cost.read_bytes == 4 * (128 + 144 + 3)  # x, every expert's weights, the sizes (int32)
    grad = jax.grad(lambda x, w: jax.lax.ragged_dot(x, w, sizes).sum(), argnums=(0, 1))
    products = records(grad, x, w, kind="grouped_matmul")
    assert sorted((op.output, op.cost.flops) for op in products) == [
        ((3, 8, 6), 1_536),  # the weights' gradient: 2 · K · N · M over the 16 tokens, one (8, 6) per expert
        ((16, 6), 1_536),  # the forward product
        ((16, 8), 1_536),  # the input's gradient: 2 · M · N · K
    ]
