"""Measured time per kernel of a TensorFlow program, from ``tf.profiler`` (``core/profile.py``).

``profile_concrete`` runs the concrete function the trace walked — once outside the profiler
(warm), then ``runs`` times under ``tf.profiler.experimental.start``/``stop`` (host tracer level
1, no Python tracer), each run waiting on its outputs as ``benchmark`` does — reads the XPlane
file the profiler wrote (``xplane.py``) and joins its events to ``Trace.kernels``:

- **graph-op kernels** (one per graph op, ``kernels.py``): by node name. A walk of the same
  concrete function must give the trace's kernels (else AdapterError), and names each kernel's
  graph op. The function is run through a fresh ``tf.function`` calling it, so that its warm run
  instantiates it and TensorFlow hands over the graph it runs (graph collection: the nodes left
  after Grappler and oneDNN); the call's name (``StatefulPartitionedCall/``) is taken off the
  front of every node name. A
  node's name is the trace's name for its op (``Walker.hlo_prefix``, as XLA's ``op_name``):
  a loop's nodes (``while/body/_3/while/add``) by what follows the innermost loop's marker
  (``while/add``); a conditional's branch marker (``cond/then/_5/``) is left out. An event
  whose name matches several kernels (the same loop body reached from two places) is joined to
  none (noted), never guessed. A folded library op (a Keras norm layer: one kernel, many graph
  ops) counts each of its ops' events.
- **fusions**: an event whose op type is not its node's (``…/Relu:_MklNativeFusedConv2D``, a
  oneDNN rewrite of Conv2D + BiasAdd + Relu, named after the last) ran the nodes it replaced:
  those of its node's inputs, and their inputs, that are not in the graph TensorFlow ran. Its
  interval is cut into equal consecutive slices, one per kernel of those nodes (their bounds
  are not used), so each counts one execution; a note names the fusion. A node Grappler named
  after the one it replaced (``while/Exp/unary_ops_composition:_UnaryOpsComposition`` for Neg +
  Exp) is that node's fusion, when the node is not in the graph run and the name is not an op of
  the traced graph. Without the graph run (not collected) a fusion's time is on its node's
  kernel, noted. A kernel whose events come from several nodes (a chain of adds Grappler runs as
  an ``AddN`` and an ``AddV2``) counts the events of the node that ran most, as a folded op does:
  parts of one execution, not more runs (noted).
- **XLA kernels** (a ``jit_compile`` function, ``xla.py``): by the ``hlo_op`` stat, events of the
  module whose name starts with the function's (``a_inference_f_25__…``: the executed module is
  not the one compiled for the trace). Only when every executed instruction is a kernel of the
  trace's module (a ``while``, ``conditional`` or ``call`` encloses its body's events and is
  skipped); otherwise nothing is joined (noted), since the instruction names of two
  compilations need not agree. A kernel in the condition of a loop XLA runs counted has none.

Per kernel: ``seconds`` is the union of its events' intervals, ``events`` how many;
``kernel_seconds`` the union of all matched; ``wall_seconds`` ``time.perf_counter`` around the
profiled runs. Events that match no kernel are listed in ``unmatched`` — except bookkeeping that
does no work and has no kernel: op types free in the op table (``Identity``, ``NoOp``,
``ReadVariableOp``, ``Reshape``, ``Const``...), the executor's own (``_Send``/``_Recv``, ``_Arg``/
``_Retval``, loop frames ``Enter``/``Exit``/``Merge``/``Switch``/``NextIteration``/``LoopCond``)
and containers whose events enclose others (a function, a call, an XLA launch). Notes name the
kernels with no event (Grappler removed or folded them, or another branch ran) and those whose
count differs from ``executions × runs``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

import tensorflow as tf

from ...core.errors import AdapterError
from ...core.kernels import Kernel
from ...core.profile import Profile
from ...core.records import Trace
from ...measure.timing import keep_warm
from .kernels import Pending
from .profile_join import CONTAINERS, Interval, base_type, build_profile, count_notes, free_type, join_xla, shown
from .walker import CALLS, Walker
from .xla import XLA_SOURCE
from .xplane import Event, read_events

__all__ = ["keeping", "kept", "profile_concrete", "runtime_key"]

_LOOP = re.compile(r"/(?:body|cond)/_\d+/")
_BRANCH = re.compile(r"/(?:then|else|branch\d+)/_\d+/")
#: A node Grappler's arithmetic optimizer made in place of ``scope/node`` (a stage's name, a leaf).
_REWRITE = re.compile(r"^(?P<scope>(?:.*/)?)ArithmeticOptimizer/[A-Za-z]+_(?:Leaf_\d+_)?(?P<node>[^/]+)$")


def runtime_key(node: str) -> str:
    """The trace's name for the op a runtime node runs (the module docstring)."""
    return _BRANCH.sub("/", _LOOP.split(node)[-1])


def _has_op(graph: Any, name: str) -> bool:
    try:
        graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return False
    return True


#: While a calibration goes round its programs (``keeping``): what ``profile`` built for a program (its runner, the
#: graph run, its kernels' graph ops: a fresh runner traced and instantiated, the program walked again, was half a
#: small one's profile) and ``benchmark``'s wrapper of a tf.function, by the function's id (kept with it, so that id
#: stays its own). None outside: a user's model is not held after its analysis.
_KEPT: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar("neural_cost_tf_kept", default=None)


@contextlib.contextmanager
def keeping() -> Iterator[None]:
    """Inside the block, ``profile`` and ``benchmark`` reuse what they built for the same function (``_KEPT``)."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def kept() -> dict[tuple[Any, ...], Any] | None:
    """The block's store (``keeping``), None outside one."""
    return _KEPT.get()


def profile_concrete(
    concrete: Any,
    inputs: Sequence[Any],
    trace: Trace,
    runs: int,
    *,
    walker: Walker,
    clean: Callable[[str | None], str | None] | None,
    saved: Sequence[tuple[Any, Any]] = (),
    finish: Callable[[Any], None],
) -> Profile:
    """``runs`` profiled runs of ``concrete`` (the function ``trace`` walked) on ``inputs``, joined
    to ``trace.kernels``; ``walker`` (fresh) walks it again to name each kernel's graph op,
    ``clean`` as the trace cleaned scopes. Every variable in ``saved`` (``(variable, value)``) is
    put back afterwards. AdapterError when there is nothing to join to or the profiler fails."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise AdapterError(f"TensorFlowAdapter.profile: runs={runs!r}; pass a positive number of profiled runs")
    if not trace.kernels:
        raise AdapterError("TensorFlowAdapter.profile: the trace has no kernels to join the profiler's events to")
    # each argument as it was given: a tensor, or a list, tuple or dict of them (a Keras model of several inputs)
    tensors = [tf.nest.map_structure(lambda v: v if isinstance(v, tf.Tensor) else tf.convert_to_tensor(v), value)
               for value in inputs]  # fmt: skip
    xla = trace.kernel_source == XLA_SOURCE
    store = _KEPT.get()
    key = ("profile", id(concrete), xla, tuple((tuple(t.shape), t.dtype.name) for t in tf.nest.flatten(tensors)),
           tuple((k.name, k.kind, k.executions) for k in trace.kernels))  # fmt: skip
    known = None if store is None else store.get(key)
    try:
        if known is None:
            placed = [] if xla else _placed(walker, concrete, clean, trace.kernels)
            # a function of its own calling it: its first run instantiates it, and hands over the graph run
            runner: Any = (
                concrete if xla else tf.function(lambda *args: concrete(*args)).get_concrete_function(*tensors)
            )
            graph, why = _warm(runner, tensors, finish, collect=not xla)
            if store is not None:
                store[key] = (concrete, runner, placed, graph, why)
        else:
            _, runner, placed, graph, why = known
            _warm(runner, tensors, finish, collect=False)
        keep_warm(lambda: finish(runner(*tensors)))  # analyze's warm_seconds: the threads awake
        events, wall, devices = _record(runner, tensors, finish, runs)
    finally:
        for variable, value in saved:
            variable.assign(value)
    if xla:
        name = concrete.name.decode() if isinstance(concrete.name, bytes) else str(concrete.name)
        profile = join_xla(events, wall, runs, trace.kernels, name)
    else:
        calls = [op.name for op in runner.graph.get_operations() if op.type in CALLS]
        call = f"{calls[0]}/" if len(calls) == 1 else ""
        profile = _GraphJoin(trace.kernels, placed, graph, why, call).profile(events, wall, runs)
    if devices:
        note = (
            f"the events of {', '.join(devices)} are not read (their layout is not verified): the times are the "
            f"host's events, for an op on the device the time to launch it"
        )
        profile = dataclasses.replace(profile, notes=(*profile.notes, note))
    return profile


def _placed(
    walker: Walker, concrete: Any, clean: Callable[[str | None], str | None] | None, kernels: tuple[Kernel, ...]
) -> list[Pending]:
    """Each kernel's graph op, from a walk of ``concrete`` that must give the trace's kernels."""
    walker.run(concrete.graph)
    again = walker.kernels.kernels(walker.walked, walker.walked, clean or (lambda scope: scope))
    if [(k.name, k.kind, k.executions) for k in again] != [(k.name, k.kind, k.executions) for k in kernels]:
        raise AdapterError(
            "TensorFlowAdapter.profile: the program walked again for the profile has other kernels than the trace "
            "has; profile with the trace made from the same model, inputs and options"
        )
    return list(walker.kernels.placed)


def _warm(runner: Any, tensors: Sequence[Any], finish: Callable[[Any], None], collect: bool) -> tuple[Any, str]:
    """One run outside the profiler; with ``collect``, the node names of the graph TensorFlow ran
    (or None, and why not)."""
    context = None
    why = "graph collection was not asked for"
    if collect:
        try:
            from tensorflow.python.eager import context as eager

            context = eager.context()
            context.enable_run_metadata()
            context.enable_graph_collection()
        except Exception as error:  # a TensorFlow without graph collection: fusions stay on their node
            why = f"graph collection is unavailable ({type(error).__name__}: {error})"
            _collect_off(context)
            context = None
    metadata = None
    try:
        finish(runner(*tensors))
        if context is not None:
            metadata = context.export_run_metadata()
    except Exception as error:
        raise AdapterError(
            f"TensorFlowAdapter.profile: the warm run failed ({type(error).__name__}: {error})"
        ) from error
    finally:
        _collect_off(context)
    names = {
        str(node.name)
        for function in getattr(metadata, "function_graphs", ())
        for partition in function.partition_graphs
        for node in partition.node
    }
    if collect and context is not None and not names:
        why = "TensorFlow collected no graph for the run"
    return (names or None), why


def _collect_off(context: Any) -> None:
    for switch in ("disable_graph_collection", "disable_run_metadata"):
        try:
            getattr(context, switch)()
        except Exception:  # never switched on, or no context at all
            continue


def _record(
    runner: Any, tensors: Sequence[Any], finish: Callable[[Any], None], runs: int
) -> tuple[list[Event], float, list[str]]:
    """The events of ``runs`` runs under ``tf.profiler``, their wall time, the device planes not read."""
    with tempfile.TemporaryDirectory(prefix="neural-cost-profile-") as directory:
        try:
            options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=1, python_tracer_level=0)
            tf.profiler.experimental.start(directory, options=options)
        except Exception as error:
            raise AdapterError(
                f"tf.profiler could not start ({type(error).__name__}: {error}); is another profiler session running?"
            ) from error
        try:
            start = time.perf_counter()
            for _ in range(runs):
                finish(runner(*tensors))
            wall = time.perf_counter() - start
        except Exception as error:
            _stop(quiet=True)
            raise AdapterError(
                f"TensorFlowAdapter.profile: a profiled run failed ({type(error).__name__}: {error})"
            ) from error
        _stop(quiet=False)
        events, devices = read_events(directory)
    return events, wall, devices


def _stop(quiet: bool) -> None:
    try:
        tf.profiler.experimental.stop()
    except Exception as error:
        if not quiet:
            raise AdapterError(f"tf.profiler could not stop ({type(error).__name__}: {error})") from error


def _merged(groups: Iterable[list[int]]) -> tuple[tuple[int, ...], ...]:
    """The fusions' kernels (``Profile.fused``), those sharing a kernel merged into one group."""
    merged: list[set[int]] = []
    for group in groups:
        if len(group) < 2:
            continue
        joined = set(group)
        for other in [m for m in merged if m & joined]:
            joined |= other
            merged.remove(other)
        merged.append(joined)
    return tuple(sorted(tuple(sorted(m)) for m in merged))


class _GraphJoin:
    """Graph-op events joined to graph-op kernels (the module docstring)."""

    def __init__(
        self, kernels: tuple[Kernel, ...], placed: list[Pending], graph: set[str] | None, why: str, call: str
    ) -> None:
        self.kernels, self.placed, self.graph, self.why, self.call = kernels, placed, graph, why, call
        self.by_key: dict[str, list[int]] = defaultdict(list)
        graphs: dict[tuple[str, int], Any] = {}  # (the trace's name prefix of a function graph's ops, id) → graph
        for index, entry in enumerate(placed):
            for name in dict.fromkeys(entry.hlo):
                self.by_key[name].append(index)
            if entry.op is not None and entry.hlo and entry.hlo[0].endswith(str(entry.op.name)):
                graphs[(entry.hlo[0][: -len(str(entry.op.name))], id(entry.op.graph))] = entry.op.graph
        self.graphs = sorted(((prefix, g) for (prefix, _), g in graphs.items()), key=lambda item: -len(item[0]))
        self.of_op = {id(entry.op): index for index, entry in enumerate(placed) if entry.op is not None}
        self.members: dict[str, list[int]] = {}
        self.fused: dict[str, str] = {}  # node → what its fusion ran
        self.unknown: dict[str, str] = {}  # node → a note: a rewrite whose replaced nodes are not known
        self.ambiguous: dict[str, list[int]] = {}
        self.folded = {i for i, entry in enumerate(placed) if entry.op is None and len(entry.hlo) > 1}

    def profile(self, events: list[Event], wall: float, runs: int) -> Profile:
        matched: dict[int, list[Interval]] = defaultdict(list)
        unmatched: dict[str, list[Interval]] = defaultdict(list)
        per_node: dict[int, Counter[str]] = defaultdict(Counter)  # a folded op's events, by graph op
        for event in events:
            if event.hlo_op:  # an XLA cluster inside the graph: not one of the graph's kernels
                unmatched[f"{event.hlo_op} ({event.hlo_module})"].append((event.start, event.end, event.thread))
                continue
            if event.node == event.kind or event.kind in CONTAINERS:
                continue
            node, found = self._find(event)
            if found is None:
                if not free_type(event.kind):
                    unmatched[event.name].append((event.start, event.end, event.thread))
                continue
            members = self._members(found, node, event.kind)
            step = (event.end - event.start) / len(members)
            for j, member in enumerate(members):
                matched[member].append((event.start + j * step, event.start + (j + 1) * step, event.thread))
                per_node[member][event.node] += 1
        notes = list(self.unknown.values())
        if self.fused:
            notes.append(
                f"{len(self.fused)} fusion(s) ran several kernels as one op, its time shared among them in proportion "
                f"to each one's bound or expected time (each reads the op's ratio; its events are split evenly): "
                f"{shown(list(self.fused.values()))}"
            )
        if self.ambiguous:
            nodes = [f"{node} ({', '.join(self.kernels[i].name for i in ks)})" for node, ks in self.ambiguous.items()]
            notes.append(
                f"{len(nodes)} node(s) match several kernels by name ({shown(nodes)}): their events are joined to "
                f"none, listed as unmatched"
            )
        # a kernel whose events come from several graph nodes ran once a run, as the node that ran most:
        # a folded library op (one kernel, many graph ops), or one op Grappler rewrote into several nodes
        # (ArithmeticOptimizer's AddOpsRewrite: an AddN and an AddV2 for a chain of adds)
        counts = {i: max(nodes.values()) for i, nodes in per_node.items() if i in self.folded or len(nodes) > 1}
        folded = [self.kernels[i].name for i in sorted(counts) if i in self.folded]
        split = [self.kernels[i].name for i in sorted(counts) if i not in self.folded]
        if folded:
            notes.append(
                f"{len(folded)} folded library op(s) (a Keras norm layer, Gelu: one kernel) ran as several graph ops "
                f"({shown(folded)}): each one's time is the union of their events, its events those of the graph op "
                f"that ran most"
            )
        if split:
            notes.append(
                f"{len(split)} op(s) ran as several nodes Grappler made of them ({shown(split)}): each one's time is "
                f"the union of their events, its events those of the node that ran most"
            )
        count_notes(matched, self.kernels, runs, notes, counts)
        return build_profile(matched, unmatched, wall, runs, notes, counts, _merged(self.members.values()))

    def _find(self, event: Event) -> tuple[str, int | None]:
        """``(node, its kernel)``: the event's node, or the node a Grappler rewrite replaced by a
        node it named after it, when that one is not in the graph run and the name is no op of the
        traced graph: ``while/Exp/unary_ops_composition`` (Neg + Exp) for ``while/Exp``,
        ``ln/ArithmeticOptimizer/AddOpsRewrite_Leaf_1_add_2`` for ``ln/add_2``."""
        node, kind = event.node, event.kind
        found = self._kernel(self._key(node), kind, node)
        if found is not None or self.graph is None or free_type(kind):
            return node, found
        parent = node.rpartition("/")[0]
        rewrite = _REWRITE.match(node)
        for origin in (parent, rewrite and rewrite["scope"] + rewrite["node"]):
            if not origin or origin in self.graph:
                continue
            replaced = self._kernel(self._key(origin), kind, origin)
            op = self._op(replaced, origin) if replaced is not None else None
            prefix = origin[: len(origin) - len(str(op.name))] if op is not None else ""
            if op is not None and origin.endswith(str(op.name)) and not _has_op(op.graph, node[len(prefix) :]):
                return origin, replaced
        return node, None

    def _key(self, node: str) -> str:
        return runtime_key(node[len(self.call) :] if self.call and node.startswith(self.call) else node)

    def _kernel(self, key: str, kind: str, node: str) -> int | None:
        found = self.by_key.get(key, [])
        if len(found) > 1:
            same = [i for i in found if self.kernels[i].kind == base_type(kind)]
            if len(same) != 1:
                self.ambiguous[node] = found
                return None
            found = same
        return found[0] if found else None

    def _op(self, index: int, node: str) -> Any:
        """The traced graph op a runtime ``node`` of kernel ``index`` runs: its own, or for a folded
        library op the one of its ops so named, found in the function graph of its name's prefix."""
        op = self.placed[index].op
        if op is not None:
            return op
        key = self._key(node)
        for prefix, graph in self.graphs:
            if key.startswith(prefix) and _has_op(graph, key[len(prefix) :]):
                return graph.get_operation_by_name(key[len(prefix) :])
        return None

    def _members(self, index: int, node: str, kind: str) -> list[int]:
        """The kernels an event of ``node`` (its kernel ``index``) ran: more than one for a fusion."""
        if node in self.members:
            return self.members[node]
        members = [index]
        op, own = self._op(index, node), self.kernels[index]
        if op is not None and base_type(kind) != str(op.type) and str(node).endswith(str(op.name)):
            if self.graph is None:
                self.unknown[node] = (
                    f"{own.name} ran as {kind} ({node}), which may have replaced other nodes: the graph TensorFlow ran "
                    f"is not known ({self.why}), so its time is all on {own.name}"
                )
            else:
                members = self._replaced(op, node[: len(node) - len(str(op.name))], index)
                if len(members) > 1:
                    self.fused[node] = f"{kind} ran " + " + ".join(self.kernels[i].name for i in members)
        self.members[node] = members
        return members

    def _replaced(self, op: Any, prefix: str, index: int) -> list[int]:
        """``op``'s kernel and those of the ops it replaced: its inputs (and theirs) that are not in
        the graph TensorFlow ran, named at runtime ``prefix`` + their name."""
        assert self.graph is not None
        members = [index]
        seen = {str(op.name)}
        stack = [op]
        while stack:
            for tensor in stack.pop().inputs:
                source = tensor.op
                name = str(source.name)
                if name in seen:
                    continue
                seen.add(name)
                if prefix + name in self.graph:
                    continue
                member = self.of_op.get(id(source))
                if member is not None and member not in members:
                    members.append(member)
                stack.append(source)
        return sorted(members)
