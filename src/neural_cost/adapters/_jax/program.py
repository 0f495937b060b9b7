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

A collective the SPMD partitioner inserted (``jit`` with shardings: a gradient's all-reduce, a
row-sharded matmul's partial sums) is in no jaxpr: its kernel gets a ``collective`` record of
its own, appended after the trace's records (``Program.operations``; its index belongs to that
kernel), read from the per-device HLO: inputs the operands' shapes, output the result's (an
asynchronous ``-start``'s ``-done``), group size from ``replica_groups``, count the kernel's
executions. A collective whose records the jaxpr already has (a ``shard_map``'s ``psum``:
its ``op_name`` ends in the primitive) gets none.

A partitioned executable (partitions × replicas > 1, ``Program.devices``) is one device's
program, so its trace is too: every record outside a ``shard_map`` is rewritten to one device's
share, its shapes read from the instruction that computes it (``sharded.py``; ``Program.records``),
and the kernels' FLOPs summed again from them. A note says so, and names the records whose
device shapes cannot be read: they keep their traced (global) shapes and run in no kernel (one
placed at a kernel is taken out of it), so no kernel's per-device FLOPs hold a global record.
Before the rewrite, the records' model FLOPs over all devices are kept (``global_model_flops``:
those at global shapes once, a ``shard_map`` body's × devices; recomputed and collective
records left out, as ``analysis/utilization.py`` defines model FLOPs).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from ...core.kernels import Kernel
from ...core.records import LoopAssumption, Operation
from .compiled import Executable
from .hlo_map import Mark, flops_of, parse_op_name
from .hlo_text import COLLECTIVE_OPCODES, ELEMENT_DTYPES, HloModule, Instruction, arrays
from .ops_collectives import COLLECTIVES
from .sharded import one_device

KERNEL_SOURCE = "XLA optimized HLO of the timed executable (fusions, copies, custom calls; loops multiplied)"
UNREAD = "no kernels: {why}; the bound scores each record at its unfused traffic"
SHARDED = "partitioned over {n} devices: records are one device's share, shapes read from the partitioned HLO"
KEPT_GLOBAL = (
    "{k} record(s) keep their traced shapes, global outside shard_map ({names}; {flops:,} FLOPs): no instruction "
    "of the partitioned HLO gives their one-device shapes; they run in no kernel (scored with the unmapped records) "
    "and are left out of hardware FLOPs and activation bounds"
)


@dataclass(frozen=True, slots=True)
class Program:
    kernels: tuple[Kernel, ...] = ()
    source: str | None = None
    notes: tuple[str, ...] = ()
    #: Records the HLO adds after the trace's (the partitioner's collectives), indexed from there on.
    operations: tuple[Operation, ...] = ()
    #: Devices the executable is partitioned over (``Trace.devices``).
    devices: int = 1
    #: The trace's records as one device runs them when partitioned (``sharded.py``), index for
    #: index; empty: the trace's own.
    records: tuple[Operation, ...] = ()
    #: When partitioned, the model FLOPs over all devices (``Trace.global_model_flops``); else None.
    global_model_flops: int | None = None


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

    kept: tuple[int, ...] = ()
    global_flops: int | None = None
    try:
        found = compiled_kernels(executable.compiled, operations, loops=loops, default_trip_count=default_trip_count)
        assert found.module is not None
        devices = found.module.partitions * found.module.replicas
        kernels = found.kernels
        if devices > 1:
            global_flops = _model_flops(operations, found.placed, devices)
            operations, kept = one_device(operations, found.placed, found.mesh)
            kernels = tuple(_without(k, set(kept), operations) for k in kernels)
        kernels = _mark_unmodeled(found.module, kernels, operations, [name for name, _ in unmodeled])
        kernels, added, collective_notes = _collectives(found.module, kernels, operations)
    except Exception as error:  # unreadable HLO: said in the report, never a failed trace
        return Program(notes=(UNREAD.format(why=f"{type(error).__name__}: {error}"[:300]),))
    notes = list(found.notes) + collective_notes
    if devices > 1:
        notes.append(SHARDED.format(n=devices))
    if kept:
        flops = sum(operations[i].cost.flops * operations[i].count for i in kept)
        notes.append(KEPT_GLOBAL.format(k=len(kept), names=_names(kept, operations), flops=flops))
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
    records = tuple(operations) if devices > 1 else ()
    return Program(kernels, KERNEL_SOURCE, tuple(notes), added, devices, records, global_flops)


def _model_flops(operations: Sequence[Operation], placed: Mapping[int, Mark], devices: int) -> int:
    """The traced records' model FLOPs over ``devices``: a record at global shapes once, one a
    ``shard_map`` body computes (its instruction says so) on every device; recomputed and
    collective records left out (the module docstring)."""
    total = 0
    for index, op in enumerate(operations):
        if op.kind == "collective" or op.attrs.get("recompute") == "true":
            continue
        mark = placed.get(index)
        total += op.cost.flops * op.count * (devices if mark is not None and mark.per_device else 1)
    return total


def _without(kernel: Kernel, kept: set[int], operations: Sequence[Operation]) -> Kernel:
    """``kernel`` without the records kept at global shapes, its FLOPs those of the rest (one device's)."""
    indices = tuple(i for i in kernel.operations if i not in kept)
    return replace(kernel, operations=indices, flops_by_dtype=flops_of(operations, indices))


def _collectives(
    module: HloModule, kernels: tuple[Kernel, ...], operations: Sequence[Operation]
) -> tuple[tuple[Kernel, ...], tuple[Operation, ...], list[str]]:
    """``kernels`` with a ``collective`` record for each collective the partitioner inserted
    (the module docstring), the records, and a note for any that cannot be read."""
    from .hlo import collective_of

    instructions = {i.name: i for computation in module.computations.values() for i in computation}
    dones = {i.operands[0]: i for i in instructions.values() if i.opcode.endswith("-done") and i.operands}
    added: list[Operation] = []
    notes: list[str] = []
    result = []
    for kernel in kernels:
        start = instructions.get(kernel.name)
        collective = collective_of(module, start) if start is not None else None
        if start is None or collective is None or any(operations[i].kind == "collective" for i in kernel.operations):
            result.append(kernel)
            continue
        scope, names = parse_op_name(collective.op_name or start.op_name or "")
        if names and names[0] in COLLECTIVES:  # the jaxpr's own: its record, or its name in Coverage.unmodeled
            result.append(kernel)
            continue
        record = _record(instructions, dones.get(start.name), collective, scope, kernel)
        if record is None:
            notes.append(f"collective {kernel.name} ({collective.opcode}): its group or shapes cannot be read")
            result.append(replace(kernel, unmodeled=(*kernel.unmodeled, collective.opcode)))
            continue
        flops = dict(kernel.flops_by_dtype)
        for dtype, value in record.cost.flops_by_dtype.items():
            flops[dtype] = flops.get(dtype, 0) + value * record.count
        scopes = kernel.scopes if not scope or scope in kernel.scopes else (*kernel.scopes, scope)
        index = len(operations) + len(added)
        added.append(record)
        result.append(replace(kernel, operations=(*kernel.operations, index), flops_by_dtype=flops, scopes=scopes))
    return tuple(result), tuple(added), notes


def _record(
    instructions: dict[str, Instruction],
    done: Instruction | None,
    collective: Instruction,
    scope: str | None,
    kernel: Kernel,
) -> Operation | None:
    """One device's share of ``collective`` as a record (``done``: the ``-done`` of its kernel's
    start), or None when its group or shapes cannot be read. HLO names are unique in a module."""
    operands = [instructions.get(operand) for operand in collective.operands]
    if collective.group_size is None or any(operand is None for operand in operands):
        return None
    inputs = [a for operand in operands if operand is not None for a in arrays(operand.shape)]
    result = collective.shape
    if collective.opcode.endswith("-start"):  # a tuple of buffers: the result is the -done's
        result = done.shape if done is not None else ""
    outputs = arrays(result)
    if not inputs or not outputs or any(element not in ELEMENT_DTYPES for element, _ in (*inputs, *outputs)):
        return None
    base = collective.opcode.removesuffix("-start")
    return Operation(
        base,
        "collective",
        tuple(dims for _, dims in inputs),
        outputs[0][1],
        ELEMENT_DTYPES[outputs[0][0]],
        scope=scope,
        attrs={"collective": COLLECTIVE_OPCODES[base], "group_size": collective.group_size, "op": collective.name},
        input_dtypes=tuple(ELEMENT_DTYPES[element] for element, _ in inputs),
        extra_outputs=tuple(dims for _, dims in outputs[1:]),
        extra_output_dtypes=tuple(ELEMENT_DTYPES[element] for element, _ in outputs[1:]) if outputs[1:] else None,
        count=kernel.executions,
    )


def _mark_unmodeled(
    module: HloModule, kernels: tuple[Kernel, ...], operations: Sequence[Operation], unmodeled: list[str]
) -> tuple[Kernel, ...]:
    """``kernels`` with ``unmodeled`` set on those whose work no cost rule models (the module docstring)."""
    marked: dict[str, tuple[str, ...]] = {}
    for kernel in kernels:
        callbacks = [
            operations[i].name.rsplit("/", 1)[-1] for i in kernel.operations if operations[i].kind == "callback"
        ]
        if callbacks:
            marked[kernel.name] = tuple(dict.fromkeys(callbacks))
    if unmodeled:
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
