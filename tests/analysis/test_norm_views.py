"""TensorFlow's norm kernels by how they run: a Keras 3 batch norm layer, which the adapter folds into one kernel of
graph ops (a multiply and an add over the map), is ``norm:batch:keras``, apart from the fused op (``FusedBatchNormV3``,
``norm:batch``) the grid also times; a Keras layer norm is ``norm:layer``. TensorFlow's grid times both layers as
Keras models of one layer; a calibration without a Keras batch norm curve reads ``norm:batch``'s, noted."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from neural_cost import estimate_trace  # noqa: E402
from neural_cost.adapters import TensorFlowAdapter  # noqa: E402
from neural_cost.analysis.kernel_classes import borrowed_class, kernel_class, read_class  # noqa: E402
from neural_cost.analysis.kernels import kernel_rows  # noqa: E402
from neural_cost.analysis.norm_views import norm_class  # noqa: E402
from neural_cost.core.records import Operation  # noqa: E402
from neural_cost.hardware.kernel_model import ClassModel, Curve, KernelCalibration, family  # noqa: E402
from tests.analysis.test_kernel_bound import SPEC  # noqa: E402

ADAPTER = TensorFlowAdapter()


def _classes(fn, *args):
    estimate = estimate_trace(ADAPTER.trace(fn, args))
    return {row.name.rsplit("/", 1)[-1]: kernel_class(estimate, row) for row in kernel_rows(estimate, SPEC)[0]}


def test_a_keras_batch_norm_is_its_own_way_and_the_fused_op_stays_norm_batch():
    inputs = keras.Input((8, 8, 16), batch_size=2)
    model = keras.Model(inputs, keras.layers.LayerNormalization()(keras.layers.BatchNormalization()(inputs)))
    x = tf.random.stateless_normal((2, 8, 8, 16), seed=(1, 2))
    assert _classes(model, x) == {"BatchNormalization": "norm:batch:keras", "LayerNormalization": "norm:layer"}
    scale, offset, mean = tf.ones((16,)), tf.zeros((16,)), tf.zeros((16,))
    fused = tf.function(lambda x: tf.compat.v1.nn.fused_batch_norm(x, scale, offset, mean, scale, is_training=False)[0])
    assert set(_classes(fused, x).values()) == {"norm:batch"}
    # the view itself: only an inference batch norm's kernel of the Keras layer's kind is the Keras way
    batch = Operation("bn", "batchnorm", ((2, 16), (16,), (16,)), (2, 16), attrs={"training": False, "affine": True})
    assert norm_class([batch], "BatchNormalization") == "norm:batch:keras"
    assert norm_class([batch], "FusedBatchNormV3") == norm_class([batch]) == "norm:batch"
    training = Operation("bn", "batchnorm", ((2, 16), (16,), (16,)), (2, 16), attrs={"training": True, "affine": True})
    assert norm_class([training], "BatchNormalization") == "norm_training"


def test_without_a_curve_of_its_own_a_keras_batch_norm_reads_norm_batch():
    """``keras`` is a way to run (``kernel_model.WAYS``), no family member: its points never bend ``norm``."""
    assert family("norm:batch:keras") is None and family("norm:batch") == "norm"
    flat = {name: ClassModel(name, Curve((-5.0,), (-4.0,)), None, points=3) for name in ("norm", "norm:batch")}
    calibration = KernelCalibration("tensorflow", SPEC, flat, machine={}, versions={}, date="2026-12-06")
    keras_way = "norm:batch:keras"
    assert read_class(calibration, keras_way) == borrowed_class(calibration, keras_way) == "norm:batch"
    own = {**flat, "norm:batch:keras": ClassModel("norm:batch:keras", Curve((-5.0,), (-4.0,)), None, points=3)}
    calibration = KernelCalibration("tensorflow", SPEC, own, machine={}, versions={}, date="2026-12-06")
    assert read_class(calibration, "norm:batch:keras") == "norm:batch:keras"


def test_the_grid_times_keras_norm_layers_as_models_of_one_layer():
    """Seven of the batch norm maps the fused op is timed on (one of each size), and the layer norms' rows × widths
    (PyTorch's backward ones and three of 0.4–0.5 MB), as a Keras model whose layer normalizes an intermediate (its
    input after a ReLU); none in the quick grid."""
    from neural_cost.adapters import _microgrid as grid
    from neural_cost.adapters._tf.microbench import _KERAS_MAPS, _LAYER_NORMS, _MAPS

    programs = {p.name: p for p in ADAPTER.microbenchmarks(False) if p.name.startswith("keras ") and "Norm" in p.name}
    assert sorted(programs) == sorted(
        [f"keras BatchNormalization {n}x{hw}x{hw}x{c}" for n, hw, c in _KERAS_MAPS]
        + [f"keras LayerNormalization {rows}x{width}" for rows, width in (*grid.LAYER_NORM_ROWS, *_LAYER_NORMS)]
    )
    assert len(programs) == 7 + 7 + 3 and set(_KERAS_MAPS) < set(_MAPS)
    assert len({n * hw * hw * c for n, hw, c in _KERAS_MAPS}) == 7  # one map of each size
    assert not [p for p in ADAPTER.microbenchmarks(True) if p.name.startswith("keras ") and "Norm" in p.name]
    program = programs["keras BatchNormalization 4x32x32x64"]
    assert isinstance(program.fn, keras.Model)
    assert _classes(program.fn, *program.args) == {"BatchNormalization": "norm:batch:keras", "Relu": "elementwise"}
