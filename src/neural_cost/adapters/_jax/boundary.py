"""The boundary of a traced JAX program: its inputs (parameters where ``param_argnums`` names
them), the arrays it closed over, and its outputs, as ``TensorSpec`` records."""

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
        specs.append(TensorSpec(name, LowerContext.shape(var), LowerContext.dtype(var), role))
    # Arrays the function closed over (weights, tables), at the top level or inside a jit,
    # scan body or other sub-jaxpr (a jitted function keeps its own consts); each array once.
    for i, var in enumerate(_closed_over(closed)):
        specs.append(TensorSpec(f"const{i}", LowerContext.shape(var), LowerContext.dtype(var), "parameter"))
    for i, var in enumerate(jaxpr.outvars):
        # a literal is not a buffer; an input returned unchanged is one (XLA copies it to a new buffer)
        if hasattr(var, "aval") and not hasattr(var, "val"):
            specs.append(TensorSpec(f"out{i}", LowerContext.shape(var), LowerContext.dtype(var), "output"))
    return tuple(specs)


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
