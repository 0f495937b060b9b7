"""The primitive table: every JAX primitive is modeled (a builder), free (with its reason),
or absent — which means unmodeled: counted and named in Coverage, never dropped.

A builder receives the equation and a ``LowerContext`` and returns the ``Operation``
records for one execution of it (usually one). All FLOP and byte arithmetic stays in
``neural_cost.costs``: a builder only translates a primitive's shapes and params into a
record of the right kind, permuting layouts into the canonical ones the rules expect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...core.dtypes import canonical_dtype
from ...core.records import Operation, Shape
from .._registry import Free as Free
from .._registry import OpTable


class LowerContext:
    """What a builder needs to make records: shapes and dtypes of atoms, the scope, the count,
    and the sizes of the mesh axes an enclosing ``shard_map`` makes manual (``{name: size}``)."""

    __slots__ = ("axes", "count", "scope")

    def __init__(self, scope: str | None, count: int, axes: Mapping[str, int] | None = None) -> None:
        self.scope = scope
        self.count = count
        self.axes: Mapping[str, int] = axes or {}

    @staticmethod
    def shape(atom: Any) -> Shape:
        aval = atom.aval
        shape = aval.shape
        if type(shape) is not tuple or not all(type(d) is int for d in shape):
            shape = tuple(int(d) for d in shape)  # symbolic or numpy dims
        extra = _dtype_facts(aval.dtype)[1]
        return shape + extra if extra else shape

    @staticmethod
    def dtype(atom: Any) -> str:
        return _dtype_facts(atom.aval.dtype)[0]

    def operands(self, eqn: Any) -> tuple[list[tuple[Shape, str]], list[tuple[Shape, str]]]:
        """The equation's inputs and outputs as ``(shape, dtype)``: what the lowering driver
        sizes an unmodeled equation from (``_walk.lower``)."""
        inputs = [(self.shape(a), self.dtype(a)) for a in eqn.invars]
        return inputs, [(self.shape(a), self.dtype(a)) for a in eqn.outvars]

    def op(
        self,
        eqn: Any,
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
        """One record for ``eqn``: atoms default to the equation's invars and first outvar.

        Pass ``input_shapes``/``output_shape`` (with ``input_dtypes``/``dtype``) instead of
        atoms when a builder has permuted a layout into the canonical one.
        """
        atoms_in = list(eqn.invars) if inputs is None else list(inputs)
        atom_out = eqn.outvars[0] if output is None else output
        shapes = tuple(input_shapes) if input_shapes is not None else tuple(self.shape(a) for a in atoms_in)
        dtypes = tuple(input_dtypes) if input_dtypes is not None else tuple(self.dtype(a) for a in atoms_in)
        out_dtype = dtype if dtype is not None else self.dtype(atom_out)
        return Operation(
            name or eqn.primitive.name,
            kind,
            shapes,
            output_shape if output_shape is not None else self.shape(atom_out),
            out_dtype,
            scope=self.scope,
            attrs=attrs or {},
            input_dtypes=dtypes,  # always explicit: an int32 index must not default to int64
            extra_outputs=tuple(self.shape(a) for a in extra_outputs),
            extra_output_dtypes=tuple(self.dtype(a) for a in extra_outputs) if extra_outputs else None,
            count=self.count,
        )


_DTYPE_FACTS: dict[Any, tuple[str, Shape]] = {}


def _dtype_facts(dtype: Any) -> tuple[str, Shape]:
    """(canonical name, trailing key-data dims) of a jaxpr dtype, cached: numpy's ``.name`` is slow."""
    facts = _DTYPE_FACTS.get(dtype)
    if facts is None:
        if is_key_dtype(dtype):  # a typed PRNG key array: its data is uint32 words per key
            facts = ("uint32", tuple(int(d) for d in dtype._impl.key_shape))
        else:
            facts = (canonical_dtype(getattr(dtype, "name", str(dtype)), "jaxpr dtype"), ())
        _DTYPE_FACTS[dtype] = facts
    return facts


def is_key_dtype(dtype: Any) -> bool:
    return hasattr(dtype, "_impl") and hasattr(getattr(dtype, "_impl", None), "key_shape")


Builder = Callable[[Any, LowerContext], Sequence[Operation]]
Entry = Builder | Free

#: The table itself, for ``_walk.lower``; ``TABLE`` is its entries.
REGISTRY: OpTable[Builder] = OpTable("JAX primitive", "equation")
TABLE: dict[str, Entry] = REGISTRY.entries
#: Why a builder's empty result (this op only aliases) is free, per name.
EMPTY_REASONS: dict[str, str] = REGISTRY.empty_reasons
lowers = REGISTRY.lowers
free = REGISTRY.free


def literal_value(atom: Any) -> Any:
    """The Python value of a jaxpr Literal, or None for a variable (only Literals carry ``val``)."""
    return getattr(atom, "val", None)
