"""A TensorFlow graph's pointwise ops that may write over their input (``core.kernels.FORWARDS_INPUT``): traced as
such, classed ``elementwise:forwarded``, read off ``elementwise`` without a curve of their own."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")

from neural_cost import estimate_trace  # noqa: E402
from neural_cost.adapters import adapter_for  # noqa: E402
from neural_cost.analysis.kernel_classes import kernel_class, read_class  # noqa: E402
from neural_cost.analysis.kernels import kernel_rows  # noqa: E402
from neural_cost.core.kernels import FORWARDS_INPUT  # noqa: E402
from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration  # noqa: E402
from tests.analysis.test_kernel_bound import SPEC  # noqa: E402


def _classes(fn, *args) -> dict[str, tuple[str, tuple[str, ...]]]:
    estimate = estimate_trace(adapter_for("tensorflow").trace(fn, args))
    return {
        row.name.rsplit("/", 1)[-1]: (kernel_class(estimate, row), estimate.kernels[row.index].compiled_traits)
        for row in kernel_rows(estimate, SPEC)[0]
        if row.index is not None
    }


def test_an_op_on_an_intermediate_no_other_op_reads_may_write_over_it():
    """relu(x · 1.5): the Relu's input is the multiply's result, of its shape and type, read by nothing else; the
    multiply reads the function's argument (a placeholder) and writes a new buffer."""
    x = tf.ones((64, 32))
    found = _classes(tf.function(lambda x: tf.nn.relu(x * 1.5)), x)
    assert found["Relu"] == ("elementwise:forwarded", (FORWARDS_INPUT,))
    assert found["mul"] == ("elementwise", ())


def test_an_argument_a_shared_intermediate_or_a_broadcast_input_is_not_written_over():
    """relu(x) reads the argument; relu(y) beside y + 1 shares y with another op, and so does relu(y) with y
    returned (the function's output reads it); y · b with y of (64, 1) broadcast to (64, 32) has no input of its
    result's shape, and b is the argument: none may write over an input."""
    x = tf.ones((64, 32))
    assert _classes(tf.function(lambda x: tf.nn.relu(x)), x)["Relu"] == ("elementwise", ())

    def shared(x):
        y = x * 1.5
        return tf.nn.relu(y), y + 1.0

    found = _classes(tf.function(shared), x)
    assert found["Relu"] == ("elementwise", ()) and found["add"] == ("elementwise", ())

    def returned(x):
        y = x * 1.5
        return tf.nn.relu(y), y

    assert _classes(tf.function(returned), x)["Relu"] == ("elementwise", ())
    column = tf.ones((64, 1))
    found = _classes(tf.function(lambda c, b: (c * 2.0) * b), column, x)
    assert found["mul_1"] == ("elementwise", ())


def test_a_forwarded_kernel_reads_its_own_curve_else_elementwise():
    """A way to run, no member: without an ``elementwise:forwarded`` curve it reads ``elementwise``'s."""
    flat = ClassModel("elementwise", Curve((-5.0,), (-6.0,)), None, points=3)
    calibration = KernelCalibration("tensorflow", SPEC, {"elementwise": flat})
    assert read_class(calibration, "elementwise:forwarded") == "elementwise"
    own = ClassModel("elementwise:forwarded", Curve((-5.0,), (-6.3,)), None, points=3)
    calibration = KernelCalibration("tensorflow", SPEC, {"elementwise": flat, "elementwise:forwarded": own})
    assert read_class(calibration, "elementwise:forwarded") == "elementwise:forwarded"
    assert read_class(calibration, "elementwise:forwarded@loop") == "elementwise"  # no loop curve: the plain one


def test_the_grid_times_relu_and_add_on_a_multiplys_result():
    """TensorFlow's grid has ``Relu forwarded N`` and ``AddV2 forwarded N`` at every pointwise size (none when
    quick): their op is ``elementwise:forwarded``, the multiply before it ``elementwise``."""
    adapter = adapter_for("tensorflow")
    programs = {p.name: p for p in adapter.microbenchmarks(False) if "forwarded" in p.name}
    assert {"Relu forwarded 1000000", "AddV2 forwarded 1000000"} <= set(programs)
    assert not any("forwarded" in p.name for p in adapter.microbenchmarks(True))
    program = programs["AddV2 forwarded 64000"]
    estimate = estimate_trace(adapter.trace(program.fn, program.args))
    classes = sorted(kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0])
    assert classes == ["elementwise", "elementwise:forwarded"]
