"""Table entries for PyTorch's embedding, gather/scatter and indexing ops, and their backward.

Each builder turns one executed aten call into records of existing kinds, permuting
PyTorch's layouts into the ones the rules expect; the FLOP and byte arithmetic stays in
``neural_cost.costs``. Conventions beyond ARCHITECTURE.md, each stated where it is used:

- Scatters write only the touched elements; out-of-place forms first copy ``self``
  (a ``<op>.copy`` record), as the kernels do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ...core.records import Shape
from .common import Ops, Spec, _arguments, _broadcast_elements, _is_tensor, _nonzero_count, _record, _spec
from .table import AtenCall, TorchContext, lowers

# --- embedding, gather, indexing --------------------------------------------------------


@lowers("embedding")
def _embedding(call: AtenCall, ctx: TorchContext) -> Ops:
    """(weight (V, D), indices) → ``embedding``: the touched rows and the indices read."""
    return [ctx.op(call, "embedding", [call.args[0], call.args[1]], call.out)]


def _indices_spec(ctx: TorchContext, indices: Sequence[Any]) -> Spec:
    """Advanced-indexing tensors (None for a full slice) as one input: a single index
    keeps its shape; several are read as one flat run of their elements (int64 when their
    types differ)."""
    tensors = [t for t in indices if _is_tensor(t)]
    if len(tensors) == 1:
        return _spec(ctx, tensors[0])
    if not tensors:
        return (0,), "int64"
    dtypes = {ctx.dtype(t) for t in tensors}
    if len(dtypes) == 1:
        return (sum(int(t.numel()) for t in tensors),), dtypes.pop()
    total = sum(int(t.numel()) * t.element_size() for t in tensors)
    return (-(-total // 8),), "int64"


@lowers("index_select", "gather", "take", "index", "_unsafe_index", "masked_select")
def _gather(call: AtenCall, ctx: TorchContext) -> Ops:
    """``gather``: as many elements of ``self`` read as the output has, plus the indices
    (index_select's, gather's, take's index; ``x[i, j]``'s index tensors; masked_select's
    whole mask). torch.gather's output has the index's shape."""
    x = call.args[0]
    if call.name in ("index", "_unsafe_index"):
        index = _indices_spec(ctx, call.args[1])
    elif call.name in ("index_select", "gather"):
        index = _spec(ctx, call.arg(2, "index"))
    else:
        index = _spec(ctx, call.args[1])
    return [_record(ctx, call.name, "gather", [_spec(ctx, x), index], _spec(ctx, call.out))]


def _scatter(
    call: AtenCall,
    ctx: TorchContext,
    index: Spec,
    updates: Spec,
    mode: str,
    touched: int,
) -> Ops:
    """A scatter into ``self`` (in place for a trailing-underscore op; an out-of-place one
    first copies ``self`` to its output, as the kernel does): the touched elements written,
    the indices and updates read, a combining mode also reading the old touched values."""
    x, out = call.args[0], call.out
    records: Ops = []
    if not call.name.endswith("_"):
        records.append(_record(ctx, f"{call.name}.copy", "copy", [_spec(ctx, x)], _spec(ctx, out)))
    attrs: dict[str, Any] = {"mode": mode}
    if touched != math.prod(updates[0]):
        attrs["touched"] = touched
    records.append(_record(ctx, call.name, "scatter", [_spec(ctx, out), index, updates], _spec(ctx, out), attrs=attrs))
    return records


def _updates(ctx: TorchContext, value: Any, shape: Shape, like: Any) -> Spec:
    """The updates as read: a tensor's first ``shape`` elements, or one scalar."""
    if _is_tensor(value):
        return (shape if value.numel() >= math.prod(shape) else ctx.shape(value)), ctx.dtype(value)
    return (), ctx.dtype(like)


_REDUCE_MODES = {
    "sum": "add",
    "add": "add",
    "prod": "mul",
    "multiply": "mul",
    "mean": "add",
    "amax": "max",
    "amin": "min",
}


@lowers("scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce", "scatter_reduce_")
def _scatter_dim(call: AtenCall, ctx: TorchContext) -> Ops:
    """torch.scatter family, (self, dim, index, src or value[, reduce]): one update per
    index element (src is read only where the index reaches, a scalar value once);
    scatter_add and reduce='sum'/'add' add, 'prod'/'multiply' multiply, 'amax'/'amin'
    compare. reduce='mean' also counts the contributions (a scatter-add of ones) and
    divides the whole output by the counts (one divide per element)."""
    a = _arguments(call)
    x, index = a["self"], a["index"]
    index_shape = ctx.shape(index)
    source = a["src"] if "src" in a else a.get("value")
    reduce = a.get("reduce")
    mode = "add" if call.name.startswith("scatter_add") else _REDUCE_MODES.get(str(reduce), "update")
    touched = math.prod(index_shape)
    records = _scatter(call, ctx, _spec(ctx, index), _updates(ctx, source, index_shape, x), mode, touched)
    if reduce == "mean":
        out = _spec(ctx, call.out)
        counts = ((), out[1])
        records.append(
            _record(
                ctx,
                f"{call.name}.count",
                "scatter",
                [out, _spec(ctx, index), counts],
                out,
                attrs={"mode": "add", "touched": touched},
            )
        )
        records.append(_record(ctx, f"{call.name}.mean", "elementwise", [out], out, attrs={"op": "div"}))
    return records


def _indexed_elements(ctx: TorchContext, x: Any, indices: Sequence[Any]) -> int:
    """How many elements ``x[indices]`` has: the index tensors' broadcast shape (a boolean
    mask counts its set elements and consumes as many dims as it has) times the dims they
    leave whole."""
    shape = ctx.shape(x)
    dim, index_shapes, whole = 0, list[Shape](), 1
    for index in indices:
        if index is None:
            whole *= shape[dim]
            dim += 1
        elif index.dtype in (torch.bool, torch.uint8):
            index_shapes.append((_nonzero_count(index),))
            dim += index.dim()
        else:
            index_shapes.append(tuple(index.shape))
            dim += 1
    whole *= math.prod(shape[dim:])
    return _broadcast_elements(index_shapes) * whole


@lowers("index_put", "index_put_", "_index_put_impl_")
def _index_put(call: AtenCall, ctx: TorchContext) -> Ops:
    """``x[indices] = values`` (accumulate: ``+=``): a ``scatter`` of the indexed elements
    (a boolean mask's set elements), the values read once each (one scalar for
    ``x[mask] = 0``)."""
    a = _arguments(call)
    x, indices, values = a["self"], a["indices"], a["values"]
    touched = _indexed_elements(ctx, x, indices)
    mode = "add" if a["accumulate"] else "update"
    return _scatter(call, ctx, _indices_spec(ctx, indices), _spec(ctx, values), mode, touched)


@lowers("index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_")
def _index_dim(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, dim, index, source or value): index_add adds each slice of source into the
    slices of self the index names (alpha ≠ 1 scales source first: an ``elementwise``
    record), index_copy writes them, index_fill writes one value into them."""
    a = _arguments(call)
    x, dim, index = a["self"], int(a["dim"]), a["index"]
    if "source" in a:
        source = a["source"]
        records = _scatter(
            call,
            ctx,
            _spec(ctx, index),
            _spec(ctx, source),
            "add" if call.name.startswith("index_add") else "update",
            int(source.numel()),
        )
        if a.get("alpha", 1) != 1:
            scaled = _spec(ctx, source)
            records.insert(0, _record(ctx, f"{call.name}.alpha", "elementwise", [scaled], scaled, attrs={"op": "mul"}))
        return records
    shape = ctx.shape(x)
    per_slice = math.prod(shape) // shape[dim] if shape and shape[dim] else 1
    touched = int(index.numel()) * per_slice
    return _scatter(call, ctx, _spec(ctx, index), _updates(ctx, a["value"], (), x), "update", touched)


@lowers("put", "put_")
def _put(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, index, source, accumulate): flat-index scatter of source, one element per index."""
    a = _arguments(call)
    index, source = a["index"], a["source"]
    mode = "add" if a["accumulate"] else "update"
    return _scatter(call, ctx, _spec(ctx, index), _spec(ctx, source), mode, int(index.numel()))


@lowers("masked_scatter", "masked_scatter_")
def _masked_scatter(call: AtenCall, ctx: TorchContext) -> Ops:
    """(self, mask, source): the mask read whole, source's first n elements written where
    it is set (n = set elements of the mask broadcast to self)."""
    x, mask, source = call.args[:3]
    touched = _nonzero_count(torch.broadcast_to(mask, x.shape)) if mask.shape != x.shape else _nonzero_count(mask)
    updates = ((touched,), ctx.dtype(source))
    return _scatter(call, ctx, _spec(ctx, mask), updates, "update", touched)


@lowers("embedding_dense_backward")
def _embedding_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad_output (..., D), indices, num_weights, padding_idx, scale_grad_by_freq) → (V, D):
    the gradient table zeroed (written whole), then a scatter-add of every grad row into
    the row its index names (padding_idx rows counted too: an upper bound). With
    scale_grad_by_freq each grad element is also divided by its row's count."""
    a = _arguments(call)
    grad, indices = a["grad_output"], a["indices"]
    out = _spec(ctx, call.out)
    updates = _spec(ctx, grad)
    records = [_record(ctx, f"{call.name}.zero", "elementwise", [], out, attrs={"op": "fill"})]
    if a["scale_grad_by_freq"]:
        records.append(_record(ctx, f"{call.name}.scale", "elementwise", [updates], updates, attrs={"op": "div"}))
    records.append(_record(ctx, call.name, "scatter", [out, _spec(ctx, indices), updates], out, attrs={"mode": "add"}))
    return records


@lowers("_embedding_bag", "_embedding_bag_forward_only")
def _embedding_bag(call: AtenCall, ctx: TorchContext) -> Ops:
    """nn.EmbeddingBag, (weight (V, D), indices (N,), offsets, scale_grad_by_freq, mode,
    sparse, per_sample_weights, ...) → ((bags, D), bookkeeping): an ``embedding_bag`` record
    reading the N rows it looks up (never the table), the indices, offsets and weights;
    mode 0 is a sum, 1 a mean, 2 a max."""
    a = _arguments(call)
    weight, indices, offsets = a["weight"], a["indices"], a["offsets"]
    out, *rest = call.outputs
    rows, width = int(indices.numel()), int(weight.shape[1])
    inputs = [((rows, width), ctx.dtype(weight)), _spec(ctx, indices), _spec(ctx, offsets)]
    weights = a["per_sample_weights"]
    if _is_tensor(weights):
        inputs.append(_spec(ctx, weights))
    extra = [_spec(ctx, t) for t in rest if t.numel() > 0]
    attrs = {"mode": _BAG_MODES[int(a["mode"])]}
    return [_record(ctx, call.name, "embedding_bag", inputs, _spec(ctx, out), attrs=attrs, extra=extra)]


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}  # at::native EmbeddingBagMode


@lowers("_embedding_bag_backward", "_embedding_bag_dense_backward")
def _embedding_bag_backward(call: AtenCall, ctx: TorchContext) -> Ops:
    """(grad (bags, D), indices (N,), ...) → (V, D): the gradient table zeroed, then each of
    the N looked-up rows receives its bag's gradient (a scatter-add of N rows); a mean bag's
    or a weighted row's gradient is scaled first (one multiply per row element)."""
    a = _arguments(call)
    grad, indices = a["grad"], a["indices"]
    out = _spec(ctx, call.out)
    updates: Spec = ((int(indices.numel()), int(grad.shape[-1])), ctx.dtype(grad))
    records = [_record(ctx, f"{call.name}.zero", "elementwise", [], out, attrs={"op": "fill"})]
    if int(a["mode"]) == 1 or _is_tensor(a["per_sample_weights"]):
        records.append(_record(ctx, f"{call.name}.scale", "elementwise", [updates], updates, attrs={"op": "mul"}))
    records.append(_record(ctx, call.name, "scatter", [out, _spec(ctx, indices), updates], out, attrs={"mode": "add"}))
    return records
