"""The graph ops of a training step — gradients, the fused losses, optimizer updates — on the
graphs TensorFlow traces for them: exact FLOPs and bytes from the closed forms beside them,
each the count PyTorch's record for the same backward gives, and a Keras training step
(Dense, Conv2D, BatchNormalization, Dropout, sparse cross-entropy; Adam and SGD) covered whole."""

import os

import pytest

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost.adapters import TensorFlowAdapter  # noqa: E402
from neural_cost.adapters._tf.ops import TABLE, Free  # noqa: E402
from tests.adapters.tensorflow.test_ops import lower, of, single  # noqa: E402


def gradient_of(forward):
    """fn(x) → d(sum of forward(x))/dx, as a GradientTape in a tf.function records it."""

    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forward(x)
        return tape.gradient(y, x)

    return fn


def test_activation_gradients_name_pytorchs_backward_entries():
    forwards = {
        "ReluGrad": tf.nn.relu, "Relu6Grad": tf.nn.relu6, "LeakyReluGrad": tf.nn.leaky_relu, "EluGrad": tf.nn.elu,
        "SeluGrad": tf.nn.selu, "SigmoidGrad": tf.sigmoid, "TanhGrad": tf.tanh,
        "RsqrtGrad": tf.math.rsqrt, "SqrtGrad": tf.sqrt, "ReciprocalGrad": tf.math.reciprocal, "SoftplusGrad": None,
    }  # fmt: skip
    # per element of the (4, 5) gradient, 20 elements: the catalog's backward entry
    expected = {
        "ReluGrad": ("threshold_backward", 40, 0),  # x <= 0 ? 0 : dy: compare, select — 2·20
        "Relu6Grad": ("hardtanh_backward", 80, 0),  # (x <= 0 or x >= 6) ? 0 : dy: 4·20
        "LeakyReluGrad": ("leaky_relu_backward", 60, 0),  # x > 0 ? dy : dy·slope: 3·20
        "EluGrad": ("elu_backward_from_result", 80, 0),  # y > 0 ? dy : dy·(y + 1): 4·20
        "SeluGrad": ("elu_backward_from_result", 100, 0),  # the same and selu's scale: (4 + 1)·20
        "SoftplusGrad": ("softplus_backward", 140, 20),  # z = exp(x); dy·z/(z + 1) with the threshold: 7·20
        "SigmoidGrad": ("sigmoid_backward", 60, 0),  # dy·(1 - y)·y: 3·20
        "TanhGrad": ("tanh_backward", 60, 0),  # dy·(1 - y²): 3·20
        "RsqrtGrad": ("rsqrt_backward", 80, 0),  # -0.5·dy·y³: 4·20
        "SqrtGrad": ("sqrt_backward", 40, 0),  # dy/(2·y): 2·20
        "ReciprocalGrad": ("reciprocal_backward", 60, 0),  # -dy·y²: 3·20
    }
    spec = tf.TensorSpec((4, 5))
    # tf.nn.softplus's gradient is dy·sigmoid(x); the SoftplusGrad op runs only when called
    softplus = lambda dy, x: tf.raw_ops.SoftplusGrad(gradients=dy, features=x)  # noqa: E731
    for grad_op, forward in forwards.items():
        lowered, missing = lower(gradient_of(forward), spec) if forward else lower(softplus, spec, spec)
        assert grad_op not in missing, grad_op
        record = single(lowered, grad_op)
        entry, flops, transcendentals = expected[grad_op]
        assert (record.attrs["op"], record.cost.flops, record.cost.transcendentals) == (entry, flops, transcendentals)
        assert record.cost.read_bytes == 160 and record.cost.write_bytes == 80  # two (4, 5) floats in, one out


def test_bias_add_grad_sums_over_all_but_the_channels():
    bias = tf.Variable(tf.zeros(3))

    def fn(x, image):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.nn.bias_add(x, bias)) + tf.reduce_sum(tf.nn.bias_add(image, bias, "NCHW"))
        return tape.gradient(loss, bias)

    lowered, _ = lower(fn, tf.TensorSpec((6, 3)), tf.TensorSpec((2, 3, 4, 5)))
    dense, nchw = (r[0] for r in of(lowered, "BiasAddGrad"))
    assert dense.attrs["axes"] == (0,) and dense.output == (3,)
    assert dense.cost.flops == 15  # (6, 3) → (3,): 18 - 3 adds, PyTorch's bias-gradient sum
    assert nchw.attrs["axes"] == (0, 2, 3)
    assert nchw.cost.flops == 117  # (2, 3, 4, 5) → (3,): 120 - 3 adds
    assert nchw.cost.read_bytes == 480 and nchw.cost.write_bytes == 12  # 120 floats in, 3 out


def test_sparse_cross_entropy_is_log_softmax_and_nll_loss_with_their_backward():
    def fn(logits, labels):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)

    lowered, missing = lower(fn, tf.TensorSpec((4, 5)), tf.TensorSpec((4,), tf.int32))
    assert missing == set()
    (records,) = of(lowered, "SparseSoftmaxCrossEntropyWithLogits")
    log_softmax, nll, nll_backward, softmax_backward = records
    # 4 rows of C = 5: log_softmax 5C - 1 = 24 per row and C + 1 = 6 transcendentals
    assert (log_softmax.kind, log_softmax.cost.flops, log_softmax.cost.transcendentals) == ("softmax", 96, 24)
    assert (nll.kind, nll.output, nll.cost.flops) == ("nll_loss", (4,), 8)  # per label: ignore test, negate
    assert nll.cost.read_bytes == 32  # one picked log-probability (float) and one int32 label per row
    # per label: ignore test, negate, ·grad (reduction 'none'), into a (4, 5) gradient written whole
    assert (nll_backward.cost.flops, nll_backward.output, nll_backward.cost.write_bytes) == (12, (4, 5), 80)
    # dy - exp(y)·Σdy: 4C - 1 = 19 per row, C exponentials
    assert (softmax_backward.cost.flops, softmax_backward.cost.transcendentals) == (76, 20)
    assert sum(r.cost.flops for r in records) == 192  # 96 + 8 + 12 + 76


def test_dense_cross_entropy_is_log_softmax_times_the_labels():
    lowered, missing = lower(
        lambda logits, labels: tf.nn.softmax_cross_entropy_with_logits(labels, logits), *[tf.TensorSpec((4, 5))] * 2
    )
    assert missing == set()
    (records,) = of(lowered, "SoftmaxCrossEntropyWithLogits")
    flops = [r.cost.flops for r in records]
    # log_softmax 4·24; t·log p 20; row sums 4·4 adds + 4 negates; ∂: -dy per row 4, ·t 20; log_softmax_backward 4·19
    assert flops == [96, 20, 20, 4, 20, 76]
    assert sum(flops) == 236


def test_conv_gradients_cost_what_the_forward_does():
    conv = tf.Variable(tf.ones((3, 3, 3, 4)))
    depthwise = tf.Variable(tf.ones((3, 3, 3, 2)))

    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.conv2d(x, conv, 2, "SAME")
            z = tf.nn.depthwise_conv2d(x, depthwise, [1, 1, 1, 1], "VALID")
            loss = tf.reduce_sum(y) + tf.reduce_sum(z)
        return tape.gradient(loss, [x, conv, depthwise])

    lowered, missing = lower(fn, tf.TensorSpec((2, 7, 7, 3)))
    assert missing == set()
    forward = single(lowered, "Conv2D")
    assert forward.output == (2, 4, 4, 4) and forward.cost.flops == 6912  # 2 · (2·4·4·4 outputs) · 3 · 3·3
    filter_grad = single(lowered, "Conv2DBackpropFilter")
    # PyTorch's grad_weight: x as (C_in 3, N 2, 7, 7) with dy as (C_out 4, N 2, 4, 4) for a kernel
    assert filter_grad.inputs == ((3, 2, 7, 7), (4, 2, 4, 4)) and filter_grad.output == (3, 4, 3, 3)
    assert filter_grad.attrs["stride"] == (1, 1) and filter_grad.attrs["dilation"] == (2, 2)
    # SAME on 7 with k 3, stride 2: pads (1, 1); high = stride 1·(3 - 1) + dilation 2·(4 - 1) + 1 - 7 - 1 = 1
    assert filter_grad.attrs["padding"] == ((1, 1), (1, 1))
    assert filter_grad.cost.flops == 6912  # 2 · (3·4·3·3 outputs) · N 2 · 4·4 taps, the forward's count
    assert single(lowered, "Conv2DBackpropInput").cost.flops == 6912  # N 2 · 4·4 · C_in 4 · C_out 3 · 9 · 2
    depthwise_forward = single(lowered, "DepthwiseConv2dNative")
    assert depthwise_forward.cost.flops == 5400  # 2 · (2·6·5·5 outputs) · 1 · 3·3
    depthwise_filter = single(lowered, "DepthwiseConv2dNativeBackpropFilter")
    assert depthwise_filter.attrs["batch_groups"] == 3 and depthwise_filter.output == (1, 6, 3, 3)
    assert depthwise_filter.cost.flops == 5400  # 2 · (1·6·3·3 outputs) · N 2 · 5·5 taps
    depthwise_input = single(lowered, "DepthwiseConv2dNativeBackpropInput")
    assert depthwise_input.attrs["groups"] == 3 and depthwise_input.output == (2, 3, 7, 7)
    assert depthwise_input.cost.flops == 5400  # 2 · N 2 · 5·5 · C_in 6 · (C_out 3 / 3 groups) · 3·3


@pytest.mark.parametrize("groups", [1, 2])
def test_conv_gradients_are_pytorchs_records(groups):
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import TorchAdapter

    # a strided, dilated, padded conv on 10×9: 4 → 4 channels, its gradients in both frameworks
    conv = torch.nn.Conv2d(4, 4, 3, stride=2, padding=1, dilation=2, groups=groups, bias=False)
    x = torch.randn(2, 4, 10, 9, requires_grad=True)
    torch_grads = [op for op in TorchAdapter().trace(conv, (x,), training=True).operations if "grad" in op.name]
    kernel = tf.Variable(tf.ones((3, 3, 4 // groups, 4)))

    def fn(image):
        with tf.GradientTape() as tape:
            tape.watch(image)
            loss = tf.reduce_sum(tf.nn.conv2d(image, kernel, 2, [[0, 0], [1, 1], [1, 1], [0, 0]], dilations=2))
        return tape.gradient(loss, [image, kernel])

    trace = TensorFlowAdapter().trace(tf.function(fn), (tf.ones((2, 10, 9, 4)),))
    tf_grads = [op for op in trace.operations if op.name in ("Conv2DBackpropInput", "Conv2DBackpropFilter")]

    def described(op):
        return op.inputs, op.output, op.attrs["padding"], op.cost.flops

    assert [described(op) for op in tf_grads] == [
        (op.inputs, op.output, op.attrs["padding"] if "weight" in op.name else ((1, 1), (1, 1)), op.cost.flops)
        for op in torch_grads
    ]
    # out 4×4 (10 + 2 - 2·2 - 1)//2 + 1 = 4, (9 + 2 - 5)//2 + 1 = 4: 2 · (2·4·4·4) · (4/groups) · 9 each
    assert [op.cost.flops for op in tf_grads] == [9216 // groups] * 2


def test_fused_batch_norm_grad_is_norm_backward():
    def fn(dy, x, per_channel):
        # the op tf.compat.v1.nn.fused_batch_norm's gradient runs; the saved mean and inverse std in reserve 1, 2
        return tf.raw_ops.FusedBatchNormGradV3(
            y_backprop=dy, x=x, scale=per_channel, reserve_space_1=per_channel, reserve_space_2=per_channel,
            reserve_space_3=per_channel, is_training=True,
        )  # fmt: skip

    image, channels = tf.TensorSpec((2, 4, 4, 3)), tf.TensorSpec((3,))
    lowered, missing = lower(fn, image, image, channels)
    assert missing == set()
    grad = single(lowered, "FusedBatchNormGradV3")
    assert grad.kind == "norm_backward" and grad.inputs == ((2, 3, 4, 4),) * 2 + ((3,),) * 3
    assert grad.attrs["training"] is True and grad.attrs["affine"] is True
    # native_batch_norm_backward's count, E = 96, C = 3: x̂ 2E, dx 7E + E (γ), dγ 2E - C, dβ E - C = 13E - 2C
    assert grad.cost.flops == 1242
    assert grad.extra_outputs == ((3,), (3,))
    assert grad.cost.read_bytes == 804  # dy and x 96 floats each, γ, mean and inverse std 3 each: 201·4
    assert grad.cost.write_bytes == 408  # dx 96 floats, dγ and dβ 3 each: 102·4


def test_pooling_gradients():
    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.nn.max_pool2d(x, 2, 2, "VALID")) + tf.reduce_sum(tf.nn.avg_pool2d(x, 2, 2, "VALID"))
        return tape.gradient(loss, x)

    lowered, missing = lower(fn, tf.TensorSpec((2, 4, 4, 3)))
    assert missing == set()
    max_grad = single(lowered, "MaxPoolGrad")
    assert max_grad.inputs == ((2, 3, 2, 2), (2, 3, 4, 4)) and max_grad.output == (2, 3, 4, 4)
    assert max_grad.cost.flops == 96  # 24 gradient elements · (3 comparisons for the window's winner + 1 add)
    avg_grad = single(lowered, "AvgPoolGrad")
    assert avg_grad.cost.flops == 120  # 24 gradient elements · (a divide + 4 window adds), as avg_pool2d_backward


def test_variable_updates_are_in_place_elementwise():
    var = tf.Variable(tf.zeros((3, 4)))

    def fn(x):
        var.assign_add(x)
        var.assign_sub(x)
        var.assign(x)
        return tf.bitcast(x, tf.int32)

    lowered, missing = lower(fn, tf.TensorSpec((3, 4)))
    assert missing == set()
    for op_type, entry in (("AssignAddVariableOp", "add"), ("AssignSubVariableOp", "sub")):
        update = single(lowered, op_type)
        assert update.attrs["op"] == entry and update.cost.flops == 12  # one op per element of the (3, 4) variable
        assert (update.cost.read_bytes, update.cost.write_bytes) == (
            96,
            48,
        )  # the variable and the value, 12 floats each
    assign = single(lowered, "AssignVariableOp")
    assert (assign.kind, assign.cost.flops, assign.cost.write_bytes) == ("copy", 0, 48)
    assert isinstance(TABLE["Bitcast"], Free)


def keras_training_step(optimizer):
    """A Keras step with Dense, Conv2D, BatchNormalization and Dropout layers and the sparse
    cross-entropy, as a tf.function with GradientTape and ``apply_gradients``."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Conv2D(4, 3, padding="same", activation="relu"),
            keras.layers.BatchNormalization(),
            keras.layers.Conv2D(4, 3, strides=2),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(5, activation="relu"),
            keras.layers.Dense(3),
        ]
    )
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    return model, step, (tf.random.normal((2, 8, 8, 3)), tf.constant([0, 2]))


@pytest.mark.parametrize("optimizer", ["adam", "sgd_momentum", "sgd"])
def test_keras_training_step_is_fully_covered(optimizer):
    made = {
        "adam": lambda: keras.optimizers.Adam(1e-3),
        "sgd_momentum": lambda: keras.optimizers.SGD(0.1, momentum=0.9),
        "sgd": lambda: keras.optimizers.SGD(0.1),
    }[optimizer]()
    model, step, args = keras_training_step(made)
    trace = TensorFlowAdapter().trace(step, args)
    assert trace.coverage.unmodeled == () and trace.coverage.fraction == 1.0
    names = {op.name for op in trace.operations}
    expected = {"ReluGrad", "BiasAddGrad", "RsqrtGrad", "Conv2DBackpropFilter", "Conv2DBackpropInput", "MaxPoolGrad"}
    assert expected <= names
    assert "SparseSoftmaxCrossEntropyWithLogits.log_softmax_backward" in names
    updates = [op for op in trace.operations if op.name in ("AssignAddVariableOp", "AssignSubVariableOp")]
    # conv 3·3·3·4 + 4, γ and β 4 + 4, conv 3·3·4·4 + 4, dense 4·5 + 5 (8 → 3 → pooled 1: 4 features), 5·3 + 3
    parameters = sum(v.numpy().size for v in model.trainable_variables)
    assert parameters == 311  # 112 + 8 + 148 + 25 + 18
    # the parameters' own updates: Adam m += (g - m)·(1-β1), v += (g² - v)·(1-β2), p -= step (3 per parameter);
    # SGD with momentum p += m (1, m itself is assigned: a copy); plain SGD p -= lr·g (1). The step
    # counter is iterations.assign(iterations + 1): an AddV2 and a copy, no in-place update
    per_parameter = {"adam": 3, "sgd_momentum": 1, "sgd": 1}[optimizer]
    assert sum(op.cost.flops for op in updates) == per_parameter * parameters


def test_keras_model_train_step_is_fully_covered():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((6, 6, 2)), keras.layers.DepthwiseConv2D(3), keras.layers.AveragePooling2D(2),
         keras.layers.Flatten(), keras.layers.Dense(4, activation="sigmoid"), keras.layers.Dense(3, activation="tanh")]
    )  # fmt: skip
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(), metrics=["accuracy"])
    model.optimizer.build(model.trainable_variables)
    trace = TensorFlowAdapter().trace(
        tf.function(lambda x, y: model.train_step((x, y))), (tf.ones((2, 6, 6, 2)), tf.constant([0, 1]))
    )
    assert trace.coverage.unmodeled == () and trace.coverage.fraction == 1.0


def test_a_dense_layers_backward_counts_as_pytorchs():
    torch = pytest.importorskip("torch")
    from neural_cost.adapters import TorchAdapter

    torch.manual_seed(0)
    labels = [0, 2, 1, 1, 0, 2]
    net = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    target = torch.tensor(labels)
    torch_trace = TorchAdapter().trace(
        net, (torch.randn(6, 8),), training=True, loss_fn=lambda out: torch.nn.functional.cross_entropy(out, target)
    )
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(3)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        return tape.gradient(loss, model.trainable_variables)

    tf_trace = TensorFlowAdapter().trace(step, (tf.random.normal((6, 8)), tf.constant(labels)))

    def costs(trace, name):
        return [(op.cost.flops, op.cost.transcendentals) for op in trace.operations if op.name == name]

    # ReLU's gradient: 6·4 elements · 2 (compare, select) = 48, in both
    assert costs(tf_trace, "ReluGrad") == costs(torch_trace, "threshold_backward") == [(48, 0)]
    # the biases' gradients: (6, 3) → 3 and (6, 4) → 4, 15 and 20 adds, in both
    assert costs(tf_trace, "BiasAddGrad") == costs(torch_trace, "sum") == [(15, 0), (20, 0)]
    # the loss's softmax and its backward: 6 rows of 3, 6·14 = 84 with 6·4 exps; 6·11 = 66 with 6·3
    loss = "SparseSoftmaxCrossEntropyWithLogits"
    assert costs(tf_trace, f"{loss}.log_softmax") == costs(torch_trace, "_log_softmax") == [(84, 24)]
    assert costs(tf_trace, f"{loss}.log_softmax_backward") == costs(torch_trace, "_log_softmax_backward_data")
    assert costs(tf_trace, f"{loss}.log_softmax_backward") == [(66, 18)]
