"""Library ops written as several graph ops, recognised as the ops they are.

The catalog's convention is that an op counts by its definition at default parameters, so
the same op counts the same in every framework: *a library op counts as the op*. Keras's
``LayerNormalization``, ``GroupNormalization`` and (Keras 3, inference)
``BatchNormalization`` emit a handful of graph ops under the layer's name scope;
``tf.nn.gelu`` and ``tf.math.log_sigmoid`` emit theirs under a ``Gelu``/``LogSigmoid`` scope.
Each such scope is one record of the op's kind — one read of its input (and parameters),
one write of its output, what Grappler/XLA fuse it into — and its graph ops are counted as
executed and modeled, part of that record.

A scope folds only when it is exactly one op, checked against what its ops compute, never by
its name alone: one floating input from outside (parameters come through the scope's own
``ReadVariableOp``s), one output of the input's shape; every op of a type such an op is made
of (``_MADE_OF``: elementwise arithmetic, the statistics' reductions, reshapes and variable
reads — no MatMul, convolution, gather, call or control flow); and its ops, lowered one by
one, all modeled and counting within a band of the record (at least 1/2, at most 4× + 64
FLOPs; Keras's own layers and tf.nn.gelu walk at 0.9 to 1.4× the record). A user's
``tf.name_scope("Gelu")`` around a matmul, or a Dense layer named like a norm layer, fails
and is walked as usual, counted exactly as written. Keras's
``silu`` and ``mish`` have no scope of their own (``tf.nn.silu`` runs inside a custom-gradient
function; ``mish`` is three plain ops), so they stay counted op by op.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...core.records import Operation
from .._walk import WalkState, lower
from .table import REGISTRY, TABLE, TfContext

#: tf.function name scopes → why the scope is the op (the entry is chosen from its ops).
NAMED_SCOPES = {
    "Gelu": "tf.nn.gelu: 0.5·x·erfc(-x/√2), or with approximate=True the tanh form",
    "LogSigmoid": "tf.math.log_sigmoid: -softplus(-x)",
}
NORM_LAYERS = ("LayerNormalization", "GroupNormalization", "BatchNormalization")
#: The op types Keras's norm layers, tf.nn.gelu and tf.math.log_sigmoid are written in, with room
#: for the forms other versions write (fused batch norm, moments): elementwise and reductions only.
_MADE_OF = frozenset(
    {
        "Placeholder", "Const", "Identity", "ReadVariableOp", "Reshape", "Squeeze", "ExpandDims", "Shape",
        "Cast", "StopGradient", "AddV2", "Add", "Sub", "Mul", "RealDiv", "Neg", "Square", "SquaredDifference",
        "Sqrt", "Rsqrt", "Pow", "Exp", "Log", "Log1p", "Erf", "Erfc", "Tanh", "Sigmoid", "Softplus",
        "Maximum", "Minimum", "Mean", "Sum", "FusedBatchNormV3", "FusedBatchNorm", "BroadcastTo",
    }
)  # fmt: skip
_BAND = (0.5, 4, 64)  # walked FLOPs against the record's: at least 1/2, at most 4× + 64
_UNIQUIFIED = re.compile(r"^(.*)_\d+$")


@dataclass(frozen=True)
class NormLayer:
    """What a Keras norm layer's record needs beyond the graph: its class and configuration."""

    kind: str  # the layer's class name
    axes: tuple[int, ...]
    center: bool
    scale: bool
    groups: int = 1


def norm_layers(model: Any) -> dict[str, NormLayer | None]:
    """Keras norm layers of ``model`` by name (None for a form no rule describes: RMS scaling,
    a synchronised batch norm, two layers of one name configured differently)."""
    found: dict[str, NormLayer | None] = {}
    seen: set[int] = set()
    stack = [model]
    while stack:
        layer = stack.pop()
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        stack.extend(getattr(layer, "layers", ()) or ())
        cls = type(layer).__name__
        if cls not in NORM_LAYERS or not type(layer).__module__.startswith("keras"):
            continue
        axis = layer.axis
        axes = (axis,) if isinstance(axis, int) else tuple(int(a) for a in axis)
        config: NormLayer | None = NormLayer(
            cls, axes, bool(layer.center), bool(layer.scale), int(getattr(layer, "groups", 1))
        )
        if getattr(layer, "rms_scaling", False) or getattr(layer, "synchronized", False):
            config = None
        name = str(layer.name)
        found[name] = config if found.get(name, config) == config else None
    return found


def _layer_of(component: str, layers: Mapping[str, NormLayer | None]) -> NormLayer | None:
    """The norm layer a scope component names: Keras may re-enter ``name`` as ``name_1``."""
    names = {component}
    base = _UNIQUIFIED.match(component)
    if base:
        names.add(base.group(1))
    configs = {layers[n] for n in names if n in layers}
    return configs.pop() if len(configs) == 1 else None


@dataclass
class Group:
    prefix: str
    members: list[Any]
    record: Operation | None = None


def fold_groups(
    graph: Any, live: set[int], layers: Mapping[str, NormLayer | None], training: bool, prefix: str | None, count: int
) -> dict[int, Group]:
    """Each live op of ``graph`` that belongs to a recognised scope → its group (with the record)."""
    by_prefix: dict[str, Group] = {}
    configs: dict[str, NormLayer | str] = {}
    for op in graph.get_operations():
        if id(op) not in live:
            continue
        parts = op.name.split("/")
        for depth, component in enumerate(parts):
            config: NormLayer | str | None = component if component in NAMED_SCOPES else _layer_of(component, layers)
            if config is None:
                continue
            key = "/".join(parts[: depth + 1])
            by_prefix.setdefault(key, Group(key, [])).members.append(op)
            configs[key] = config
            break
    found: dict[int, Group] = {}
    for key, group in by_prefix.items():
        try:
            group.record = _record(graph, group, configs[key], training, prefix, count)
            if group.record is not None and not _walks_like(group, group.record):
                group.record = None
        except Exception:  # a record its rule rejects: walk the ops instead
            group.record = None
        if group.record is not None:
            found.update((id(op), group) for op in group.members)
    return found


def _walks_like(group: Group, record: Operation) -> bool:
    """Whether the group's ops, lowered one by one (nothing tallied), are all modeled and count
    within ``_BAND`` of the record."""
    walked = WalkState()
    for op in group.members:
        lower(walked, REGISTRY, TABLE.get(op.type), str(op.type), 1, (op, TfContext(None, 1)))
    flops = sum(op.cost.flops * op.count for op in walked.operations)
    low, factor, constant = _BAND
    folded = record.cost.flops
    return not walked.unmodeled and low * folded <= flops <= factor * folded + constant


def _record(
    graph: Any, group: Group, config: NormLayer | str, training: bool, prefix: str | None, count: int
) -> Operation | None:
    members = {id(op) for op in group.members}
    if any(op.type not in _MADE_OF for op in group.members):
        return None
    outside = {
        id(t): t
        for op in group.members
        for t in op.inputs
        if id(t.op) not in members and t.dtype.is_floating and t.op.type not in ("Const",)
    }
    graph_outputs = {id(t) for t in graph.outputs}
    results = [
        t
        for op in group.members
        for t in op.outputs
        if id(t) in graph_outputs or any(id(c) not in members for c in t.consumers())
    ]
    if len(outside) != 1 or len(results) != 1:
        return None
    (x,), (y,) = outside.values(), results
    shape = TfContext.shape(x)
    if TfContext.shape(y) != shape or not shape:
        return None
    scope = f"{prefix}/{group.prefix}" if prefix else group.prefix
    ctx = TfContext(scope, count)
    first = group.members[0]
    if isinstance(config, str):
        types = {op.type for op in group.members}
        entry = {"Gelu": "gelu_tanh" if "Tanh" in types else "gelu", "LogSigmoid": "log_sigmoid"}[config]
        return ctx.op(first, "elementwise", [x], y, attrs={"op": entry}, name=config)
    return _norm_record(ctx, first, x, y, shape, config, training)


def _norm_record(
    ctx: TfContext, first: Any, x: Any, y: Any, shape: tuple[int, ...], layer: NormLayer, training: bool
) -> Operation | None:
    rank = len(shape)
    axes = tuple(sorted(a % rank for a in layer.axes))
    dtype = ctx.dtype(x)
    affine = [used for used in (layer.scale, layer.center) if used]
    if layer.kind == "LayerNormalization":
        if axes != tuple(range(rank - len(axes), rank)):
            return None
        features = shape[-len(axes) :]
        extra = (features,) * len(affine)
        return ctx.op(
            first, "layernorm", [x], y, attrs={"normalized_dims": len(axes)}, input_shapes=(shape, *extra),
            input_dtypes=(dtype,) * (1 + len(extra)), name="LayerNormalization",
        )  # fmt: skip
    if len(axes) != 1 or rank < 2 or axes[0] not in (1, rank - 1):
        return None
    channel = axes[0]
    canonical = shape if channel == 1 else (shape[0], shape[-1], *shape[1:-1])
    channels = canonical[1]
    if layer.kind == "GroupNormalization":
        extra = ((channels,),) * len(affine)
        return ctx.op(
            first, "groupnorm", [x], y, attrs={"groups": layer.groups}, input_shapes=(canonical, *extra),
            output_shape=canonical, input_dtypes=(dtype,) * (1 + len(extra)), name="GroupNormalization",
        )  # fmt: skip
    if training or layer.scale != layer.center:
        return None  # training updates the moving statistics; one of scale/shift is no rule's form
    per_channel = 2 + len(affine)  # moving mean, moving variance[, gamma, beta]
    return ctx.op(
        first, "batchnorm", [x], y, attrs={"affine": layer.scale, "training": False},
        input_shapes=(canonical, *((channels,),) * per_channel), output_shape=canonical,
        input_dtypes=(dtype,) * (1 + per_channel), name="BatchNormalization",
    )  # fmt: skip
