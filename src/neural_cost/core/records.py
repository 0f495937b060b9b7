"""The portable records every adapter produces and every analysis reads.

All are frozen; all round-trip through JSON exactly (``X.from_dict(json.loads(json.dumps(
x.to_dict()))) == x``). Counts are Python ints, so totals are exact. Shapes and names live in
``shapes``, coverage and loop assumptions in ``coverage``; every record is importable from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .attrs import EMPTY_ATTRS, FrozenAttrs, attrs_to_json
from .coverage import LOOP_SOURCES, Coverage, LoopAssumption
from .dtypes import canonical_dtype, dtype_info, known_dtypes
from .errors import RecordError, ShapeError
from .kernels import Kernel, check_kernels
from .kinds import OpCost, entry_for
from .shapes import Shape, as_shape, check_name, num_elements

__all__ = [
    "LOOP_SOURCES",
    "TENSOR_ROLES",
    "Coverage",
    "LoopAssumption",
    "Operation",
    "Shape",
    "TensorSpec",
    "Trace",
    "as_shape",
    "num_elements",
    "records_of",
]

TENSOR_ROLES = ("input", "parameter", "output")
_CANONICAL_DTYPES = frozenset(known_dtypes())
_COST_MEMO: dict[tuple[Any, ...], OpCost] = {}
_COST_MEMO_LIMIT = 65_536
#: Attributes for readers that every kind accepts and no rule reads: where a record ran (its loops)
#: and came from (file:line or a graph op name).
LABEL_ATTRS = frozenset({"loop", "source", "function", "recompute", "phase"})


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """A tensor at the program's boundary: an input, a parameter or an output."""

    name: str
    shape: Shape
    dtype: str = "float32"
    role: str = "input"
    #: The part one device holds when the tensor is sharded over several (JAX: the array's
    #: ``sharding.shard_shape``), same rank as ``shape``; None when each device holds it whole.
    shard_shape: Shape | None = None

    def __post_init__(self) -> None:
        check_name(self.name, "TensorSpec.name")
        object.__setattr__(self, "shape", as_shape(self.shape, f"TensorSpec {self.name!r} shape"))
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype, f"TensorSpec {self.name!r} dtype"))
        if self.role not in TENSOR_ROLES:
            raise RecordError(f"TensorSpec {self.name!r} role={self.role!r}; use one of {', '.join(TENSOR_ROLES)}")
        if self.shard_shape is not None:
            shard = as_shape(self.shard_shape, f"TensorSpec {self.name!r} shard_shape")
            if len(shard) != len(self.shape) or any(s > d for s, d in zip(shard, self.shape, strict=True)):
                raise RecordError(
                    f"TensorSpec {self.name!r} shard_shape={shard} must have the rank of shape={self.shape} and no "
                    f"dimension larger than it (it is the part one device holds)"
                )
            object.__setattr__(self, "shard_shape", shard)

    @property
    def nbytes(self) -> int:
        return dtype_info(self.dtype).nbytes(num_elements(self.shape))

    @property
    def device_bytes(self) -> int:
        """The bytes one device holds: its shard's, or the whole tensor's when it is not sharded."""
        shape = self.shape if self.shard_shape is None else self.shard_shape
        return dtype_info(self.dtype).nbytes(num_elements(shape))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "role": self.role}
        if self.shard_shape is not None:
            data["shard_shape"] = list(self.shard_shape)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TensorSpec:
        shard = data.get("shard_shape")
        return cls(
            data["name"], tuple(data["shape"]), data["dtype"], data["role"], None if shard is None else tuple(shard)
        )


def _shapes(raw: Any, op: Operation, field_name: str) -> tuple[Shape, ...]:
    shapes = tuple(raw)
    for shape in shapes:
        if not (type(shape) is tuple and all(type(d) is int and d >= 0 for d in shape)):
            return tuple(as_shape(s, f"{op._where()} {field_name}[{i}]") for i, s in enumerate(shapes))
    return shapes


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of a traced program, in portable form.

    ``Operation("classifier", "linear", ((32, 768), (768, 1000)), (32, 1000), 2)`` is a
    float16 linear layer: the fifth argument is the element type, as a canonical name or
    an itemsize (1 → int8, 2 → float16, 4 → float32, 8 → float64). ``input_dtypes`` gives
    each input its own type (int32 indices, mixed precision). ``count`` is how many times
    the operation executes (a loop body's trip count). The kind's cost rule validates the
    shapes when the record is made.
    """

    name: str
    kind: str
    inputs: tuple[Shape, ...]
    output: Shape
    dtype: str = "float32"
    scope: str | None = None
    attrs: Mapping[str, Any] = EMPTY_ATTRS
    input_dtypes: tuple[str, ...] | None = None
    extra_outputs: tuple[Shape, ...] = ()
    extra_output_dtypes: tuple[str, ...] | None = None
    count: int = 1
    _cost: OpCost = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Error labels are built only when something is wrong: this runs once per operation.
        check_name(self.name, "Operation.name")
        if not isinstance(self.kind, str) or not self.kind:
            check_name(self.kind, f"Operation {self.name!r} kind")
        if self.scope is not None and (not isinstance(self.scope, str) or not self.scope):
            check_name(self.scope, f"Operation {self.name!r} scope")
        entry = entry_for(self.kind)
        setattr_ = object.__setattr__
        raw_inputs: Any = self.inputs
        if isinstance(raw_inputs, (str, bytes)) or not isinstance(raw_inputs, Iterable):
            raise ShapeError(f"{self._where()} inputs={raw_inputs!r} must be a sequence of shapes")
        setattr_(self, "inputs", _shapes(raw_inputs, self, "inputs"))
        output: Any = self.output
        if not (type(output) is tuple and all(type(d) is int and d >= 0 for d in output)):
            setattr_(self, "output", as_shape(output, f"{self._where()} output"))
        if not (isinstance(self.dtype, str) and self.dtype in _CANONICAL_DTYPES):
            setattr_(self, "dtype", canonical_dtype(self.dtype, f"{self._where()} dtype"))
        if not isinstance(self.attrs, FrozenAttrs):
            setattr_(self, "attrs", FrozenAttrs(self.attrs, f"{self._where()} attrs") if self.attrs else EMPTY_ATTRS)
        attrs: FrozenAttrs = self.attrs  # type: ignore[assignment]  # made a FrozenAttrs just above
        if self.input_dtypes is not None:
            dtypes = tuple(
                canonical_dtype(d, f"{self._where()} input_dtypes[{i}]") for i, d in enumerate(self.input_dtypes)
            )
            if len(dtypes) != len(self.inputs):
                raise RecordError(
                    f"{self._where()} input_dtypes has {len(dtypes)} entries for {len(self.inputs)} inputs; "
                    f"give one per input"
                )
            setattr_(self, "input_dtypes", dtypes)
        extra_outputs: Any = self.extra_outputs
        if extra_outputs:
            setattr_(self, "extra_outputs", _shapes(extra_outputs, self, "extra_outputs"))
        elif not isinstance(extra_outputs, tuple):
            setattr_(self, "extra_outputs", ())
        if self.extra_output_dtypes is not None:
            extra = tuple(
                canonical_dtype(d, f"{self._where()} extra_output_dtypes[{i}]")
                for i, d in enumerate(self.extra_output_dtypes)
            )
            if len(extra) != len(self.extra_outputs):
                raise RecordError(
                    f"{self._where()} extra_output_dtypes has {len(extra)} entries for {len(self.extra_outputs)} "
                    f"extra outputs"
                )
            setattr_(self, "extra_output_dtypes", extra)
        if type(self.count) is not int or self.count < 0:
            raise RecordError(f"{self._where()} count={self.count!r} must be a non-negative integer (executions)")
        key = (
            self.kind,
            self.inputs,
            self.output,
            self.dtype,
            attrs.typed_key(),
            self.input_dtypes,
            self.extra_outputs,
            self.extra_output_dtypes,
        )
        # Rules are pure functions of these fields: compute each distinct op once. The key tells
        # 1, 1.0 and True apart, so a hit means this kind took these very attributes before and
        # checked them then; a miss checks them before the rule runs.
        cost = _COST_MEMO.get(key)
        if cost is None:
            if entry.check_attrs is not None:
                entry.check_attrs(self)
            cost = entry.rule(self)
            if len(_COST_MEMO) >= _COST_MEMO_LIMIT:
                _COST_MEMO.clear()
            _COST_MEMO[key] = cost
        setattr_(self, "_cost", cost)

    def _where(self) -> str:
        return f"Operation {self.name!r} ({self.kind})"

    def relabeled(self, attrs: FrozenAttrs) -> Operation:
        """This record with ``attrs`` that differ from its own only in labels for readers
        (``loop``, ``source``: keys every kind accepts and no rule reads), so its shapes, checks
        and cost are this record's and are not computed again."""
        extra = set(attrs) - set(self.attrs)
        if extra - LABEL_ATTRS or any(attrs[k] != v for k, v in self.attrs.items() if k not in LABEL_ATTRS):
            raise RecordError(f"{self._where()}: relabeled() only adds {sorted(LABEL_ATTRS)}, not {sorted(extra)}")
        if any(not isinstance(attrs[k], str) or not attrs[k] for k in extra):
            raise RecordError(f"{self._where()}: labels must be non-empty strings")
        clone = object.__new__(Operation)
        for slot in _OPERATION_SLOTS:  # a plain copy: copy.copy of a slotted dataclass is 5× slower
            object.__setattr__(clone, slot, getattr(self, slot))
        object.__setattr__(clone, "attrs", attrs)
        return clone

    # -- views the cost rules read ------------------------------------------------------
    def input_dtype(self, index: int) -> str:
        return self.input_dtypes[index] if self.input_dtypes is not None else self.dtype

    @property
    def compute_dtype(self) -> str:
        """The dtype FLOPs are charged to: ``attrs['compute_dtype']``, else the first non-boolean
        input's, else the output's."""
        explicit = self.attrs.get("compute_dtype")
        if explicit is not None:
            return canonical_dtype(explicit, f"Operation {self.name!r} attrs['compute_dtype']")
        for index in range(len(self.inputs)):  # a select's boolean predicate is not what computes
            dtype = self.input_dtype(index)
            if dtype != "bool":
                return dtype
        return self.dtype

    def input_bytes(self, index: int) -> int:
        return dtype_info(self.input_dtype(index)).nbytes(num_elements(self.inputs[index]))

    @property
    def output_bytes(self) -> int:
        """Bytes of the output plus any extra outputs."""
        total = dtype_info(self.dtype).nbytes(num_elements(self.output))
        for i, shape in enumerate(self.extra_outputs):
            dtype = self.extra_output_dtypes[i] if self.extra_output_dtypes is not None else self.dtype
            total += dtype_info(dtype).nbytes(num_elements(shape))
        return total

    @property
    def cost(self) -> OpCost:
        """The cost of one execution (multiply by ``count`` for the total)."""
        return self._cost

    # -- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "inputs": [list(s) for s in self.inputs],
            "output": list(self.output),
            "dtype": self.dtype,
            "scope": self.scope,
            "attrs": attrs_to_json(self.attrs),
            "count": self.count,
        }
        if self.input_dtypes is not None:
            data["input_dtypes"] = list(self.input_dtypes)
        if self.extra_outputs:
            data["extra_outputs"] = [list(s) for s in self.extra_outputs]
        if self.extra_output_dtypes is not None:
            data["extra_output_dtypes"] = list(self.extra_output_dtypes)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Operation:
        input_dtypes = data.get("input_dtypes")
        extra_dtypes = data.get("extra_output_dtypes")
        return cls(
            data["name"],
            data["kind"],
            tuple(tuple(s) for s in data["inputs"]),
            tuple(data["output"]),
            data.get("dtype", "float32"),
            data.get("scope"),
            FrozenAttrs(data.get("attrs") or {}),
            tuple(input_dtypes) if input_dtypes is not None else None,
            tuple(tuple(s) for s in data.get("extra_outputs", ())),
            tuple(extra_dtypes) if extra_dtypes is not None else None,
            data.get("count", 1),
        )


_OPERATION_SLOTS: tuple[str, ...] = Operation.__slots__


def records_of(values: Any, record: type[Any], where: str) -> tuple[Any, ...]:
    """``values`` as a tuple of ``record`` instances, or a RecordError naming the first that is not."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise RecordError(f"{where}={values!r} must be a sequence of {record.__name__} records")
    items = tuple(values)
    for i, item in enumerate(items):
        if not isinstance(item, record):
            raise RecordError(f"{where}[{i}] is a {type(item).__name__}, not a {record.__name__}")
    return items


def check_global_flops(value: Any, where: str) -> None:
    """``global_model_flops`` is None or a non-negative integer."""
    if value is not None and (type(value) is not int or value < 0):
        raise RecordError(f"{where}.global_model_flops={value!r} must be None or a non-negative integer")


def _as_input_shapes(value: Any) -> tuple[tuple[str, Shape], ...]:
    """Accept ``[(32, 768), ...]`` or ``[("x", (32, 768)), ...]`` or ``{"x": (32, 768)}``."""
    if isinstance(value, Mapping):
        items = list(value.items())
    else:
        items = []
        for i, entry in enumerate(value):
            if isinstance(entry, Sequence) and len(entry) == 2 and isinstance(entry[0], str):
                items.append((entry[0], entry[1]))
            else:
                items.append((f"arg{i}", entry))
    return tuple((str(name), as_shape(shape, f"input_shapes[{name!r}]")) for name, shape in items)


@dataclass(frozen=True, slots=True)
class Trace:
    """What an adapter saw: the operations, how much they cover, and what it assumed."""

    operations: tuple[Operation, ...]
    coverage: Coverage
    input_shapes: tuple[tuple[str, Shape], ...] = ()
    loop_assumptions: tuple[LoopAssumption, ...] = ()
    framework: str | None = None
    boundary: tuple[TensorSpec, ...] = ()
    notes: tuple[str, ...] = ()
    #: Another tool's figures for the same program (e.g. XLA's cost_analysis), shown beside ours.
    cross_check: Mapping[str, Any] | None = None
    #: Buffers each executed step reads and allocates, in order, for liveness: a tuple of
    #: ``(read buffer ids, ((allocated buffer id, bytes), ...))``; empty when the adapter has none.
    dataflow: tuple[tuple[tuple[int, ...], tuple[tuple[int, int], ...]], ...] = ()
    #: The executed units of the program as it runs (``core/kernels.py``), each naming the
    #: records it executes by index; empty when the adapter read no compiled program.
    kernels: tuple[Kernel, ...] = ()
    #: Where the kernels come from (``XLA optimized HLO``, ``eager aten ops``...), or None.
    kernel_source: str | None = None
    #: The devices one program runs on at once when it is partitioned (JAX's SPMD ``jit``):
    #: every record is then one device's share. 1 for a single device's program.
    devices: int = 1
    #: A partitioned program's model FLOPs over all its devices: its records before the
    #: per-device rewrite, at their traced (global) shapes (a ``shard_map`` body's × devices),
    #: recomputed and collective records left out (``analysis/utilization.py``); else None.
    global_model_flops: int | None = None

    def __post_init__(self) -> None:
        if type(self.devices) is not int or self.devices < 1:
            raise RecordError(f"Trace.devices={self.devices!r} must be a positive integer")
        check_global_flops(self.global_model_flops, "Trace")
        ops = tuple(self.operations)
        for i, op in enumerate(ops):
            if not isinstance(op, Operation):
                raise RecordError(f"Trace.operations[{i}] is a {type(op).__name__}, not an Operation")
        object.__setattr__(self, "operations", ops)
        if not isinstance(self.coverage, Coverage):
            raise RecordError(f"Trace.coverage must be a Coverage, got {type(self.coverage).__name__}")
        # One executed op may lower to several records (addmm: the matmul and its bias add; an
        # LSTM layer: its matmuls and gates), so records are not compared with the count one by one.
        if ops and self.coverage.modeled == 0:
            raise RecordError(f"Trace has {len(ops)} operation records but its coverage says no operation was modeled")
        object.__setattr__(self, "input_shapes", _as_input_shapes(self.input_shapes))
        object.__setattr__(
            self, "loop_assumptions", records_of(self.loop_assumptions, LoopAssumption, "Trace.loop_assumptions")
        )
        object.__setattr__(self, "boundary", records_of(self.boundary, TensorSpec, "Trace.boundary"))
        object.__setattr__(self, "notes", tuple(self.notes))
        if self.cross_check is not None and not isinstance(self.cross_check, FrozenAttrs):
            object.__setattr__(self, "cross_check", FrozenAttrs(self.cross_check, "Trace.cross_check"))
        object.__setattr__(self, "kernels", check_kernels(self.kernels, len(ops), "Trace"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "framework": self.framework,
            "operations": [op.to_dict() for op in self.operations],
            "coverage": self.coverage.to_dict(),
            "input_shapes": [[n, list(s)] for n, s in self.input_shapes],
            "loop_assumptions": [a.to_dict() for a in self.loop_assumptions],
            "boundary": [t.to_dict() for t in self.boundary],
            "notes": list(self.notes),
            "cross_check": attrs_to_json(self.cross_check) if self.cross_check is not None else None,
            "dataflow": [[list(reads), [list(a) for a in allocs]] for reads, allocs in self.dataflow],
            "kernel_source": self.kernel_source,
            "kernels": [kernel.to_dict() for kernel in self.kernels],
            "devices": self.devices,
            **({} if self.global_model_flops is None else {"global_model_flops": self.global_model_flops}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trace:
        return cls(
            operations=tuple(Operation.from_dict(o) for o in data["operations"]),
            coverage=Coverage.from_dict(data["coverage"]),
            input_shapes=tuple((n, tuple(s)) for n, s in data.get("input_shapes", ())),
            loop_assumptions=tuple(LoopAssumption.from_dict(a) for a in data.get("loop_assumptions", ())),
            framework=data.get("framework"),
            boundary=tuple(TensorSpec.from_dict(t) for t in data.get("boundary", ())),
            notes=tuple(data.get("notes", ())),
            cross_check=data.get("cross_check"),
            dataflow=tuple(
                (tuple(reads), tuple((int(i), int(n)) for i, n in allocs)) for reads, allocs in data.get("dataflow", ())
            ),
            kernels=tuple(Kernel.from_dict(k) for k in data.get("kernels") or ()),
            kernel_source=data.get("kernel_source"),
            devices=data.get("devices", 1),
            global_model_flops=data.get("global_model_flops"),
        )
