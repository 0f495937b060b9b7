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
}


def test_zoo_is_eight_models_over_three_frameworks_with_an_unseen_batch_each():
    assert len(zoo.MODELS) >= 8
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
