"""The work a compiled kernel's own contractions do, read from their HLO shapes.

A kernel's FLOPs are our records' (``core/kernels.py``); what XLA compiled may do more. On a
CPU, XLA computes a depthwise convolution's filter gradient as a dense convolution over every
channel pair (``f32[960,3,3,960]`` for a 960-channel layer: 960× the layer's work) and then
selects its diagonal; neither instruction carries metadata, so no record is theirs. The expected
time reads such a kernel's work from here (``analysis/expected.py``); the bound does not: it is
the program's work, and the gap is the compiler's.

Counted as the records count (``ARCHITECTURE.md``): a multiply-add is 2 FLOPs, every tap of a
convolution's kernel at every output position (padding included), so a convolution XLA runs as
traced reads the same here as its record. Per output element a ``convolution`` sums over its
kernel's elements less its output-feature dim (input features per group × taps; a batch-grouped
one's output batch is its input's ÷ the groups, each output reading one group) and a ``dot`` over
its left operand's ``lhs_contracting_dims``. An input-dilated convolution (a strided layer's input
gradient) counts its outputs ÷ the dilation: the taps that fall between input elements multiply
nothing, as the transposed convolution's record counts its input positions × taps. A contraction
whose result is no single array of a type ``ELEMENT_DTYPES`` names, or whose operand is not
defined in its computation, is not read.
"""

from __future__ import annotations

import math

from .hlo_text import ELEMENT_DTYPES, HloModule, Instruction, arrays

__all__ = ["KernelWork", "contraction_flops", "kernel_work"]

#: The opcodes whose work is read.
_CONTRACTIONS = ("convolution", "dot")


def contraction_flops(instruction: Instruction, defined: dict[str, Instruction]) -> tuple[str, int] | None:
    """``(dtype, FLOPs)`` of one ``convolution`` or ``dot`` (the module docstring), else None."""
    result = arrays(instruction.shape)
    if len(result) != 1 or result[0][0] not in ELEMENT_DTYPES or not instruction.operands:
        return None
    element, dims = result[0]
    if instruction.opcode == "convolution" and instruction.kernel_labels and len(instruction.operands) == 2:
        kernel = defined.get(instruction.operands[1])
        found = arrays(kernel.shape) if kernel is not None else []
        labels = instruction.kernel_labels
        if len(found) != 1 or len(found[0][1]) != len(labels) or "o" not in labels:
            return None
        taps = math.prod(found[0][1]) // max(1, found[0][1][labels.index("o")])
        return ELEMENT_DTYPES[element], 2 * math.prod(dims) * taps // instruction.lhs_dilation
    elif instruction.opcode == "dot" and instruction.contracting is not None:
        lhs = defined.get(instruction.operands[0])
        found = arrays(lhs.shape) if lhs is not None else []
        if len(found) != 1 or any(d >= len(found[0][1]) for d in instruction.contracting):
            return None
        taps = math.prod(found[0][1][d] for d in instruction.contracting)
    else:
        return None
    return ELEMENT_DTYPES[element], 2 * math.prod(dims) * taps


class KernelWork:
    """What one kernel's contractions compute per execution: FLOPs by dtype, and the opcode of
    the heaviest (``convolution`` or ``dot``; None without any)."""

    __slots__ = ("_heaviest", "flops_by_dtype", "opcode")

    def __init__(self) -> None:
        self.flops_by_dtype: dict[str, int] = {}
        self.opcode: str | None = None
        self._heaviest = 0

    def add(self, opcode: str, dtype: str, flops: int) -> None:
        self.flops_by_dtype[dtype] = self.flops_by_dtype.get(dtype, 0) + flops
        if flops > self._heaviest:
            self.opcode, self._heaviest = opcode, flops


def kernel_work(module: HloModule, kernel: Instruction, defined: dict[str, Instruction]) -> KernelWork:
    """The contractions ``kernel`` runs: itself, or those of a fusion's computations (nested
    fusions included), each read against its own computation's definitions."""
    work = KernelWork()
    _add(work, kernel, defined)
    if kernel.opcode == "fusion":
        _fused(module, kernel.calls("calls"), work, set())
    return work


def _add(work: KernelWork, instruction: Instruction, defined: dict[str, Instruction]) -> None:
    if instruction.opcode in _CONTRACTIONS:
        found = contraction_flops(instruction, defined)
        if found is not None:
            work.add(instruction.opcode, *found)


def _fused(module: HloModule, computations: tuple[str, ...], work: KernelWork, seen: set[str]) -> None:
    for name in computations:
        if name in seen:
            continue
        seen.add(name)
        instructions = module.computations.get(name, ())
        defined = {i.name: i for i in instructions}
        for instruction in instructions:
            _add(work, instruction, defined)
            if instruction.opcode == "fusion":
                _fused(module, instruction.calls("calls"), work, seen)
