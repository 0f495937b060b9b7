"""Table entries for PyTorch's collectives, as this rank runs them: ``collective`` records.

Two families reach the recorder's dispatch mode, keyed ``namespace.op`` in the table:

- the functional collectives (``torch.distributed._functional_collectives``, what
  ``torch.compile`` and DTensor emit): ``_c10d_functional.all_reduce``,
  ``all_gather_into_tensor``, ``reduce_scatter_tensor``, ``all_to_all_single``, ``broadcast``
  (their in-place, ``_out`` and ``_coalesced`` forms too). ``wait_tensor`` (waits for the
  result) and ``_wrap_tensor_autograd`` are free: no data moves;
- the process-group ops ``torch.distributed`` calls (``dist.all_reduce`` and the others):
  ``c10d.allreduce_``, ``allgather_``, ``broadcast_``, ``barrier``, the single-tensor
  ``_allgather_base_``/``_reduce_scatter_base_``/``alltoall_base_`` and the coalesced forms.
  DDP's reducer all-reduces each gradient bucket (one flat tensor) with ``c10d.allreduce_``
  from the backward pass; it reaches the dispatch mode (checked with gloo on the CPU, where the
  backward runs on the calling thread), so no comm hook or patch is needed. Its forward
  broadcasts the module's buffers (``broadcast_buffers``, BatchNorm's running stats) every
  step, and in its second step the rebuilt buckets' order: broadcast records in ``forward``.

One record per tensor a call communicates (an all-reduce of a list of k tensors is k records,
one kernel): ``inputs`` is this rank's operand, ``output`` its result (an all-gather's list of
n tensors is one ``(n, *shape)`` output). ``group_size`` is the process group's size, read from
the call (a functional all-gather or reduce-scatter carries it) or from the group it names;
``axis`` is the group's description (``default_pg``), else its name. A call whose group cannot
be resolved raises in its builder: the op is unmodeled, by name, with a note. The reduce op
(sum, avg, max...) is not recorded: one combine per element a ring receives, whichever.

``barrier`` (and ``monitored_barrier_``) is a 0-byte all-reduce record: no payload and no wire
bytes, but a collective execution, so the communication bound charges the link's latency
once (gloo's barrier is a round of messages; NCCL's all-reduces a 1-element dummy).

Not modeled yet (unmodeled, by name): point-to-point ``send``/``recv``/``isend``/``irecv``,
``gather_``, ``scatter_``, ``reduce_``, the list form ``alltoall_``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ...core.records import Operation
from .table import AtenCall, TorchContext, free, lowers

FUNCTIONAL = "_c10d_functional"
C10D = "c10d"


# -- process groups ----------------------------------------------------------------------------


def _process_group(group: Any) -> Any:
    """The ``ProcessGroup`` a call names: a functional op's group name (or the group itself), a
    c10d op's boxed group."""
    import torch.distributed as dist

    if isinstance(group, dist.ProcessGroup):
        return group
    if isinstance(group, torch.ScriptObject):
        return dist.ProcessGroup.unbox(group)
    if isinstance(group, str):
        from torch._C._distributed_c10d import _resolve_process_group

        resolve: Any = _resolve_process_group  # typed for torch's GroupName (a str)
        return resolve(group)
    raise ValueError(f"cannot tell which process group {group!r} is")


def _group(group: Any, size: Any = None) -> tuple[int, str]:
    """(group size, axis) of the group a call runs over. A call that carries its group size
    keeps it even when its group name cannot be resolved (the axis is then that name)."""
    try:
        pg = _process_group(group)
    except Exception:
        if size is None or not isinstance(group, str):
            raise
        return int(size), group
    desc = str(getattr(pg, "group_desc", "") or "")
    axis = desc if desc and desc != "undefined" else str(pg.group_name)
    return int(size if size is not None else pg.size()), axis


def _collective(
    call: AtenCall, ctx: TorchContext, collective: str, source: Any, output: Any, group: tuple[int, str]
) -> Operation:
    n, axis = group
    dtype = ctx.dtype(source) if isinstance(source, torch.Tensor) else None
    return ctx.op(
        call,
        "collective",
        [source],
        output,
        attrs={"collective": collective, "group_size": n, "axis": axis},
        dtype=dtype,
    )


def _gathered(tensor: Any, n: int) -> tuple[int, ...]:
    """An all-gather's output as one shape: n copies of the shard, stacked."""
    return (n, *(int(d) for d in tensor.shape))


def _tensors(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for t in value if isinstance(t, torch.Tensor)]


def _pairs(
    call: AtenCall, ctx: TorchContext, collective: str, sources: Any, results: Any, group: tuple[int, str]
) -> list[Operation]:
    """One record per (operand, result) pair, in order."""
    sources, results = _tensors(sources), _tensors(results)
    if len(sources) != len(results):
        raise ValueError(f"{len(sources)} operands but {len(results)} results")
    return [_collective(call, ctx, collective, s, r, group) for s, r in zip(sources, results, strict=True)]


# -- functional collectives: (input, ..., group_name) -> result ----------------------------------


@lowers(f"{FUNCTIONAL}.all_reduce", f"{FUNCTIONAL}.all_reduce_")
def _functional_all_reduce(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    source = call.arg(0, "input")
    return [_collective(call, ctx, "all_reduce", source, call.outputs[0], _group(call.arg(2, "group_name")))]


@lowers(f"{FUNCTIONAL}.all_reduce_coalesced", f"{FUNCTIONAL}.all_reduce_coalesced_")
def _functional_all_reduce_coalesced(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    sources = call.arg(0, "inputs")
    return _pairs(call, ctx, "all_reduce", sources, call.out, _group(call.arg(2, "group_name")))


@lowers(f"{FUNCTIONAL}.all_gather_into_tensor", f"{FUNCTIONAL}.all_gather_into_tensor_out")
def _functional_all_gather(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    group = _group(call.arg(2, "group_name"), call.arg(1, "group_size"))
    return [_collective(call, ctx, "all_gather", call.arg(0, "input"), call.outputs[0], group)]


@lowers(f"{FUNCTIONAL}.all_gather_into_tensor_coalesced")
def _functional_all_gather_coalesced(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    group = _group(call.arg(2, "group_name"), call.arg(1, "group_size"))
    return _pairs(call, ctx, "all_gather", call.arg(0, "inputs"), call.out, group)


@lowers(f"{FUNCTIONAL}.reduce_scatter_tensor", f"{FUNCTIONAL}.reduce_scatter_tensor_out")
def _functional_reduce_scatter(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    group = _group(call.arg(3, "group_name"), call.arg(2, "group_size"))
    return [_collective(call, ctx, "reduce_scatter", call.arg(0, "input"), call.outputs[0], group)]


@lowers(f"{FUNCTIONAL}.reduce_scatter_tensor_coalesced")
def _functional_reduce_scatter_coalesced(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    group = _group(call.arg(3, "group_name"), call.arg(2, "group_size"))
    return _pairs(call, ctx, "reduce_scatter", call.arg(0, "inputs"), call.out, group)


@lowers(f"{FUNCTIONAL}.all_to_all_single")
def _functional_all_to_all(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    group = _group(call.arg(3, "group_name"))
    return [_collective(call, ctx, "all_to_all", call.arg(0, "input"), call.outputs[0], group)]


@lowers(f"{FUNCTIONAL}.broadcast", f"{FUNCTIONAL}.broadcast_")
def _functional_broadcast(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    group = _group(call.arg(2, "group_name"))
    return [_collective(call, ctx, "broadcast", call.arg(0, "input"), call.outputs[0], group)]


free("waits for an asynchronous collective's result: no data moves", f"{FUNCTIONAL}.wait_tensor")
free("wraps a collective's result for autograd: no data moves", f"{FUNCTIONAL}._wrap_tensor_autograd")


# -- process-group ops: (tensors, process_group, ...) -> (tensors, Work) -------------------------


@lowers(f"{C10D}.allreduce_", f"{C10D}.allreduce_coalesced_")
def _allreduce(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    tensors = call.arg(0, "tensors")
    return _pairs(call, ctx, "all_reduce", tensors, tensors, _group(call.arg(1, "process_group")))


@lowers(f"{C10D}.broadcast_")
def _broadcast(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    tensors = call.arg(0, "tensors")
    return _pairs(call, ctx, "broadcast", tensors, tensors, _group(call.arg(1, "process_group")))


@lowers(f"{C10D}.allgather_")
def _allgather(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """``allgather_(output_tensors: Tensor[][], input_tensors: Tensor[], group)``: input i
    gathers into the list output_tensors[i] of n shards."""
    outputs, inputs = call.arg(0, "output_tensors"), _tensors(call.arg(1, "input_tensors"))
    n, axis = _group(call.arg(2, "process_group"))
    if len(outputs) != len(inputs) or any(len(out) != n for out in outputs):
        raise ValueError(f"expected {len(inputs)} output lists of {n} tensors")
    return [_collective(call, ctx, "all_gather", t, _gathered(t, n), (n, axis)) for t in inputs]


@lowers(f"{C10D}._allgather_base_", f"{C10D}.allgather_into_tensor_coalesced_")
def _allgather_base(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """``(output, input, group)``: the output tensor(s) first."""
    return _pairs(call, ctx, "all_gather", call.args[1], call.args[0], _group(call.arg(2, "process_group")))


@lowers(f"{C10D}._reduce_scatter_base_", f"{C10D}.reduce_scatter_tensor_coalesced_")
def _reduce_scatter_base(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    return _pairs(call, ctx, "reduce_scatter", call.args[1], call.args[0], _group(call.arg(2, "process_group")))


@lowers(f"{C10D}.reduce_scatter_")
def _reduce_scatter(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """``reduce_scatter_(output_tensors: Tensor[], input_tensors: Tensor[][], group, op)``:
    output i reduces the list input_tensors[i] of n tensors (one shard each rank keeps)."""
    outputs, inputs = _tensors(call.arg(0, "output_tensors")), call.arg(1, "input_tensors")
    n, axis = _group(call.arg(2, "process_group"))
    if len(outputs) != len(inputs) or any(len(shards) != n for shards in inputs):
        raise ValueError(f"expected {len(outputs)} input lists of {n} tensors")
    return [_collective(call, ctx, "reduce_scatter", _gathered(out, n), out, (n, axis)) for out in outputs]


@lowers(f"{C10D}.alltoall_base_")
def _alltoall_base(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    group = _group(call.arg(2, "process_group"))
    return [_collective(call, ctx, "all_to_all", call.args[1], call.args[0], group)]


@lowers(f"{C10D}.barrier", f"{C10D}.monitored_barrier_")
def _barrier(call: AtenCall, ctx: TorchContext) -> Sequence[Operation]:
    """A 0-byte all-reduce (see the module docstring); its dummy tensor carries no payload."""
    group = _group(call.arg(1, "process_group"))
    return [
        ctx.op(
            call,
            "collective",
            [(0,)],
            (0,),
            attrs={"collective": "all_reduce", "group_size": group[0], "axis": group[1]},
            dtype=ctx.dtype(call.args[0]),
            name="barrier",
        )
    ]
