"""Which of our records each XLA kernel of a ``jit_compile`` TensorFlow function executes.

tf2xla writes into every HLO instruction's metadata the TensorFlow node it lowers
(``op_type="Relu" op_name="dense/Relu"``). The ``op_name`` is the node's name as the
compiled function graph has it (read from TensorFlow 2.21's optimized HLO):

- a function call (``PartitionedCall``, ``StatefulPartitionedCall``) is inlined, its body's
  nodes prefixed with the call's name: ``PartitionedCall/Sin``;
- a conditional's branches likewise, with the ``If``/``Case`` node's name: ``cond/cond/Exp``
  (the ``If`` named ``cond``, the branch's node ``cond/Exp``);
- a ``While``'s condition and body are compiled as functions of their own: their nodes keep
  their bare names (``while/add``), whatever calls the loop; the loop itself is the ``while``
  instruction named like the node, with the prefix of where it stands;
- XLA joins the names of instructions it merges with ``;`` (``Cos;while/PartitionedCall/Cos``).

The walker computes that same name for every graph op it lowers (``Walker.hlo_prefix``), so
each record carries the names of the graph ops it was lowered from: one, or each op of a
library op folded into one record (``composites``).

Records are assigned in program order. A record's candidate kernels are those holding an
instruction carrying one of its names (a fusion's instructions, nested fusions included, or
the kernel instruction itself). It goes to the candidate that fits best: one holding an
unclaimed instruction of its name that computes (not a broadcast, constant or reshape that
only carries the name) with the record's output size; then a kernel executed as often as the
record (the nodes of two loop bodies can share a name: ``while/add``); then one holding any
unclaimed computing instruction of its name; then any computing one; the earliest of equals
(XLA duplicated a producer into several fusions: it counts its FLOPs in the first). It claims
that instruction — unless no convolution of its name computes its output size and one XLA made
without metadata does (a ``Conv2DBackpropFilter`` rewritten into a
convolution naming no node, its name left on a bitcast in the optimizer's fusion): that kernel
takes it (whether or not an instruction carries its names). A record whose names no instruction
carries — XLA folded the op away (a constant expression, a cast to the same type, a transpose
folded into a dot's layout) — is otherwise unmapped. Every record lands in exactly one kernel or in ``unmapped``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ...core.kernels import Kernel
from ...core.records import Operation
from .._jax.hlo_map import Site, orphan_of

__all__ = ["assign", "parse_tf_op_name"]

Slot = tuple[int, str]  # (kernel position, op_name)


def parse_tf_op_name(op_name: str) -> tuple[str | None, tuple[str, ...]]:
    """``(None, names)``: a TensorFlow ``op_name`` is the node's full name, no scope to read
    apart; instructions XLA merged carry their names joined by ``;``."""
    return None, tuple(name for name in op_name.split(";") if name)


def assign(
    sites: Sequence[Site], operations: Sequence[Operation], names: Sequence[tuple[str, ...]]
) -> tuple[tuple[Kernel, ...], tuple[int, ...], tuple[tuple[int, tuple[str, ...]], ...]]:
    """``(kernels, unmapped record indices, split)``: ``names[i]`` are record ``i``'s op_names;
    ``split`` lists ``(record, the other kernels computing an instruction of its name)``."""
    holders: dict[str, list[int]] = defaultdict(list)  # op_name → kernels holding it, in order
    open_sizes: dict[Slot, list[int | None]] = {}  # unclaimed computing instructions' result bytes
    computes: set[Slot] = set()
    for s, site in enumerate(sites):
        for mark in site.marks:
            for name in mark.names:
                slot = (s, name)
                if slot not in open_sizes:
                    holders[name].append(s)
                    open_sizes[slot] = []
                if mark.computes:
                    open_sizes[slot].append(mark.nbytes)
                    computes.add(slot)
    claimed: list[list[int]] = [[] for _ in sites]
    owner: dict[str, list[tuple[int, int]]] = defaultdict(list)  # op_name → (record, its kernel)
    unmapped: list[int] = []
    for index, op in enumerate(operations):
        best: Slot | None = None
        best_score = (False, False, False, False)
        computed_here = False  # a convolution of its name and size runs it: no orphan is looked for
        for name in dict.fromkeys(names[index]):
            for s in holders.get(name, ()):
                sizes = open_sizes[(s, name)]
                score = (op.output_bytes in sizes, sites[s].executions == op.count, bool(sizes), (s, name) in computes)
                computed_here = computed_here or (score[0] and sites[s].kind in _CONTRACTION_KINDS)
                if best is None or score > best_score:
                    best, best_score = (s, name), score
        orphan = None if computed_here else _orphan(sites, claimed, op)
        if orphan is not None:  # a gradient XLA rewrote into a convolution without metadata
            claimed[orphan].append(index)
            continue
        if best is None:
            unmapped.append(index)
            continue
        sizes = open_sizes[best]
        if sizes:
            sizes.remove(op.output_bytes if op.output_bytes in sizes else sizes[0])
        claimed[best[0]].append(index)
        owner[best[1]].append((index, best[0]))
    split: dict[int, list[str]] = defaultdict(list)
    for (s, name), sizes in open_sizes.items():  # a computing instruction no record claimed
        for index, kernel in owner.get(name, ())[-1:] if sizes else ():
            if kernel != s and sites[s].name not in split[index]:
                split[index].append(sites[s].name)
    kernels = tuple(
        Kernel(
            site.name,
            tuple(sorted(claimed[s])),
            traffic_bytes=site.traffic_bytes,
            footprint_bytes=site.footprint_bytes,
            executions=site.executions,
            scopes=tuple(dict.fromkeys(scope for i in sorted(claimed[s]) if (scope := operations[i].scope))),
            kind=site.kind,
            compiled_flops_by_dtype={dtype: flops * site.executions for dtype, flops in site.compiled_flops.items()},
            compiled_contraction=site.contraction,
            compiled_traits=site.traits,
        )
        for s, site in enumerate(sites)
    )
    return kernels, tuple(unmapped), tuple((i, tuple(n)) for i, n in sorted(split.items()) if n)


#: Kernels that run a contraction: a record there of its size is where it was computed.
_CONTRACTION_KINDS = frozenset({"convolution", "dot", "custom-call"})


def _orphan(sites: Sequence[Site], claimed: list[list[int]], op: Operation) -> int | None:
    """A convolution XLA made without metadata (alone or in a fusion) that computes what ``op``
    computes — its result has ``op``'s size and its operands its inputs' (a depthwise layer's filter
    gradient may have a 1×1 layer's filter's size): ``hlo_map.orphan_of`` by operand sizes only, for
    a ``conv`` record (a matmul's gradients keep their nodes' names: a dot of a square layer's size
    in a fusion is no orphan). A ``Conv2DBackpropFilter`` is rewritten into a convolution that
    names no node, while the optimizer's fusion that reads its result carries the node's name
    (on a bitcast, or on the multiply that reads it)."""
    if op.kind != "conv":
        return None
    return orphan_of(sites, claimed, op, computes=lambda site: (site.contraction or site.kind) == "convolution",
                     by_size=False)  # fmt: skip
