"""Eager PyTorch's kernels: one per executed aten call that does work (``core/kernels.py``).

The recorder notes, for every aten call that is not free, which records it lowered to (by
index into the trace's operations), the module running it and two sizes it reads off the
call's tensors as it already walks them for the dataflow:

- *operand bytes*: every tensor argument and result, each as often as it appears (what an
  unmodeled call moves, as ``Coverage.unmodeled_work`` sizes it);
- *footprint*: the distinct memory the call touches, each region once — a view is keyed by
  its storage, offset and size, and the views of one storage together count at most the
  storage (an in-place op's operand and result are one region; cuDNN's weight list and its
  flat ``weight_buf`` are one storage).

A kernel's traffic per execution is its records' unfused bytes (so a program's kernel
traffic equals its unfused traffic), except:

- a recurrent layer call (``RNN_LAYERS``: oneDNN's and cuDNN's layers, the whole-stack and
  cell ops) runs its per-step matmuls and gates with the weights and state in cache: its
  traffic is its operands and results, each distinct region once (its footprint), not the
  weights re-read at every step as its records count them;
- an unmodeled call (no table entry, or a builder that could not read it) is a kernel with
  no records, its traffic its operand bytes: the bytes it moves are known when its FLOPs are not;
  its ``unmodeled`` names the call as coverage does (``aten.kthvalue``, ``mylib.slow``), so that
  its measured time counts against time coverage.

Every call executes once (eager runs its loops for real); a record's own ``count`` (a
recurrent layer's steps) is inside its call's traffic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.kernels import Kernel
from ...core.records import Operation

KERNEL_SOURCE = "eager aten ops (one kernel per aten call, traffic unfused)"
COMPILED_NOTE = (
    "the model is (or contains) a torch.compile'd module: it was traced eagerly, so its kernels and traffic "
    "are the eager program's aten calls, not the compiled program's fused kernels"
)

#: aten calls that run a whole recurrent layer (or stack, or cell) as one kernel.
RNN_LAYERS = frozenset(
    {
        "mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_cudnn_rnn", "_cudnn_rnn_backward",
        "lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
        "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "_thnn_fused_lstm_cell_backward_impl",
        "_thnn_fused_gru_cell_backward",
    }
)  # fmt: skip


def sizes(touched: Sequence[tuple[int, Any]]) -> tuple[int, int]:
    """(operand bytes, footprint) of one call's tensors, each with its buffer id: every tensor
    as often as it appears, and the distinct regions — views by (buffer, offset, bytes), the
    views of one buffer together at most its storage's bytes."""
    moved = 0
    regions: dict[tuple[int, int, int], int] = {}
    for buffer, tensor in touched:
        try:
            nbytes, offset = tensor.nbytes, tensor.storage_offset()
        except (RuntimeError, NotImplementedError):  # sparse tensors: their dense size, no offset
            nbytes, offset = tensor.numel() * tensor.element_size(), 0
        moved += nbytes
        regions[(buffer, offset, nbytes)] = buffer
    if len(set(regions.values())) == len(regions):  # one view of each buffer: the usual call
        return moved, sum(key[2] for key in regions)
    by_buffer: dict[int, int] = {}
    for (buffer, _, nbytes), _buffer in regions.items():
        by_buffer[buffer] = by_buffer.get(buffer, 0) + nbytes
    capacity: dict[int, int] = {}
    for buffer, tensor in touched:
        if buffer not in capacity:
            try:
                capacity[buffer] = tensor.untyped_storage().nbytes()
            except (RuntimeError, NotImplementedError):  # sparse or meta tensors: no storage to cap by
                capacity[buffer] = by_buffer[buffer]
    return moved, sum(min(capacity[buffer], n) for buffer, n in by_buffer.items())


#: A storage a call touched: (its address, its bytes, the clock since its memory was last in use or None, only
#: written); and a call's regions with the clock when it started.
Region = tuple[int, int, int | None, bool]
Touches = tuple[int, tuple[Region, ...]]


class KernelLog:
    """One entry per aten call that does work: (op, first record, end record, module, scope,
    operand bytes, footprint, whether it is a recurrent layer, the storages it touched: ``Kernel.reuse``).

    The reuse clock is the bytes the calls so far touched (their footprints, in order); each storage's
    memory (by its address: a buffer freed and allocated again is the same memory to a cache) keeps the
    clock after the last call that touched it. Memory not in use earlier in the run was last in use in the
    run before, as a program timed again and again runs: its distance is what the run touched after its last
    use in this one, and then before this call."""

    __slots__ = ("calls", "clock", "last")

    def __init__(self) -> None:
        self.calls: list[tuple[Any, int, int, str | None, str | None, int, int, bool, Touches]] = []
        self.clock = 0
        self.last: dict[int, int] = {}

    def add(
        self,
        func: Any,
        name: str,
        start: int,
        end: int,
        module: str | None,
        scope: str | None,
        touched: Sequence[tuple[int, Any]],
        reads: int | None = None,
    ) -> None:
        """A call that lowered to records ``start:end`` (none: unmodeled) and touched these
        tensors (with their buffer ids), as it ran; the first ``reads`` are its arguments (None: all)."""
        moved, footprint = sizes(touched)
        reuse = (self.clock, self._reuse(touched, len(touched) if reads is None else reads, footprint))
        self.clock += footprint
        self.calls.append((func, start, end, module, scope, moved, footprint, name in RNN_LAYERS, reuse))

    def _reuse(self, touched: Sequence[tuple[int, Any]], reads: int, footprint: int) -> tuple[Region, ...]:
        """Each storage the call touches: (its address, its bytes as ``sizes`` counts them, the clock since its
        memory was last touched or None, whether the call only writes it), and the clock noted for the call's
        end. A tensor with no storage to address (meta, sparse) has no region."""
        regions: dict[int, tuple[dict[tuple[int, int], None], int, bool]] = {}
        for i, (_, tensor) in enumerate(touched):
            try:
                storage = tensor.untyped_storage()
                address, capacity = storage.data_ptr(), storage.nbytes()
                view = (tensor.storage_offset(), tensor.nbytes)
            except (RuntimeError, NotImplementedError):
                continue
            if not address:
                continue
            views, _, written = regions.get(address, ({}, capacity, True))
            views[view] = None
            regions[address] = (views, capacity, written and i >= reads)
        found = []
        for address, (views, capacity, written) in regions.items():
            last = self.last.get(address)
            since = None if last is None else self.clock - last
            found.append((address, min(capacity, sum(n for _, n in views)), since, written))
            self.last[address] = self.clock + footprint
        return tuple(found)

    def kernels(self, operations: Sequence[Operation]) -> tuple[Kernel, ...]:
        kinds: dict[Any, str] = {}
        seen: dict[str, int] = {}
        result = []
        for func, start, end, module, scope, moved, footprint, layer, (at, regions) in self.calls:
            kind = kinds.get(func)
            if kind is None:
                kind = kinds[func] = str(func)  # aten.addmm.default
            op = kind.split(".")[1] if kind.count(".") >= 2 else kind
            base = f"{module}/{op}" if module else op
            seen[base] = seen.get(base, 0) + 1
            records = operations[start:end]
            if start == end:
                traffic = moved  # unmodeled: its operands and results
            elif layer:
                traffic = footprint  # a recurrent layer: each distinct region once
            else:
                traffic = sum((r.cost.read_bytes + r.cost.write_bytes) * r.count for r in records)
            scopes = [r.scope for r in records if r.scope] if records else ([scope] if scope else [])
            result.append(
                Kernel(
                    base if seen[base] == 1 else f"{base}#{seen[base]}",
                    tuple(range(start, end)),
                    traffic_bytes=traffic,
                    footprint_bytes=footprint,
                    scopes=tuple(dict.fromkeys(scopes)),
                    kind=kind,
                    unmodeled=() if records else (_label(func),),
                    reuse=tuple(
                        (size, self.clock - self.last[address] + at if since is None else since, written)
                        for address, size, since, written in regions
                    ),
                )
            )
        return tuple(result)


def _label(func: Any) -> str:
    """How coverage names an unmodeled call (``aten.kthvalue``, ``mylib.slow``): the recorder's label."""
    return f"{getattr(func, 'namespace', 'aten')}.{func.overloadpacket.__name__}"


def is_compiled(model: Any) -> bool:
    """Whether ``model`` is a ``torch.compile``'d module or function, or a module holding one."""
    if hasattr(model, "_orig_mod") or hasattr(model, "_torchdynamo_orig_callable"):
        return True
    modules = getattr(model, "modules", None)
    if not callable(modules):
        return False
    try:
        return any(hasattr(module, "_orig_mod") for module in modules())
    except Exception:  # a modules() that is not nn.Module's
        return False
