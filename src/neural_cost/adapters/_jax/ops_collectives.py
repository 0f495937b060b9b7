"""Table entries for JAX's collectives inside ``shard_map``: one ``collective`` record each.

Inside a ``shard_map`` body every value has its per-device shape, so a record made there is
one device's share, as the ``collective`` rule counts it (``neural_cost.costs.collectives``).
What jax 0.10.2 writes (read 2026): with ``check_vma=True`` (the default) ``lax.psum`` is
``psum_invariant[axes=...]`` (after a free ``pvary`` when its operand is replicated), else
``psum[axes=..., axis_index_groups=...]``; ``psum_scatter`` is ``reduce_scatter`` and
``all_gather`` ``all_gather`` (both carry ``axis_name`` and ``axis_size``); ``pmax``/``pmin``
carry ``axes``; ``all_to_all``, ``ppermute`` and ``pbroadcast`` carry ``axis_name`` only, a
name or a tuple of names. ``jax.pmap`` traces to a ``shard_map`` too.

The group size n is the product of the sizes of the mesh axes the collective runs over: a
param's ``axis_size`` where the equation carries one, else the enclosing ``shard_map``'s mesh
(``LowerContext.axes``, which the walker fills from the ``shard_map`` equation's ``mesh``);
with ``axis_index_groups``, the size of one group. A collective whose n cannot be read (an
axis no enclosing mesh names, a positional axis) is unmodeled by name, never zero bytes.

``pmax``/``pmin`` are all-reduces whose combine is a max/min: one comparison per element a
ring receives, counted as the rule's reduction FLOPs. A ``ppermute`` is a permute: each device
sends its whole buffer to one peer (n is the axis size, for readers). ``axis_index`` reads the
device's coordinate: free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ...core.errors import AdapterError
from .common import Ops
from .table import LowerContext, free, lowers

#: Each primitive's collective, as the ``collective`` rule names it.
COLLECTIVES: dict[str, str] = {
    "psum": "all_reduce",
    "psum_invariant": "all_reduce",
    "pmax": "all_reduce",
    "pmin": "all_reduce",
    "all_gather": "all_gather",
    "all_gather_invariant": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "all_to_all": "all_to_all",
    "ppermute": "permute",
    "pbroadcast": "broadcast",
}

free("reads the device's coordinate along a mesh axis: a scalar, no data moved", "axis_index")


def mesh_axes(mesh: Any) -> dict[str, int]:
    """``{axis name: size}`` of a ``shard_map``'s mesh (a ``Mesh`` or ``AbstractMesh``); {} when unreadable."""
    shape = getattr(mesh, "shape", None)
    if not isinstance(shape, Mapping):
        return {}
    try:
        return {str(name): int(size) for name, size in shape.items()}
    except (TypeError, ValueError):
        return {}


def _axis_names(eqn: Any) -> tuple[Any, ...]:
    names = eqn.params.get("axes", eqn.params.get("axis_name"))
    return tuple(names) if isinstance(names, (tuple, list)) else (names,)


def group_size(eqn: Any, ctx: LowerContext) -> int:
    """How many devices take part in ``eqn`` (the module docstring); AdapterError when unknown."""
    name = eqn.primitive.name
    groups = eqn.params.get("axis_index_groups")
    if groups:
        return len(groups[0])
    size = eqn.params.get("axis_size")
    if isinstance(size, int) and not isinstance(size, bool) and size >= 1:
        return size
    names = _axis_names(eqn)
    unknown = [n for n in names if not isinstance(n, str) or n not in ctx.axes]
    if unknown or not names:
        missing = ", ".join(repr(n) for n in unknown or names)
        raise AdapterError(
            f"{name} over mesh axes {missing}: no enclosing shard_map's mesh gives their size, so its group size "
            f"is unknown; the collective is left unmodeled"
        )
    return math.prod(ctx.axes[n] for n in names)


@lowers(*COLLECTIVES)
def _collective(eqn: Any, ctx: LowerContext) -> Ops:
    # All operands go in one collective (a psum of a pytree is one equation): one record.
    attrs = {
        "collective": COLLECTIVES[eqn.primitive.name],
        "group_size": group_size(eqn, ctx),
        "axis": ",".join(str(n) for n in _axis_names(eqn)),
    }
    return [ctx.op(eqn, "collective", attrs=attrs, extra_outputs=eqn.outvars[1:])]
