"""Read the text of an optimized HLO module (``compiled.as_text()``) into plain records.

Only what the kernel reader needs: each computation's instructions with their result bytes,
operands, called computations, ``op_name`` metadata, stack frame and a while loop's
``known_trip_count``; and the module's stack-frame tables, for the user's file and line.

What jaxlib 0.10.2's text carries (read 2026): ``metadata={op_name="jit(f)/layer1/add"
stack_frame_id=2}`` — no ``source_file``/``source_line`` fields; file and line come from the
module's ``FileNames``/``FileLocations``/``StackFrames`` tables printed before the computations.
A while loop XLA has analysed carries ``backend_config={..."known_trip_count":{"n":"10"}}``.
Operands are printed by name only (``add(%a, %b)``); older versions print each operand's shape
before its name, which this reader also accepts (operand bytes always come from the operand's
own defining instruction).

A collective's group size (``Instruction.group_size``: how many devices take part) is read from
its ``replica_groups`` in each syntax XLA prints — explicit ``{{0,1,2,3},{4,5,6,7}}``, iota
``[2,4]<=[8]`` (2 groups of 4; a ``T(...)`` transpose changes members, not sizes), and the mesh
form jaxlib 0.10.2 prints for SPMD partitioned programs, ``mesh['axis_0'=8,'axis_1'=1]
{'axis_0'}`` (the product of the named axes' sizes; a sub-axis ``'a':(2)4`` is 4 wide) — and, for
the explicit and iota forms, XLA's group modes: an all-reduce, all-gather or reduce-scatter with
a ``channel_id`` but without ``use_global_device_ids=true`` groups replicas across every
partition (× ``num_partitions``), and an empty ``{}`` is every replica, partition or device by
the same modes. A ``collective-permute``'s group is the devices its ``source_target_pairs`` name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = [
    "COLLECTIVE_OPCODES", "ELEMENT_DTYPES", "HloModule", "Instruction", "arrays", "collective_group_size", "parse_hlo",
    "shape_bytes",
]  # fmt: skip

#: Bits per element of each HLO element type; ``token`` and ``opaque`` hold no data.
_ELEMENT_BITS = {
    "pred": 8, "s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "f4e2m1fn": 4,
    "s8": 8, "u8": 8, "f8e4m3fn": 8, "f8e5m2": 8, "f8e4m3fnuz": 8, "f8e5m2fnuz": 8, "f8e4m3b11fnuz": 8,
    "f8e4m3": 8, "f8e3m4": 8, "f8e8m0fnu": 8,
    "s16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "s32": 32, "u32": 32, "f32": 32,
    "s64": 64, "u64": 64, "f64": 64, "c64": 64,
    "c128": 128, "token": 0, "opaque": 0,
}  # fmt: skip

#: HLO element types as canonical dtype names (a collective of another type is unmodeled; a contraction's
#: FLOPs of another type are not read).
ELEMENT_DTYPES = {
    "pred": "bool", "s4": "int4", "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "u4": "uint4", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "c64": "complex64",
    "c128": "complex128", "f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2",
    "f8e4m3fnuz": "float8_e4m3fnuz", "f8e5m2fnuz": "float8_e5m2fnuz", "f4e2m1fn": "float4_e2m1fn",
}  # fmt: skip

_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([^\]]*)\]")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([^\s(]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([^\s=]+)\s*=\s*(.*)$")
_OPCODE = re.compile(r"([a-z][a-z0-9\-]*)\(")
_OPERAND = re.compile(r"%([^\s,()]+)")
_CALLED = re.compile(
    r"\b(calls|to_apply|condition|body|branch_computations|true_computation|false_computation|"
    r"called_computations)=(\{[^}]*\}|%?[^\s,}]+)"
)
_OP_NAME = re.compile(r'\bop_name="((?:[^"\\]|\\.)*)"')
_FRAME_ID = re.compile(r"\bstack_frame_id=(\d+)")
_SOURCE_FILE = re.compile(r'\bsource_file="((?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"\bsource_line=(\d+)")
_TUPLE_INDEX = re.compile(r"\bindex=(\d+)")
_DIM_LABELS = re.compile(r"\bdim_labels=([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)")
_LHS_DILATE = re.compile(r"\blhs_dilate=([\dx]+)")
_LHS_CONTRACTING = re.compile(r"\blhs_contracting_dims=\{([\d,\s]*)\}")
_DIMENSIONS = re.compile(r"\bdimensions=\{([\d,\s]*)\}")
_TRIP_COUNT = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)"?')
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
#: Collective opcodes (an asynchronous ``-start`` reads as its collective), as the cost rule names them.
COLLECTIVE_OPCODES = {
    "all-reduce": "all_reduce", "all-gather": "all_gather", "reduce-scatter": "reduce_scatter",
    "all-to-all": "all_to_all", "collective-permute": "permute", "collective-broadcast": "broadcast",
}  # fmt: skip
#: Those whose ``use_global_device_ids`` is a flag: with a channel but without it, groups are replicas.
_GLOBAL_ID_FLAG = frozenset({"all-reduce", "all-gather", "reduce-scatter"})
_MESH_AXIS = re.compile(r"'?([^'=,\s]+)'?=(\d+)")
_SUB_AXIS = re.compile(r":\(\d+\)(\d+)$")


def shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape (``f32[1024]{0}``, a tuple ``(s32[], f32[8,8])``, ``f32[<=16]``
    taken at its bound); sub-byte types round each array up to whole bytes."""
    total = 0
    for element, dims in _ARRAY.findall(shape):
        bits = _ELEMENT_BITS.get(element)
        if bits is None:
            raise ValueError(f"HLO element type {element!r} in shape {shape!r} has no known size")
        count = 1
        for dim in filter(None, (d.strip() for d in dims.split(","))):
            count *= int(dim.lstrip("<="))
        total += (count * bits + 7) // 8
    return total


def arrays(shape: str) -> list[tuple[str, tuple[int, ...]]]:
    """``(element type, dims)`` of each array in an HLO shape (a tuple's in order; bounds taken)."""
    return [
        (element, tuple(int(d.strip().lstrip("<=")) for d in dims.split(",") if d.strip()))
        for element, dims in _ARRAY.findall(shape)
    ]


def collective_group_size(opcode: str, attributes: str, partitions: int = 1, replicas: int = 1) -> int | None:
    """How many devices take part in one group of a collective (the module docstring); None when
    its attributes say nothing readable."""
    base = opcode.removesuffix("-start")
    if base == "collective-permute":
        at = attributes.find("source_target_pairs=")
        if at < 0:
            return None
        pairs = attributes[at + len("source_target_pairs=") :]
        return len(set(re.findall(r"\d+", pairs[: _balanced(pairs, 0)]))) if pairs.startswith("{") else None
    channel = "channel_id=" in attributes
    flag = base in _GLOBAL_ID_FLAG
    across = channel and flag and "use_global_device_ids=true" not in attributes  # replicas × partitions
    at = attributes.find("replica_groups=")
    if at < 0:
        return None
    value = attributes[at + len("replica_groups=") :]
    if value.startswith("{"):
        inner = value[1 : _balanced(value, 0) - 1].strip()
        first = re.match(r"\{([^}]*)\}", inner)
        if first is None:  # {}: every replica, partition or device, by the group mode
            if not channel:
                return replicas
            return partitions if not flag else replicas * partitions
        size = len(re.findall(r"\d+", first.group(1)))
    elif (iota := re.match(r"\[(\d+),(\d+)\]<=", value)) is not None:
        size = int(iota.group(2))
    elif value.startswith("maximal_mesh["):
        return 1
    elif value.startswith("mesh["):
        end = _balanced(value, 4)
        sizes = dict(_MESH_AXIS.findall(value[5 : end - 1]))
        rest = value[end:]
        if rest.startswith(", device_ids=("):
            rest = rest[rest.find("(") :]
            rest = rest[_balanced(rest, 0) :]
        rest = rest.lstrip()
        if not rest.startswith("{"):
            return None
        size = 1
        for axis in filter(None, (a.strip() for a in rest[1 : _balanced(rest, 0) - 1].split(","))):
            sub = _SUB_AXIS.search(axis)
            name = axis[: sub.start()] if sub else axis
            if sub is None and name.strip("'") not in sizes:
                return None
            size *= int(sub.group(1)) if sub else int(sizes[name.strip("'")])
        return size  # mesh axes name devices: no group mode multiplies them
    else:
        return None
    return size * partitions if across else size


@dataclass(frozen=True, slots=True)
class Instruction:
    """One HLO instruction, as far as kernels need it."""

    name: str
    opcode: str
    nbytes: int
    operands: tuple[str, ...]
    #: Called computations by role: ``calls``, ``to_apply``, ``condition``, ``body``, ...
    called: tuple[tuple[str, tuple[str, ...]], ...]
    op_name: str | None
    frame: int | None
    source: str | None
    known_trip_count: int | None
    root: bool
    #: A parameter's number (``parameter(1)``); None for every other opcode.
    parameter_number: int | None = None
    #: A get-tuple-element's ``index=``; None for every other opcode.
    tuple_index: int | None = None
    #: The result's HLO shape as printed (``f32[64,32]{1,0}``, a tuple ``(f32[8], s32[])``).
    shape: str = ""
    #: A collective's devices per group (``collective_group_size``); None for every other opcode.
    group_size: int | None = None
    #: A convolution's input and kernel dims as its ``dim_labels`` name them (``("b01f", "01io")``:
    #: batch, spatial and features; spatial, input and output features); None for every other opcode.
    conv_labels: tuple[str, str] | None = None
    #: Whether a convolution dilates its input (``lhs_dilate=2x2``: a transposed convolution, a
    #: strided layer's input gradient); False for every other opcode.
    lhs_dilated: bool = False
    #: A dot's ``lhs_contracting_dims``; None for every other opcode.
    contracting: tuple[int, ...] | None = None
    #: A transpose's ``dimensions`` (its result's dim i is its operand's dim ``permutation[i]``); None otherwise.
    permutation: tuple[int, ...] | None = None

    def calls(self, role: str) -> tuple[str, ...]:
        for key, names in self.called:
            if key == role:
                return names
        return ()


@dataclass(frozen=True, slots=True)
class HloModule:
    name: str
    entry: str
    computations: dict[str, tuple[Instruction, ...]]
    #: ``stack_frame_id`` → ``file.py:line`` (the frame's own location).
    frames: dict[int, str]
    #: The header's ``num_partitions`` and ``replica_count`` (1 when not printed).
    partitions: int = 1
    replicas: int = 1

    def source(self, instruction: Instruction) -> str | None:
        if instruction.frame is not None and instruction.frame in self.frames:
            return self.frames[instruction.frame]
        return instruction.source

    def root(self, computation: str) -> Instruction | None:
        for instruction in self.computations.get(computation, ()):
            if instruction.root:
                return instruction
        return None


def _balanced(text: str, start: int) -> int:
    """The index just past the bracket group opening at ``text[start]``."""
    depth = 0
    pairs = {"(": ")", "{": "}", "[": "]"}
    closing = set(pairs.values())
    for i in range(start, len(text)):
        char = text[i]
        if char in pairs:
            depth += 1
        elif char in closing:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced brackets in HLO text: {text[start : start + 80]!r}")


def _instruction(line: str, partitions: int = 1, replicas: int = 1) -> Instruction | None:
    match = _INSTRUCTION.match(line)
    if match is None:
        return None
    root, name, rest = bool(match.group(1)), match.group(2), match.group(3)
    end = _balanced(rest, 0) if rest.startswith("(") else rest.find(" ")
    if end < 0:
        return None
    shape, rest = rest[:end], rest[end:].lstrip()
    opcode = _OPCODE.match(rest)
    if opcode is None:
        return None
    open_at = opcode.end() - 1
    close_at = _balanced(rest, open_at)
    operands = tuple(_OPERAND.findall(rest[open_at + 1 : close_at - 1]))
    attributes = rest[close_at:]
    called = tuple(
        (role, tuple(n.lstrip("%") for n in re.split(r"[\s,{}]+", value) if n))
        for role, value in _CALLED.findall(attributes)
    )
    op_name = _OP_NAME.search(attributes)
    frame = _FRAME_ID.search(attributes)
    source_file, source_line = _SOURCE_FILE.search(attributes), _SOURCE_LINE.search(attributes)
    trips = _TRIP_COUNT.search(attributes)
    index = _TUPLE_INDEX.search(attributes)
    collective = opcode.group(1).removesuffix("-start") in COLLECTIVE_OPCODES
    labels = _DIM_LABELS.search(attributes) if opcode.group(1) == "convolution" else None
    contracting = _LHS_CONTRACTING.search(attributes) if opcode.group(1) == "dot" else None
    dilate = _LHS_DILATE.search(attributes) if labels else None
    permutation = _DIMENSIONS.search(attributes) if opcode.group(1) == "transpose" else None
    return Instruction(
        name=name,
        opcode=opcode.group(1),
        nbytes=shape_bytes(shape),
        operands=operands,
        called=called,
        op_name=op_name.group(1).replace('\\"', '"') if op_name else None,
        frame=int(frame.group(1)) if frame else None,
        source=(
            f"{os.path.basename(source_file.group(1))}:{source_line.group(1)}" if source_file and source_line else None
        ),
        known_trip_count=int(trips.group(1)) if trips else None,
        root=root,
        parameter_number=int(rest[open_at + 1 : close_at - 1]) if opcode.group(1) == "parameter" else None,
        tuple_index=int(index.group(1)) if opcode.group(1) == "get-tuple-element" and index else None,
        shape=shape,
        group_size=collective_group_size(opcode.group(1), attributes, partitions, replicas) if collective else None,
        conv_labels=(labels.group(1), labels.group(2)) if labels else None,
        lhs_dilated=dilate is not None and any(int(d) > 1 for d in dilate.group(1).split("x") if d),
        contracting=tuple(int(d) for d in contracting.group(1).split(",") if d.strip()) if contracting else None,
        permutation=tuple(int(d) for d in permutation.group(1).split(",") if d.strip()) if permutation else None,
    )


def _frames(tables: dict[str, list[str]]) -> dict[int, str]:
    files = {int(m[1]): m[2] for line in tables["FileNames"] if (m := re.match(r'\s*(\d+)\s+"(.*)"', line))}
    locations: dict[int, str] = {}
    for line in tables["FileLocations"]:
        found = re.match(r"\s*(\d+)\s+\{.*?file_name_id=(\d+).*?\bline=(\d+)", line)
        if found and int(found[2]) in files:
            locations[int(found[1])] = f"{os.path.basename(files[int(found[2])])}:{found[3]}"
    frames: dict[int, str] = {}
    for line in tables["StackFrames"]:
        found = re.match(r"\s*(\d+)\s+\{.*?file_location_id=(\d+)", line)
        if found and int(found[2]) in locations:
            frames[int(found[1])] = locations[int(found[2])]
    return frames


def parse_hlo(text: str) -> HloModule:
    """The module in ``text``, or ValueError saying what could not be read."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("HloModule"):
        raise ValueError("the text does not start with 'HloModule': not an HLO module")
    name = lines[0].split()[1].rstrip(",")
    partitions_found = re.search(r"\bnum_partitions=(\d+)", lines[0])
    replicas_found = re.search(r"\breplica_count=(\d+)", lines[0])
    partitions = int(partitions_found.group(1)) if partitions_found else 1
    replicas = int(replicas_found.group(1)) if replicas_found else 1
    computations: dict[str, tuple[Instruction, ...]] = {}
    tables: dict[str, list[str]] = {table: [] for table in _TABLES}
    entry: str | None = None
    current: list[Instruction] | None = None
    current_name = ""
    table: str | None = None
    for line in lines[1:]:
        stripped = line.strip()
        if current is not None:
            if stripped == "}":
                computations[current_name] = tuple(current)
                current = None
            elif stripped:
                instruction = _instruction(line, partitions, replicas)
                if instruction is None:
                    raise ValueError(f"cannot read HLO instruction {stripped[:120]!r} in {current_name}")
                current.append(instruction)
            continue
        if stripped in _TABLES:
            table = stripped
            continue
        if not stripped:
            table = None
            continue
        header = _HEADER.match(stripped)
        if header is not None:
            table, current, current_name = None, [], header.group(2)
            if header.group(1):
                entry = current_name
        elif table is not None:
            tables[table].append(stripped)
    if entry is None or entry not in computations:
        raise ValueError(f"HLO module {name} has no ENTRY computation")
    return HloModule(name, entry, computations, _frames(tables), partitions, replicas)
