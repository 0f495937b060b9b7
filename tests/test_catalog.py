"""One catalog of per-element costs: the same op counts the same in PyTorch, JAX and TensorFlow.

Each case below is written by hand: one op, its catalog entry, and its spelling in every
framework. A tiny program per framework is traced on the same float32 (4, 6) input
(24 elements) and its FLOPs, transcendentals and bytes are compared with the catalog entry.
A library op counts as the op: where a framework writes it in primitives (``jax.nn.gelu``,
``jax.nn.elu``, ``tf.nn.gelu``...), the adapter recognises it and makes one record of the op
(``adapters/_jax/composites.py``, ``adapters/_tf/composites.py``). Where a framework's
spelling cannot be recognised reliably (Keras's ``silu`` and ``mish`` have no scope of their
own), the composite's total is compared and the difference asserted exactly with its reason.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any

import pytest

from neural_cost import Operation
from neural_cost.core.errors import RecordError
from neural_cost.costs.catalog import CATALOG, PerElement, composed, integer_pow_flops, per_element

# --- the catalog itself (no framework needed) --------------------------------------------------


def test_every_entry_states_its_formula_and_counts_no_more_transcendentals_than_flops():
    for name, entry in CATALOG.items():
        assert entry.why, name
        assert 0 <= entry.transcendentals <= entry.flops or entry.flops == 0 == entry.transcendentals, name


def test_exponentiation_by_squaring_agrees_with_the_special_cased_powers():
    # x**2 = x·x, x**3 = x·x·x, x**-1 = 1/x, x**-2 = 1/(x·x): the same count either way
    for exponent, entry in ((2, "square"), (3, "cube"), (-1, "reciprocal"), (-2, "reciprocal_square")):
        assert integer_pow_flops(exponent) == CATALOG[entry].flops
    # the rule counts an integer_pow record by its exponent: x**5 = 2 squarings (x², x⁴) + 1 multiply
    op = Operation("integer_pow", "elementwise", ((10,),), (10,), attrs={"op": "integer_pow", "exponent": 5})
    assert (op.cost.flops, op.cost.transcendentals) == (30, 0)  # 3 · 10
    with pytest.raises(RecordError, match=r"integer_pow: give its attrs\['exponent'\]"):
        Operation("integer_pow", "elementwise", ((10,),), (10,), attrs={"op": "integer_pow"})


def test_recurrent_cells_count_the_catalogs_own_ops():
    # A fused PyTorch LSTM/GRU/RNN kernel counts the ops it evaluates at their catalog counts
    # (sigmoid 4 + 1 transcendental, tanh 1 + 1, add, sub, mul, relu 1), as a Keras or Flax
    # LSTM does running them one by one. "_biased": PyTorch's b_ih and b_hh, 2 more adds.
    expected = {
        "lstm_gates": (1, 0),  # x-part + h-part, per gate element
        "lstm_gates_biased": (3, 0),  # + b_ih + b_hh
        "lstm_cell": (18, 5),  # 3 sigmoid (12, 3) + 2 tanh (2, 2) + f·c, i·g, o·tanh(c') (3) + f·c + i·g (1)
        "gru_gates": (5, 1),  # add + sigmoid
        "gru_gates_biased": (7, 1),  # 3 adds + sigmoid
        "gru_candidate": (6, 1),  # n = tanh(x_n + r·h_n) (3), h' = n + z·(h - n) (3)
        "gru_candidate_biased": (8, 1),  # + b_in, + b_hn
        "rnn_tanh": (2, 1),  # add + tanh
        "rnn_tanh_biased": (4, 1),
        "rnn_relu": (2, 0),  # add + relu
        "rnn_relu_biased": (4, 0),
    }
    assert {name: (CATALOG[name].flops, CATALOG[name].transcendentals) for name in expected} == expected
    assert CATALOG["lstm_cell"].why.endswith("3 sigmoid + 2 tanh + 3 mul + 1 add = 18 FLOPs, 5 transcendentals")
    # the sum is taken from the entries, not typed again: two sigmoids are 2·4 FLOPs, 2 transcendentals
    assert composed("two gates", (2, "sigmoid")) == PerElement(
        8, 2, "two gates: 2 sigmoid = 8 FLOPs, 2 transcendentals"
    )


def test_the_elementwise_rule_reads_the_entry_its_record_names():
    op = Operation("logistic", "elementwise", ((10, 20),), (10, 20), "float32", attrs={"op": "sigmoid"})
    assert (op.cost.flops, op.cost.transcendentals) == (800, 200)  # 4 and 1 per element · 200
    assert (op.cost.read_bytes, op.cost.write_bytes) == (800, 800)  # 200 floats read, 200 written


def test_a_report_saved_before_the_catalog_scores_as_it_did():
    # JAX's logistic was saved as 1 FLOP + 1 transcendental: explicit attrs win over the entry
    old = {"op": "sigmoid", "flops_per_element": 1, "transcendental": True}
    op = Operation("logistic", "elementwise", ((10, 20),), (10, 20), "float32", attrs=old)
    assert (op.cost.flops, op.cost.transcendentals) == (200, 200)  # 1 and 1 per element
    assert Operation.from_dict(op.to_dict()).cost == op.cost
    # a name outside the catalog keeps the explicit form's default: 1 FLOP per element
    custom = Operation("mine", "elementwise", ((10,),), (10,), attrs={"op": "my_fused_thing"})
    assert (custom.cost.flops, custom.cost.transcendentals) == (10, 0)


def test_an_unknown_entry_is_a_clear_error():
    with pytest.raises(RecordError, match=r"no pointwise catalog entry 'sigmoidd'.*CATALOG"):
        per_element("sigmoidd")


# --- every framework's table maps only to catalog entries ---------------------------------------


def test_torch_table_names_only_catalog_entries():
    pytest.importorskip("torch")
    from neural_cost.adapters._torch import ops_pointwise

    assert set(ops_pointwise.ALIASES.values()) <= set(CATALOG)


def test_jax_table_names_only_catalog_entries():
    pytest.importorskip("jax.numpy")
    from neural_cost.adapters._jax import ops_pointwise

    assert set(ops_pointwise.ALIASES.values()) <= set(CATALOG)


def test_tensorflow_table_names_only_catalog_entries():
    pytest.importorskip("tensorflow")
    from neural_cost.adapters._tf import ops_pointwise

    assert set(ops_pointwise.ALIASES.values()) <= set(CATALOG)


# --- must-show: equivalent ops, traced in all three frameworks ----------------------------------

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

E = 4 * 6  # elements of the input and of every output below
ROWS, LENGTH = 4, 6  # softmax rows along the last axis
BYTES = 2 * 4 * E  # one float32 read and one written per element: 192


@dataclass(frozen=True)
class Same:
    """One op: its expected totals, and each framework's spelling (a function of x)."""

    name: str
    flops: int
    transcendentals: int
    torch: str
    jax: str
    tf: str
    # framework → (FLOPs, transcendentals, bytes) beyond the expected totals, and why
    differs: dict[str, tuple[int, int, int, str]] = field(default_factory=dict)
    nbytes: int = BYTES  # read and written by a framework that runs it as one kernel


def _entry(name: str) -> tuple[int, int]:
    entry = CATALOG[name]
    return entry.flops * E, entry.transcendentals * E


def same(name: str, torch: str, jax: str, tf: str, nbytes: int = BYTES, **differs: tuple[int, int, int, str]) -> Same:
    """A case counted by catalog entry ``name``; ``differs`` is keyed by ``in_torch``/``in_jax``/``in_tf``."""
    return Same(name, *_entry(name), torch, jax, tf, {k.removeprefix("in_"): v for k, v in differs.items()}, nbytes)


# A single record that names another entry with the same count, or states the count itself.
_NAMED_AS = {
    ("relu6", "torch"): "hardtanh",  # F.relu6 dispatches as hardtanh(x, 0, 6)
    ("reciprocal", "jax"): "integer_pow",  # x ** -1 by squaring: one divide
    ("cube", "jax"): "integer_pow",  # x ** 3 by squaring: one squaring, one multiply
}


# The softmax kind: max L-1, subtract L, exp L, sum L-1, divide L = 5L-2 per row; log: 5L-1, L+1 transcendental.

CASES = [
    same("sigmoid", "torch.sigmoid", "jax.nn.sigmoid", "tf.math.sigmoid"),  # logistic in JAX's jaxpr
    same("tanh", "torch.tanh", "jnp.tanh", "tf.math.tanh"),
    same("exp", "torch.exp", "jnp.exp", "tf.math.exp"),
    same("log", "torch.log", "jnp.log", "tf.math.log"),
    same("log1p", "torch.log1p", "jnp.log1p", "tf.math.log1p"),
    same("expm1", "torch.expm1", "jnp.expm1", "tf.math.expm1"),
    same("sqrt", "torch.sqrt", "jnp.sqrt", "tf.math.sqrt"),
    same("rsqrt", "torch.rsqrt", "jax.lax.rsqrt", "tf.math.rsqrt"),
    same("erf", "torch.erf", "jax.lax.erf", "tf.math.erf"),
    same("sin", "torch.sin", "jnp.sin", "tf.math.sin"),
    same("abs", "torch.abs", "jnp.abs", "tf.math.abs"),
    same("neg", "torch.neg", "jnp.negative", "tf.math.negative"),
    same("floor", "torch.floor", "jnp.floor", "tf.math.floor"),
    same("square", "torch.square", "jnp.square", "tf.math.square"),  # PyTorch: pow(x, 2)
    same("reciprocal", "torch.reciprocal", "jnp.reciprocal", "tf.math.reciprocal"),  # JAX: integer_pow(x, -1)
    same(
        "cube",
        "cube_torch",
        "cube_jax",
        "cube_tf",
        in_tf=(0, 0, 4, "TensorFlow's Pow reads its exponent, a 0-d constant: 4 bytes"),
    ),
    same("relu", "torch.relu", "jax.nn.relu", "tf.nn.relu"),  # JAX: max(x, 0.0) in relu's jit, recognised
    same("leaky_relu", "F.leaky_relu", "jax.nn.leaky_relu", "tf.nn.leaky_relu"),  # JAX: ge, mul, select
    same("relu6", "F.relu6", "jax.nn.relu6", "tf.nn.relu6"),  # PyTorch: hardtanh(0, 6); JAX: max, min
    same("clamp", "clamp_torch", "clamp_jax", "clamp_tf"),  # JAX and TF: a max and a min
    # JAX's jitted jax.nn functions are recognised by name and signature (was: elu/selu +1 per
    # element for a second where guarding expm1, softplus +4 for logaddexp's 10 primitives)
    same("elu", "F.elu", "jax.nn.elu", "tf.nn.elu"),
    same("selu", "F.selu", "jax.nn.selu", "tf.nn.selu"),
    same("softplus", "F.softplus", "jax.nn.softplus", "tf.math.softplus"),
    same(
        "silu",
        "F.silu",
        "jax.nn.silu",  # also jax.nn.swish
        "tf.nn.silu",  # also tf.nn.swish
        in_tf=(1 * E, 0, 0, "tf.nn.silu computes x·sigmoid(beta·x): the multiply by beta = 1.0 runs"),
    ),
    same("gelu", "F.gelu", "gelu_jax", "gelu_tf"),  # JAX and TF: 0.5·x·erfc(-x/√2), 5 ops
    same("gelu_tanh", "gelu_tanh_torch", "jax.nn.gelu", "gelu_tanh_tf"),  # TF: pow(x, 3) as x·x·x
    same("softsign", "F.softsign", "jax.nn.soft_sign", "tf.nn.softsign"),  # PyTorch and JAX: abs, add, div
    same("hardsigmoid", "F.hardsigmoid", "jax.nn.hard_sigmoid", "keras.activations.hard_sigmoid"),
    same("hardswish", "F.hardswish", "jax.nn.hard_swish", "keras.activations.hard_silu"),
    same(
        "log_sigmoid",
        "F.logsigmoid",
        "jax.nn.log_sigmoid",
        "tf.math.log_sigmoid",
        in_torch=(0, 0, 4 * E, "log_sigmoid_forward also writes the buffer its backward reads: 24 floats"),
    ),  # JAX: its jit, TF: its LogSigmoid scope, recognised (were +6 and +2 per element)
    same(
        "mish",
        "F.mish",
        "jax.nn.mish",
        "keras.activations.mish",
        in_tf=(4 * E, 0, 0, "x·tanh(softplus(x)) with the thresholded Softplus (6) for log1p(exp(x)) (2)"),
    ),
    same(
        "isfinite",
        "torch.isfinite",
        "jnp.isfinite",
        "tf.math.is_finite",
        nbytes=4 * E + E,  # 24 floats read, 24 bools written
        in_torch=(3 * E, 0, 0, "torch.isfinite decomposes into abs, ne, eq, mul: 4 where one bit test does"),
    ),
    Same(
        "softmax",
        ROWS * (5 * LENGTH - 2),  # 4 · 28 = 112
        ROWS * LENGTH,  # 24 exps
        "softmax_torch",
        "jax.nn.softmax",
        "tf.nn.softmax",
        {},  # JAX: the sequence recognised (was +1 per row for jnp.max's initial=-inf)
    ),
    Same(
        "log_softmax",
        ROWS * (5 * LENGTH - 1),  # 4 · 29 = 116
        ROWS * (LENGTH + 1),  # 24 exps and 4 logs = 28
        "log_softmax_torch",
        "jax.nn.log_softmax",
        "tf.nn.log_softmax",
        {},  # JAX: its jit recognised (was +1 per row for jnp.max's initial=-inf)
    ),
]


def _spelling(framework: str, name: str) -> Any:
    """The function a case names, resolved in its framework (or one of the helpers below)."""
    if framework == "torch":
        import torch
        from torch.nn import functional as F

        helpers: dict[str, Any] = {
            "cube_torch": lambda x: x**3,
            "clamp_torch": lambda x: torch.clamp(x, -1.0, 1.0),
            "gelu_tanh_torch": functools.partial(F.gelu, approximate="tanh"),
            "softmax_torch": functools.partial(torch.softmax, dim=-1),
            "log_softmax_torch": functools.partial(torch.log_softmax, dim=-1),
        }
        scope: dict[str, Any] = {"torch": torch, "F": F}
    elif framework == "jax":
        import jax
        import jax.numpy as jnp

        helpers = {
            "cube_jax": lambda x: x**3,
            "clamp_jax": lambda x: jnp.clip(x, -1.0, 1.0),
            "gelu_jax": functools.partial(jax.nn.gelu, approximate=False),
        }
        scope = {"jax": jax, "jnp": jnp}
    else:
        import keras
        import tensorflow as tf

        helpers = {
            "cube_tf": lambda x: tf.pow(x, 3.0),
            "clamp_tf": lambda x: tf.clip_by_value(x, -1.0, 1.0),
            "gelu_tf": functools.partial(tf.nn.gelu, approximate=False),
            "gelu_tanh_tf": functools.partial(tf.nn.gelu, approximate=True),
        }
        scope = {"tf": tf, "keras": keras}
    if name in helpers:
        return helpers[name]
    return functools.reduce(getattr, name.split(".")[1:], scope[name.split(".")[0]])


def _trace(framework: str, fn: Any) -> Any:
    from neural_cost.adapters import JaxAdapter, TensorFlowAdapter, TorchAdapter

    if framework == "torch":
        import torch

        return TorchAdapter().trace(fn, (torch.rand(4, 6) + 0.5,))
    if framework == "jax":
        import jax.numpy as jnp

        return JaxAdapter(cross_check=False).trace(fn, (jnp.ones((4, 6), jnp.float32),))
    import tensorflow as tf

    return TensorFlowAdapter().trace(fn, (tf.ones((4, 6)),))


_MODULES = {"torch": "torch", "jax": "jax.numpy", "tf": "tensorflow"}


@pytest.mark.parametrize("framework", ["torch", "jax", "tf"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_equivalent_ops_count_the_same_in_every_framework(case: Same, framework: str):
    pytest.importorskip(_MODULES[framework])
    if framework == "tf":
        pytest.importorskip("keras")
    trace = _trace(framework, _spelling(framework, getattr(case, framework)))
    assert trace.coverage.unmodeled == ()
    records = [op for op in trace.operations if op.cost.flops or op.kind != "copy"]
    flops = sum(op.cost.flops for op in trace.operations)
    transcendentals = sum(op.cost.transcendentals for op in trace.operations)
    extra_flops, extra_transcendentals, extra_bytes, _why = case.differs.get(framework, (0, 0, 0, ""))
    assert (flops, transcendentals) == (case.flops + extra_flops, case.transcendentals + extra_transcendentals)
    if len(records) == 1:  # one kernel: the input read once, the output written once
        (op,) = records
        assert op.cost.read_bytes + op.cost.write_bytes == case.nbytes + extra_bytes
        if op.kind == "elementwise":  # the record names the entry that counted it
            assert op.attrs["op"] == _NAMED_AS.get((case.name, framework), case.name)
    # else: a composite writes each intermediate (unfused traffic), so its bytes are not compared


def test_torch_elu_coefficients_pick_selu_celu_or_add_their_multiplies():
    pytest.importorskip("torch")
    from neural_cost.adapters._torch.ops_pointwise import pointwise_entry

    def pointwise_counts(name: str, bound: dict[str, Any]) -> tuple[int, int]:
        """(FLOPs, transcendentals) of one element, as the elementwise rule counts the entry."""
        entry, params = pointwise_entry(name, bound)
        cost = Operation(name, "elementwise", ((1,),), (1,), attrs={"op": entry, **params}).cost
        return cost.flops, cost.transcendentals

    assert pointwise_entry("elu", {"alpha": 1.0, "scale": 1, "input_scale": 1}) == ("elu", {})
    assert pointwise_entry("elu", {"scale": 1.0507, "input_scale": 1}) == ("selu", {})
    assert pointwise_entry("elu", {"scale": 1, "input_scale": 0.5}) == ("celu", {})
    assert pointwise_entry("elu", {"scale": 2.0, "input_scale": 0.5}) == ("elu", {"extra_multiplies": 2})
    assert pointwise_counts("elu", {"scale": 2.0, "input_scale": 0.5}) == (7, 1)  # elu 5 + 2 multiplies
    assert pointwise_counts("elu_backward", {"is_result": True, "scale": 2.0, "input_scale": 1}) == (5, 0)  # 4 + 1


def test_a_name_outside_the_catalog_counts_the_default_and_says_so():
    # 1 FLOP per element (the explicit form's default) × 4·8 = 32 elements, and a note naming the entry
    op = Operation("mine", "elementwise", ((4, 8),), (4, 8), attrs={"op": "my_activation"})
    assert op.cost.flops == 32
    assert any("'my_activation' names no catalog entry" in note for note in op.cost.notes)
    named = Operation("act", "elementwise", ((4, 8),), (4, 8), attrs={"op": "sigmoid"})
    assert named.cost.notes == ()
