"""A TensorFlow function compiled by XLA (``jit_compile=True``) runs XLA's kernels, not the graph
ops the rest of TensorFlow's calibration times: its kernels are classes of their own (``@xla``),
calibrated by ``jit_compile`` micro-programs, and read off the graph op's curve, noted, by a
calibration without them. Measured with this change (quick grid, this CPU): XLA's fused
16×512×512 dot + bias + relu took 92 µs, a small 3→16-channel convolution on 32² maps 123 µs."""

from __future__ import annotations

import os

import pytest

from neural_cost import estimate_trace
from neural_cost.analysis.expected import installed_versions
from neural_cost.analysis.kernel_classes import borrowed_class, class_model, kernel_class, read_class
from neural_cost.analysis.kernels import kernel_rows
from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration
from tests.analysis.test_kernel_bound import SPEC

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _calibration(*names: str) -> KernelCalibration:
    classes = {name: ClassModel(name, Curve((-5.0,), (-6.0,)), None, points=3) for name in names}
    return KernelCalibration("tensorflow", SPEC, classes, machine={}, versions=installed_versions("tensorflow"))


def test_an_xla_kernel_reads_the_xla_classes_first_then_the_graph_ops():
    """``conv:wide@xla@loop``: its own, else its loop's class, else the XLA family (``conv@xla``);
    only when no XLA class of its kind has a curve, the graph op's by the same steps."""
    assert read_class(_calibration("conv:wide@xla@loop", "conv@xla"), "conv:wide@xla@loop") == "conv:wide@xla@loop"
    assert read_class(_calibration("conv:wide@xla", "conv@xla"), "conv:wide@xla@loop") == "conv:wide@xla"
    assert read_class(_calibration("conv@xla", "conv:wide"), "conv:wide@xla@loop") == "conv@xla"
    assert read_class(_calibration("conv:wide", "conv"), "conv:wide@xla@loop") == "conv:wide"
    assert read_class(_calibration("conv"), "conv:wide@xla") == "conv"
    assert read_class(_calibration("matmul"), "conv:wide@xla") is None
    graph_only = _calibration("matmul", "conv")
    assert borrowed_class(graph_only, "matmul@xla") == "matmul"  # noted: another class's curve
    assert borrowed_class(graph_only, "matmul@xla@loop") == "matmul"
    assert borrowed_class(_calibration("matmul@xla"), "matmul@xla@loop") is None  # a loop's own class: not borrowed
    assert class_model(graph_only, "matmul@xla") is graph_only.classes["matmul"]
    # a training kernel XLA compiled reads the XLA forward class before the graph op's
    assert read_class(_calibration("norm@xla", "norm"), "norm_training@xla") == "norm@xla"
    assert read_class(_calibration("norm@xla", "norm"), "norm_backward@xla@loop") == "norm@xla"
    assert read_class(_calibration("norm"), "norm_training@xla") == "norm"
    assert read_class(_calibration("conv@xla"), "conv_backward@xla") == "conv@xla"


def test_a_jit_compiled_functions_kernels_are_xla_classes_and_a_graphs_are_not():
    tf = pytest.importorskip("tensorflow")
    from neural_cost.adapters import adapter_for

    def dense(x, w):
        return tf.tanh(tf.matmul(x, w))

    args = (tf.random.normal((16, 64)), tf.random.normal((64, 64)))
    found = {}
    for jit in (True, False):
        estimate = estimate_trace(adapter_for("tensorflow").trace(tf.function(dense, jit_compile=jit), args))
        found[jit] = {kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0] if row.executions}
    assert "matmul@xla" in found[True] and all(name.endswith("@xla") for name in found[True] - {"other"})
    assert "matmul" in found[False] and not any("@xla" in name for name in found[False])
