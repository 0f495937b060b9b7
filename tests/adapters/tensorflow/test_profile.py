"""TensorFlowAdapter.profile: tf.profiler's events joined to the trace's kernels (issue 15).

Every count asserted is exact: a graph op runs once per execution the trace counts, so a
kernel has ``executions × runs`` events (a oneDNN fusion's event counts once for each kernel it
ran). Times are checked only against each other (a kernel's union within the union of all, the
union within the wall time); the one threshold is the issue's (time coverage at most 50% when
one unmodeled op does most of the work).
"""

import os
import time

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost import AdapterError  # noqa: E402
from neural_cost.adapters import TensorFlowAdapter  # noqa: E402
from neural_cost.adapters._tf.profile import runtime_key  # noqa: E402
from neural_cost.adapters._tf.xla import XLA_SOURCE  # noqa: E402
from neural_cost.adapters._tf.xplane import read_events, xplane_module  # noqa: E402
from neural_cost.analysis.workload import analyze_workload  # noqa: E402

ADAPTER = TensorFlowAdapter()
SLEEP_SECONDS = 0.05


def _analyze(model, inputs, runs):
    return analyze_workload(ADAPTER, model, inputs, warmup=1, repeats=3, profile_runs=runs)


def _check_time(profile):
    """What holds of any profile's times: each kernel's union inside the union of all, the union
    inside the wall, and the time outside kernels the rest of the wall."""
    assert profile.kernel_seconds > 0
    for measured in profile.kernels:
        assert 0 < measured.seconds <= profile.kernel_seconds * (1 + 1e-12)
    assert profile.kernel_seconds <= profile.wall_seconds
    assert profile.kernel_seconds <= sum(m.seconds for m in profile.kernels) * (1 + 1e-12)  # a union, never more
    assert profile.outside_seconds == profile.wall_seconds - profile.kernel_seconds >= 0


def _events_by_kernel(report):
    return {m.kernel: m.events for m in report.profile.kernels}


def _silent_are_noted(report, kernels):
    """The kernels with no event, each named in a note (never dropped without a word)."""
    events = _events_by_kernel(report)
    silent = [k.name for i, k in enumerate(kernels) if i not in events]
    for name in silent:
        assert any(name in note for note in report.profile.notes), name
    return silent


def cnn():
    return keras.Sequential(
        [
            keras.Input((16, 16, 3)),
            keras.layers.Conv2D(8, 3, activation="relu", name="conv1"),
            keras.layers.MaxPooling2D(name="pool1"),
            keras.layers.Conv2D(16, 3, activation="relu", name="conv2"),
            keras.layers.MaxPooling2D(name="pool2"),
            keras.layers.Flatten(name="flat"),
            keras.layers.Dense(32, activation="relu", name="fc1"),
            keras.layers.Dense(10, name="fc2"),
        ],
        name="cnn",
    )


@pytest.mark.parametrize("runs", [1, 3])
def test_keras_cnn_every_kernel_has_executions_times_runs_events(runs):
    report = _analyze(cnn(), (tf.random.normal((4, 16, 16, 3)),), runs)
    kernels = report.estimate.kernels
    profile = report.profile
    assert profile is not None and profile.source == "tf.profiler XPlane"
    # 2 × (Conv2D, BiasAdd, Relu, MaxPool) + Dense (MatMul, BiasAdd, Relu) + Dense (MatMul, BiasAdd) = 13 graph
    # ops doing work; Reshape (Flatten), Squeeze and ReadVariableOp are free: no kernel
    assert len(kernels) == 13
    events = _events_by_kernel(report)
    assert {i: events[i] for i in events} == {i: k.executions * runs for i, k in enumerate(kernels) if i in events}
    assert all(k.executions == 1 for k in kernels)
    # oneDNN runs Conv2D+BiasAdd+Relu and MatMul+BiasAdd(+Relu) as one op each: the fusion's event is
    # split over the kernels of the nodes it replaced, so every kernel has its events, none is silent
    assert _silent_are_noted(report, kernels) == []
    assert profile.unmatched == ()  # every other event is free bookkeeping (ReadVariableOp)
    fused = [note for note in profile.notes if "fusion(s) ran several kernels" in note]
    assert len(fused) == 1 and fused[0].startswith("4 fusion(s)")  # two convolutions, two dense layers
    assert "cnn/conv1/convolution + cnn/conv1/BiasAdd + cnn/conv1/Relu" in fused[0]
    by_name = {kernels[m.kernel].name: m.seconds for m in profile.kernels}
    # equal slices of the same events: the three kernels of one fusion measure the same time
    assert by_name["cnn/conv1/convolution"] == pytest.approx(by_name["cnn/conv1/Relu"], rel=1e-9)
    assert by_name["cnn/conv1/BiasAdd"] == pytest.approx(by_name["cnn/conv1/Relu"], rel=1e-9)
    # ``Profile.fused`` names each fusion's kernels; the report's kernel rows share the fusion's time in proportion
    # to their bounds, so each member reads the fusion's efficiency and the three still add up to its time
    index = {k.name: i for i, k in enumerate(kernels)}
    conv1 = tuple(sorted(index[f"cnn/conv1/{n}"] for n in ("convolution", "BiasAdd", "Relu")))
    assert len(profile.fused) == 4 and conv1 in profile.fused
    rows = {row.index: row for row in report.kernel_rows if row.index in conv1}
    ratios = [rows[i].measured_seconds / rows[i].bound_seconds for i in conv1]
    assert ratios == pytest.approx([ratios[0]] * 3, rel=1e-9)
    assert sum(rows[i].measured_seconds for i in conv1) == pytest.approx(
        sum(profile.seconds_per_run(i) for i in conv1), rel=1e-9
    )
    assert type(profile).from_dict(profile.to_dict()) == profile
    _check_time(profile)
    assert len(profile.events) == sum(events.values())  # every matched execution kept for the trace viewer
    assert {e.kernel for e in profile.events} == set(events)
    assert report.time_coverage is not None and report.time_coverage.fraction == 1.0  # every kernel modeled


def residual_block():
    inputs = keras.Input((8, 8, 8))
    y = keras.layers.Conv2D(8, 3, padding="same", use_bias=False, name="conv")(inputs)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.ReLU(name="relu")(y)
    y = keras.layers.Add(name="add")([y, inputs])
    y = keras.layers.GlobalAveragePooling2D(name="pool")(y)
    y = keras.layers.LayerNormalization(name="ln")(y)
    return keras.Model(inputs, keras.layers.Dense(4, activation="gelu", name="fc")(y), name="block")


def test_folded_norm_layers_and_gelu_count_one_event_per_execution():
    runs = 2
    report = _analyze(residual_block(), (tf.random.normal((2, 8, 8, 8)),), runs)
    kernels = report.estimate.kernels
    names = [k.name for k in kernels]
    # BatchNormalization, LayerNormalization and Gelu are each one record, one kernel (``composites``),
    # though each runs as several graph ops: its events are those of the graph op that ran most
    assert {"block/bn/BatchNormalization", "block/ln/LayerNormalization", "block/fc/Gelu/Gelu"} <= set(names)
    assert _events_by_kernel(report) == {i: k.executions * runs for i, k in enumerate(kernels)}
    assert report.profile.unmatched == ()  # Grappler's rewrites of the norm's adds are joined to the norm
    (folded,) = [note for note in report.profile.notes if "folded library op(s)" in note]
    assert "block/bn/BatchNormalization" in folded and "block/ln/LayerNormalization" in folded
    _check_time(report.profile)


def test_keras_lstm_loop_body_events_per_step():
    runs = 2
    model = keras.Sequential([keras.Input((5, 8)), keras.layers.LSTM(16, name="lstm")], name="rnn")
    report = _analyze(model, (tf.random.normal((2, 5, 8)),), runs)
    kernels = report.estimate.kernels
    events = _events_by_kernel(report)
    # the loop runs once per time step: its body's kernels run 5 times, its condition's 6
    assert {k.executions for k in kernels} == {1, 5, 6}
    assert {i: events[i] for i in events} == {i: k.executions * runs for i, k in enumerate(kernels) if i in events}
    # Grappler folds the two whose inputs are all constants (the time-step range, its maximum)
    assert _silent_are_noted(report, kernels) == ["rnn/lstm/range", "rnn/lstm/Max"]
    _check_time(report.profile)


def _slow(a):
    time.sleep(SLEEP_SECONDS)  # the work the estimate cannot see: at least 50 ms per call
    return np.asarray(a) * 2.0


@tf.function
def _mostly_python(x):
    y = x
    for _ in range(20):  # 20 modeled elementwise ops, and a matmul
        y = tf.tanh(y) * 0.5 + 0.1
    y = tf.matmul(y, y)
    z = tf.numpy_function(_slow, [y], tf.float32)
    z.set_shape(y.shape)
    return z + y


def test_unmodeled_python_function_dominates_time_coverage():
    runs = 2
    report = _analyze(_mostly_python, (tf.random.normal((32, 32)),), runs)
    kernels = report.estimate.kernels
    (py,) = [i for i, k in enumerate(kernels) if k.kind == "PyFunc"]
    assert kernels[py].unmodeled == ("PyFunc",)  # its callback record counts bytes only: unmodeled time
    assert all(k.unmodeled == () for i, k in enumerate(kernels) if i != py)
    events = _events_by_kernel(report)
    assert events == {i: k.executions * runs for i, k in enumerate(kernels)}  # one event per op per run
    coverage = report.time_coverage
    assert coverage is not None
    assert coverage.fraction <= 0.5  # the band: the unmodeled op holds most of the time
    assert coverage.unmodeled[0][0] == "PyFunc"
    _check_time(report.profile)


def test_failing_profiler_is_a_note(monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError("another profiler is already running")

    monkeypatch.setattr(tf.profiler.experimental, "start", refuse)
    report = _analyze(cnn(), (tf.random.normal((2, 16, 16, 3)),), 2)
    assert report.profile is None
    assert report.time_coverage is None
    (note,) = report.profile_notes
    assert "tf.profiler could not start" in note and "another profiler is already running" in note


@tf.function
def _control_flow(x):
    @tf.function
    def inner(y):
        return tf.sin(y) * 2.0

    def body(i, y):
        return i + 1, inner(y) + tf.exp(-y)

    _, y = tf.while_loop(lambda i, y: i < 4, body, (tf.constant(0), x))
    # x is all ones: the sum is positive and the else branch runs; the trace counts the costlier
    # (here the first, as both cost the same) branch: then
    y = tf.cond(tf.reduce_sum(x) < 0.0, lambda: y * 3.0, lambda: y - 1.0)
    return tf.matmul(y, y)


def test_loops_calls_and_branches_join_by_node_name():
    runs = 2
    report = _analyze(_control_flow, (tf.ones((16, 16)),), runs)
    kernels = report.estimate.kernels
    events = _events_by_kernel(report)
    names = {k.name: i for i, k in enumerate(kernels)}
    # the loop's condition runs 4 + 1 times, its body (a call inlined: Sin, mul) 4 times
    assert kernels[names["while/Less"]].executions == 5 and kernels[names["while/Sin"]].executions == 4
    assert {i: events[i] for i in events} == {i: k.executions * runs for i, k in enumerate(kernels) if i in events}
    # the branch the trace costed (then: mul) never ran; the one that ran (else: sub) is no kernel of it
    assert _silent_are_noted(report, kernels) == ["cond/mul"]
    (unmatched,) = report.profile.unmatched
    assert unmatched[0].endswith("cond/sub:Sub") and "/else/" in unmatched[0] and unmatched[2] == runs
    _check_time(report.profile)


@tf.function(jit_compile=True)
def _jit(x, w):
    def body(i, y):
        return i + 1, tf.tanh(tf.matmul(y, w)) + y

    _, y = tf.while_loop(lambda i, y: i < 3, body, (0, x))
    return tf.reduce_sum(tf.nn.relu(y), axis=1)


def test_jit_compile_xla_events_join_by_instruction_name():
    runs = 2
    report = _analyze(_jit, (tf.random.normal((64, 64)), tf.random.normal((64, 64)) * 0.1), runs)
    assert report.estimate.kernel_source == XLA_SOURCE
    kernels = report.estimate.kernels
    events = _events_by_kernel(report)
    assert {i: events[i] for i in events} == {i: k.executions * runs for i, k in enumerate(kernels) if i in events}
    silent = _silent_are_noted(report, kernels)
    # XLA runs the loop counted (its trip count known): the condition's compare never runs, and the
    # kernels count it 0 times
    assert silent and all(kernels[[k.name for k in kernels].index(name)].executions == 0 for name in silent)
    assert any("joined by instruction name" in note for note in report.profile.notes)
    assert report.profile.unmatched == ()
    _check_time(report.profile)


def test_a_jit_compiled_lambda_joins_its_xla_events():
    """``tf.function(lambda ..., jit_compile=True)`` is ``__inference_<lambda>_N``; XLA runs it as
    module ``a_inference__lambda__N__…`` (``<`` and ``>`` written ``_``). The join read the name
    as written and found no module: every kernel went without a time."""
    runs = 2
    fn = tf.function(lambda x, w: tf.nn.relu(tf.matmul(x, w)), jit_compile=True)
    report = _analyze(fn, (tf.random.normal((64, 64)), tf.random.normal((64, 64))), runs)
    assert report.estimate.kernel_source == XLA_SOURCE
    assert any("joined by instruction name" in note for note in report.profile.notes)
    assert report.profile.unmatched == () and report.profile.kernels
    _check_time(report.profile)


def test_profile_restores_variables_a_step_writes():
    total = tf.Variable(tf.zeros((8, 8)))

    @tf.function
    def step(x):
        total.assign_add(tf.matmul(x, x))
        return total.read_value() * 2.0

    x = tf.ones((8, 8))
    trace = ADAPTER.trace(step, (x,))
    profile = ADAPTER.profile(step, (x,), trace=trace, runs=2)
    assert profile.runs == 2
    assert np.array_equal(total.numpy(), np.zeros((8, 8)))  # the warm run and both profiled runs undone


def test_trace_of_another_program_and_bad_runs_are_errors():
    model = cnn()
    x = tf.zeros((2, 16, 16, 3))
    other = ADAPTER.trace(
        keras.Sequential([keras.Input((16, 16, 3)), keras.layers.Flatten(), keras.layers.Dense(3)]), x
    )
    with pytest.raises(AdapterError, match="other kernels than the trace"):
        ADAPTER.profile(model, (x,), trace=other)
    with pytest.raises(AdapterError, match="runs=0"):
        ADAPTER.profile(model, (x,), trace=ADAPTER.trace(model, x), runs=0)
    with pytest.raises(AdapterError, match="unknown option"):
        ADAPTER.profile(model, (x,), trace=other, jit_compile=True)


def test_unmodeled_graph_op_kernel_names_its_type():
    @tf.function
    def f(x):
        return tf.math.special.bessel_i0e(x) + 1.0  # BesselI0e: no cost rule

    trace = ADAPTER.trace(f, (tf.ones((4, 4)),))
    assert [(k.kind, k.unmodeled) for k in trace.kernels] == [("BesselI0e", ("BesselI0e",)), ("AddV2", ())]


@pytest.mark.parametrize(
    ("node", "key"),
    [  # runtime node names read from TensorFlow 2.21's profiles → the trace's op name
        ("sequential_1/dense_1/MatMul", "sequential_1/dense_1/MatMul"),
        ("PartitionedCall/Sin", "PartitionedCall/Sin"),
        ("while/body/_4/while/Cos", "while/Cos"),
        ("while/cond/_3/while/Less", "while/Less"),
        ("while/body/_1/while/PartitionedCall/Sin", "while/PartitionedCall/Sin"),
        ("cond/else/_29/cond/sub", "cond/cond/sub"),
        (
            "switch_case/indexed_case/branch2/_27/switch_case/indexed_case/Relu",
            "switch_case/indexed_case/switch_case/indexed_case/Relu",
        ),
    ],
)
def test_runtime_key(node, key):
    assert runtime_key(node) == key


def _space(tmp_path):
    """An XSpace by hand: an XLA dot and a fusion launched on the Python thread, the fusion's work
    finished on a pool thread (its ``end:`` marker after the next kernel there), a graph op."""
    xplane_pb2 = xplane_module()
    space = xplane_pb2.XSpace()
    plane = space.planes.add()
    plane.name = "/host:CPU"
    for key, name in enumerate(("hlo_op", "hlo_module", "_p", "_c"), start=1):
        plane.stat_metadata[key].id = key
        plane.stat_metadata[key].name = name
    names = ["dot.1", "fusion.2", "fusion.3", "end: fusion.2", "end: fusion.3", "node/a:MatMul", "EagerExecute"]
    names += ["ThreadpoolListener::StartRegion", "ThreadpoolListener::StopRegion", "__inference_f:__inference_f"]
    for key, name in enumerate(names, start=1):
        plane.event_metadata[key].id = key
        plane.event_metadata[key].name = name
    plane.event_metadata[6].display_name = "MatMul"
    plane.event_metadata[10].display_name = "__inference_f"

    def add(line, name, start, duration, op=None, flow=None, marker=None):
        event = line.events.add()
        event.metadata_id = names.index(name) + 1
        event.offset_ps, event.duration_ps = start * 1000, duration * 1000
        for key, value in ((1, op), (2, "m" if op else None), (3, flow), (4, marker)):
            if value is not None:
                stat = event.stats.add()
                stat.metadata_id = key
                if isinstance(value, str):
                    stat.str_value = value
                else:
                    stat.uint64_value = value

    python, pool = plane.lines.add(), plane.lines.add()
    python.timestamp_ns = pool.timestamp_ns = 1000
    add(python, "__inference_f:__inference_f", 0, 100)
    add(python, "EagerExecute", 0, 100)
    add(python, "dot.1", 0, 10, op="dot.1", flow=7)
    add(python, "fusion.2", 10, 20, op="fusion.2", flow=8)  # launch only: ends at 30
    add(python, "node/a:MatMul", 50, 10)
    add(pool, "ThreadpoolListener::StartRegion", 35, 0)
    add(pool, "fusion.3", 36, 4, op="fusion.3", flow=9)
    add(pool, "end: fusion.3", 41, 1, marker=9)
    add(pool, "end: fusion.2", 45, 1, marker=8)
    add(pool, "ThreadpoolListener::StopRegion", 50, 0)
    (tmp_path / "host.xplane.pb").write_bytes(space.SerializeToString())


def test_xplane_events_and_work_finished_on_the_pool(tmp_path):
    _space(tmp_path)
    events, devices = read_events(str(tmp_path))
    assert devices == []
    found = {(e.hlo_op or e.name): (e.start - 1000, e.end - 1000, e.thread) for e in events}
    assert found == {
        "__inference_f:__inference_f": (0, 100, 0),  # the function: the join skips it (node == type)
        "dot.1": (0, 10, 0),  # no marker: its own end
        # its marker (45) comes after its end (30): the pool thread, in the task it started at 35,
        # started fusion.3 at 36, after the launch ended; so the fusion's work finished at 36
        "fusion.2": (10, 36, 0),
        # its marker (41) comes after its end (40), and the pool thread started nothing after: 41
        "fusion.3": (36, 41, 1),
        "node/a:MatMul": (50, 60, 0),
    }


def test_an_add_chain_grappler_rewrote_into_two_nodes_runs_once_per_run():
    """``relu(x * s + b + r)``, ``b`` broadcast: Grappler's ArithmeticOptimizer runs the two adds as
    an ``AddN`` and an ``AddV2`` (``AddOpsRewrite_Leaf_1_add_1``, ``AddOpsRewrite_add_1``), each a
    fusion of both adds. Each add kernel thus has two events a run — parts of one execution, not a
    second run: its events count once a run, and the note says Grappler made several nodes of it
    (it said "a loop's trip count or a conditional's branch differs", with no loop in sight)."""

    @tf.function
    def f(x, s, b, r):
        return tf.nn.relu(x * s + b + r)

    args = (tf.ones((8, 32, 32, 64)), tf.ones((64,)), tf.ones((64,)), tf.ones((8, 32, 32, 64)))
    runs = 3
    report = _analyze(f, args, runs)
    kernels, profile = report.estimate.kernels, report.profile
    assert [k.name for k in kernels] == ["mul", "add", "add_1", "Relu"]
    assert _events_by_kernel(report) == {0: runs, 1: runs, 2: runs, 3: runs}
    assert not any("a different number of times" in note for note in profile.notes)
    (split,) = [note for note in profile.notes if "ran as several nodes Grappler made of them" in note]
    assert split.startswith("2 op(s)") and "(add, add_1)" in split
    _check_time(profile)
