"""The kernels of the executable a JAX program was timed with, for ``Trace.kernels``.

``read_kernels`` never fails a trace: an executable whose HLO cannot be read (a backend
without text, an old jaxlib) leaves the trace without kernels and says why in a note, so
the bound falls back to unfused traffic per record. What the mapping could not do — records
no kernel claims, records XLA duplicated into several fusions, loops whose trip count was
assumed — is said in notes too.

A kernel whose work no cost rule models is marked with the equation's name
(``Kernel.unmodeled``), so that its measured time counts against time coverage, never as
modeled time: a kernel that executes no record but whose instruction's ``op_name`` (or one of
its fusion's instructions' ``op_name``) ends in a primitive ``Coverage.unmodeled`` lists; and a
host callback's custom call (``pure_callback``, ``io_callback``...), whose record counts only
the bytes sent to the host and back — what the Python function computes is unknown.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from ...core.kernels import Kernel
from ...core.records import LoopAssumption, Operation
from .compiled import Executable
from .hlo_map import parse_op_name
from .hlo_text import HloModule, Instruction, parse_hlo

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
    unmodeled: Sequence[tuple[str, int]] = (),
) -> Program:
    """The kernels of ``executable`` with ``operations`` assigned to them, or none and a note;
    ``unmodeled`` is the trace's ``Coverage.unmodeled`` (``(name, count)``, ranked)."""
    if executable is None:
        return Program()
    from .hlo import compiled_kernels

    try:
        found = compiled_kernels(executable.compiled, operations, loops=loops, default_trip_count=default_trip_count)
        kernels = _mark_unmodeled(executable, found.kernels, operations, [name for name, _ in unmodeled])
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
    return Program(kernels, KERNEL_SOURCE, tuple(notes))


def _mark_unmodeled(
    executable: Executable, kernels: tuple[Kernel, ...], operations: Sequence[Operation], unmodeled: list[str]
) -> tuple[Kernel, ...]:
    """``kernels`` with ``unmodeled`` set on those whose work no cost rule models (the module docstring)."""
    marked: dict[str, tuple[str, ...]] = {}
    for kernel in kernels:
        callbacks = [
            operations[i].name.rsplit("/", 1)[-1] for i in kernel.operations if operations[i].kind == "callback"
        ]
        if callbacks:
            marked[kernel.name] = tuple(dict.fromkeys(callbacks))
    if unmodeled:  # only then is the HLO read a second time
        from .hlo import hlo_text

        module = parse_hlo(hlo_text(executable.compiled))
        instructions = {i.name: i for computation in module.computations.values() for i in computation}
        # an unmodeled name is the primitive, or ``primitive:target`` for a custom call; a fusion
        # that runs one beside modeled records runs it too
        by_primitive = {name.partition(":")[0]: name for name in reversed(unmodeled)}
        for kernel in kernels:
            primitives = set()
            for op_name in _op_names(module, instructions.get(kernel.name)):
                _scope, names = parse_op_name(op_name)
                if names and names[0] in by_primitive:
                    primitives.add(by_primitive[names[0]])
            if primitives:
                found = tuple(name for name in unmodeled if name in primitives)
                marked[kernel.name] = tuple(dict.fromkeys(marked.get(kernel.name, ()) + found))
    return tuple(replace(k, unmodeled=marked[k.name]) if k.name in marked else k for k in kernels)


def _op_names(module: HloModule, instruction: Instruction | None) -> Iterator[str]:
    """The ``op_name`` of an instruction and of every instruction its fusion calls (nested too)."""
    if instruction is None:
        return
    if instruction.op_name:
        yield instruction.op_name
    if instruction.opcode == "fusion":
        for called in instruction.calls("calls"):
            for inner in module.computations.get(called, ()):
                if inner.opcode != "parameter":
                    yield from _op_names(module, inner)
