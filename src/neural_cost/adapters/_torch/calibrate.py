"""Calibration probes that run through PyTorch on a given device."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from ...core.errors import MeasurementError
from ...hardware.calibrate import ProbeResult, check_matmul, refuse_constant

_TORCH_DTYPES = {
    "float32": torch.float32,
    "tfloat32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
_SAMPLE_ROWS = 8
_COPY_STRIDE = 4099


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def torch_matmul_probe(device: torch.device) -> Any:
    """n×n·n×n matmuls of random data on ``device``, verified against a float64 product."""

    def probe(dtype: str, n: int, repeats: int) -> ProbeResult:
        if dtype not in _TORCH_DTYPES:
            raise MeasurementError(f"TorchAdapter.calibrate: no matmul probe for dtype {dtype!r}")
        generator = torch.Generator(device="cpu").manual_seed(0)
        a32 = torch.randn(n, n, generator=generator)
        b32 = torch.randn(n, n, generator=generator)
        kind = _TORCH_DTYPES[dtype]
        a, b = a32.to(device=device, dtype=kind), b32.to(device=device, dtype=kind)
        refuse_constant(a32[:4].numpy(), f"{dtype} matmul")
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tfloat32"  # float32 means full precision
        try:
            rows = sorted({int(r) for r in np.random.default_rng(0).integers(0, n, _SAMPLE_ROWS)})
            a_ref, b_ref = a.float().cpu().numpy(), b.float().cpu().numpy()
            result = a @ b
            _sync(device)
            check_matmul(result.float().cpu().numpy(), a_ref, b_ref, dtype, rows)
            samples = []
            for _ in range(repeats):
                start = time.perf_counter()
                result = a @ b
                _sync(device)
                samples.append(time.perf_counter() - start)
            verified = check_matmul(result.float().cpu().numpy(), a_ref, b_ref, dtype, rows)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
        return ProbeResult("matmul", dtype, n, 2 * n**3, tuple(samples), verified)

    return probe


def torch_copy_probe(device: torch.device) -> Any:
    """x.mul_(2) in place over random float32 data: every byte read once and written once."""

    def probe(nbytes: int, repeats: int) -> ProbeResult:
        count = max(nbytes // 4, 1024)
        x = torch.randn(count, generator=torch.Generator(device="cpu").manual_seed(1)).to(device)
        sample = x[::_COPY_STRIDE].cpu().numpy().copy()
        refuse_constant(sample, "copy")
        x.mul_(2.0)  # warm
        _sync(device)
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            x.mul_(2.0)
            _sync(device)
            samples.append(time.perf_counter() - start)
        if not np.array_equal(x[::_COPY_STRIDE].cpu().numpy(), sample * np.float32(2.0 ** (repeats + 1))):
            raise MeasurementError(
                "TorchAdapter.calibrate: the copy probe's output is wrong; its time is not a bandwidth"
            )
        return ProbeResult(
            "copy",
            "float32",
            count * 4,
            2 * count * 4,
            tuple(samples),
            f"in place; every {_COPY_STRIDE}th element checked",
        )

    return probe


def torch_conv_probe(device: torch.device) -> Any:
    """A stride-1, padding-1 3×3 convolution of random NCHW data (``hardware.kernels.CONV_SHAPE``)
    on ``device`` (oneDNN on a CPU), verified on sampled outputs against float64 sums."""
    from ...hardware.kernels import CONV_FILTERS, CONV_KERNEL, CONV_SHAPE, check_conv, conv_flops, conv_positions

    def probe(dtype: str, repeats: int) -> ProbeResult:
        if dtype not in _TORCH_DTYPES:
            raise MeasurementError(f"TorchAdapter.calibrate: no convolution probe for dtype {dtype!r}")
        generator = torch.Generator(device="cpu").manual_seed(2)
        x32 = torch.randn(*CONV_SHAPE, generator=generator)
        w32 = torch.randn(CONV_FILTERS, CONV_SHAPE[1], CONV_KERNEL, CONV_KERNEL, generator=generator)
        refuse_constant(x32[0, 0].numpy(), f"{dtype} convolution")
        kind = _TORCH_DTYPES[dtype]
        x, w = x32.to(device=device, dtype=kind), w32.to(device=device, dtype=kind)
        positions = conv_positions()
        x_ref, w_ref = x.float().cpu().numpy(), w.float().cpu().numpy()
        with torch.no_grad():
            result = torch.nn.functional.conv2d(x, w, padding=CONV_KERNEL // 2)
            _sync(device)
            check_conv(result.float().cpu().numpy(), x_ref, w_ref, dtype, positions)
            samples = []
            for _ in range(repeats):
                start = time.perf_counter()
                result = torch.nn.functional.conv2d(x, w, padding=CONV_KERNEL // 2)
                _sync(device)
                samples.append(time.perf_counter() - start)
        verified = check_conv(result.float().cpu().numpy(), x_ref, w_ref, dtype, positions)
        return ProbeResult("conv", dtype, CONV_SHAPE[0], conv_flops(), tuple(samples), verified)

    return probe
