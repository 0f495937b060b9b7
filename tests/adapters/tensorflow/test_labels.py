"""Keras scopes written once, and the loop and op name of records that share a name."""

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost.adapters import TensorFlowAdapter  # noqa: E402
from neural_cost.adapters._tf.walker import _scope  # noqa: E402

ADAPTER = TensorFlowAdapter()


@pytest.fixture(scope="module")
def lstm_trace():
    # Named, so that models built by other tests (sequential_1, lstm_2...) do not rename these.
    layers = [keras.Input((8, 4)), keras.layers.LSTM(16, name="lstm"), keras.layers.Dense(3, name="dense")]
    model = keras.Sequential(layers, name="sequential")
    cell = model.layers[0].cell.name  # lstm_cell, or lstm_cell_N where other tests built LSTMs first
    return ADAPTER.trace(model, (np.zeros((2, 8, 4), "float32"),)), f"sequential/lstm/while/{cell}"


def test_lstm_scopes_are_not_doubled(lstm_trace):
    lstm_trace, cell = lstm_trace
    # The while body's ops are named with the layer's full path; the call prefixes it once only,
    # and the cell's re-entered scope (lstm_cell_1) is named after the cell.
    matmuls = sorted((op.scope, op.count) for op in lstm_trace.operations if op.kind in ("matmul", "linear"))
    assert matmuls == [
        ("sequential/dense", 1),
        (cell, 8),  # x·W, one per time step
        (cell, 8),  # h·U
    ]
    assert not any("sequential/lstm/sequential" in (op.scope or "") for op in lstm_trace.operations)


def test_shared_names_carry_loop_and_op_name(lstm_trace):
    lstm_trace, scope = lstm_trace
    cell = [op for op in lstm_trace.operations if op.name == "MatMul" and op.scope == scope]
    assert sorted((op.attrs["loop"], op.attrs["source"]) for op in cell) == [
        ("while_0", "MatMul"),
        ("while_0", "MatMul_1"),
    ]
    (dense,) = [op for op in lstm_trace.operations if op.scope == "sequential/dense" and op.kind == "matmul"]
    assert "loop" not in dense.attrs and "source" not in dense.attrs  # the only MatMul of its scope


@pytest.mark.parametrize(
    ("prefix", "name", "scope"),
    [
        ("sequential/lstm", "sequential/lstm/while/MatMul", "sequential/lstm/while"),  # the whole prefix again
        ("model/lstm", "lstm/while/MatMul", "model/lstm/while"),  # the prefix's tail again
        ("model/block", "dense/MatMul", "model/block/dense"),  # no overlap: nested
        ("model", "MatMul", "model"),
        (None, "dense/MatMul", "dense"),
    ],
)
def test_scope_joins_overlapping_paths_once(prefix, name, scope):
    assert _scope(prefix, name) == scope
