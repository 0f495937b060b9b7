"""TensorFlowAdapter: real Keras models, loops, scopes, coverage, bad input, timing."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost import AdapterError, HardwareSpec, Measurement, analyze_gap, estimate_trace, profile_model  # noqa: E402
from neural_cost.adapters import TensorFlowAdapter  # noqa: E402

ADAPTER = TensorFlowAdapter()


def matmul_flops(trace):
    return sum(op.cost.flops * op.count for op in trace.operations if op.kind in ("matmul", "linear"))


def test_while_with_maximum_iterations_counts_16_bodies():
    def f(x):
        return tf.while_loop(lambda i, y: i < 100, lambda i, y: (i + 1, y * 2.0), (0, x), maximum_iterations=16)[1]

    trace = ADAPTER.trace(f, (tf.ones(4),))
    (loop,) = trace.loop_assumptions
    assert (loop.trip_count, loop.source) == (16, "inferred")  # min(100 by the counter, 16 by the maximum)
    assert sum(op.cost.flops * op.count for op in trace.operations if op.name == "Mul") == 16 * 4


def test_unbounded_while_uses_the_default_and_the_report_names_it():
    def g(x):
        return tf.while_loop(lambda y: tf.reduce_sum(y) < 100.0, lambda y: y * 2.0, (x,))

    trace = TensorFlowAdapter(default_trip_count=3).trace(g, (tf.ones(4),))
    (loop,) = trace.loop_assumptions
    assert (loop.trip_count, loop.source) == (3, "default")
    text = analyze_gap(estimate_trace(trace), Measurement((1e-3,) * 5), HardwareSpec("c", 1e12, 1e11)).render()
    assert "Loop while_0 (while) was counted 3 times by default" in text


def test_lstm_loop_counts_its_sequence_length():
    batch, steps, features, units = 3, 5, 8, 16
    model = keras.Sequential([keras.Input((steps, features)), keras.layers.LSTM(units), keras.layers.Dense(4)])
    trace = ADAPTER.trace(model, (tf.random.normal((batch, steps, features)),))
    (loop,) = trace.loop_assumptions
    assert loop.trip_count == steps and loop.source == "inferred"
    # per step: x·W (8→64) and h·U (16→64): 2·B·(I+H)·4H; plus the Dense head 2·3·16·4
    assert matmul_flops(trace) == steps * 2 * batch * (features + units) * 4 * units + 2 * batch * units * 4
    assert trace.coverage.fraction >= 0.99, trace.coverage.unmodeled


def test_scopes_follow_keras_layer_names():
    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(16, name="hidden"), keras.layers.Dense(4, name="out")]
    )
    trace = ADAPTER.trace(model, (tf.ones((2, 8)),))
    scopes = {op.scope for op in trace.operations if op.kind in ("matmul", "linear")}
    assert any(s.endswith("hidden") for s in scopes) and any(s.endswith("out") for s in scopes)


def test_bad_input_is_a_clear_error():
    with pytest.raises(AdapterError, match="model=3 is not callable"):
        ADAPTER.trace(3, (tf.ones(2),))
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    with pytest.raises(AdapterError, match=r"tracing .* for inputs \[\(2, 9\)\] failed"):
        ADAPTER.trace(model, (tf.ones((2, 9)),))  # 9 features for a model built for 8
    with pytest.raises(AdapterError, match="unknown dimension"):
        ADAPTER.trace(model, (tf.TensorSpec((None, 8)),))


def _two_inputs():
    """A Keras model of two inputs, 16 and 8 features, concatenated into a 24 → 4 ``Dense``."""
    image, extra = keras.Input((16,), name="image"), keras.Input((8,), name="extra")
    out = keras.layers.Dense(4, name="head")(keras.layers.Concatenate()([image, extra]))
    return keras.Model({"image": image, "extra": extra}, out), keras.Model([image, extra], out)


def test_a_model_of_several_inputs_takes_them_as_a_list_or_a_dict():
    """A list (or dict) of tensors is one argument of that structure, each tensor an input: never packed into one
    tensor (``tf.convert_to_tensor`` of two (3, 16) tensors would stack them as (2, 3, 16); of (3, 16) and (3, 8) it
    fails). Both traces count the head's 2 · 3 · 24 · 4 = 576 FLOPs, name each input by its path, and profile."""
    by_name, by_position = _two_inputs()
    image, extra = tf.ones((3, 16)), tf.ones((3, 8))
    listed = ADAPTER.trace(by_position, ([image, extra],))
    assert listed.input_shapes == (("arg0[0]", (3, 16)), ("arg0[1]", (3, 8)))
    assert matmul_flops(listed) == 2 * 3 * 24 * 4 == 576
    assert [(spec.name, spec.shape) for spec in listed.boundary if spec.role == "input"] == [
        ("arg0[0]", (3, 16)),
        ("arg0[1]", (3, 8)),
    ]
    named = ADAPTER.trace(by_name, ({"image": image, "extra": extra},))
    assert dict(named.input_shapes) == {"arg0['extra']": (3, 8), "arg0['image']": (3, 16)}
    assert matmul_flops(named) == 576
    profile = ADAPTER.profile(by_position, ([image, extra],), trace=listed, runs=1)
    assert profile.kernels and profile.kernel_seconds > 0
    with pytest.raises(AdapterError, match=r"input 0\[1\] is not a tensor"):
        ADAPTER.trace(by_position, ([image, object()],))


def test_profile_model_counts_the_variables_as_parameters():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16)])
    profile = profile_model(model, (tf.ones((2, 8)),), ADAPTER, training=True, optimizer_state_multiplier=2)
    assert profile.memory.parameter_bytes == 4 * (8 * 16 + 16)  # kernel and bias, float32: 576
    assert profile.memory.training_minimum_bytes == 4 * 576


def test_benchmark_times_the_compiled_function():
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16)])
    m = ADAPTER.benchmark(model, tf.ones((2, 8)), warmup=1, repeats=3)
    assert m.runs == 3 and m.compile_seconds > 0 and m.device_kind == "cpu"


def test_a_tf_function_with_a_none_default_argument_traces():
    # tf.math.softsign(features, name=None): the signature holds None for `name`, which moves no bytes
    trace = TensorFlowAdapter().trace(tf.function(tf.math.softsign), (tf.ones((8, 16)),))
    assert sum(op.cost.flops * op.count for op in trace.operations) == 3 * 8 * 16  # abs, add, divide per element
    assert [spec.role for spec in trace.boundary] == ["input", "output"]


def test_keras_norm_layers_and_gelu_are_one_record_each():
    model = keras.Sequential(
        [keras.Input((6, 8)), keras.layers.Dense(8, activation="gelu"), keras.layers.LayerNormalization()]
    )
    trace = ADAPTER.trace(model, (tf.ones((2, 6, 8)),))
    gelu, norm = [op for op in trace.operations if op.kind != "matmul" and op.name != "BiasAdd"]
    assert (gelu.kind, gelu.attrs, gelu.inputs) == ("elementwise", {"op": "gelu"}, ((2, 6, 8),))
    assert (norm.kind, norm.inputs, norm.attrs) == ("layernorm", ((2, 6, 8), (8,), (8,)), {"normalized_dims": 1})
    assert norm.cost.flops == 12 * (7 * 8 + 2)  # 12 rows: 5L + 2 statistics, 2L scale and shift = 696
    assert trace.coverage.unmodeled == () and trace.coverage.fraction == 1.0


def test_a_layer_norm_over_a_middle_axis_is_walked_op_by_op():
    model = keras.Sequential([keras.Input((6, 8)), keras.layers.LayerNormalization(axis=1)])
    trace = ADAPTER.trace(model, (tf.ones((2, 6, 8)),))
    assert "layernorm" not in {op.kind for op in trace.operations}
    assert trace.coverage.unmodeled == ()
