"""The graph-op table: every TensorFlow op type is modeled (a builder), free (with its
reason), or absent — which means unmodeled: counted and named in Coverage, never dropped.

A builder receives the graph ``op`` (a ``tf.Operation`` with static shapes) and a
``TfContext`` and returns the ``Operation`` records for one execution of it; an empty list
means this op only aliases (free, with the reason in ``EMPTY_REASONS``). All FLOP and byte
arithmetic stays in ``neural_cost.costs``: builders translate shapes and attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...core.dtypes import canonical_dtype
from ...core.errors import AdapterError
from ...core.records import Operation, Shape
from .._registry import Free as Free
from .._registry import OpTable

_DTYPE_NAMES: dict[str, str] = {}


class TfContext:
    """What a builder needs to make records: static shapes and dtypes, the scope, the count."""

    __slots__ = ("count", "scope")

    def __init__(self, scope: str | None, count: int) -> None:
        self.scope = scope
        self.count = count

    @staticmethod
    def shape(tensor: Any) -> Shape:
        dims = tensor.shape.as_list() if tensor.shape.rank is not None else None
        if dims is None or any(d is None for d in dims):
            raise AdapterError(
                f"TensorFlowAdapter: {tensor.name} has an unknown shape {tensor.shape}; trace with concrete example "
                f"inputs (no None dimensions) so every op has a static shape"
            )
        return tuple(int(d) for d in dims)

    @staticmethod
    def dtype(tensor: Any) -> str:
        name = tensor.dtype.name
        found = _DTYPE_NAMES.get(name)
        if found is None:
            found = canonical_dtype(name, "TensorFlow dtype")
            _DTYPE_NAMES[name] = found
        return found

    def operands(self, op: Any) -> tuple[list[tuple[Shape, str]], list[tuple[Shape, str]]]:
        """The op's inputs and outputs as ``(shape, dtype)``: what the lowering driver sizes an
        unmodeled op from (``_walk.lower``); an unknown shape raises, leaving its size unknown."""
        return [(self.shape(t), self.dtype(t)) for t in op.inputs], [(self.shape(t), self.dtype(t)) for t in op.outputs]

    def op(
        self,
        op: Any,
        kind: str,
        inputs: Sequence[Any] | None = None,
        output: Any = None,
        *,
        attrs: dict[str, Any] | None = None,
        input_shapes: Sequence[Shape] | None = None,
        output_shape: Shape | None = None,
        input_dtypes: Sequence[str] | None = None,
        dtype: str | None = None,
        extra_outputs: Sequence[Any] = (),
        name: str | None = None,
    ) -> Operation:
        """One record for ``op``: tensors default to its inputs and first output; pass shapes
        (with dtypes) instead when a builder permuted a layout into the canonical one."""
        tensors_in = list(op.inputs) if inputs is None else list(inputs)
        tensor_out = op.outputs[0] if output is None else output
        shapes = tuple(input_shapes) if input_shapes is not None else tuple(self.shape(t) for t in tensors_in)
        dtypes = tuple(input_dtypes) if input_dtypes is not None else tuple(self.dtype(t) for t in tensors_in)
        return Operation(
            name or str(op.type),
            kind,
            shapes,
            output_shape if output_shape is not None else self.shape(tensor_out),
            dtype if dtype is not None else self.dtype(tensor_out),
            scope=self.scope,
            attrs=attrs or {},
            input_dtypes=dtypes,
            extra_outputs=tuple(self.shape(t) for t in extra_outputs),
            extra_output_dtypes=tuple(self.dtype(t) for t in extra_outputs) if extra_outputs else None,
            count=self.count,
        )


Builder = Callable[[Any, TfContext], Sequence[Operation]]
Entry = Builder | Free

#: The table itself, for ``_walk.lower``; ``TABLE`` is its entries.
REGISTRY: OpTable[Builder] = OpTable("TensorFlow op type", "op")
TABLE: dict[str, Entry] = REGISTRY.entries
#: Why a builder's empty result (this op only aliases) is free, per name.
EMPTY_REASONS: dict[str, str] = REGISTRY.empty_reasons
lowers = REGISTRY.lowers
free = REGISTRY.free


def attr(op: Any, name: str, default: Any = None) -> Any:
    """An op attribute decoded to Python (bytes → str), or ``default`` when absent."""
    try:
        value = op.get_attr(name)
    except (ValueError, KeyError):
        return default
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value


def constant_value(tensor: Any) -> Any:
    """The value of a tensor produced by a Const op (numpy), or None."""
    if tensor.op.type != "Const":
        return None
    try:
        from tensorflow.python.framework import tensor_util

        return tensor_util.MakeNdarray(tensor.op.get_attr("value"))
    except Exception:  # not a readable constant
        return None
