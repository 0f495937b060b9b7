"""Trip counts of ``while`` loops: inferred for counted loops, else given or defaulted.

A loop is counted when its condition compares one carried value with a constant bound
(``i < N``, ``i <= N``, ``N > i``, ``i != N``...), the body steps that value by a constant
(``i + 1``, ``i - 2``), and it starts at a constant. Everything else is data-dependent
and takes a trip count from the caller or the default, with a finding naming the loop.
An integer counter's count is closed-form; a floating-point counter's is what repeated
addition in its own precision gives (``0.1f`` added three times is ``<= 0.3f``: 4 trips,
where ⌊0.3/0.1⌋ + 1 says 3), so it is run out in that precision, up to ``FLOAT_TRIP_LIMIT``.
"""

from __future__ import annotations

import operator
import os
from collections import deque
from typing import Any

import numpy as np

from ...core.records import LoopAssumption
from .._walk import closed_form_trips
from .table import literal_value

_FLIP = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "ne": "ne"}


def _jaxpr(value: Any) -> Any:
    return getattr(value, "jaxpr", value)


def _producer(jaxpr: Any, var: Any) -> Any:
    for eqn in jaxpr.eqns:
        if any(out is var for out in eqn.outvars):
            return eqn
    return None


def _constant(atom: Any, jaxpr: Any, outer_invars: list[Any], consts_offset: int, nconsts: int) -> float | None:
    """A literal, or a jaxpr input bound to a literal in the enclosing while equation."""
    value = literal_value(atom)
    if value is not None:
        return float(value)
    for position, var in enumerate(jaxpr.invars):
        if var is atom and position < nconsts:
            return _as_number(literal_value(outer_invars[consts_offset + position]))
    return None


def _as_number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def infer_trip_count(eqn: Any) -> int | None:
    """The trip count of a counted ``while`` equation, or None when it is data-dependent."""
    params = eqn.params
    cond, body = _jaxpr(params["cond_jaxpr"]), _jaxpr(params["body_jaxpr"])
    cond_nconsts, body_nconsts = int(params["cond_nconsts"]), int(params["body_nconsts"])
    inits = list(eqn.invars[cond_nconsts + body_nconsts :])
    if len(cond.outvars) != 1:
        return None
    compare = _producer(cond, cond.outvars[0])
    if compare is None or compare.primitive.name not in _FLIP or len(compare.invars) != 2:
        return None
    carry_vars = list(cond.invars[cond_nconsts:])
    lhs, rhs = compare.invars
    relation = compare.primitive.name
    if any(lhs is v for v in carry_vars):
        counter_atom, bound_atom = lhs, rhs
    elif any(rhs is v for v in carry_vars):
        counter_atom, bound_atom, relation = rhs, lhs, _FLIP[relation]
    else:
        return None
    index = next(i for i, v in enumerate(carry_vars) if v is counter_atom)
    bound = _constant(bound_atom, cond, list(eqn.invars), 0, cond_nconsts)
    if bound is None:  # a bound carried through the loop unchanged, starting at a constant
        for j, v in enumerate(carry_vars):
            if v is bound_atom and body.outvars[j] is body.invars[body_nconsts + j]:
                bound = _as_number(literal_value(inits[j]))
    start = _as_number(literal_value(inits[index]))
    step = _step(body, body_nconsts + index, index, list(eqn.invars), cond_nconsts, body_nconsts)
    if bound is None or start is None or step is None or step == 0:
        return None
    dtype = np.dtype(carry_vars[index].aval.dtype)
    if not np.issubdtype(dtype, np.integer):
        return _run_out(start, bound, step, relation, dtype)
    return closed_form_trips(start, bound, step, relation)


#: The most iterations a floating-point counter is run out for; beyond it the loop is not inferred.
FLOAT_TRIP_LIMIT = 100_000
_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "ne": operator.ne}


def _run_out(start: float, bound: float, step: float, relation: str, dtype: Any) -> int | None:
    """Iterations of ``i = start; while i REL bound: i += step`` with ``i`` in ``dtype``."""
    scalar = dtype.type
    counter, limit, increment = scalar(start), scalar(bound), scalar(step)
    compare = _COMPARE[relation]
    for trips in range(FLOAT_TRIP_LIMIT + 1):
        if not compare(counter, limit):
            return trips
        counter = scalar(counter + increment)
    return None


def _step(
    body: Any, invar_position: int, index: int, outer: list[Any], cond_nconsts: int, nconsts: int
) -> float | None:
    carried_in = body.invars[invar_position]
    update = _producer(body, body.outvars[index])
    if update is None or update.primitive.name not in ("add", "sub") or len(update.invars) != 2:
        return None
    a, b = update.invars
    sign = 1.0 if update.primitive.name == "add" else -1.0
    if a is carried_in:
        amount = _constant(b, body, outer, cond_nconsts, nconsts)
        return None if amount is None else sign * amount
    if b is carried_in and update.primitive.name == "add":
        return _constant(a, body, outer, cond_nconsts, nconsts)
    return None


def _line(location: str | None) -> str | None:
    """``file.py:LINE`` of a location: a trace loop's ``/path/search.py:183:14 (simulate)`` (JAX's
    summary of its equation's source; the function's name is the last parenthesis, a folder may
    hold one too) or an HLO instruction's ``search.py:183``."""
    if not location:
        return None
    parts = os.path.basename(location.rsplit(" (", 1)[0] if location.endswith(")") else location).split(":")
    return f"{parts[0]}:{parts[1]}" if len(parts) > 1 and parts[1].isdigit() else None


#: Trace trip counts that are exact: a scan's length, a counted loop's bound read from its constants.
_EXACT = frozenset({"static", "inferred"})


def take_loop(
    queue: deque[LoopAssumption] | None, source: str | None, known: int | None = None
) -> LoopAssumption | None:
    """The trace loop (of ``queue``: the trace's loops at one scope, in program order) that a
    compiled while loop at ``source`` (its ``file.py:line``) runs, taken out of the queue.

    A trace loop from the same line is it. A compiled loop whose line no trace loop has, where
    every trace loop has one, is a loop XLA made: a PRNG's threefry rounds (``jax.random``'s
    draws run as 5-trip while loops on CPU) are no loop of the trace, and taking the next trace
    loop in order for them shifted every later match (an mctx search's 32-step scan was read as
    its data-dependent ``while_0``, and a trip count given for ``while_0`` went to another loop).
    A trace loop whose exact trip count (a scan's length, a counted loop's inferred bound) is not
    the one XLA knows (``known``) is not it either: a draw inside a loop's body is compiled on the
    loop's line (a gymnax rollout's 5-trip threefry loop took its 200-step ``scan_0``, and the
    report said XLA knew ``scan_0`` ran 5 times). A given or defaulted count may be wrong: kept.
    Without lines to compare, the next trace loop in program order."""
    if not queue:
        return None
    line = _line(source)
    lines = [_line(loop.location) for loop in queue]
    if line is not None and None not in lines:
        same = [
            loop
            for loop, at in zip(queue, lines, strict=True)
            if at == line and not (known is not None and loop.source in _EXACT and loop.trip_count != known)
        ]
        if not same:
            return None
        queue.remove(same[0])
        return same[0]
    return queue.popleft()
