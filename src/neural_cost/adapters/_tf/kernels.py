"""TensorFlow's kernels: one per executed graph op that does work (``core/kernels.py``).

The walker notes, for every graph op it lowers that is not free, the records it lowered to
(the record objects themselves: a conditional's chosen branch is walked into its own state
and joins the program's records later, so indices are only known at the end), how many
times it runs and its operands' sizes:

- a modeled op executes its records; its traffic per execution is their unfused bytes per
  execution, and it runs as often as they do (a loop body's op: the trip count the walker
  multiplies its records by), so a graph program's kernel traffic equals its unfused traffic;
- an unmodeled op is a kernel with no records, its traffic its inputs and outputs when their
  shapes are static; with a shape or type that cannot be sized it has no kernel (noted). Its
  ``Kernel.unmodeled`` names the op type, and so does a ``PyFunc``'s (``tf.numpy_function``,
  ``tf.py_function``): its ``callback`` record counts only the bytes sent to Python and back,
  what the function computes is unknown — their measured time counts against time coverage;
- a library op folded into one record (``composites``: a Keras norm layer, ``Gelu``) is one
  kernel, its record's;
- the ops of a conditional's branches not costed have no kernel (their records are not counted);
- a monotonic pointwise op whose one reader is a max or min (a reduction, a max pool) runs after it, on its
  result, as Grappler's arithmetic optimizer rewrites the graph (``_moved_past``): its traffic is that result's
  read and written, below its records' bytes; past an argmax or argmin Grappler drops it (no traffic). Every
  other graph op's traffic is its records' unfused bytes.

``KernelLog.placed`` keeps, after ``kernels()``, the entry (graph op, XLA op names) each kernel
came from: the profile joins the profiler's events by them (``profile.py``).

Footprint: the op's distinct input and output tensors, each once; the records' traffic when
one cannot be sized (a variable handle: an optimizer's ``ResourceApply*`` reads its variables
through handles).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.dtypes import dtype_info
from ...core.kernels import FORWARDS_INPUT, Kernel
from ...core.records import Operation
from .table import TfContext

KERNEL_SOURCE = (
    "TensorFlow graph ops (one kernel per op, traffic unfused; Grappler/oneDNN fusions such as "
    "_MklNativeFusedMatMul not modeled)"
)
XLA_NOTE = (
    "a function called with jit_compile=True inside the traced one is compiled by XLA, whose fusion is read only when "
    "the traced function is itself jit_compile: its kernels are the graph's ops and their traffic is the graph's "
    "unfused traffic, not the compiled program's"
)


#: Producers whose tensors no kernel overwrites: a function's arguments, constants, variables and their reads.
_HELD = frozenset(
    {"Placeholder", "PlaceholderWithDefault", "Const", "ReadVariableOp", "VarHandleOp", "Identity", "_Arg"}
)


def _forwards_input(op: Any, records: Sequence[Operation]) -> bool:
    """Whether a pointwise graph op (its records all ``elementwise``) may write its result into an input's buffer
    (``core.kernels.FORWARDS_INPUT``): an input of the result's static shape and type, produced by another op
    (not ``_HELD``), that no other op reads."""
    if not records or any(record.kind != "elementwise" for record in records):
        return False
    try:
        out = op.outputs[0]
        return any(
            tensor.op.type not in _HELD and len(tensor.consumers()) == 1 and tensor.dtype == out.dtype
            and tensor.shape.is_fully_defined() and tensor.shape == out.shape
            for tensor in op.inputs
        )  # fmt: skip
    except Exception:  # a graph op without outputs or static shapes: not known, not assumed
        return False


#: Grappler's arithmetic optimizer (on by default) rewrites max(f(x)) as f(max(x)) for a monotonic pointwise f whose
#: result nothing else reads — a Keras ReLU before a max pool runs on the pooled map, a quarter of the bytes (a
#: 16 × 64 × 64 × 32 map: 115 µs, where the ReLU before the pool would move 16.8 MB). TensorFlow 2.21's lists
#: (``IsElementWiseMonotonic``; the readers ``OptimizeMaxOrMinOfMonotonicStage`` takes, ``SegmentMax`` not among
#: them here), checked against Grappler's own output in the tests:
_RISING = frozenset(
    {"Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Elu", "Erf", "Exp", "Expm1", "Floor", "Log", "Log1p", "Relu",
     "Relu6", "Rint", "Selu", "Sigmoid", "Sign", "Sinh", "Softsign", "Softplus", "Sqrt", "Tanh"}
)  # fmt: skip
_FALLING = frozenset({"Acos", "Erfc", "Neg", "Rsqrt"})  # a max becomes a min past them; no max pool takes them
_REDUCTIONS = frozenset({"Max", "Min"})
_MAX_POOLS = frozenset({"MaxPool", "MaxPoolV2", "MaxPool3D", "MaxPoolWithArgmax", "FractionalMaxPool"})
_ARGS = frozenset({"ArgMax", "ArgMin"})  # past them the op is an identity, and Grappler drops it
#: A ReLU on these stays where it is: Grappler's remapper fuses the pair.
_FUSED_WITH_RELU = frozenset({"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "BiasAdd", "BiasAddV1"})


def _moved_past(op: Any) -> Any:
    """The max or min (a graph op) Grappler moves ``op`` past, so that ``op`` runs on its result, or None: ``op`` is
    monotonic and pointwise, its one output has one reader, which reads it as its first input and is a max or min
    reduction, an argmax or argmin, a max pool (``op`` rising) or another op moved so (a chain moves together)."""
    if op.type not in _RISING and op.type not in _FALLING:
        return None
    try:
        if len(op.outputs) != 1 or len(consumers := op.outputs[0].consumers()) != 1:
            return None
        if op.type in ("Relu", "Relu6") and op.inputs[0].op.type in _FUSED_WITH_RELU:
            return None
        (reader,) = consumers
        if not reader.inputs or reader.inputs[0].name != op.outputs[0].name:
            return None
        found = reader if reader.type in _REDUCTIONS | _ARGS | _MAX_POOLS else _moved_past(reader)
    except Exception:  # a graph op without the outputs or inputs read here: not known, not assumed
        return None
    return None if found is None or (found.type in _MAX_POOLS and op.type not in _RISING) else found


def _nbytes(tensor: Any) -> int:
    return dtype_info(TfContext.dtype(tensor)).nbytes(math.prod(TfContext.shape(tensor)))


def _sizes(op: Any) -> tuple[int, int] | None:
    """(every input and output as often as it appears, each distinct tensor once), or None when
    one cannot be sized (an unknown dimension, a resource or variant tensor)."""
    moved, distinct = 0, {}
    try:
        for tensor in (*op.inputs, *op.outputs):
            nbytes = _nbytes(tensor)
            moved += nbytes
            distinct[tensor.name] = nbytes
    except Exception:  # an unknown shape or a type with no size
        return None
    return moved, sum(distinct.values())


@dataclass
class Pending:
    """One graph op's kernel before the records have their final indices."""

    kind: str
    scope: str | None
    local: str  # the op's own name, last path part
    records: list[Operation]
    count: int
    traffic: int  # per execution
    footprint: int
    hlo: tuple[str, ...] = ()  # the op_names XLA gives the HLO its records lower to (``hlo_map.py``)
    op: Any = None  # the graph op (None for a folded library op): the profile reads its inputs


class KernelLog:
    """The kernels of one walk (or of one branch, until it is chosen)."""

    def __init__(self) -> None:
        self.pending: list[Pending] = []
        self.placed: list[Pending] = []  # the entries of the last ``kernels()``, one per kernel
        self.unsized: dict[str, int] = {}  # unmodeled op type → ops with no kernel
        self.moved: list[str] = []  # "op after reduction": ops Grappler runs on a max or min's result

    def modeled(
        self,
        op: Any,
        kind: str,
        scope: str | None,
        records: Sequence[Operation],
        count: int,
        hlo: tuple[str, ...] = (),
    ) -> None:
        per_run = sum(r.cost.read_bytes + r.cost.write_bytes for r in records)
        sizes = _sizes(op) if op is not None else None
        footprint = sizes[1] if sizes else per_run
        if op is not None and (past := _moved_past(op)) is not None:
            try:  # the reduced result, read and written each execution (an argmax's: dropped, nothing moved)
                per_run = footprint = 0 if past.type in _ARGS else 2 * _nbytes(past.outputs[0])
                self.moved.append(f"{op.name} after {past.name}")
            except Exception:  # a reduced result of no static size: its records' bytes, as before
                pass
        elif any(r.count != count for r in records):  # not so today; keep the totals equal if it ever is
            per_run, count = sum((r.cost.read_bytes + r.cost.write_bytes) * r.count for r in records), 1
        local = str(op.name).rsplit("/", 1)[-1] if op is not None else kind
        self.pending.append(Pending(kind, scope, local, list(records), count, per_run, footprint, hlo, op))

    def unmodeled(self, op: Any, scope: str | None, count: int) -> None:
        sizes = _sizes(op)
        if sizes is None:
            self.unsized[str(op.type)] = self.unsized.get(str(op.type), 0) + 1
            return
        local = str(op.name).rsplit("/", 1)[-1]
        self.pending.append(Pending(str(op.type), scope, local, [], count, sizes[0], sizes[1], (), op))

    def extend(self, other: KernelLog) -> None:
        self.pending += other.pending
        for kind, n in other.unsized.items():
            self.unsized[kind] = self.unsized.get(kind, 0) + n
        self.moved += other.moved

    def hlo_names(self, walked: Sequence[Operation]) -> list[tuple[str, ...]]:
        """For each record of ``walked`` (by identity), the op_names XLA gives the graph ops it
        was lowered from: one for a graph op's records, one per op for a folded library op."""
        names = {id(record): entry.hlo for entry in self.pending for record in entry.records}
        return [names.get(id(record), ()) for record in walked]

    def notes(self) -> list[str]:
        notes = []
        if self.moved:
            notes.append(
                f"Grappler runs {len(self.moved)} monotonic pointwise op(s) after the max or min that reads them, on "
                f"its result (max(f(x)) = f(max(x))): their kernels move that result, not their records' bytes: "
                f"{', '.join(self.moved[:5])}{f' and {len(self.moved) - 5} more' if len(self.moved) > 5 else ''}"
            )
        if self.unsized:
            listed = ", ".join(f"{kind} ({n})" for kind, n in sorted(self.unsized.items()))
            notes.append(
                f"unmodeled graph ops with no kernel (an operand with no static shape or size, so the bytes they move "
                f"are unknown): {listed}"
            )
        return notes

    def kernels(
        self,
        walked: Sequence[Operation],
        operations: Sequence[Operation],
        clean: Callable[[str | None], str | None],
    ) -> tuple[Kernel, ...]:
        """The kernels, their records found in ``walked`` (the walk's records, by identity) and
        their scopes read from ``operations`` (the same records, relabeled, in the same order);
        ``clean`` turns a walked scope into the trace's."""
        positions: dict[int, list[int]] = {}
        for index, record in enumerate(walked):
            positions.setdefault(id(record), []).append(index)
        seen: dict[str, int] = {}
        result = []
        self.placed = []
        for entry in self.pending:
            indices = tuple(positions[id(r)].pop(0) for r in entry.records if positions.get(id(r)))
            if entry.records and not indices:
                continue  # a branch not costed: its records are not in the trace
            scope = clean(entry.scope)
            base = f"{scope}/{entry.local}" if scope else entry.local
            seen[base] = seen.get(base, 0) + 1
            scopes = [operations[i].scope for i in indices] if indices else [scope]
            unknown = not entry.records or any(r.kind == "callback" for r in entry.records)
            self.placed.append(entry)
            result.append(
                Kernel(
                    base if seen[base] == 1 else f"{base}#{seen[base]}",
                    indices,
                    traffic_bytes=entry.traffic,
                    footprint_bytes=entry.footprint,
                    executions=entry.count,
                    scopes=tuple(dict.fromkeys(s for s in scopes if s)),
                    kind=entry.kind,
                    unmodeled=(entry.kind,) if unknown else (),
                    compiled_traits=(FORWARDS_INPUT,)
                    if entry.op is not None and _forwards_input(entry.op, entry.records)
                    else (),
                )
            )
        return tuple(result)
