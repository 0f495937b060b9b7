"""The memory line of a distributed report: one device's memory after sharding.

Shown whenever the program runs on several devices (``analysis.memory.is_distributed``): the
parameters — unknown when the trace marks none (a JAX function traced without
``param_argnums``), and then nothing derived from them —, and for a training step the
gradients (``≤`` when they count every parameter and buffer: ``gradients_upper_bound``) and
the optimizer state (unknown in a report, which does not say which optimizer ran: Adam's
figure is shown as what it would be, not counted; a JAX step's optimizer state is usually an
argument, counted with the inputs), then the activations — the liveness peak when the trace
recorded its dataflow, else the two bounds (``analysis/memory.py``). A training step that
cannot fit on the device before any activation adds its finding as a ``warning:`` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.memory import is_distributed
from ..core.units import format_si, plural

if TYPE_CHECKING:
    from ..analysis.gap import GapReport
    from ..analysis.memory import MemoryProfile

#: Adam keeps two moments per trainable element: what the unknown optimizer state would be with it.
ADAM_MULTIPLIER = 2


def _bytes(value: int) -> str:
    return format_si(value, "B")


def _gradients(profile: MemoryProfile) -> str:
    if profile.gradients_upper_bound:
        return f"gradients ≤ {_bytes(profile.gradient_bytes)} (every parameter and buffer)"
    return f"gradients {_bytes(profile.gradient_bytes)}"


def _optimizer(profile: MemoryProfile, framework: str | None) -> str:
    if profile.optimizer_state_bytes is not None:
        return f"optimizer state {_bytes(profile.optimizer_state_bytes)}"
    at_most = "≤ " if profile.gradients_upper_bound else ""
    adam = f"Adam's two moments would be {at_most}{_bytes(ADAM_MULTIPLIER * profile.gradient_bytes)}"
    if framework == "jax":
        return f"optimizer state unknown: a JAX step's is an argument, counted with the inputs ({adam})"
    return f"optimizer state unknown: not in the trace ({adam})"


def _activations(profile: MemoryProfile) -> str:
    if profile.activation_liveness_peak_bytes is not None:
        return f"activations {_bytes(profile.activation_liveness_peak_bytes)} (liveness peak)"
    low, high = profile.activation_minimum_peak_bytes, profile.activation_conservative_peak_bytes
    return f"activations {_bytes(low)} to {_bytes(high)} (one result alive at a time to none freed)"


def memory_lines(report: GapReport) -> list[str]:
    """``memory per device: parameters 12.3 kB · gradients 12.3 kB · optimizer state unknown: ...
    · activations 4.10 kB to 20.5 kB (...) (one of 8 devices)``, then the profile's findings;
    nothing for a program on one device."""
    estimate = report.estimate
    if not is_distributed(estimate):
        return []
    profile = report.memory
    if not any(tensor.role == "parameter" for tensor in estimate.boundary):
        how = "JAX: pass param_argnums=" if estimate.framework == "jax" else "the trace marks none"
        parts = [f"parameters unknown ({how})"]
    else:
        parts = [f"parameters {_bytes(profile.parameter_bytes)}"]
        if profile.training:
            parts += [_gradients(profile), _optimizer(profile, estimate.framework)]
    parts.append(_activations(profile))
    devices = f"one of {plural(profile.devices, 'devices')}"
    return [f"memory per device: {' · '.join(parts)} ({devices})"] + [f"warning: {f}" for f in profile.findings]
