"""The boundary of a traced JAX program: its inputs (parameters where ``param_argnums`` names
them), the arrays it closed over, and its outputs, as ``TensorSpec`` records.

A partitioned program's tensors (``Program.devices`` > 1: the executable read is one device's)
also carry the part one device holds (``shard_shape``), from the compiled program's input and
output shardings — what it runs with, a host NumPy input to a ``jit`` with ``in_shardings``
included —, an input's from its argument's sharding where those cannot be read. A program not
known to be partitioned (no executable read, or its HLO unreadable) claims no shard: its records
outside ``shard_map`` have the jaxpr's global shapes, and so does its boundary; where an argument
is sharded over several devices a note says so (``global_shapes``). A constant is whole on
every device."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax

from ...core.records import TensorSpec
from .compiled import Executable
from .table import LowerContext
from .walker import executed_bodies

GLOBAL_SHAPES = (
    "arguments sharded over {n} devices ({names}), but no partitioned executable was read (trace after benchmark, "
    "or with cross_check=True): the boundary and the records outside shard_map are counted at global shapes"
)


def boundary_of(
    closed: Any,
    dynamic: tuple[Any, ...],
    indices: list[int],
    kwargs: Mapping[str, Any],
    params: set[int],
    executable: Executable | None = None,
    devices: int = 1,
) -> tuple[TensorSpec, ...]:
    """The program's inputs (parameters where named by ``param_argnums``), captured constants and
    outputs; shards claimed only when ``devices`` > 1 (``executable`` partitioned over them)."""
    jaxpr = closed.jaxpr
    flat, _ = jax.tree_util.tree_flatten_with_path((dynamic, dict(kwargs)))
    specs = []
    named = len(flat) == len(jaxpr.invars)
    partitioned = executable if devices > 1 else None
    in_shardings = _shardings(partitioned, "input_shardings", len(jaxpr.invars))
    out_shardings = _shardings(partitioned, "output_shardings", len(jaxpr.outvars))
    for position, var in enumerate(jaxpr.invars):
        role, name = _named(flat[position][0], indices, params) if named else ("input", f"in{position}")
        shape = LowerContext.shape(var)
        sharding = in_shardings[position] if in_shardings else None
        if sharding is None and partitioned is not None and named:  # the compiled shardings unread
            sharding = getattr(flat[position][1], "sharding", None)
        specs.append(TensorSpec(name, shape, LowerContext.dtype(var), role, _shard_shape(sharding, var, shape)))
    # Arrays the function closed over (weights, tables), at the top level or inside a jit,
    # scan body or other sub-jaxpr (a jitted function keeps its own consts); each array once.
    for i, var in enumerate(_closed_over(closed)):
        specs.append(TensorSpec(f"const{i}", LowerContext.shape(var), LowerContext.dtype(var), "parameter"))
    for i, var in enumerate(jaxpr.outvars):
        # a literal is not a buffer; an input returned unchanged is one (XLA copies it to a new buffer)
        if hasattr(var, "aval") and not hasattr(var, "val"):
            shape = LowerContext.shape(var)
            shard = _shard_shape(out_shardings[i], var, shape) if out_shardings else None
            specs.append(TensorSpec(f"out{i}", shape, LowerContext.dtype(var), "output", shard))
    return tuple(specs)


def global_shapes(dynamic: tuple[Any, ...], indices: list[int], kwargs: Mapping[str, Any], devices: int) -> list[str]:
    """The note of a program not known to be partitioned (``devices`` 1) whose arguments are
    sharded over several devices: its records and boundary are at global shapes; else none."""
    if devices > 1:
        return []
    flat, _ = jax.tree_util.tree_flatten_with_path((dynamic, dict(kwargs)))
    sharded: dict[str, int] = {}
    for path, leaf in flat:
        sharding = getattr(leaf, "sharding", None)
        if sharding is not None and not getattr(sharding, "is_fully_replicated", True):
            sharded[_named(path, indices, set())[1]] = len(getattr(sharding, "device_set", ()))
    if not sharded:
        return []
    names = ", ".join(list(sharded)[:5]) + (f" and {len(sharded) - 5} more" if len(sharded) > 5 else "")
    return [GLOBAL_SHAPES.format(n=max(sharded.values()), names=names)]


def _named(path: Any, indices: list[int], params: set[int]) -> tuple[str, str]:
    """``(role, name)`` of a flattened argument: ``arg2[0]`` (its position among all the
    positional arguments, static ones included), a parameter where ``params`` names it; a keyword
    argument by its key path."""
    if getattr(path[0], "idx", 1) == 0:  # a positional argument
        arg_index = indices[getattr(path[1], "idx", 0)]
        role = "parameter" if arg_index in params else "input"
        return role, f"arg{arg_index}{jax.tree_util.keystr(path[2:])}"
    return "input", jax.tree_util.keystr(path[1:]).strip("[]'\"")


def _shard_shape(sharding: Any, var: Any, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The part of ``var`` (recorded as ``shape``) one device holds under ``sharding``; None when
    every device holds it whole (replicated, one device) or the sharding cannot say. A dtype
    recorded with a trailing dimension (``LowerContext.shape``) keeps it whole."""
    if sharding is None or getattr(sharding, "is_fully_replicated", True):
        return None
    rank = len(var.aval.shape)
    try:
        shard = tuple(int(d) for d in sharding.shard_shape(shape[:rank])) + shape[rank:]
    except Exception:  # a sharding that does not divide this shape: no claim
        return None
    return shard if shard != shape else None


def _shardings(executable: Executable | None, which: str, count: int) -> list[Any]:
    """The compiled program's ``input_shardings`` or ``output_shardings``, one per flattened
    argument or output; empty when there is no compiled program or they do not line up with
    the jaxpr's ``count`` inputs or outputs."""
    if executable is None:
        return []
    try:
        leaves = jax.tree_util.tree_leaves(getattr(executable.compiled, which))
    except Exception:  # a backend or version without them: no claim
        return []
    return leaves if len(leaves) == count else []


def _closed_over(closed: Any) -> list[Any]:
    """The constvars of ``closed`` and of every ClosedJaxpr inside it, one per distinct array."""
    found: list[Any] = []
    seen: set[int] = set()
    visited: set[int] = set()

    def visit(closed_jaxpr: Any) -> None:
        jaxpr = getattr(closed_jaxpr, "jaxpr", closed_jaxpr)
        if id(jaxpr) in visited or not hasattr(jaxpr, "eqns"):
            return
        visited.add(id(jaxpr))
        values = list(getattr(closed_jaxpr, "consts", ()))
        for position, var in enumerate(jaxpr.constvars):
            key = id(values[position]) if position < len(values) else id(var)
            if key not in seen:
                seen.add(key)
                found.append(var)
        for eqn in jaxpr.eqns:
            for _key, body in executed_bodies(str(eqn.primitive.name), eqn.params):
                visit(body)

    visit(closed)
    return found
