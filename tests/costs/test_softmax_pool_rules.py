"""safe_softmax, softmax_backward, adaptive_pooling and pooling_gradient, per the docstrings
of costs/softmax_pool.py."""

from __future__ import annotations

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError, ShapeError
from neural_cost.costs.softmax_pool import adaptive_windows


def test_safe_softmax_adds_the_all_masked_row_test():
    op = Operation("ss", "safe_softmax", ((2, 3, 5),), (2, 3, 5))
    # 6 rows of L = 5: softmax 5L-2 = 23 + L compares, L-1 ands, L selects = 8L-3 = 37
    assert op.cost.flops_by_dtype == {"float32": 222}  # 6 * 37 = 222
    assert op.cost.transcendentals == 30  # 6 rows * 5 exponentials
    assert (op.cost.read_bytes, op.cost.write_bytes) == (120, 120)  # 4 * 30 each
    middle = Operation("ss", "safe_softmax", ((2, 3, 5),), (2, 3, 5), attrs={"axis": 1})
    assert middle.cost.flops == 210  # 10 rows of L = 3: 10 * (8*3 - 3) = 210
    with pytest.raises(ShapeError, match="keeps the input's shape"):
        Operation("ss", "safe_softmax", ((2, 3, 5),), (2, 3))
    with pytest.raises(ShapeError, match="rank >= 1"):
        Operation("ss", "safe_softmax", ((),), ())


@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_per_row(log):
    op = Operation("sb", "softmax_backward", ((4, 10), (4, 10)), (4, 10), attrs={"log": log})
    assert op.cost.flops == 156  # 4 rows * (4*10 - 1) = 156
    assert op.cost.transcendentals == (40 if log else 0)  # log_softmax: exp(y), 4 * 10
    assert (op.cost.read_bytes, op.cost.write_bytes) == (320, 160)  # dy and y read, 4 * 40 each


def test_softmax_backward_rejects_mismatched_gradient():
    with pytest.raises(ShapeError, match=r"dy \(4, 10\) and y \(4, 9\) must have the same shape"):
        Operation("sb", "softmax_backward", ((4, 10), (4, 9)), (4, 10))
    with pytest.raises(ShapeError, match="1 inputs; this kind takes 2"):
        Operation("sb", "softmax_backward", ((4, 10),), (4, 10))


def test_adaptive_pooling_uneven_windows():
    assert adaptive_windows(8, 3) == [3, 4, 3]  # [0,3) [2,6) [5,8)
    assert adaptive_windows(7, 3) == [3, 3, 3]  # [0,3) [2,5) [4,7)
    avg = Operation("ap", "adaptive_pooling", ((2, 3, 8, 8),), (2, 3, 3, 3))
    assert avg.cost.flops == 600  # 6 planes * (3+4+3)² = 6 * 100
    biggest = Operation("ap", "adaptive_pooling", ((2, 3, 8, 8),), (2, 3, 3, 3), attrs={"mode": "max"})
    assert biggest.cost.flops == 546  # 600 elements compared - 54 outputs (window - 1 each)
    one_dim = Operation("ap", "adaptive_pooling", ((2, 7),), (2, 3), attrs={"spatial_dims": 1})
    assert one_dim.cost.flops == 18  # 2 rows * 9 window elements


def test_adaptive_pooling_that_tiles_evenly_equals_the_pooling_rule():
    adaptive = Operation("ap", "adaptive_pooling", ((2, 3, 8, 8),), (2, 3, 4, 4))
    attrs = {"mode": "avg", "kernel": (2, 2), "stride": (2, 2)}
    tiled = Operation("p", "pooling", ((2, 3, 8, 8),), (2, 3, 4, 4), attrs=attrs)
    assert adaptive.cost.flops == tiled.cost.flops == 384  # 96 outputs * 4


def test_adaptive_pooling_rejects_bad_shapes():
    with pytest.raises(ShapeError, match=r"must keep x's leading dims \(2, 3\)"):
        Operation("ap", "adaptive_pooling", ((2, 3, 8, 8),), (2, 4, 3, 3))
    with pytest.raises(ShapeError, match="fewer than attrs\\['spatial_dims'\\]=3"):
        Operation("ap", "adaptive_pooling", ((8, 8),), (3, 3), attrs={"spatial_dims": 3})
    with pytest.raises(RecordError, match=r"attrs\['mode'\]='min'"):
        Operation("ap", "adaptive_pooling", ((2, 3, 8, 8),), (2, 3, 3, 3), attrs={"mode": "min"})


def test_pooling_gradient_max_reads_the_saved_indices():
    grad, x = (2, 3, 4, 4), (2, 3, 8, 8)
    op = Operation("mpb", "pooling_gradient", (grad, grad), x, input_dtypes=("float32", "int64"))
    assert op.cost.flops == 96  # one add per gradient element at its saved index
    assert op.cost.read_bytes == 1_152  # 96 * 4 + 96 * 8 (int64 indices) = 1,152
    assert op.cost.write_bytes == 1_536  # the whole input gradient, 4 * 384


def test_pooling_gradient_average_and_adaptive_average():
    avg = Operation("apb", "pooling_gradient", ((2, 3, 4, 4),), (2, 3, 8, 8), attrs={"mode": "avg", "kernel": 3})
    assert avg.cost.flops == 960  # 96 gradients * (9 adds + 1 divide)
    adaptive = Operation("aab", "pooling_gradient", ((2, 3, 3, 3),), (2, 3, 8, 8), attrs={"mode": "adaptive_avg"})
    assert adaptive.cost.flops == 654  # 6 planes * (window elements 100 + divides 9)


def test_pooling_gradient_rejects_bad_shapes():
    with pytest.raises(ShapeError, match=r"saved indices \(2, 3, 4, 3\) must have grad's shape"):
        Operation("mpb", "pooling_gradient", ((2, 3, 4, 4), (2, 3, 4, 3)), (2, 3, 8, 8))
    with pytest.raises(ShapeError, match=r"must keep grad's leading dims \(2, 3\)"):
        Operation("apb", "pooling_gradient", ((2, 3, 4, 4),), (2, 8, 8), attrs={"mode": "avg", "kernel": 2})
