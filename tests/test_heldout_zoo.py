"""The held-out zoo of ``benchmarks/heldout_models.py`` builds and runs: every model at batch 2,
once, with the output shape its architecture gives. The transformers models are skipped where
transformers is not installed (CI installs requirements/test.txt only)."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
pytest.importorskip("flax.linen")
pytest.importorskip("tensorflow")
pytest.importorskip("keras")

ZOO_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "heldout_models.py"


def load_zoo():
    spec = importlib.util.spec_from_file_location("heldout_models", ZOO_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("heldout_models", module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


zoo = load_zoo()
BATCH = 2

# name → the output shape at batch 2 (transformers models return a ModelOutput: its .logits)
SHAPES = {
    "gpt2": (BATCH, zoo.SEQUENCE, zoo.VOCAB),  # logits per token over the 8,192-word vocabulary
    "bert": (BATCH, 4),  # sequence classification, num_labels=4
    "llama": (BATCH, zoo.SEQUENCE, zoo.VOCAB),
    "resnet": (BATCH, 10),  # pooled 128 channels → Linear(128, 10)
    "lstm": (BATCH, 10),  # the last step's 256 hidden units → Linear(256, 10)
    "flax_cnn": (BATCH, 10),  # Dense(10) over channel means
    "keras_cnn": (BATCH, 10),  # Dense(10) after global average pooling
    "jax_scan_rnn": (BATCH, zoo.RNN_HIDDEN),  # the final hidden state of the scanned cell
    "resnet_train": (BATCH, 10),  # the ResNet's training copy
    "bert_train": (BATCH, 4),  # BERT's
}


def test_zoo_is_eight_models_over_three_frameworks_with_an_unseen_batch_each():
    assert len([model for model in zoo.MODELS if not model.training]) >= 8
    steps = [model for model in zoo.MODELS if model.training]
    assert len(steps) == 2 and all(model.framework == "torch" for model in steps)
    for model in steps:  # a training step is traced and timed with its optimizer
        if model.needs is None or importlib.util.find_spec(model.needs) is not None:
            assert model.build(1)[3]["training"] is True and "optimizer" in model.build(1)[3]
    assert {model.framework for model in zoo.MODELS} == {"torch", "jax", "tensorflow"}
    assert set(SHAPES) == {model.name for model in zoo.MODELS}
    for model in zoo.MODELS:
        assert len(set(model.batches)) == 2 and model.unseen_batch not in model.batches, model.name


def output_of(framework, fn, args, kwargs):
    if framework == "torch":
        with torch.no_grad():
            out = fn(*args, **kwargs)
        return out.logits if hasattr(out, "logits") else out
    return fn(*args, **kwargs)


@pytest.mark.parametrize("model", zoo.MODELS, ids=lambda model: model.name)
def test_model_builds_and_runs_at_batch_2(model):
    if model.needs is not None:
        pytest.importorskip(model.needs)
    fn, args, kwargs, trace_options = model.build(BATCH)
    assert isinstance(trace_options, dict)
    out = output_of(model.framework, fn, args, kwargs)
    assert tuple(out.shape) == SHAPES[model.name]


def _held_out_convolutions():
    """(in channels, out channels, map size, kernel, stride) of every convolution layer of the zoo:
    the ResNet's read from its modules as it runs, the Flax and Keras CNNs' from their definitions
    (3×3, stride 1, "same": 3→32 on 64², 32→64 on 32², 64→128 on 16² after each 2×2 max pool)."""
    layers = set()

    def record(module, inputs, _output):
        layers.add((module.in_channels, module.out_channels, inputs[0].shape[-1], module.kernel_size[0],
                    module.stride[0]))  # fmt: skip

    model = zoo.BY_NAME["resnet"].build(BATCH)[0]
    hooks = [m.register_forward_hook(record) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    try:
        with torch.no_grad():
            model(*zoo.BY_NAME["resnet"].build(BATCH)[1])
    finally:
        for hook in hooks:
            hook.remove()
    # the stem 3→32; 32→32 (four layers, one shape); 32→64 3×3 and 1×1 at stride 2; 64→64;
    # 64→128 3×3 and 1×1 at stride 2; 128→128
    assert len(layers) == 8
    cnn = {(3, 32, zoo.IMAGE, 3, 1), (32, 64, zoo.IMAGE // 2, 3, 1), (64, 128, zoo.IMAGE // 4, 3, 1)}
    return layers | cnn


def test_no_calibration_convolution_has_a_held_out_layers_shape():
    """The benchmark's models stay unseen by the kernel calibration: no convolution of any
    framework's grid has the channels, map size, kernel and stride of one of their layers, at
    any batch."""
    from neural_cost.adapters import _microgrid as grid
    from neural_cost.adapters._jax.microbench import _CONVS as JAX_CONVS
    from neural_cost.adapters._tf.microbench import _CONVS as TF_CONVS
    from neural_cost.adapters._torch.microbench import _convs, _training

    held = _held_out_convolutions()
    stride_1 = {
        (c_in, c_out, size, k, 1)
        for _, c_in, c_out, size, k in (*JAX_CONVS, *TF_CONVS, *grid.LARGE_CONVS, *grid.STEM_CONVS)
    }
    shared = {(c_in, c_out, size, k, s) for _, c_in, c_out, size, k, s in grid.STRIDED_CONVS}
    shared |= {(c, c, size, k, s) for _, c, size, k, s in grid.DEPTHWISE_CONVS}  # JAX's and TensorFlow's too
    torch_grid = set()
    backward = [program for program in _training(False) if program.name.startswith("convolution_backward")]
    for program in [*_convs(False), *backward]:  # conv2d (or convolution_backward) [depthwise] NxCxHxW[->Cout] kK sS
        words = program.name.replace("->", " ").split()
        if words[1] == "depthwise":  # conv2d depthwise NxCxHxW kK sS: C → C
            _, _, shape, kernel, stride = words
            c_out = shape.split("x")[1]
        else:
            _, shape, c_out, kernel, stride = words  # conv2d NxCxHxW Cout kK sS
        _, c_in, size, _ = (int(v) for v in shape.split("x"))
        torch_grid.add((c_in, int(c_out), size, int(kernel[1:]), int(stride[1:])))
    assert len(torch_grid) > 50 and len(stride_1) > 20
    assert len(shared) == len(grid.STRIDED_CONVS) + len(grid.DEPTHWISE_CONVS)
    assert shared <= torch_grid  # PyTorch runs both shared grids: its names were read right
    assert not held & (stride_1 | torch_grid), held & (stride_1 | torch_grid)


def test_no_calibration_contraction_has_a_held_out_linear_layers_shape():
    """No ``linear m×k×n`` of the PyTorch grid is a linear layer of a held-out transformer at one of
    its batches (m = batch × tokens per row, or batch for BERT's pooler): at 256 wide over
    128-token rows, 512×256→768 (GPT-2's attention projection at batch 4) and others were grid
    points."""
    pytest.importorskip("transformers")
    import transformers.pytorch_utils

    from neural_cost.adapters._torch.microbench import _matmuls

    grid = {tuple(int(v) for v in program.name.split()[1].split("x")) for program in _matmuls(False)
            if program.name.startswith("linear")}  # fmt: skip
    held = set()
    for name in ("gpt2", "bert", "llama"):
        model = zoo.BY_NAME[name]
        module = model.build(BATCH)[0]
        for layer in module.modules():
            if isinstance(layer, torch.nn.Linear):
                shape = (layer.in_features, layer.out_features)
            elif isinstance(layer, transformers.pytorch_utils.Conv1D):  # GPT-2's: weight is in × out
                shape = tuple(layer.weight.shape)
            else:
                continue
            for batch in (*model.batches, model.unseen_batch):  # every token, or one a row (BERT's pooler)
                held |= {(batch * zoo.SEQUENCE, *shape), (batch, *shape)}
    assert len(grid) > 40 and len(held) > 10
    assert not grid & held, grid & held


def test_no_calibration_norm_or_dot_has_a_held_out_layers_shape():
    """The ResNet's batch norms (channels, map size) at its batches are no ``batch_norm`` grid
    point (4×64×32×32 was one), and the scanned RNN's two dots (batch × 256 → 512, batch × 512 →
    512) are no dot of the shared grid, nor of the JAX grid's scanned cells, at any of its batches."""
    from neural_cost.adapters import _microgrid as grid
    from neural_cost.adapters._torch.microbench import _reductions_norms, _training

    norms = set()
    for program in [*_reductions_norms(False), *_training(False)]:  # the training-mode ones and backwards too
        if "batch_norm" in program.name:
            n, c, size, _ = (int(v) for v in program.name.split()[-1].split("x"))
            norms.add((n, c, size))
    layers = set()

    def record(module, inputs, _output):
        layers.add((module.num_features, inputs[0].shape[-1]))

    model = zoo.BY_NAME["resnet"]
    module = model.build(BATCH)[0]
    hooks = [m.register_forward_hook(record) for m in module.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    try:
        with torch.no_grad():
            module(*model.build(BATCH)[1])
    finally:
        for hook in hooks:
            hook.remove()
    batches = (*model.batches, model.unseen_batch)
    held = {(batch, c, size) for batch in batches for c, size in layers}
    assert norms and len(layers) == 3 and not norms & held, norms & held  # 32 on 64², 64 on 32², 128 on 16²
    scan = zoo.BY_NAME["jax_scan_rnn"]
    cells = {(batch, k, zoo.RNN_HIDDEN) for batch in (*scan.batches, scan.unseen_batch)
             for k in (zoo.RNN_INPUT, zoo.RNN_HIDDEN)}  # fmt: skip
    dots = {(m, k, n) for _, m, k, n in grid.dots(False)}
    assert dots and not dots & cells, dots & cells
    from neural_cost.adapters._jax.microbench import _SCANS

    # the JAX grid's scanned cells: their dots are batch × features → hidden and batch × hidden → hidden
    scanned = {(b, k, hidden) for b, _, features, hidden in _SCANS for k in (features, hidden)}
    assert len(scanned) > 12 and not scanned & cells, scanned & cells


def test_no_calibration_recurrent_cell_has_a_held_out_layers_step():
    """A recurrent layer's curve is read per time step (``kernel_classes.repeats``), so a grid cell
    with a zoo LSTM layer's (batch, features, hidden) at any of its batches would be that layer's
    step measured: none is (the layers: 128 → 256, then 256 → 256)."""
    from neural_cost.adapters._torch.microbench import RNN_CELLS

    model = zoo.BY_NAME["lstm"]
    lstm = model.build(BATCH)[0].lstm
    layers = {(lstm.input_size if i == 0 else lstm.hidden_size, lstm.hidden_size) for i in range(lstm.num_layers)}
    held = {(batch, k, n) for batch in (*model.batches, model.unseen_batch) for k, n in layers}
    cells = {(batch, features, hidden) for _, batch, _, features, hidden in RNN_CELLS}
    assert layers == {(128, 256), (256, 256)} and len(cells) > 15
    assert not cells & held, cells & held
