"""Walk a jaxpr, every equation and every sub-jaxpr, into records and coverage.

Each executed equation is counted once per execution (loop bodies multiply), as modeled
(its records were made), free (the table or a call boundary says why) or unmodeled
(named). Containers — jit, custom_jvp/vjp, checkpoint, shard_map, closed_call, and any
primitive carrying a jaxpr — are call boundaries: free themselves, their bodies walked.
``cond`` is costed as its most expensive branch; ``scan`` bodies count ``length`` times;
``while`` bodies take an explicit, inferred or default trip count.

A library op counts as the op (``composites``): a recognised ``jax.nn`` jit call, an inline
gelu or softmax sequence, or a Flax norm layer's scope is one record of the op's kind; its
equations are counted as executed and modeled, part of that one record. A jit call folds
only when its body, walked on the side, counts like the op (``Walker._walks_like``).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping
from typing import Any

from ...core.records import LoopAssumption, Operation
from .._labels import Origins
from .._walk import Loops, WalkState, lower, take_costliest_branch
from .composites import (
    JIT_COMPOSITES,
    STARTS,
    NormCall,
    flops_fit,
    inline_record,
    jit_composite,
    match_inline,
    use_counts,
)
from .loops import infer_trip_count
from .ops_collectives import mesh_axes
from .recompute import Recompute
from .table import REGISTRY, TABLE, LowerContext

CALL_BOUNDARY = "a call boundary: its body's equations are counted instead"


def _open(jaxpr: Any) -> Any:
    """The open Jaxpr inside a ClosedJaxpr (or the Jaxpr itself)."""
    inner = getattr(jaxpr, "jaxpr", None)
    return inner if inner is not None and hasattr(inner, "eqns") else jaxpr


def _is_jaxpr(value: Any) -> bool:
    return hasattr(_open(value), "eqns") and hasattr(_open(value), "invars")


def _jaxpr_params(params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    found = []
    for key, value in params.items():
        if _is_jaxpr(value):
            found.append((key, value))
        elif isinstance(value, (tuple, list)):
            found += [(f"{key}[{i}]", v) for i, v in enumerate(value) if _is_jaxpr(v)]
    return found


def _location(eqn: Any) -> str | None:
    try:
        from jax._src import source_info_util

        return str(source_info_util.summarize(eqn.source_info))
    except Exception:  # a private helper: its absence must not break tracing
        return None


_source_info_util: Any
try:  # a private helper: its absence must not break tracing (imported once: a per-call import costs)
    from jax._src import source_info_util as _source_info_util
except Exception:  # pragma: no cover - other JAX versions
    _source_info_util = None


def _source(source_info: Any) -> str | None:
    """``model.py:42``: the user's line that made an equation (JAX's own frames skipped)."""
    try:
        frame = _source_info_util.user_frame(source_info.traceback) if _source_info_util is not None else None
    except Exception:  # a private helper: its absence must not break tracing
        return None
    return f"{_basename(frame.file_name)}:{frame.start_line}" if frame is not None else None


_USER_FILES: dict[str, bool] = {}


def _function(source_info: Any) -> str | None:
    """The user's function that made an equation (``env_step``), JAX's own frames skipped: the
    first frame, innermost first, whose file JAX counts as the user's (decided once per file,
    from the code objects: resolving the whole frame per equation costs a third of a walk)."""
    try:
        codes, _ = source_info.traceback.raw_frames()
        for code in codes:
            user = _USER_FILES.get(code.co_filename)
            if user is None:
                user = _USER_FILES[code.co_filename] = bool(_source_info_util.is_user_filename(code.co_filename))
            if user:
                return str(code.co_qualname).rpartition("<locals>.")[2]  # build.<locals>.step is step
    except Exception:  # a private helper, or an equation without a traceback: unknown
        return None
    return None


@functools.lru_cache(maxsize=1024)
def _basename(path: str) -> str:
    """A file's name without its folder, once per file: every equation of a program asks."""
    return os.path.basename(path)


#: Scopes JAX itself pushes (a checkpoint's recomputation), not the user's module path.
_INTERNAL_SCOPES = frozenset({"rematted_computation"})
_SCOPE_PATHS: dict[Any, str] = {}


def _scope_path(name_stack: Any) -> str:
    """The user's scopes in a name stack, without JAX's transform wrappers.

    ``str(name_stack)`` under ``jax.grad`` reads ``transpose(jvp(Net))/Dense_0`` for the
    backward and ``jvp(Net)/Dense_0`` for the forward (``jvp()`` where there is no scope):
    one module would split into several rows of the by-scope table. Only the scope names
    are kept, so a module's forward, backward and recomputation sum under its own path.
    """
    path = _SCOPE_PATHS.get(name_stack)
    if path is None:
        stack = getattr(name_stack, "stack", None)
        if stack is None:
            path = str(name_stack)
        else:
            # A transform after scopes starts a new segment: transposition prefixes an
            # equation's own stack with the stack it is transposed in, which may repeat it
            # (transpose(jvp(A))/jvp(A)/... for a checkpoint in scope A): segments are joined
            # as sub-jaxpr scopes are.
            segments: list[list[str]] = [[]]
            for element in stack:
                if type(element).__name__ == "Transform":
                    if segments[-1]:
                        segments.append([])
                elif str(element.name) not in _INTERNAL_SCOPES:
                    segments[-1].append(str(element.name))
            joined: str | None = None
            for segment in segments:
                joined = _join(joined, "/".join(segment))
            path = joined or ""
        _SCOPE_PATHS[name_stack] = path
    return path


scope_path = _scope_path


def _join(prefix: str | None, name_stack: str) -> str | None:
    """A sub-jaxpr's scope under its equation's. Name stacks inside sub-jaxprs are relative,
    except a transposed checkpoint's body, which carries its forward stack again: a path that
    already starts with the prefix is not prefixed twice."""
    if prefix and name_stack:
        if name_stack == prefix or name_stack.startswith(prefix + "/"):
            return name_stack
        return f"{prefix}/{name_stack}"
    return prefix or name_stack or None


def executed_bodies(name: str, params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The sub-jaxprs one execution of an equation runs: every one it carries, except
    ``custom_linear_solve``, whose forward runs only ``solve`` (matvec, vecmat and
    transpose_solve are there for differentiation)."""
    if name == "custom_linear_solve":
        return [("jaxprs.solve", params["jaxprs"].solve)]
    return _jaxpr_params(params)


def _unmodeled_name(eqn: Any) -> str:
    name = str(eqn.primitive.name)
    target = eqn.params.get("target_name") or eqn.params.get("call_target_name")
    return f"{name}:{target}" if target else name


class Walker:
    """One walk of one program; trip counts keyed by while-loop index or label."""

    def __init__(
        self,
        trip_counts: Mapping[int | str, int],
        default_trip_count: int,
        norms: Mapping[str, NormCall | None] | None = None,
    ) -> None:
        self.loops = Loops(trip_counts, default_trip_count)
        self.scan_index = 0
        #: Flax norm layers by scope path (``composites.flax_norms``); each folds once.
        self.norms = {path: call for path, call in (norms or {}).items() if call is not None}
        self.origins = Origins()
        self.recompute = Recompute()  # recomputed (checkpoint) and backward records, labeled at the end
        self.axes: dict[str, int] = {}  # mesh axis sizes of the enclosing shard_maps (their collectives' groups)

    def run(self, closed_jaxpr: Any) -> WalkState:
        state = WalkState()
        self.walk(_open(closed_jaxpr), 1, None, state)
        self.loops.check()
        found = self.recompute.found(state.operations, closed_jaxpr)  # before labels replace the records
        state.operations = self.origins.functions(state.operations, _function)
        state.operations = self.recompute.label(self.origins.label(state.operations, _source), found)
        return state

    def walk(self, jaxpr: Any, count: int, prefix: str | None, state: WalkState) -> None:
        eqns = jaxpr.eqns
        uses: list[dict[Any, int]] = []

        def counted() -> dict[Any, int]:  # made once per jaxpr, only when a sequence matches
            if not uses:
                uses.append(use_counts(jaxpr))
            return uses[0]

        i = 0
        while i < len(eqns):
            eqn = eqns[i]
            before = len(state.operations)
            taken = 0
            if eqn.primitive.name in STARTS:
                taken = self._inline(eqns, i, counted, count, prefix, state)
            if not taken and self.norms:
                taken = self._norm(eqns, i, count, prefix, state)
            if not taken:
                self.equation(eqn, count, prefix, state)
                taken = 1
            if len(state.operations) > before:
                self.origins.mark(state.operations[before:], eqn.source_info)
                self.recompute.mark(state.operations[before:], eqn)
            i += taken

    # -- library ops counted as the op (see ``composites``) -------------------------------
    @staticmethod
    def _fold(state: WalkState, record: Operation, equations: int, count: int) -> bool:
        """One record for ``equations`` executed equations, all modeled: False (nothing tallied)
        when the record's rule rejects it, and the equations are walked as usual instead."""
        try:
            record.cost  # noqa: B018
        except Exception:
            return False
        state.operations.append(record)
        state.static += equations
        state.executed += equations * count
        state.modeled += equations * count
        return True

    def _inline(self, eqns: Any, i: int, uses: Any, count: int, prefix: str | None, state: WalkState) -> int:
        found = match_inline(eqns, i, uses)
        if found is None:
            return 0
        entry, taken, _why = found
        scope = _join(prefix, _scope_path(eqns[i].source_info.name_stack))
        try:
            record = inline_record(eqns, i, taken, entry, LowerContext(scope, count))
        except Exception:
            return 0
        return taken if self._fold(state, record, taken, count) else 0

    def _norm(self, eqns: Any, i: int, count: int, prefix: str | None, state: WalkState) -> int:
        """A Flax norm layer's equations — the run sharing its scope path, none a call — as one record."""
        scope = _join(prefix, _scope_path(eqns[i].source_info.name_stack))
        call = self.norms.get(scope) if scope else None
        if call is None or scope is None:
            return 0
        end = i
        while end < len(eqns) and _join(prefix, _scope_path(eqns[end].source_info.name_stack)) == scope:
            if executed_bodies(str(eqns[end].primitive.name), eqns[end].params):
                return 0
            end += 1
        del self.norms[scope]  # a second run at this path is not this call: walked as usual
        record = Operation(
            call.kind, call.kind, call.inputs, call.output, call.dtype, scope=scope,
            attrs=dict(call.attrs), input_dtypes=call.dtypes, count=count,
        )  # fmt: skip
        return end - i if self._fold(state, record, end - i, count) else 0

    def _jit_composite(self, eqn: Any, count: int, scope: str | None, state: WalkState) -> bool:
        (_key, body), *_ = executed_bodies(str(eqn.primitive.name), eqn.params)
        try:
            record = jit_composite(eqn, _open(body), LowerContext(scope, count))
        except Exception:
            return False
        if record is None or not self._walks_like(_open(body), record, scope):
            return False
        state.static -= 1  # the call itself was tallied; its body's equations join it below
        state.executed -= count
        return self._fold(state, record, 1 + _equations(_open(body)), count) or _undo(state, count)

    def _walks_like(self, body: Any, record: Operation, scope: str | None) -> bool:
        """Whether ``body`` walked as usual (in a walk of its own: nothing here is tallied)
        has every equation modeled and counts within ``composites.BAND`` of ``record``."""
        walked = WalkState()
        try:
            record_flops = record.cost.flops
            Walker({}, self.loops.default_trip_count).walk(body, 1, scope, walked)
        except Exception:
            return False
        return not walked.unmodeled and flops_fit(
            sum(op.cost.flops * op.count for op in walked.operations), record_flops
        )

    def equation(self, eqn: Any, count: int, prefix: str | None, state: WalkState) -> None:
        name = str(eqn.primitive.name)
        scope = _join(prefix, _scope_path(eqn.source_info.name_stack))
        state.static += 1
        state.executed += count
        if name == "while":
            return self._while(eqn, count, scope, state)
        if name == "scan":
            return self._scan(eqn, count, scope, state)
        if name == "cond":
            return self._cond(eqn, count, scope, state)
        entry = TABLE.get(name)
        if entry is not None:
            lower(state, REGISTRY, entry, name, count, (eqn, LowerContext(scope, count, self.axes)), where=scope)
            return None
        named = name in ("jit", "pjit") and eqn.params.get("name") in JIT_COMPOSITES
        if named and self._jit_composite(eqn, count, scope, state):
            return None
        bodies = executed_bodies(name, eqn.params)
        if bodies and name in KNOWN_CALLS:
            state.free += count
            state.free_reasons[name] = CALL_BOUNDARY
            outer, self.axes = self.axes, {**self.axes, **mesh_axes(eqn.params.get("mesh"))}  # a shard_map's axes
            for _key, body in bodies:
                self.walk(_open(body), count, scope, state)
            self.axes = outer
            return None
        if name in ("reduce", "reduce_window") and bodies:
            return self._reduction_with_body(eqn, count, scope, state, bodies[0][1])
        lower(state, REGISTRY, None, name, count, (eqn, LowerContext(scope, count)), label=_unmodeled_name(eqn))
        if bodies:  # an unknown container: walk what it carries, once, and say so
            state.notes.append(
                f"{name} at {scope or 'top level'} carries a jaxpr neural-cost does not know; its body was counted once"
            )
            for _key, body in bodies:
                self.walk(_open(body), count, scope, state)
        return None

    # -- control flow ---------------------------------------------------------------------
    def _scan(self, eqn: Any, count: int, scope: str | None, state: WalkState) -> None:
        length = int(eqn.params["length"])
        state.free += count
        state.free_reasons["scan"] = CALL_BOUNDARY
        index = self.scan_index
        self.scan_index += 1
        label = f"{scope}/scan_{index}" if scope else f"scan_{index}"
        state.loops.append(LoopAssumption(label, length, "static", scope=scope, location=_location(eqn)))
        with self.origins.inside(f"scan_{index}"):
            self.walk(_open(eqn.params["jaxpr"]), count * length, scope, state)

    def _while(self, eqn: Any, count: int, scope: str | None, state: WalkState) -> None:
        loop = self.loops.enter(scope, lambda: infer_trip_count(eqn), _location(eqn))
        trips = loop.trip_count
        state.free += count
        state.free_reasons["while"] = CALL_BOUNDARY
        state.loops.append(loop)
        with self.origins.inside(loop.label.rsplit("/", 1)[-1]):
            self.walk(_open(eqn.params["cond_jaxpr"]), count * (trips + 1), scope, state)
            self.walk(_open(eqn.params["body_jaxpr"]), count * trips, scope, state)

    def _cond(self, eqn: Any, count: int, scope: str | None, state: WalkState) -> None:
        walked = []
        for branch in eqn.params["branches"]:
            branch_state = WalkState()
            self.walk(_open(branch), count, scope, branch_state)
            walked.append(branch_state)
        where = f"cond at {scope or 'top level'} ({_location(eqn) or 'unknown location'})"
        take_costliest_branch(state, walked, count, "cond", where, "equations")

    def _reduction_with_body(self, eqn: Any, count: int, scope: str | None, state: WalkState, body: Any) -> None:
        """A generic reduce/reduce_window: one ``custom`` record whose FLOPs are its combining
        body's, once per combined pair, and whose traffic is the reduction's own (operands and
        init values read once, results written once). The body's scalar equations are part of
        this one operation: counted as executed equations they would swamp coverage, and
        their per-scalar reads and writes would charge register traffic as memory traffic."""
        name = str(eqn.primitive.name)
        in_elements = math.prod(LowerContext.shape(eqn.invars[0]))
        out_elements = math.prod(LowerContext.shape(eqn.outvars[0]))
        if name == "reduce_window":
            window = math.prod(int(w) for w in eqn.params["window_dimensions"])
            applications = out_elements * max(window - 1, 0)
        else:
            applications = max(in_elements - out_elements, 0)
        combine = WalkState()
        self.walk(_open(body), 1, scope, combine)
        if combine.unmodeled:
            state.unmodeled[name] += count
            names = ", ".join(sorted(combine.unmodeled))
            state.notes.append(f"{name} at {scope or 'top level'}: its combining body holds unmodeled {names}")
            return
        flops: dict[str, int] = {}
        for op in combine.operations:
            for dtype, value in op.cost.flops_by_dtype.items():
                flops[dtype] = flops.get(dtype, 0) + value * op.count * applications
        transcendentals = sum(op.cost.transcendentals * op.count for op in combine.operations) * applications
        attrs = {"flops": flops, "transcendentals": transcendentals, "combines": applications}

        def build(eqn: Any, ctx: LowerContext) -> list[Any]:
            return [ctx.op(eqn, "custom", attrs=attrs, extra_outputs=eqn.outvars[1:])]

        lower(state, REGISTRY, build, name, count, (eqn, LowerContext(scope, count)), where=scope)


def _equations(jaxpr: Any) -> int:
    """Equations in a jaxpr and every sub-jaxpr it runs (a recognised call's body)."""
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for _key, body in executed_bodies(str(eqn.primitive.name), eqn.params):
            total += _equations(_open(body))
    return total


def _undo(state: WalkState, count: int) -> bool:
    state.static += 1
    state.executed += count
    return False


KNOWN_CALLS = frozenset(
    {
        "jit",
        "pjit",
        "closed_call",
        "core_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "custom_jvp_call_jaxpr",
        "remat2",
        "checkpoint",
        "shard_map",
        "custom_lin",
        "xla_call",
        "named_call",
        "custom_vmap_call",
        "compute_on",
        "jaxpr_call",
        "custom_linear_solve",
    }
)
