"""Which of our records each HLO kernel executes, read from XLA's ``op_name`` metadata.

JAX writes each equation's name stack and primitive into the ``op_name`` of the HLO it
lowers to: ``jit(f)/jit(main)/layer1/dot_general``, ``jit(f)/transpose(jvp(layer1))/mul``,
``jit(f)/while/body/closed_call/cell/sin``. Our records carry the same name stack as their
``scope`` — without JAX's wrappers — and the primitive (or the library op) as their name. So
an ``op_name`` is read back into ``(scope, names)`` (``op_names.py``): jit segments are dropped (their names
kept as candidate record names: a ``jax.nn.relu`` record is ``relu``, its HLO ``jit(relu)/max``),
transforms are unwrapped to the scope they wrap (``transpose(jvp(layer1))`` → ``layer1``), and
the segments control flow pushes (``while/body``, ``while/cond``, ``cond/branch_0_fun``,
``closed_call``, ``checkpoint``) are dropped, as is a Python qualname (``f.<locals>.g``) that
a lowering pushes. A user scope spelled like one of those is lost to the mapping, and its
records end unmapped, never miscounted. A primitive whose HLO goes by another name
(``argmax``: a variadic ``reduce``) is read back under both.

Records are assigned in program order, in three passes. A record fits an instruction by its
output size, then by its inputs' sizes against the instruction's operands', then by the user's
line (``source``, which a record whose name another shares
carries), then by its count against the kernel's executions (a function called before a loop
and inside it makes records of one key that run once and ``trips`` times). (1) Each kernel
claims, per ``(scope, name)``, for every instruction of that key that computes (a broadcast or
constant carrying the key marks it present: at most one, never a ``dot_general`` or convolution,
whose results later fusions bitcast under their names; so does a copy or transpose carrying a
contraction's name, ``LAYOUT_OPCODES``), the best-fitting record of that key
of the instruction's size, if any (XLA split ``x / y`` into ``1 / y`` and a multiply: the small
divide claims nothing, the multiply the record). An instruction's key is the first of its names
that a record has at its scope; a ``dot`` or ``convolution`` instruction's names start with the
primitive it computes (a weight gradient's dot is named after the transpose XLA folded into it),
and it holds its other names' keys too, for pass 2. (2) Records left over whose
key some kernel holds go to a kernel XLA made without metadata that computes the same thing
(a convolution or dot of the record's output size), else to the best-fitting kernel holding
the key, the first of equals (XLA duplicated a producer into several fusions, or folded two
equations into one instruction); the other kernels holding it are listed. (3) A record whose
name matches no instruction (a library op counted as one record: gelu, a norm) goes to the
first kernel holding an instruction at its scope that no record explains, else to the first
holding its scope; at the top level (no scope: every kernel holds instructions there) only a library
op matched from its equations (``jax.nn.softmax``, ``gelu``) is placed so, by instructions no record
explains; a contraction record no instruction names goes to a kernel that computes its FLOPs in a
contraction without metadata and holds no other (``jax.nn.dot_product_attention``'s scores, fused
with the softmax). Anything else is unmapped. An instruction XLA made of several equations
carries their ``op_name``s joined by ``;`` (``.../mul;.../broadcast_in_dim``): it holds each key.

A partitioned module (``jit`` with shardings) is one device's program: its instructions hold one
device's part of each record's global output, so there a record also fits an instruction of its
key whose result is such a part (``fits``; ``sharded.device_shape``: each dim of the record's
cut by mesh axes of its own — a mesh of one axis of 8 cuts one dim by 8, never one by 4 — and
laid out as XLA laid it, neighbouring dims merged) with an operand at each input's position
that holds that input or a part of it. ``assign`` then says which instruction computes each
record (``placed``), whose shapes ``sharded.py`` gives the record.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ...core.kernels import COMPILED_EXCESS, Kernel
from ...core.records import Operation
from .composites import INLINE
from .op_names import in_shard_map, parse_op_name
from .sharded import holds_share

__all__ = [
    "CONTRACTIONS",
    "CONTRACTION_OPCODES",
    "LAYOUT_OPCODES",
    "MARKER_OPCODES",
    "Mark",
    "Site",
    "assign",
    "element_counts",
    "fits",
    "flops_of",
    "in_shard_map",
    "layout_only",
    "orphan_of",
    "parse_op_name",
]

#: How far down a key's queue a record of the instruction's size is looked for.
_LOOKAHEAD = 64
#: The primitive each contraction opcode computes: a kernel XLA made without metadata is still
#: matched to a record by what it computes, and an instruction of the opcode that XLA gave
#: another equation's name (``transpose(dot(a, b))`` folded into ``dot(b, a)``, named after the
#: transpose) holds that primitive's key first.
CONTRACTION_OPCODES = {"convolution": ("conv_general_dilated",), "dot": ("dot_general",)}
CONTRACTIONS = frozenset(name for names in CONTRACTION_OPCODES.values() for name in names)
#: Opcodes that only carry an equation's key along (the broadcast of a ``mul``'s constant).
MARKER_OPCODES = frozenset({"constant", "broadcast", "bitcast", "get-tuple-element", "tuple", "reshape", "iota"})
#: Opcodes that only lay a contraction's operand or result out: carrying a ``dot_general``'s or convolution's name they
#: mark it, never compute it (``Mark.computes``). XLA:CPU rewrote a JAX filter gradient's convolution without metadata
#: into a YNNPACK fusion between transposes that carry its name, and the first such copy took the record.
LAYOUT_OPCODES = frozenset({"copy", "transpose"})


def layout_only(opcode: str, names: Sequence[str]) -> bool:
    """Whether an instruction of ``opcode`` carrying ``names`` only lays out the contraction they name first."""
    return opcode in LAYOUT_OPCODES and bool(names) and names[0] in CONTRACTIONS


@dataclass(frozen=True, slots=True)
class Mark:
    """One instruction's key inside a kernel; ``computes`` is False for a marker opcode."""

    scope: str | None
    names: tuple[str, ...]
    computes: bool
    #: The instruction's result bytes, to tell records sharing a key apart; None: unknown.
    nbytes: int | None = None
    #: The user's line that made it (``model.py:42``), the ``source`` a shared record's attrs carry.
    source: str | None = None
    #: Its operands' element counts, smallest first (None: a tuple operand or one not read): two
    #: records of one key and output size (``x @ wx + h @ wh``) are told apart by their inputs'.
    operand_sizes: tuple[int, ...] | None = None
    #: Read only when the module is partitioned: one device's dims of each array of the result,
    #: and of each operand (None: a tuple or unknown), and whether it sits in a ``shard_map``.
    dims: tuple[tuple[int, ...], ...] = ()
    operand_dims: tuple[tuple[int, ...] | None, ...] = ()
    per_device: bool = False


@dataclass(slots=True)
class Site:
    """A kernel as read from the HLO, before records are assigned to it."""

    name: str
    kind: str
    traffic_bytes: int
    footprint_bytes: int
    executions: int
    source: str | None
    result_bytes: int = 0
    marks: list[Mark] = field(default_factory=list)
    #: The kernel's own instruction as a mark without key (a partitioned module's orphans' shapes).
    own: Mark | None = None
    #: Its instruction's operands' element counts, smallest first (None: a tuple operand): a kernel
    #: without metadata is told apart by them (``Mark.operand_sizes``).
    operand_sizes: tuple[int, ...] | None = None
    #: What its own contractions compute per execution, by dtype, and the heaviest one's opcode
    #: (``hlo_work``): a kernel XLA made without metadata is matched by it.
    compiled_flops: dict[str, int] = field(default_factory=dict)
    contraction: str | None = None
    #: How its fused code runs, beyond its records (``Kernel.compiled_traits``, from ``hlo_work``).
    traits: tuple[str, ...] = ()

    def scopes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.scope for m in self.marks if m.scope))


Key = tuple[str | None, str]


def assign(
    sites: Sequence[Site],
    operations: Sequence[Operation],
    mesh: Sequence[int] = (),
    placed: dict[int, Mark] | None = None,
) -> tuple[tuple[Kernel, ...], tuple[int, ...], tuple[tuple[int, tuple[str, ...]], ...]]:
    """``(kernels, unmapped record indices, duplicated)``: each record index lands in exactly one
    kernel or in ``unmapped``; ``duplicated`` lists ``(record, other kernels holding its key)``.
    In a module partitioned over ``mesh`` (its axis sizes; a device count's prime factors when
    the mesh is unknown) an instruction may hold one device's share of a record's output
    (``fits``); ``placed``, when given, receives for each placed record the instruction that
    computes it, whose shapes are one device's."""
    placed = {} if placed is None else placed
    queues: dict[Key, deque[int]] = defaultdict(deque)
    for index, op in enumerate(operations):
        queues[(op.scope, op.name)].append(index)
    known = set(queues)
    claimed: list[list[int]] = [[] for _ in sites]
    holders: dict[Key, dict[int, list[Mark]]] = defaultdict(dict)  # key → site → its marks of that key
    last_claimed: dict[Key, int] = {}
    also_in: dict[int, list[str]] = defaultdict(list)
    explained: list[set[int]] = [set() for _ in sites]  # marks some record's key explains
    for s, site in enumerate(sites):
        wants: dict[Key, list[Mark]] = {}
        for m, mark in enumerate(site.marks):
            keys = [(mark.scope, n) for n in mark.names if (mark.scope, n) in known]
            if not keys:
                continue
            key = keys[0]
            explained[s].add(m)
            # a contraction named after another equation (a dot after a transpose) holds that key too
            for held in keys if mark.names[0] in CONTRACTIONS else keys[:1]:
                holders[held].setdefault(s, []).append(mark)
            wants.setdefault(key, [])
            if mark.computes:
                wants[key].append(mark)
        for key, marks in wants.items():
            queue = queues[key]
            if not queue and key in last_claimed:
                also_in[last_claimed[key]].append(site.name)
            # only present (no mark computes): at most one record, by its first mark's line — never
            # a contraction's: a bitcast XLA gave a dot's name reads the dot's result (a backward
            # dot of that size, later in the program, would be taken from the kernel running it)
            present = [] if key[1] in CONTRACTIONS else holders[key][s][:1]
            for mark in marks or present:
                taken = _take(queue, operations, mark, site.executions, mesh) if queue else None
                if taken is not None:
                    last_claimed[key] = taken
                    claimed[s].append(taken)
                    placed[taken] = mark
    for key, queue in queues.items():  # pass 2: leftovers of a key some kernel holds
        for index in list(queue) if key in holders else ():
            op = operations[index]
            orphan = orphan_of(sites, claimed, op, mesh)
            holder = _holder(sites, holders[key], op, mesh) if orphan is None else orphan
            claimed[holder].append(index)
            queue.remove(index)
            own = sites[holder].own
            found = _fitting(holders[key][holder] if orphan is None else [own] if own else [], op, mesh)
            if found is not None:
                placed[index] = found
    unmapped: list[int] = []
    for key, queue in queues.items():  # pass 3: one record for a library op's several equations
        for index in queue:
            fused = _fused_contraction(sites, claimed, operations, operations[index])
            if fused is not None:  # a dot XLA wrote without metadata into a fusion of other records
                claimed[fused].append(index)
                continue
            scope_holder = _scope_holder(sites, explained, key[0], operations[index], mesh)
            (unmapped if scope_holder is None else claimed[scope_holder]).append(index)
            at_scope = [m for m in sites[scope_holder].marks if m.scope == key[0]] if scope_holder is not None else []
            found = _fitting(at_scope, operations[index], mesh, inputs=False)
            if found is not None:  # a library op's record: no instruction's operands are its inputs
                placed[index] = replace(found, operand_dims=())
    kernels = tuple(
        Kernel(
            site.name,
            tuple(sorted(claimed[s])),
            flops_of(operations, claimed[s]),
            site.traffic_bytes,
            site.footprint_bytes,
            site.executions,
            _scopes(site, operations, claimed[s]),
            kind=site.kind,
            source=site.source,
            compiled_flops_by_dtype={dtype: flops * site.executions for dtype, flops in site.compiled_flops.items()},
            compiled_contraction=site.contraction,
            compiled_traits=site.traits,
        )
        for s, site in enumerate(sites)
    )
    duplicated = tuple((index, tuple(names)) for index, names in sorted(also_in.items()))
    return kernels, tuple(sorted(unmapped)), duplicated


def _scopes(site: Site, operations: Sequence[Operation], indices: Sequence[int]) -> tuple[str, ...]:
    """The scopes a kernel serves: its instructions' and its records' (a kernel XLA made
    without metadata serves the scopes of the records it computes)."""
    found = dict.fromkeys(site.scopes())
    for index in sorted(indices):
        scope = operations[index].scope
        if scope:
            found.setdefault(scope)
    return tuple(found)


def fits(mark: Mark, op: Operation, mesh: Sequence[int] = (), inputs: bool = True) -> bool:
    """Whether ``mark``'s result is ``op``'s output, by size — or, in a module partitioned over a
    mesh of these axis sizes, one device's share of it (``sharded.holds_share``; with operands
    that are its inputs' shares too, unless ``inputs`` is False). A mark inside a ``shard_map``
    holds per-device shapes, as its record does: only its own size fits."""
    if mark.nbytes is None:
        return False
    if mark.nbytes == op.output_bytes:
        return True
    return bool(mesh) and not mark.per_device and holds_share(mark, op, mesh, inputs)


def _fitting(marks: Sequence[Mark], op: Operation, mesh: Sequence[int], inputs: bool = True) -> Mark | None:
    """The first of ``marks`` that computes and fits ``op``, else the first that fits."""
    found = [mark for mark in marks if fits(mark, op, mesh, inputs)]
    return next((mark for mark in found if mark.computes), found[0] if found else None)


def element_counts(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """The element counts of these array shapes, smallest first: an instruction's operands or a
    record's inputs, compared whatever their layout or order (``Mark.operand_sizes``)."""
    return tuple(sorted(math.prod(shape) for shape in shapes))


def _match(
    op: Operation, marks: Sequence[Mark], executions: int, mesh: Sequence[int] = ()
) -> tuple[bool, bool, bool, bool]:
    """How well instructions of a kernel that runs ``executions`` times fit record ``op``: by
    output size (``fits``), then by its inputs' sizes against an instruction's operands' (``x @ wx
    + h @ wh``: two dots of one line and output size, once given in program order to each other's
    kernels), then by the user's line (a record whose name another shares carries
    it as ``source``), then by count (a function called before a loop and inside it makes
    records of one key that run once and ``trips`` times, as do their kernels)."""
    source = op.attrs.get("source")
    inputs = element_counts(op.inputs)
    return (
        any(fits(m, op, mesh) for m in marks),
        any(fits(m, op, mesh) and m.operand_sizes == inputs for m in marks),
        source is not None and any(m.source == source for m in marks),
        op.count == executions,
    )


def _take(
    queue: deque[int], operations: Sequence[Operation], mark: Mark, executions: int, mesh: Sequence[int]
) -> int | None:
    """The record in ``queue`` (the first ``_LOOKAHEAD``) of ``mark``'s size that best fits it,
    the earliest of equals, taken out of the queue; None when none has its size (XLA split
    ``x / y`` into ``1 / y`` and a multiply, or changed a dtype): pass 2 places the record where
    it fits best of all the kernels holding its key, never the first to ask."""
    best, best_score = None, (False, False, False, False)
    for position, index in enumerate(queue):
        if position >= _LOOKAHEAD:
            break
        score = _match(operations[index], (mark,), executions, mesh)
        if score[0] and (best is None or score > best_score):
            best, best_score = position, score
            if all(score):
                break
    if best is None:
        return None
    index = queue[best]
    del queue[best]
    return index


def _holder(sites: Sequence[Site], holders: dict[int, list[Mark]], op: Operation, mesh: Sequence[int]) -> int:
    """The kernel holding ``op``'s key that best fits it, the earliest of equals (XLA duplicated
    a producer into several fusions, or folded two equations into one instruction)."""
    best, best_score = -1, (False, False, False, False, False)
    for s, marks in holders.items():  # a contraction's record: a kernel computing one of its key first
        computes = op.name not in CONTRACTIONS or any(mark.computes for mark in marks)
        score = (computes, *_match(op, marks, sites[s].executions, mesh))
        if best < 0 or score > best_score:
            best, best_score = s, score
    return best


def orphan_of(
    sites: Sequence[Site],
    claimed: list[list[int]],
    op: Operation,
    mesh: Sequence[int] = (),
    computes: Callable[[Site], bool] | None = None,
    by_size: bool = True,
) -> int | None:
    """A kernel XLA made without metadata (a backward convolution it rewrote, alone or in a fusion:
    XLA:CPU's ``ynn_fusion`` of a 1×1 layer's filter gradient) that computes what ``op`` computes:
    its heaviest contraction does ``op``'s primitive and its result has ``op``'s size (or one
    device's share of it, ``fits``) — the first whose operands also have its inputs' sizes, else
    the first of its size (two layers' filter gradients, 960→160 and 160→960, share a size) that
    computes at most ``COMPILED_EXCESS`` times the record's FLOPs. ``computes``: whether a site
    computes ``op``'s kind (by default, a JAX record's primitive: ``CONTRACTION_OPCODES``);
    ``by_size=False`` takes operand sizes only (TensorFlow's, whose node names say no primitive)."""
    inputs, sized = element_counts(op.inputs), None
    for s, site in enumerate(sites):
        primitive = CONTRACTION_OPCODES.get(site.contraction or site.kind, ())
        if not (op.name in primitive if computes is None else computes(site)) or site.marks or claimed[s]:
            continue
        if site.result_bytes == op.output_bytes and site.operand_sizes == inputs:
            return s
        own_fits = site.own is not None and fits(site.own, op, mesh)
        # by size alone, only one that does about the record's work: XLA's dense depthwise filter
        # gradient (C·9·C outputs) has a 3×3 C→C layer's filter gradient's size and C× its work
        alike = sum(site.compiled_flops.values()) <= COMPILED_EXCESS * op.cost.flops
        if by_size and sized is None and alike and (site.result_bytes == op.output_bytes or own_fits):
            sized = s
    return sized


def _fused_contraction(
    sites: Sequence[Site], claimed: list[list[int]], operations: Sequence[Operation], op: Operation
) -> int | None:
    """The kernel running a contraction record no instruction names (pass 3): one whose heaviest contraction
    computes ``op``'s primitive without metadata, whose contractions do the record's FLOPs over all its executions
    (within 1%), and which holds no contraction record yet. XLA:CPU fuses ``jax.nn.dot_product_attention``'s scores
    (q·kᵀ) with the softmax into one YNNPACK fusion whose ``dot`` carries no ``op_name``: the record had been
    unmapped, scored apart while that fusion read as a reduction. None for any other record."""
    work = op.cost.flops * op.count
    if op.name not in CONTRACTIONS or not work:
        return None
    for s, site in enumerate(sites):
        if op.name not in CONTRACTION_OPCODES.get(site.contraction or "", ()):
            continue
        if any(operations[i].name in CONTRACTIONS for i in claimed[s]):
            continue
        if abs(sum(site.compiled_flops.values()) * site.executions - work) <= 0.01 * work:
            return s
    return None


#: Library ops the JAX walker folds from their equations' dataflow (``composites.INLINE``), never by name.
_LIBRARY = frozenset(name for name, _, _ in INLINE)


def _scope_holder(
    sites: Sequence[Site], explained: list[set[int]], scope: str | None, op: Operation, mesh: Sequence[int]
) -> int | None:
    """The kernel a library op's record at ``scope`` goes to (pass 3): the first with a computing instruction at that
    scope no record explains, else the first with any instruction there. At the top level (``scope`` None: a
    ``jax.nn.softmax`` called in the jitted function itself) every kernel has instructions there, so only a library
    op matched from its equations (``composites.INLINE``: its equations carry no name of its own) is placed, and only
    by an unexplained computing instruction — the first kernel whose unexplained instructions hold one of the
    record's output size, else the first — whose instructions then count as explained (a second library op goes to
    another kernel); a primitive XLA folded away (a softmax's ``max`` with its initial value) stays unmapped."""
    fallback, unexplained = None, []
    for s, site in enumerate(sites):
        for m, mark in enumerate(site.marks):
            if mark.scope == scope:
                if m not in explained[s] and mark.computes:
                    if scope is not None:
                        return s
                    unexplained.append(s)
                    break
                fallback = s if fallback is None else fallback
    if scope is not None:
        return fallback
    if not unexplained or op.name not in _LIBRARY:
        return None

    def free(s: int) -> list[Mark]:
        return [mark for m, mark in enumerate(sites[s].marks) if mark.scope is None and m not in explained[s]]

    chosen = next((s for s in unexplained if _fitting(free(s), op, mesh, inputs=False)), unexplained[0])
    explained[chosen].update(m for m, mark in enumerate(sites[chosen].marks) if mark.scope is None)
    return chosen


def flops_of(operations: Sequence[Operation], indices: Sequence[int]) -> dict[str, int]:
    """FLOPs by dtype of the records ``indices`` names, each × its count (a kernel's)."""
    flops: dict[str, int] = {}
    for index in indices:
        op = operations[index]
        for dtype, value in op.cost.flops_by_dtype.items():
            flops[dtype] = flops.get(dtype, 0) + value * op.count
    return flops
