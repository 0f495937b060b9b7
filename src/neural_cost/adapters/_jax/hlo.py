"""The kernels a compiled JAX program runs, read from its optimized HLO.

``compiled_kernels(jax.jit(f).lower(*args).compile(), trace.operations, loops=...)`` walks the
entry computation and every computation reached through ``while``, ``conditional`` and
``call``; every other instruction that does work is a kernel: fusions, custom calls, dots and
convolutions outside fusions, copies, (dynamic-)update-slices, sorts, collectives. Aliasing
and bookkeeping instructions (parameters, constants, tuples, get-tuple-element, bitcasts) are
not, and an asynchronous pair is one kernel, at its start. A collective the SPMD partitioner
inserted carries the ``op_name`` of the equation whose sharding needed it (a gradient's
``dot_general``): it claims no record by that name (``program.py`` gives it a ``collective``
record of its own); one a ``shard_map`` wrote (``.../psum_invariant``) claims the jaxpr's record.

Per execution, a kernel's traffic is the bytes of its operands (each as often as it is
passed) and results, as the HLO shapes them — a fusion's operands are its inputs, so what
stays inside it moves nothing — and its footprint is the same distinct buffers, once each.
A gather or dynamic-slice reads only the elements its result holds, never its whole operand;
so does a fusion from a parameter that only gathers and (dynamic-)slices read: a row looked up
in a loop-carried table moves the row, not the table.
An in-place update (a dynamic-update-slice or scatter, alone or at the root of a fusion whose
buffer is a fusion operand) moves only its update: the buffer aliases the result.

Executions multiply down the loop nest: a while body runs ``trips`` times, its condition
``trips + 1``. ``trips`` is XLA's ``known_trip_count`` when the loop carries one; otherwise
(a bound that is a traced value) ``trip_count(loop)`` when given, else the trip count the
walker used for the jaxpr loop at the same scope and source line (``loops.take_loop``; in program
order where lines are missing), else ``default_trip_count`` with a note. A conditional runs its heaviest
branch (by traffic), as the walker costs its costliest one; the others are listed with 0
executions. The records each kernel executes come from ``hlo_map.assign``; in a partitioned
module each mark carries one device's shapes of its instruction and operands, and the mesh the
values are cut over is the executable's (``sharded.mesh_of``), for ``sharded.py``. XLA joins
the ``op_name``s of the equations it folded into one instruction with ``;``: each is a mark.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.errors import AdapterError
from ...core.kernels import Kernel
from ...core.records import LoopAssumption, Operation
from .hlo_map import (
    CONTRACTION_OPCODES,
    MARKER_OPCODES,
    Mark,
    Site,
    assign,
    element_counts,
    in_shard_map,
    layout_only,
    parse_op_name,
)
from .hlo_text import COLLECTIVE_OPCODES, HloModule, Instruction, arrays, parse_hlo
from .hlo_work import kernel_work
from .loops import take_loop
from .ops_collectives import COLLECTIVES
from .sharded import mesh_of

__all__ = [
    "CompiledKernels", "OpNameParser", "WhileLoop", "collective_of", "compiled_kernels", "hlo_text", "read_sites",
]  # fmt: skip

_NOT_KERNELS = frozenset(
    {
        "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "add-dependency",
        "opt-barrier", "domain", "partition-id", "replica-id", "async-update",
    }
)  # fmt: skip
_IN_PLACE = frozenset({"dynamic-update-slice", "scatter"})
#: Instructions that read only the elements of their first operand that their result holds.
_PARTIAL = frozenset({"gather", "dynamic-slice", "slice"})


@dataclass(frozen=True, slots=True)
class WhileLoop:
    """An HLO while loop, as a ``trip_count`` callback sees it."""

    name: str
    op_name: str | None
    scope: str | None
    #: Its place among the module's while loops, in program order (pre-order).
    index: int
    known_trip_count: int | None


TripCount = Callable[[WhileLoop], "int | None"]
#: Reads an ``op_name`` into ``(scope, names)`` (JAX's name stacks by default; TensorFlow's node names).
OpNameParser = Callable[[str], "tuple[str | None, tuple[str, ...]]"]


@dataclass(frozen=True, slots=True)
class CompiledKernels:
    """The kernels of one compiled program and how our records map onto them."""

    kernels: tuple[Kernel, ...]
    #: Indices of records no kernel claims (XLA removed or folded them beyond recognition).
    unmapped: tuple[int, ...]
    #: ``(record, other kernels holding its key)``: XLA duplicated it; it counts in the first.
    duplicated: tuple[tuple[int, tuple[str, ...]], ...]
    #: ``(HLO while, trip count, where it came from, the trace's loop label or None)``.
    loops: tuple[tuple[str, int, str, str | None], ...]
    notes: tuple[str, ...]
    #: The module the kernels were read from (its collectives' shapes and groups, for ``program.py``).
    module: HloModule | None = None
    #: A partitioned module's instruction each placed record is computed by (one device's shapes).
    placed: dict[int, Mark] = field(default_factory=dict)
    #: The axis sizes a partitioned module's values are cut over (``sharded.mesh_of``); () for one device.
    mesh: tuple[int, ...] = ()

    @property
    def traffic_bytes(self) -> int:
        """Compiled traffic: every kernel's bytes over all its executions."""
        return sum(k.total_traffic_bytes for k in self.kernels)


def collective_of(module: HloModule, instruction: Instruction) -> Instruction | None:
    """The collective a kernel runs: itself (an ``all-reduce``, an ``all-gather-start``...), or the
    one an ``async-start`` wraps (the root of its called computation); None for any other kernel."""
    if instruction.opcode.removesuffix("-start") in COLLECTIVE_OPCODES:
        return instruction
    called = instruction.calls("calls") if instruction.opcode == "async-start" else ()
    root = module.root(called[0]) if called else None
    return root if root is not None and root.opcode in COLLECTIVE_OPCODES else None


def hlo_text(compiled: Any) -> str:
    """The optimized HLO text of a compiled JAX executable, or AdapterError saying why not."""
    if isinstance(compiled, str):
        return compiled
    as_text = getattr(compiled, "as_text", None)
    if as_text is None:
        raise AdapterError(f"{type(compiled).__name__} has no as_text(): pass jax.jit(f).lower(*args).compile()")
    try:
        text = as_text()
    except Exception as error:  # a backend without text: the caller falls back to unfused traffic
        raise AdapterError(
            f"the compiled program's HLO text cannot be read ({type(error).__name__}: {error})"
        ) from error
    if not isinstance(text, str) or not text.startswith("HloModule"):
        raise AdapterError("the compiled program's as_text() is not an HLO module; its kernels cannot be read")
    return text


class _Walk:
    def __init__(
        self,
        module: HloModule,
        trip_count: TripCount | None,
        loops: Sequence[LoopAssumption],
        default: int,
        parse: OpNameParser = parse_op_name,
    ):
        self.module = module
        self.parse = parse
        self.trip_count = trip_count
        self.default = default
        self.candidates: dict[str | None, deque[LoopAssumption]] = defaultdict(deque)
        for loop in loops:
            self.candidates[loop.scope].append(loop)
        self.sites: list[Site] = []
        self.loops: list[tuple[str, int, str, str | None]] = []
        self.notes: list[str] = []
        self.while_index = 0
        #: A partitioned module's marks carry one device's shapes (``hlo_map.fits``).
        self.partitioned = module.partitions * module.replicas > 1

    def computation(self, name: str, executions: int, body: bool = False) -> None:
        instructions = self.module.computations[name]
        defined = {i.name: i for i in instructions}
        aliases = self._carried(name, defined) if body else {}
        for instruction in instructions:
            opcode = instruction.opcode
            if opcode == "while":
                trips = self._trips(instruction)
                # a loop XLA counted runs without its condition (the profiler shows no condition
                # event); one whose count is known only at run time tests it trips + 1 times
                checks = 0 if instruction.known_trip_count is not None else trips + 1
                self.computation(instruction.calls("condition")[0], executions * checks)
                self.computation(instruction.calls("body")[0], executions * trips, body=True)
            elif opcode == "conditional":
                branches = instruction.calls("branch_computations") or (
                    instruction.calls("true_computation") + instruction.calls("false_computation")
                )
                heaviest = max(range(len(branches)), key=lambda b: (self._weight(branches[b]), -b))
                for b, branch in enumerate(branches):
                    self.computation(branch, executions if b == heaviest else 0)
            elif opcode == "call":
                for called in instruction.calls("to_apply"):
                    self.computation(called, executions)
            elif opcode not in _NOT_KERNELS and not opcode.endswith("-done"):
                self.sites.append(self._site(instruction, defined, executions, aliases.get(instruction.name)))

    def _carried(self, body: str, defined: dict[str, Instruction]) -> dict[str, str]:
        """``{kernel: operand}`` for the kernels of a while body that write loop-state element i
        while reading element i of the same size: XLA keeps each loop-state element in one
        buffer across iterations, so the result is written over that operand (one buffer)."""
        root = self.module.root(body)
        if root is None or root.opcode != "tuple":
            return {}
        aliases = {}
        for index, producer_name in enumerate(root.operands):
            producer = defined.get(producer_name)
            if producer is None or producer.opcode in _NOT_KERNELS:
                continue
            for operand in producer.operands:
                element = defined.get(operand)
                if (
                    element is not None
                    and element.opcode == "get-tuple-element"
                    and element.tuple_index == index
                    and element.operands
                    and defined.get(element.operands[0], element).parameter_number is not None
                    and element.nbytes == producer.nbytes
                ):
                    aliases[producer.name] = operand
                    break
        return aliases

    def _site(
        self, kernel: Instruction, defined: dict[str, Instruction], executions: int, carried: str | None = None
    ) -> Site:
        sizes = [defined[o].nbytes for o in kernel.operands]
        for position, touched in self._partial_reads(kernel).items():
            sizes[position] = min(sizes[position], touched)
        distinct: dict[str, int] = {}
        for operand, size in zip(kernel.operands, sizes, strict=True):  # one buffer passed twice: once
            distinct[operand] = min(defined[operand].nbytes, distinct.get(operand, 0) + size)
        written, reads_old, buffer = kernel.nbytes, 0, self._in_place(kernel)
        if buffer is not None:
            position, update_bytes, reads_old_too = buffer
            distinct.pop(kernel.operands[position], None)
            sizes[position] = 0
            written, reads_old = update_bytes, update_bytes if reads_old_too else 0
        traffic = sum(sizes) + written + reads_old
        if carried is not None and buffer is None:
            distinct.pop(carried, None)  # the result is written over this loop-state buffer
        footprint = sum(distinct.values()) + written
        site = Site(
            kernel.name, kernel.opcode, traffic, footprint, executions, self.module.source(kernel), kernel.nbytes
        )
        operands = [arrays(defined[o].shape) for o in kernel.operands]
        if all(len(held) == 1 for held in operands):
            site.operand_sizes = element_counts([held[0][1] for held in operands])
        work = kernel_work(self.module, kernel, defined)
        site.compiled_flops, site.contraction = work.flops_by_dtype, work.opcode
        site.traits = tuple(sorted(work.traits))
        if kernel.op_name:
            marks = self._marks_of(kernel, defined, kernel.opcode != "fusion")
            collective = collective_of(self.module, kernel) is not None
            if not collective or (marks[0].names and marks[0].names[0] in COLLECTIVES):  # a partitioner's: none
                site.marks.extend(marks)
        if self.partitioned:
            site.own = self._marks_of(kernel, defined, True, "")[0]
        if kernel.opcode == "fusion":
            self._marks(kernel.calls("calls"), site.marks)
        return site

    def _marks(self, computations: Sequence[str], marks: list[Mark]) -> None:
        """Every instruction's key inside a fusion, nested fusions included (not a reduction's
        combiner: its scalar parameters carry the bare primitive name)."""
        for name in computations:
            instructions = self.module.computations.get(name, ())
            defined = {i.name: i for i in instructions}
            for instruction in instructions:
                if instruction.op_name and instruction.opcode != "parameter":
                    marks.extend(self._marks_of(instruction, defined, instruction.opcode not in MARKER_OPCODES))
                if instruction.opcode == "fusion":
                    self._marks(instruction.calls("calls"), marks)

    def _marks_of(
        self, instruction: Instruction, defined: dict[str, Instruction], computes: bool, op_name: str | None = None
    ) -> list[Mark]:
        """``instruction``'s keys, one per equation its ``op_name`` names (XLA joins the names of the equations it
        folded into one instruction with ``;``); partitioned, with one device's shapes of it and of its operands."""
        op_name = (instruction.op_name or "") if op_name is None else op_name
        parts = op_name.split(";") if self.parse is parse_op_name else [op_name]  # TF's parser reads its own
        parts = [part for part in parts if part] or [""]
        found = [self.parse(part) if part else (None, ()) for part in parts]
        # a dot XLA named after the transpose it folded in still computes a dot_general first
        computed = CONTRACTION_OPCODES.get(instruction.opcode, ()) if self.parse is parse_op_name else ()
        if computed and not any(set(computed) & set(names) for _, names in found):  # once, on the first part
            found[0] = (found[0][0], (*computed, *found[0][1]))
        operands = [arrays(defined[o].shape) if o in defined else [] for o in instruction.operands]
        sizes = element_counts([held[0][1] for held in operands]) if all(len(held) == 1 for held in operands) else None
        source = self.module.source(instruction)
        marks = [Mark(scope, names, computes and not layout_only(instruction.opcode, names), instruction.nbytes, source,
                      sizes) for scope, names in found]  # fmt: skip
        if not self.partitioned:
            return marks
        dims = tuple(dims for _, dims in arrays(instruction.shape))
        operand_dims = tuple(held[0][1] if len(held) == 1 else None for held in operands)
        # each equation XLA folded into the instruction is in a shard_map or not, by its own name
        return [
            replace(mark, dims=dims, operand_dims=operand_dims, per_device=in_shard_map(part))
            for mark, part in zip(marks, parts, strict=True)
        ]

    def _partial_reads(self, kernel: Instruction) -> dict[int, int]:
        """``{operand position: bytes read}`` for the operands a kernel reads only in part: the
        data operand of a gather or dynamic-slice, or a fusion parameter that only gathers,
        dynamic-slices and slices read (through bitcasts) — each reads the elements its result
        holds, never the whole buffer."""
        if kernel.opcode in ("gather", "dynamic-slice", "slice"):
            return {0: kernel.nbytes}
        called = kernel.calls("calls") if kernel.opcode == "fusion" else ()
        if not called:
            return {}
        users: dict[str, list[tuple[Instruction, int]]] = defaultdict(list)
        instructions = self.module.computations.get(called[0], ())
        for instruction in instructions:
            for position, operand in enumerate(instruction.operands):
                users[operand].append((instruction, position))

        def touched(name: str) -> int | None:
            total = 0
            for user, position in users.get(name, ()):
                if user.opcode == "bitcast":
                    part = touched(user.name)
                elif user.opcode in _PARTIAL and position == 0:
                    part = user.nbytes
                else:
                    return None  # read whole (or the fusion's result)
                if part is None:
                    return None
                total += part
            return total if name in users else None

        reads: dict[int, int] = {}
        for instruction in instructions:
            if instruction.parameter_number is not None and instruction.parameter_number < len(kernel.operands):
                part = touched(instruction.name)
                if part is not None:
                    reads[instruction.parameter_number] = part
        return reads

    def _in_place(self, kernel: Instruction) -> tuple[int, int, bool] | None:
        """``(buffer operand, update bytes, reads the old values too)`` for an in-place update."""
        root, defined = kernel, {}
        if kernel.opcode == "fusion":
            called = kernel.calls("calls")
            found = self.module.root(called[0]) if called else None
            if found is None:
                return None
            root = found
            defined = {i.name: i for i in self.module.computations[called[0]]}
        if root.opcode not in _IN_PLACE or len(root.operands) < 2:
            return None
        position = 0
        if root is not kernel:
            buffer = defined.get(root.operands[0])
            if buffer is None or buffer.parameter_number is None:
                return None  # the fusion builds its buffer itself: it writes all of it
            position = buffer.parameter_number
        update = root.operands[1] if root.opcode == "dynamic-update-slice" else root.operands[-1]
        update_bytes = defined[update].nbytes if update in defined else self._operand_bytes(kernel, update)
        combiner = root.calls("to_apply")
        combiner_root = self.module.root(combiner[0]) if combiner else None
        reads_old = root.opcode == "scatter" and not (combiner_root and combiner_root.opcode == "parameter")
        return position, update_bytes, reads_old

    def _operand_bytes(self, kernel: Instruction, operand: str) -> int:
        for instructions in self.module.computations.values():
            for instruction in instructions:
                if instruction.name == operand:
                    return instruction.nbytes
        raise AdapterError(f"HLO {kernel.name}: operand {operand} is not defined in the module")

    def _weight(self, name: str) -> int:
        """Per-execution traffic of a computation and what it calls (loops at their known
        count, else once): what picks a conditional's heaviest branch."""
        total = 0
        instructions = self.module.computations[name]
        defined = {i.name: i for i in instructions}
        for instruction in instructions:
            if instruction.opcode == "while":
                body = instruction.calls("body")[0]
                total += self._weight(body) * (instruction.known_trip_count or 1)
            elif instruction.opcode in ("conditional", "call"):
                total += max((self._weight(c) for _, names in instruction.called for c in names), default=0)
            elif instruction.opcode not in _NOT_KERNELS and not instruction.opcode.endswith("-done"):
                total += sum(defined[o].nbytes for o in instruction.operands if o in defined) + instruction.nbytes
        return total

    def _trips(self, instruction: Instruction) -> int:
        scope, _names = self.parse(instruction.op_name) if instruction.op_name else (None, ())
        loop = WhileLoop(instruction.name, instruction.op_name, scope, self.while_index, instruction.known_trip_count)
        self.while_index += 1
        queue = self.candidates.get(scope)
        matched = take_loop(queue, self.module.source(instruction), instruction.known_trip_count)
        label = matched.label if matched is not None else None
        asked = self.trip_count(loop) if self.trip_count is not None else None
        if loop.known_trip_count is not None:
            trips, source = loop.known_trip_count, "known_trip_count"
            if matched is not None and matched.trip_count != trips:
                self.notes.append(
                    f"XLA knows {instruction.name} ({label}) runs {trips} times; the trace assumed "
                    f"{matched.trip_count} ({matched.source})"
                )
        elif asked is not None:
            trips, source = asked, "callback"
        elif matched is not None:
            trips, source = matched.trip_count, matched.source
        else:
            trips, source = self.default, "default"
            self.notes.append(
                f"while loop {instruction.name} ({instruction.op_name or 'no op_name'}) has no known trip count and "
                f"matches no loop of the trace: assumed {trips} iterations (default_trip_count)"
            )
        self.loops.append((instruction.name, trips, source, label))
        return trips


def read_sites(
    module: HloModule,
    *,
    loops: Sequence[LoopAssumption] = (),
    trip_count: TripCount | None = None,
    default_trip_count: int = 8,
    parse: OpNameParser = parse_op_name,
) -> tuple[list[Site], list[tuple[str, int, str, str | None]], list[str]]:
    """The module's kernels in program order, before records are assigned (see the module docstring);
    ``parse`` reads each instruction's ``op_name`` into its marks' ``(scope, names)``."""
    walk = _Walk(module, trip_count, loops, default_trip_count, parse)
    walk.computation(module.entry, 1)
    return walk.sites, walk.loops, walk.notes


def compiled_kernels(
    compiled: Any,
    operations: Sequence[Operation] = (),
    *,
    loops: Sequence[LoopAssumption] = (),
    trip_count: TripCount | None = None,
    default_trip_count: int = 8,
) -> CompiledKernels:
    """The kernels of ``compiled`` (a ``jax.stages.Compiled`` or its ``as_text()``), with
    ``operations`` (the trace's records) assigned to them. AdapterError when the HLO cannot be
    read: the caller falls back to unfused traffic and says why."""
    text = hlo_text(compiled)
    try:
        module = parse_hlo(text)
    except ValueError as error:
        raise AdapterError(f"the compiled program's HLO cannot be read: {error}") from error
    sites, trips, notes = read_sites(module, loops=loops, trip_count=trip_count, default_trip_count=default_trip_count)
    placed: dict[int, Mark] = {}
    mesh = mesh_of(compiled, module.partitions * module.replicas)
    kernels, unmapped, duplicated = assign(sites, operations, mesh, placed)
    return CompiledKernels(kernels, unmapped, duplicated, tuple(trips), tuple(notes), module, placed, mesh)
