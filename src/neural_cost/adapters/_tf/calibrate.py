"""Calibration probes that run through TensorFlow: a matmul, a convolution and a copy.

Each is a ``tf.function`` with ``jit_compile=False`` — what TensorFlow runs by default, oneDNN's
kernels on an x86 CPU — called on random inputs, verified against float64 with the shared
checks (``hardware.calibrate.check_matmul``, ``hardware.kernels.check_conv``) before and after
timing, and timed best of N. Each timed run fetches one element of the result to the host,
which waits for the op on any device (a GPU runs asynchronously; a CPU op has finished).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import tensorflow as tf

from ...core.errors import MeasurementError
from ...hardware.calibrate import ProbeResult, check_matmul, refuse_constant

_TF_DTYPES = {
    "float32": tf.float32,
    "tfloat32": tf.float32,  # float32 data multiplied at TF32 precision on tensor cores
    "float64": tf.float64,
    "bfloat16": tf.bfloat16,
    "float16": tf.float16,
}
_SAMPLE_ROWS = 8
_COPY_STRIDE = 4099


@contextmanager
def _precision(dtype: str) -> Iterator[None]:
    """TensorFlow runs float32 matmuls and convolutions as TF32 on Ampere and later unless told
    not to: float32 asks for full precision, tfloat32 for TF32; the setting is put back after."""
    previous = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(dtype == "tfloat32")
    try:
        yield
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(previous)


def _materialise(result: Any) -> None:
    """Fetch the result's last element: returns once the op that made it has finished."""
    tf.reshape(result, [-1])[-1].numpy()


def _host(tensor: Any) -> Any:
    return tf.cast(tensor, tf.float32).numpy()


def _timed(function: Callable[..., Any], inputs: tuple[Any, ...], repeats: int) -> tuple[Any, tuple[float, ...]]:
    samples = []
    result: Any = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function(*inputs)
        _materialise(result)
        samples.append(time.perf_counter() - start)
    return result, tuple(samples)


def _on_device(device: str, host: Any, kind: Any) -> Any:
    with tf.device(device):
        return tf.cast(tf.constant(host), kind)


def tf_matmul_probe(device: str = "/CPU:0") -> Any:
    """n×n·n×n matmuls (``tf.linalg.matmul``) of random data on ``device``, verified against a
    float64 product of sampled rows."""

    def probe(dtype: str, n: int, repeats: int) -> ProbeResult:
        if dtype not in _TF_DTYPES:
            raise MeasurementError(
                f"TensorFlowAdapter.calibrate: no matmul probe for dtype {dtype!r}; use one of {list(_TF_DTYPES)}"
            )
        rng = np.random.default_rng(0)
        a_host = rng.standard_normal((n, n), dtype=np.float32)
        b_host = rng.standard_normal((n, n), dtype=np.float32)
        refuse_constant(a_host[:4], f"{dtype} matmul")
        kind = _TF_DTYPES[dtype]
        a, b = _on_device(device, a_host, kind), _on_device(device, b_host, kind)
        a_ref, b_ref = _host(a), _host(b)  # the values after rounding to dtype
        rows = sorted({int(r) for r in rng.integers(0, n, _SAMPLE_ROWS)})
        matmul = tf.function(tf.linalg.matmul, jit_compile=False)
        with _precision(dtype), tf.device(device):
            check_matmul(_host(matmul(a, b)), a_ref, b_ref, dtype, rows)  # traces, warms, rejects a wrong probe
            result, samples = _timed(matmul, (a, b), repeats)
        verified = check_matmul(_host(result), a_ref, b_ref, dtype, rows)
        return ProbeResult("matmul", dtype, n, 2 * n**3, samples, verified)

    return probe


def tf_conv_probe(device: str = "/CPU:0") -> Any:
    """A stride-1, 'SAME' 3×3 convolution (``tf.nn.conv2d``) of random data of the shape
    ``hardware.kernels.CONV_SHAPE`` on ``device``, verified on sampled outputs against float64
    sums. TensorFlow's CPU kernels take NHWC data and HWIO filters: the inputs are laid out so
    before timing and the result put back in NCHW for the shared check, outside the timed runs."""
    from ...hardware.kernels import CONV_FILTERS, CONV_KERNEL, CONV_SHAPE, check_conv, conv_flops, conv_positions

    def probe(dtype: str, repeats: int) -> ProbeResult:
        if dtype not in _TF_DTYPES or dtype == "float64":
            raise MeasurementError(f"TensorFlowAdapter.calibrate: no convolution probe for dtype {dtype!r}")
        rng = np.random.default_rng(2)
        x_host = rng.standard_normal(CONV_SHAPE, dtype=np.float32)
        w_host = rng.standard_normal((CONV_FILTERS, CONV_SHAPE[1], CONV_KERNEL, CONV_KERNEL), dtype=np.float32)
        refuse_constant(x_host[0, 0], f"{dtype} convolution")
        kind = _TF_DTYPES[dtype]
        x = _on_device(device, np.ascontiguousarray(x_host.transpose(0, 2, 3, 1)), kind)  # NCHW → NHWC
        w = _on_device(device, np.ascontiguousarray(w_host.transpose(2, 3, 1, 0)), kind)  # OIHW → HWIO
        x_ref, w_ref = _host(x).transpose(0, 3, 1, 2), _host(w).transpose(3, 2, 0, 1)
        positions = conv_positions()

        def nchw(result: Any) -> Any:
            return _host(result).transpose(0, 3, 1, 2)

        conv = tf.function(lambda a, b: tf.nn.conv2d(a, b, strides=1, padding="SAME"), jit_compile=False)
        with _precision(dtype), tf.device(device):
            check_conv(nchw(conv(x, w)), x_ref, w_ref, dtype, positions)
            result, samples = _timed(conv, (x, w), repeats)
        verified = check_conv(nchw(result), x_ref, w_ref, dtype, positions)
        return ProbeResult("conv", dtype, CONV_SHAPE[0], conv_flops(), samples, verified)

    return probe


def tf_copy_probe(device: str = "/CPU:0") -> Any:
    """y = 2·x over random float32 data on ``device``: every byte read once and written once.

    Out of place (TensorFlow has no in-place multiply): a GPU's pooling allocator hands back the
    same block each run, but a CPU allocation of this size is fresh pages, whose faults would be
    timed too — on the host, calibrate through the all-core copy (``numpy_copy_probe``) instead."""

    def probe(nbytes: int, repeats: int) -> ProbeResult:
        count = max(nbytes // 4, 1024)
        x_host = np.random.default_rng(1).standard_normal(count, dtype=np.float32)
        sample = x_host[::_COPY_STRIDE].copy()
        refuse_constant(sample, "copy")
        x = _on_device(device, x_host, tf.float32)
        double = tf.function(lambda v: v * 2.0, jit_compile=False)
        with tf.device(device):
            _materialise(double(x))  # trace and warm
            result, samples = _timed(double, (x,), repeats)
        if not np.array_equal(result.numpy()[::_COPY_STRIDE], sample * np.float32(2.0)):
            raise MeasurementError(
                "TensorFlowAdapter.calibrate: the copy probe's output is wrong; its time is not a bandwidth"
            )
        return ProbeResult(
            "copy",
            "float32",
            count * 4,
            2 * count * 4,
            samples,
            f"out of place; every {_COPY_STRIDE}th element checked",
        )

    return probe
