"""A whole recurrent layer's kernel (class ``rnn``, ``kernel_classes``): its steps, one step's weights and rows,
and the member of ``rnn`` its curve is read off (``rnn:kept``, ``rnn:streamed``, ``rnn:streamed:few``)."""

from __future__ import annotations

from ..core.estimate import CostEstimate
from ..hardware.spec import HardwareSpec
from .kernels import KernelTime, Levels


def rnn_member(estimate: CostEstimate, row: KernelTime, hardware: HardwareSpec) -> tuple[str, float]:
    """The member of ``rnn`` a recurrent layer's kernel reads, and its roofline time on that curve: the larger of
    its compute time and its memory time with streamed weights read again at every step (``step_memory``)."""
    memory, streamed = step_memory(estimate, row, hardware)
    few = streamed and row.index is not None and 0 < step_rows(estimate, row.index) <= FEW_STEP_ROWS
    member = "rnn:streamed:few" if few else "rnn:streamed" if streamed else "rnn:kept"
    return member, max(row.compute_seconds, memory)


def recurrent(estimate: CostEstimate, index: int) -> tuple[dict[str, int], dict[str, int]]:
    """A recurrent kernel's steps and one step's weight bytes, per layer and direction (a record's
    name less its suffix), from the per-step matmuls ``ops_rnn`` names: ``hidden_matmul`` records
    (a packed sequence's batch sizes each one, their counts together) and W_hh, with an LSTM
    projection's W_hr."""
    steps: dict[str, int] = {}
    weights: dict[tuple[str, str], int] = {}
    for cost in (estimate.by_operation[i] for i in estimate.kernels[index].operations):
        base, _, role = cost.operation.name.rpartition(".")
        if cost.kind != "matmul" or role not in ("hidden_matmul", "projection") or len(cost.operation.inputs) < 2:
            continue
        if role == "hidden_matmul":
            steps[base] = steps.get(base, 0) + cost.operation.count
        if (base, role) not in weights:  # one step reads each matrix once, whatever its batch size
            weights[base, role] = cost.operation.input_bytes(1)
    per_step = {base: sum(size for (layer, _), size in weights.items() if layer == base) for base in steps}
    return steps, per_step


#: A streamed recurrent layer whose steps multiply at most this many rows (its batch) is ``rnn:streamed:few``: each
#: weight a step streams in feeds one or two multiply-adds, a matrix-vector product's rate, not a blocked product's.
#: On a 2-core AMD VM PyTorch's grid cells of batch 1 and 2 ran 1.88–2.60× their step's roofline, those of batch 4 to
#: 64 1.09–1.44× at the same roofline times, and one curve through both read a held-out LSTM at batch 4 (1.6–1.7×)
#: 2.2×: 31–41% too slow (docs/expected.md, runs HA–HB). It reads ``rnn:streamed`` without a curve of its own.
FEW_STEP_ROWS = 2


def step_rows(estimate: CostEstimate, index: int) -> int:
    """The most rows a recurrent kernel's step multiplies (its ``hidden_matmul`` records': the batch; a packed
    sequence's first steps have the most); 0 without such records."""
    costs = (estimate.by_operation[i] for i in estimate.kernels[index].operations)
    rows = [cost.operation.inputs[0][0] for cost in costs
            if cost.kind == "matmul" and cost.operation.name.endswith(".hidden_matmul") and cost.operation.inputs
            and len(cost.operation.inputs[0]) == 2]  # fmt: skip
    return max(rows, default=0)


def step_memory(estimate: CostEstimate, row: KernelTime, hardware: HardwareSpec) -> tuple[float, bool]:
    """A whole recurrent layer's (``rnn``) memory time, and whether its weights stream: when one
    step's recurrent weights do not fit a core's own cache (its largest per-core level), they are
    read again at every step after the first, at the level that holds them (its bandwidth when
    measured, else main memory's), on top of its roofline memory time. Such a layer is
    ``rnn:streamed``, another ``rnn:kept``: each class one curve of its step's roofline time, the
    larger of its compute and memory times (``kernel_classes.parts``). A kernel's traffic counts each
    region once, as if the weights stayed in cache: at batch 1 and 1,024 hidden units W_hh is 16 MiB a
    step, and an LSTM ran a step in 336 µs against 32 µs of compute on a CPU of 2 MiB L2 per core —
    a curve of compute alone read 38 µs. Read on one curve with the kept layers, the streamed steps
    (0.6–0.8 of their roofline) put a 256-unit layer at batch 16 (0.94 of it) 50% too slow.
    """
    if row.index is None:
        return row.memory_seconds, False
    steps, per_step = recurrent(estimate, row.index)
    again = row.executions * sum(per_step[base] * (steps[base] - 1) for base in steps)
    step = max(per_step.values(), default=0)
    kept = max((level.capacity_bytes for level in hardware.memory_levels if level.per_core), default=None)
    if not again or kept is None or step <= kept:  # no per-core level known: as its traffic says, kept
        return row.memory_seconds, False
    return row.memory_seconds + again / Levels.of(hardware).place(step)[1], True
