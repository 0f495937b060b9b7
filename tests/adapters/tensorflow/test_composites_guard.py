"""A TF scope is folded into one op by what its ops compute, never by its name alone
(_tf/composites.py): only elementwise and statistics ops, counting within a band of the record."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost.adapters import TensorFlowAdapter  # noqa: E402

ADAPTER = TensorFlowAdapter()


def test_a_users_gelu_scope_around_a_matmul_is_walked_exactly():
    @tf.function
    def f(x):
        with tf.name_scope("Gelu"):  # tf.nn.gelu's scope name; one input, one output of its shape
            return tf.matmul(x, x)

    (record,) = ADAPTER.trace(f, (tf.ones((64, 64)),)).operations
    assert (record.kind, record.cost.flops) == ("matmul", 2 * 64**3)  # 524,288, not gelu's 5·64² = 20,480


def test_a_dense_layer_named_like_a_norm_layer_is_walked():
    # a LayerNormalization called "layer_normalization" and, in a nested model, a Dense of that name
    inner = keras.Sequential([keras.Input((16,)), keras.layers.Dense(16, name="layer_normalization")], name="inner")
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.LayerNormalization(name="layer_normalization"), inner],
        name="outer",
    )
    trace = ADAPTER.trace(model, (tf.ones((4, 16)),))
    assert [(op.kind, op.scope, op.cost.flops) for op in trace.operations] == [
        ("layernorm", "outer/layer_normalization", 4 * (7 * 16 + 2)),  # 5L + 2 statistics, 2L affine: 456
        ("matmul", "outer/inner/layer_normalization", 2 * 4 * 16 * 16),  # 2,048
        ("elementwise", "outer/inner/layer_normalization", 4 * 16),  # the bias: 64
    ]
    assert trace.coverage.unmodeled == ()
