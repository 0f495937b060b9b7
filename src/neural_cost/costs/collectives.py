"""Collectives: the communication a sharded program does between devices, per device.

A ``collective`` record is one device's share of one collective: ``inputs`` are the
per-device operands, ``output`` the per-device result. ``attrs['collective']`` names it,
``group_size`` is how many devices take part (n), ``axis`` names the mesh axis or process
group it runs over (for readers). Conventions (ring algorithms, per device, per execution):

- ``payload_bytes``: the bytes one device contributes — its input (all-gather: its shard).
- ``wire_bytes``, what one device sends over its links:
  all-reduce 2(n−1)/n × payload (a ring's reduce-scatter then all-gather);
  all-gather (n−1)/n × its output; reduce-scatter and all-to-all (n−1)/n × their input;
  permute (send/recv) 1 × payload; broadcast (n−1)/n × payload (a pipelined ring).
  ``jax.experimental.roofline`` counts an all-to-all as twice its input (2,048 B for a 1,024 B
  shard); here it is the (n−1)/n of the input that leaves the device (896 B for n = 8).
- reduction FLOPs (all-reduce, reduce-scatter): (n−1)/n × the input's elements per device,
  one combine per element a ring receives; none for the others.
- memory traffic: the input read and the output written once, as any record.

Wire bytes are integers rounded down from the exact fraction (a payload not divisible by n).
"""

from __future__ import annotations

from typing import Annotated, Literal

from ..core.kinds import OpCost
from ..core.records import Operation, num_elements
from .registry import cost_rule, read_inputs
from .signature import Min

Collective = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute", "broadcast"]
REDUCING = frozenset({"all_reduce", "reduce_scatter"})


def wire_bytes(collective: str, n: int, payload: int, output: int) -> int:
    """Bytes one device sends for one collective of ``n`` devices (see the module docstring)."""
    if n <= 1:
        return 0
    if collective == "all_reduce":
        return 2 * (n - 1) * payload // n
    if collective == "all_gather":
        return (n - 1) * output // n
    if collective in ("reduce_scatter", "all_to_all", "broadcast"):
        return (n - 1) * payload // n
    return payload  # permute: the whole buffer to one peer


@cost_rule(
    "collective",
    "one device's share of a collective over group_size devices (ring algorithms): payload = its input; wire "
    "all-reduce 2(n-1)/n × payload, all-gather (n-1)/n × output, reduce-scatter/all-to-all/broadcast (n-1)/n × "
    "input, permute 1×; reduction FLOPs (n-1)/n × input elements (all-reduce, reduce-scatter); input read, "
    "output written once",
)
def collective(
    op: Operation,
    *,
    collective: Collective,
    group_size: Annotated[int, Min(1)],
    axis: str | None = None,
) -> OpCost:
    n = group_size
    payload = read_inputs(op)
    wire = wire_bytes(collective, n, payload, op.output_bytes)
    flops = 0
    if collective in REDUCING and n > 1:
        elements = sum(num_elements(shape) for shape in op.inputs)
        flops = (n - 1) * elements // n
    return OpCost(
        {op.compute_dtype: flops} if flops else {},
        payload,
        op.output_bytes,
        payload_bytes=payload,
        wire_bytes=wire,
    )
