"""The member of ``matmul@loop`` a compiled loop's matrix product is read off (``kernel_classes.parts``).

A dot in a loop body runs once per trip with the same right operand (a recurrent cell's weights)
and a few rows of activations, so its speed depends on two things its roofline time does not say:

- ``matmul:narrow@loop``: its result is at most ``NARROW`` (256) wide (the last dimension of its
  output: a matrix-vector product's is its rows). XLA:CPU 0.10.2 ran every such dot of a scanned
  tanh cell on one thread of a 2-core VM (1.70–2.17× the cell's dots' roofline, the same times
  pinned to one core or given two); the grid's narrow cells read 1.2–1.5×.
- ``matmul:kept@loop``: wider, and the right operands of the loop's products (the records of
  matmul or linear kind the trace counts as many times as this one's) fit the cores' own caches
  together (the largest per-core level's capacity × its instances, as if the loop's dots used every
  core: on a many-core server nearly every loop is kept): they are read from there at every trip.
  On that VM (two 1 MiB L2s) cells of 1.2–2 MiB of weights ran 0.67–1.0× their dots' roofline.
- ``matmul:streamed@loop``: wider, its loop's weights larger than those caches: read again from
  a shared level at every trip (cells of 2.2–6.3 MiB: 0.99–1.29×).

At the same roofline time one ``matmul@loop`` curve read a 1.5 MiB cell's dots (batch 16, 256 →
512) 1.37× and 1.13× of their roofline (docs/expected.md, runs CF–CG) where they ran at 0.87×;
its points at those times were narrow cells and a 6 MiB one. A member without a curve of its own
(another framework's grid) reads the family's ``matmul@loop``, noted; a device without a per-core
cache level (a GPU) has no kept or streamed member: its wide loop dots stay ``matmul@loop``, as a
TensorFlow XLA kernel's (``matmul@xla@loop``) and a wide product's (``wide_matmul@loop``) do. What it
cannot see: which loop a record is in (separate loops of the same trip count are weighed together,
a weight two products share counts twice) and how many cores the loop's dots use.
"""

from __future__ import annotations

from ..core.estimate import CostEstimate, OperationCost
from ..hardware.spec import HardwareSpec
from .kernels import KernelTime

#: A loop dot whose result is at most this wide is ``matmul:narrow@loop``.
NARROW = 256
#: The loop members, each read off the family's ``matmul@loop`` when the calibration has no curve of its own.
LOOP_DOTS = ("matmul:narrow@loop", "matmul:kept@loop", "matmul:streamed@loop")
_PRODUCTS = frozenset({"matmul", "linear"})


def loop_weight_bytes(estimate: CostEstimate, count: int) -> int:
    """The right operands' bytes of the program's matrix products the trace counts ``count`` times
    a run (one loop body's, when one loop runs that many trips), each product once."""
    return sum(_right_bytes(cost) for cost in estimate.by_operation if cost.operation.count == count)


def _right_bytes(cost: OperationCost) -> int:
    op = cost.operation
    two = cost.kind in _PRODUCTS and len(op.inputs) >= 2
    return op.input_bytes(1) if two else 0


def cores_cache_bytes(hardware: HardwareSpec) -> int | None:
    """The cores' own caches together: the largest per-core level's capacity × its instances; None without one."""
    own = [level for level in hardware.memory_levels if level.per_core]
    if not own:
        return None
    largest = max(own, key=lambda level: level.capacity_bytes)
    return largest.capacity_bytes * largest.instances


def _heaviest(estimate: CostEstimate, row: KernelTime) -> OperationCost | None:
    """The row's heaviest product record: its kernel's, or the record scored as its own kernel (the
    product record of its kind, executions, FLOPs and bytes)."""
    if row.index is not None:
        costs = [estimate.by_operation[i] for i in estimate.kernels[row.index].operations]
    else:
        costs = [c for c in estimate.by_operation if (c.kind, c.operation.count, c.flops, c.bytes)
                 == (row.kind, row.executions, row.flops, row.traffic_bytes)]  # fmt: skip
    products = [c for c in costs if c.kind in _PRODUCTS and c.operation.output]
    return max(products, key=lambda c: c.flops) if products else None


def loop_dot_class(
    estimate: CostEstimate, row: KernelTime, name: str, hardware: HardwareSpec, product: OperationCost | None = None
) -> str:
    """``name``'s member (the module docstring) for a ``matmul@loop`` kernel, judged by ``product``
    (a part's own contraction record) or else the kernel's heaviest product, and the loop the trace
    counts that record in (its ``count``, whatever the compiled trip count); any other class, or a
    loop kernel without a product record (a dot XLA made), is returned as it is."""
    heaviest = (product or _heaviest(estimate, row)) if name == "matmul@loop" else None
    if heaviest is None or not heaviest.operation.output:
        return name
    if heaviest.operation.output[-1] <= NARROW:
        return "matmul:narrow@loop"
    caches = cores_cache_bytes(hardware)
    if caches is None:
        return name
    weights = loop_weight_bytes(estimate, heaviest.operation.count)
    return "matmul:kept@loop" if weights <= caches else "matmul:streamed@loop"
