"""The aten op table: every aten op packet is modeled (a builder), free (with its reason),
or absent — which means unmodeled: counted and named in Coverage, never dropped. An aten op
is keyed by its packet name (``addmm``); an op of another namespace by ``namespace.name``
(``c10d.allreduce_``, ``_c10d_functional.wait_tensor``: ``ops_collectives.py``).

A builder receives the ``AtenCall`` (the op, its arguments and its output, all real
tensors) and a ``TorchContext``, and returns the ``Operation`` records for that call —
usually one; an empty list means this call only aliases (free, with the reason in
``EMPTY_REASONS``). All FLOP and byte arithmetic stays in ``neural_cost.costs``: a builder
only translates tensor shapes and arguments into a record of the right kind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ...core.dtypes import canonical_dtype
from ...core.records import Operation, Shape
from .._registry import Free as Free
from .._registry import OpTable


@dataclass(frozen=True, slots=True)
class AtenCall:
    """One executed aten call: ``func(*args, **kwargs) -> out``."""

    func: Any  # torch._ops.OpOverload
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    out: Any

    @property
    def name(self) -> str:
        """The op packet name, e.g. ``"addmm"`` for ``aten.addmm.default``."""
        return str(self.func.overloadpacket.__name__)

    @property
    def overload(self) -> str:
        return str(self.func._overloadname)

    def arg(self, index: int, name: str, default: Any = None) -> Any:
        """Argument ``index`` positionally, or ``name`` by keyword, else ``default``."""
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default)

    @property
    def outputs(self) -> list[torch.Tensor]:
        """The output tensors, in order (a tuple output flattened; None and non-tensors skipped)."""
        if isinstance(self.out, torch.Tensor):
            return [self.out]
        if isinstance(self.out, (tuple, list)):
            return [t for t in self.out if isinstance(t, torch.Tensor)]
        return []


_DTYPE_NAMES: dict[Any, str] = {}


class TorchContext:
    """What a builder needs to make records: shapes and dtypes of tensors, and the scope."""

    __slots__ = ("scope",)

    def __init__(self, scope: str | None) -> None:
        self.scope = scope

    @staticmethod
    def shape(tensor: Any) -> Shape:
        return tuple(int(d) for d in tensor.shape)

    @staticmethod
    def dtype(tensor: Any) -> str:
        dtype = tensor.dtype
        name = _DTYPE_NAMES.get(dtype)
        if name is None:
            name = canonical_dtype(str(dtype), "torch dtype")
            _DTYPE_NAMES[dtype] = name
        return name

    def operands(self, call: AtenCall) -> tuple[list[tuple[Shape, str]], list[tuple[Shape, str]]]:
        """The call's input tensors (lists of them too) and outputs as ``(shape, dtype)``: what
        the lowering driver sizes an unmodeled op from (``_walk.lower``)."""
        tensors, pending = [], [*call.args, *call.kwargs.values()]
        while pending:
            value = pending.pop()
            if isinstance(value, torch.Tensor):
                tensors.append(value)
            elif isinstance(value, (list, tuple)):
                pending.extend(value)
        return [(self.shape(t), self.dtype(t)) for t in tensors], [(self.shape(t), self.dtype(t)) for t in call.outputs]

    def op(
        self,
        call: AtenCall,
        kind: str,
        inputs: Sequence[Any],
        output: Any,
        *,
        attrs: dict[str, Any] | None = None,
        dtype: str | None = None,
        extra_outputs: Sequence[Any] = (),
        name: str | None = None,
    ) -> Operation:
        """One record for ``call``. ``inputs``/``output``/``extra_outputs`` are tensors, or shapes
        (tuples of ints, taking the output's dtype) when a builder has rearranged a layout."""
        shapes, dtypes = [], []
        out_dtype = dtype if dtype is not None else (self.dtype(output) if isinstance(output, torch.Tensor) else None)
        for item in inputs:
            if isinstance(item, torch.Tensor):
                shapes.append(self.shape(item))
                dtypes.append(self.dtype(item))
            else:
                shapes.append(tuple(int(d) for d in item))
                dtypes.append(out_dtype or "float32")
        out_shape = self.shape(output) if isinstance(output, torch.Tensor) else tuple(int(d) for d in output)
        resolved = out_dtype or (dtypes[0] if dtypes else "float32")
        return Operation(
            name or call.name,
            kind,
            tuple(shapes),
            out_shape,
            resolved,
            scope=self.scope,
            attrs=attrs or {},
            input_dtypes=tuple(dtypes),
            extra_outputs=tuple(self.shape(t) for t in extra_outputs),
            extra_output_dtypes=tuple(self.dtype(t) for t in extra_outputs) if extra_outputs else None,
        )


Builder = Callable[[AtenCall, TorchContext], Sequence[Operation]]
Entry = Builder | Free

#: The table itself, for ``_walk.lower``; ``TABLE`` is its entries.
REGISTRY: OpTable[Builder] = OpTable("aten op", "call")
TABLE: dict[str, Entry] = REGISTRY.entries
#: Why a builder's empty result (this op only aliases) is free, per name.
EMPTY_REASONS: dict[str, str] = REGISTRY.empty_reasons
lowers = REGISTRY.lowers
free = REGISTRY.free
