"""The kernels of the executable a JAX program was timed with, for ``Trace.kernels``.

``read_kernels`` never fails a trace: an executable whose HLO cannot be read (a backend
without text, an old jaxlib) leaves the trace without kernels and says why in a note, so
the bound falls back to unfused traffic per record. What the mapping could not do — records
no kernel claims, records XLA duplicated into several fusions, loops whose trip count was
assumed — is said in notes too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...core.kernels import Kernel
from ...core.records import LoopAssumption, Operation
from .compiled import Executable

KERNEL_SOURCE = "XLA optimized HLO of the timed executable (fusions, copies, custom calls; loops multiplied)"
UNREAD = "no kernels: {why}; the bound scores each record at its unfused traffic"


@dataclass(frozen=True, slots=True)
class Program:
    kernels: tuple[Kernel, ...] = ()
    source: str | None = None
    notes: tuple[str, ...] = ()


def _names(indices: Sequence[int], operations: Sequence[Operation], limit: int = 5) -> str:
    shown = ", ".join(operations[i].name for i in indices[:limit])
    return shown + (f" and {len(indices) - limit} more" if len(indices) > limit else "")


def read_kernels(
    executable: Executable | None,
    operations: Sequence[Operation],
    loops: Sequence[LoopAssumption],
    default_trip_count: int,
) -> Program:
    """The kernels of ``executable`` with ``operations`` assigned to them, or none and a note."""
    if executable is None:
        return Program()
    from .hlo import compiled_kernels

    try:
        found = compiled_kernels(executable.compiled, operations, loops=loops, default_trip_count=default_trip_count)
    except Exception as error:  # unreadable HLO: said in the report, never a failed trace
        return Program(notes=(UNREAD.format(why=f"{type(error).__name__}: {error}"[:300]),))
    notes = list(found.notes)
    if found.unmapped:
        flops = sum(operations[i].cost.flops * operations[i].count for i in found.unmapped)
        names = _names(found.unmapped, operations)
        notes.append(
            f"{len(found.unmapped)} record(s) match no kernel of the compiled program ({names}; {flops:,} FLOPs): "
            f"scored together by the unfused rule"
        )
    if found.duplicated:
        dup = [index for index, _ in found.duplicated]
        notes.append(
            f"XLA duplicated {len(dup)} record(s) into several kernels ({_names(dup, operations)}): each counts its "
            f"FLOPs in the first, while every copy's traffic counts"
        )
    return Program(found.kernels, KERNEL_SOURCE, tuple(notes))
