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
gradient) counts each input element (less its feature dim) × every element of its kernel, as a
transposed convolution's record counts its input positions × taps: the taps that fall between
input elements multiply nothing. FLOPs are charged at the left operand's type, as a record's
are (a bf16 dot that accumulates in f32 is bf16 work). A contraction whose result or operands are
no single arrays, whose left operand's type ``ELEMENT_DTYPES`` does not name, or whose operand is
not defined in its computation is not read; nor is a custom call's work (a oneDNN or cuBLAS call:
XLA:CPU's and XLA:GPU's library contractions), nor an instruction inside an ``async-start``.
"""

from __future__ import annotations

import math

from ...core.kernels import BODY, SLICED_DYNAMIC_SLICE, STRIDED_READS, VARIADIC_WINDOW, named_opcodes, opcodes_kind
from .hlo_text import ELEMENT_DTYPES, HloModule, Instruction, arrays
from .strides import strided_reads

__all__ = ["KernelWork", "contraction_flops", "kernel_work"]

#: The opcodes whose work is read.
_CONTRACTIONS = ("convolution", "dot")


def contraction_flops(instruction: Instruction, defined: dict[str, Instruction]) -> tuple[str, int] | None:
    """``(dtype, FLOPs)`` of one ``convolution`` or ``dot`` (the module docstring), else None."""
    result = arrays(instruction.shape)
    operands = [defined.get(name) for name in instruction.operands[:2]]
    shapes = [arrays(operand.shape) if operand is not None else [] for operand in operands]
    if len(result) != 1 or len(shapes) != 2 or any(len(shape) != 1 for shape in shapes):
        return None
    (element, lhs), (_, rhs) = shapes[0][0], shapes[1][0]
    if element not in ELEMENT_DTYPES:  # charged at its input's type, as a record is
        return None
    if instruction.opcode == "convolution" and instruction.conv_labels is not None:
        inputs, kernel = instruction.conv_labels
        if len(inputs) != len(lhs) or len(kernel) != len(rhs) or "o" not in kernel or "f" not in inputs:
            return None
        taps = math.prod(rhs) // max(1, rhs[kernel.index("o")])  # input features per group × kernel taps
        if instruction.lhs_dilated:  # each input element × every tap, as a transposed record counts
            return ELEMENT_DTYPES[element], 2 * math.prod(lhs) // max(1, lhs[inputs.index("f")]) * math.prod(rhs)
        return ELEMENT_DTYPES[element], 2 * math.prod(result[0][1]) * taps
    if instruction.opcode == "dot" and instruction.contracting is not None:
        if any(d >= len(lhs) for d in instruction.contracting):
            return None
        return ELEMENT_DTYPES[element], 2 * math.prod(result[0][1]) * math.prod(lhs[d] for d in instruction.contracting)
    return None


class KernelWork:
    """What one kernel's contractions compute per execution: FLOPs by dtype, and the opcode of
    the heaviest (``convolution`` or ``dot``; None without any); and the ways its fused code runs
    that its records do not say (``Kernel.compiled_traits``)."""

    __slots__ = ("_heaviest", "flops_by_dtype", "opcode", "traits")

    def __init__(self) -> None:
        self.flops_by_dtype: dict[str, int] = {}
        self.opcode: str | None = None
        self._heaviest = 0
        self.traits: set[str] = set()

    def add(self, opcode: str, dtype: str, flops: int) -> None:
        self.flops_by_dtype[dtype] = self.flops_by_dtype.get(dtype, 0) + flops
        if flops > self._heaviest:
            self.opcode, self._heaviest = opcode, flops


def kernel_work(module: HloModule, kernel: Instruction, defined: dict[str, Instruction]) -> KernelWork:
    """The contractions ``kernel`` runs: itself, or those of a fusion's computations (nested
    fusions included), each read against its own computation's definitions."""
    work = KernelWork()
    _add(work, kernel, defined)
    _variadic_window(work, kernel)
    if kernel.opcode == "fusion":
        _fused(module, kernel.calls("calls"), work, set())
        strided = strided_reads(module, kernel)
        if strided is not None:
            work.traits.add(f"{STRIDED_READS}{strided[0]}:{strided[1]}")
        if named_opcodes(kernel.name) is None:  # a library's fusion (ynn_fusion): what its body does, when it says
            kind = opcodes_kind(_body_opcodes(module, kernel.calls("calls"), set()))
            if kind is not None:
                work.traits.add(BODY + kind)
    return work


#: Opcodes that compute nothing: a fused computation's operands, constants and tuples.
_INERT = frozenset({"parameter", "constant", "tuple", "get-tuple-element"})


def _body_opcodes(module: HloModule, computations: tuple[str, ...], seen: set[str]) -> set[str]:
    """The opcodes of fused computations (nested fusions' included; a reduction's combiner is not read), ``-``
    spelled ``_`` as fusions' names spell them."""
    found: set[str] = set()
    for name in computations:
        if name in seen:
            continue
        seen.add(name)
        for instruction in module.computations.get(name, ()):
            if instruction.opcode == "fusion":
                found |= _body_opcodes(module, instruction.calls("calls"), seen)
            elif instruction.opcode not in _INERT:
                found.add(instruction.opcode.replace("-", "_"))
    return found


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
        if _sliced_dynamic_slice(instructions):
            work.traits.add(SLICED_DYNAMIC_SLICE)
        for instruction in instructions:
            _add(work, instruction, defined)
            _variadic_window(work, instruction)
            if instruction.opcode == "fusion":
                _fused(module, instruction.calls("calls"), work, seen)


def _variadic_window(work: KernelWork, instruction: Instruction) -> None:
    """A ``reduce-window`` of several arrays (its result a tuple): ``VARIADIC_WINDOW``."""
    if instruction.opcode == "reduce-window" and instruction.shape.startswith("("):
        work.traits.add(VARIADIC_WINDOW)


#: Opcodes that read their operand's elements as they are (a view): a slice of one is a slice of it.
_VIEWS = frozenset({"bitcast", "reshape"})


def _sliced_dynamic_slice(instructions: tuple[Instruction, ...]) -> bool:
    """Whether a fused computation reads one ``dynamic-slice`` (directly or through bitcasts and
    reshapes) with two or more ``slice`` instructions (``SLICED_DYNAMIC_SLICE``)."""
    users: dict[str, list[Instruction]] = {}
    for instruction in instructions:
        for operand in dict.fromkeys(instruction.operands):
            users.setdefault(operand, []).append(instruction)
    for instruction in instructions:
        if instruction.opcode != "dynamic-slice":
            continue
        slices, pending = 0, [instruction.name]
        while pending:
            for user in users.get(pending.pop(), ()):
                if user.opcode == "slice":
                    slices += 1
                elif user.opcode in _VIEWS:
                    pending.append(user.name)
        if slices >= 2:
            return True
    return False
