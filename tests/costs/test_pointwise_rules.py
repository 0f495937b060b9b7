"""elementwise, reduce, softmax / log-softmax and cumulative scans, with closed-form counts.

Traffic convention: every input read once at its own width, the output written once.
"""

from __future__ import annotations

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError, ShapeError


def test_elementwise_broadcasting_reads_each_input_at_its_own_size():
    op = Operation("add", "elementwise", ((4, 1, 8), (3, 1)), (4, 3, 8), "float32")
    assert op.cost.flops_by_dtype == {"float32": 96}  # 1 FLOP per output element: 4*3*8 = 96
    assert op.cost.read_bytes == 140  # 4 * (4*1*8 + 3*1) = 4 * (32 + 3) = 140, not the broadcast 2 * 96 * 4
    assert op.cost.write_bytes == 384  # 4 * 96 = 384
    assert op.cost.transcendentals == 0


def test_elementwise_flops_per_element_and_transcendental():
    op = Operation(
        "gelu", "elementwise", ((10, 20),), (10, 20), "bfloat16", attrs={"flops_per_element": 8, "transcendental": True}
    )
    assert op.cost.flops_by_dtype == {"bfloat16": 1_600}  # 8 * 10*20 = 1,600
    assert op.cost.transcendentals == 200  # one tanh per element: 200
    assert (op.cost.read_bytes, op.cost.write_bytes) == (400, 400)  # 2 bytes * 200 each way


def test_elementwise_several_transcendentals_per_element():
    # pow as exp(y * log x): log, multiply, exp = 3 FLOPs, of which 2 are transcendental
    op = Operation(
        "pow",
        "elementwise",
        ((10, 20), (10, 20)),
        (10, 20),
        "float32",
        attrs={"flops_per_element": 3, "transcendentals_per_element": 2},
    )
    assert op.cost.flops_by_dtype == {"float32": 600}  # 3 * 200 = 600
    assert op.cost.transcendentals == 400  # 2 * 200 = 400
    # the explicit count wins over the flag; the flag alone means one per element
    flagged = Operation(
        "exp", "elementwise", ((10,),), (10,), attrs={"transcendental": True, "transcendentals_per_element": 3}
    )
    assert flagged.cost.transcendentals == 30  # 3 * 10
    with pytest.raises(RecordError, match=r"transcendentals_per_element.*must be an integer >= 0"):
        Operation("exp", "elementwise", ((10,),), (10,), attrs={"transcendentals_per_element": -1})


def test_elementwise_compare_charges_the_input_dtype_and_writes_bool():
    op = Operation("lt", "elementwise", ((5,), (5,)), (5,), "bool", input_dtypes=("float16", "float16"))
    assert op.cost.flops_by_dtype == {"float16": 5}  # 5 comparisons in the inputs' type
    assert op.cost.read_bytes == 20  # 2 inputs * 5 * 2 bytes = 20
    assert op.cost.write_bytes == 5  # 5 bools * 1 byte = 5


def test_elementwise_rejects_inputs_that_do_not_broadcast():
    with pytest.raises(ShapeError, match=r"inputs\[1\] \(3, 2\) does not broadcast to the output \(4, 3, 8\)"):
        Operation("add", "elementwise", ((4, 3, 8), (3, 2)), (4, 3, 8))


# --- reduce ---------------------------------------------------------------------------------
X = (8, 16, 32)  # 4,096 elements


@pytest.mark.parametrize("output", [(8, 32), (8, 1, 32)], ids=["dropped", "keepdims"])
def test_reduce_sum_over_one_axis(output):
    op = Operation("sum", "reduce", (X,), output, "float32", attrs={"axes": (1,)})
    assert op.cost.flops_by_dtype == {"float32": 3_840}  # 256 outputs each combine 16 values: 256 * 15 = 3,840
    assert op.cost.read_bytes == 16_384  # 4 * 4,096 = 16,384
    assert op.cost.write_bytes == 1_024  # 4 * 256 = 1,024


def test_reduce_mean_adds_one_divide_per_output():
    op = Operation("mean", "reduce", (X,), (8, 32), attrs={"axes": (-2,), "flops_per_output": 1})
    assert op.cost.flops == 4_096  # 3,840 adds + 256 divides = 4,096


def test_reduce_transcendentals_per_output():
    # logsumexp over the last axis, L = 32: max 31 (combining) + subtract 32 + exp 32 + sum 31 + log 1
    # + add back 1 = 128 = 4L per output, of which 3L+1 = 97 are beyond the combining ops
    op = Operation(
        "logsumexp",
        "reduce",
        ((8, 32),),
        (8,),
        attrs={"axes": (1,), "flops_per_output": 97, "transcendentals_per_output": 33},
    )
    assert op.cost.flops == 1_024  # 8 outputs * 128 = 1,024
    assert op.cost.transcendentals == 264  # 8 * (32 exps + 1 log) = 264
    plain = Operation("sum", "reduce", ((8, 32),), (8,), attrs={"axes": (1,)})
    assert plain.cost.transcendentals == 0  # absent: none
    with pytest.raises(RecordError, match=r"attrs\['transcendentals_per_output'\]=-1 must be an integer >= 0"):
        Operation("r", "reduce", ((8, 32),), (8,), attrs={"axes": (1,), "transcendentals_per_output": -1})


def test_reduce_over_two_axes_and_over_everything():
    both = Operation("max", "reduce", (X,), (16,), attrs={"axes": (0, 2)})
    assert both.cost.flops == 4_080  # 16 outputs each combine 8*32 = 256 values: 16 * 255 = 4,080
    total = Operation("sum", "reduce", (X,), ())
    assert total.cost.flops == 4_095  # 4,096 values to one: 4,095 adds


def test_reduce_over_an_empty_axis_costs_nothing():
    op = Operation("sum", "reduce", ((3, 0),), (3,), attrs={"axes": (1,)})
    assert op.cost.flops == 0  # every output is the identity; never a negative count (0 - 3)
    assert op.cost.write_bytes == 12  # 3 * 4 bytes


def test_reduce_rejects_an_output_that_does_not_fit_the_axes():
    with pytest.raises(ShapeError, match=r"output=\(16, 32\) does not fit reducing x \(8, 16, 32\) over axes \(1,\)"):
        Operation("sum", "reduce", (X,), (16, 32), attrs={"axes": (1,)})
    with pytest.raises(ShapeError, match=r"output=\(0,\) cannot be a reduction of x \(8, 16, 32\)"):
        Operation("sum", "reduce", (X,), (0,))


# --- softmax --------------------------------------------------------------------------------
S = (4, 10, 128)  # 40 rows of 128 along the last axis


def test_softmax_per_row():
    op = Operation("sm", "softmax", (S,), S, "float32")
    # per row: max 127 + subtract 128 + exp 128 + sum 127 + divide 128 = 5*128 - 2 = 638
    assert op.cost.flops_by_dtype == {"float32": 25_520}  # 40 * 638 = 25,520
    assert op.cost.transcendentals == 5_120  # 40 * 128 exps
    assert (op.cost.read_bytes, op.cost.write_bytes) == (20_480, 20_480)  # 4 * 5,120 each way


def test_log_softmax_per_row():
    op = Operation("lsm", "softmax", (S,), S, "float32", attrs={"log": True})
    # per row: max 127 + subtract 128 + exp 128 + sum 127 + log 1 + subtract 128 = 5*128 - 1 = 639
    assert op.cost.flops == 25_560  # 40 * 639 = 25,560
    assert op.cost.transcendentals == 5_160  # 40 * (128 exps + 1 log) = 5,160


def test_softmax_along_a_middle_axis():
    op = Operation("sm", "softmax", (S,), S, attrs={"axis": 1})
    assert op.cost.flops == 24_576  # rows 4*128 = 512 of L = 10: 512 * (5*10 - 2 = 48) = 24,576
    assert op.cost.transcendentals == 5_120  # 512 * 10


def test_cumulative_along_either_axis():
    last = Operation("cumsum", "cumulative", ((6, 100),), (6, 100), "int32")
    first = Operation("cumsum", "cumulative", ((6, 100),), (6, 100), "int32", attrs={"axis": 0})
    assert last.cost.flops_by_dtype == {"int32": 594}  # 6 rows * (100 - 1) adds = 594
    assert first.cost.flops_by_dtype == {"int32": 500}  # 100 rows * (6 - 1) adds = 500
    assert (last.cost.read_bytes, last.cost.write_bytes) == (2_400, 2_400)  # 4 * 600 each way


def test_cumulative_combine_cost_and_transcendentals():
    # a log-sum-exp scan: each of the L-1 steps per row is a logaddexp of 10 FLOPs, 2 of them transcendental
    op = Operation(
        "cumlogsumexp",
        "cumulative",
        ((6, 100),),
        (6, 100),
        "float32",
        attrs={"flops_per_combine": 10, "transcendentals_per_combine": 2},
    )
    assert op.cost.flops_by_dtype == {"float32": 5_940}  # 6 rows * 99 steps * 10 = 5,940
    assert op.cost.transcendentals == 1_188  # 6 * 99 * 2 = 1,188
    assert (op.cost.read_bytes, op.cost.write_bytes) == (2_400, 2_400)  # unchanged traffic: 4 * 600 each way
    plain = Operation("cumsum", "cumulative", ((6, 100),), (6, 100), "float32")
    assert (plain.cost.flops, plain.cost.transcendentals) == (594, 0)  # defaults: 1 FLOP, 0 transcendentals
    with pytest.raises(RecordError, match=r"flops_per_combine.*must be an integer >= 0"):
        Operation("c", "cumulative", ((6,),), (6,), attrs={"flops_per_combine": True})


def test_elementwise_output_must_be_the_inputs_broadcast():
    import pytest

    from neural_cost import ShapeError

    # (4,) + (4,) broadcasts to (4,); an output of (3, 4) would be a materialised broadcast, i.e. a copy
    with pytest.raises(ShapeError, match=r"output=\(3, 4\).*expected \(4,\)"):
        Operation("add", "elementwise", ((4,), (4,)), (3, 4))
    assert Operation("fill", "elementwise", (), (3, 4), attrs={"flops_per_element": 0}).cost.write_bytes == 48
