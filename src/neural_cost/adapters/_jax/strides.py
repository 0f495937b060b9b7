"""A loop fusion that computes and reads an operand across its layout (``core.kernels.STRIDED_READS``).

XLA:CPU runs a loop fusion as one loop over its result in the result's layout, its minor-most dim fastest. Where the
fusion transposes what it reads (a ``transpose``, a ``copy`` into another layout), consecutive result elements read
an operand ``stride`` bytes apart; at a cache line (``LINE_BYTES``) or more, each read loads a line to use one of its
elements, and the line's next element is used only when the loop comes back to it — after as many lines as the
result elements it runs through before that operand's own minor-most dim moves on (``reuse``). Where those lines
outgrow a cache, each element costs a line from the level beyond it. On a 2-core VM (XLA:CPU 0.10.2, f32):

- ``relu(x·a + y)`` over 32 × 32² × 32 took 331 µs; the same fusion transposed (3, 1, 2, 0) (a channel ↔ batch swap,
  as a filter gradient's operand is laid out) 2,544 µs; transposed (0, 3, 1, 2) 839 µs (its lines come back after
  64 kB a read operand);
- the transposes alone, fusions that compute nothing, took 296–359 µs: XLA:CPU copies those another way, so a fusion
  is read here only where it computes (an elementwise or transcendental opcode on the path to a read operand).

A Flax ResNet's training step recomputes three batch norms and ReLUs into such a fusion before each filter gradient:
its twelve ran 30.6 ms (profiled) where the pointwise curve read 2.1. What is read: the fused computation's
instructions from its root back to its parameters through pointwise opcodes, copies, transposes and bitcasts that
keep the shape; a parameter reached through a ``broadcast`` (a channel's scale) is small and read in place. A dim's
stride comes from the operand's layout (``{3,2,1,0}``: minor-most first); what a line's elements along another dim
cost, and the cache's sets (a power-of-two stride maps a column to a few of them), is not modeled: the class's
curve (``elementwise:transposed``, calibrated) carries it.
"""

from __future__ import annotations

import math
import re

from ...core.kernels import opcodes_kind
from .hlo_text import HloModule, Instruction, arrays, shape_bytes

__all__ = ["LINE_BYTES", "strided_reads"]

#: A cache line: x86-64's and most Arm cores' (Apple's M-series: 128 B; read here as 64, a lower bound on its cost).
LINE_BYTES = 64
_LAYOUT = re.compile(r"\]\{([\d,]*)")
#: Opcodes through which a result element reads its operands' same element (their shapes' dims the same).
_SAME_ELEMENT = frozenset({"copy", "bitcast", "reshape"})


def layout(shape: str) -> tuple[int, ...] | None:
    """One array's layout, minor-most dim first (``f32[8,4]{0,1}``: (0, 1)); the default (the last dim minor-most)
    where none is printed; None for a tuple or a scalar's empty one."""
    found = arrays(shape)
    if len(found) != 1 or shape.startswith("("):
        return None
    rank = len(found[0][1])
    match = _LAYOUT.search(shape)
    if match is None:
        return tuple(reversed(range(rank)))
    dims = tuple(int(d) for d in match.group(1).split(",") if d.strip())
    return dims if sorted(dims) == list(range(rank)) else None


def _reads(module: HloModule, computation: str) -> tuple[list[tuple[Instruction, tuple[int, ...]]], bool]:
    """The parameters the fused computation's root reads element for element, each with the dim of it each root dim
    is (``dims[i]``: root dim i), and whether a pointwise opcode lies on the way."""
    instructions = module.computations.get(computation, ())
    defined = {instruction.name: instruction for instruction in instructions}
    root = module.root(computation)
    if root is None or not arrays(root.shape) or root.shape.startswith("("):
        return [], False
    rank = len(arrays(root.shape)[0][1])
    found: dict[str, tuple[Instruction, tuple[int, ...]]] = {}
    computes, pending, seen = False, [(root, tuple(range(rank)))], set()
    while pending:
        instruction, dims = pending.pop()
        if (instruction.name, dims) in seen:
            continue
        seen.add((instruction.name, dims))
        if instruction.opcode == "parameter":
            found.setdefault(instruction.name, (instruction, dims))
            continue
        kind = opcodes_kind({instruction.opcode.replace("-", "_")})
        pointwise = kind in ("elementwise", "transcendental")
        if instruction.opcode == "transpose" and instruction.permutation is not None:
            follow = [(instruction.operands[0], tuple(instruction.permutation[d] for d in dims))]
        elif pointwise or instruction.opcode in _SAME_ELEMENT:
            computes = computes or pointwise
            follow = [(operand, dims) for operand in instruction.operands]
        else:  # a broadcast's operand is small, a reduction's or a slice's another reading: not followed
            continue
        shape = arrays(instruction.shape)[0][1] if arrays(instruction.shape) else None
        for name, mapped in follow:
            operand = defined.get(name)
            if operand is None or not arrays(operand.shape):
                continue
            same = arrays(operand.shape)[0][1] == shape if instruction.opcode != "transpose" else True
            if same:  # a reshape or a mixed-rank operand is another element's: not followed
                pending.append((operand, mapped))
    return list(found.values()), computes


def strided_reads(module: HloModule, kernel: Instruction) -> tuple[int, int] | None:
    """``(extra, reuse)`` bytes per execution of a loop fusion that computes and reads an operand of its result's
    element count with a stride of ``LINE_BYTES`` or more along the result's minor-most dim (the module docstring):
    ``extra``, a line per element read less the operands' bytes; ``reuse``, the lines those reads touch before
    each comes back. None for any other kernel."""
    if kernel.opcode != "fusion" or not kernel.calls("calls"):
        return None
    computation = kernel.calls("calls")[0]
    root = module.root(computation)
    order = layout(root.shape) if root is not None else None
    if root is None or not order:  # a tuple's, a scalar's
        return None
    reads, computes = _reads(module, computation)
    sizes = arrays(root.shape)[0][1]
    extra = reuse = 0
    for parameter, dims in reads:
        own, own_order = arrays(parameter.shape), layout(parameter.shape)
        if not own or own_order is None or len(own[0][1]) != len(dims):
            continue
        elements = math.prod(own[0][1])
        if elements != math.prod(sizes) or not elements:
            continue
        element = shape_bytes(parameter.shape) / elements
        along = dims[order[0]]  # the operand's dim the result's minor-most walks
        stride = math.prod(own[0][1][d] for d in own_order[: own_order.index(along)]) * element
        if stride < LINE_BYTES:
            continue
        extra += elements * LINE_BYTES - shape_bytes(parameter.shape)
        back = dims.index(own_order[0])  # the result dim that moves the operand's minor-most dim on
        reuse += math.prod(sizes[d] for d in order[: order.index(back)]) * LINE_BYTES
    return (int(extra), int(reuse)) if extra and computes else None
