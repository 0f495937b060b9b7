"""Static memory profile: parameters, gradients, optimizer state, and activation bounds.

Two bounds bracket activation memory: the largest single operation output (perfect
liveness: only one result alive at a time) and the sum of every executed operation's
output (nothing ever freed; a loop body's outputs counted once per iteration). Real
allocator telemetry from a measurement sits between them.

Every figure is one device's. A sharded program's boundary tensors count at the part one
device holds (``TensorSpec.device_bytes``: a parameter sharded 8 ways is an eighth of it, a
replicated one whole), and so do its gradients and optimizer state, which shard with the
parameters; ``devices`` says how many devices run the program (``CostEstimate.devices``, else
the largest collective group, else 1). The optimizer state is ``optimizer_state_multiplier`` ×
the gradients, or unknown (None) when no multiplier is given (``GapReport.memory``: a saved
report does not say which optimizer ran); a PyTorch trace's boundary does not hold the
optimizer's state tensors, so the multiplier is the only source there. Without
``trainable_bytes`` the gradients count every tensor marked a parameter — a PyTorch module's
buffers (BatchNorm's running statistics) and frozen weights too —, an upper bound
(``gradients_upper_bound``, said in a note). A partitioned program's activation bounds sum the
records a kernel runs (``utilization.device_rows``): one kept at global shapes is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import RecordError
from ..core.estimate import CostEstimate
from ..core.units import format_si, plural
from ..costs.estimate import estimate_trace
from ..hardware.spec import HardwareSpec
from ..measure.timing import Measurement
from .utilization import collective_devices, device_rows

if TYPE_CHECKING:
    from ..adapters.base import FrameworkAdapter


@dataclass(frozen=True, slots=True)
class MemoryProfile:
    parameter_bytes: int
    gradient_bytes: int
    #: None when the optimizer is unknown (``optimizer_state_multiplier=None``): never a silent 0.
    optimizer_state_bytes: int | None
    input_bytes: int
    output_bytes: int
    activation_minimum_peak_bytes: int
    activation_conservative_peak_bytes: int
    training: bool
    optimizer_state_multiplier: float | None
    notes: tuple[str, ...] = ()
    #: Peak of live intermediate buffers walking the traced op order, each freed after its last
    #: read (None when the adapter records no dataflow); between the two bounds above.
    activation_liveness_peak_bytes: int | None = None
    #: The allocator's measured peak, when a measurement with telemetry was given.
    measured_peak_bytes: int | None = None
    findings: tuple[str, ...] = ()
    #: Devices the program runs on; every figure above is one device's.
    devices: int = 1
    #: Whether the gradients (and the optimizer state) count every tensor marked a parameter,
    #: buffers and frozen weights included, as no ``trainable_bytes`` said which train: at most.
    gradients_upper_bound: bool = False

    @property
    def training_minimum_bytes(self) -> int | None:
        """Parameters + gradients + optimizer state: what training holds before any activation;
        None when the optimizer state is unknown."""
        if self.optimizer_state_bytes is None:
            return None
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
            "devices": self.devices,
        }


@dataclass(frozen=True, slots=True)
class ModelProfile:
    estimate: CostEstimate
    memory: MemoryProfile


def liveness_peak(dataflow: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]]) -> int:
    """Peak bytes of buffers allocated by the traced steps, each freed right after the last step
    that reads it; a buffer no later step reads is freed right after the step that made it
    (nothing holds it: a max-pool's indices, a norm's statistics at inference). What outlives
    the program (its outputs, state it keeps) is read by a last step the adapter records.
    Buffers that exist before the program (inputs, parameters) are not counted: this is
    activations only."""
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
            frees.setdefault(max(last_read.get(buffer, step), step), []).append(buffer)
        peak = max(peak, live)
        for buffer in frees.pop(step, ()):
            live -= sizes[buffer]
    return peak


def memory_profile(
    estimate: CostEstimate,
    training: bool = False,
    optimizer_state_multiplier: float | None = 0,
    *,
    dataflow: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]] = (),
    measurement: Measurement | None = None,
    hardware: HardwareSpec | None = None,
    trainable_bytes: int | None = None,
) -> MemoryProfile:
    """One device's memory profile of an estimate whose boundary names its parameters.

    ``trainable_bytes``: the bytes of the parameters that train (a frozen parameter or a
    buffer gets no gradient and no optimizer state), on one device; default: every parameter.
    ``optimizer_state_multiplier=None``: the optimizer state is unknown (None, said in a note)."""
    if optimizer_state_multiplier is not None and (
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
        by_role[tensor.role] += tensor.device_bytes
    devices = estimate.devices if estimate.devices > 1 else collective_devices(estimate) or 1
    notes = []
    sharded = [tensor for tensor in estimate.boundary if tensor.shard_shape is not None]
    if sharded:
        of = f" (one of {devices} devices)" if devices > 1 else ""
        notes.append(
            f"{plural(len(sharded), 'sharded tensors')} at the boundary counted at the part one device holds{of}; "
            f"the others whole on every device"
        )
    if not estimate.boundary:
        notes.append("the trace names no inputs, parameters or outputs: their sizes are unknown and counted as 0")
    elif by_role["parameter"] == 0:
        notes.append("no tensor is marked as a parameter (JAX: pass param_argnums=); parameter memory is 0 here")
    parameters = by_role["parameter"]
    trainable = parameters if trainable_bytes is None else min(trainable_bytes, parameters)
    upper_bound = training and trainable_bytes is None and parameters > 0
    if upper_bound:
        notes.append(
            "gradients and optimizer state counted for every tensor marked a parameter, buffers and frozen weights "
            "included: an upper bound (profile_model reads which of a PyTorch module's parameters train)"
        )
    if training and trainable < parameters:
        notes.append(
            f"gradients and optimizer state only for the {format_si(trainable, 'B')} of parameters that train "
            f"(of {format_si(parameters, 'B')} of parameters and buffers)"
        )
    gradients = trainable if training else 0
    optimizer_state: int | None = 0
    if training and optimizer_state_multiplier is None:
        optimizer_state = None
        notes.append("optimizer state unknown: no optimizer_state_multiplier given (2 for Adam, 1 for momentum SGD)")
    elif training and optimizer_state_multiplier is not None:
        optimizer_state = int(trainable * optimizer_state_multiplier)
    rows = device_rows(estimate)
    if len(rows) < len(estimate.by_operation):
        notes.append(
            f"{plural(len(estimate.by_operation) - len(rows), 'records')} no kernel of the partitioned program runs "
            f"(at global shapes, or removed by XLA) left out of the activation bounds"
        )
    outputs = [row.operation.output_bytes for row in rows]
    held = parameters + gradients + (optimizer_state or 0)
    findings = []
    if hardware is not None and hardware.memory_capacity is not None and held > hardware.memory_capacity:
        what = (
            "parameters, gradients and optimizer state" if optimizer_state is not None else "parameters and gradients"
        )
        findings.append(
            f"{what} need {format_si(held, 'B')}, more than the "
            f"{format_si(hardware.memory_capacity, 'B')} of {hardware.name}: training does not fit before any "
            f"activation (shard the optimizer state, use lower precision, or a device with more memory)"
        )
    return MemoryProfile(
        parameter_bytes=parameters,
        gradient_bytes=gradients,
        optimizer_state_bytes=optimizer_state,
        input_bytes=by_role["input"],
        output_bytes=by_role["output"],
        activation_minimum_peak_bytes=max(outputs, default=0),
        activation_conservative_peak_bytes=sum(row.operation.output_bytes * row.operation.count for row in rows),
        training=training,
        optimizer_state_multiplier=None if optimizer_state_multiplier is None else float(optimizer_state_multiplier),
        notes=tuple(notes),
        activation_liveness_peak_bytes=liveness_peak(dataflow) if dataflow else None,
        measured_peak_bytes=measurement.peak_memory_bytes if measurement is not None else None,
        findings=tuple(findings),
        devices=devices,
        gradients_upper_bound=upper_bound,
    )


def is_distributed(estimate: CostEstimate) -> bool:
    """Whether the program runs on several devices at once: ``devices`` > 1 or any collective."""
    return estimate.devices > 1 or any(op.kind == "collective" for op in estimate.operations)


def profile_model(
    model: Any,
    inputs: Any,
    adapter: FrameworkAdapter,
    *,
    training: bool = False,
    optimizer_state_multiplier: float = 0,
    measurement: Measurement | None = None,
    hardware: HardwareSpec | None = None,
    **trace_options: Any,
) -> ModelProfile:
    """Trace ``model`` once and return its cost estimate with its memory profile.

    With ``training=True`` the trace is of a training step when the adapter traces one
    (``adapter.traces_training_step``: PyTorch); else of the forward, with training memory
    worked out from it. A ``measurement`` with allocator telemetry adds the measured peak,
    and ``hardware`` with a memory capacity adds a finding when training cannot fit.
    ``trace_options`` go to ``adapter.trace`` (``kwargs=``, ``param_argnums=``, ``loss_fn=``...)."""
    if training and adapter.traces_training_step:
        trace_options.setdefault("training", True)
    trace = adapter.trace(model, inputs, **trace_options)
    estimate = estimate_trace(trace)
    profile = memory_profile(
        estimate,
        training,
        optimizer_state_multiplier,
        dataflow=trace.dataflow,
        measurement=measurement,
        hardware=hardware,
        trainable_bytes=_trainable_bytes(model) if training else None,
    )
    return ModelProfile(estimate, profile)


def _trainable_bytes(model: Any) -> int | None:
    """Bytes of a PyTorch module's parameters that require grad (found by their attributes,
    without importing torch); None for a model that does not say which parameters train."""
    parameters = getattr(model, "parameters", None)
    if not callable(parameters):
        return None
    try:
        found = list(parameters())
    except TypeError:  # a ``parameters`` that is something else
        return None
    if not all(hasattr(p, "requires_grad") and hasattr(p, "element_size") for p in found):
        return None
    return sum(int(p.numel()) * int(p.element_size()) for p in found if p.requires_grad)
