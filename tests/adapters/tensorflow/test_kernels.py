"""TensorFlow's kernels: one per graph op that does work, executed as often as its records,
traffic the records' unfused bytes."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost import HardwareSpec, MemoryLevel, Trace, analyze_gap, estimate_trace  # noqa: E402
from neural_cost.adapters import TensorFlowAdapter  # noqa: E402
from neural_cost.adapters._tf.kernels import KERNEL_SOURCE, XLA_NOTE  # noqa: E402
from tests.helpers import cpu_measurement  # noqa: E402

ADAPTER = TensorFlowAdapter()


def _dense():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu", name="dense")], name="seq")


def _counted_loop(x):
    def body(i, y):
        return i + 1, tf.matmul(y, y) * 2.0

    return tf.while_loop(lambda i, y: i < 5, body, (tf.constant(0), x))[1]


def _claims_each_record_once(trace):
    claimed = [i for kernel in trace.kernels for i in kernel.operations]
    assert len(claimed) == len(set(claimed))
    return set(claimed)


def test_dense_layer_is_one_kernel_per_graph_op():
    trace = ADAPTER.trace(_dense(), tf.zeros((2, 4)))
    assert trace.kernel_source == KERNEL_SOURCE
    assert [(k.name, k.kind, k.operations, k.executions) for k in trace.kernels] == [
        ("seq/dense/MatMul", "MatMul", (0,), 1),
        ("seq/dense/BiasAdd", "BiasAdd", (1,), 1),
        ("seq/dense/Relu", "Relu", (2,), 1),
    ]
    assert all(k.scopes == ("seq/dense",) for k in trace.kernels)
    # MatMul reads x (2·4·4 = 32 B) and the kernel (4·3·4 = 48 B), writes (2,3) (24 B);
    # BiasAdd reads 24 + the bias 12, writes 24; Relu reads 24, writes 24
    assert [k.traffic_bytes for k in trace.kernels] == [104, 60, 48]
    assert [k.footprint_bytes for k in trace.kernels] == [104, 60, 48]  # every operand distinct
    estimate = estimate_trace(trace)
    # MatMul 2·2·4·3 = 48 FLOPs, BiasAdd and Relu one per output element (6 each)
    assert [dict(k.flops_by_dtype) for k in estimate.kernels] == [{"float32": 48}, {"float32": 6}, {"float32": 6}]


def test_conv2d_kernel_traffic_by_hand():
    model = keras.Sequential([keras.Input((8, 8, 3)), keras.layers.Conv2D(4, 3, name="conv")], name="c")
    trace = ADAPTER.trace(model, tf.zeros((2, 8, 8, 3)))
    conv = trace.kernels[0]
    assert (conv.name, conv.kind, conv.operations) == ("c/conv/convolution", "Conv2D", (0,))
    # reads x (2·8·8·3 = 384 floats) and the filter (3·3·3·4 = 108), writes (2,6,6,4) = 288: 780 floats
    assert conv.traffic_bytes == (384 + 108 + 288) * 4 == 3120


def test_while_loop_kernels_execute_as_often_as_their_records():
    trace = ADAPTER.trace(_counted_loop, tf.zeros((4, 4)))
    kernels = {k.name: k for k in trace.kernels}
    matmul = kernels["while/MatMul"]
    assert matmul.executions == 5  # the body runs 5 times
    assert kernels["while/Less"].executions == 6  # the condition runs once more
    # x·x reads the (4,4) float32 operand twice (64 B each) and writes 64 B; its footprint is
    # the operand once and the result: 128 B
    assert (matmul.traffic_bytes, matmul.footprint_bytes) == (192, 128)
    assert matmul.total_traffic_bytes == 5 * 192
    (index,) = matmul.operations
    assert trace.operations[index].count == matmul.executions


MODELS = {
    "dense": (_dense, lambda: tf.zeros((2, 4))),
    "conv2d": (
        lambda: keras.Sequential(
            [
                keras.Input((8, 8, 3)),
                keras.layers.Conv2D(4, 3, activation="relu"),
                keras.layers.LayerNormalization(),
                keras.layers.Flatten(),
                keras.layers.Dense(2),
            ]
        ),
        lambda: tf.zeros((2, 8, 8, 3)),
    ),
    "while_loop": (lambda: _counted_loop, lambda: tf.zeros((4, 4))),
    "keras_lstm": (
        lambda: keras.Sequential([keras.Input((5, 8)), keras.layers.LSTM(16), keras.layers.Dense(4)]),
        lambda: tf.zeros((3, 5, 8)),
    ),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_kernel_traffic_is_the_unfused_traffic_and_flops_are_the_records(name):
    make_model, make_input = MODELS[name]
    trace = ADAPTER.trace(make_model(), make_input())
    estimate = estimate_trace(trace)
    assert _claims_each_record_once(trace) == set(range(len(trace.operations)))  # every record, once
    assert sum(k.total_traffic_bytes for k in trace.kernels) == estimate.bytes
    assert estimate.compiled_bytes == estimate.bytes
    assert sum(k.flops for k in estimate.kernels) == estimate.flops
    for kernel in estimate.kernels:
        rows = [estimate.by_operation[i] for i in kernel.operations]
        assert kernel.flops == sum(row.flops for row in rows)
        assert kernel.total_traffic_bytes == sum(row.bytes for row in rows)
    assert Trace.from_dict(trace.to_dict()) == trace


def test_folded_norm_layer_is_one_kernel():
    model = keras.Sequential([keras.Input((6,)), keras.layers.LayerNormalization(name="norm")], name="n")
    trace = ADAPTER.trace(model, tf.zeros((2, 6)))
    (kernel,) = trace.kernels
    assert (kernel.name, kernel.kind, kernel.operations) == ("n/norm/LayerNormalization", "LayerNormalization", (0,))
    # reads x (2·6) and gamma, beta (6 each), writes y (2·6): 36 floats
    assert kernel.traffic_bytes == 36 * 4


def test_cond_has_kernels_only_for_the_costed_branch():
    def f(x):
        return tf.cond(tf.reduce_sum(x) > 0, lambda: tf.matmul(x, x), lambda: x + 1.0)

    trace = ADAPTER.trace(f, tf.zeros((4, 4)))
    assert [k.kind for k in trace.kernels] == ["Sum", "Greater", "MatMul"]  # not the else branch's AddV2
    assert sum(k.total_traffic_bytes for k in trace.kernels) == estimate_trace(trace).bytes


def test_unmodeled_op_is_a_kernel_with_no_records():
    trace = ADAPTER.trace(lambda x: tf.roll(x, 1, 0) * 2.0, tf.zeros((4, 4)))
    assert dict(trace.coverage.unmodeled) == {"Roll": 1}
    roll, mul = trace.kernels
    assert (roll.name, roll.kind, roll.operations) == ("Roll", "Roll", ())
    assert (mul.kind, mul.operations) == ("Mul", (0,))
    # reads x (16 floats, 64 B), the int32 shift and axis (4 B each), writes 64 B
    assert roll.traffic_bytes == roll.footprint_bytes == 64 + 4 + 4 + 64
    estimate = estimate_trace(trace)
    assert estimate.compiled_bytes == estimate.bytes + 136


def test_unmodeled_op_that_cannot_be_sized_has_no_kernel_and_a_note():
    def f(x):
        return tf.cast(tf.strings.length(tf.strings.as_string(x)), tf.float32) + x

    trace = ADAPTER.trace(f, tf.zeros((4,)))
    assert dict(trace.coverage.unmodeled) == {"AsString": 1, "StringLength": 1}
    assert [k.kind for k in trace.kernels] == ["Cast", "AddV2"]
    assert any("AsString (1), StringLength (1)" in note for note in trace.notes)


def test_jit_compiled_function_called_from_a_plain_one_keeps_graph_kernels_with_a_note():
    # A jit function traced itself now gets XLA's kernels (test_kernels_xla.py); one called from a
    # plain tf.function is walked as graph ops, and the note says XLA's fusion is not read there.
    plain = ADAPTER.trace(tf.function(lambda x: tf.nn.relu(x) + 1.0), tf.zeros((4, 4)))
    assert XLA_NOTE not in plain.notes
    inner = tf.function(lambda x: x * 2.0, jit_compile=True)
    called = ADAPTER.trace(tf.function(lambda x: inner(x) + 1.0), tf.zeros((4,)))
    assert XLA_NOTE in called.notes
    assert called.kernel_source == KERNEL_SOURCE
    assert [k.kind for k in called.kernels] == ["Mul", "AddV2"]


def test_gap_analysis_scores_the_kernels_at_their_levels():
    trace = ADAPTER.trace(_dense(), tf.zeros((2, 4)))
    spec = HardwareSpec(
        "test cpu",
        peak_flops=1e9,
        memory_bandwidth=1e9,
        kind="cpu",
        memory_levels=(MemoryLevel("L1d", 100, bandwidth=4e9), MemoryLevel("L2", 1000, bandwidth=2e9)),
    )
    report = analyze_gap(estimate_trace(trace), cpu_measurement(), spec)
    rows = {row.name: row for row in report.kernel_rows}
    # the MatMul's 104 B footprint does not fit the 100 B L1d; the BiasAdd (60 B) and Relu (48 B) do
    assert {name: row.level for name, row in rows.items()} == {
        "seq/dense/MatMul": "L2",
        "seq/dense/BiasAdd": "L1d",
        "seq/dense/Relu": "L1d",
    }
    # each memory-bound (traffic / bandwidth above FLOPs / peak), costliest first
    assert report.bound_seconds == 104 / 2e9 + 60 / 4e9 + 48 / 4e9
