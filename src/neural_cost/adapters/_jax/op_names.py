"""An HLO instruction's ``op_name`` read back into the record scope and names it stands for (``parse_op_name``),
and whether it names a ``shard_map`` body's equation (``in_shard_map``): ``hlo_map``'s reading of JAX's metadata."""

from __future__ import annotations

import re

__all__ = ["in_shard_map", "parse_op_name"]

_WRAPPED = re.compile(r"^([A-Za-z_][\w.\-]*)\((.*)\)$", re.DOTALL)
_JIT = frozenset({"jit", "pjit", "xla_pmap", "pmap"})
_CONTROL = frozenset(
    {
        "closed_call",
        "checkpoint",
        "remat",
        "rematted_computation",
        "core_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "shard_map",
    }
)
_BRANCH = re.compile(r"^branch_\d+_fun$")
#: Primitives whose HLO carries another name: ``argmax`` lowers to a variadic ``reduce``; ``ragged_dot_general``,
#: on XLA:CPU, to a ``dot_general`` of every group over a masked copy of its operand (G times its work); a max pool's
#: backward ``select_and_scatter_add`` to a ``select_and_scatter`` (XLA:CPU's scatter-add of it carries that name).
_LOWERED_AS = {"reduce": ("argmax", "argmin"), "dot_general": ("ragged_dot_general",),
               "select_and_scatter": ("select_and_scatter_add",)}  # fmt: skip


def _segments(op_name: str) -> list[str]:
    """``op_name`` split on ``/`` outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(op_name):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "/" and depth == 0:
            parts.append(op_name[start:i])
            start = i + 1
    parts.append(op_name[start:])
    return parts


def parse_op_name(op_name: str) -> tuple[str | None, tuple[str, ...]]:
    """``(scope, names)``: the record scope ``op_name`` stands for, and the record names it
    may carry (the primitive first, then the enclosing jit calls' names, innermost first)."""
    *path, last = _segments(op_name)
    kept: list[str] = []
    jits: list[str] = []
    skip_next: frozenset[str] | None = None
    for raw in path:
        segment: str | None = raw
        while segment and (wrapped := _WRAPPED.match(segment)) is not None:
            if wrapped.group(1) in _JIT:
                jits.append(wrapped.group(2))
                segment = None
            else:
                segment = wrapped.group(2)  # a transform wraps the scope it was applied in
        if not segment:
            continue
        expected, skip_next = skip_next, None
        if expected is not None and segment in expected:
            continue
        if segment == "while":
            skip_next = frozenset({"body", "cond"})
        elif _BRANCH.match(segment) and kept and kept[-1] == "cond":  # lax.cond's own segments
            kept.pop()
        elif segment not in _CONTROL and "<locals>" not in segment:
            kept.append(segment)
    wrapped_last = _WRAPPED.match(last)
    if wrapped_last is not None and wrapped_last.group(1) in _JIT:  # a jit call's own constant
        jits.append(wrapped_last.group(2))
    names = ([] if wrapped_last or not last else [last, *_LOWERED_AS.get(last, ())]) + jits[::-1]
    return ("/".join(kept) or None), tuple(names)


def in_shard_map(op_name: str) -> bool:
    """Whether ``op_name`` names an equation of a ``shard_map`` (or ``pmap``) body, whose shapes
    are already one device's."""
    for segment in _segments(op_name)[:-1]:
        while (wrapped := _WRAPPED.match(segment)) is not None:
            if wrapped.group(1) in ("xla_pmap", "pmap"):
                return True
            segment = wrapped.group(2)
        if segment == "shard_map":
            return True
    return False
