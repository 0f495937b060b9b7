"""Which records a JAX training step runs only to recompute activations, and which are its backward.

``jax.grad(jax.checkpoint(f))`` keeps no activations of ``f``: the forward runs once for the
primal values (equations under ``jvp(...)``), and the backward — a ``remat2``/``checkpoint``
equation with ``differentiated=True`` under ``transpose(...)`` — recomputes, inside its body,
the values the transposed equations need. JAX pushes the scope ``rematted_computation`` on
those equations (``ad_checkpoint.remat_transpose``). They are the recomputed forward *and* the
jvp coefficients the forward of an uncheckpointed step would have computed and saved (``cos x``
for ``sin x``, ``1 - y²`` for ``tanh``): only the former are extra work. A recomputed equation
is a replay of a forward equation — the same primitive, parameters, shapes and (the very same)
user traceback — so an equation of ``rematted_computation`` is marked ``recompute`` when an
unspent forward equation has its key (each forward equation pays for one replay); a jvp
coefficient has no forward twin and stays model work. A policy that saves some values
(``dots_saveable``...) leaves them out of the body, so only the unsaved ones are marked.

Every record of a transposed equation (``transpose`` in its name stack, or in a caller's) is a
backward record: it carries ``phase="backward"``, how a report tells a training step from
inference (``analysis/utilization.py``). Both labels are for readers: no rule reads them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ...core.attrs import FrozenAttrs
from ...core.records import Operation

#: The scope JAX pushes on the recomputed forward of a transposed checkpoint.
REMATTED = "rematted_computation"
_BACKWARD, _RECOMPUTED = 1, 2
_FLAGS: dict[Any, int] = {}


def _flags(name_stack: Any) -> int:
    """``_RECOMPUTED`` under the rematted scope, ``_BACKWARD`` under a transpose, else 0 (cached)."""
    flags = _FLAGS.get(name_stack)
    if flags is None:
        flags = 0
        for element in getattr(name_stack, "stack", ()):
            kind, name = type(element).__name__, str(element.name)
            if kind == "Scope" and name == REMATTED:
                flags |= _RECOMPUTED
            elif kind == "Transform" and name == "transpose":
                flags |= _BACKWARD
        flags = _RECOMPUTED if flags & _RECOMPUTED else flags
        _FLAGS[name_stack] = flags
    return flags


def _avals(variables: Sequence[Any]) -> tuple[Any, ...]:
    return tuple((tuple(getattr(v.aval, "shape", ())), str(getattr(v.aval, "dtype", ""))) for v in variables)


def _key(eqn: Any) -> tuple[Any, ...] | None:
    """What a replay shares with its forward equation; None without a traceback (never matched)."""
    traceback = getattr(eqn.source_info, "traceback", None)
    if traceback is None:
        return None
    params = tuple((name, repr(value)) for name, value in sorted(eqn.params.items()) if not _bodies_in(value))
    return (traceback, str(eqn.primitive.name), params, _avals(eqn.invars), _avals(eqn.outvars))


def _bodies_in(value: Any) -> list[Any]:
    """The jaxprs a parameter holds (a jaxpr, or a tuple of them: ``cond`` branches)."""
    if hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns"):
        return [getattr(value, "jaxpr", value) if not hasattr(value, "eqns") else value]
    if isinstance(value, (tuple, list)):
        return [item for v in value for item in _bodies_in(v)]
    return []


def _forward_keys(jaxpr: Any, wanted: set[tuple[Any, str]], found: Counter[Any]) -> None:
    """Count the keys of the forward equations (neither transposed nor recomputed, at any depth)
    whose (traceback, primitive) a recomputed equation has."""
    for eqn in jaxpr.eqns:
        if _flags(eqn.source_info.name_stack):
            continue
        if (getattr(eqn.source_info, "traceback", None), str(eqn.primitive.name)) in wanted:
            found[_key(eqn)] += 1
        for value in eqn.params.values():
            for body in _bodies_in(value):
                _forward_keys(body, wanted, found)


class Recompute:
    """Marks, during one walk, each record's innermost equation and whether a recomputed or a
    transposed equation (at any depth around it) made it; ``found`` decides, ``label`` labels."""

    def __init__(self) -> None:
        self._innermost: dict[int, tuple[Operation, Any]] = {}
        self._flags: dict[int, int] = {}

    def mark(self, records: Sequence[Operation], eqn: Any) -> None:
        """``records`` came from ``eqn`` (the walk of a call marks its body's records first)."""
        flags = _flags(eqn.source_info.name_stack)
        for op in records:
            self._innermost.setdefault(id(op), (op, eqn))
            if flags:
                self._flags[id(op)] = max(self._flags.get(id(op), 0), flags)

    def found(self, operations: Sequence[Operation], closed_jaxpr: Any) -> tuple[set[int], set[int]]:
        """(indices of backward records, indices of recomputed ones) in ``operations``."""
        backward: set[int] = set()
        rematted: dict[int, tuple[Any, list[int]]] = {}  # by innermost equation, in program order
        for i, op in enumerate(operations):
            flags = self._flags.get(id(op), 0)
            seen = self._innermost.get(id(op))
            if not flags or seen is None or seen[0] is not op:
                continue
            backward.add(i)
            if flags == _RECOMPUTED:
                rematted.setdefault(id(seen[1]), (seen[1], []))[1].append(i)
        if not rematted:
            return backward, set()
        keys = [(eqn, _key(eqn)) for eqn, _ in rematted.values()]
        wanted = {(key[0], key[1]) for _, key in keys if key is not None}
        budget: Counter[Any] = Counter()
        _forward_keys(getattr(closed_jaxpr, "jaxpr", closed_jaxpr), wanted, budget)
        recomputed: set[int] = set()
        for (_eqn, key), (_, indices) in zip(keys, rematted.values(), strict=True):
            if key is not None and budget[key] > 0:
                budget[key] -= 1
                recomputed.update(indices)
        return backward, recomputed

    @staticmethod
    def label(operations: Sequence[Operation], found: tuple[set[int], set[int]]) -> list[Operation]:
        """``operations`` with ``phase="backward"`` and ``recompute="true"`` where ``found`` says."""
        backward, recomputed = found
        if not backward:
            return list(operations)
        made: dict[tuple[int, bool], FrozenAttrs] = {}
        result = []
        for i, op in enumerate(operations):
            if i not in backward:
                result.append(op)
                continue
            key = (id(op.attrs), i in recomputed)  # the records keep their attrs alive: ids are not reused
            attrs = made.get(key)
            if attrs is None:
                extra: Mapping[str, str] = {"phase": "backward", **({"recompute": "true"} if key[1] else {})}
                attrs = made[key] = FrozenAttrs.trusted({**op.attrs, **extra})
            result.append(op.relabeled(attrs))
        return result
