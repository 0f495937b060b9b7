"""Static memory profile: parameters, gradients, optimizer state, and activation bounds.

Two bounds bracket activation memory: the largest single operation output (perfect
liveness: only one result alive at a time) and the sum of every executed operation's
output (nothing ever freed; a loop body's outputs counted once per iteration). Real
allocator telemetry from a measurement sits between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import RecordError
from ..core.estimate import CostEstimate
from ..core.units import format_si
from ..costs.estimate import estimate_trace
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter


@dataclass(frozen=True, slots=True)
class MemoryProfile:
    parameter_bytes: int
    gradient_bytes: int
    optimizer_state_bytes: int
    input_bytes: int
    output_bytes: int
    activation_minimum_peak_bytes: int
    activation_conservative_peak_bytes: int
    training: bool
    optimizer_state_multiplier: float
    notes: tuple[str, ...] = ()
    #: Peak of live intermediate buffers walking the traced op order, each freed after its last
    #: read (None when the adapter records no dataflow); between the two bounds above.
    activation_liveness_peak_bytes: int | None = None
    #: The allocator's measured peak, when a measurement with telemetry was given.
    measured_peak_bytes: int | None = None
    findings: tuple[str, ...] = ()

    @property
    def training_minimum_bytes(self) -> int:
        """Parameters + gradients + optimizer state: what training holds before any activation."""
        return self.parameter_bytes + self.gradient_bytes + self.optimizer_state_bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "parameter_bytes": self.parameter_bytes,
            "gradient_bytes": self.gradient_bytes,
            "optimizer_state_bytes": self.optimizer_state_bytes,
            "training_minimum_bytes": self.training_minimum_bytes,
            "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes,
            "activation_minimum_peak_bytes": self.activation_minimum_peak_bytes,
            "activation_conservative_peak_bytes": self.activation_conservative_peak_bytes,
            "training": self.training,
            "optimizer_state_multiplier": self.optimizer_state_multiplier,
            "notes": list(self.notes),
            "activation_liveness_peak_bytes": self.activation_liveness_peak_bytes,
            "measured_peak_bytes": self.measured_peak_bytes,
            "findings": list(self.findings),
        }


@dataclass(frozen=True, slots=True)
class ModelProfile:
    estimate: CostEstimate
    memory: MemoryProfile


def liveness_peak(dataflow: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]]) -> int:
    """Peak bytes of buffers allocated by the traced steps, each freed right after the last step
    that reads it; a buffer never read again is kept to the end (it may be an output). Buffers
    that exist before the program (inputs, parameters) are not counted: this is activations only."""
    last_read: dict[int, int] = {}
    for step, (reads, _allocs) in enumerate(dataflow):
        for buffer in reads:
            last_read[buffer] = step
    sizes: dict[int, int] = {}
    frees: dict[int, list[int]] = {}
    live = peak = 0
    for step, (_reads, allocs) in enumerate(dataflow):
        for buffer, nbytes in allocs:
            sizes[buffer] = nbytes
            live += nbytes
            end = last_read.get(buffer)
            if end is not None and end > step:
                frees.setdefault(end, []).append(buffer)
        peak = max(peak, live)
        for buffer in frees.pop(step, ()):
            live -= sizes[buffer]
    return peak


def memory_profile(
    estimate: CostEstimate,
    training: bool = False,
    optimizer_state_multiplier: float = 0,
    *,
    dataflow: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]] = (),
    measurement: Measurement | None = None,
    hardware: HardwareSpec | None = None,
) -> MemoryProfile:
    """The memory profile of an estimate whose boundary names its parameters."""
    if (
        isinstance(optimizer_state_multiplier, bool)
        or not isinstance(optimizer_state_multiplier, (int, float))
        or optimizer_state_multiplier < 0
    ):
        raise RecordError(
            f"optimizer_state_multiplier={optimizer_state_multiplier!r} must be a number >= 0 "
            f"(2 for Adam's two moment buffers, 1 for momentum SGD, 0 for plain SGD)"
        )
    by_role: dict[str, int] = {"input": 0, "parameter": 0, "output": 0}
    for tensor in estimate.boundary:
        by_role[tensor.role] += tensor.nbytes
    notes = []
    if not estimate.boundary:
        notes.append("the trace names no inputs, parameters or outputs: their sizes are unknown and counted as 0")
    elif by_role["parameter"] == 0:
        notes.append("no tensor is marked as a parameter (JAX: pass param_argnums=); parameter memory is 0 here")
    parameters = by_role["parameter"]
    outputs = [row.operation.output_bytes for row in estimate.by_operation]
    training_minimum = parameters * (1 + (1 + optimizer_state_multiplier if training else 0))
    findings = []
    if hardware is not None and hardware.memory_capacity is not None and training_minimum > hardware.memory_capacity:
        findings.append(
            f"parameters, gradients and optimizer state need {format_si(training_minimum, 'B')}, more than the "
            f"{format_si(hardware.memory_capacity, 'B')} of {hardware.name}: training does not fit before any "
            f"activation (shard the optimizer state, use lower precision, or a device with more memory)"
        )
    return MemoryProfile(
        parameter_bytes=parameters,
        gradient_bytes=parameters if training else 0,
        optimizer_state_bytes=int(parameters * optimizer_state_multiplier) if training else 0,
        input_bytes=by_role["input"],
        output_bytes=by_role["output"],
        activation_minimum_peak_bytes=max(outputs, default=0),
        activation_conservative_peak_bytes=sum(
            row.operation.output_bytes * row.operation.count for row in estimate.by_operation
        ),
        training=training,
        optimizer_state_multiplier=float(optimizer_state_multiplier),
        notes=tuple(notes),
        activation_liveness_peak_bytes=liveness_peak(dataflow) if dataflow else None,
        measured_peak_bytes=measurement.peak_memory_bytes if measurement is not None else None,
        findings=tuple(findings),
    )


def profile_model(
    model: Any,
    inputs: Any,
    adapter: FrameworkAdapter,
    *,
    training: bool = False,
    optimizer_state_multiplier: float = 0,
    measurement: Measurement | None = None,
    hardware: HardwareSpec | None = None,
    **trace_kwargs: Any,
) -> ModelProfile:
    """Trace ``model`` once and return its cost estimate with its memory profile.

    With ``training=True`` the trace is of a training step when the adapter supports it
    (``TorchAdapter``); a ``measurement`` with allocator telemetry adds the measured peak,
    and ``hardware`` with a memory capacity adds a finding when training cannot fit."""
    if training and getattr(adapter, "framework", None) == "torch":
        trace_kwargs.setdefault("training", True)
    trace = adapter.trace(model, inputs, **trace_kwargs)
    estimate = estimate_trace(trace)
    profile = memory_profile(
        estimate,
        training,
        optimizer_state_multiplier,
        dataflow=trace.dataflow,
        measurement=measurement,
        hardware=hardware,
    )
    return ModelProfile(estimate, profile)
