"""The fastest kernels the host really runs: a convolution check, and the best rate per dtype.

A formula peak over a nominal clock can sit below what the machine does (oneDNN's float32
convolution reached 480 GFLOP/s on a VM whose formula, at its nominal 2.6 GHz, says 332).
``neural-cost hardware --calibrate`` times numpy's matmul and each installed framework's
matmul and convolution (each framework's probes live in its adapter package and are
imported only when the framework is installed), keeps the best verified rate per dtype,
and caches it for ``detect_hardware()`` to score against.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..core.errors import MeasurementError
from .calibrate import RELATIVE_TOLERANCE, ProbeResult
from .host_cache import today

#: A convolution that runs in well under a second on 2 cores: NCHW (16, 128, 28, 28), 128 3×3
#: filters, stride 1, padding 1. FLOPs 2·16·28·28·128·128·9 = 3,699,376,128.
CONV_SHAPE = (16, 128, 28, 28)
CONV_FILTERS = 128
CONV_KERNEL = 3


def conv_flops(shape: Sequence[int] = CONV_SHAPE, filters: int = CONV_FILTERS, kernel: int = CONV_KERNEL) -> int:
    """2 · output elements · C_in · kh · kw (every output position times the full kernel)."""
    batch, channels, height, width = shape
    return 2 * batch * filters * height * width * channels * kernel * kernel


def check_conv(result: Any, x: Any, w: Any, dtype: str, positions: Sequence[tuple[int, int, int, int]]) -> str:
    """Compare sampled outputs of a stride-1, 'same'-padded NCHW/OIHW convolution with float64 sums."""
    x64, w64, got = (np.asarray(a, dtype=np.float64) for a in (x, w, result))
    kernel = w64.shape[-1]
    pad = kernel // 2
    if got.shape != (x64.shape[0], w64.shape[0], x64.shape[2], x64.shape[3]):
        raise MeasurementError(f"calibration: the {dtype} convolution probe returned shape {got.shape}; rejected")
    padded = np.pad(x64, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    errors, scale = [], 1.0
    for n, o, y, x_ in positions:
        expected = float(np.sum(padded[n, :, y : y + kernel, x_ : x_ + kernel] * w64[o]))
        scale = max(scale, abs(expected))
        errors.append(abs(float(got[n, o, y, x_]) - expected))
    error = max(errors)
    if not error <= RELATIVE_TOLERANCE.get(dtype, 5e-2) * scale:  # also rejects NaN
        raise MeasurementError(
            f"calibration: the {dtype} convolution probe returned a wrong result (largest error {error:.3g} on "
            f"{len(positions)} sampled outputs reaching {scale:.3g}); its time is not a FLOP rate, so it is rejected"
        )
    return f"{len(positions)} outputs checked against float64 sums (max error {error:.2g})"


def conv_positions(shape: Sequence[int] = CONV_SHAPE, filters: int = CONV_FILTERS) -> list[tuple[int, int, int, int]]:
    """Eight sampled output positions, corners included (they exercise the padding)."""
    batch, _, height, width = shape
    rng = np.random.default_rng(0)
    picks = [(0, 0, 0, 0), (batch - 1, filters - 1, height - 1, width - 1)]
    picks += [
        (int(rng.integers(batch)), int(rng.integers(filters)), int(rng.integers(height)), int(rng.integers(width)))
        for _ in range(6)
    ]
    return picks


def kernel_label(probe: ProbeResult, framework: str) -> str:
    what = f"{probe.size}² matmul" if probe.probe == "matmul" else f"{probe.probe} {probe.size}"
    return f"{framework} {what}"


def best_by_dtype(results: Iterable[tuple[str, ProbeResult]]) -> dict[str, dict[str, Any]]:
    """The fastest verified kernel per dtype, as the cache's ``compute`` section."""
    best: dict[str, tuple[str, ProbeResult]] = {}
    for framework, probe in results:
        if probe.dtype not in best or probe.rate > best[probe.dtype][1].rate:
            best[probe.dtype] = (framework, probe)
    return {
        dtype: {
            "flops_per_second": probe.rate,
            "kernel": kernel_label(probe, framework),
            "samples_seconds": list(probe.samples_seconds),
            "verified": probe.verified,
            "date": today(),
        }
        for dtype, (framework, probe) in sorted(best.items())
    }
