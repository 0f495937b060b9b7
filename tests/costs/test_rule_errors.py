"""Bad input raises a neural-cost error whose message names the field and the value."""

from __future__ import annotations

import pytest

from neural_cost import NeuralCostError, Operation
from neural_cost.core.errors import DTypeError, RecordError, ShapeError, UnknownKindError


@pytest.mark.parametrize(
    ("inputs", "output", "match"),
    [
        (((32, -16), (16, 8)), (32, 8), r"'mm' \(matmul\) inputs\[0\]=\(32, -16\) has a negative dimension -16"),
        (((32, 16), (16, 8)), (32, -8), r"'mm' \(matmul\) output=\(32, -8\) has a negative dimension -8"),
        (((32, 16.0), (16, 8)), (32, 8), r"inputs\[0\]=\(32, 16\.0\) has a non-integer dimension 16\.0"),
        (((32, 16), (16, "8")), (32, 8), r"inputs\[1\]=\(16, '8'\) has a non-integer dimension '8'"),
        (((32, 16), (16, 8)), (32, True), r"output=\(32, True\) has a non-integer dimension True"),
        ((32, 16), (32, 8), r"inputs\[0\]=32 is not a shape"),
    ],
)
def test_malformed_shapes(inputs, output, match):
    with pytest.raises(ShapeError, match=match):
        Operation("mm", "matmul", inputs, output)


@pytest.mark.parametrize(
    ("kind", "inputs", "output", "attrs", "match"),
    [
        (
            "matmul",
            ((32, 16), (15, 8)),
            (32, 8),
            {},
            r"contracting sizes disagree: \(32, 16\) @ \(15, 8\) contracts 16 with 15",
        ),
        (
            "matmul",
            ((32, 16), (8, 15)),
            (32, 8),
            {"dimension_numbers": (((1,), (1,)), ((), ()))},
            r"contracting sizes disagree: lhs dim 1 is 16, rhs dim 1 is 15",
        ),
        (
            "matmul",
            ((2, 5, 6), (3, 6, 4)),
            (2, 5, 4),
            {},
            r"batch dims of \(2, 5, 6\) and \(3, 6, 4\) do not broadcast",
        ),
        ("matmul", ((32, 16), (16, 8)), (32, 9), {}, r"output=\(32, 9\) does not fit its inputs: expected \(32, 8\)"),
        (
            "linear",
            ((4, 768), (512, 10)),
            (4, 10),
            {},
            r"x's last dimension 768 does not match the weight's input size 512",
        ),
        (
            "conv",
            ((2, 8, 17, 20), (12, 3, 3, 5)),
            (2, 12, 15, 16),
            {"groups": 4},
            r"weight \(12, 3, 3, 5\) expects 3 channels per group × groups=4 = 12 input channels, but x .* has 8",
        ),
        (
            "conv",
            ((2, 8, 9, 9), (12, 2, 3, 3)),
            (2, 12, 7, 7),
            {"groups": 3},
            r"input channels 8 are not divisible by groups=3",
        ),
        (
            "conv",
            ((2, 8, 9, 9), (10, 2, 3, 3)),
            (2, 10, 7, 7),
            {"groups": 4},
            r"output channels 10 are not divisible by groups=4",
        ),
        (
            "conv",
            ((2, 6, 5, 5), (4, 4, 3, 3)),
            (2, 4, 7, 7),
            {"transposed": True},
            r"weight \(4, 4, 3, 3\) does not start with C_in=6",
        ),
        (
            "conv",
            ((2, 8, 9, 9), (8, 8, 3, 3)),
            (2, 8, 9, 9),
            {},
            r"output=\(2, 8, 9, 9\) does not fit its inputs: expected \(2, 8, 7, 7\)",
        ),
        (
            "attention",
            ((1, 6, 4, 8), (1, 4, 4, 8), (1, 4, 4, 8)),
            (1, 6, 4, 8),
            {},
            r"6 query heads cannot share 4 key/value heads",
        ),
        (
            "attention",
            ((1, 4, 4, 8), (1, 4, 4, 16), (1, 4, 4, 8)),
            (1, 4, 4, 8),
            {},
            r"q's head_dim 8 differs from k's 16",
        ),
        ("embedding", ((100, 8), (5,)), (5, 16), {}, r"output=\(5, 16\) does not fit its inputs: expected \(5, 8\)"),
        ("scatter", ((10, 4), (3, 1), (3, 4)), (10, 5), {}, r"output=\(10, 5\) .* expected \(10, 4\)"),
        ("sort", ((4, 10), (4, 9)), (4, 10), {}, r"inputs\[1\] \(4, 9\) must have the keys' shape \(4, 10\)"),
        ("softmax", ((4, 10),), (4, 10), {"axis": 2}, r"attrs\['axis'\]=2 is out of range for rank 2"),
        ("groupnorm", ((2, 10, 4),), (2, 10, 4), {"groups": 4}, r"10 channels are not divisible by groups=4"),
        ("layernorm", ((4, 10), (9,)), (4, 10), {}, r"inputs\[1\] \(9,\) should hold one value per normalized feature"),
    ],
)
def test_shapes_that_do_not_fit_the_kind(kind, inputs, output, attrs, match):
    with pytest.raises(ShapeError, match=match):
        Operation("bad", kind, inputs, output, attrs=attrs)


@pytest.mark.parametrize(
    ("kind", "inputs", "output", "match"),
    [
        ("matmul", ((4, 4), (4, 4), (4, 4)), (4, 4), r"'bad' \(matmul\) has 3 inputs; this kind takes 2 \(lhs, rhs\)"),
        ("linear", ((4, 4),), (4, 4), r"'bad' \(linear\) has 1 inputs; this kind takes 2"),
        ("attention", ((1, 1, 4, 8),) * 2, (1, 1, 4, 8), r"has 2 inputs; this kind takes 3 to 4"),
        ("softmax", (), (4,), r"has 0 inputs; this kind takes 1 \(x\)"),
        ("scatter", ((10, 4), (3, 4)), (10, 4), r"has 2 inputs; this kind takes 3"),
    ],
)
def test_wrong_number_of_inputs(kind, inputs, output, match):
    with pytest.raises(ShapeError, match=match):
        Operation("bad", kind, inputs, output)


def test_unknown_kind_names_it_and_points_to_custom():
    message = r"kind='matmull' has no cost rule; known kinds: .*matmul.*kind='custom'"
    with pytest.raises(UnknownKindError, match=message):
        Operation("bad", "matmull", ((4, 4), (4, 4)), (4, 4))


def test_unknown_dtypes():
    with pytest.raises(DTypeError, match=r"'bad' \(matmul\) dtype='float31' is not a known element type"):
        Operation("bad", "matmul", ((4, 4), (4, 4)), (4, 4), "float31")
    with pytest.raises(DTypeError, match=r"dtype=3: an integer element type must be an itemsize"):
        Operation("bad", "matmul", ((4, 4), (4, 4)), (4, 4), 3)
    with pytest.raises(DTypeError, match=r"input_dtypes\[1\]='int33' is not a known element type"):
        Operation("bad", "gather", ((4, 4), (2,)), (2, 4), input_dtypes=("float32", "int33"))
    with pytest.raises(DTypeError, match=r"attrs\['flops'\] key='bf17' is not a known element type"):
        Operation("bad", "custom", (), (1,), attrs={"flops": {"bf17": 1}})


@pytest.mark.parametrize(
    ("kind", "inputs", "output", "kwargs", "match"),
    [
        (
            "matmul",
            ((4, 4), (4, 4)),
            (4, 4),
            {"input_dtypes": ("float32",)},
            r"input_dtypes has 1 entries for 2 inputs",
        ),
        ("matmul", ((4, 4), (4, 4)), (4, 4), {"count": -1}, r"count=-1 must be a non-negative integer"),
        (
            "conv",
            ((1, 1, 5), (1, 1, 3)),
            (1, 1, 3),
            {"attrs": {"stride": 0}},
            r"attrs\['stride'\]=0 must be an integer >= 1",
        ),
        ("conv", ((1, 1, 5), (1, 1, 3)), (1, 1, 3), {"attrs": {"padding": "same"}}, r"attrs\['padding'\]='same'"),
        (
            "scatter",
            ((10,), (3,), (3,)),
            (10,),
            {"attrs": {"mode": "div"}},
            r"attrs\['mode'\]='div'; use one of update",
        ),
        ("rng", (), (4,), {"attrs": {"generator": "xorshift128"}}, r"attrs\['generator'\]='xorshift128' is unknown"),
        ("custom", (), (4,), {}, r"needs attrs\['flops'\]"),
        (
            "custom",
            (),
            (4,),
            {"attrs": {"flops": -5}},
            r"attrs\['flops'\]=-5 must be the FLOPs of one execution: an integer >= 0",
        ),
        ("pooling", ((1, 1, 4, 4),), (1, 1, 2, 2), {}, r"needs attrs\['kernel'\]"),
        ("attention", ((1, 1, 4, 8),) * 3, (1, 1, 4, 8), {"attrs": {"causal": 1}}, r"attrs\['causal'\]=1 must be true"),
    ],
)
def test_bad_fields(kind, inputs, output, kwargs, match):
    with pytest.raises(RecordError, match=match):
        Operation("bad", kind, inputs, output, **kwargs)


def test_every_error_is_a_neural_cost_error():
    for error in (ShapeError, UnknownKindError, DTypeError, RecordError):
        assert issubclass(error, NeuralCostError)


# Found by the property tests (tests/test_properties.py): records these rules took in silence.


def test_norm_gradients_of_an_empty_batch_are_zero_not_negative():
    # E = 0 elements into P = 4 parameters: P empty sums, 0 ops (E - P was -4)
    for training in (True, False):
        attrs = {"norm": "batch", "grad_input": False, "training": training}
        op = Operation("bn", "norm_backward", ((0, 4, 3), (0, 4, 3)), (4,), attrs=attrs)
        assert op.cost.flops == 0
    layer = Operation("ln", "norm_backward", ((0, 6), (0, 6)), (0, 6), attrs={"grad_weight": False})
    assert layer.cost.flops == 0  # grad_input of nothing, grad_bias of 6 empty sums


def test_fft_output_must_fit_its_transform():
    with pytest.raises(ShapeError, match=r"output=\(8, 7\) does not fit its inputs: expected \(8,\)"):
        Operation("f", "fft", ((8,),), (8, 7), "complex64", attrs={"lengths": (8,)})
    with pytest.raises(ShapeError, match=r"one-sided \(4, 5\) or the two-sided \(4, 8\)"):
        Operation("f", "fft", ((4, 8),), (4, 6), "complex64", input_dtypes=("float32",), attrs={
            "lengths": (8,), "transform": "r2c"})  # fmt: skip
    # 8 points one-sided: 8//2 + 1 = 5 values; two-sided (torch.fft.fft of a real input): 8
    for out in ((4, 5), (4, 8)):
        op = Operation("f", "fft", ((4, 8),), out, "complex64", input_dtypes=("float32",), attrs={
            "lengths": (8,), "transform": "r2c"})  # fmt: skip
        assert op.cost.flops == 4 * 60  # 2.5 · 8 · 3 = 60 per transform, 4 transforms


def test_nll_loss_without_reduction_writes_one_loss_per_target():
    with pytest.raises(ShapeError, match=r"output=\(3,\) must be the targets' shape \(4,\)"):
        Operation("nll", "nll_loss", ((4,), (4,)), (3,), attrs={"reduction": "none"})
    op = Operation("nll", "nll_loss", ((4,), (4,)), (4,), attrs={"reduction": "none"})
    assert op.cost.flops == 2 * 4  # ignore_index test and negate per target
