"""TensorFlow's resizes, FFTs, linear algebra and Python callbacks traced from real programs
(issue 12 item 6): each program is 100% covered and its op's count equals the closed form
derived beside it. Float32 = 4 bytes."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")

from neural_cost.adapters import TensorFlowAdapter  # noqa: E402


def records(function, x, kind):
    trace = TensorFlowAdapter().trace(function, x)
    assert trace.coverage.unmodeled == ()
    assert trace.coverage.fraction == 1.0
    return [op for op in trace.operations if op.kind == kind]


IMAGE = tf.ones((1, 4, 4, 2))  # NHWC


@pytest.mark.parametrize(
    ("method", "flops"),
    [
        ("bilinear", 1_152),  # 2 channels · 64 outputs × 9 (3 lerps of 3)
        ("bicubic", 4_480),  # 128 × 35
        ("nearest", 0),  # a copy
    ],
)
def test_resize(method, flops):
    (op,) = records(lambda x: tf.image.resize(x, (8, 8), method), IMAGE, "interpolate")
    assert op.inputs == ((1, 2, 4, 4),) and op.output == (1, 2, 8, 8)  # read as (N, C, H, W)
    assert op.cost.flops == flops


def test_antialiased_resize_is_two_separable_passes():
    (op,) = records(
        lambda x: tf.image.resize(x, (2, 2), "bilinear", antialias=True), tf.ones((1, 8, 8, 2)), "interpolate"
    )
    assert op.cost.flops == 680  # 9 taps: 2·8·2·17 + 2·2·2·17 = 544 + 136


def test_fft():
    x = tf.ones((4, 8))
    (fft,) = records(lambda a: tf.signal.fft(tf.complex(a, a)), x, "fft")
    assert fft.cost.flops == 480  # 4 × 5·8·3
    (rfft,) = records(tf.signal.rfft, x, "fft")
    assert rfft.cost.flops == 240  # 4 × 2.5·8·3
    (irfft,) = records(lambda a: tf.signal.irfft(tf.complex(a[:, :5], a[:, :5])), x, "fft")
    assert irfft.cost.flops == 240 + 32  # 4 × 60 to 8 reals; + 1/N on 32 outputs
    (fft2,) = records(lambda a: tf.signal.fft2d(tf.complex(a, a)), tf.ones((3, 4, 8)), "fft")
    assert fft2.cost.flops == 2_400  # 3 × 5·32·5


A = tf.constant(np.random.default_rng(0).standard_normal((6, 6)), tf.float32)
SPD = tf.matmul(A, A, transpose_b=True) + 6 * tf.eye(6)
TALL = tf.ones((8, 4))


@pytest.mark.parametrize(
    ("name", "function", "x", "flops"),
    [
        ("svd values", lambda a: tf.linalg.svd(a, compute_uv=False), TALL, 427),  # 4mn² - 4n³/3 = 426.67
        ("svd", tf.linalg.svd, TALL, 2_304),  # thin U, V (the defaults): 14mn² + 8n³
        ("svd full", lambda a: tf.linalg.svd(a, full_matrices=True), TALL, 2_624),  # 4m²n + 8mn² + 9n³
        ("qr", tf.linalg.qr, TALL, 427),  # geqrf + reduced Q: 213.33 + 213.33
        ("eigh", tf.linalg.eigh, SPD, 1_944),  # 9n³
        ("eigvalsh", tf.linalg.eigvalsh, SPD, 288),  # 4n³/3
        ("cholesky", tf.linalg.cholesky, SPD, 72),  # n³/3
        ("triangular_solve", lambda a: tf.linalg.triangular_solve(a, a[:, :3]), A, 108),  # n²k = 36·3
        ("inv", tf.linalg.inv, A, 432),  # 2n³
        ("det", tf.linalg.det, A, 149),  # LU + 5 multiplies
        ("slogdet", tf.linalg.slogdet, A, 155),  # LU + 6 logs + 5 adds
        ("lu", tf.linalg.lu, A, 144),  # 2n³/3
        ("solve", lambda a: tf.linalg.solve(a, a[:, :3]), A, 360),  # LU 144 + 2·36·3
    ],
)
def test_linear_algebra(name, function, x, flops):
    (op,) = records(function, x, "decomposition")
    assert op.cost.flops == flops


def test_eye_is_a_diagonal_matrix_copy():
    (eye,) = [op for op in records(lambda a: a + tf.eye(6), A, "copy") if op.name.startswith("MatrixDiag")]
    assert (eye.cost.flops, eye.cost.write_bytes) == (0, 144)  # 36 values written


def test_python_callbacks_count_their_bytes_and_say_their_flops_are_unknown():
    for wrap in (tf.py_function, tf.numpy_function):
        (op,) = records(lambda a, wrap=wrap: wrap(lambda v: v * 2, [a], tf.float32), tf.ones((4, 4)), "callback")
        assert (op.cost.flops, op.cost.read_bytes) == (0, 64)  # 4·16 sent to Python
        assert op.cost.write_bytes == 0  # the results have no static shape: not counted, and said so
        assert any("no static shape" in note for note in op.cost.notes)
