"""nll_loss, nll_loss_backward (costs/losses.py), foreach_reduce and foreach_elementwise
(costs/lists.py)."""

from __future__ import annotations

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError, ShapeError

TARGETS = (2, 3, 3)  # 18 targets (an nll_loss2d of x (2, 5, 3, 3))
PICKED = (18,)  # the one log-probability each target picks


@pytest.mark.parametrize(
    ("reduction", "weighted", "output", "flops"),
    [
        ("mean", False, (), 71),  # 18 * 2 (test, negate) + 17 (loss sum) + 17 (weight sum) + 1 divide
        ("sum", False, (), 53),  # 18 * 2 + 17
        ("none", True, TARGETS, 54),  # 18 * 3 (test, negate, ·weight)
    ],
)
def test_nll_loss_reads_one_value_per_target(reduction, weighted, output, flops):
    inputs = (PICKED, TARGETS, PICKED) if weighted else (PICKED, TARGETS)
    dtypes = ("float32", "int64", "float32")[: len(inputs)]
    op = Operation("nll", "nll_loss", inputs, output, input_dtypes=dtypes, attrs={"reduction": reduction})
    assert op.cost.flops_by_dtype == {"float32": flops}
    assert op.cost.read_bytes == 216 + (72 if weighted else 0)  # picked 4 * 18 + targets 8 * 18 (+ weights)


def test_nll_loss_rejects_bad_shapes():
    with pytest.raises(ShapeError, match=r"one value per target \(18\)"):
        Operation("nll", "nll_loss", ((17,), TARGETS), ())
    with pytest.raises(ShapeError, match="must be a scalar"):
        Operation("nll", "nll_loss", (PICKED, TARGETS), TARGETS)
    with pytest.raises(RecordError, match=r"attrs\['reduction'\]='avg'"):
        Operation("nll", "nll_loss", (PICKED, TARGETS), (), attrs={"reduction": "avg"})


def test_nll_loss_backward_writes_one_value_per_target():
    x = (2, 5, 3, 3)
    plain = Operation("nb", "nll_loss_backward", ((), TARGETS, ()), x)
    assert plain.cost.flops == 72  # 18 * (test, negate, ·grad, ÷total_weight = 4)
    weighted = Operation("nb", "nll_loss_backward", ((), TARGETS, (5,), ()), x, attrs={"reduction": "sum"})
    assert weighted.cost.flops == 72  # 18 * (3 + ·weight)
    assert plain.cost.write_bytes == 4 * 90  # the whole input gradient, zeroed
    single = Operation("nb", "nll_loss_backward", ((), (), ()), (5,), attrs={"reduction": "none"})
    assert single.cost.flops == 3  # one sample, one target
    with pytest.raises(ShapeError, match="without its class dim"):
        Operation("nb", "nll_loss_backward", ((), (2, 3), ()), x)


MIXED = {"input_dtypes": ("float32", "float64"), "extra_output_dtypes": ("float64",)}


def test_foreach_reduce_charges_each_tensor_to_its_dtype():
    inputs = ((3, 4), (5,))
    largest = Operation("fm", "foreach_reduce", inputs, (), "float32", extra_outputs=((),), **MIXED)
    assert dict(largest.cost.flops_by_dtype) == {"float32": 11, "float64": 4}  # n - 1 comparisons each
    attrs = {"flops_per_element": 1, "flops_per_output": 1, "transcendentals_per_output": 1}
    norm = Operation("fn", "foreach_reduce", inputs, (), "float32", extra_outputs=((),), attrs=attrs, **MIXED)
    # 2-norm: n squares, n - 1 adds, 1 root: 12 + 11 + 1 = 24; 5 + 4 + 1 = 10
    assert dict(norm.cost.flops_by_dtype) == {"float32": 24, "float64": 10}
    assert norm.cost.transcendentals == 2  # one root per tensor
    assert (norm.cost.read_bytes, norm.cost.write_bytes) == (88, 12)  # 4*12 + 8*5; 4 + 8
    with pytest.raises(ShapeError, match="reduces 2 tensors into 1 outputs"):
        Operation("fm", "foreach_reduce", inputs, ())


def test_foreach_elementwise_over_mixed_dtypes():
    targets = {"extra_outputs": ((5,),), "extra_output_dtypes": ("float64",)}
    op = Operation("fe", "foreach_elementwise", ((3, 4), (5,)), (3, 4), input_dtypes=("float32", "float64"), **targets)
    assert dict(op.cost.flops_by_dtype) == {"float32": 12, "float64": 5}  # 1 per element, each at its dtype
    assert (op.cost.read_bytes, op.cost.write_bytes) == (88, 88)  # 4 * 12 + 8 * 5, both ways
    attrs = {"lists": 2, "flops_per_element": 2, "transcendentals_per_element": 1}
    two = Operation(
        "fe",
        "foreach_elementwise",
        ((3, 4), (5,), (3, 4), (5,), ()),  # list a, list b, a 0-d scalar
        (3, 4),
        input_dtypes=("float32", "float64", "float32", "float64", "float32"),
        attrs=attrs,
        **targets,
    )
    assert dict(two.cost.flops_by_dtype) == {"float32": 24, "float64": 10}  # 2 * 12; 2 * 5
    assert two.cost.transcendentals == 17  # 12 + 5


def test_foreach_elementwise_rejects_bad_shapes():
    with pytest.raises(ShapeError, match=r"tensor 0 \(4, 4\) does not broadcast to its output \(3, 4\)"):
        Operation("fe", "foreach_elementwise", ((4, 4),), (3, 4))
    with pytest.raises(ShapeError, match="lists of 2 need 4"):
        Operation("fe", "foreach_elementwise", ((3, 4), (5,)), (3, 4), extra_outputs=((5,),), attrs={"lists": 2})
