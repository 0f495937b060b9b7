"""One architecture, three frameworks: the same matmul and conv FLOPs from each adapter."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
nn_flax = pytest.importorskip("flax.linen")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")
jnp = jax.numpy

from neural_cost.adapters import JaxAdapter, TensorFlowAdapter, TorchAdapter  # noqa: E402

B, S, D, HEADS, HIDDEN = 2, 10, 32, 4, 64


def flops(trace, kind):
    return sum(op.cost.flops * op.count for op in trace.operations if op.kind == kind)


def three(torch_model, torch_input, flax_model, flax_input, keras_model, keras_input, kind):
    torch_trace = TorchAdapter().trace(torch_model.eval(), (torch_input,))
    params = flax_model.init(jax.random.key(0), flax_input)
    jax_trace = JaxAdapter(cross_check=False).trace(flax_model.apply, (params, flax_input), param_argnums=0)
    tf_trace = TensorFlowAdapter().trace(keras_model, (keras_input,))
    return flops(torch_trace, kind), flops(jax_trace, kind), flops(tf_trace, kind)


def test_mlp_matmuls_agree():
    class Mlp(nn_flax.Module):
        @nn_flax.compact
        def __call__(self, x):
            return nn_flax.Dense(10)(nn_flax.relu(nn_flax.Dense(HIDDEN)(x)))

    counts = three(
        torch.nn.Sequential(torch.nn.Linear(D, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 10)),
        torch.randn(8, D),
        Mlp(),
        jnp.ones((8, D)),
        keras.Sequential([keras.Input((D,)), keras.layers.Dense(HIDDEN, activation="relu"), keras.layers.Dense(10)]),
        tf.ones((8, D)),
        "matmul",
    )
    assert counts == (2 * 8 * D * HIDDEN + 2 * 8 * HIDDEN * 10,) * 3  # 32,768 + 10,240 = 43,008


def test_conv_net_with_batch_norm_convs_agree():
    class Net(nn_flax.Module):
        @nn_flax.compact
        def __call__(self, x):
            x = nn_flax.Conv(8, (3, 3), padding="SAME")(x)
            x = nn_flax.relu(nn_flax.BatchNorm(use_running_average=True)(x))
            return nn_flax.Conv(16, (3, 3), padding="VALID")(x)

    torch_net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Conv2d(8, 16, 3)
    )
    keras_net = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(8, 3, padding="same"),
            keras.layers.BatchNormalization(),
            keras.layers.ReLU(),
            keras.layers.Conv2D(16, 3),
        ]
    )
    counts = three(
        torch_net,
        torch.randn(2, 3, 16, 16),
        Net(),
        jnp.ones((2, 16, 16, 3)),
        keras_net,
        tf.ones((2, 16, 16, 3)),
        "conv",
    )
    # 2·N·H·W·Cout·Cin·9: 2·2·16·16·8·3·9 = 221,184 (SAME) + 2·2·14·14·16·8·9 = 903,168 (VALID)
    assert counts == (221_184 + 903_168,) * 3


def test_transformer_block_matmuls_agree():
    head_dim = D // HEADS

    class TorchBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(D, HEADS, batch_first=True)
            self.norm = torch.nn.LayerNorm(D)
            self.ff = torch.nn.Sequential(torch.nn.Linear(D, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, D))

        def forward(self, x):
            x = self.norm(x + self.attn(x, x, x, need_weights=False)[0])
            return x + self.ff(x)

    class FlaxBlock(nn_flax.Module):
        @nn_flax.compact
        def __call__(self, x):
            x = nn_flax.LayerNorm()(x + nn_flax.MultiHeadDotProductAttention(num_heads=HEADS, qkv_features=D)(x, x))
            return x + nn_flax.Dense(D)(nn_flax.relu(nn_flax.Dense(HIDDEN)(x)))

    inputs = keras.Input((S, D))
    x = keras.layers.LayerNormalization()(inputs + keras.layers.MultiHeadAttention(HEADS, head_dim)(inputs, inputs))
    outputs = x + keras.layers.Dense(D)(keras.layers.Dense(HIDDEN, activation="relu")(x))
    counts = three(
        TorchBlock(),
        torch.randn(B, S, D),
        FlaxBlock(),
        jnp.ones((B, S, D)),
        keras.Model(inputs, outputs),
        tf.ones((B, S, D)),
        "matmul",
    )
    projections = 4 * 2 * B * S * D * D  # q, k, v and the output projection
    attention = 2 * (2 * B * HEADS * S * S * head_dim)  # scores QKᵀ and context P·V
    feed_forward = 2 * B * S * D * HIDDEN * 2
    assert counts == (projections + attention + feed_forward,) * 3
