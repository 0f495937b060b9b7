"""The boundary of a traced JAX program: its inputs (parameters where ``param_argnums`` names
them), the arrays it closed over, and its outputs, as ``TensorSpec`` records.

A sharded program's tensors also carry the part one device holds (``shard_shape``): an input's
from its argument's sharding (a ``jax.Array`` not fully replicated), an output's from the
compiled program's output shardings. Without a compiled program an output's shard is not
claimed (None: counted whole); a constant is whole on every device."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax

from ...core.records import TensorSpec
from .compiled import Executable
from .table import LowerContext
from .walker import executed_bodies


def boundary_of(
    closed: Any,
    dynamic: tuple[Any, ...],
    indices: list[int],
    kwargs: Mapping[str, Any],
    params: set[int],
    executable: Executable | None = None,
) -> tuple[TensorSpec, ...]:
    """The program's inputs (parameters where named by ``param_argnums``), captured constants and outputs."""
    jaxpr = closed.jaxpr
    flat, _ = jax.tree_util.tree_flatten_with_path((dynamic, dict(kwargs)))
    specs = []
    named = len(flat) == len(jaxpr.invars)
    out_shardings = _output_shardings(executable, len(jaxpr.outvars))
    for position, var in enumerate(jaxpr.invars):
        role, name = "input", f"in{position}"
        if named:
            path = flat[position][0]
            head = getattr(path[0], "idx", 1)
            if head == 0:  # a positional argument
                arg_index = indices[getattr(path[1], "idx", 0)]
                role = "parameter" if arg_index in params else "input"
                name = f"arg{arg_index}{jax.tree_util.keystr(path[2:])}"
            else:
                name = jax.tree_util.keystr(path[1:]).strip("[]'\"")
        shape = LowerContext.shape(var)
        shard = _shard_shape(getattr(flat[position][1], "sharding", None), var, shape) if named else None
        specs.append(TensorSpec(name, shape, LowerContext.dtype(var), role, shard))
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


def _output_shardings(executable: Executable | None, outputs: int) -> list[Any]:
    """The compiled program's output shardings, one per output (flattened); empty when there is
    no compiled program or its outputs do not line up with the jaxpr's."""
    if executable is None:
        return []
    try:
        leaves = jax.tree_util.tree_leaves(executable.compiled.output_shardings)
    except Exception:  # a backend or version without output shardings: no claim
        return []
    return leaves if len(leaves) == outputs else []


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
