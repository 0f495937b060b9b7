"""Keras models end to end: coverage and closed-form FLOPs."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
layers = keras.layers

from neural_cost.adapters import TensorFlowAdapter  # noqa: E402

ADAPTER = TensorFlowAdapter()


def flops(trace, kinds):
    return sum(op.cost.flops * op.count for op in trace.operations if op.kind in kinds)


def traced(model, shape, dtype=tf.float32):
    data = tf.zeros(shape, dtype) if dtype != tf.float32 else tf.random.normal(shape)
    trace = ADAPTER.trace(model, (data,))
    assert trace.coverage.fraction >= 0.99, trace.coverage.unmodeled
    return trace


def test_mlp():
    model = keras.Sequential([keras.Input((32,)), layers.Dense(64, activation="relu"), layers.Dense(10)])
    trace = traced(model, (8, 32))
    assert flops(trace, ("matmul",)) == 2 * 8 * 32 * 64 + 2 * 8 * 64 * 10  # 32,768 + 10,240 = 43,008


def test_cnn_with_batch_norm_and_pooling():
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            layers.Conv2D(8, 3, padding="same", name="stem"),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.MaxPooling2D(2),
            layers.Conv2D(16, 3, padding="valid", name="stem_1"),  # a name that looks like a re-entered scope
        ]
    )
    trace = traced(model, (2, 16, 16, 3))
    # conv1: 2·N·H·W·Cout·Cin·kh·kw = 2·2·16·16·8·3·3·3 = 221,184; conv2 on 8×8 → 6×6: 2·2·6·6·16·8·3·3 = 165,888
    assert flops(trace, ("conv",)) == 221_184 + 165_888
    assert sorted(op.scope.rsplit("/", 1)[1] for op in trace.operations if op.kind == "conv") == ["stem", "stem_1"]


def test_conv1d():
    model = keras.Sequential([keras.Input((20, 4)), layers.Conv1D(6, 5)])
    trace = traced(model, (3, 20, 4))
    assert flops(trace, ("conv",)) == 2 * 3 * 16 * 6 * 4 * 5  # 2·N·L_out·Cout·Cin·k = 11,520


def test_embedding_reads_rows_not_the_table():
    model = keras.Sequential([keras.Input((7,), dtype="int32"), layers.Embedding(10_000, 16)])
    trace = traced(model, (4, 7), tf.int32)
    (lookup,) = [op for op in trace.operations if op.kind in ("embedding", "gather")]
    assert lookup.cost.read_bytes == 4 * 7 * 16 * 4 + 4 * 7 * 4  # 28 rows of 16 floats + 28 int32 indices


def test_multi_head_attention_block():
    batch, seq, dim, heads, key_dim = 2, 10, 32, 4, 8
    inputs = keras.Input((seq, dim))
    attended = layers.MultiHeadAttention(heads, key_dim)(inputs, inputs)
    outputs = layers.LayerNormalization()(inputs + attended)
    trace = traced(keras.Model(inputs, outputs), (batch, seq, dim))
    projections = 3 * 2 * batch * seq * dim * heads * key_dim + 2 * batch * seq * heads * key_dim * dim  # q,k,v + out
    scores_and_context = 2 * (2 * batch * heads * seq * seq * key_dim)  # QKᵀ and P·V
    assert flops(trace, ("matmul",)) == projections + scores_and_context


def test_lstm_counts_its_sequence_length():
    model = keras.Sequential([keras.Input((6, 4)), layers.LSTM(8)])
    trace = traced(model, (2, 6, 4))
    assert flops(trace, ("matmul",)) == 6 * 2 * 2 * (4 + 8) * 4 * 8  # steps · 2·B·(I+H)·4H = 9,216
