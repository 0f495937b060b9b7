"""The kernels of a ``tf.function(jit_compile=True)``, read from XLA's optimized HLO.

``function.experimental_get_compiler_ir(*specs)(stage="optimized_hlo")`` (TensorFlow 2.21,
documented as a debugging API; its other stages are ``hlo``, ``optimized_hlo_dot``,
``stablehlo`` and their ``_serialized`` forms) compiles the concrete function the trace walked
(the same one: TensorSpecs of the same shapes), for the preferred device (a GPU when there is
one), and returns the module's text.
It is a compilation of its own — XLA names the module after the function
(``a_inference_f_32__.1``), not the cluster the timed call runs — from the same function
graph, so its kernels are the timed program's as far as XLA compiles deterministically.

The module is walked by the framework-neutral HLO reader (``_jax/hlo.py``: which
instructions are kernels, their traffic and footprint, loop bodies multiplied by XLA's
``known_trip_count``, else the walker's trip count for the ``While`` of the same node name,
else ``default_trip_count``); records are assigned by TensorFlow node name (``hlo_map.py``).
Anything that stops the HLO from being read (no such API, a function XLA cannot compile, an
unreadable text) leaves the caller on the graph-op kernels, with a note saying why.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...core.errors import AdapterError
from ...core.kernels import Kernel
from ...core.records import LoopAssumption, Operation
from .._jax.hlo import WhileLoop, read_sites
from .._jax.hlo_text import parse_hlo
from .hlo_map import assign, parse_tf_op_name

STAGE = "optimized_hlo"
XLA_SOURCE = (
    "XLA optimized HLO of the jit_compile function, compiled apart for the trace (fusions, copies, custom calls; "
    "loops multiplied)"
)
FALLBACK = (
    "jit_compile=True, but XLA's optimized HLO could not be read ({why}): the kernels are the graph's ops and their "
    "traffic is the graph's unfused traffic, not the compiled program's"
)


@dataclass(frozen=True, slots=True)
class XlaKernels:
    kernels: tuple[Kernel, ...]
    unmapped: tuple[int, ...]
    notes: tuple[str, ...]


def optimized_hlo(function: Any, specs: Sequence[Any]) -> str:
    """The optimized HLO text of ``function`` (a jit_compile tf.function) for ``specs``, or
    AdapterError saying why it cannot be had."""
    get_ir = getattr(function, "experimental_get_compiler_ir", None)
    if get_ir is None:
        raise AdapterError("this TensorFlow has no experimental_get_compiler_ir")
    try:
        text = get_ir(*specs)(stage=STAGE)
    except Exception as error:  # XLA cannot compile it, an unknown stage: the caller says why
        message = str(error).strip().splitlines()
        raise AdapterError(f"{type(error).__name__}: {message[0] if message else ''}"[:300]) from error
    if not isinstance(text, str) or not text.startswith("HloModule"):
        raise AdapterError(f"experimental_get_compiler_ir(stage={STAGE!r}) did not return an HLO module's text")
    return text


def _shown(indices: Sequence[int], operations: Sequence[Operation], limit: int = 5) -> str:
    shown = ", ".join(
        f"{op.scope}/{op.name}" if op.scope else op.name for op in (operations[i] for i in indices[:limit])
    )
    return shown + (f" and {len(indices) - limit} more" if len(indices) > limit else "")


def xla_kernels(
    text: str,
    operations: Sequence[Operation],
    names: Sequence[tuple[str, ...]],
    loops: Sequence[tuple[str, LoopAssumption]],
    default_trip_count: int,
) -> XlaKernels:
    """The kernels of the module in ``text`` with ``operations`` assigned by their op_names
    ``names``; ``loops`` are the walker's ``(While op_name, loop)`` pairs. AdapterError when the
    text cannot be read."""
    try:
        module = parse_hlo(text)
    except ValueError as error:
        raise AdapterError(f"the optimized HLO cannot be read: {error}") from error
    by_name: dict[str, deque[LoopAssumption]] = defaultdict(deque)
    for name, loop in loops:
        by_name[name].append(loop)
    notes = [
        f"kernels read from XLA's optimized HLO of module {module.name}, which experimental_get_compiler_ir compiled "
        f"for the trace from the same function graph; the timed call runs a compilation of its own (named after its "
        f"XLA cluster), the same kernels as far as XLA compiles deterministically"
    ]

    def trip_count(loop: WhileLoop) -> int | None:
        found = None
        for name in parse_tf_op_name(loop.op_name or "")[1]:
            if by_name.get(name):
                found = by_name[name].popleft()
                break
        if found is None:
            return None
        if loop.known_trip_count is not None and loop.known_trip_count != found.trip_count:
            notes.append(
                f"XLA knows {loop.name} ({found.label}) runs {loop.known_trip_count} times; the trace counted its "
                f"body {found.trip_count} times ({found.source}); the kernels run XLA's count"
            )
        return found.trip_count

    sites, _trips, walk_notes = read_sites(
        module, trip_count=trip_count, default_trip_count=default_trip_count, parse=parse_tf_op_name
    )
    kernels, unmapped, split = assign(sites, operations, names)
    notes += walk_notes
    if unmapped:
        flops = sum(operations[i].cost.flops * operations[i].count for i in unmapped)
        notes.append(
            f"{len(unmapped)} record(s) match no instruction of the optimized HLO by node name "
            f"({_shown(unmapped, operations)}; {flops:,} FLOPs): XLA folded them away or renamed them; scored "
            f"together by the unfused rule"
        )
    if split:
        shown = _shown([index for index, _ in split], operations)
        notes.append(
            f"XLA computes {len(split)} record(s) in more than one kernel ({shown}): each counts its FLOPs in the "
            f"kernel it was matched to, while every kernel's traffic counts"
        )
    return XlaKernels(kernels, unmapped, tuple(notes))
