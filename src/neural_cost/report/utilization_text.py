"""The utilization line of a training step's report (``analysis/utilization.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.units import format_int, format_percent, format_si, plural

if TYPE_CHECKING:
    from ..analysis.gap import GapReport


def utilization_line(report: GapReport) -> str | None:
    """``utilization: MFU 41.2% · HFU 47.9% (model 1.23 TFLOP, hardware 1.43 TFLOP incl. 200 GFLOP
    recomputed; float32 peak 459 GFLOP/s (source) × 1 device)``, then the
    throughput (``· 1,234 samples/s`` or ``· 12,345 tokens/s (batch 8 × seq 128)``) and, for a
    transformer LM whose records give N, L, H, Q and T, PaLM's closed form beside our count;
    None for inference."""
    u = report.utilization
    if u is None:
        return None
    if u.recomputed_flops or u.partitioning_flops:
        parts = [f"{format_si(u.recomputed_flops, 'FLOP')} recomputed"] if u.recomputed_flops else []
        if u.partitioning_flops:  # repeated on every device, collectives' adds, less what XLA removed: signed
            sign = "+" if u.partitioning_flops > 0 else "-"
            parts.append(f"{sign}{format_si(abs(u.partitioning_flops), 'FLOP')} from partitioning")
        flops = (
            f"model {format_si(u.model_flops, 'FLOP')}, hardware {format_si(u.hardware_flops, 'FLOP')} "
            f"incl. {', '.join(parts)}"
        )
    else:
        flops = f"model = hardware {format_si(u.model_flops, 'FLOP')}, nothing recomputed"
    dtype = u.dtype if u.matrix_dtype else f"{u.dtype} (no matmul or convolution FLOPs)"
    peak = f"{dtype} peak {format_si(u.peak, 'FLOP/s')} ({u.peak_source}) × {plural(u.devices, 'devices')}"
    line = f"utilization: MFU {format_percent(u.mfu)} · HFU {format_percent(u.hfu)} ({flops}; {peak})"
    if u.tokens_per_second is not None:
        line += f" · {format_int(round(u.tokens_per_second))} tokens/s (batch {u.batch} × seq {u.sequence})"
    elif u.samples_per_second is not None:
        line += f" · {format_int(round(u.samples_per_second))} samples/s"
    if u.closed_form_flops is not None:
        excess = (u.model_flops - u.closed_form_flops) / u.closed_form_flops if u.closed_form_flops else 0.0
        why = (
            "ours counts elementwise, norms and softmax the formula leaves out"
            if excess >= 0
            else "the formula assumes a full forward and 2× backward per parameter the trace does not hold"
        )
        line += (
            f"; closed form 6·N·T + attention: {format_si(u.closed_form_flops, 'FLOP')} (ours "
            f"{format_si(u.model_flops, 'FLOP')}, {excess:+.0%}: {why})"
        )
    return line
