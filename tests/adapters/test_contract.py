"""One adapter contract: the same signatures in every adapter, loose options named as errors,
and a builder that raises inside a real trace leaving its op unmodeled, never failing the trace."""

import inspect
import os
import re
from pathlib import Path

import pytest

from neural_cost.adapters import FrameworkAdapter
from neural_cost.core.errors import AdapterError

SRC = Path(__file__).resolve().parents[2] / "src" / "neural_cost"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _adapter(name):
    module = {"JaxAdapter": "jax", "TorchAdapter": "torch", "TensorFlowAdapter": "tensorflow"}[name]
    pytest.importorskip(module)
    import neural_cost.adapters as adapters

    return getattr(adapters, name)


ADAPTERS = ["JaxAdapter", "TorchAdapter", "TensorFlowAdapter"]


def test_no_signature_is_hidden_from_the_type_checker():
    hits = [
        f"{path.relative_to(SRC)}:{number}"
        for path in SRC.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"type:\s*ignore\[override\]", line)
    ]
    assert hits == []


def _positional(method):
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(method).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]


@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("method", ["trace", "operations", "benchmark", "hardware", "calibrate"])
def test_every_adapter_has_the_base_positional_shape(name, method):
    cls = _adapter(name)
    assert _positional(getattr(cls, method)) == _positional(getattr(FrameworkAdapter, method))
    assert any(p.kind is p.VAR_KEYWORD for p in inspect.signature(getattr(cls, method)).parameters.values()) == any(
        p.kind is p.VAR_KEYWORD for p in inspect.signature(getattr(FrameworkAdapter, method)).parameters.values()
    )


def _sample(name):
    """(model, args) of a 4×8 by 8×2 matmul in each framework: 2·4·8·2 = 128 FLOPs."""
    if name == "JaxAdapter":
        import jax.numpy as jnp

        return (lambda x, w: x @ w), (jnp.ones((4, 8)), jnp.ones((8, 2)))
    if name == "TorchAdapter":
        import torch

        return (lambda x, w: x @ w), (torch.ones(4, 8), torch.ones(8, 2))
    import tensorflow as tf

    return (lambda x, w: tf.matmul(x, w)), (tf.ones((4, 8)), tf.ones((8, 2)))


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_loose_model_keyword_is_an_error_naming_it(name):
    cls = _adapter(name)
    model, args = _sample(name)
    adapter = cls(cross_check=False) if name == "JaxAdapter" else cls()
    with pytest.raises(AdapterError, match=r"unknown option\(s\) 'scale'.*kwargs=\{\.\.\.\}"):
        adapter.trace(model, args, scale=2.0)
    with pytest.raises(AdapterError, match=r"unknown option\(s\) 'scale'"):
        adapter.benchmark(model, *args, warmup=0, repeats=1, scale=2.0)


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_adapters_measurement_counts_its_timed_runs_page_faults(name):
    """``Measurement.allocator`` holds the timed runs' minor page faults per run and the page size
    in every adapter (the report schema says so on Unix): a compiled program's buffers come from
    glibc too, and the ``page_faults`` finding prices what they cost."""
    import resource

    cls = _adapter(name)
    model, args = _sample(name)
    adapter = cls(cross_check=False) if name == "JaxAdapter" else cls()
    measured = adapter.benchmark(model, *args, warmup=1, repeats=3)
    assert measured.allocator["page_bytes"] == resource.getpagesize()
    assert measured.allocator["minor_page_faults_per_run"] >= 0
    assert adapter.first_touch_seconds_per_byte() > 0  # the cost each is priced at


@pytest.mark.parametrize(
    ("name", "table_module", "op"),
    [
        ("JaxAdapter", "neural_cost.adapters._jax.table", "dot_general"),
        ("TorchAdapter", "neural_cost.adapters._torch.table", "mm"),
        ("TensorFlowAdapter", "neural_cost.adapters._tf.table", "MatMul"),
    ],
)
def test_a_builder_that_raises_is_unmodeled_with_a_note_in_every_adapter(monkeypatch, name, table_module, op):
    cls = _adapter(name)
    import importlib

    table = importlib.import_module(table_module).TABLE
    matmul, args = _sample(name)
    model = lambda x, w: matmul(x, w) * 2  # noqa: E731  (a modeled multiply: a trace that models nothing is an error)
    adapter = cls(cross_check=False) if name == "JaxAdapter" else cls()
    assert adapter.trace(model, args).coverage.fraction == 1.0  # the matmul is modeled as usual

    def broken(*_args):
        raise KeyError("a parameter this builder expected")

    monkeypatch.setitem(table, op, broken)
    trace = adapter.trace(model, args)
    unmodeled = dict(trace.coverage.unmodeled)
    assert sum(unmodeled.values()) == 1 and next(iter(unmodeled)).endswith(op)
    assert any(f"{op}" in note and "not modeled for this call (KeyError: " in note for note in trace.notes)
    assert sum(o.cost.flops for o in trace.operations if o.kind == "matmul") == 0  # named, never a silent count


def test_adapter_for_makes_each_adapter_with_its_options():
    pytest.importorskip("jax")
    from neural_cost.adapters import JaxAdapter, adapter_for

    adapter = adapter_for("jax", trip_counts={0: 3}, cross_check=False)
    assert isinstance(adapter, JaxAdapter) and adapter.trip_counts == {0: 3} and adapter.cross_check is False
    assert adapter.compiles_when_timing and adapter.device_from_environment and not adapter.traces_training_step
