"""The Kernel record: validation with clear errors and an exact JSON round trip."""

import json

import pytest

from neural_cost.core import Kernel, RecordError
from neural_cost.core.kernels import BODY, SLICED_DYNAMIC_SLICE, VARIADIC_WINDOW, recordless_kind


def roundtrip(record):
    return type(record).from_dict(json.loads(json.dumps(record.to_dict())))


def test_kernel_totals_and_round_trip():
    kernel = Kernel(
        "broadcast_add_fusion", (2, 0, 1), {"float32": 30, "bf16": 6}, 8192, 4096, executions=10,
        scopes=("layer1", "layer1/relu"), kind="fusion", source="model.py:42",
    )  # fmt: skip
    assert kernel.flops == 36  # 30 + 6, over all executions
    assert kernel.total_traffic_bytes == 81_920  # 8,192 bytes per execution × 10
    assert dict(kernel.flops_by_dtype) == {"bfloat16": 6, "float32": 30}  # canonical names
    assert kernel.level is None  # until a bound scores it
    assert roundtrip(kernel) == kernel
    assert hash(roundtrip(kernel)) == hash(kernel)
    scored = Kernel.from_dict({**kernel.to_dict(), "level": "L2"})
    assert scored.level == "L2" and roundtrip(scored) == scored


def test_kernel_defaults_are_an_unmapped_single_execution():
    kernel = Kernel("copy.6")
    assert (kernel.operations, kernel.flops, kernel.executions, kernel.traffic_bytes) == ((), 0, 1, 0)
    assert roundtrip(kernel) == kernel


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"traffic_bytes": -1}, "traffic_bytes=-1 must be a non-negative integer"),
        ({"executions": 1.5}, "executions=1.5 must be a non-negative integer"),
        ({"footprint_bytes": True}, "footprint_bytes=True must be a non-negative integer"),
        ({"operations": (1, 1)}, "lists an operation twice"),
        ({"operations": (-1,)}, r"operations\[0\]=-1"),
        ({"flops_by_dtype": {"float32": -2}}, "must be a non-negative integer"),
        ({"flops_by_dtype": [1]}, "must map dtype names to FLOP counts"),
        ({"scopes": "layer1"}, "must be a sequence of scope paths"),
        ({"level": ""}, "level=''"),
    ],
)
def test_kernel_rejects_bad_fields(fields, message):
    with pytest.raises(RecordError, match=message):
        Kernel("fusion", **fields)


def test_kernel_executions_may_be_zero():
    # A conditional's branch not taken, a loop that runs no iteration: listed, never executed.
    assert Kernel("fusion.1", traffic_bytes=64, executions=0).total_traffic_bytes == 0


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("copy.3", "copy", "copy"),  # a lone copy XLA inserted (a loop's state)
        ("copy.3.clone", "copy", "copy"),  # a lone instruction: its opcode, whatever its name
        ("dynamic-update-slice.2", "dynamic-update-slice", "copy"),
        ("loop_transpose_fusion", "fusion", "copy"),  # XLA:GPU's names: a prefix, "_" for "-"
        ("input_reduce_fusion.1", "fusion", "reduce"),
        ("loop_dynamic_update_slice_fusion", "fusion", "copy"),
        ("fusion.3", "fusion", None),  # no opcode in the name
        ("multiply_reduce_fusion", "fusion", "reduce"),  # a reduction with its prologue's multiply
        ("transpose_copy_fusion.41", "fusion", "copy"),  # a layout change fused from its opcodes
        ("copy_bitcast_fusion", "fusion", "copy"),
        ("wrapped_reduce-window.24", "fusion", "reduce"),  # a reduction XLA split in parts
        ("bitcast_reduce_fusion.2", "fusion", "reduce"),
        ("copy_select_fusion", "fusion", "elementwise"),  # a select computes: one value an element
        ("divide_subtract_fusion.16", "fusion", "elementwise"),  # an optimizer's update XLA duplicated
        ("multiply_add_fusion.137", "fusion", "elementwise"),
        ("broadcast_select_fusion", "fusion", "elementwise"),
        ("exponential_add_fusion.2", "fusion", "transcendental"),  # a function: its own curve
        ("logistic_multiply_fusion", "fusion", "transcendental"),  # logistic, not log
        ("add.3", "add", "elementwise"),  # a lone add XLA left outside a fusion
        ("ynn_custom_fusion", "fusion", None),  # a word that is no opcode
        ("ynn_fusion.6", "fusion", None),  # a library's fusion: its name says nothing
        ("convolution.100", "convolution", None),
        ("layer1/add", "aten.add.Tensor", None),  # an aten call is no HLO instruction
        ("copy.1", None, None),
        ("wrapped_scatter.2", "fusion", "gather"),  # XLA:CPU's scatter-add of a max pool's backward
        ("scatter.4", "scatter", "gather"),
        ("bitcast_gather_fusion", "fusion", "gather"),
    ],
)
def test_a_kernel_without_records_is_read_off_the_opcodes_xla_names_it_by(name, kind, expected):
    assert recordless_kind(Kernel(name, (), kind=kind)) == expected


def test_a_reduce_window_of_several_arrays_is_a_max_pools_backward():
    """XLA:CPU expands a max pool's backward into a reduce-window of the values and their positions (a tuple result:
    ``VARIADIC_WINDOW``, read by the adapter): ``pool_backward``; a reduce-window of one array is a reduction."""
    variadic = Kernel("wrapped_reduce-window", (), kind="fusion", compiled_traits=(VARIADIC_WINDOW,))
    assert recordless_kind(variadic) == "pool_backward"
    assert recordless_kind(Kernel("wrapped_reduce-window", (), kind="fusion")) == "reduce"
    assert recordless_kind(Kernel("reduce-window.3", (), kind="reduce-window", compiled_traits=(VARIADIC_WINDOW,))) == (
        "pool_backward"
    )


def test_a_librarys_fusion_without_records_is_read_off_its_bodys_kind():
    """A ``ynn_fusion`` (its name says nothing) with a ``body:reduce`` trait (``BODY``: what the adapter read from its
    fused computation's opcodes) is ``reduce``; without one, None; a fusion whose name says what it does is read off
    its name, whatever its trait."""
    assert recordless_kind(Kernel("ynn_fusion.47", (), kind="fusion", compiled_traits=(BODY + "reduce",))) == "reduce"
    assert recordless_kind(Kernel("ynn_fusion.47", (), kind="fusion", compiled_traits=(SLICED_DYNAMIC_SLICE,))) is None
    assert recordless_kind(Kernel("transpose_copy_fusion", (), kind="fusion", compiled_traits=(BODY + "reduce",))) == (
        "copy"
    )
