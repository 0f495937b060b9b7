"""The utilization line of a training step's report (``analysis/utilization.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import format_percent, format_si, plural

if TYPE_CHECKING:
    from ..analysis.gap import GapReport


def utilization_line(report: GapReport) -> str | None:
    """``utilization: MFU 41.2% · HFU 47.9% (model 1.23 TFLOP, hardware 1.43 TFLOP incl. 200 GFLOP
    recomputed; float32 peak 459 GFLOP/s (source) × 1 device)``; None for inference."""
    u = report.utilization
    if u is None:
        return None
    if u.recomputed_flops:
        flops = (
            f"model {format_si(u.model_flops, 'FLOP')}, hardware {format_si(u.hardware_flops, 'FLOP')} "
            f"incl. {format_si(u.recomputed_flops, 'FLOP')} recomputed"
        )
    else:
        flops = f"model = hardware {format_si(u.model_flops, 'FLOP')}, nothing recomputed"
    dtype = u.dtype if u.matrix_dtype else f"{u.dtype} (no matmul or convolution FLOPs)"
    peak = f"{dtype} peak {format_si(u.peak, 'FLOP/s')} ({u.peak_source}) × {plural(u.devices, 'devices')}"
    return f"utilization: MFU {format_percent(u.mfu)} · HFU {format_percent(u.hfu)} ({flops}; {peak})"
