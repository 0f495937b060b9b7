"""Walk a TensorFlow graph — and every function it calls — into records and coverage.

Function calls (PartitionedCall, StatefulPartitionedCall) are call boundaries: free, their
bodies walked. ``If``/``StatelessIf``/``Case`` are costed as their most expensive branch;
``While``/``StatelessWhile`` bodies count once per iteration, with a trip count that is
explicit, inferred (a loop variable starting at a constant, stepped by a constant, compared
with a constant bound — ``maximum_iterations`` is one), or the default, reported as assumed.

A library op counts as the op (``composites``): a Keras norm layer's scope, or a ``Gelu`` or
``LogSigmoid`` function scope, is one record of the op's kind; its graph ops are counted as
executed and modeled, part of that record.

Each graph op that does work is also one kernel, executed as often as its records
(``kernels.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.errors import AdapterError
from ...core.records import LoopAssumption, Operation
from .._labels import Origins
from .._walk import Loops, WalkState, closed_form_trips, lower, take_costliest_branch
from .composites import NormLayer, fold_groups
from .kernels import KernelLog
from .table import REGISTRY, TABLE, TfContext, attr, constant_value

CALL_BOUNDARY = "a function call: its body's ops are counted instead"
CALLS = ("PartitionedCall", "StatefulPartitionedCall")
WHILES = ("While", "StatelessWhile")
IFS = ("If", "StatelessIf")
_COMPARE = {"Less": "lt", "LessEqual": "le", "Greater": "gt", "GreaterEqual": "ge"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _scope(prefix: str | None, op_name: str) -> str | None:
    """An op's scope: its name's path under the calling op's scope ``prefix``.

    The ops of a function body (a Keras LSTM's ``while`` body) may carry the full path of
    the layer that built them (``sequential/lstm/while/lstm_cell/MatMul`` called from scope
    ``sequential/lstm``): the path parts the prefix ends with and the name starts with are
    written once, so the scope reads ``sequential/lstm/while/lstm_cell``, not the path twice.
    """
    local = op_name.rsplit("/", 1)[0] if "/" in op_name else ""
    if not (prefix and local):
        return prefix or local or None
    outer, inner = prefix.split("/"), local.split("/")
    for overlap in range(min(len(outer), len(inner)), 0, -1):
        if outer[-overlap:] == inner[:overlap]:
            inner = inner[overlap:]
            break
    return "/".join(outer + inner)


def _function_graph(graph: Any, op: Any, attr_name: str) -> Any:
    name = op.get_attr(attr_name).name
    try:
        return graph._get_function(name).graph
    except Exception as error:  # a function this graph cannot resolve
        raise AdapterError(
            f"TensorFlowAdapter: {op.type} {op.name} calls {name!r}, which is not in the graph"
        ) from error


class Walker:
    """One walk of one concrete function; trip counts keyed by While index or label."""

    def __init__(
        self,
        trip_counts: Mapping[int | str, int],
        default_trip_count: int,
        layers: Mapping[str, NormLayer | None] | None = None,
        training: bool = False,
    ) -> None:
        self.loops = Loops(trip_counts, default_trip_count)
        self.layers = dict(layers or {})  # Keras norm layers by name (``composites.norm_layers``)
        self.training = training
        self.origins = Origins()
        self.kernels = KernelLog()  # one per graph op that does work (``kernels.py``)
        self.walked: list[Operation] = []  # the records as walked, before labels: kernels find theirs here
        self.xla = False  # whether a call compiles its function with XLA (jit_compile=True)
        # The node-name path XLA writes into an HLO instruction's op_name (``hlo_map.py``):
        # a call or a conditional prefixes its body's ops with its own name, a loop body does not.
        self.hlo_prefix = ""
        self.hlo_loops: list[tuple[str, LoopAssumption]] = []  # (the While's op_name, its loop)

    def run(self, graph: Any) -> WalkState:
        state = WalkState()
        self.walk(graph, 1, None, state)
        self.loops.check()
        self.walked = list(state.operations)
        # Two records of one scope named MatMul: the graph op's own name (MatMul_1) tells them apart.
        state.operations = self.origins.label(state.operations, lambda name: name.rsplit("/", 1)[-1])
        return state

    def walk(self, graph: Any, count: int, prefix: str | None, state: WalkState) -> None:
        live = _live_ops(graph)
        groups = fold_groups(graph, live, self.layers, self.training, prefix, count)
        pruned = 0
        for op in graph.get_operations():
            before = len(state.operations)
            if id(op) not in live:
                pruned += 1
            elif id(op) in groups and op.type != "Placeholder":
                group = groups[id(op)]
                if group.record is not None:  # the group's one record, at its first op
                    state.operations.append(group.record)
                    names = tuple(self.hlo_prefix + str(member.name) for member in group.members)
                    self.kernels.modeled(None, group.record.name, group.record.scope, [group.record], count, names)
                    group.record = None
                state.static += 1
                state.executed += count
                state.modeled += count
            else:
                self.operation(graph, op, count, prefix, state)
            if len(state.operations) > before:
                self.origins.mark(state.operations[before:], str(op.name))
        if pruned:
            state.notes.append(
                f"{pruned} op(s) of {getattr(graph, 'name', 'the graph')} feed no output and are pruned by TensorFlow "
                f"before running; not counted"
            )

    def operation(self, graph: Any, op: Any, count: int, prefix: str | None, state: WalkState) -> None:
        kind = str(op.type)
        scope = _scope(prefix, op.name)
        state.static += 1
        state.executed += count
        if kind in CALLS:
            self.xla = self.xla or attr(op, "_XlaMustCompile", False) is True
            state.free += count
            state.free_reasons[kind] = CALL_BOUNDARY
            outer, self.hlo_prefix = self.hlo_prefix, f"{self.hlo_prefix}{op.name}/"
            self.walk(_function_graph(graph, op, "f"), count, scope, state)
            self.hlo_prefix = outer
            return
        if kind in WHILES:
            self._while(graph, op, count, scope, state)
            return
        if kind in IFS or kind in ("Case", "StatelessCase"):
            self._branches(graph, op, count, scope, state)
            return
        start, free = len(state.operations), state.free
        lower(state, REGISTRY, TABLE.get(kind), kind, count, (op, TfContext(scope, count)), where=op.name)
        if len(state.operations) > start:
            self.kernels.modeled(op, kind, scope, state.operations[start:], count, (self.hlo_prefix + str(op.name),))
        elif state.free == free:
            self.kernels.unmodeled(op, scope, count)

    def _branches(self, graph: Any, op: Any, count: int, scope: str | None, state: WalkState) -> None:
        if op.type in IFS:
            graphs = [_function_graph(graph, op, "then_branch"), _function_graph(graph, op, "else_branch")]
        else:
            names = [f.name for f in op.get_attr("branches")]
            graphs = [graph._get_function(name).graph for name in names]
        walked, logs, outer = [], [], self.kernels
        prefix, self.hlo_prefix = self.hlo_prefix, f"{self.hlo_prefix}{op.name}/"
        for branch in graphs:
            branch_state = WalkState()
            self.kernels = KernelLog()
            self.walk(branch, count, scope, branch_state)
            walked.append(branch_state)
            logs.append(self.kernels)
        self.kernels, self.hlo_prefix = outer, prefix
        chosen = take_costliest_branch(state, walked, count, op.type, f"{op.type} {op.name}", "ops")
        outer.extend(logs[chosen])  # the other branches' ops are not counted: no kernels

    def _while(self, graph: Any, op: Any, count: int, scope: str | None, state: WalkState) -> None:
        cond = _function_graph(graph, op, "cond")
        body = _function_graph(graph, op, "body")
        loop = self.loops.enter(scope, lambda: infer_trip_count(op, cond, body), op.name)
        trips = loop.trip_count
        state.free += count
        state.free_reasons[op.type] = "a loop: its condition and body are counted once per iteration"
        state.loops.append(loop)
        self.hlo_loops.append((self.hlo_prefix + str(op.name), loop))
        prefix, self.hlo_prefix = self.hlo_prefix, ""  # XLA compiles a loop's functions with their own names
        with self.origins.inside(loop.label.rsplit("/", 1)[-1]):
            self.walk(cond, count * (trips + 1), scope, state)
            self.walk(body, count * trips, scope, state)
        self.hlo_prefix = prefix


def _live_ops(graph: Any) -> set[int]:
    """Ops that run: those an output or a control output needs (TensorFlow prunes the rest)."""
    stack = [t.op for t in graph.outputs] + list(getattr(graph, "control_outputs", ()))
    stack += [op for op in graph.get_operations() if op.type in ("NoOp",) and not op.outputs]
    live: set[int] = set()
    while stack:
        op = stack.pop()
        if id(op) in live:
            continue
        live.add(id(op))
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return live


def _number(tensor: Any) -> float | None:
    value = constant_value(tensor)
    if value is None or getattr(value, "size", 1) != 1:
        return None
    return float(value.reshape(()) if hasattr(value, "reshape") else value)


def _through_identity(tensor: Any) -> Any:
    while tensor.op.type == "Identity":
        tensor = tensor.op.inputs[0]
    return tensor


def infer_trip_count(op: Any, cond: Any, body: Any) -> int | None:
    """The fewest iterations any counted comparison in the condition allows, or None.

    The condition may AND several comparisons (``maximum_iterations`` adds one); the loop
    stops at the first that fails, so the smallest inferable count is the trip count only
    when the other terms hold that long — a bound, said as such by the caller's source.
    """
    loop_inputs = list(op.inputs)
    placeholders = {id(t): i for i, t in enumerate(cond.inputs[: len(loop_inputs)])}
    body_inputs = list(body.inputs[: len(loop_inputs)])
    counts = []
    for cop in cond.get_operations():
        relation = _COMPARE.get(cop.type)
        if relation is None:
            continue
        lhs, rhs = (_through_identity(t) for t in cop.inputs)
        if id(lhs) in placeholders:
            var, bound_tensor = placeholders[id(lhs)], rhs
        elif id(rhs) in placeholders:
            var, bound_tensor, relation = placeholders[id(rhs)], lhs, _FLIP[relation]
        else:
            continue
        bound = _number(bound_tensor)
        if bound is None and id(bound_tensor) in placeholders:  # a loop-invariant bound fed from outside
            bound = _number(_through_identity(loop_inputs[placeholders[id(bound_tensor)]]))
        start = _number(_through_identity(loop_inputs[var]))
        step = _body_step(body, body_inputs, var)
        if bound is None or start is None or step is None or step == 0:
            continue
        trips = closed_form_trips(start, bound, step, relation)
        if trips is not None:
            counts.append(trips)
    return min(counts) if counts else None


def _body_step(body: Any, body_inputs: list[Any], var: int) -> float | None:
    if var >= len(body.outputs):
        return None
    update = _through_identity(body.outputs[var]).op
    if update.type not in ("AddV2", "Add", "Sub") or len(update.inputs) != 2:
        return None
    a, b = (_through_identity(t) for t in update.inputs)
    sign = -1.0 if update.type == "Sub" else 1.0
    if a is body_inputs[var]:
        amount = _number(b)
        return None if amount is None else sign * amount
    if b is body_inputs[var] and update.type != "Sub":
        return _number(a)
    return None
