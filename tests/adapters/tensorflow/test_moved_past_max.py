"""Grappler's rewrite of max(f(x)) as f(max(x)) (``adapters/_tf/kernels.py``, ``_moved_past``): a monotonic pointwise
op whose one reader is a max, a min or a max pool runs on the reduced result, so its kernel moves that result; past an
argmax it is dropped. The rule is checked against Grappler's own output on the same graphs."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")

from neural_cost import estimate_trace  # noqa: E402
from neural_cost.adapters import adapter_for  # noqa: E402
from neural_cost.adapters._tf.kernels import _moved_past  # noqa: E402

X = tf.ones((2, 8, 8, 4))  # 512 float32 elements: 2,048 B
ONES = tf.ones((4,))


def _pool(y):
    return tf.nn.max_pool2d(y, 2, 2, "VALID")


def _shared(x):
    y = tf.nn.relu(x * 1.5)
    return _pool(y), y + 1.0


CASES = {
    # case: (function, the ops Grappler runs after the max or min, or drops)
    "relu before a max pool": (lambda x: _pool(tf.nn.relu(x * 1.5)), {"Relu"}),
    "relu of an argument": (lambda x: _pool(tf.nn.relu(x)), {"Relu"}),
    "relu of a bias add (the remapper fuses the pair)": (lambda x: _pool(tf.nn.relu(tf.nn.bias_add(x, ONES))), set()),
    "relu of a fused batch norm": (
        lambda x: _pool(tf.nn.relu(tf.compat.v1.nn.fused_batch_norm(x, ONES, ONES, ONES, ONES, is_training=False)[0])),
        set(),
    ),
    "a relu another op reads too": (_shared, set()),
    "neg before a max pool (falling: no min pool)": (lambda x: _pool(tf.math.negative(x * 1.5)), set()),
    "sqrt before a max": (lambda x: tf.reduce_max(tf.math.sqrt(x * 1.5), axis=1), {"Sqrt"}),
    "rsqrt before a max (the max becomes a min)": (lambda x: tf.reduce_max(tf.math.rsqrt(x * 1.5), axis=1), {"Rsqrt"}),
    "reciprocal (not on TensorFlow 2.21's list)": (lambda x: tf.reduce_max(tf.math.reciprocal(x * 1.5), axis=1), set()),
    "sigmoid before a min": (lambda x: tf.reduce_min(tf.nn.sigmoid(x * 2.0), axis=[1, 2]), {"Sigmoid"}),
    "tanh before an argmax (dropped)": (lambda x: tf.math.argmax(tf.math.tanh(x * 1.5), axis=1), {"Tanh"}),
    "a segment max (not a reader the rewrite takes here)": (
        lambda x: tf.math.segment_max(tf.nn.relu(x * 2.0), tf.constant([0, 1])),
        set(),
    ),
    "a chain: tanh, relu, max pool": (lambda x: _pool(tf.nn.relu(tf.math.tanh(x * 1.5))), {"Tanh", "Relu"}),
    "a pointwise op that is not monotonic": (lambda x: _pool(tf.math.sin(x * 1.5)), set()),
}


READERS = {"Max", "Min", "MaxPool", "ArgMax", "ArgMin", "SegmentMax"}


def _after(inputs: dict[str, set[str]], name: str) -> set[str]:
    """Every op ``name`` reads, directly or through others, in a graph given as each op's inputs."""
    found, todo = set(), [name]
    while todo:
        for source in inputs.get(todo.pop(), ()):
            if source not in found:
                found.add(source)
                todo.append(source)
    return found


def _grappler_moved(fn) -> tuple[set[str], set[str]]:
    """(the graph ops Grappler runs after a max or min they ran before, or drops; the ops ``_moved_past`` names)
    for ``fn`` on ``X``. Grappler's graph is the function's optimized as TensorFlow runs it (its outputs kept), but
    for the remapper, whose fusions (a batch norm with its ReLU) would read as drops."""
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    from tensorflow.python.grappler import tf_optimizer

    concrete = tf.function(fn).get_concrete_function(X)
    graph = concrete.graph
    meta = tf.compat.v1.train.export_meta_graph(graph_def=graph.as_graph_def(), graph=graph)
    for tensor in concrete.outputs:
        meta.collection_def["train_op"].node_list.value.append(tensor.name)
    config = config_pb2.ConfigProto()
    config.graph_options.rewrite_options.remapping = rewriter_config_pb2.RewriterConfig.OFF
    optimized = {
        node.name: {name.split(":")[0] for name in node.input if not name.startswith("^")}
        for node in tf_optimizer.OptimizeGraph(config, meta).node
    }
    before = {op.name: {t.op.name for t in op.inputs} for op in graph.get_operations()}
    readers = {op.name for op in graph.get_operations() if op.type in READERS}
    grappler = set()
    for op in graph.get_operations():
        downstream = {r for r in readers if op.name in _after(before, r)}
        if downstream and (op.name not in optimized or downstream & _after(optimized, op.name)):
            grappler.add(op.type)
    return grappler, {op.type for op in graph.get_operations() if _moved_past(op) is not None}


@pytest.mark.parametrize("case", list(CASES))
def test_the_rule_agrees_with_grappler(case):
    fn, moved = CASES[case]
    grappler, ours = _grappler_moved(fn)
    assert grappler == moved  # what Grappler does on this TensorFlow: the case's premise
    assert ours == grappler


def _kernels(fn):
    trace = adapter_for("tensorflow").trace(tf.function(fn), (X,))
    return trace, {k.name.rsplit("/", 1)[-1]: k for k in trace.kernels}


def test_a_moved_relu_moves_the_pooled_map():
    """relu(x · 1.5) before a 2 × 2 max pool: the pool's result is 2 × 4 × 4 × 4 = 128 floats (512 B); the ReLU runs
    on it, reading and writing it: 1,024 B, where its record moves the 2,048 B map twice (4,096 B). The multiply
    (2,048 B and the 4 B scalar in, 2,048 out) and the pool (2,048 in, 512 out) are unchanged, so the program's
    kernels move 3,072 B fewer than its records: compiled 4,100 + 2,560 + 1,024 = 7,684 B against 10,756 B."""
    trace, kernels = _kernels(lambda x: _pool(tf.nn.relu(x * 1.5)))
    assert kernels["Relu"].traffic_bytes == kernels["Relu"].footprint_bytes == 1024
    assert kernels["mul"].traffic_bytes == 4100 and kernels["MaxPool2d"].traffic_bytes == 2560
    estimate = estimate_trace(trace)
    assert (estimate.compiled_bytes, estimate.bytes) == (7684, 10756)
    (note,) = [n for n in trace.notes if n.startswith("Grappler runs")]
    assert note.endswith("after the max or min that reads them, on its result (max(f(x)) = f(max(x))): their kernels "
                         "move that result, not their records' bytes: Relu after MaxPool2d")  # fmt: skip


def test_an_op_before_an_argmax_moves_nothing_and_its_flops_stay_the_programs():
    """tanh before an argmax: Grappler drops it (argmax(tanh(x)) = argmax(x)), so its kernel moves 0 B; its FLOPs
    are its record's, the program's work (``core/kernels.py``)."""
    trace, kernels = _kernels(lambda x: tf.math.argmax(tf.math.tanh(x * 1.5), axis=1))
    assert kernels["Tanh"].traffic_bytes == kernels["Tanh"].footprint_bytes == 0
    estimate = estimate_trace(trace)
    (tanh,) = [k for k in estimate.kernels if k.name == "Tanh"]
    (index,) = tanh.operations
    assert tanh.flops == estimate.by_operation[index].flops > 0
