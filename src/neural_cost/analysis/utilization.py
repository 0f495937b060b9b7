"""MFU and HFU of a training step (PaLM, Chowdhery et al. 2022, appendix B).

*Model FLOPs utilization* is the FLOPs the step must do to train the model, per second
observed, over the devices' peak; *hardware FLOPs utilization* counts every FLOP the devices
execute, the activations a checkpointed step recomputes in its backward included. Here:

- ``hardware_flops``: every record's FLOPs; ``model_flops``: those of the records not labeled
  ``recompute`` (``torch.utils.checkpoint``'s and ``jax.checkpoint``'s recomputed forward,
  ``adapters/_torch/recompute.py``, ``adapters/_jax/recompute.py``). Both count every FLOP of
  the step — pointwise, reductions, the optimizer — not only the matmuls, at the catalog's
  conventions (``docs/distributed.md``).
- ``peak``: the peak of ``dtype``, the dtype that carries the most matmul, linear, convolution
  and attention FLOPs (what a device's peak is quoted for); the dtype with most FLOPs when the
  step has none of those.
- ``devices``: the largest ``group_size`` among the step's collectives (1 without any), or as
  given. A trace with collectives is one device's program (a collective record is one device's
  share), so the step's FLOPs are its FLOPs × devices; a trace without is the whole step (a
  single device's, or a global ``jit`` spread over the ``devices`` given).

MFU = model FLOPs / (observed × peak × devices); HFU the same with the hardware FLOPs. A
report has them for a training step only — one with a backward: JAX records labeled
``phase="backward"`` (transposed equations), a PyTorch ``training=True`` trace's ``backward``
scope, a TensorFlow ``gradient_tape`` scope; for inference there is no model/hardware split
to make, and the efficiency line says how close the step came to its peaks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import RecordError
from ..core.estimate import CostEstimate, OperationCost

if TYPE_CHECKING:
    from .gap import GapReport

#: Kinds whose FLOPs run on a device's matrix units: the dtype they run at picks the peak.
MATRIX_KINDS = frozenset({"matmul", "linear", "conv", "attention", "attention_backward"})


@dataclass(frozen=True, slots=True)
class Utilization:
    """A training step's model and hardware FLOPs (over all its devices) against its peak."""

    model_flops: int
    hardware_flops: int
    observed_seconds: float
    #: FLOP/s of one device at ``dtype``.
    peak: float
    dtype: str
    #: Where the peak comes from (the spec's source for ``peak_flops[dtype]``).
    peak_source: str
    devices: int
    #: Whether ``dtype`` is the matrix FLOPs' dtype (False: the step has no matrix FLOPs).
    matrix_dtype: bool = True

    @property
    def recomputed_flops(self) -> int:
        return self.hardware_flops - self.model_flops

    def _share(self, flops: int) -> float:
        capacity = self.observed_seconds * self.peak * self.devices
        return flops / capacity if capacity > 0 else float("inf")

    @property
    def mfu(self) -> float:
        """Model FLOPs utilization, a fraction (never clamped)."""
        return self._share(self.model_flops)

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilization, a fraction (never clamped)."""
        return self._share(self.hardware_flops)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model_flops": self.model_flops,
            "hardware_flops": self.hardware_flops,
            "recomputed_flops": self.recomputed_flops,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "peak": self.peak,
            "dtype": self.dtype,
            "devices": self.devices,
        }


def is_recomputed(row: OperationCost) -> bool:
    return row.operation.attrs.get("recompute") == "true"


def is_training_step(estimate: CostEstimate) -> bool:
    """Whether the estimate is of a step with a backward (see the module's docstring)."""
    for op in estimate.operations:
        if op.attrs.get("phase") == "backward" or op.attrs.get("recompute") == "true":
            return True
        scope = op.scope or ""
        if estimate.framework == "torch" and scope == "backward":
            return True
        if estimate.framework == "tensorflow" and (scope == "gradient_tape" or scope.startswith("gradient_tape/")):
            return True
    return False


def collective_devices(estimate: CostEstimate) -> int | None:
    """The largest ``group_size`` among the collectives, or None when there is none."""
    sizes = [op.attrs.get("group_size") for op in estimate.operations if op.kind == "collective"]
    found = [size for size in sizes if type(size) is int and size > 0]
    return max(found) if found else None


def _flops_by_dtype(rows: Iterable[OperationCost]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for row in rows:
        for dtype, flops in row.flops_by_dtype.items():
            totals[dtype] = totals.get(dtype, 0) + flops
    return totals


def _most(totals: dict[str, int]) -> str | None:
    """The dtype with the most FLOPs (ties: the first by name), None when there are none."""
    best = sorted(((-flops, dtype) for dtype, flops in totals.items() if flops > 0))
    return best[0][1] if best else None


def utilization(report: GapReport, devices: int | None = None) -> Utilization | None:
    """MFU and HFU of ``report``'s step on ``devices`` (default: its collectives' largest group);
    None when the step has no backward (inference) or no FLOPs."""
    if devices is not None and (type(devices) is not int or devices < 1):
        raise RecordError(f"utilization: devices={devices!r} must be a positive integer (the devices the step ran on)")
    estimate = report.estimate
    if not is_training_step(estimate):
        return None
    rows = estimate.by_operation
    hardware = sum(row.flops for row in rows)
    model = sum(row.flops for row in rows if not is_recomputed(row))
    matrix = _most(_flops_by_dtype(row for row in rows if row.kind in MATRIX_KINDS))
    dtype = matrix or _most(_flops_by_dtype(rows))
    if dtype is None:
        return None
    grouped = collective_devices(estimate)
    scale = grouped or 1  # a trace with collectives is one device's program: the step is devices × it
    if devices is None:
        devices = scale
    else:
        scale = devices if grouped else 1
    spec = report.hardware
    return Utilization(
        model_flops=model * scale,
        hardware_flops=hardware * scale,
        observed_seconds=report.observed_seconds,
        peak=spec.peak(dtype),
        dtype=dtype,
        peak_source=spec.source_of(f"peak_flops[{dtype}]"),
        devices=devices,
        matrix_dtype=matrix is not None,
    )
