"""The held-out model zoo: eight models no fitted parameter of the expected-time model saw, and
two training steps of two of them (``training``: forward, backward and an AdamW step; scored
apart from the eight).

Each is built as its users run it — Hugging Face models from their configs (nothing is
downloaded), torch modules in eval mode, a jitted Flax ``apply``, a Keras model called as a
model, a jitted JAX ``lax.scan`` — at any batch size. ``build(batch)`` returns
``(fn, args, kwargs, trace_options)`` for ``analyze_workload(adapter_for(framework), fn, args,
kwargs, hardware, trace_options=trace_options)``; the model itself is made once per process
(same weights at every batch), only the inputs change with the batch.

``batches`` are the two sizes the benchmark measures, ``unseen_batch`` the one it predicts
from the trace before timing it. Sizes are chosen so one run takes roughly 2–200 ms on a
2-core CPU. The transformers models need ``requirements/bench.txt`` (``needs``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

#: (fn, args, kwargs, trace_options)
Workload = tuple[Any, tuple[Any, ...], dict[str, Any], dict[str, Any]]

# The transformers are 240 wide over rows of 120 tokens: off every calibration grid (at 256 wide
# over 128-token rows, their linear layers' shapes, 512×256→768 and the like, were grid points).
SEQUENCE = 120  # tokens per row of the transformer models
HIDDEN = 240  # their width: 4 heads of 60
VOCAB = 8192
IMAGE = 64  # side of the CNNs' square RGB images
STEPS = 64  # time steps of the recurrent models


@dataclass(frozen=True)
class HeldoutModel:
    name: str
    framework: str  # "torch", "jax" or "tensorflow": the name adapter_for takes
    build: Callable[[int], Workload]
    batches: tuple[int, int] = (4, 16)
    unseen_batch: int = 8
    needs: str | None = None  # a package beyond requirements/test.txt, or None
    training: bool = False  # a whole training step (forward, backward, AdamW), not one of the eight


# -- torch: Hugging Face models from configs ----------------------------------------------------


def _token_ids(batch: int) -> Any:
    import torch

    generator = torch.Generator().manual_seed(batch)
    return torch.randint(0, VOCAB, (batch, SEQUENCE), generator=generator)


@functools.cache
def _gpt2() -> Any:
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=HIDDEN, n_head=4, vocab_size=VOCAB, n_positions=256, bos_token_id=0, eos_token_id=0
    )
    return transformers.GPT2LMHeadModel(config).eval()


@functools.cache
def _bert() -> Any:
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=4 * HIDDEN,
        max_position_embeddings=256,
        num_labels=4,
    )
    return transformers.BertForSequenceClassification(config).eval()


@functools.cache
def _llama() -> Any:
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=688,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
    )
    return transformers.LlamaForCausalLM(config).eval()


def gpt2(batch: int) -> Workload:
    return _gpt2(), (_token_ids(batch),), {"use_cache": False}, {}


def bert(batch: int) -> Workload:
    return _bert(), (_token_ids(batch),), {}, {}


def llama(batch: int) -> Workload:
    return _llama(), (_token_ids(batch),), {"use_cache": False}, {}


# -- torch: a ResNet-style CNN and an LSTM -------------------------------------------------------


@functools.cache
def _resnet() -> Any:
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, inputs: int, outputs: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(outputs)
            self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(outputs)
            self.shortcut: nn.Module = nn.Identity()
            if stride != 1 or inputs != outputs:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs)
                )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, 1, 1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        BasicBlock(32, 32, 1),
        BasicBlock(32, 64, 2),
        BasicBlock(64, 128, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(128, 10),
    )
    return model.eval()


def resnet(batch: int) -> Workload:
    import torch

    x = torch.randn(batch, 3, IMAGE, IMAGE, generator=torch.Generator().manual_seed(batch))
    return _resnet(), (x,), {}, {}


@functools.cache
def _lstm() -> Any:
    import torch
    from torch import nn

    class LstmClassifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(128, 256, num_layers=2, batch_first=True)
            self.head = nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            outputs, _ = self.lstm(x)
            return self.head(outputs[:, -1])

    torch.manual_seed(0)
    return LstmClassifier().eval()


def lstm(batch: int) -> Workload:
    import torch

    x = torch.randn(batch, STEPS, 128, generator=torch.Generator().manual_seed(batch))
    return _lstm(), (x,), {}, {}


# -- JAX: a Flax CNN and a scanned RNN -----------------------------------------------------------


@functools.cache
def _flax_cnn() -> tuple[Any, Any]:
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class Cnn(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            for features in (32, 64, 128):
                x = nn.Conv(features, (3, 3), padding="SAME", use_bias=False)(x)
                x = nn.relu(nn.BatchNorm(use_running_average=True)(x))
                x = nn.max_pool(x, (2, 2), strides=(2, 2))
            return nn.Dense(10)(jnp.mean(x, axis=(1, 2)))

    model = Cnn()
    variables = jax.jit(model.init)(jax.random.key(0), jnp.zeros((1, IMAGE, IMAGE, 3)))
    return jax.jit(model.apply), variables


def _normal(shape: tuple[int, ...], seed: int) -> Any:
    """A JAX array of standard normals, drawn by numpy: no PRNG program to compile per shape."""
    import jax.numpy as jnp
    import numpy as np

    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32))


def flax_cnn(batch: int) -> Workload:
    apply, variables = _flax_cnn()
    x = _normal((batch, IMAGE, IMAGE, 3), batch)
    return apply, (variables, x), {}, {"param_argnums": 0}


RNN_INPUT, RNN_HIDDEN = 256, 512


@functools.cache
def _jax_scan_rnn() -> tuple[Any, Any]:
    import jax
    import jax.numpy as jnp

    def rnn(params: dict[str, jax.Array], xs: jax.Array) -> jax.Array:
        """An Elman cell, h ← tanh(x·Wx + h·Wh + b), scanned over the leading (time) axis."""

        def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, None]:
            return jnp.tanh(x @ params["wx"] + h @ params["wh"] + params["b"]), None

        h0 = jnp.zeros((xs.shape[1], RNN_HIDDEN), xs.dtype)
        h, _ = jax.lax.scan(step, h0, xs)
        return h

    params = {
        "wx": _normal((RNN_INPUT, RNN_HIDDEN), 0) / RNN_INPUT**0.5,
        "wh": _normal((RNN_HIDDEN, RNN_HIDDEN), 1) / RNN_HIDDEN**0.5,
        "b": jnp.zeros((RNN_HIDDEN,)),
    }
    return jax.jit(rnn), params


def jax_scan_rnn(batch: int) -> Workload:
    fn, params = _jax_scan_rnn()
    xs = _normal((STEPS, batch, RNN_INPUT), batch)
    return fn, (params, xs), {}, {"param_argnums": 0}


# -- TensorFlow: a Keras CNN ---------------------------------------------------------------------


@functools.cache
def _keras_cnn() -> Any:
    import keras

    keras.utils.set_random_seed(0)
    layers = keras.layers
    return keras.Sequential(
        [
            keras.Input((IMAGE, IMAGE, 3)),
            layers.Conv2D(32, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.MaxPooling2D(),
            layers.Conv2D(64, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.MaxPooling2D(),
            layers.Conv2D(128, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.ReLU(),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10),
        ]
    )


def keras_cnn(batch: int) -> Workload:
    import tensorflow as tf

    x = tf.random.stateless_normal((batch, IMAGE, IMAGE, 3), seed=(batch, 0))
    return _keras_cnn(), (x,), {}, {}


# -- torch training steps: forward, backward and an AdamW step, as users time one ----------------


@functools.cache
def _trainer(name: str) -> tuple[Any, Any]:
    """A training copy of a zoo model (train mode: batch statistics, dropout) and its AdamW."""
    import copy

    import torch

    model = copy.deepcopy({"resnet": _resnet, "bert": _bert}[name]()).train()
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4)


def _logits_sum(output: Any) -> Any:
    return output.logits.sum()


def resnet_train(batch: int) -> Workload:
    model, optimizer = _trainer("resnet")
    (x,) = resnet(batch)[1]
    return model, (x,), {}, {"training": True, "optimizer": optimizer}


def bert_train(batch: int) -> Workload:
    model, optimizer = _trainer("bert")
    return model, (_token_ids(batch),), {}, {"training": True, "optimizer": optimizer, "loss_fn": _logits_sum}


MODELS: tuple[HeldoutModel, ...] = (
    HeldoutModel("gpt2", "torch", gpt2, needs="transformers"),
    HeldoutModel("bert", "torch", bert, needs="transformers"),
    HeldoutModel("llama", "torch", llama, needs="transformers"),
    HeldoutModel("resnet", "torch", resnet),
    HeldoutModel("lstm", "torch", lstm),
    HeldoutModel("flax_cnn", "jax", flax_cnn),
    HeldoutModel("keras_cnn", "tensorflow", keras_cnn),
    HeldoutModel("jax_scan_rnn", "jax", jax_scan_rnn),
    HeldoutModel("resnet_train", "torch", resnet_train, training=True),
    HeldoutModel("bert_train", "torch", bert_train, needs="transformers", training=True),
)

BY_NAME = {model.name: model for model in MODELS}


def compare_runs(
    runs: str,
    compare: Callable[[str, int], list[tuple[float, float, float]]],
    labels: tuple[str, str],
    what: str,
    framework: str | None = None,
) -> None:
    """Score each ``MODEL:BATCH`` of ``runs`` (comma-separated) with ``compare``, which gives (first ÷ profiled,
    second ÷ profiled, profiled seconds) per kernel of one profiled run, and print for both the median
    |log(expected ÷ profiled)| and the time-weighted |expected ÷ profiled − 1| over every kernel (``what``: what
    they are). ``framework``: the models ``runs`` may name."""
    import math
    import statistics

    rows: list[tuple[float, float, float]] = []
    for run in runs.split(","):
        name, _, batch = run.partition(":")
        if name not in BY_NAME or not batch.isdigit() or framework not in (None, BY_NAME[name].framework):
            models = ", ".join(m.name for m in MODELS if framework in (None, m.framework))
            print(f"{run}: not MODEL:BATCH with a model of {models}")
            return
        rows += compare(name, int(batch))
    if not rows:
        print(f"no {what} was profiled")
        return
    total = sum(seconds for *_, seconds in rows)
    width = max(len(label) for label in labels)
    for i, label in enumerate(labels):
        logs = [abs(math.log(row[i])) for row in rows]
        weighted = sum(abs(row[i] - 1) * row[2] for row in rows) / total
        print(
            f"{len(rows)} {what}, {label:{width}s}: median |log(expected ÷ profiled)| {statistics.median(logs):.3f} "
            f"(×{math.exp(statistics.median(logs)):.2f}), time-weighted |expected ÷ profiled − 1| {weighted:.1%}"
        )


def compare_main(
    doc: str,
    default: str,
    compare: Callable[[str, int], list[tuple[float, float, float]]],
    labels: tuple[str, str],
    what: str,
    framework: str | None = None,
) -> None:
    """A per-kernel comparison script's command line (``doc``: its docstring): ``--runs`` (``default`` when not
    given), the frameworks' own log lines quieted, then ``compare_runs``."""
    import argparse

    from neural_cost.cli.quiet import filtered_stderr, quiet_frameworks

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", default=default)
    options = parser.parse_args()
    quiet_frameworks()
    with filtered_stderr():
        compare_runs(options.runs, compare, labels, what, framework)
