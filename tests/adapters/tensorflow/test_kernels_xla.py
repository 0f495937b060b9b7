"""TensorFlow jit_compile functions: kernels read from XLA's optimized HLO (``_tf/xla.py``),
records assigned by TensorFlow node name (``_tf/hlo_map.py``).

Every trace here is taken under ``tf.device("/CPU:0")``: experimental_get_compiler_ir compiles
for the preferred device, and the hand-derived kernels below are XLA:CPU's (TensorFlow 2.21).
"""

import dataclasses
import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost import HardwareSpec, Trace, analyze_gap, estimate_trace  # noqa: E402
from neural_cost.adapters import TensorFlowAdapter  # noqa: E402
from neural_cost.adapters._jax.hlo import read_sites  # noqa: E402
from neural_cost.adapters._jax.hlo_map import Mark, Site  # noqa: E402
from neural_cost.adapters._jax.hlo_text import parse_hlo  # noqa: E402
from neural_cost.adapters._tf.hlo_map import assign, parse_tf_op_name  # noqa: E402
from neural_cost.adapters._tf.kernels import KERNEL_SOURCE  # noqa: E402
from neural_cost.adapters._tf.xla import XLA_SOURCE  # noqa: E402
from neural_cost.core.records import Operation  # noqa: E402
from tests.helpers import cpu_measurement  # noqa: E402

MiB = 1 << 20


def _trace(function, *args, adapter=None):
    with tf.device("/CPU:0"):
        return (adapter or TensorFlowAdapter()).trace(function, args)


def _rows(trace):
    """(kind, record names, traffic, footprint, executions) per kernel, sorted."""
    return sorted(
        (
            k.kind,
            tuple(trace.operations[i].name for i in k.operations),
            k.traffic_bytes,
            k.footprint_bytes,
            k.executions,
        )
        for k in trace.kernels
    )


def _partition(trace):
    """The records the kernels claim and the ones they do not; a record is claimed once at most."""
    claimed = [i for kernel in trace.kernels for i in kernel.operations]
    assert len(claimed) == len(set(claimed))
    return set(claimed), set(range(len(trace.operations))) - set(claimed)


def _same_flops_without_kernels(trace):
    estimate = estimate_trace(trace)
    bare = estimate_trace(dataclasses.replace(trace, kernels=(), kernel_source=None))
    unmapped = sum(estimate.by_operation[i].flops for i in estimate.unmapped_operations)
    assert estimate.flops == bare.flops == sum(k.flops for k in estimate.kernels) + unmapped
    return estimate


def _dense_and_chain():
    dense = keras.layers.Dense(32, activation="relu", name="dense")
    dense.build((None, 64))

    @tf.function(jit_compile=True)
    def dense_and_chain(x, v):
        return dense(x), tf.tanh(tf.tanh(tf.tanh(v)))

    return dense_and_chain, tf.ones((16, 64)), tf.ones((MiB,))  # v: 1 Mi float32 = 4 MiB


def test_dense_and_elementwise_chain_are_xlas_fused_kernels():
    function, x, v = _dense_and_chain()
    trace = _trace(function, x, v)
    assert trace.kernel_source == XLA_SOURCE
    assert any("optimized HLO of module a_inference_dense_and_chain" in note for note in trace.notes)
    assert _rows(trace) == [
        # MatMul: reads x (16·64·4 = 4096 B) and the kernel (64·32·4 = 8192 B), writes 16·32·4 = 2048 B
        ("dot", ("MatMul",), 14336, 14336, 1),
        # BiasAdd + Relu in one loop fusion: reads the product (2048 B) and the bias (32·4 = 128 B),
        # writes 2048 B
        ("fusion", ("BiasAdd", "Relu"), 4224, 4224, 1),
        # three tanh on 4 MiB float32: one fusion reading v once and writing once, 8 MiB
        ("fusion", ("Tanh", "Tanh", "Tanh"), 8 * MiB, 8 * MiB, 1),
    ]
    dense_kernels = [
        k for k in trace.kernels if k.kind == "dot" or "Relu" in {trace.operations[i].name for i in k.operations}
    ]
    assert all(len(k.scopes) == 1 and k.scopes[0].startswith("dense") for k in dense_kernels)
    assert _partition(trace)[1] == set()  # every record mapped
    estimate = _same_flops_without_kernels(trace)
    flops = {tuple(trace.operations[i].name for i in k.operations): k.flops for k in estimate.kernels}
    # the matmul: 2·16·64·32 = 65,536 FLOPs; bias and relu: 16·32 = 512 each
    assert (flops[("MatMul",)], flops[("BiasAdd", "Relu")]) == (65536, 1024)
    assert estimate.compiled_bytes == 14336 + 4224 + 8 * MiB
    # unfused: each tanh reads and writes 4 MiB (24 MiB), MatMul 14,336, BiasAdd 2048 + 128 + 2048, Relu 4096
    assert estimate.bytes == 24 * MiB + 14336 + 4224 + 4096
    # compulsory: x, v, kernel, bias, both outputs once: 4096 + 4 MiB + 8192 + 128 + 2048 + 4 MiB;
    # what XLA moves beyond it is the product written by the dot and read by the fusion (2 · 2048)
    assert estimate.compulsory_bytes == estimate.compiled_bytes - 4096
    assert Trace.from_dict(trace.to_dict()) == trace


def test_while_loop_with_a_constant_bound_runs_its_body_kernels_xlas_known_trip_count():
    @tf.function(jit_compile=True)
    def loop(v):
        return tf.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, tf.tanh(a) * 3.0), (tf.constant(0), v))[1]

    trace = _trace(loop, tf.ones((MiB // 4,)))  # 256 Ki float32 = 1 MiB
    assert trace.kernel_source == XLA_SOURCE
    assert _rows(trace) == [
        # XLA copies the loop's initial state: the int32 counter (4 B read, 4 B written) and v
        # (1 MiB read and written)
        ("copy", (), 8, 8, 1),
        ("copy", (), 2 * MiB, 2 * MiB, 1),
        # i + 1 on int32: reads i and the constant 1, writes i (4 B each); i is written over
        # itself (one loop-state buffer: footprint 8 B); known_trip_count 10
        ("fusion", ("AddV2",), 12, 8, 10),
        # the condition i < 10 (two int32 read, a pred byte written) never runs: XLA knows the
        # trip count and runs the loop without it
        ("fusion", ("Less",), 9, 9, 0),
        # the body's tanh·3 fusion, 10 times: reads a (1 MiB), writes the new a over it (one
        # loop-state buffer: footprint 1 MiB)
        ("fusion", ("Tanh", "Mul"), 2 * MiB, MiB, 10),
    ]
    _, unmapped = _partition(trace)
    # the while_loop's own iteration counter (loop_counter + 1) feeds nothing XLA keeps
    assert [trace.operations[i].name for i in sorted(unmapped)] == ["AddV2"]
    assert any("1 record(s) match no instruction" in note and "while/AddV2; 10 FLOPs" in note for note in trace.notes)
    estimate = _same_flops_without_kernels(trace)
    # the kernels above, plus the unmapped counter add at its unfused traffic: 10 × (4 + 4 + 4) B
    assert estimate.compiled_bytes == 8 + 2 * MiB + 10 * 12 + 10 * 2 * MiB + 10 * 12


def test_xla_known_trip_count_wins_over_the_walkers_default_with_a_note():
    @tf.function(jit_compile=True)
    def shaped(v):
        n = tf.shape(v)[0] // 100  # XLA folds it to 10; the walker cannot read it and assumes 8
        return tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tf.sin(a)), (tf.constant(0), v))[1]

    trace = _trace(shaped, tf.ones((1000,)))
    sine = next(k for k in trace.kernels if [trace.operations[i].name for i in k.operations] == ["Sin"])
    assert sine.executions == 10
    assert trace.operations[sine.operations[0]].count == 8  # FLOPs stay the trace's count
    assert any("XLA knows while (while_0) runs 10 times; the trace counted its body 8 times" in n for n in trace.notes)
    _same_flops_without_kernels(trace)


def test_traced_bound_takes_the_walkers_trip_count_for_the_same_while():
    @tf.function(jit_compile=True)
    def bounded(v, n):
        return tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tf.sin(a)), (tf.constant(0), v))[1]

    trace = _trace(bounded, tf.ones((1000,)), tf.constant(3), adapter=TensorFlowAdapter(trip_counts={0: 7}))
    sine = next(k for k in trace.kernels if [trace.operations[i].name for i in k.operations] == ["Sin"])
    condition = next(k for k in trace.kernels if [trace.operations[i].name for i in k.operations] == ["Less"])
    assert (sine.executions, condition.executions) == (7, 8)  # XLA has no count: the one passed, 7 (+1)


def test_nested_calls_conditionals_and_loops_map_by_node_name():
    @tf.function
    def cosine(v):
        return tf.cos(v) + 1.0

    @tf.function
    def inner(v):
        a = tf.while_loop(lambda i, a: i < 5, lambda i, a: (i + 1, cosine(a) * 3.0), (tf.constant(0), v))[1]
        return tf.sin(a) * 2.0

    @tf.function(jit_compile=True)
    def outer(x, v):
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: tf.exp(x), lambda: tf.math.log(x))
        a = tf.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, inner(a) - 1.0), (tf.constant(0), v))[1]
        return y, a

    trace = _trace(outer, tf.ones((16, 64)), tf.ones((1024,)))
    by_record = {i: k for k in trace.kernels for i in k.operations}
    names = [(op.name, op.count) for op in trace.operations]
    # op_names: PartitionedCall/… inside calls, cond/cond/Exp in a branch, bare while/… in loop bodies
    cos = names.index(("Cos", 50))  # the inner loop runs 5 times per outer iteration
    assert by_record[cos].executions == 50
    assert by_record[names.index(("Sin", 10))].executions == 10
    assert by_record[names.index(("Exp", 1))].executions == 1
    _, unmapped = _partition(trace)
    # only the two loops' iteration counters (loop_counter + 1), which XLA drops
    assert sorted(names[i] for i in unmapped) == [("AddV2", 10), ("AddV2", 50)]
    _same_flops_without_kernels(trace)


def test_gap_analysis_scores_the_xla_kernels():
    function, x, v = _dense_and_chain()
    trace = _trace(function, x, v)
    spec = HardwareSpec("test cpu", peak_flops=1e9, memory_bandwidth=1e9, kind="cpu")
    report = analyze_gap(estimate_trace(trace), cpu_measurement(), spec)
    # at 1 GFLOP/s and 1 GB/s: the dot is compute-bound (65,536 FLOPs: 65.5 µs > 14,336 B: 14.3 µs);
    # the tanh fusion memory-bound (8 MiB: 8.4 ms > 3 · 2^20 FLOPs, one per tanh: 3.1 ms); bias + relu
    # memory-bound (4224 B: 4.2 µs > 1024 FLOPs: 1.0 µs)
    assert report.bound_seconds == pytest.approx(65536 / 1e9 + 8 * MiB / 1e9 + 4224 / 1e9)
    assert "broadcast_maximum_fusion" in report.render(by="kernel")


def test_module_whose_call_is_a_jit_function_gets_xla_kernels():
    class Scaled(tf.Module):
        def __init__(self):
            self.w = tf.Variable(tf.ones((32, 32)))

        @tf.function(jit_compile=True)
        def __call__(self, x):
            return tf.nn.relu(x @ self.w) * 2.0

    trace = _trace(Scaled(), tf.ones((8, 32)))
    assert trace.kernel_source == XLA_SOURCE
    assert _rows(trace) == [
        # x @ w: reads x (8·32·4 = 1024 B) and w (32·32·4 = 4096 B), writes 1024 B
        ("dot", ("MatMul",), 6144, 6144, 1),
        # relu · 2 fused: reads the product, writes the result (1024 B each)
        ("fusion", ("Relu", "Mul"), 2048, 2048, 1),
    ]


def test_unreadable_hlo_falls_back_to_graph_op_kernels_with_a_note(monkeypatch):
    function, x, v = _dense_and_chain()

    def refuse(*args, **kwargs):
        raise RuntimeError("no compiler IR today")

    monkeypatch.setattr(function, "experimental_get_compiler_ir", refuse)
    trace = _trace(function, x, v)
    assert trace.kernel_source == KERNEL_SOURCE
    assert [k.kind for k in trace.kernels] == ["MatMul", "BiasAdd", "Relu", "Tanh", "Tanh", "Tanh"]
    (note,) = [n for n in trace.notes if "could not be read" in n]
    assert "(RuntimeError: no compiler IR today)" in note and "graph's unfused traffic" in note
    estimate = _same_flops_without_kernels(trace)
    assert estimate.compiled_bytes == estimate.bytes


def test_function_xla_cannot_compile_falls_back_with_xlas_reason():
    function = tf.function(
        lambda x: tf.cast(tf.strings.length(tf.strings.as_string(x)), tf.float32) + x, jit_compile=True
    )
    trace = _trace(function, tf.zeros((4,)))
    assert trace.kernel_source == KERNEL_SOURCE
    assert [k.kind for k in trace.kernels] == ["Cast", "AddV2"]
    assert any("could not be read" in n and "AsString" in n for n in trace.notes)


def test_assign_prefers_size_then_executions_and_leaves_unknown_names_unmapped():
    # two loops' bodies both hold a node named while/add (4-byte int32) and run 10 and 50 times;
    # XLA split a division into a scalar reciprocal (4 B, first) and a multiply of the record's
    # size (8 float32 = 32 B); a fourth record names nothing in the module
    sites = [
        Site("outer_add", "fusion", 12, 8, 10, None, 4, [Mark(None, ("while/add",), True, 4)]),
        Site("inner_add", "fusion", 12, 8, 50, None, 4, [Mark(None, ("while/add",), True, 4)]),
        Site("reciprocal", "fusion", 8, 8, 1, None, 4, [Mark(None, ("truediv",), True, 4)]),
        Site("multiply", "fusion", 68, 68, 1, None, 32, [Mark(None, ("truediv",), True, 32)]),
    ]
    scalar_add = {"op": "add", "flops_per_element": 1}
    ops = [
        Operation("AddV2", "elementwise", ((), ()), (), "int32", scope="while", attrs=scalar_add, count=50),
        Operation("AddV2", "elementwise", ((), ()), (), "int32", scope="while", attrs=scalar_add, count=10),
        Operation("RealDiv", "elementwise", ((8,), ()), (8,), "float32", attrs={"op": "div"}),
        Operation("Cast", "elementwise", ((4,),), (4,), "float32", attrs={"op": "cast"}),
    ]
    names = [("while/add",), ("while/add",), ("truediv",), ("Cast",)]
    kernels, unmapped, split = assign(sites, ops, names)
    # by executions, not by order; by size, not by order
    assert [k.operations for k in kernels] == [(1,), (0,), (), (2,)]
    # the reciprocal computes an instruction of the division's name too
    assert (unmapped, split) == ((3,), ((2, ("reciprocal",)),))


def test_merged_op_names_are_read_apart():
    assert parse_tf_op_name("Cos;while/PartitionedCall/Cos") == (None, ("Cos", "while/PartitionedCall/Cos"))
    text = (
        "HloModule m\n\n"
        "ENTRY %main (p: f32[8]) -> f32[8] {\n"
        "  %p = f32[8]{0} parameter(0)\n"
        '  ROOT %c = f32[8]{0} cosine(%p), metadata={op_type="Cos" op_name="Cos;call/Cos"}\n'
        "}\n"
    )
    sites, _, _ = read_sites(parse_hlo(text), parse=parse_tf_op_name)
    assert [(s.name, s.traffic_bytes, s.marks[0].names) for s in sites] == [("c", 64, ("Cos", "call/Cos"))]


def test_filter_gradients_sit_in_the_convolutions_xla_made_without_metadata():
    """A Keras conv stack's training step under ``jit_compile``: XLA rewrites each
    ``Conv2DBackpropFilter`` into a convolution whose instruction names no node, and the Adam
    update's fusion that reads the gradient carries the node's name (on a bitcast, or on the
    multiply reading it). The records went to the optimizer's fusions, leaving the convolutions
    that run them with no record (scored at their traffic). Now a convolution XLA made without
    metadata, of the record's output size and with operands of its inputs' sizes, takes it."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu"),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(16, 1),
            keras.layers.GlobalAveragePooling2D(),
        ]
    )
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(model.trainable_variables)

    @tf.function(jit_compile=True)
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    trace = _trace(step, tf.ones((4, 16, 16, 3)))
    owner = {i: kernel for kernel in trace.kernels for i in kernel.operations}
    filters = [i for i, op in enumerate(trace.operations) if op.name.endswith("Conv2DBackpropFilter")]
    assert len(filters) == 3  # one per layer: the stem's image asks no input gradient, its filter does
    assert sorted(owner[i].kind for i in filters) == ["convolution"] * 3
    assert all(owner[i].operations == (i,) for i in filters)  # each its own convolution
    estimate = _same_flops_without_kernels(trace)
    flops = {k.name: k.flops for k in estimate.kernels}
    # each kernel's FLOPs are its filter gradient's: 2 · batch · output pixels · C_out · C_in · taps
    # (8×8 outputs of the stride-2 stem over 3×3×3; 8×8 of the 3×3 8→16; 8×8 of the 1×1 16→16)
    assert sorted(flops[owner[i].name] for i in filters) == [
        2 * 4 * 64 * 8 * 27,  # 110,592
        2 * 4 * 64 * 16 * 16,  # 131,072
        2 * 4 * 64 * 16 * 72,  # 589,824
    ]
    _partition(trace)
