"""The collective cost kind, by hand: one device's share of a collective over n devices.

shard_map over 8 devices, 256 float32 per device (1,024 B):
  all_reduce (psum): payload 1,024 B; wire 2·7/8·1,024 = 1,792 B (jax.experimental.roofline's
    figure); reduction FLOPs 7/8·256 = 224
  all_gather: output 8·256 float32 = 8,192 B; wire 7/8·8,192 = 7,168 B
  reduce_scatter (psum_scatter): wire 7/8·1,024 = 896 B; FLOPs 224
  permute (ppermute): wire 1,024 B
  all_to_all: wire 7/8·1,024 = 896 B (jax.experimental.roofline counts 2,048: another convention)
"""

import pytest

from neural_cost import Operation, estimate_operations
from neural_cost.core.errors import RecordError


def _collective(kind, inputs=((256,),), output=(256,), n=8):
    return Operation("c", "collective", inputs, output, "float32", attrs={"collective": kind, "group_size": n})


@pytest.mark.parametrize(
    ("kind", "output", "wire", "flops"),
    [
        ("all_reduce", (256,), 1_792, 224),
        ("all_gather", (2048,), 7_168, 0),
        ("reduce_scatter", (32,), 896, 224),
        ("permute", (256,), 1_024, 0),
        ("all_to_all", (256,), 896, 0),
        ("broadcast", (256,), 896, 0),
    ],
)
def test_payload_wire_and_reduction_flops_per_device(kind, output, wire, flops):
    op = _collective(kind, output=output)
    assert (op.cost.payload_bytes, op.cost.wire_bytes, op.cost.flops) == (1_024, wire, flops)
    assert op.cost.read_bytes == 1_024 and op.cost.write_bytes == 4 * output[0]


def test_one_device_sends_nothing_and_wire_bytes_sum_over_executions():
    assert _collective("all_reduce", n=1).cost.wire_bytes == 0
    looped = Operation(
        "c", "collective", ((256,),), (256,), "float32", attrs={"collective": "all_reduce", "group_size": 8}, count=3
    )
    estimate = estimate_operations([looped, _collective("permute")])
    assert estimate.wire_bytes == 3 * 1_792 + 1_024


def test_an_unknown_collective_or_group_is_refused():
    with pytest.raises(RecordError, match="collective"):
        _collective("all_reduce_tree")
    with pytest.raises(RecordError, match="group_size"):
        _collective("all_reduce", n=0)
