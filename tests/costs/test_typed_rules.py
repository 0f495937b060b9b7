"""Typed rules: attributes are checked against the rule's keyword parameters when a record is made."""

from __future__ import annotations

import itertools
import re
from typing import Annotated, Any, Literal

import pytest

from neural_cost import Operation, known_kinds
from neural_cost.core import records
from neural_cost.core.errors import RecordError, ShapeError
from neural_cost.core.kinds import entry_for
from neural_cost.costs.registry import axis_index
from neural_cost.costs.signature import AttrSpec, Expect, Min, PerDim, Positive, compile_check

from .test_resample_linalg_rules import NEW_TYPED_RULES

# kind: (inputs, output, attrs that make a valid record, an unknown attribute, an ill-typed one)
TYPED_RULES: dict[str, tuple[Any, Any, dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "conv": (((1, 2, 5, 5), (3, 2, 3, 3)), (1, 3, 3, 3), {}, {"padding_mode": "zeros"}, {"groups": 1.0}),
    "pooling": (((1, 2, 4, 4),), (1, 2, 2, 2), {"kernel": 2}, {"count_include_pad": True}, {"ceil_mode": 1}),
    "pooling_backward": (
        ((1, 2, 2, 2), (1, 2, 4, 4)),
        (1, 2, 4, 4),
        {"kernel": 2},
        {"window": 2},
        {"stride": (2, -1)},
    ),
    "linear": (((4, 8), (8, 3)), (4, 3), {}, {"bias": True}, {"weight_layout": "oi"}),
    "matmul": (((4, 8), (8, 3)), (4, 3), {}, {"transpose_b": False}, {"dimension_numbers": ((1,), (0,))}),
    "grouped_matmul": (((4, 8), (2, 8, 3)), (4, 3), {}, {"offsets": True}, {"ragged_contracting": 1}),
    "histogram": (((4, 8),), (5,), {}, {"bins": 5}, {"range_from_data": "yes"}),
    "attention": (((1, 2, 4, 8),) * 3, (1, 2, 4, 8), {}, {"scale": 0.5}, {"causal_blocks": (0, 4)}),
    "embedding": (((10, 4), (3,)), (3, 4), {}, {"padding_idx": 0}, {"compute_dtype": 4.5}),
    "gather": (((10, 4), (3,)), (3, 4), {}, {"mode": "clip"}, {"op": 3}),
    "scatter": (((10,), (3,), (3,)), (10,), {}, {"unique": True}, {"touched": -1}),
    "copy": (((4,),), (4,), {}, {"note": "cast"}, {"reads": True}),
    "elementwise": (((4,),), (4,), {"op": "exp"}, {"alpha": 1.0}, {"exponent": 2.5}),
    "reduce": (((4, 3),), (4,), {"axes": (1,)}, {"keepdims": False}, {"axes": (1.0,)}),
    "softmax": (((2, 3),), (2, 3), {}, {"dim": -1}, {"axis": "last"}),
    "cumulative": (((2, 3),), (2, 3), {}, {"reverse": True}, {"flops_per_combine": -1}),
    "layernorm": (((2, 4),), (2, 4), {}, {"eps": 1e-5}, {"normalized_dims": 0}),
    "rmsnorm": (((2, 4),), (2, 4), {}, {"eps": 1e-5}, {"normalized_dims": True}),
    "groupnorm": (((2, 4, 3),), (2, 4, 3), {"groups": 2}, {"eps": 1e-5}, {"groups": 2.0}),
    "batchnorm": (((2, 4, 3),), (2, 4, 3), {}, {"momentum": 0.1}, {"training": "yes"}),
    "norm_backward": (((2, 4), (2, 4)), (2, 4), {}, {"eps": 1e-5}, {"norm": "instance"}),
    "safe_softmax": (((2, 3),), (2, 3), {}, {"log": True}, {"axis": 1.0}),
    "softmax_backward": (((2, 3), (2, 3)), (2, 3), {}, {"dim": 1}, {"log": "no"}),
    "adaptive_pooling": (((1, 1, 5, 5),), (1, 1, 2, 2), {}, {"output_size": 2}, {"mode": "sum"}),
    "pooling_gradient": (((1, 1, 2, 2),), (1, 1, 4, 4), {"mode": "avg", "kernel": 2}, {"stride": 2}, {"kernel": 0}),
    "attention_backward": (
        ((1, 2, 4, 8), (1, 1, 4, 8), (1, 1, 4, 8)),
        (1, 2, 4, 8),
        {},
        {"scale": 0.5},
        {"causal_alignment": "center"},
    ),
    "qkv_bias_rescale": (((2, 6), (6,)), (3, 2, 2), {}, {"num_heads": 2}, {"op": None}),
    "rnn_gate_backward": (((2, 6),), (2, 6), {"mode": "gru"}, {"hidden": 2}, {"mode": "GRU"}),
    "sort": (((3, 4),), (3, 4), {}, {"stable": True}, {"k": -1}),
    "membership": (((3, 4),), (3, 4), {}, {"invert": True}, {"tests": 0}),
    "rng": ((), (4,), {}, {"seed": 0}, {"bits_per_element": 0}),
    "embedding_bag": (((4, 2), (4,), (2,)), (2, 2), {}, {"padding_idx": 0}, {"mode": "min"}),
    "dequantize": (((2, 2), (2, 1), (1, 2)), (2, 2), {}, {"scale": 1.0}, {"op": 1}),
    "pad_backward": (((1, 6),), (1, 4), {}, {"padding": (1, 1)}, {"compute_dtype": "float33"}),
    "custom": ((), (4,), {"flops": 8}, {"note": "mine"}, {"flops": {"float32": -1}}),
    "foreach_reduce": (((4,),), (), {}, {"ord": 2}, {"flops_per_output": 1.5}),
    "foreach_elementwise": (((4,),), (4,), {}, {"alpha": 2}, {"lists": -1}),
    "nll_loss": (((3,), (3,)), (), {}, {"ignore_index": -100}, {"reduction": "avg"}),
    "nll_loss_backward": (((), (3,), ()), (3, 5), {}, {"ignore_index": -100}, {"reduction": 1}),
    "collective": (
        ((4,),),
        (4,),
        {"collective": "all_reduce", "group_size": 2},
        {"algorithm": "ring"},
        {"group_size": 0},
    ),
}
TYPED_RULES.update(NEW_TYPED_RULES)  # the resampling, Fourier and linear-algebra kinds (issue 12 item 6)


def test_every_kind_is_typed_and_listed_here():
    assert set(TYPED_RULES) == set(known_kinds()), "add each new kind to TYPED_RULES"


def _make(kind: str, attrs: dict[str, Any], name: str = "bad") -> Operation:
    inputs, output, base, _, _ = TYPED_RULES[kind]
    return Operation(name, kind, inputs, output, attrs={**base, **attrs})


@pytest.mark.parametrize("kind", sorted(TYPED_RULES))
def test_every_converted_rule_is_checked_before_it_runs(kind):
    assert entry_for(kind).check_attrs is not None
    assert _make(kind, {}, "ok").cost.write_bytes > 0  # the base record is valid


@pytest.mark.parametrize("kind", sorted(TYPED_RULES))
def test_an_unknown_attribute_is_named(kind):
    ((name, value),) = TYPED_RULES[kind][3].items()
    shown = re.escape(repr(value))
    message = rf"Operation 'bad' \({kind}\) has an unknown attribute attrs\['{name}'\]={shown}; {kind} takes op, "
    with pytest.raises(RecordError, match=message):
        _make(kind, {name: value})


@pytest.mark.parametrize("kind", sorted(TYPED_RULES))
def test_an_ill_typed_attribute_is_named_with_its_value(kind):
    ((name, value),) = TYPED_RULES[kind][4].items()
    escaped = re.escape(repr(value))
    with pytest.raises(RecordError, match=rf"Operation 'bad' \({kind}\) attrs\['{name}'\]={escaped}(;| must be)"):
        _make(kind, {name: value})


def test_messages_say_what_is_expected():
    cases = [
        ("conv", {"groups": 1.0}, r"attrs\['groups'\]=1\.0 must be an integer >= 1$"),
        ("conv", {"groups": True}, r"attrs\['groups'\]=True must be an integer >= 1$"),
        ("conv", {"stride": (1, 0)}, r"attrs\['stride'\]=\(1, 0\) must be an integer >= 1 or a tuple, each an"),
        ("linear", {"weight_layout": "oi"}, r"attrs\['weight_layout'\]='oi'; use one of in_out, out_in$"),
        ("attention", {"causal": 1}, r"attrs\['causal'\]=1 must be true or false$"),
        ("attention", {"dropout_p": "0.1"}, r"attrs\['dropout_p'\]='0\.1' must be a number$"),
        ("matmul", {"dimension_numbers": ((1,), (0,))}, r"must be \(\(lhs_contracting, rhs_contracting\)"),
        ("gather", {"compute_dtype": "float33"}, r"attrs\['compute_dtype'\]='float33' must be an element type"),
    ]
    for kind, attrs, match in cases:
        with pytest.raises(RecordError, match=match):
            _make(kind, attrs)
    with pytest.raises(RecordError, match=r"\(pooling\) needs attrs\['kernel'\]: the window size"):
        Operation("bad", "pooling", ((1, 2, 4, 4),), (1, 2, 2, 2))


def test_per_dim_counts_are_checked_against_the_shapes():
    # The annotation admits any tuple of ints >= 1; only the rule knows x has 2 spatial dims.
    with pytest.raises(RecordError, match=r"attrs\['stride'\]=\(1, 1, 1\) has 3 values for 2 spatial dims"):
        _make("conv", {"stride": (1, 1, 1)})


def test_the_rule_receives_the_checked_attributes():
    # out_in reads the weight (3, 8) as N=3, K=8: 2·4·8·3 = 192
    op = Operation("fc", "linear", ((4, 8), (3, 8)), (4, 3), attrs={"weight_layout": "out_in", "op": "addmm"})
    assert op.cost.flops == 192
    # informational attributes are accepted and change nothing: causal without skips_masked is dense,
    # 2 heads · (16 pairs · (2·(8+8) matmul + 1 scale + 5 softmax) − 2 · 4 rows) = 2 · 600 = 1,200
    info = {"causal": True, "window": (2, -1), "dropout_p": 0.1, "varlen_upper_bound": True}
    assert _make("attention", info).cost.flops == _make("attention", {}).cost.flops == 1_200


# Every ordering of 1, 1.0 and True: a cached cost must never make a rejected value pass, nor the reverse.
# (validity of 1, of 1.0, of True) — a dict could not hold them: 1 == 1.0 == True is the bug.
CACHE_CASES = [
    ("conv", "groups", (True, False, False)),  # typed int
    ("attention", "causal", (False, False, True)),  # typed bool
    ("attention", "dropout_p", (True, True, False)),  # typed float admits ints, not bools
    ("scatter", "touched", (False, False, False)),  # typed int, but 1 < 3 updates: a ShapeError
    ("groupnorm", "groups", (True, False, False)),  # typed int >= 1
]
_CACHE_RECORDS = {"groupnorm": (((2, 4),), (2, 4))}


def _valid(kind: str, name: str, value: Any) -> bool:
    inputs, output = _CACHE_RECORDS[kind] if kind in _CACHE_RECORDS else TYPED_RULES[kind][:2]
    try:
        Operation("v", kind, inputs, output, attrs={name: value})
    except (RecordError, ValueError):
        return False
    return True


@pytest.mark.parametrize(("kind", "name", "expected"), CACHE_CASES)
def test_cache_hits_never_change_validity(kind, name, expected):
    values = (1, 1.0, True)
    for order in itertools.permutations(range(3)):
        records._COST_MEMO.clear()
        seen = [False] * 3
        for index in order:
            seen[index] = _valid(kind, name, values[index])
        assert tuple(seen) == expected, [values[i] for i in order]


def test_groupnorm_reproducer_from_the_issue():
    Operation("gn1", "groupnorm", ((2, 4),), (2, 4), attrs={"groups": 1})
    with pytest.raises(RecordError, match=r"attrs\['groups'\]=1\.0"):
        Operation("gn2", "groupnorm", ((2, 4),), (2, 4), attrs={"groups": 1.0})


def test_equal_values_of_one_type_share_the_cache():
    a = _make("conv", {"stride": (1, 1)}, "a")
    b = _make("conv", {"stride": [1, 1]}, "b")  # frozen to the same tuple: one rule call
    assert a.cost is b.cost


# -- the signature reader itself ------------------------------------------------------------


def test_compile_check_tells_apart_bool_int_and_float():
    assert compile_check(Literal[1]).test(1) and not compile_check(Literal[1]).test(True)
    assert compile_check(PerDim[Positive]).test((1, 2)) and not compile_check(PerDim[Positive]).test((1, 0))
    assert not compile_check(tuple[int, int]).test((1, 2, 3))
    assert compile_check(Annotated[int, Min(2), Expect("two or more")]).expects == "two or more"
    with pytest.raises(TypeError, match="cannot check an attribute annotated"):
        compile_check(list[int])


def test_attr_spec_reads_keyword_only_parameters():
    def rule(op: Operation, *, size: Positive, mode: Literal["a", "b"] = "a") -> None:
        del op, size, mode

    spec = AttrSpec.of("demo", rule)
    assert spec.required == ("size",)
    assert dict(spec.defaults) == {"mode": "a"}
    assert list(spec.checks) == [
        "op",
        "compute_dtype",
        "loop",
        "source",
        "function",
        "recompute",
        "phase",
        "size",
        "mode",
    ]

    def positional(op: Operation, size: int = 1) -> None:
        del op, size

    with pytest.raises(TypeError, match=r"parameter 'size' must be keyword-only"):
        AttrSpec.of("demo", positional)


def test_axis_index_checks_a_typed_axis_against_the_rank():
    op = _make("copy", {}, "ax")
    assert (axis_index(op, -1, 3), axis_index(op, 0, 3)) == (2, 0)
    with pytest.raises(ShapeError, match=r"attrs\['axis'\]=3 is out of range for rank 3"):
        axis_index(op, 3, 3)
