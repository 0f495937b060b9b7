"""Static memory profile: parameters, gradients, optimizer state, and activation bounds.

Two bounds bracket activation memory: the largest single operation output (perfect
liveness: only one result alive at a time) and the sum of every executed operation's
output (nothing ever freed; a loop body's outputs counted once per iteration). Real
allocator telemetry from a measurement sits between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import RecordError
from ..core.estimate import CostEstimate
from ..costs.estimate import estimate_trace

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
        }


@dataclass(frozen=True, slots=True)
class ModelProfile:
    estimate: CostEstimate
    memory: MemoryProfile


def memory_profile(
    estimate: CostEstimate, training: bool = False, optimizer_state_multiplier: float = 0
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
    )


def profile_model(
    model: Any,
    inputs: Any,
    adapter: FrameworkAdapter,
    *,
    training: bool = False,
    optimizer_state_multiplier: float = 0,
    **trace_kwargs: Any,
) -> ModelProfile:
    """Trace ``model`` once and return its cost estimate with its memory profile."""
    estimate = estimate_trace(adapter.trace(model, inputs, **trace_kwargs))
    return ModelProfile(estimate, memory_profile(estimate, training, optimizer_state_multiplier))
