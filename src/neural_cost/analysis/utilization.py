"""MFU and HFU of a training step (PaLM, Chowdhery et al. 2022, appendix B).

*Model FLOPs utilization* is the FLOPs the step must do to train the model, per second
observed, over the devices' peak; *hardware FLOPs utilization* counts every FLOP the devices
execute, the activations a checkpointed step recomputes in its backward included. Here:

- ``hardware_flops``: one device's records' FLOPs (``device_rows``) × the step's devices;
  ``model_flops``: those of the records neither labeled ``recompute``
  (``torch.utils.checkpoint``'s and ``jax.checkpoint``'s recomputed forward,
  ``adapters/_torch/recompute.py``, ``adapters/_jax/recompute.py``) nor a collective (a
  reduction's adds move data between devices; they train nothing). Both count every FLOP of
  the step — pointwise, reductions, the optimizer — not only the matmuls, at the catalog's
  conventions (``docs/distributed.md``).
- A partitioned JAX ``jit`` (``estimate.devices`` > 1, its records one device's share) counts its
  model FLOPs from its records before the per-device rewrite, at global shapes
  (``CostEstimate.global_model_flops``): work every device repeats (a replicated optimizer
  update) counts once there, while the hardware FLOPs count it on every device, with the
  collectives' reductions (``partitioning_flops``: hardware − model − recomputed).
- ``peak``: the peak of ``dtype``, the dtype that carries the most matmul, linear, convolution
  and attention FLOPs (what a device's peak is quoted for); the dtype with most FLOPs when the
  step has none of those.
- ``devices``: the devices a partitioned program runs on (``estimate.devices``: a sharded JAX
  ``jit``, whose records are one device's share, or a ``shard_map``); else the largest
  ``group_size`` among the step's collectives (a PyTorch rank's trace); else 1; or as given.
  A trace of either kind is one device's program (a collective record is one device's share
  too), so the step's FLOPs are its FLOPs × devices (the model FLOPs: the global count where
  there is one); a trace of neither is the whole step (a single device's, or spread over the
  ``devices`` given).

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

from ..core.dtypes import dtype_info
from ..core.errors import RecordError
from ..core.estimate import CostEstimate, OperationCost
from ..core.units import plural

if TYPE_CHECKING:
    from ..core.records import Operation
    from .gap import GapReport

#: Kinds whose FLOPs run on a device's matrix units: the dtype they run at picks the peak.
MATRIX_KINDS = frozenset({"matmul", "linear", "grouped_matmul", "conv", "attention", "attention_backward"})
PARTITIONED_CLOSED_FORM = (
    "no closed-form check: a partitioned program's records are one device's share (its attention cut with "
    "them), while the parameters and the batch are global"
)


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
    #: The batch (leading dim of the first non-parameter input, ``batch_input``); None unknown.
    batch: int | None = None
    #: Tokens per sample when that input is integer-typed (batch, seq) token ids; else None.
    sequence: int | None = None
    #: PaLM appendix B's 6·N·tokens + 12·L·H·Q·T·tokens, when the trace is a transformer LM
    #: whose N, L, H, Q, T its records give (``closed_form_flops``); else None.
    closed_form_flops: int | None = None
    #: The hardware FLOPs of the records labeled ``recompute`` (over all devices).
    recomputed_flops: int = 0
    #: Where the figures come from when the step is partitioned, and why there is no closed form.
    notes: tuple[str, ...] = ()

    @property
    def samples_per_second(self) -> float | None:
        return self.batch / self.observed_seconds if self.batch is not None and self.observed_seconds > 0 else None

    @property
    def tokens_per_second(self) -> float | None:
        samples = self.samples_per_second
        return samples * self.sequence if samples is not None and self.sequence is not None else None

    @property
    def partitioning_flops(self) -> int:
        """Hardware FLOPs that are neither model FLOPs nor recomputed: a partitioned step's work
        every device repeats and its collectives' reductions, less the model work the compiler
        removed (it may be negative); 0 for a step on one device."""
        return self.hardware_flops - self.model_flops - self.recomputed_flops

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
        out = {
            "model_flops": self.model_flops,
            "hardware_flops": self.hardware_flops,
            "recomputed_flops": self.recomputed_flops,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "peak": self.peak,
            "dtype": self.dtype,
            "devices": self.devices,
        }
        known = {
            "samples_per_second": self.samples_per_second,
            "tokens_per_second": self.tokens_per_second,
            "closed_form_flops": self.closed_form_flops,
            "partitioning_flops": self.partitioning_flops or None,
            "notes": list(self.notes) or None,
        }
        return {**out, **{key: value for key, value in known.items() if value is not None}}


def is_recomputed(row: OperationCost) -> bool:
    return row.operation.attrs.get("recompute") == "true"


def is_training_step(estimate: CostEstimate) -> bool:
    """Whether the estimate is of a step with a backward (see the module's docstring)."""
    return any(is_backward(op, estimate.framework) or op.attrs.get("recompute") == "true" for op in estimate.operations)


def is_backward(op: Operation, framework: str | None) -> bool:
    """Whether a record is of a training step's backward pass: its phase says so, or its scope is PyTorch's
    backward phase or TensorFlow's gradient tape."""
    if op.attrs.get("phase") == "backward":
        return True
    scope = op.scope or ""
    if framework == "torch" and scope == "backward":
        return True
    return framework == "tensorflow" and (scope == "gradient_tape" or scope.startswith("gradient_tape/"))


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


def device_rows(estimate: CostEstimate) -> list[OperationCost]:
    """The rows one device's figures sum: every row; for a partitioned program with kernels
    (``estimate.devices`` > 1, records one device's share) those a kernel runs — a record no
    kernel runs kept its traced, global shapes (``adapters/_jax/program.py``) or the compiler
    removed it."""
    if estimate.devices > 1 and estimate.kernels:
        unmapped = set(estimate.unmapped_operations)
        return [row for index, row in enumerate(estimate.by_operation) if index not in unmapped]
    return list(estimate.by_operation)


def utilization(report: GapReport, devices: int | None = None) -> Utilization | None:
    """MFU and HFU of ``report``'s step on ``devices`` (default: the devices its partitioned
    program runs on, else its collectives' largest group); None when the step has no backward
    (inference) or no FLOPs."""
    if devices is not None and (type(devices) is not int or devices < 1):
        raise RecordError(f"utilization: devices={devices!r} must be a positive integer (the devices the step ran on)")
    estimate = report.estimate
    if not is_training_step(estimate):
        return None
    rows = estimate.by_operation
    executed = device_rows(estimate)
    hardware = sum(row.flops for row in executed)
    recomputed = sum(row.flops for row in executed if is_recomputed(row))
    model = sum(row.flops for row in rows if not is_recomputed(row) and row.kind != "collective")
    matrix = _most(_flops_by_dtype(row for row in rows if row.kind in MATRIX_KINDS))
    dtype = matrix or _most(_flops_by_dtype(rows))
    if dtype is None:
        return None
    grouped = estimate.devices if estimate.devices > 1 else collective_devices(estimate)
    scale = grouped or 1  # one device's program (partitioned, or with collectives): the step is devices × it
    if devices is None:
        devices = scale
    else:
        scale = devices if grouped else 1
    notes = []
    model_flops = model * scale
    if estimate.global_model_flops is not None:
        model_flops = estimate.global_model_flops
        notes.append(
            f"model FLOPs: the step's records at their global shapes, before the per-device rewrite; hardware "
            f"FLOPs: one device's records × {plural(scale, 'devices')} (work every device repeats and the "
            f"collectives' reductions included)"
        )
    spec = report.hardware
    batch, sequence = throughput_shape(estimate)
    closed_form = None
    if estimate.devices == 1:
        closed_form = _times(closed_form_flops(estimate, batch, sequence), scale)
    elif any(row.kind == "attention" for row in rows):
        notes.append(PARTITIONED_CLOSED_FORM)
    return Utilization(
        model_flops=model_flops,
        hardware_flops=hardware * scale,
        observed_seconds=report.observed_seconds,
        peak=spec.peak(dtype),
        dtype=dtype,
        peak_source=spec.source_of(f"peak_flops[{dtype}]"),
        devices=devices,
        matrix_dtype=matrix is not None,
        batch=batch,
        sequence=sequence,
        closed_form_flops=closed_form,
        recomputed_flops=recomputed * scale,
        notes=tuple(notes),
    )


def batch_input(estimate: CostEstimate) -> tuple[str, tuple[int, ...]] | None:
    """The input the batch size is read from: never a parameter (a weight matrix's leading dim is no
    batch). The first input the boundary does not mark as a parameter — and, where no parameter is
    marked at all (a JAX ``fn(w, x)`` traced without ``param_argnums``), the first whose leading dim is
    the first output's, as a batch is (a weight handed back first, as a step returning ``(w_new,
    loss)``, matches itself: mark it) — else the first input when every input's leading dim is the same
    (a training step's ``(x, labels)`` beside the state it hands back, which is no input) and None when
    they differ (a time-major scan's ``(steps, batch, features)`` beside its weights: no leading dim
    there is the batch); else the first input."""
    boundary = estimate.boundary
    parameters = {t.name for t in boundary if t.role == "parameter"}
    inputs = [(name, shape) for name, shape in estimate.input_shapes if shape and name not in parameters]
    if not inputs:
        return None
    outputs = [t.shape for t in boundary if t.role == "output" and t.shape]
    if not parameters and outputs and len(inputs) > 1:
        for name, shape in inputs:
            if shape[0] == outputs[0][0]:
                return name, shape
        if len({shape[0] for _, shape in inputs}) > 1:
            return None
    return inputs[0]


def throughput_shape(estimate: CostEstimate) -> tuple[int | None, int | None]:
    """(batch, sequence): the batch input's leading dim, and its second when the boundary says it
    is integer-typed and 2-D (token ids, (batch, seq)); None where the trace does not say."""
    source = batch_input(estimate)
    if source is None:
        return None, None
    name, shape = source
    dtypes = [t.dtype for t in estimate.boundary if t.name == name and t.role == "input"]
    tokens = len(shape) == 2 and len(dtypes) == 1 and dtype_info(dtypes[0]).category in ("int", "uint")
    return shape[0], shape[1] if tokens else None


def _forward(row: OperationCost) -> bool:
    return row.operation.attrs.get("phase") != "backward" and not is_recomputed(row)


def closed_form_flops(estimate: CostEstimate, batch: int | None, sequence: int | None) -> int | None:
    """PaLM appendix B's model FLOPs of a transformer LM step: tokens × (6·N + 12·L·H·Q·T).
    Read only from the records, never guessed: T the token input's seq; N the parameters'
    elements less each ``embedding`` record's table (one parameter of its shape: a head of the same
    shape, untied, stays in N);
    L the forward ``attention`` records (× their counts), each with q (batch, H, T, Q) — all
    sharing H and Q, and batch and T the token input's. None when any of these is missing."""
    if batch is None or sequence is None:
        return None
    rows = [row for row in estimate.by_operation if _forward(row)]
    attention = [row.operation for row in rows if row.kind == "attention"]
    tables = {row.operation.inputs[0] for row in rows if row.kind == "embedding"}
    parameters = [t.shape for t in estimate.boundary if t.role == "parameter"]
    if not attention or not tables or not parameters:
        return None
    if any(not any(shape == table for shape in parameters) for table in tables):
        return None  # a table the boundary does not list as a parameter: N cannot be read
    queries = {op.inputs[0] for op in attention}
    if len(queries) != 1:
        return None  # layers of different shapes: no single H, Q, T
    ((q_batch, heads, length, head_dim),) = queries
    if q_batch != batch or length != sequence:
        return None
    layers = sum(op.count for op in attention)
    embedding = sum(_elements(table) for table in tables)  # one parameter per table: an untied head stays in N
    non_embedding = sum(_elements(shape) for shape in parameters) - embedding
    per_token = 6 * non_embedding + 12 * layers * heads * head_dim * sequence
    return batch * sequence * per_token


def _times(flops: int | None, scale: int) -> int | None:
    return flops * scale if flops is not None else None


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for dim in shape:
        n *= dim
    return n
