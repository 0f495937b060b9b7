"""A kernel calibration times and profiles each of its programs once a pass, inside ``keeping_compiled``: there the
TensorFlow adapter keeps what it builds around a ``tf.function`` (``benchmark``'s wrapper, ``profile``'s runner, the
graph TensorFlow ran and the kernels' graph ops) and reuses it, so a pass neither traces nor instantiates a function
again. Reused, the joins and counts are the first time's; a model that is not a ``tf.function`` or a call with
keyword arguments gets a fresh wrapper; outside the block nothing is kept (a user's model is not held)."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost.adapters import TensorFlowAdapter  # noqa: E402
from neural_cost.adapters._tf.profile import kept  # noqa: E402
from neural_cost.analysis.workload import trace_workload  # noqa: E402

ADAPTER = TensorFlowAdapter()


def _program():
    @tf.function
    def f(x, w):
        return tf.nn.relu(tf.matmul(x, w)) + 1.0

    return f, (tf.ones((8, 16)), tf.ones((16, 32)))


def test_benchmark_reuses_its_wrapper_of_a_tf_function_inside_the_block_only():
    f, args = _program()
    with ADAPTER.keeping_compiled(1):
        store = kept()
        ADAPTER.benchmark(f, *args, warmup=1, repeats=2)
        first = store[("benchmark", id(f), False, False)]
        ADAPTER.benchmark(f, *args, warmup=1, repeats=2, kwargs={})  # no keywords: the kept one
        assert store[("benchmark", id(f), False, False)][1] is first[1]
        assert first[0] is f  # the function itself is kept: its id cannot name another while it is there
        # traced once: the wrapper's own concrete functions for these inputs are one
        assert len(first[1]._list_all_concrete_functions_for_serialization()) == 1
        model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(4)])
        ADAPTER.benchmark(model, tf.ones((2, 16)), warmup=1, repeats=2)
        assert [key[0] for key in store] == ["benchmark"]  # a Keras model is wrapped afresh each time, as before
    assert kept() is None
    ADAPTER.benchmark(f, *args, warmup=1, repeats=2)  # outside: nothing kept, nothing to keep it in
    assert kept() is None


def test_profile_reuses_its_runner_and_joins_the_same_kernels():
    f, args = _program()
    trace = trace_workload(ADAPTER, f, args, {})
    with ADAPTER.keeping_compiled(1):
        first = ADAPTER.profile(f, args, trace=trace, runs=3)
        (entry,) = [value for key, value in kept().items() if key[0] == "profile"]
        second = ADAPTER.profile(f, args, trace=trace, runs=3)
        (again,) = [value for key, value in kept().items() if key[0] == "profile"]
    assert again[1] is entry[1]  # the runner, not built again
    # the same kernels, each with one event per execution per run (3 runs), both times
    assert {m.kernel: m.events for m in first.kernels} == {m.kernel: m.events for m in second.kernels}
    assert all(m.events == 3 for m in second.kernels)
    assert first.fused == second.fused


def test_a_training_steps_variables_are_put_back_when_its_runner_is_reused():
    v = tf.Variable(tf.ones((4,)))

    @tf.function
    def step(x):
        v.assign_add(x)
        return v * 2.0

    x = tf.ones((4,))
    trace = trace_workload(ADAPTER, step, (x,), {})
    with ADAPTER.keeping_compiled(1):
        for _ in range(2):  # built, then reused
            ADAPTER.profile(step, (x,), trace=trace, runs=2)
            assert v.numpy().tolist() == [1.0, 1.0, 1.0, 1.0]
