"""Calibration probes that run through JAX, on the device JAX selected."""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ...core.errors import MeasurementError
from ...hardware.calibrate import ProbeResult, check_matmul, refuse_constant

_JAX_DTYPES = {
    "float32": jnp.float32,
    "tfloat32": jnp.float32,  # float32 data multiplied at TF32 precision on tensor cores
    "float64": jnp.float64,
    "bfloat16": jnp.bfloat16,
    "float16": jnp.float16,
}
# float32 asks for full precision: on GPUs JAX's default float32 matmul may run as TF32
_PRECISION = {"float32": "highest", "tfloat32": "tensorfloat32"}
_SAMPLE_ROWS = 8
_COPY_STRIDE = 4099


def _block(value: Any) -> Any:
    return jax.block_until_ready(value)  # type: ignore[no-untyped-call]


def jax_matmul_probe(device: Any) -> Any:
    """n×n·n×n matmuls of random data in ``dtype`` on ``device``, verified against float64."""

    def probe(dtype: str, n: int, repeats: int) -> ProbeResult:
        if dtype not in _JAX_DTYPES:
            raise MeasurementError(
                f"JaxAdapter.calibrate: no matmul probe for dtype {dtype!r}; use one of {list(_JAX_DTYPES)}"
            )
        if dtype == "float64" and not jax.config.read("jax_enable_x64"):  # type: ignore[no-untyped-call]
            raise MeasurementError("JaxAdapter.calibrate: float64 needs jax.config.update('jax_enable_x64', True)")
        key_a, key_b = jax.random.split(jax.random.key(0))
        kind = _JAX_DTYPES[dtype]
        a = jax.device_put(jax.random.normal(key_a, (n, n), jnp.float32).astype(kind), device)
        b = jax.device_put(jax.random.normal(key_b, (n, n), jnp.float32).astype(kind), device)
        refuse_constant(np.asarray(a[:4].astype(jnp.float32)), f"{dtype} matmul")
        precision = _PRECISION.get(dtype)
        matmul = jax.jit(lambda x, y: jnp.matmul(x, y, precision=precision))
        rows = sorted({int(r) for r in np.random.default_rng(0).integers(0, n, _SAMPLE_ROWS)})
        a_host, b_host = np.asarray(a.astype(jnp.float32)), np.asarray(b.astype(jnp.float32))
        check_matmul(np.asarray(_block(matmul(a, b)).astype(jnp.float32)), a_host, b_host, dtype, rows)
        samples: list[float] = []
        result: Any = None
        for _ in range(repeats):
            start = time.perf_counter()
            result = _block(matmul(a, b))
            samples.append(time.perf_counter() - start)
        verified = check_matmul(np.asarray(result.astype(jnp.float32)), a_host, b_host, dtype, rows)
        return ProbeResult("matmul", dtype, n, 2 * n**3, tuple(samples), verified)

    return probe


def jax_copy_probe(device: Any) -> Any:
    """x ← 2·x in place (the buffer is donated) over random float32 data: every byte read once
    and written once, with no fresh allocation (whose page faults would be timed instead);
    verified on a sample, which must have doubled exactly once per run."""

    def probe(nbytes: int, repeats: int) -> ProbeResult:
        count = max(nbytes // 4, 1024)
        x = jax.device_put(jax.random.normal(jax.random.key(1), (count,), jnp.float32), device)
        sample = np.asarray(x[::_COPY_STRIDE])
        refuse_constant(sample, "copy")
        double = jax.jit(lambda v: v * 2.0, donate_argnums=0)
        x = _block(double(x))  # compile and warm
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            x = _block(double(x))
            samples.append(time.perf_counter() - start)
        if not np.array_equal(np.asarray(x[::_COPY_STRIDE]), sample * np.float32(2.0 ** (repeats + 1))):
            raise MeasurementError(
                "JaxAdapter.calibrate: the copy probe's output is wrong; its time is not a bandwidth"
            )
        return ProbeResult(
            "copy",
            "float32",
            count * 4,
            2 * count * 4,
            tuple(samples),
            f"in place (donated buffer); every {_COPY_STRIDE}th element checked",
        )

    return probe


def jax_conv_probe(device: Any) -> Any:
    """A stride-1, 'SAME' 3×3 convolution of random NCHW data (``hardware.kernels.CONV_SHAPE``),
    jitted on ``device``, verified on sampled outputs against float64 sums."""
    from ...hardware.kernels import CONV_FILTERS, CONV_KERNEL, CONV_SHAPE, check_conv, conv_flops, conv_positions

    def probe(dtype: str, repeats: int) -> ProbeResult:
        if dtype not in _JAX_DTYPES or dtype == "float64":
            raise MeasurementError(f"JaxAdapter.calibrate: no convolution probe for dtype {dtype!r}")
        key_x, key_w = jax.random.split(jax.random.key(2))
        kind = _JAX_DTYPES[dtype]
        x = jax.device_put(jax.random.normal(key_x, CONV_SHAPE, jnp.float32).astype(kind), device)
        w_shape = (CONV_FILTERS, CONV_SHAPE[1], CONV_KERNEL, CONV_KERNEL)
        w = jax.device_put(jax.random.normal(key_w, w_shape, jnp.float32).astype(kind), device)
        refuse_constant(np.asarray(x[0, 0].astype(jnp.float32)), f"{dtype} convolution")
        precision = _PRECISION.get(dtype)
        conv = jax.jit(lambda a, b: jax.lax.conv_general_dilated(a, b, (1, 1), "SAME", precision=precision))
        positions = conv_positions()
        x_host, w_host = np.asarray(x.astype(jnp.float32)), np.asarray(w.astype(jnp.float32))
        check_conv(np.asarray(_block(conv(x, w)).astype(jnp.float32)), x_host, w_host, dtype, positions)
        samples: list[float] = []
        result: Any = None
        for _ in range(repeats):
            start = time.perf_counter()
            result = _block(conv(x, w))
            samples.append(time.perf_counter() - start)
        verified = check_conv(np.asarray(result.astype(jnp.float32)), x_host, w_host, dtype, positions)
        return ProbeResult("conv", dtype, CONV_SHAPE[0], conv_flops(), tuple(samples), verified)

    return probe
