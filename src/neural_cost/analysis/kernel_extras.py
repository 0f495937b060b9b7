"""What a kernel costs beyond what its class's curve reads off its records: work XLA adds, and operands its cache
no longer holds.

*Compiled work* (``compiled_work``): a kernel whose compiled contractions compute over ``COMPILED_EXCESS`` times
its records' FLOPs is expected at its compiled work (the bound stays the program's).

*Evicted operands* (``evicted_bytes``): a kernel's bound places it at the nearest level its footprint fits, as
if its operands were there, and the calibration times each kernel with its inputs in cache. In a model the kernels
before it may have pushed them out: on a 2-core Intel VM a 460 KB ``pow`` ran 7.9 µs with its input in L2, 23.7 µs
after a 480 × 240 → 960 linear (3.2 MB touched) and 28.1 µs after a 16 MB copy (on one thread 12.1, 46.6 and
42.2 µs), and in an eager LLaMA-style model its RMSNorm and rotary calls ran 2–4× their expected time. Eager
PyTorch's trace says, for each region a kernel touches, how many bytes the kernels between touched since that
memory was last in use (``Kernel.reuse``; memory not in use earlier in the run: since its last use in the run
before). A region further back than the largest cache holds in all (its capacity times its instances: a per-core
L2 on every core) comes from main memory. A memory-bound kernel (its memory time at least its compute time)
placed at a cache level gets those regions' bytes added to its expected time (at the rate below): those
it reads, and those it only writes under ``COLD_RESULTS_FROM`` (from that size the grid's pointwise results are
written cold, in its curves already). A product's or an attention's (``REUSED_GRID``), whose grid programs reuse
every operand call after call, gets all its regions that far back, whether compute-bound or not and at any level
(linears of 2.6–10 MB ran 0.13–0.82 ms slower on cold operands: the library does not hide them behind its work).
Any other kernel placed at main memory or compute-bound, and a compiled program's (no reuse in its trace), are
left as they are. The bytes cost the calibration's measured ``evicted_seconds_per_byte`` (``_torch/evicted.py``:
19–24 GB/s where main memory streams 55 GB/s), else main memory's bandwidth. The bound is unchanged.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.estimate import CostEstimate
from ..core.kernels import COLD_RESULTS_FROM, Kernel, computes_beyond
from ..core.units import format_seconds, format_si, plural
from ..hardware.spec import HardwareSpec
from .kernel_classes import CONTRACTIONS
from .kernels import KernelTime, Levels
from .rows import compute_seconds

if TYPE_CHECKING:
    from ..hardware.kernel_model import KernelCalibration


def compiled_work(
    estimate: CostEstimate, row: KernelTime, hardware: HardwareSpec, beyond: list[tuple[str, int, int]]
) -> KernelTime:
    """``row`` with its compute time at its kernel's compiled work when that is above
    ``COMPILED_EXCESS`` times its records' (``computes_beyond``; noted in ``beyond``): XLA:CPU
    computes a depthwise layer's filter gradient as a dense convolution over every channel pair, a
    kernel with no record of ours that ran 34 ms where its traffic read 0.3 ms (a Keras
    MobileNetV2 step on JAX). Its records' other work (an epilogue's pointwise FLOPs) is added to
    it. The bound stays the program's."""
    if row.index is None:
        return row
    kernel = estimate.kernels[row.index]
    if not computes_beyond(kernel):
        return row
    beyond.append((row.name, kernel.compiled_flops, kernel.flops))
    work = dict(kernel.compiled_flops_by_dtype)
    for cost in (estimate.by_operation[i] for i in kernel.operations):  # its epilogue's, not its contractions'
        if cost.kind not in CONTRACTIONS:
            for dtype, flops in cost.flops_by_dtype.items():
                work[dtype] = work.get(dtype, 0) + flops
    return replace(row, compute_seconds=compute_seconds(work, hardware))


def compiled_work_note(beyond: Sequence[tuple[str, int, int]]) -> str:
    """The note on kernels expected at their compiled work (``compiled_work``), heaviest first."""
    top = sorted(beyond, key=lambda item: -item[1])[:3]
    named = ", ".join(f"{name} {format_si(done, 'FLOP')} for {format_si(asked, 'FLOP')}" for name, done, asked in top)
    more = f" and {len(beyond) - 3} more" if len(beyond) > 3 else ""
    total = sum(compiled - records for _, compiled, records in beyond)
    return (
        f"in {plural(len(beyond), 'kernels')} XLA computes {format_si(total, 'FLOP')} more than the records they run "
        f"({named}{more}): work the program does not ask (XLA:CPU, for one, computes a depthwise filter gradient as "
        f"a dense convolution); they are expected at their compiled work, while the bound stays the program's"
    )


#: Classes whose grid programs run on operands they reused a moment before, results of any size included
#: (PyTorch's products and attention): their kernels' evicted operands count wherever they are placed.
REUSED_GRID = frozenset(
    {"matmul", "thin_matmul", "thin_matmul:few", "wide_matmul", "batched_matmul", "attention", "unaligned_attention"}
)


def evicted_bytes(kernel: Kernel, row: KernelTime, hardware: HardwareSpec, reused: bool = False) -> int:
    """Bytes per execution of ``kernel`` (scored as ``row`` on ``hardware``) that come from main memory where its
    class's grid had them in cache (the module docstring); 0 for a kernel whose trace has no reuse, and unless
    ``reused`` (its class is in ``REUSED_GRID``) for a compute-bound one or one placed at main memory. A region is in
    main memory when it was last in use further back than the largest cache holds in all (its capacity times its
    instances): a measured one, or one with no bandwidth measured (the data is there, at a rate not known: not
    counted); a cache measured slower than main memory is read at main memory's rate or slower, and holds none.
    Never more than the kernel moves (``traffic_bytes``): a region is a whole tensor, and an embedding's lookup of
    120 tokens in an 8,192-row table reads 115 KB of its 7.9 MB (counted whole, an eager LLaMA-style model's lookup
    was expected at 608 µs; it ran in 20)."""
    if not kernel.reuse:
        return 0
    if not reused and (row.compute_seconds > row.memory_seconds or row.bandwidth <= hardware.memory_bandwidth):
        return 0
    levels = Levels.of(hardware)
    caches = [*levels.caches, *(level for level in hardware.memory_levels if level.name in levels.unmeasured)]
    held = max((level.capacity_bytes * level.instances for level in caches), default=0)
    found = sum(
        size
        for size, since, written in kernel.reuse
        if (since is None or since > held) and (reused or not written or size < COLD_RESULTS_FROM)
    )
    return min(found, kernel.traffic_bytes)  # a region is a whole tensor; a gather moves the rows it reads


def evicted_note(kernels: int, moved: int, seconds: float, measured: bool) -> str:
    """The note on kernels whose operands their level no longer held (``evicted_bytes``), at the calibration's
    measured cost a byte (``measured``) or main memory's bandwidth."""
    rate = format_si(moved / seconds, "B/s") if seconds > 0 else "no cost"
    how = f"{rate}, the calibration's measured cost of an evicted operand" if measured else "main memory's bandwidth"
    return (
        f"evicted operands: {plural(kernels, 'kernels')} move {format_si(moved, 'B')} their calibration had in cache, "
        f"last in use further back than the caches hold, at {how}: {format_seconds(seconds)} of the expected time"
    )


def layer_weight_bytes(estimate: CostEstimate, index: int) -> int:
    """A recurrent kernel's weights: the right operands of its matrix products, each layer's and role's once
    (a step's ``hidden_matmul`` runs once a step with the same matrix)."""
    weights: dict[tuple[str, str], int] = {}
    for cost in (estimate.by_operation[i] for i in estimate.kernels[index].operations):
        if cost.kind == "matmul" and len(cost.operation.inputs) >= 2:
            base, _, role = cost.operation.name.rpartition(".")
            weights.setdefault((base, role), cost.operation.input_bytes(1))
    return sum(weights.values())


def call_cost(calibration: KernelCalibration) -> tuple[float, float] | None:
    """A recurrent layer's cost per call as ``(seconds, seconds per weight byte)``: a line through the
    calibration's points that have one (``Point.call_seconds`` at ``call_bytes``), by least squares, neither
    part below 0 — PyTorch's LSTM cells on a 2-core VM cost 53–79 µs a call under 0.4 MB of weights, 164–270
    µs at 0.9–2.1 MB and 408–1,408 µs at 5–25 MB (its weights packed again at every call). None without two."""
    found = [(p.call_bytes, p.call_seconds) for p in calibration.points
             if p.call_seconds is not None and p.call_bytes is not None]  # fmt: skip
    if len(found) < 2:
        return None
    mean_b = statistics.fmean(b for b, _ in found)
    mean_c = statistics.fmean(c for _, c in found)
    spread = sum((b - mean_b) ** 2 for b, _ in found)
    slope = max(sum((b - mean_b) * (c - mean_c) for b, c in found) / spread, 0.0) if spread else 0.0
    if mean_c - slope * mean_b < 0:  # an intercept below 0: the least-squares line through the origin instead
        return 0.0, sum(b * c for b, c in found) / max(sum(b * b for b, _ in found), 1)
    return mean_c - slope * mean_b, slope
